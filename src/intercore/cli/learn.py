"""`intercore learn ...`: datasets of traced and measured kernels, the slowdown transformer,
its evaluation against baselines, predictions and the code heatmap (docs/learn.md)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..base.errors import InputError
from ..base.stopping import nothing_to_undo, sigterm_unwinds
from . import paths
from .measure import progress_bar, with_phases
from .output import JSON_HELP, console, handle_errors, print_json, warn


DEFAULT_MODEL = Path("intercore-learn") / "model"
DEFAULT_DATASET = Path("intercore-learn") / "dataset"
DEFAULT_HEATMAP = Path("intercore-learn") / "heatmap"
DEFAULT_FIGURES = Path("intercore-learn") / "figures"
DATASET_HELP = ("Dataset directory (from `learn dataset`); default: the reference dataset "
                "shipped with intercore.")
MODEL_HELP = "Model directory (from `learn train`)."
CACHES_HELP = ("Cache hierarchy to simulate, SIZE:WAYS from L1 data outwards "
               "(48K:12,1M:16,32M:16); default: this host's, from sysfs.")
PLATFORM_HELP = "Platform model (YAML) whose caches to simulate instead of this host's."


def _dataset(path: Optional[Path]):
    from ..learn import dataset, reference

    return dataset.load(path if path is not None else reference.path())


def _hierarchy(platform: Optional[Path], caches: Optional[str]):
    from ..learn import hierarchy

    return hierarchy.resolve(platform, caches)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


METRIC_COLUMNS = {"rho_within": "ρ within programs (median)", "rho_across": "ρ across regions",
                  "top1": "top-1 recall", "top3": "top-3 recall", "acc@10": "acc@10",
                  "mape": "MAPE", "exceedance": "safe bound exceeded"}
SHARES = ("top1", "top3", "acc@10", "mape", "exceedance")


def _figure(x: float | None, share: bool) -> str:
    if x is None:
        return "-"
    return _pct(x) if share else f"{x:.2f}"


def _metrics_table(title: str, learners: dict[str, dict[str, Any]]) -> Table:
    table = Table(title=title)
    for col in ("model", "n", *METRIC_COLUMNS.values(), "acc@10 by fold", "train CPU s",
                "ms / region"):
        table.add_column(col, overflow="fold")
    for name, s in learners.items():
        cells = []
        for m in METRIC_COLUMNS:
            lo, hi = s["ci"][m] or (None, None)
            share = m in SHARES
            cells.append(f"{_figure(s[m], share)} [{_figure(lo, share)}, {_figure(hi, share)}]")
        table.add_row(name, str(s["n"]), *cells,
                      " ".join(_pct(a) for a in s["acc@10_by_fold"]),
                      f"{s['train_cpu_s_max']:.0f}", f"{s['predict_ms_per_region_max']:.2f}")
    return table


def _comparison_lines(cmp: dict[str, Any] | None, winner: str | None) -> list[str]:
    if not cmp:
        return [f"held-out winner (ρ within, then top-3): {winner}"] if winner else []
    lines = []
    for m, d in cmp["metrics"].items():
        if d["against"] is None:
            continue
        lo, hi = d["ci"] or (None, None)
        lines.append(f"{cmp['learner']} - {d['against']} on {METRIC_COLUMNS[m]}: "
                     f"{_figure(d['difference'], False)} [{_figure(lo, False)}, "
                     f"{_figure(hi, False)}] (paired bootstrap over programs)")
    verdict = ("wins on both" if cmp["wins"] else "does not win on both with the interval "
               "above 0")
    lines.append(f"{cmp['learner']} {verdict}; held-out winner: {cmp['winner']}")
    return lines


@handle_errors
def dataset_cmd(
    out: Path = typer.Option(DEFAULT_DATASET, "--out", "-o",
                             help="Dataset directory to write (features, labels, provenance)."),
    db: Path = typer.Option(Path("intercore.db"), "--db", help="Results store (SQLite): raw "
                            "samples and the resumable state of the generation."),
    name: Optional[str] = typer.Option(None, "--name", help="Name of the dataset in the store "
                                       "(default: learn-DATE)."),
    resume: Optional[str] = typer.Option(None, "--resume", help="Finish the stored dataset "
                                         "of this name instead of starting one."),
    programs: int = typer.Option(300, "--programs", min=1, help="Programs to draw (2-6 "
                                 "regions each), the families in turn."),
    families: Optional[str] = typer.Option(None, "--families", help="Comma-separated kernel "
                                           "families (default: all; see docs/learn.md)."),
    pairs: Optional[int] = typer.Option(None, "--pairs", min=2, help="Paired repetitions "
                                        "per attempt at a program, at most (re-measures take "
                                        "what is missing) [default: 40]."),
    min_pairs: int = typer.Option(10, "--min-pairs", min=2, help="Shared-regime pairs a "
                                  "region needs for a label."),
    target_pairs: Optional[int] = typer.Option(None, "--target-pairs", min=2, help="A "
                                               "program is measured again until every region "
                                               "has this many shared-regime pairs, pooled "
                                               "over its attempts... [default: 30]"),
    max_attempts: Optional[int] = typer.Option(None, "--max-attempts", min=1, help="... or "
                                               "until this many attempts were made [default: "
                                               "4]. With --resume, --pairs, --target-pairs and "
                                               "--max-attempts change the stored settings."),
    priority: int = typer.Option(1, "--priority", min=0, max=99, help="SCHED_FIFO priority "
                                 "of the victim, aggressors and canary while measuring (0: "
                                 "SCHED_OTHER); needs CAP_SYS_NICE, else a warning."),
    block_pairs: int = typer.Option(4, "--block-pairs", min=1, help="Pairs between two "
                                    "canary probes: short blocks lose few pairs to a change "
                                    "of regime."),
    wait_limit: float = typer.Option(60.0, "--wait-limit", min=0.0, help="Minutes to wait "
                                     "in all for the host to share its cache, once every "
                                     "program is traced; then stop (resumable)."),
    aggressor: str = typer.Option("BwWrite(LLC)", "--aggressor", "-a",
                                  help="Aggressor set of the labels: the worst for this host, "
                                       "e.g. @worst:ptrchase:size=8M after `intercore measure run "
                                       "ptrchase:size=8M --search` saved it. A resume "
                                       "keeps the stored set (and CPUs, priority, blocks)."),
    seed: int = typer.Option(1, "--seed", help="Seed of the program draw."),
    sweep: bool = typer.Option(True, "--sweep/--no-sweep", help="Add paper 000's K sweep of "
                               "matmul (its Fig. 2 and 5)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Stop after this many "
                                        "measurement attempts; resume later with --resume."),
    small: bool = typer.Option(False, "--small", help="A smoke test: 6 programs of three "
                               "families, 4 pairs an attempt, 8 pairs a region in two "
                               "attempts, labels from every regime. Not evidence."),
    caches: Optional[str] = typer.Option(None, "--caches", help=CACHES_HELP),
    platform: Optional[Path] = typer.Option(None, "--platform", help=PLATFORM_HELP),
    report: bool = typer.Option(False, "--report", help="Print the label distribution of "
                                "the dataset already in --out (per family and level where "
                                "its working sets live: n, median and p90 of Δ, shares above "
                                "1.2 and 2) and stop; nothing is generated."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Generate (or resume) a dataset: draw kernel programs, build, trace and measure each,
    measure again those whose regions lack shared-regime pairs, and export the directory.

    Every attempt is recorded in the store with its raw samples in one transaction, so a
    killed run loses at most the attempt in flight: `--resume NAME` goes on from there.
    Labels pool the shared-regime pairs of every attempt at a program.
    """
    if report:
        _report(out, json_out)
        return
    from ..learn import generate, tracer
    from ..learn.programs import check_families
    from ..learn.labels import HarnessMeasurer

    paths.output_dir(out, "--out", default=DEFAULT_DATASET)
    paths.store_file(db)
    reason = tracer.available()
    if reason:
        from ..base.errors import HostUnsupported
        raise HostUnsupported(reason)
    hierarchy = _hierarchy(platform, caches)
    fams = tuple(f.strip() for f in families.split(",") if f.strip()) if families else ()
    check_families(fams)  # here, before the store is made, as well as where drawn
    regime = generate.LABEL_REGIME
    overrides = {k: v for k, v in (("pairs", pairs), ("target_pairs", target_pairs),
                                   ("max_attempts", max_attempts)) if v is not None}
    pairs, target_pairs, max_attempts = pairs or 40, target_pairs or 30, max_attempts or 4
    if small:
        programs, pairs, min_pairs, sweep, regime = 6, 4, 2, False, "any"
        target_pairs, max_attempts, block_pairs = 8, 2, 2
        fams = fams or ("chase", "reduction", "triad")
    settings = generate.Settings(programs=programs, seed=seed, families=fams, sweep=sweep,
                                 pairs=pairs, min_pairs=min_pairs, target_pairs=target_pairs,
                                 max_attempts=max_attempts, aggressor=aggressor,
                                 label_regime=regime, priority=priority,
                                 block_pairs=block_pairs)
    if resume and name:
        raise InputError("give --name or --resume, not both", field="--resume")
    if resume:
        paths.open_store(db, first="intercore learn dataset").close()  # never makes one
    name = resume or name or f"learn-{datetime.now():%Y%m%d-%H%M%S}"
    # A resume measures as the dataset began (its stored aggressor set above all): labels
    # pooled over attempts under two different aggressors would describe neither.
    measurer = HarnessMeasurer(generate.stored_settings(db, resume) if resume else settings,
                               db)

    class Bar:
        def __init__(self, bar):
            self.bar, self.task = bar, bar.add_task("planning", total=None)

        def phase(self, text: str) -> None:
            self.bar.update(self.task, description=text)

        def program(self, done: int, total: int, prog: str, status: str) -> None:
            self.bar.update(self.task, completed=done, total=total,
                            description=f"{prog}: {status}")

    with sigterm_unwinds(), progress_bar(json_out) as bar:
        result = generate.run(db, name, hierarchy, None if resume else settings, measurer,
                              out / "build", resume=bool(resume), listener=Bar(bar),
                              limit=limit, wait_limit_s=60.0 * wait_limit,
                              overrides=overrides)
    ds = generate.export(db, name, out)
    summary = {**ds.summary(), **result, "out": str(out)}
    if json_out:
        print_json(summary)
        return
    console.print(f"dataset {name}: {summary['recorded']} of {summary['planned']} programs, "
                  f"{summary['regions']} regions, {summary['labelled_regions']} labelled "
                  f"({hierarchy.describe()})", highlight=False)
    console.print(f"pairs by regime: {summary['regimes']}; labels use the shared regime only, "
                  f"pooled over {summary['attempts']} attempts; closed programs: "
                  f"{summary['closed_by']}", highlight=False)
    console.print(f"written to {out}; train with `intercore learn train --dataset {out}`",
                  highlight=False)
    if summary["recorded"] < summary["planned"] or summary["closed"] < summary["recorded"]:
        warn(f"{summary['planned'] - summary['recorded']} programs to trace, "
             f"{summary['recorded'] - summary['closed']} to measure again: "
             f"`intercore learn dataset --resume {name} --db {db} --out {out}`")


