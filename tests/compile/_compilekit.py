"""Compile a small program in a test and look at its plan: one definition for the tests."""

from __future__ import annotations

from intercore.compile import pipeline

HEAD = "type blk = float[8];\n"


def compiled(tmp_path, body: str, **opts) -> pipeline.Compiled:
    src = tmp_path / "p.comp"
    src.write_text(HEAD + body)
    return pipeline.compile_file(src, pipeline.Options(**{"cpus": 1, **opts}))


def groups(c) -> list[list[str]]:
    return [sorted(c.graph.nodes[n].label for n in p.nodes) for p in c.processes]
