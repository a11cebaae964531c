"""`intercore demo`: the tour. Doctor, then measured slowdowns, results in the store."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.table import Table

from ..host.topology import read_topology
from ..measure.regime import canary as canary_mod
from ..measure.aggressors.presets import Footprints
from ..measure.harness.session import Request
from ..base.parse import human_size
from ..base.sample import TOTAL_REGION
from ..base.units import size_arg
from . import experiment as experiment_cli
from ..base.native import tool
from .measure import run_measure, with_phases
from . import paths
from .output import JSON_HELP, console, handle_errors, print_json, warn

DEMO_AGGRESSORS = ("BwWrite(LLC)", "BwRead(DRAM)", "PLLRead(LLC)")


def demo_requests(topo, quick: bool) -> list[Request]:
    fp = Footprints.for_host(topo)
    runs = 5 if quick else 100  # the paper's repetition count
    chase = Request(f"ptrchase:size={size_arg(fp.shared_victim)}",
                    aggressors=DEMO_AGGRESSORS, runs=runs)
    matrix = Request("matrix1", aggressors=DEMO_AGGRESSORS, runs=runs)
    if quick:  # a smaller matrix keeps the test suite fast; the shape stays matrix1's
        matrix = Request("matmul:n=64,k=4096,m=9", aggressors=DEMO_AGGRESSORS, runs=runs)
    return [chase, matrix]


@handle_errors
def demo_cmd(
    quick: bool = typer.Option(False, "--quick", help="5 pairs per set and a smaller "
                                                      "matrix: a smoke test, not evidence."),
    db: Path = typer.Option(Path("intercore.db"), "--db", help="Results store (SQLite)."),
    out: Path = typer.Option(Path("intercore-demo"), "--out", "-o",
                             help="Directory for figures, models and reports."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Run the tour: doctor, canary, then measured slowdowns into the store.

    The slowdown of a shared-cache-sized pointer chase, of matrix1 and of the example
    user program (examples/user-program, built against the kit by its own Makefile, per
    marked region) under BwWrite(LLC), BwRead(DRAM) and PLLRead(LLC), 100 pairs each,
    paired, with CIs and the canary regime.

    Then a platform model of this host, its interference channels and a short validation,
    paper 000's protection experiment in quick mode (Solo / Interference /
    Protected, same-core and cross-core), `intercore assess --quick` of
    examples/systems/control-demo.yaml into a dossier (--out/dossier), and the small
    example campaign with its HTML report, all under --out; last, the signal pipeline of
    examples/apps compiled fused and unfused, run alternately, with tasks, wall time and
    involuntary context switches.

    --json prints {"host": ..., "canary": ..., "measurements": [<measure --json>, ...],
    "model": {...}, "protection": <experiment protection --json, with "timeline": the
    trace it wrote>, "assess": <dossier.json>, "campaign": {...},
    "compile": {...}, "learn": {...}}.
    """
    # Deferred: the tours import every stage, which would cost every other command's
    # start-up.
    from ..host.report import host_report
    from ..mitigate.experiment import protection as experiment
    from ..tour import assess as assess_tour, campaign as campaign_tour
    from ..tour import compile as compile_tour, learn as learn_tour, model as model_tour
    from ..tour import user_program as user_program_tour

    campaign_file = campaign_tour.small_campaign()  # before anything runs: no half demo
    paths.store_file(db)
    paths.output_dir(out, "--out")
    topo = read_topology()
    report = host_report()
    if not json_out:
        fp = Footprints.for_host(topo)
        console.rule("intercore demo")
        console.print(f"host: {topo.model_name}, {len(topo.online_cpus)} CPUs, "
                      f"private cache {human_size(fp.private)}, shared cache "
                      f"{human_size(fp.shared)}" +
                      (f", virtual machine ({topo.hypervisor})" if topo.hypervisor else ""))
        for w in report.warnings:
            warn(w, label="note")
    canary = canary_mod.run_canary(topo)
    if not json_out:
        console.print(f"canary: {canary.regime} — {canary.reason}", highlight=False)
    results = [run_measure(req, db, json_out) for req in demo_requests(topo, quick)]
    out.mkdir(exist_ok=True)
    # The user's side of the tool: a program of the user's own, built against the kit and
    # measured as it is, per marked region.
    program = with_phases("user program",
                          lambda phase: user_program_tour.build(out, phase) / "control",
                          to_stderr=json_out)
    results.append(run_measure(user_program_tour.request(
        program, DEMO_AGGRESSORS, 5 if quick else 100), db, json_out))
    model = with_phases("platform model",
                        lambda phase: model_tour.run(db, phase, quick=True,
                                                     model_out=out / "host-model.yaml"),
                        to_stderr=json_out)
    protection = with_phases("protection experiment",
                             lambda phase: experiment.run(
                                 experiment.Config(jobs=20, out_dir=out / "protection"),
                                 db=db, argv=sys.argv, on_phase=phase),
                             to_stderr=json_out)
    protection["timeline"] = _timeline(db, protection["invocation_id"],
                                       out / "protection-timeline.json")
    # Every stage joined on one system, as a user certifying it would start (issue 21).
    assessed = with_phases("assess --quick",
                           lambda phase: assess_tour.run_quick(out, phase),
                           to_stderr=json_out)
    # The demo measured the canary already; the campaign's own would add seconds, not news.
    campaign = with_phases("campaign",
                           lambda phase: campaign_tour.run(db, out, phase,
                                                           campaign=campaign_file,
                                                           canary=False),
                           to_stderr=json_out)
    profiled = with_phases("bandwidth profile",
                           lambda phase: profile_tour(topo, db, out / "profile", phase),
                           to_stderr=json_out)
    compiled = with_phases("compile",
                           lambda phase: compile_tour.run(out / "compile", 3 if quick else 10,
                                                          phase),
                           to_stderr=json_out)
    # Seconds of training on the shipped dataset: the demo shows the stage at work (no
    # measuring); bench/learn.py is where the model is judged.
    learned = with_phases("learn",
                          lambda phase: learn_tour.run(out / "learn", 10 if quick else 30,
                                                       phase),
                          to_stderr=json_out)
    if json_out:
        print_json({"host": report.to_dict(), "canary": canary.to_dict(),
                    "measurements": [r.to_dict() for r in results],
                    "model": model, "protection": protection, "assess": assessed,
                    "campaign": campaign,
                    "profile": profiled, "compile": compiled, "learn": learned})
        return
    table = Table(title="Slowdown Δ = median(T_int)/median(T_iso), thread CPU time")
    for col in ("victim", "aggressor", "n", "Δ [95% CI]", "pair max", "regime"):
        table.add_column(col, no_wrap=col != "victim")
    for r in results:
        for region in r.regions:
            # Built-in victims: the whole run; the user's program: its regions too.
            if region.region_name != TOTAL_REGION and not r.plan.victim.command:
                continue
            c = region.result
            table.add_row(r.plan.victim.label, region.aggressor_set, str(c.n),
                          f"{c.delta:.2f} [{c.delta_ci[0]:.2f}, {c.delta_ci[1]:.2f}]",
                          f"{c.paired_max:.2f}", r.regime)
    console.print(table)
    for r in results:
        for w in r.warnings:
            warn(w)
    ids = ", ".join(str(r.invocation_id) for r in results)
    console.print(f"raw samples in {db} (invocations {ids}); "
                  f"see `intercore results show ID --db {db}`")
    console.rule("platform model of this host: channels and their validation")
    _render_model(model, out)
    console.rule("protection: paper 000 §4.4.3, quick (20 jobs per scenario)")
    experiment_cli.render(protection)
    console.print(f"timeline (jobs, freezes, thaws): {protection['timeline']}: open it in "
                  "ui.perfetto.dev", highlight=False)
    console.rule("assess --quick: examples/systems/control-demo.yaml into a dossier")
    _render_assess(assessed, out / assess_tour.DOSSIER)
    console.rule("campaign: examples/campaigns/small.yaml, quick")
    for row in campaign["slowdowns"]:
        ci = row.get("ci")
        ci_text = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci and None not in ci else ""
        console.print(f"  {row['setup']}: n = {row['n']}, slowdown vs {row['baseline']} "
                      f"{row['value']:.3f}{ci_text}", highlight=False)
    for row in campaign["skipped"]:
        console.print(f"  skipped {row['setup']}: {row['reason']}", highlight=False)
    console.print(f"report: {campaign['report']}", highlight=False)
    console.rule("bandwidth profile: paper 004's profiler on one victim")
    _render_profile(profiled)
    console.rule("compile: examples/apps/signal fused and unfused (issue 11)")
    _render_compile(compiled)
    console.rule("learn: predicted slowdown per region and the code heatmap (issue 10)")
    _render_learn(learned)


