"""Dependencies point down the pipeline, never back up (the developers' guide).

Every module of src/intercore is parsed and each of its imports (at any depth, lazy ones in
functions included) is checked against the layer order of docs/architecture.md ("Layers"),
read from that page so that the order is written once. A module may import its own layer and
the layers under it; anything above is refused, with the edge named. There is no exception:
the record types a stage produces and the store keeps live in the foundation, intercore.base.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "intercore"

ARCHITECTURE = SRC.parent / "docs" / "architecture.md"


def read_layers(text: str) -> tuple[tuple[str, ...], ...]:
    """The numbered list under "## Layers": each item's backquoted names form one layer."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in section.splitlines():
        if re.match(r"\d+\. ", line):
            layers.append(tuple(re.findall(r"`(intercore[\w.]*)`", line.split(":", 1)[0])))
    return tuple(layers)


LAYERS = read_layers(ARCHITECTURE.read_text())
# What the report may read of the campaign layer: its results model, not the runner.
REPORT_READS = frozenset({"intercore.campaign.results", "intercore.campaign.stats"})


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    """Index in LAYERS of the longest prefix naming a layer."""
    best = None
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or (prefix != "intercore" and module.startswith(prefix + ".")):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), rank)
    if best is None:
        raise LookupError(module)
    return best[1]


def imports(module: str) -> list[tuple[int, str]]:
    """(line, imported intercore module) for every import in `module`'s source."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                # `from pkg import mod` imports the module pkg.mod when there is one.
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if sub in MODULES else target))
    return [(line, name) for line, name in found
            if name == "intercore" or name.startswith("intercore.")]


def violations(module: str) -> list[str]:
    out = []
    rank = layer(module)
    for line, target in imports(module):
        path = MODULES[module]
        where = f"{path.relative_to(SRC) if path.is_relative_to(SRC) else path}:{line}: " \
                f"{module} imports {target}"
        if layer(target) > rank:
            out.append(f"{where}, a layer above it ({LAYERS[layer(target)][0]} over "
                       f"{LAYERS[rank][0]})")
        elif module.startswith("intercore.report") and target.startswith("intercore.campaign") \
                and target not in REPORT_READS:
            out.append(f"{where}: the report reads campaigns through campaign.results only")
        elif module.startswith("intercore.report") and target.startswith("intercore.store"):
            out.append(f"{where}: the report reads results models, never the store")
        elif module.startswith("intercore.model") and target.startswith("intercore.store"):
            out.append(f"{where}: the model runs nothing; its caller hands it stored evidence")
    return out


def test_every_module_has_a_layer():
    unplaced = []
    for module in MODULES:
        try:
            layer(module)
        except LookupError:
            unplaced.append(module)
    assert not unplaced, f"place these modules in a layer of tests/test_layers.py: {unplaced}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_points_up_the_pipeline(module):
    assert violations(module) == []


def test_the_layer_order_is_read_from_the_architecture_page():
    assert LAYERS[0] == ("intercore", "intercore.base")
    assert LAYERS[-1] == ("intercore.cli", "intercore.__main__")
    assert len(LAYERS) == 13 and len({p for layer in LAYERS for p in layer}) == 15


@pytest.mark.slow
def test_only_the_store_talks_sql():
    talking = []
    for module, path in MODULES.items():
        if module.startswith("intercore.store"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) else []
            if "sqlite3" in names:
                talking.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert talking == [], "SQL belongs in a module of intercore.store"


def test_the_checker_sees_a_backward_import(tmp_path, monkeypatch):
    """The rules above are only as good as the import resolution: a relative import that
    points up, a lazy one inside a function, and `from pkg import module` are all seen."""
    fake = {"intercore.measure.fake": tmp_path / "fake.py",
            "intercore.report.campaign": MODULES["intercore.report.campaign"],
            "intercore.campaign.runner": MODULES["intercore.campaign.runner"]}
    fake["intercore.measure.fake"].write_text(
        "from ..report import campaign\n"
        "def later():\n    from ..campaign import runner\n")
    monkeypatch.setattr(sys.modules[__name__], "MODULES", {**MODULES, **fake})
    found = violations("intercore.measure.fake")
    assert len(found) == 2 and "intercore.report.campaign" in found[0]
    assert "intercore.campaign.runner" in found[1]