def _report(directory: Path, json_out: bool) -> None:
    from ..learn import dataset
    from ..learn.distribution import THRESHOLDS, distribution

    ds = dataset.load(directory)
    rows = distribution(ds)
    if json_out:
        print_json({"dataset": str(directory), "dataset_hash": ds.hash,
                    "hierarchy": ds.hierarchy.describe(), "rows": [r.to_dict() for r in rows]})
        return
    table = Table(title=f"labels of {directory} by family and where the working set lives "
                        f"({ds.hierarchy.describe()})")
    for col in ("family", "level", "n", "median Δ", "p90 Δ",
                *(f"Δ > {t:g}" for t in THRESHOLDS)):
        table.add_column(col)
    for r in rows:
        table.add_row(r.family, r.level, str(r.n), f"{r.median:.3f}",
                      "-" if r.p90 is None else f"{r.p90:.3f}",
                      *(f"{100 * a:.1f}%" for a in r.above))
    console.print(table)


@handle_errors
def train_cmd(
    dataset: Optional[Path] = typer.Option(None, "--dataset", "-d", help=DATASET_HELP),
    out: Path = typer.Option(DEFAULT_MODEL, "--out", "-o", help="Model directory to write."),
    learner: Optional[str] = typer.Option(None, "--learner", help="transformer, linear-l2, "
                                          "quantile, analytic or constant (the forest cannot "
                                          "be saved). Default: the one that ranks regions "
                                          "best on held-out families (docs/learn.md); the "
                                          "transformer where --alignment or --lambda is "
                                          "given.",
                                          show_default=False),
    alignment: Optional[str] = typer.Option(None, "--alignment", help="The transformer's "
                                            "attention-L2 alignment term: kl (default), "
                                            "cosine, paper (paper 000's, with its flaws) or "
                                            "none."),
    lam: Optional[float] = typer.Option(None, "--lambda", min=0.0, help="The transformer's "
                                        "weight of the alignment term (default and paper "
                                        "000: 0.5)."),
    alpha: float = typer.Option(0.05, "--alpha", min=0.001, max=0.5, help="The safe "
                                "prediction bounds the safe slowdown with confidence 1 - alpha "
                                "(conformal on families held out of training)."),
    seed: int = typer.Option(0, "--seed"),
    budget: float = typer.Option(600.0, "--budget", min=1.0, help="CPU seconds for training."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Train a learner (default: the held-out winner) on every family of a dataset and save
    it, its safe bound calibrated for families it never saw."""
    from ..learn import model
    from ..learn.evaluate import DEFAULT_LEARNER
    from ..learn.learners import SAVEABLE

    overrides = {k: v for k, v in (("alignment", alignment), ("lam", lam)) if v is not None}
    learner = learner or ("transformer" if overrides else DEFAULT_LEARNER)
    if learner not in SAVEABLE:
        raise InputError(f"one of {', '.join(SAVEABLE)}", field="--learner")
    if overrides and learner != "transformer":
        raise InputError(f"the transformer's option, not the {learner}'s",
                         field="--alignment" if alignment is not None else "--lambda")
    if overrides.get("alignment", "kl") not in model.ALIGNMENTS:
        raise InputError(f"one of {', '.join(model.ALIGNMENTS)}", field="--alignment")
    paths.output_dir(out, "--out", default=DEFAULT_MODEL)
    ds = _dataset(dataset)
    _, fitted = _train(ds, out, json_out, learner=learner, alpha=alpha, seed=seed,
                       budget=budget, **overrides)
    doc = {"model": str(out), "learner": learner, **fitted.info,
           "calibration": fitted.calibration.to_dict(), "dataset_hash": ds.hash}
    if json_out:
        print_json(doc)
        return
    what = (f"{fitted.info['params']} parameters, {fitted.info['epochs']} epochs (best "
            f"{fitted.info['best_epoch'] + 1}; {fitted.info['stopped']})"
            if learner == "transformer" else "fitted")
    console.print(f"model {out} ({learner}): {what}, {fitted.info['train_cpu_s']:.0f} CPU s, "
                  f"{fitted.info['calibration_cpu_s']:.0f} more to calibrate",
                  highlight=False)
    c = fitted.calibration
    basis = ("of families it did not train on" if c.basis == "families"
             else "of its training families")
    console.print(f"safe prediction: x{2.718281828 ** c.offset:.3f} over the raw quantile, "
                  f"{100 * c.confidence:.1f}% confidence from {c.n} calibration regions "
                  f"{basis}", highlight=False)


@handle_errors
def evaluate_cmd(
    dataset: Optional[Path] = typer.Option(None, "--dataset", "-d", help=DATASET_HELP),
    folds: int = typer.Option(3, "--folds", min=2, help="Family folds: each family is "
                              "tested once, by models that never saw it."),
    learners: str = typer.Option("transformer,linear-l2,forest,quantile,analytic,constant",
                                 "--learners", help="Comma-separated: transformer, "
                                 "linear-l2, forest, quantile, analytic (log Δ = c x "
                                 "accesses per instruction beyond the private caches), "
                                 "constant (no model: the training median for every "
                                 "region)."),
    ablation: bool = typer.Option(False, "--ablation", help="Also the transformer without "
                                  "alignment, with the paper's term, with cosine, and on a "
                                  "sampled window of the dynamic trace instead of one token "
                                  "per static instruction."),
    alpha: float = typer.Option(0.05, "--alpha", min=0.001, max=0.5),
    seed: int = typer.Option(0, "--seed"),
    budget: float = typer.Option(600.0, "--budget", min=1.0, help="CPU seconds per training."),
    figures: Optional[Path] = typer.Option(None, "--figures", help="Write paper 000's Fig. 4 "
                                           "and 5 (and the predicted-vs-measured scatter) "
                                           "here."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Held-out-family evaluation of the transformer against the baselines, with 95%
    bootstrap intervals over programs: Spearman ρ within programs and across regions, top-1
    and top-3 recall of each program's most sensitive regions, acc@10, MAPE, and how often the
    safe bound is exceeded; then the transformer against the best other learner on ρ and
    top-3 (docs/learn.md)."""
    from ..learn import evaluate
    from ..learn.learners import LEARNERS

    names = [n.strip() for n in learners.split(",") if n.strip()]
    bad = [n for n in names if n not in LEARNERS]
    if bad:
        raise InputError(f"unknown {bad}; known: {', '.join(LEARNERS)}", field="--learners")
    paths.output_dir(figures, "--figures")
    ds = _dataset(dataset)
    with nothing_to_undo():  # trained in memory; the figures are drawn after
        report = with_phases("evaluating", lambda phase: evaluate.crossval(
            ds, learners=names, folds=folds, alpha=alpha, seed=seed, budget_cpu_s=budget,
            progress=phase, variants=evaluate.ABLATION if ablation else None),
            to_stderr=json_out)
    doc = {"dataset": str(ds.path), "dataset_hash": ds.hash, **report.to_dict()}
    if figures is not None:
        from ..learn import figures as figs
        doc["figures"] = [str(p) for p in figs.evaluation_figures(ds, report, figures)]
    if json_out:
        print_json(doc)
        return
    console.print(_metrics_table(f"held-out families ({folds} folds), safe bound at "
                                 f"{100 * (1 - alpha):.0f}%", report.learners))
    console.print("[95% bootstrap interval over programs]; top-k: share of the k regions "
                  "predicted most sensitive that are among the k measured so; acc@10: "
                  "|Δ̂ - Δ| <= 10% of Δ; exceeded: safe bound below the measured safe "
                  "slowdown", highlight=False)
    for line in _comparison_lines(doc["comparison"], doc["winner"]):
        console.print(line, highlight=False)
    for path in doc.get("figures", []):
        console.print(f"figure: {path}", highlight=False)


PROGRAM_HELP = ("A program with region markers (ic_user.h, ic_region.h or ic_mark.h); its own "
                "arguments after --, as for `intercore measure run -- PROG ARGS`. A periodic "
                "task (ic_task.h) takes its runner's options first: -- --jobs 3 --period "
                "10ms -- ARGS.")
MODEL_DEFAULT_HELP = (f"Model directory (from `learn train`). Left out: {DEFAULT_MODEL}, "
                      "trained there on the reference dataset at first use (the learner that "
                      "ranks regions best on held-out families, docs/learn.md) and reused "
                      "after.")
# One repetition of a program is one run of it, as `intercore measure run -- PROG` times it. The
# reference labels and features are of a repetition that starts with warm caches (the
# dataset traces two and counts the second), so one warm-up run puts a program's data where
# the model expects it; a second run meets the same cache contents and only costs time.
WARMUP_HELP = ("Runs of the program traced before the counted one, to warm the modelled "
               "caches (one repetition is one run, as `intercore measure run` times it). "
               "Default 1: the model learnt from warm repetitions; 0 predicts a cold start.")


def _default_model(json_out: bool):
    """The default model, trained and saved at first use."""
    from ..learn import saved

    if (DEFAULT_MODEL / "model.json").is_file():
        return saved.load(DEFAULT_MODEL)
    paths.output_dir(DEFAULT_MODEL, "--model", default=DEFAULT_MODEL)
    # on stderr under --json: stdout is the document alone
    warn(f"no model yet: training the default one on the reference dataset into "
         f"{DEFAULT_MODEL} (once; `learn train` makes another)", to_stderr=json_out)
    m, _ = _train(_dataset(None), DEFAULT_MODEL, json_out)
    return m


def _train(ds, out: Path, json_out: bool, *, learner: str | None = None, alpha: float = 0.05,
           seed: int = 0, budget: float = 600.0, **overrides: Any):
    """Train `learner` (default: the held-out winner) on every family of `ds`, calibrate and
    save it: (model, fitted)."""
    from ..learn import evaluate, saved

    examples = ds.examples()
    if len(examples) < 10:
        raise InputError(f"{len(examples)} labelled regions: too few to train",
                         source=str(ds.path))
    split = evaluate.split_programs(examples, seed)
    # Training is in memory until the model is saved below: a stop saves nothing.
    with nothing_to_undo(), progress_bar(json_out) as bar:
        task = bar.add_task("training", total=None)

        def on_epoch(epoch, total, row):
            bar.update(task, completed=epoch, total=total,
                       description=f"training, epoch {epoch}: loss {row['loss']:.3f}"
                       + (f", validation {row['val_loss']:.3f}" if "val_loss" in row else ""))

        fitted = evaluate.fit(learner or evaluate.DEFAULT_LEARNER, split, ds.hierarchy,
                              alpha=alpha, seed=seed, budget_cpu_s=budget, on_epoch=on_epoch,
                              **overrides)
    m = saved.from_fitted(fitted, ds.hierarchy, {"dataset": str(ds.path), "dataset_hash": ds.hash,
                                   "host": ds.meta.get("host", {}),
                                   "labelled_for": ds.labelled_for(), "seed": seed,
                                   "families": ds.families(),
                                   "split": {"fit": len(split.fit), "validation": len(split.val),
                                             "calibration": len(split.cal)}})
    m.save(out)
    return m, fitted


def _trace_program(program: list[str], warmup: int, hierarchy, json_out: bool):
    from ..learn.extract import extract

    def on_run(run: int, runs: int, left: float | None) -> None:
        what = "warm-up run" if run + 1 < runs else "counted run"
        eta = f", about {left:.0f} s left" if left is not None else ""
        bar.update(task, description=f"tracing {Path(program[0]).name}: {what} {run + 1} of "
                                     f"{runs}{eta}")

    with sigterm_unwinds(), progress_bar(json_out) as bar:
        task = bar.add_task(f"tracing {Path(program[0]).name}", total=None)
        regions, t = extract(program, hierarchy, runs=warmup + 1, include_total=False,
                             on_run=on_run)
    if not regions:
        raise InputError("no region ran in the counted run", source=program[0])
    return regions, t


def _inputs(program: list[str], model_dir: Optional[Path]):
    """The model given with --model (None: the default one, trained later if need be) and
    the program, checked before a model is trained or a run traced."""
    from ..learn import saved, tracer
    from ..measure.program import built_with_runtime, parse_program

    m = saved.load(model_dir) if model_dir is not None else None
    if not program:
        raise InputError("give the program to trace, its own arguments after --",
                         field="PROGRAM")
    parse_program(program[0], tuple(program[1:]))
    if built_with_runtime(Path(program[0])) and "--jobs" not in program[1:]:
        # Its runner would trace 100 jobs 100 ms apart, under Valgrind: many minutes.
        raise InputError(f"{program[0]} is a periodic task (built with ic_task.h): give its "
                         "runner a few jobs first and its own arguments after a second --, "
                         "e.g. `-- --jobs 3 --period 10ms -- ARGS`", field="PROGRAM")
    tracer.check_markers(Path(program[0]))
    return m


def _for_line(m) -> str:
    d = m.describe()
    return f"by the {d['learner']} model for {d['regime']} of {d['host']}, under {d['aggressor']}"


@handle_errors
def predict_cmd(
    program: list[str] = typer.Argument(..., metavar="PROGRAM [-- ARGS...]", help=PROGRAM_HELP),
    model_dir: Optional[Path] = typer.Option(None, "--model", "-m", help=MODEL_DEFAULT_HELP,
                                             show_default=False),
    warmup: int = typer.Option(1, "--warmup", min=0, max=100, help=WARMUP_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Trace a program and predict each region's slowdown under interference: the median Δ̂
    and the safe bound Δ̂_safe at the model's stated confidence, for the host regime and
    class of host the model's labels were measured in.

    Example: intercore learn predict --json ./control -- --steps 2000"""
    import time

    m = _inputs(program, model_dir) or _default_model(json_out)
    regions, t = _trace_program(program, warmup, m.hierarchy, json_out)
    t0 = time.perf_counter()
    med, safe, _ = m.predict(regions)
    ms = (time.perf_counter() - t0) * 1000 / len(regions)
    rows = [{"region": r.region, "name": r.name, "delta": float(a), "delta_safe": float(b),
             "instructions": r.insns // max(r.entries, 1),
             "l2_accesses": r.l2_accesses // max(r.entries, 1)}
            for r, a, b in zip(regions, med, safe)]
    doc = {"program": program, "model": m.describe(), "warmup_runs": warmup,
           "confidence": m.calibration.confidence, "regions": rows,
           "trace_s": t.seconds, "predict_ms_per_region": ms}
    if json_out:
        print_json(doc)
        return
    table = Table(title=f"predicted slowdown, safe bound at "
                        f"{100 * m.calibration.confidence:.0f}% confidence")
    for col in ("region", "Δ̂", "Δ̂ safe", "instructions", "L2 accesses"):
        table.add_column(col)
    for r in rows:
        table.add_row(f"{r['region']} {r['name']}", f"{r['delta']:.3f}",
                      f"{r['delta_safe']:.3f}", str(r["instructions"]), str(r["l2_accesses"]))
    console.print(table)
    console.print(f"predicted {_for_line(m)}", highlight=False)
    console.print(f"traced in {t.seconds:.1f} s ({warmup} warm-up runs), predicted in "
                  f"{ms:.2f} ms per region", highlight=False)


@handle_errors
def heatmap_cmd(
    program: list[str] = typer.Argument(..., metavar="PROGRAM [-- ARGS...]",
                                        help=PROGRAM_HELP + " Built with -g: source lines "
                                             "come from its DWARF."),
    model_dir: Optional[Path] = typer.Option(None, "--model", "-m", help=MODEL_DEFAULT_HELP,
                                             show_default=False),
    out: Path = typer.Option(DEFAULT_HEATMAP, "--out", "-o",
                             help="Directory for heatmap.json and heatmap.html."),
    warmup: int = typer.Option(1, "--warmup", min=0, max=100, help=WARMUP_HELP),
    db: Path = typer.Option(Path("intercore.db"), "--db", help="Results store whose `intercore "
                            "measure -- PROGRAM ARGS` runs of this very binary (same sha256 "
                            "and arguments) put measured Δ beside the prediction; none "
                            "when it does not exist."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Write heatmap.json (region -> predicted Δ with its safe bound, weight, source lines;
    schema in docs/learn.md) and heatmap.html: your source, lines shaded on a fixed Δ scale
    (1 white), opening on the line that carries the most predicted slowdown."""
    from ..learn import binary, heatmap
    from ..measure.program import measured_regions

    m = _inputs(program, model_dir)
    paths.output_dir(out, "--out", default=DEFAULT_HEATMAP)
    if not binary.Binary(Path(program[0])).has_lines:
        raise InputError("no DWARF line table (stripped, or built without -g): the heatmap "
                         "needs source lines; rebuild with -g", source=program[0])
    measured = {}
    if db.exists():
        with paths.open_store(db, first="intercore measure run") as store:
            measured = measured_regions(store, program)
    m = m or _default_model(json_out)
    regions, _ = _trace_program(program, warmup, m.hierarchy, json_out)
    med, safe, received = m.predict(regions)
    doc = heatmap.build(program, regions, med, safe, received, m.describe(), measured)
    out.mkdir(parents=True, exist_ok=True)  # checked above: a parent exists, or the default
    heatmap.write_json(doc, out / "heatmap.json")
    heatmap.write_html(doc, out / "heatmap.html")
    if json_out:
        print_json({"json": str(out / "heatmap.json"), "html": str(out / "heatmap.html"),
                    "heatmap": doc})
        return
    table = Table(title="regions by predicted slowdown")
    for col in ("region", "Δ̂", "Δ̂ safe", "measured Δ", f"Δ̂ on 1..{heatmap.SCALE_TOP:g}",
                "hottest line"):
        table.add_column(col)
    for r in doc["regions"]:
        top = max(r["lines"], key=lambda ln: (ln["weight"], ln["execs"]), default=None)
        got = r["measured"]
        table.add_row(f"{r['id']} {r['region']}", f"{r['delta']:.3f}", f"{r['delta_safe']:.3f}",
                      f"{got['delta']:.3f}" if got else "-", heatmap.scale_bar(r["delta"]),
                      f"{Path(top['file']).name}:{top['line']}" if top else "-")
    console.print(table)
    console.print(f"predicted {_for_line(m)}", highlight=False)
    if doc["files"]:
        first = doc["files"][0]
        console.print(f"the page opens on {first['file']}:{first['hottest_line']}",
                      highlight=False)
    console.print(f"heatmap: {out / 'heatmap.json'}, {out / 'heatmap.html'}", highlight=False)


@handle_errors
def figures_cmd(
    out: Path = typer.Option(DEFAULT_FIGURES, "--out", "-o",
                             help="Directory for the PNG files."),
    caches: Optional[str] = typer.Option(None, "--caches", help=CACHES_HELP),
    platform: Optional[Path] = typer.Option(None, "--platform", help=PLATFORM_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Draw the L2-access sweep of paper 000 (its Fig 2) on these caches.

    Simulated L2 accesses of C[NxM] = A[NxK]·B[KxM] as N, M or K grows from 64 in steps of
    128 past 4096, the others 32. The paper's Fig. 4 and 5 come from `learn evaluate
    --figures DIR`."""
    from ..learn import figures, tracer

    reason = tracer.available()
    if reason:
        from ..base.errors import HostUnsupported
        raise HostUnsupported(reason)
    paths.output_dir(out, "--out", default=DEFAULT_FIGURES)
    hierarchy = _hierarchy(platform, caches)
    path = with_phases("Fig. 2", lambda phase: figures.fig2(hierarchy, out, out / "build",
                                                           phase), to_stderr=json_out)
    if json_out:
        print_json({"figures": [str(path)]})
        return
    console.print(f"figure: {path}", highlight=False)
