"""Entry point: `intercore STAGE COMMAND`. The whole command tree is named here, one
sub-application per pipeline stage (model, measure, learn, compile, mitigate) beside the
commands that serve them all (doctor, results, assess, dossier, demo); each command is a
module-level function of its own module (cgroups.plan_cmd, measure.measure_cmd, ...),
importable and testable alone. The flat names of earlier releases still answer: legacy.py."""

from __future__ import annotations

from typing import Any, Callable

import typer

from .. import __version__
from . import (assess, campaign, campaign_run, cgroups, counters, demo, doctor, dossier,
               experiment, gang, kit, learn, legacy, manage, matrix, mba, measure, model,
               monitor, regulate, results, tegra, workloads)
from . import compile as compile_cli
from . import profile as profile_cli
from . import service as service_cli
from .output import MARKUP, plain_command_tree


def _group(text: str, cls: type[typer.core.TyperGroup] | None = None) -> typer.Typer:
    return typer.Typer(help=text, cls=cls, rich_markup_mode=MARKUP, no_args_is_help=True)


def _add(group: typer.Typer, commands: dict[str, Callable[..., Any]],
         **settings: dict[str, Any]) -> None:
    """Name each command in `group`; `settings` holds the context settings of those that
    take what follows `--` as their own arguments."""
    for name, function in commands.items():
        group.command(name, context_settings=settings.get(name))(function)


app = typer.Typer(
    name="intercore",
    cls=legacy.Root,
    rich_markup_mode=MARKUP,
    help=(
        "Find, measure, predict and mitigate interference between tasks on multi-core "
        "machines.\n\nStart with `intercore doctor` (what this host can show), then "
        "`intercore measure run` (slowdown of a victim under aggressors), or `intercore demo` "
        "for the whole tour. The pipeline's stages are the groups model, measure, learn, "
        "compile and mitigate. Every command takes --json."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"intercore {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    pass


# Stage 1: platform models and the interference calculus.
model_app = _group("Stage 1, platform models (PHYLOG): list the interference channels of a "
                   "platform, write the model of this host, and validate a model's verdicts "
                   "with micro-benchmarks.")
_add(model_app, {"analyze": model.analyze_cmd, "detect": model.detect_cmd,
                 "validate": model.validate_cmd, "rules": model.rules_cmd})

# Stage 2: the paired harness, the matrix, bandwidth profiles, campaigns.
campaign_app = _group("Experiment campaigns: a configuration space generated from one YAML "
                      "file, run resumably, reported as one HTML file.")
_add(campaign_app, {"validate": campaign.validate_cmd, "plan": campaign.plan_cmd,
                    "run": campaign_run.run_cmd, "resume": campaign_run.resume_cmd,
                    "status": campaign_run.status_cmd, "report": campaign_run.report_cmd,
                    "compare": campaign_run.compare_cmd, "export": campaign_run.export_cmd})
profile_app = _group("Paper 004's bandwidth profiler: profile a program or a victim, and draw "
                     "a stored profile again.", legacy.runs("run"))
_add(profile_app, {"run": profile_cli.profile_cmd, "show": profile_cli.profile_show},
     run={"help_option_names": ["--help"]})
counters_app = _group("Memory-traffic sources: perf events per CPU model, resctrl MBM, the "
                      "latency probe.")
_add(counters_app, {"list": counters.list_cmd, "self-test": counters.self_test_cmd,
                    "calibrate": counters.calibrate_cmd})
measure_app = _group("Stage 2, measurement: the slowdown of a victim (or your program) under "
                     "aggressors, the interference matrix of a task set, campaigns, bandwidth "
                     "profiles and the counters behind them.", legacy.runs("run"))
_add(measure_app, {"run": measure.measure_cmd, "workloads": workloads.workloads_cmd,
                   "matrix": matrix.matrix_cmd, "kit": kit.kit_cmd})
measure_app.add_typer(campaign_app, name="campaign")
measure_app.add_typer(profile_app, name="profile")
measure_app.add_typer(counters_app, name="counters")

# Stage 3: learning.
learn_app = _group(
    "Stage 3, learning: predict each code region's slowdown under interference from its "
    "instruction trace, and draw the code heatmap. Needs the learning extra (pip install "
    "'intercore[learn]') and, to trace, Valgrind (Debian: apt-get install valgrind).")
_add(learn_app, {"dataset": learn.dataset_cmd, "train": learn.train_cmd,
                 "evaluate": learn.evaluate_cmd, "predict": learn.predict_cmd,
                 "heatmap": learn.heatmap_cmd, "figures": learn.figures_cmd})

# Stage 4: the dataflow compiler and the run-time manager of what it builds.
compile_app = _group("Stage 4, compilation: a composition of C functions fused into a dataflow "
                     "program (C/OpenMP or MLIR), and the run-time manager that keeps its "
                     "cache-hungry threads apart.", legacy.runs("build"))
_add(compile_app, {"build": compile_cli.compile_cmd, "manage": manage.manage_cmd},
     build={"allow_extra_args": True},
     manage={"allow_extra_args": True, "ignore_unknown_options": True})

# Stage 5: Algorithm 1's cgroups, the monitor, regulation, gangs, resctrl.
service_app = _group("Run the freezer monitor as a systemd service (needs root and systemd to "
                     "start it; the unit is written and verified anywhere).")
_add(service_app, {"install": service_cli.install_cmd, "uninstall": service_cli.uninstall_cmd})
mba_app = _group("Memory-bandwidth allocation (Intel RDT MBA, AMD, Arm MPAM) through resctrl.")
_add(mba_app, {"doe": mba.doe_cmd})
tegra_app = _group("Tegra X1 memory-controller throttling of the iGPU (needs the "
                   "RT-Gang++/BandWatch throttle module; exit 3 elsewhere).")
_add(tegra_app, {"status": tegra.status_cmd, "set": tegra.set_cmd})
mitigate_app = _group("Stage 5, mitigation: Algorithm 1's cgroup plan from the interference "
                      "matrix (plan, apply, ... teardown), the freezer monitor that freezes "
                      "best-effort tasks while critical ones run, the protection experiment, "
                      "bandwidth regulation, gangs, MBA, the monitor as a service.")
_add(mitigate_app, {**cgroups.COMMANDS, "monitor": monitor.monitor_cmd,
                    "protection": experiment.protection_cmd, "regulate": regulate.regulate_cmd,
                    "gang": gang.gang_cmd})
mitigate_app.add_typer(service_app, name="service")
mitigate_app.add_typer(mba_app, name="mba")
mitigate_app.add_typer(tegra_app, name="tegra")

results_app = _group("List, inspect and export stored measurements (raw samples in SQLite).")
_add(results_app, {"list": results.list_cmd, "show": results.show_cmd,
                   "export": results.export_cmd, "merge": results.merge_cmd,
                   "timeline": results.timeline_cmd})

app.command("doctor")(doctor.doctor)
app.add_typer(model_app, name="model")
app.add_typer(measure_app, name="measure")
app.add_typer(learn_app, name="learn")
app.add_typer(compile_app, name="compile")
app.add_typer(mitigate_app, name="mitigate")
app.add_typer(results_app, name="results")
# Every stage on one system, into a certification dossier (issue 21).
app.command("assess")(assess.assess_cmd)
# A dossier measured again here, or set beside another (issue 21).
dossier.register(app)
app.command("demo")(demo.demo_cmd)


def command():
    """The click command tree of `app`, its help plain (output.plain_command_tree)."""
    tree = typer.main.get_command(app)
    plain_command_tree(tree)
    return tree


if __name__ == "__main__":
    command()()
