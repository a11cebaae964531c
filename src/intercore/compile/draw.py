"""Drawings of the dataflow graph before and after fusion: Graphviz DOT text (for those who
have Graphviz) and an SVG or PNG drawn with matplotlib (a dependency already; Graphviz is
not needed). Processes are laid out in layers by longest path from the sources; solid edges
carry data, dashed ones feed a condition, red ones are conditional."""

from __future__ import annotations

from pathlib import Path

from ..base import outputs
from ..base.figures import pyplot, save

from .cost import Chan, Proc


def _layers(procs: dict[str, Proc], chans: list[Chan]) -> dict[str, int]:
    order = sorted(procs, key=lambda n: min(procs[n].nodes, default=0))
    depth = {n: 0 for n in order}
    for _ in range(len(order)):  # longest path; back edges (cycles) are ignored
        changed = False
        for c in chans:
            if c.src != c.dst and min(procs[c.src].nodes) < min(procs[c.dst].nodes) \
                    and depth[c.dst] < depth[c.src] + 1:
                depth[c.dst] = depth[c.src] + 1
                changed = True
        if not changed:
            break
    return depth


def _label(p: Proc) -> str:
    calls = ", ".join(p.callees)
    mult = f" x{p.mult}" if p.mult > 1 else ""
    return f"{p.name}{mult}\n{calls}\nrate {p.rate}, weight {p.weight:.3g}"


def dot(procs: dict[str, Proc], chans: list[Chan], title: str) -> str:
    lines = [f'digraph "{title}" {{', "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
    for name, p in procs.items():
        style = ', style="rounded,bold"' if p.stateful else ""
        label = _label(p).replace("\n", "\\n")
        lines.append(f'  "{name}" [label="{label}"{style}];')
    for c in chans:
        attrs = [f'label="{c.var}"']
        if c.control:
            attrs.append("style=dashed")
        if c.conditional:
            attrs.append("color=red")
        lines.append(f'  "{c.src}" -> "{c.dst}" [{", ".join(attrs)}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def picture(procs: dict[str, Proc], chans: list[Chan], title: str, path: Path) -> None:
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    depth = _layers(procs, chans)
    columns: dict[int, list[str]] = {}
    for n in sorted(procs, key=lambda n: min(procs[n].nodes, default=0)):
        columns.setdefault(depth[n], []).append(n)
    width = max(columns) + 1 if columns else 1
    height = max(len(v) for v in columns.values()) if columns else 1
    pos = {n: (x * 3.2, -y * 1.6) for x, names in columns.items() for y, n in enumerate(names)}
    fig, ax = pyplot().subplots(figsize=(2.2 + 2.6 * width, 1.2 + 1.3 * height))
    for n, (x, y) in pos.items():
        p = procs[n]
        ax.add_patch(FancyBboxPatch((x - 1.2, y - 0.5), 2.4, 1.0,
                                    boxstyle="round,pad=0.05",
                                    linewidth=2.0 if p.stateful else 1.0,
                                    facecolor="#dbe9f6" if p.mult == 1 else "#fde8c8",
                                    edgecolor="black"))
        ax.text(x, y, _label(p), ha="center", va="center", fontsize=7)
    for c in chans:
        if c.src == c.dst:
            continue
        (x0, y0), (x1, y1) = pos[c.src], pos[c.dst]
        ax.add_patch(FancyArrowPatch((x0 + 1.2, y0), (x1 - 1.2, y1),
                                     connectionstyle="arc3,rad=0.15", arrowstyle="-|>",
                                     mutation_scale=12, linestyle="--" if c.control else "-",
                                     color="tab:red" if c.conditional else "black"))
        ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.15, c.var, fontsize=6, ha="center",
                color="dimgray")
    xs = [x for x, _ in pos.values()] or [0]
    ys = [y for _, y in pos.values()] or [0]
    ax.set_xlim(min(xs) - 1.5, max(xs) + 1.5)
    ax.set_ylim(min(ys) - 1.0, max(ys) + 1.0)
    ax.set_title(title, fontsize=9)
    ax.axis("off")
    save(fig, path, dpi=100)


def files(prefix: Path, fmt: str = "svg") -> list[Path]:
    """What `write` writes: PREFIX-before.{dot,svg|png} and PREFIX-after.{dot,svg|png}."""
    return [prefix.with_name(f"{prefix.name}-{tag}.{ext}")
            for tag in ("before", "after") for ext in ("dot", fmt)]


def write(compiled, prefix: Path, fmt: str = "svg") -> list[Path]:
    out = files(prefix, fmt)
    graphs = iter(out)
    for tag, (procs, chans) in (("before", compiled.before), ("after", compiled.after)):
        tasks = sum(p.mult for p in procs.values())
        title = f"{Path(compiled.module.source).name}: {tag} fusion, {tasks} task(s)"
        outputs.write_text(next(graphs), dot(procs, chans, title))
        picture(procs, chans, title, next(graphs))
    return out