def _render_assess(doc: dict, directory: Path) -> None:
    for task in doc["sections"]["timing"]["tasks"]:
        for name, fig in (task["scenarios"] or {}).items():
            v = fig["value"]
            lo, hi = v["miss_ratio_ci95"]
            console.print(f"  {task['task']} {name}: n = {v['n']}, max {v['max_ms']:.2f} ms, "
                          f"{v['misses']} deadline misses (ratio 95% CI [{lo:.2f}, {hi:.2f}])",
                          highlight=False)
    for w in doc["sections"]["plan"]["warnings"]:
        warn(w["message"], label=f"warning ({w['code']})")
    console.print(f"{doc['headline']}; dossier: {directory / 'dossier.html'} (check it again "
                  f"later with `intercore dossier verify {directory}`)", highlight=False)


def _render_learn(doc: dict) -> None:
    if "skipped" in doc:
        warn(f"learning stage skipped: {doc['skipped']}")
        return
    from ..learn.heatmap import SCALE_TOP, scale_bar

    size = f", {doc['params']} parameters" if doc.get("params") else ""
    table = Table(title=f"{doc['program']}: predicted slowdown per region ({doc['learner']} "
                        f"trained in {doc['train_cpu_s']:.0f} CPU s{size})")
    for col in ("region", "Δ̂", "Δ̂ safe", f"Δ̂ on 1..{SCALE_TOP:g}"):
        table.add_column(col)
    for r in doc["regions"]:
        table.add_row(f"{r['id']} {r['region']}", f"{r['delta']:.3f}", f"{r['delta_safe']:.3f}",
                      scale_bar(r["delta"]))
    console.print(table)
    first = doc.get("first_line")
    if first:
        console.print(f"the heatmap opens on {first['file']}:{first['hottest_line']}",
                      highlight=False)
    console.print(f"heatmap: {doc['json']} and {doc['html']}", highlight=False)


