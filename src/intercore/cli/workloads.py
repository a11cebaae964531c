"""`intercore measure workloads`: the aggressors, victims and presets this build can run."""

from __future__ import annotations

import typer
from rich.table import Table

from ..host.topology import default_placement, read_topology
from ..measure.aggressors.catalog import catalog
from ..measure.aggressors.presets import Footprints, preset
from .output import JSON_HELP, console, handle_errors, print_json


def _options(kind: dict) -> str:
    parts = []
    for o in kind["options"]:
        default = "" if o.get("default") in (None, "") else f"={o['default']}"
        parts.append(f"--{o['name']}{default}")
    return " ".join(parts)


@handle_errors
def workloads_cmd(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """List aggressors, victims and presets, sized for this host.

    Victims come with their parameters and regions; the ten presets of paper 002 with the
    footprints they resolve to on this host.

    --json prints {"aggressors": [...], "victims": [...], "presets": [...], "aliases": [...]}.
    """
    data = catalog()
    topo = read_topology()
    victim_cpu, _ = default_placement(topo)
    try:
        fp = Footprints.for_host(topo, victim_cpu)
    except Exception:  # no cache information: presets cannot be sized here
        fp = None
    for p in data["presets"]:
        p["resolved"] = preset(p["name"], fp).to_dict() if fp else None
    if json_out:
        print_json(data)
        return
    for title, key in (("Aggressors (ic-aggr)", "aggressors"),
                       ("Victims (ic-victim)", "victims")):
        t = Table(title=title)
        for col in ("name", "what it does", "parameters", "regions"):
            t.add_column(col)
        for k in data[key]:
            t.add_row(k["name"], k["help"], _options(k), ", ".join(k.get("regions", [])))
        console.print(t)
    t = Table(title="Presets (paper 002), sized for this host")
    for col in ("name", "kind", "op", "target", "footprint", "mlp / bank"):
        t.add_column(col)
    for p in data["presets"]:
        r = p["resolved"] or {}
        extra = str(r.get("mlp", "")) + (f" mask {r['bank']['mask']}" if "bank" in r else "")
        t.add_row(p["name"], p["kind"], p["op"], p["target"], r.get("size_h", "?"), extra)
    console.print(t)
    console.print("aliases: "
                  + ", ".join(f"{a['name']} = {a['label']}" for a in data["aliases"]))
