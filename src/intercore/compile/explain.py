"""`intercore compile build --explain`: every fusion decision, its inputs, and what was refused."""

from __future__ import annotations

from . import cost, partition, weights

# What one unit of weight is, per source: the line --explain prints about the weights.
UNITS = {
    "default": f"no weights given: every call weighs {weights.DEFAULT:g} per firing",
    "@weight": f"@weight(N) is N firings of a call without @weight, which weighs "
               f"{weights.DEFAULT:g} (the default)",
    "heatmap": f"the heatmap's region weights per firing, scaled to a mean covered firing of "
               f"{weights.DEFAULT:g}, which calls it does not cover weigh",
    "weights": f"--weights' region weights per firing, scaled to a mean covered firing of "
               f"{weights.DEFAULT:g}, which calls it does not cover weigh",
}


def explain(c) -> dict:
    g = c.graph
    nodes = []
    for n, node in sorted(g.nodes.items()):
        w = g.weights[n]
        nodes.append({"id": n, "label": node.label, "line": node.line, "rate": node.rate,
                      "weight_per_firing": w.per_firing, "delta": w.delta,
                      "weight_source": w.source, "stateful": node.stateful,
                      "replicable": node.replicable})
    return {
        "source": c.module.source,
        "cpus": c.options.cpus,
        "weights_from": c.weight_source,
        "weights": {"unit": UNITS[c.weight_source], "data_op": weights.DATA_OP,
                    "unused_at_weight": list(c.weight_unused)},
        "assumptions": {"sigma": cost.SIGMA, "channel_cost": cost.CHANNEL},
        "rates": [{"line": r.line, "trip": r.trip, "periods": r.periods,
                   "repetition": [{"call": a.label, "line": a.line, "fires": a.fires}
                                  for a in r.actors]}
                  for r in (c.module.rates.loops if c.module.rates else ())],
        "nodes": nodes,
        "edges": [{"from": g.nodes[e.src].label, "to": g.nodes[e.dst].label, "var": e.var,
                   "control": e.control, "conditional": e.conditional} for e in g.edges],
        "estimate_before": c.plan.start_estimate,
        "estimate_after": c.plan.estimate,
        "fusions": [{"a": d.a, "b": d.b, "into": d.merged, "before": d.before,
                     "after": d.after, "tasks": d.tasks, "why": d.why}
                    for d in c.plan.merges],
        "not_fused": [{"a": a, "b": b, "why": why} for (a, b), why in c.plan.rejected.items()],
        "stop": c.plan.stop,
        "tasks": [{"process": p.name, "instances": p.copies,
                   "calls": [g.nodes[n].label for n in sorted(p.nodes)]} for p in c.processes],
        "schedule": {"mode": c.schedule, "why": c.schedule_why,
                     "threads": [{"task": t.name, "order": [
                         {"id": n, "label": g.nodes[n].label, "line": g.nodes[n].line}
                         for n in partition.order(g, t.process)]}
                         for t in c.variants[0].tasks],
                     "channels": c.variants[0].nchannels},
        "fallbacks": [len(v.tasks) for v in c.variants[1:]],
    }


def lines(doc: dict) -> list[str]:
    out = [f"{doc['source']}: {len(doc['nodes'])} nodes, {len(doc['edges'])} edges, "
           f"{doc['cpus']} CPU(s); weights from {doc['weights_from']}",
           f"weights: {doc['weights']['unit']}; an array copy weighs "
           f"{doc['weights']['data_op']:g}", *unused(doc),
           "cost model: time = max(largest task, total / CPUs) x "
           f"(1 + {doc['assumptions']['sigma']} x oversubscribed tasks / CPUs); "
           f"a token costs {doc['assumptions']['channel_cost']}"
           " of a firing of weight 1", *rates(doc), "nodes:"]
    for n in doc["nodes"]:
        flags = [f for f in ("stateful", "replicable") if n[f]]
        out.append(f"  line {n['line']}: {n['label']} rate {n['rate']}, weight/firing "
                   f"{n['weight_per_firing']:.3g}, delta {n['delta']:.3g} ({n['weight_source']})"
                   + (f" [{', '.join(flags)}]" if flags else ""))
    out.append(f"estimate before fusion: {doc['estimate_before']:.4g}")
    for i, f in enumerate(doc["fusions"], 1):
        out.append(f"  {i}. fuse {f['a']} + {f['b']} -> {f['into']}: estimate "
                   f"{f['before']:.4g} -> {f['after']:.4g}, {f['tasks']} task(s); {f['why']}")
    out.append(f"stop: {doc['stop']}")
    for r in doc["not_fused"]:
        out.append(f"  not fused: {r['a']} + {r['b']}: {r['why']}")
    out.append("tasks: " + "; ".join(
        f"{t['process']}{' x' + str(t['instances']) if t['instances'] > 1 else ''} "
        f"({', '.join(t['calls'])})" for t in doc["tasks"]))
    out += schedule(doc)
    if doc["fallbacks"]:
        out.append("with fewer threads than tasks the program runs its variant with "
                   + ", ".join(map(str, doc["fallbacks"])) + " task(s)")
    return out


def schedule(doc: dict) -> list[str]:
    """How the tasks run: a thread each, or the CPUs' partitions each fired in a fixed
    order by one thread."""
    s = doc["schedule"]
    how = ("one thread per task" if s["mode"] == "threads" else
           "one thread per partition, firing its calls in this order each iteration; "
           "channels only between partitions")
    out = [f"schedule: {s['mode']} ({s['why']}): {len(s['threads'])} thread(s), "
           f"{s['channels']} channel(s); {how}"]
    if s["mode"] == "static":
        out += [f"  {t['task']}: " + " -> ".join(f"{o['label']}@{o['line']}"
                                                  for o in t["order"]) for t in s["threads"]]
    return out


def unused(doc: dict) -> list[str]:
    """The line saying which @weight annotations a weights file overrode, if any."""
    names = doc["weights"]["unused_at_weight"]
    if not names:
        return []
    return [f"@weight on {', '.join(names)} not used: --{doc['weights_from']} gives the "
            "weights (one source for the whole graph: their units differ)"]


def rates(doc: dict) -> list[str]:
    """Each loop with rates: its repetition vector (firings per period) and its periods."""
    return [f"rates: loop at line {r['line']}: {r['trip']} iterations = {r['periods']} "
            "period(s) of repetition vector "
            + ", ".join(f"{a['call']}@{a['line']} {a['fires']}" for a in r["repetition"])
            for r in doc["rates"]]