def profile_tour(topo, db: Path, out: Path, phase) -> dict:
    """The `phases` victim (compute, stream, compute) profiled every 50 µs. Where no counter
    sees memory traffic the latency probe could not show its bursts, so the demo then profiles
    its page faults (--fresh: the stream phase touches new pages), and says so."""
    from ..measure.bandwidth import sources as bwsource, probe
    from .profile import run_profile

    phase("choosing the source")
    target = topo.online_cpus[-1]
    statuses = bwsource.host_sources(target, probe.probe_source(probe.default_probe_size(topo)))
    chosen = bwsource.choose(statuses, "auto")
    source = chosen.name if chosen.kind != "probe" else "sw:page-faults"
    out.mkdir(exist_ok=True)
    command = (str(tool("ic-victim")), "phases", "--size", "32M", "--compute", "5ms", "--reps",
               "3", "--fresh")
    phase(f"profiling phases with {source}")
    summary, plot_path, invocation, notes = run_profile(
        command=command, self_test_ns=0, interval_ns=50_000, source_name=source, cpu=None,
        target_cpu=None, priority=None, duration_ns=0, threshold=None,
        min_duration_ns=100_000, out=out, db=db, argv=sys.argv, to_stderr=True)
    if chosen.kind == "probe":
        notes.insert(0, "no counter of memory traffic on this host (see `intercore measure "
                        "counters list`): showing the victim's page faults instead")
    return {**summary, "plot": str(plot_path), "notes": notes, "db": str(db)}


def _render_profile(doc: dict) -> None:
    from . import profile as profile_cli

    profile_cli.render(doc, plot_path=Path(doc["plot"]), invocation=doc["invocation"],
                       db=Path(doc["db"]), notes=doc["notes"])


def _timeline(db: Path, invocation_id: int, path: Path) -> str:
    """The protection experiment's jobs, freezes and thaws as a trace for ui.perfetto.dev."""
    from ..measure import recorded
    from ..report import timeline
    from ..store import Store

    with Store.open(db) as store:
        timeline.write_json(timeline.build(recorded.load(store, invocation_id)), path)
    return str(path)


def _render_compile(doc: dict) -> None:
    table = Table(title=f"the six-stage signal pipeline, {doc['runs']} interleaved runs each")
    for col in ("build", "tasks", "wall median [min, max]", "involuntary switches (median)"):
        table.add_column(col)
    for name in ("unfused", "fused"):
        row = doc[name]
        w = row["wall_s"]
        table.add_row(name, f"{len(row['tasks'])}: {', '.join(row['tasks'])}",
                      f"{w['median'] * 1e3:.1f} ms [{w['min'] * 1e3:.1f}, {w['max'] * 1e3:.1f}]",
                      f"{row['nivcsw_median']:.0f}")
    console.print(table)
    same = "same output" if doc["same_output"] else "DIFFERENT OUTPUT"
    speedup = doc["speedup"]  # unfused median wall / fused median wall
    verdict = f"{speedup:.2f}x faster" if speedup >= 1 else f"{1 / speedup:.2f}x slower"
    console.print(f"fused: {verdict} than unfused (median wall over {doc['runs']} interleaved "
                  f"runs each), {same} ({doc['output']})", highlight=False)


def _render_model(doc: dict, out: Path) -> None:
    counts = doc["analysis"]["counts"]
    console.print(f"model {out / 'host-model.yaml'}: {len(doc['model']['initiators'])} "
                  f"initiators, {doc['model']['transactions']} transactions; k = 2: "
                  f"{counts.get('interference', 0)} interference, {counts.get('free', 0)} free, "
                  f"{counts.get('redundant', 0)} redundant", highlight=False)
    v = doc["validation"]
    table = Table(title=f"validation on this host (canary regime: {v['regime']})")
    for col in ("expected", "victim", "aggressor", "n", "Δ [95% CI]", "verdict"):
        table.add_column(col)
    for row in v["verdicts"]:
        lo, hi = row["delta_ci"]
        ci = "-" if lo is None else f"{row['delta']:.2f} [{lo:.2f}, {hi:.2f}]"
        table.add_row(row["expected"], row["victim"]["tx"], row["aggressor"]["tx"],
                      str(row["n"]), ci, row["verdict"])
    console.print(table)
