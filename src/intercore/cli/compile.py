"""`intercore compile build`: a composition program -> dataflow graph -> fusion -> C/OpenMP
or MLIR."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from ..base.errors import InputError
from ..host.topology import read_topology
from . import paths
from .output import JSON_HELP, console, err_console, handle_errors, print_json

STAGES = ("comp", "dfg", "fused", "c", "mlir")


@handle_errors
def compile_cmd(
    ctx: typer.Context,
    program: Path = typer.Argument(..., help="The composition program (.comp)."),
    sources: Optional[List[Path]] = typer.Option(
        None, "--sources", "-s", help="The C files (or objects) that implement the "
                                      "declared functions: --sources a.c b.c"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Binary to build."),
    backend: str = typer.Option("c", "--backend",
                                help="c: C with OpenMP (any C compiler). mlir: MLIR 19 "
                                     "(func/scf/arith/llvm/omp), mlir-opt-19, "
                                     "mlir-translate-19 and clang-19."),
    heatmap: Optional[Path] = typer.Option(None, "--heatmap",
                                           help="heatmap.json of the learning stage: "
                                                "region weights and predicted slowdowns."),
    weights_file: Optional[Path] = typer.Option(
        None, "--weights", help="Measured or hand-written weights, heatmap schema."),
    matrix: Optional[Path] = typer.Option(
        None, "--matrix", help="Interference matrix (intercore.interference-matrix/1) "
                               "whose task names are function names."),
    cpus: Optional[int] = typer.Option(None, "--cpus",
                                       help="CPUs to plan for (default: this process's)."),
    max_tasks: Optional[int] = typer.Option(None, "--max-tasks",
                                            help="Fuse until at most this many tasks."),
    budget: Optional[float] = typer.Option(None, "--budget",
                                           help="No fused task heavier than this weight."),
    no_fuse: bool = typer.Option(False, "--no-fuse", help="One task per node."),
    split: int = typer.Option(1, "--split", help="Instances of each data-parallel node."),
    schedule: Optional[str] = typer.Option(
        None, "--schedule", help="threads: one thread per task. static: the cost model "
                                 "partitions the tasks over the CPUs, one thread per "
                                 "partition firing its calls in a fixed order. Default: "
                                 "threads with no more tasks than CPUs; with more, "
                                 "whichever the cost model estimates faster."),
    capacity: int = typer.Option(8, "--capacity", help="Channel capacity in tokens."),
    emit: Optional[str] = typer.Option(None, "--emit",
                                       help=f"Print one stage: {', '.join(STAGES)}."),
    explain: bool = typer.Option(False, "--explain",
                                 help="Say what was fused, why, and what was not, "
                                      "and each loop's repetition vector where calls "
                                      "have rates."),
    draw: Optional[Path] = typer.Option(None, "--draw",
                                        help="Write PREFIX-before/after .dot and .svg "
                                             "(or .png with --draw-format png)."),
    draw_format: str = typer.Option("svg", "--draw-format", help="svg or png."),
    cc: Optional[str] = typer.Option(None, "--cc", help="C compiler for the user's C with "
                                                        "either back end (default: $CC, "
                                                        "cc)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Compile a composition of C functions into a parallel program.

    The program is parsed, checked and turned into a dataflow graph (one node per call,
    one channel per def-use); nodes that run at the same rate over unconditional edges
    are fused where the cost model (weights from --heatmap, --weights or @weight,
    --matrix, the CPU count) predicts a faster run; each remaining node becomes one
    OpenMP thread. The binary runs a variant with fewer tasks when it gets fewer
    threads (OMP_THREAD_LIMIT), down to sequential, so it never deadlocks. A function
    may take or make several tokens per firing (`int decimate(const int x[4]);`): the
    rates are balanced per loop and refused (exit 2) where they cannot be.

    Examples:

        intercore compile build examples/apps/signal/signal.comp \\
            --sources examples/apps/signal/signal.c -o signal --explain
        intercore compile build app.comp --emit fused
        intercore compile build app.comp --sources app.c -o app --backend mlir --draw graph
    """
    from ..compile import build, draw as drawing, explain as explain_mod, pipeline

    extra = [Path(a) for a in ctx.args]
    bad = [str(a) for a in extra if a.suffix not in (".c", ".o", ".a", ".so")]
    if bad:
        raise InputError(f"unexpected argument(s): {' '.join(bad)}", field="--sources")
    srcs = build.check_sources(list(sources or []) + extra)
    if backend not in ("c", "mlir"):
        raise InputError("choose c or mlir", field="--backend")
    if emit is not None and emit not in STAGES:
        raise InputError(f"choose one of {', '.join(STAGES)}", field="--emit")
    if draw_format not in ("svg", "png"):
        raise InputError("choose svg or png", field="--draw-format")
    paths.output_file(out, "--out")
    for path in [] if draw is None else drawing.files(draw, draw_format):
        paths.output_file(path, "--draw")
    if cpus is not None and not 1 <= cpus <= len(read_topology().online_cpus):
        raise InputError(f"{cpus}: this host has {len(read_topology().online_cpus)} "
                         "online CPUs", field="--cpus")
    if out is not None:  # both back ends compile the user's C with it
        build.find_cc(cc)
        build.runtime_dir()
        if backend == "mlir":
            from ..compile import emit_mlir
            emit_mlir.tools()
    opts = pipeline.Options(
        **({"cpus": cpus} if cpus is not None else {}), max_tasks=max_tasks,
        budget=budget, no_fuse=no_fuse, split=split, schedule=schedule, capacity=capacity,
        heatmap=heatmap, weights=weights_file, matrix=matrix, sources=tuple(srcs))
    compiled = _compile(pipeline, program, opts)
    doc = explain_mod.explain(compiled)
    if emit is not None:
        sys.stdout.write(pipeline.emit(compiled, emit))
    result: dict = {"program": str(program), "explain": doc}
    if draw is not None:
        result["drawings"] = [str(p) for p in drawing.write(compiled, draw, draw_format)]
    if out is not None:
        built = pipeline.build(compiled, out, srcs, backend, cc)
        result["binary"] = str(built.binary)
        result["backend"] = backend
        result["build"] = built.record
    if json_out:
        print_json(result)
        return
    stream = err_console if emit is not None else console
    if explain:
        for line in explain_mod.lines(doc):
            stream.print(line, highlight=False, markup=False, soft_wrap=True)
    elif emit is None or out is not None:
        tasks = "; ".join(f"{t['process']} ({', '.join(t['calls'])})"
                          for t in doc["tasks"])
        stream.print(f"{len(doc['nodes'])} nodes -> {len(doc['tasks'])} task(s): {tasks}",
                     highlight=False, markup=False, soft_wrap=True)
        # the unused @weight line is said even unasked: it changes the plan
        for line in explain_mod.unused(doc) + explain_mod.schedule(doc)[:1]:
            stream.print(line, highlight=False, markup=False, soft_wrap=True)
    for p in result.get("drawings", []):
        stream.print(f"wrote {p}", highlight=False, markup=False)
    if out is not None:
        stream.print(f"built {built.binary} ({built.said}; record in "
                     f"{built.binary}.build/{pipeline.BUILD_RECORD})", highlight=False,
                     markup=False, soft_wrap=True)


def _compile(pipeline, program: Path, opts):
    from ..compile.errors import CompileError
    try:
        return pipeline.compile_file(program, opts)
    except CompileError as exc:  # file:line:col: message, then the line and a caret
        err_console.print(f"error: {exc}", highlight=False, markup=False, soft_wrap=True)
        if exc.excerpt:
            err_console.print(exc.excerpt, highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(CompileError.exit_code) from None
