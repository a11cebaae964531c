"""A generated composition of any size, with C that implements it: what the compile-time
test and bench/fusion.py compile (issue 23 asks for a 200-node graph in <= 5 s), since no
example is large enough to show how the compiler's passes scale."""

from __future__ import annotations

from pathlib import Path

WIDTH = 10  # nodes per layer: enough parallel work for the cost model to weigh


def program(nodes: int, frames: int = 100) -> tuple[str, str]:
    """(composition, C) for `nodes` calls in one loop: layers of WIDTH calls, each reading
    two of the layer before, so the graph has fan-out, fan-in and many fusion choices."""
    if nodes < 2:
        raise ValueError("a generated graph needs at least two nodes")
    comp = ["type blk = float[16];", f"const int FRAMES = {frames};", "",
            "blk src(int i);", "stateful void sink(int i, const blk x);"]
    c = ["#include <stdio.h>", "typedef float blk[16];",
         "void src(int i, blk out) { for (int k = 0; k < 16; k++) out[k] = (float)(i + k); }",
         "static double total;",
         "void sink(int i, const blk x) {",
         "  for (int k = 0; k < 16; k++) total += x[k];",
         '  if (i == 0) printf("first %g\\n", total);', "}"]
    body = ["int main() {", "  for (int i = 0; i < FRAMES; i++) {", "    blk n0 = src(i);"]
    prev, made = ["n0"], 1
    while made < nodes - 1:
        layer = []
        for j in range(min(WIDTH, nodes - 1 - made)):
            name = f"n{made}"
            a, b = prev[j % len(prev)], prev[(j + 1) % len(prev)]
            comp.append(f"blk f{made}(const blk a, const blk b);")
            c.append(f"void f{made}(const blk a, const blk b, blk out) "
                     f"{{ for (int k = 0; k < 16; k++) out[k] = 0.5f * a[k] + 0.25f * b[k] "
                     f"+ {made}; }}")
            body.append(f"    blk {name} = f{made}({a}, {b});")
            layer.append(name)
            made += 1
        prev = layer
    body += [f"    sink(i, {prev[-1]});", "  }", "  return 0;", "}"]
    return "\n".join(comp + [""] + body) + "\n", "\n".join(c) + "\n"


def write(directory: Path, nodes: int, frames: int = 100) -> tuple[Path, Path]:
    """gen.comp and gen.c in `directory`."""
    comp, c = program(nodes, frames)
    (directory / "gen.comp").write_text(comp)
    (directory / "gen.c").write_text(c)
    return directory / "gen.comp", directory / "gen.c"
