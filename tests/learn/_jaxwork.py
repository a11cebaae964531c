"""The learning tests' JAX work, run in a child interpreter (_learnkit.in_child): a pytest
process that has started JAX's threads must not fork the native tools other tests run."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from _synthetic import HIER, examples


def planted_rule() -> dict:
    from intercore.learn.evaluate import Split, fit
    from intercore.learn.metrics import score

    train = examples(90, seed=1)
    test = examples(30, seed=2)
    cut = len(train) * 4 // 5
    fitted = fit("transformer", Split(train[:cut], train[cut:], train[cut:]), HIER, alpha=0.1,
                 seed=0, budget_cpu_s=120, epochs=60, inner_folds=0)
    med, safe, _ = fitted.predict([e.region for e in test])
    truth = np.array([e.label.delta for e in test])
    s = score(med, safe, truth, [e.label.delta_safe for e in test], [e.program for e in test])
    constant = float(np.mean(np.abs(np.mean(truth) - truth) / truth <= 0.10))
    return {"acc10": s["acc@10"], "constant": constant, "params": fitted.info["params"]}


def _kl_to_l2(fitted, data) -> float:
    from intercore.learn import model as tmodel
    from intercore.learn.encode import encode_examples

    batch = encode_examples(data, fitted.learner.vocab, HIER)
    _, _, received, _ = tmodel.predict(fitted.learner.params, fitted.learner.cfg, batch)
    tok = batch.mask.copy()
    tok[:, 0] = 0
    a = received * tok
    a = a / a.sum(1, keepdims=True)
    ln = batch.l2 / np.maximum(batch.l2.sum(1, keepdims=True), 1e-12)
    has = batch.l2.sum(1) > 0
    kl = np.where(ln > 0, ln * (np.log(np.maximum(ln, 1e-12)) - np.log(np.maximum(a, 1e-12))), 0)
    return float(kl.sum(1)[has].mean())


def alignment_moves_attention() -> dict:
    from intercore.learn.evaluate import Split, fit

    data = examples(60, seed=3, hot=True)
    split = Split(data[:150], data[150:], data[150:])
    out = {}
    for kind in ("none", "kl"):
        fitted = fit("transformer", split, HIER, alpha=0.1, seed=0, budget_cpu_s=120,
                     epochs=40, patience=40, alignment=kind, lam=2.0, inner_folds=0)
        out[kind] = _kl_to_l2(fitted, data[150:])
    return out


def attention_sums() -> dict:
    from intercore.learn import model as tmodel
    from intercore.learn.encode import Vocab, encode_examples

    data = examples(4, seed=4)
    vocab = Vocab.build(e.region for e in data)
    cfg = tmodel.Config(vocab=len(vocab))
    b = encode_examples(data, vocab, HIER)
    _, _, received, att = tmodel.forward(tmodel.init(cfg, 0), cfg, b.ids, b.feats, b.region,
                                         b.mask)
    cols = np.asarray(received)[0][b.mask[0] > 0]
    return {"rows": np.asarray(att).sum(-1).tolist(), "col_spread": float(np.ptp(cols))}


def penalties() -> dict:
    import jax.numpy as jnp

    from intercore.learn import model as tmodel

    l2 = jnp.array([[0.0, 90.0, 10.0]])
    mask = jnp.ones((1, 3))
    maps = {"proportional": jnp.array([[0.0, 0.9, 0.1]]),
            "uniform": jnp.array([[0.0, 0.5, 0.5]])}
    return {kind: {name: float(tmodel.alignment_loss(a, l2, mask, kind)[0])
                   for name, a in maps.items()} for kind in ("paper", "cosine", "kl")}


def saved_round_trip(directory: str, learner: str = "transformer") -> bool:
    """A learner saved and loaded predicts what it did; a transformer saved in format 1
    (before other learners were saved: config and vocabulary at the top) still loads."""
    import json

    from intercore.learn import saved
    from intercore.learn.evaluate import Split, fit

    data = examples(12, seed=5)
    fitted = fit(learner, Split(data[:-8], data[-8:], data[-8:]), HIER, alpha=0.2,
                 seed=0, budget_cpu_s=30, inner_folds=0,
                 **({"epochs": 3} if learner == "transformer" else {}))
    m = saved.from_fitted(fitted, HIER, {"dataset_hash": "x"})
    m.save(Path(directory))
    regions = [e.region for e in data]
    a = m.predict(regions)
    loaded = [saved.load(Path(directory))]
    if learner == "transformer":
        meta = Path(directory) / "model.json"
        doc = json.loads(meta.read_text())
        state = doc.pop("state")
        del doc["learner"]
        meta.write_text(json.dumps({**doc, **state, "format": 1}))
        loaded.append(saved.load(Path(directory)))
    return all(back.learner.name == learner and np.allclose(a[0], b[0])
               and np.allclose(a[1], b[1]) for back in loaded
               for b in [back.predict(regions)])


LABELLED_FOR = {"regime": "the shared regime", "host": "x86_64 test host, L1d 48 KiB",
                "aggressor": "BwRead(LLC)"}


def tiny_model(directory: str) -> None:
    """A model trained a few epochs on synthetic regions, saved for the CLI tests."""
    from intercore.learn import saved
    from intercore.learn.evaluate import Split, fit

    data = examples(10, seed=2)
    fitted = fit("transformer", Split(data[:-6], data[-6:], data[-6:]), HIER, alpha=0.2,
                 seed=0, budget_cpu_s=20, epochs=2)
    saved.from_fitted(fitted, HIER, {"labelled_for": LABELLED_FOR}).save(Path(directory))


def tour(directory: str, budget_cpu_s: float) -> dict:
    """The demo's learning stage, on the reference dataset shipped in the package."""
    from intercore.tour import learn as learn_tour

    return learn_tour.run(Path(directory), budget_cpu_s)


def compiled_shapes() -> dict:
    """Programs of 2 to 6 regions predicted one call each, as `learn predict` and the cost
    bench do: the shapes the forward pass was compiled for, and whether each program's
    predictions are those of its regions predicted one by one."""
    from intercore.learn import model as tmodel
    from intercore.learn.evaluate import Split, fit

    data = examples(10, seed=3)
    fitted = fit("transformer", Split(data[:-6], data[-6:], data[-6:]), HIER, alpha=0.2,
                 seed=0, budget_cpu_s=20, inner_folds=0, epochs=1)
    regions = [e.region for e in data]
    learner = fitted.learner
    alone = np.concatenate([learner.predict([r])[0] for r in regions[:20]])
    same = []
    at = 0
    for n in (2, 3, 4, 5, 6):
        med, _ = learner.predict(regions[at:at + n])
        same.append(bool(np.allclose(med, alone[at:at + n], rtol=1e-5)))
        at += n
    # every batch this forward pass ever saw: fitting's calibration, one by one, 2-6
    return {"compiled": tmodel._compiled_forward(learner.cfg)._cache_size(), "same": same}
