"""Paper 000's figures, redone on our data.

  Fig. 2  L2 accesses of C[NxM] = A[NxK] B[KxM] as one of N, M, K grows from 64 in steps of
          128 past 4096, the others fixed at 32 (traced, simulated on the dataset's caches)
  Fig. 4  last-layer attention of a region without and with the alignment term
  Fig. 5  measured and predicted slowdown of the K-sweep matmul regions (held-out
          predictions: the models never saw a matmul region)
  and a scatter of predicted against measured Δ for every held-out region.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..base.figures import pyplot, save
from .dataset import Dataset
from .evaluate import Report, fit, split_programs
from .hierarchy import Hierarchy


def fig5(ds: Dataset, report: Report, out: Path, learner: str = "transformer") -> Path | None:
    preds = report.predictions.get(learner, {})
    rows = []
    for p in ds.programs:
        if "ksweep" not in p.spec.name:
            continue
        for r in p.spec.regions:
            key = f"{p.spec.name}/{r.id}"
            if r.id in p.labels and key in preds:
                rows.append((r.shape["k"], p.labels[r.id].delta, p.labels[r.id].delta_safe,
                             *preds[key]))
    if not rows:
        return None
    rows.sort()
    k, d, ds_, med, safe = (np.array(c) for c in zip(*rows))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.plot(k, d, "o-", label="measured Δ (median)")
    ax.plot(k, ds_, "v:", label="measured safe Δ (p99)")
    ax.plot(k, med, "s--", label=f"{learner}: predicted Δ")
    ax.plot(k, safe, "^--", label=f"{learner}: safe bound")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("K (C[8×8] = A[8×K]·B[K×8], int32)")
    ax.set_ylabel("slowdown Δ")
    ax.set_title("Fig. 5: matmul with K swept, held-out family")
    ax.legend(fontsize=8)
    return save(fig, out / "fig5_k_sweep.png")


def scatter(ds: Dataset, report: Report, out: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    truth = {e.key: e.label.delta for e in ds.examples()}
    top = 1.0
    for name, preds in report.predictions.items():
        xs = [truth[k] for k in preds]
        ys = [v[0] for v in preds.values()]
        ax.scatter(xs, ys, s=8, alpha=0.6, label=name)
        top = max(top, max(xs, default=1), max(ys, default=1))
    ax.plot([0.9, top], [0.9, top], "k-", lw=0.8)
    ax.fill_between([0.9, top], [0.81, 0.9 * top], [0.99, 1.1 * top], color="grey", alpha=0.2,
                    label="±10%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured Δ")
    ax.set_ylabel("predicted Δ")
    ax.set_title("held-out families")
    ax.legend(fontsize=7)
    return save(fig, out / "predicted_vs_measured.png")


def fig4(ds: Dataset, out: Path, *, seed: int = 0, budget_cpu_s: float = 300.0,
         progress: Callable[[str], None] | None = None) -> Path | None:
    """Train without and with alignment on every family but matmul; show the last-layer
    attention of the K-sweep region with the most L2 accesses (or any matmul region)."""
    examples = ds.examples()
    held = [e for e in examples if e.family == "matmul"]
    train = [e for e in examples if e.family != "matmul"]
    if not held or not train:
        return None
    region = max(held, key=lambda e: e.region.l2_accesses).region
    split = split_programs(train, seed)
    plt = pyplot()
    fig, axes = plt.subplots(2, 1, figsize=(7, 7.5))
    for ax, kind in zip(axes, ("none", "kl")):
        if progress:
            progress(f"Fig. 4: training with alignment {kind}")
        fitted = fit("transformer", split, ds.hierarchy, alpha=0.05, seed=seed,
                     budget_cpu_s=budget_cpu_s, alignment=kind)
        _, att = fitted.learner.attention([region])
        n = len(region.tokens) + 1
        im = ax.imshow(att[0][:n, :n], cmap="viridis", aspect="auto")
        labels = ["region"] + [t.kind for t in region.tokens]
        l2 = [0] + [sum(t.served[1:]) for t in region.tokens]
        ax.set_xticks(range(n))
        ax.set_xticklabels([f"{lab} ({v})" if v else lab for lab, v in zip(labels, l2)],
                           rotation=90, fontsize=5)
        ax.set_yticks([])
        ax.set_title(f"{'without' if kind == 'none' else 'with'} alignment "
                     f"({region.name}; columns: instruction (L2 accesses))", fontsize=8)
        fig.colorbar(im, ax=ax)
    return save(fig, out / "fig4_attention.png")


def evaluation_figures(ds: Dataset, report: Report, out: Path, **kw: Any) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    made = [scatter(ds, report, out), fig5(ds, report, out), fig4(ds, out, **kw)]
    return [p for p in made if p is not None]


FIG2_FIXED = 32
FIG2_VALUES = tuple(range(64, 4096 + 128 + 1, 128))


def fig2(hierarchy: Hierarchy, out: Path, workdir: Path,
         progress: Callable[[str], None] | None = None) -> Path:
    """Trace C[NxM] = A[NxK] B[KxM] (int32, ijk, -O2) with one dimension swept."""
    from .extract import extract, victim_argv
    from .programs import ProgramSpec, RegionSpec, build

    series: dict[str, list[tuple[int, float]]] = {}
    for dim in ("M", "N", "K"):
        regions = []
        for i, v in enumerate(FIG2_VALUES):
            n, m, k = (v if dim == d else FIG2_FIXED for d in ("N", "M", "K"))
            regions.append(RegionSpec(i + 1, "ijk", "u32", "sweep", float(v),
                                      {"n": n, "m": m, "k": k, "ops": n * m * k, "passes": 1,
                                       "bytes": 4 * (n * k + k * m + n * m)}))
        points = []
        for j in range(0, len(regions), 6):
            part = tuple(r.__class__(**{**r.__dict__, "id": idx + 1})
                         for idx, r in enumerate(regions[j:j + 6]))
            spec = ProgramSpec(f"fig2-{dim}-{j // 6}", "matmul", "O2", part)
            if progress:
                progress(f"Fig. 2: {dim} sweep, program {j // 6 + 1}")
            exe = build(spec, workdir)
            feats, _ = extract(victim_argv(exe), hierarchy, skip=1, include_total=False)
            by_id = {f.region: f for f in feats}
            points += [(int(r.multiple), by_id[r.id].l2_accesses / max(by_id[r.id].entries, 1))
                       for r in part if r.id in by_id]
        series[dim] = points
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for dim, points in series.items():
        xs, ys = zip(*points)
        ax.plot(xs, ys, label=f"{dim} varies")
    ax.set_xlabel("varied dimension (others 32)")
    ax.set_ylabel("L2 accesses (simulated L1 misses)")
    ax.set_title(f"Fig. 2 on {hierarchy.describe()}", fontsize=8)
    ax.legend()
    out.mkdir(parents=True, exist_ok=True)
    return save(fig, out / "fig2_l2_accesses.png")
