"""Every model of the learning stage behind one interface: fit on examples, predict
(median, raw safe quantile) for regions. The transformer and the baselines are evaluated
identically (evaluate.py).

  transformer   model.py over instruction tokens
  linear-l2     least squares on log(1 + L2 accesses per 1000 instructions): the paper's
                premise that L2 traffic predicts sensitivity, as a model
  forest        random forest on the region's totals (Courtaud et al., RTSS 2019)
  quantile      a two-layer network with pinball losses on the same totals (Brando et al.'s
                quantile regression network, ECRTS 2022)
  analytic      no learning beyond one constant per host: log Δ = c · (accesses per
                instruction whose reuse distance exceeds the private caches), c fitted on the
                training regions; what a performance engineer would estimate from the trace
  constant      no model: the training regions' median slowdown for every region, and their
                upper quantile as the safe one; what any model must beat to have learnt
                anything (on a host where most regions barely slow down, it scores well)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from .dataset import Example
from .encode import Vocab, encode, encode_examples
from .features import RegionFeatures, beyond_private, region_vector
from .hierarchy import Hierarchy
from .jaxrt import adam_state, adamw, jax
from . import model as tmodel

LEARNERS = ("transformer", "linear-l2", "forest", "quantile", "analytic", "constant")
SAVEABLE = tuple(n for n in LEARNERS if n != "forest")  # Forest.UNSAVEABLE says why


class Learner(Protocol):
    name: str

    def fit(self, train: Sequence[Example], val: Sequence[Example], *, seed: int,
            budget_cpu_s: float, on_epoch: Callable | None = None) -> dict[str, Any]: ...

    def predict(self, regions: Sequence[RegionFeatures]) -> tuple[np.ndarray, np.ndarray]: ...

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What a saved model keeps: (JSON-able settings, arrays)."""
        ...

    def restore(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None: ...


def _targets(examples: Sequence[Example]) -> tuple[np.ndarray, np.ndarray]:
    return (np.log([e.label.delta for e in examples]),
            np.log([e.label.delta_safe for e in examples]))


# --- transformer -----------------------------------------------------------------------------

class Transformer:
    name = "transformer"

    def __init__(self, hierarchy: Hierarchy, **overrides: Any):
        self.hierarchy = hierarchy
        self.overrides = overrides
        self.vocab: Vocab | None = None
        self.cfg: tmodel.Config | None = None
        self.params = None
        self.history: tmodel.History | None = None

    def fit(self, train, val, *, seed, budget_cpu_s, on_epoch=None):
        self.vocab = Vocab.build(e.region for e in train)
        self.cfg = tmodel.Config(vocab=len(self.vocab), **self.overrides)
        tb = encode_examples(train, self.vocab, self.hierarchy, self.cfg.tokens)
        vb = encode_examples(val, self.vocab, self.hierarchy, self.cfg.tokens) if val else None
        self.params, self.history = tmodel.train(tb, vb, self.cfg, seed=seed,
                                                 budget_cpu_s=budget_cpu_s, on_epoch=on_epoch)
        h = self.history
        return {"params": h.params, "epochs": len(h.epochs), "best_epoch": h.best_epoch,
                "cpu_s": h.cpu_s, "wall_s": h.wall_s, "stopped": h.stopped,
                "vocab": len(self.vocab)}

    def state(self):
        return ({"config": tmodel.config_dict(self.cfg), "vocab": list(self.vocab.words)},
                tmodel.flatten(self.params))

    def restore(self, meta, arrays):
        self.vocab = Vocab(tuple(meta["vocab"]))
        self.cfg = tmodel.Config(**meta["config"])
        self.params = tmodel.unflatten(arrays, self.cfg)

    def batch(self, regions: Sequence[RegionFeatures]):
        if self.vocab is None or self.cfg is None:
            raise RuntimeError("the transformer is used before fit() or load()")
        return encode(regions, self.vocab, self.hierarchy, tokens=self.cfg.tokens)

    def predict(self, regions):
        med, q, _, _ = tmodel.predict(self.params, self.cfg, self.batch(regions))
        return med, q

    def attention(self, regions):
        """(attention received [N, L], last-layer attention [N, L, L])."""
        _, _, rec, att = tmodel.predict(self.params, self.cfg, self.batch(regions))
        return rec, att


# --- baselines -------------------------------------------------------------------------------

def l2_apki(r: RegionFeatures) -> float:
    return math.log1p(1000.0 * r.l2_accesses / max(r.insns, 1))


class LinearL2:
    name = "linear-l2"

    def __init__(self, hierarchy: Hierarchy):
        self.coef = None

    def fit(self, train, val, *, seed, budget_cpu_s, on_epoch=None):
        x = np.array([[1.0, l2_apki(e.region)] for e in train])
        y_med, y_safe = _targets(train)
        self.coef = (np.linalg.lstsq(x, y_med, rcond=None)[0],
                     np.linalg.lstsq(x, y_safe, rcond=None)[0])
        return {"coef_med": self.coef[0].tolist(), "coef_safe": self.coef[1].tolist()}

    def state(self):
        return {}, {"coef_med": self.coef[0], "coef_safe": self.coef[1]}

    def restore(self, meta, arrays):
        self.coef = (np.asarray(arrays["coef_med"]), np.asarray(arrays["coef_safe"]))

    def predict(self, regions):
        x = np.array([[1.0, l2_apki(r)] for r in regions])
        med, safe = np.exp(x @ self.coef[0]), np.exp(x @ self.coef[1])
        return med, np.maximum(med, safe)


class Forest:
    name = "forest"

    def __init__(self, hierarchy: Hierarchy):
        self.hierarchy = hierarchy
        self.models = None

    def _x(self, regions):
        return np.stack([region_vector(r, self.hierarchy) for r in regions])

    def fit(self, train, val, *, seed, budget_cpu_s, on_epoch=None):
        try:
            from sklearn.ensemble import RandomForestRegressor
        except ImportError:
            from ..base.errors import HostUnsupported
            raise HostUnsupported("the forest baseline needs scikit-learn: "
                                  "pip install 'intercore[learn]'") from None
        x = self._x([e.region for e in train])
        y_med, y_safe = _targets(train)
        self.models = []
        for y in (y_med, y_safe):
            m = RandomForestRegressor(n_estimators=300, min_samples_leaf=2, random_state=seed,
                                      n_jobs=1)
            self.models.append(m.fit(x, y))
        return {"trees": 300}

    # scikit-learn keeps trees as pickles only, and loading a pickle runs what it says
    UNSAVEABLE = ("the forest baseline cannot be saved (scikit-learn trees are pickles); "
                  "save another learner")

    def state(self):
        raise TypeError(self.UNSAVEABLE)

    def restore(self, meta, arrays):
        raise TypeError(self.UNSAVEABLE)

    def predict(self, regions):
        x = self._x(regions)
        med, safe = (np.exp(m.predict(x)) for m in self.models)
        return med, np.maximum(med, safe)


class QuantileNet:
    """Median and upper quantile from one two-layer network, trained with pinball losses."""

    name = "quantile"

    def __init__(self, hierarchy: Hierarchy, tau: float = 0.9, hidden: int = 64,
                 epochs: int = 400):
        self.hierarchy, self.tau, self.hidden, self.epochs = hierarchy, tau, hidden, epochs
        self.params = None

    def _x(self, regions):
        return np.stack([region_vector(r, self.hierarchy) for r in regions]).astype(np.float32)

    def _fwd(self, p, x):
        jax_, jnp = jax()
        h = jax_.nn.gelu(x @ p["w1"] + p["b1"])
        h = jax_.nn.gelu(h @ p["w2"] + p["b2"])
        out = h @ p["w3"] + p["b3"]
        return out[:, 0], out[:, 0] + jax_.nn.softplus(out[:, 1])

    def fit(self, train, val, *, seed, budget_cpu_s, on_epoch=None):
        jax_, jnp = jax()
        x = jnp.asarray(self._x([e.region for e in train]))
        y_med, y_safe = (jnp.asarray(y, jnp.float32) for y in _targets(train))
        k = jax_.random.split(jax_.random.PRNGKey(seed), 3)
        d, h = x.shape[1], self.hidden
        p = {"w1": jax_.random.normal(k[0], (d, h)) / math.sqrt(d), "b1": jnp.zeros(h),
             "w2": jax_.random.normal(k[1], (h, h)) / math.sqrt(h), "b2": jnp.zeros(h),
             "w3": jax_.random.normal(k[2], (h, 2)) * 0.1 / math.sqrt(h), "b3": jnp.zeros(2)}
        tau = self.tau

        def pinball(err, t):
            return jnp.mean(jnp.maximum(t * err, (t - 1) * err))

        def loss(p):
            med, q = self._fwd(p, x)
            return pinball(y_med - med, 0.5) + pinball(y_safe - q, tau)

        @jax_.jit
        def step(p, s, lr):
            lv, g = jax_.value_and_grad(loss)(p)
            p, s = adamw(p, g, s, lr=lr, wd=1e-4)
            return p, s, lv

        s = adam_state(p)
        for e in range(self.epochs):  # full batch: the totals are a small matrix
            p, s, lv = step(p, s, 3e-3 * 0.5 * (1 + math.cos(math.pi * e / self.epochs)))
        self.params = p
        return {"final_loss": float(lv), "epochs": self.epochs}

    def state(self):
        return ({"tau": self.tau, "hidden": self.hidden, "epochs": self.epochs},
                {k: np.asarray(v) for k, v in self.params.items()})

    def restore(self, meta, arrays):
        self.tau, self.hidden, self.epochs = meta["tau"], meta["hidden"], meta["epochs"]
        self.params = {k: np.asarray(v, np.float32) for k, v in arrays.items()}

    def predict(self, regions):
        med, q = self._fwd(self.params, self._x(regions))
        return np.exp(np.asarray(med)), np.exp(np.asarray(q))


class Constant:
    name = "constant"

    def __init__(self, hierarchy: Hierarchy, tau: float = 0.9):
        self.tau = tau
        self.values = (1.0, 1.0)

    def fit(self, train, val, *, seed, budget_cpu_s, on_epoch=None):
        y_med, y_safe = _targets(train)
        self.values = (math.exp(float(np.median(y_med))),
                       math.exp(float(np.quantile(y_safe, self.tau))))
        return {"delta": self.values[0], "delta_safe": self.values[1]}

    def state(self):
        return {"tau": self.tau, "values": list(self.values)}, {}

    def restore(self, meta, arrays):
        self.tau, self.values = float(meta["tau"]), tuple(float(v) for v in meta["values"])

    def predict(self, regions):
        n = len(regions)
        return np.full(n, self.values[0]), np.full(n, max(self.values))


class Analytic:
    name = "analytic"

    def __init__(self, hierarchy: Hierarchy):
        self.hierarchy = hierarchy
        self.coef = (0.0, (0.0, 0.0))

    def _x(self, regions) -> np.ndarray:
        return np.array([beyond_private(r, self.hierarchy) for r in regions])

    def fit(self, train, val, *, seed, budget_cpu_s, on_epoch=None):
        x = self._x([e.region for e in train])
        y_med, y_safe = _targets(train)
        # Through the origin: a region that never leaves its private caches does not slow
        # down. The safe quantile keeps an intercept: Δ_safe sits above 1 by noise alone.
        c = float(x @ y_med / (x @ x)) if x @ x > 0 else 0.0
        c_safe = np.linalg.lstsq(np.stack([np.ones_like(x), x], 1), y_safe, rcond=None)[0]
        self.coef = (c, tuple(float(v) for v in c_safe))
        return {"c": c, "coef_safe": list(self.coef[1])}

    def state(self):
        return {"c": self.coef[0], "coef_safe": list(self.coef[1])}, {}

    def restore(self, meta, arrays):
        self.coef = (float(meta["c"]), tuple(float(v) for v in meta["coef_safe"]))

    def predict(self, regions):
        x = self._x(regions)
        med = np.exp(self.coef[0] * x)
        return med, np.maximum(med, np.exp(self.coef[1][0] + self.coef[1][1] * x))


def make(name: str, hierarchy: Hierarchy, **overrides: Any) -> Learner:
    if name == "transformer":
        return Transformer(hierarchy, **overrides)
    simple: dict[str, Callable[[Hierarchy], Learner]] = {
        "linear-l2": LinearL2, "forest": Forest, "quantile": QuantileNet, "analytic": Analytic,
        "constant": Constant}
    return simple[name](hierarchy)
