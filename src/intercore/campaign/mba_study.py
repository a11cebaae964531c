"""Paper 003's MBA study run as campaigns (mitigate/bandwidth/mba.py designs them and builds
the tables): each analysis is a generated campaign file next to the results, run through the
campaign runner with resctrl enforcement, so `intercore measure campaign resume` continues an
interrupted one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base.errors import InputError
from ..host.topology import Topology
from ..mitigate.bandwidth.mba import (
    MULTI_DELAYS,
    Analysis,
    collect,
    critical_cpu,
    host_mba,
    levels,
    multi_core_campaign,
    plot,
    single_core_campaign,
    table_iv,
    table_v,
    write_campaign,
)
from ..mitigate.bandwidth.resctrl import Resctrl
from ..store import Store
from . import results, runner


def latest_single_core_table(db: Path) -> dict | None:
    """Table IV of the newest single-core analysis in the store, for the multi-core degrees."""
    with Store.open(db) as store:
        rows = sorted((c for c in store.campaigns.all()
                       if c.name.startswith("mba-single-core")), key=lambda c: c.id,
                      reverse=True)
        for row in rows:
            try:
                return table_iv(collect(results.load(store, row)))
            except InputError:
                continue
    return None


def run_doe(analysis: Analysis, topo: Topology, *, db: Path, out: Path, reps: int = 30,
            rounds: int = 3, delays: tuple[int, ...] | None = None,
            rates: tuple[int, ...] | None = None, cpu: int | None = None, seed: int = 1,
            resctrl: Resctrl | None = None, listener=None, name: str | None = None) -> dict:
    """Generate the analysis's campaign, run it through the campaign runner with resctrl
    enforcement, and build the paper's table from what was stored."""
    if reps < 1 or rounds < 1:
        raise InputError("must be at least 1", field="--reps" if reps < 1 else "--rounds")
    resctrl, mb = host_mba(resctrl)
    cpu = critical_cpu(topo, cpu)
    if analysis == "single-core":
        lvls = levels(mb, delays, rates)
        doc = single_core_campaign(topo, mb, cpu=cpu, reps=reps, rounds=rounds, lvls=lvls,
                                   seed=seed, name=name)
    else:
        doc = multi_core_campaign(topo, mb, cpu=cpu, reps=reps, rounds=rounds,
                                  delays=delays or MULTI_DELAYS, seed=seed, name=name)
    out.mkdir(exist_ok=True)
    path = write_campaign(doc, out / f"{doc['name']}.yaml")
    session = runner.start(path, db, canary=False, listener=listener, resctrl=resctrl)
    with Store.open(db) as store:
        row = store.campaigns.find(doc["name"])
        found = results.load(store, row)
        cells = collect(found, "fetch.read")
        setups = dict(row.setups)
    tables: dict[str, Any] = {}
    if analysis == "single-core":
        tables["iv"] = table_iv(cells)
    else:
        tables["iv_reference"] = latest_single_core_table(db)
        tables["v"] = table_v(cells, setups, tables["iv_reference"])
    figure = plot(tables, cells, out, analysis)
    return {"analysis": analysis, "campaign": doc["name"], "campaign_file": str(path),
            "mode": mb.mode, "min_bandwidth": mb.min_bandwidth,
            "bandwidth_gran": mb.bandwidth_gran, "critical_cpu": cpu,
            "session": session.to_dict(), "tables": tables, "plot": str(figure),
            "skipped": [{"setup": r.setup, "reason": r.reason} for r in found.skipped]}
