"""Dependencies point down the pipeline, never back up (the developers' guide).

Every module of src/intercore is parsed and each of its imports (at any depth, lazy ones in
functions included) is checked against the layer order below. A module may import its own
layer and the layers under it; anything above is refused, with the edge named.

    foundation   errors, yamlfile, artefact, outputs, locks, native, examples: what every
                 layer uses
    host         reading this machine
    store        the results store, the only code that talks SQL
    model        platform models and the interference calculus (runs nothing)
    measure      workloads, the paired harness, periodic jobs, the matrix, and checking a
                 platform model's predictions on this host (measure.model_validation)
    learn        slowdown prediction
    compile      composition language, dataflow IR, code generation
    mitigate     Algorithm 1, cgroups, the monitor, resctrl, MBA designs
    campaign     campaigns: measure-stage orchestration under mitigate's mechanisms, and
                 their results model (campaign.results)
    report       renders results models; reads a campaign only through campaign.results
                 and campaign.stats, never its runner, executors or store rows
    assess       one system through every stage, into a certification dossier
    tour         the demo's stage tours, each composed from the stages it shows
    cli          the command line, which may compose anything

Record modules are the exception: data definitions that a stage produces and the store
persists (the sample, the job). Any layer may import them, and they import nothing of
intercore but the foundation, so the exception cannot carry a dependency upwards.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "intercore"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("intercore", "intercore.errors", "intercore.yamlfile", "intercore.artefact",
     "intercore.outputs", "intercore.locks", "intercore.native", "intercore.examples"),
    ("intercore.host",),
    ("intercore.store",),
    ("intercore.model",),
    ("intercore.measure",),
    ("intercore.learn",),
    ("intercore.compile",),
    ("intercore.mitigate",),
    ("intercore.campaign",),
    ("intercore.report",),
    ("intercore.assess",),
    ("intercore.tour",),
    ("intercore.cli", "intercore.__main__"),
)
RECORDS = frozenset({"intercore.measure.sample", "intercore.measure.job"})
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
        if target in RECORDS:
            continue
        path = MODULES[module]
        where = f"{path.relative_to(SRC) if path.is_relative_to(SRC) else path}:{line}: " \
                f"{module} imports {target}"
        if layer(target) > rank:
            out.append(f"{where}, a layer above it ({LAYERS[layer(target)][0]} over "
                       f"{LAYERS[rank][0]})")
        elif module.startswith("intercore.report") and target.startswith("intercore.campaign") \
                and target not in REPORT_READS:
            out.append(f"{where}: the report reads campaigns through campaign.results only")
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


@pytest.mark.parametrize("record", sorted(RECORDS))
def test_record_modules_import_only_the_foundation(record):
    assert record in MODULES, f"{record} is named a record module but does not exist"
    above = [(line, target) for line, target in imports(record) if layer(target) > 0]
    assert above == []


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
