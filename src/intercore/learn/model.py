"""The slowdown transformer: a small pre-LN encoder over a region's instruction tokens.

Input: position 0 is the region token (its totals), positions 1.. the static instructions
(type embedding + dynamic-statistics projection + position). Output from the region token:
mu = log of the median slowdown, q = mu + softplus(.) the log of its upper quantile, so the
safe estimate can never fall below the median one.

Loss = RMLSE(exp(mu), delta) (paper 000 §4.2.3) + pinball_tau(q, log delta_safe)
       + lambda * alignment(attention received, L2 accesses per token).

Alignment, fixing the paper's two flaws (docs/learn.md):
  1. "Attention_MAP" summed softmax *rows*, which are 1 by construction: a constant. Here
     the map is attention *received*, the column sums of the last layer's attention averaged
     over heads, over the valid query rows.
  2. The paper's C = dot(A / max A, L / sum L) <= 1 (not N_obs) is maximised by *uniform*
     attention over every token with any L2 access, whatever the amounts. It is kept as
     `paper` for the ablation; training uses `cosine` (1 - cos(A, L)) or `kl`
     (KL(L || A), both normalised to distributions), which are optimal only at A ∝ L.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from .encode import SEQ_LEN, Batch
from .features import REGION_DIM, TOKEN_DIM
from .jaxrt import adam_state, adamw, jax

ALIGNMENTS = ("none", "paper", "cosine", "kl")


@dataclass(frozen=True)
class Config:
    vocab: int
    d: int = 64
    heads: int = 4
    layers: int = 2
    ff: int = 128
    seq: int = SEQ_LEN
    token_dim: int = TOKEN_DIM
    region_dim: int = REGION_DIM
    alignment: str = "kl"
    tokens: str = "static"  # encode.TOKENS: static instructions, or a sampled dynamic window
    lam: float = 0.5  # the paper's lambda
    tau: float = 0.9  # the safe head's quantile
    lr: float = 2e-3
    batch: int = 32
    epochs: int = 80
    patience: int = 15
    wd: float = 1e-4


def param_count(params) -> int:
    jax_, _ = jax()
    return int(sum(np.prod(x.shape) for x in jax_.tree.leaves(params)))


def init(cfg: Config, seed: int):
    jax_, jnp = jax()
    keys = iter(jax_.random.split(jax_.random.PRNGKey(seed), 64))

    def dense(i, o, scale=1.0):
        return {"w": jax_.random.normal(next(keys), (i, o)) * scale / math.sqrt(i),
                "b": jnp.zeros(o)}

    def norm():
        return {"g": jnp.ones(cfg.d), "b": jnp.zeros(cfg.d)}

    return {
        "emb": jax_.random.normal(next(keys), (cfg.vocab, cfg.d)) * 0.02,
        "pos": jax_.random.normal(next(keys), (cfg.seq, cfg.d)) * 0.02,
        "tok": dense(cfg.token_dim, cfg.d),
        "reg": dense(cfg.region_dim, cfg.d),
        "layers": [{"n1": norm(), "qkv": dense(cfg.d, 3 * cfg.d), "o": dense(cfg.d, cfg.d, 0.5),
                    "n2": norm(), "f1": dense(cfg.d, cfg.ff), "f2": dense(cfg.ff, cfg.d, 0.5)}
                   for _ in range(cfg.layers)],
        "nf": norm(),
        "h1": dense(cfg.d, cfg.d),
        "h2": dense(cfg.d, 2, 0.1),
    }


def _ln(p, x):
    _, jnp = jax()
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * p["g"] + p["b"]


def _lin(p, x):
    return x @ p["w"] + p["b"]


def forward(params, cfg: Config, ids, feats, region, mask):
    """(mu [B], q [B], attention received [B, L], last attention [B, L, L])."""
    jax_, jnp = jax()
    B, L = ids.shape
    x = params["emb"][ids] + params["pos"][None, :L]
    tok = _lin(params["tok"], feats)
    reg = _lin(params["reg"], region)
    x = x + jnp.where((jnp.arange(L) == 0)[None, :, None], reg[:, None, :], tok)
    bias = (1.0 - mask)[:, None, None, :] * -1e9
    hd = cfg.d // cfg.heads
    att = None
    for layer in params["layers"]:
        h = _ln(layer["n1"], x)
        q, k, v = jnp.split(_lin(layer["qkv"], h), 3, axis=-1)

        def heads(t):
            return t.reshape(B, L, cfg.heads, hd).transpose(0, 2, 1, 3)

        scores = heads(q) @ heads(k).transpose(0, 1, 3, 2) / math.sqrt(hd) + bias
        a = jax_.nn.softmax(scores, axis=-1)
        att = a.mean(axis=1)  # [B, L, L], averaged over heads
        ctx = (a @ heads(v)).transpose(0, 2, 1, 3).reshape(B, L, cfg.d)
        x = x + _lin(layer["o"], ctx)
        x = x + _lin(layer["f2"], jax_.nn.gelu(_lin(layer["f1"], _ln(layer["n2"], x))))
    h0 = _ln(params["nf"], x[:, 0])
    out = _lin(params["h2"], jax_.nn.gelu(_lin(params["h1"], h0)))
    mu = out[:, 0]
    qv = mu + jax_.nn.softplus(out[:, 1])
    received = (att * mask[:, :, None]).sum(axis=1) * mask  # column sums over valid queries
    return mu, qv, received, att


def alignment_loss(received, l2, mask, kind: str):
    """Per-region alignment penalty over the instruction tokens (the region token excluded);
    regions with no L2 access get 0."""
    _, jnp = jax()
    tok_mask = mask.at[:, 0].set(0.0)
    a = received * tok_mask
    lm = l2 * tok_mask
    has = (lm.sum(-1) > 0).astype(a.dtype)
    if kind == "none":
        return jnp.zeros(a.shape[0])
    ln = lm / jnp.maximum(lm.sum(-1, keepdims=True), 1e-12)
    if kind == "paper":  # the paper's 1 - C, with C = dot(A / max A, L / sum L) <= 1
        c = (a / jnp.maximum(a.max(-1, keepdims=True), 1e-12) * ln).sum(-1)
        return has * (1.0 - c)
    an = a / jnp.maximum(a.sum(-1, keepdims=True), 1e-12)
    if kind == "cosine":
        cos = (an * ln).sum(-1) / jnp.maximum(
            jnp.sqrt((an ** 2).sum(-1) * (ln ** 2).sum(-1)), 1e-12)
        return has * (1.0 - cos)
    kl = jnp.where(ln > 0, ln * (jnp.log(jnp.maximum(ln, 1e-12)) -
                                 jnp.log(jnp.maximum(an, 1e-12))), 0.0).sum(-1)
    return has * kl


def _losses(params, cfg: Config, b: dict[str, Any]):
    jax_, jnp = jax()
    mu, q, received, _ = forward(params, cfg, b["ids"], b["feats"], b["region"], b["mask"])
    d_hat, d = jnp.exp(mu), jnp.exp(b["y_med"])
    rmlse = jnp.sqrt(jnp.mean((jnp.log1p(d_hat) - jnp.log1p(d)) ** 2) + 1e-12)
    err = b["y_safe"] - q
    pinball = jnp.mean(jnp.maximum(cfg.tau * err, (cfg.tau - 1) * err))
    align = jnp.mean(alignment_loss(received, b["l2"], b["mask"], cfg.alignment))
    return rmlse, pinball, align


def _arrays(batch: Batch) -> dict[str, Any]:
    return {"ids": batch.ids, "feats": batch.feats, "region": batch.region, "mask": batch.mask,
            "l2": batch.l2, "y_med": batch.y_med, "y_safe": batch.y_safe}


@dataclass
class History:
    epochs: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    params: int = 0
    stopped: str = ""


def train(train_b: Batch, val_b: Batch | None, cfg: Config, *, seed: int = 0,
          budget_cpu_s: float = 600.0,
          on_epoch: Callable[[int, int, dict[str, float]], None] | None = None):
    """Fit on train_b; keep the parameters that did best on val_b's loss (the training loss
    when there is no validation set). Stops at cfg.epochs, after cfg.patience epochs without
    improvement, or when the CPU budget is spent."""
    jax_, jnp = jax()
    params = init(cfg, seed)
    state = adam_state(params)
    hist = History(params=param_count(params))

    def total(p, b):
        rmlse, pinball, align = _losses(p, cfg, b)
        return rmlse + pinball + cfg.lam * align, (rmlse, pinball, align)

    @jax_.jit
    def step(p, s, b, lr):
        (loss, parts), g = jax_.value_and_grad(total, has_aux=True)(p, b)
        p, s = adamw(p, g, s, lr=lr, wd=cfg.wd)
        return p, s, loss, parts

    @jax_.jit
    def evaluate(p, b):
        return total(p, b)

    rng = np.random.default_rng(seed)
    n = len(train_b)
    steps_per_epoch = max(1, math.ceil(n / cfg.batch))
    total_steps = steps_per_epoch * cfg.epochs
    val = _arrays(val_b) if val_b is not None and len(val_b) else None
    best, best_loss, since = params, math.inf, 0
    t0, c0 = time.monotonic(), time.process_time()
    done = 0
    for epoch in range(cfg.epochs):
        order = rng.permutation(n)
        # Pad the last batch by wrapping around: one compiled shape for every step.
        order = np.concatenate([order, order[:(-n) % cfg.batch]]) if n >= cfg.batch else \
            np.resize(order, cfg.batch)
        sums = np.zeros(4)
        for i in range(0, len(order), cfg.batch):
            lr = cfg.lr * 0.5 * (1 + math.cos(math.pi * min(done / total_steps, 1.0)))
            b = _arrays(train_b.take(order[i:i + cfg.batch]))
            params, state, loss, parts = step(params, state, b, lr)
            sums += [float(loss), *map(float, parts)]
            done += 1
        row = dict(zip(("loss", "rmlse", "pinball", "align"),
                       (sums / max(1, len(order) // cfg.batch)).tolist()))
        if val is not None:
            vloss, vparts = evaluate(params, val)
            row.update(val_loss=float(vloss), val_rmlse=float(vparts[0]))
        watch = row.get("val_loss", row["loss"])
        if watch < best_loss - 1e-5:
            best, best_loss, since, hist.best_epoch = params, watch, 0, epoch
        else:
            since += 1
        hist.epochs.append(row)
        if on_epoch:
            on_epoch(epoch + 1, cfg.epochs, row)
        if since >= cfg.patience:
            hist.stopped = f"no improvement for {cfg.patience} epochs"
            break
        if time.process_time() - c0 > budget_cpu_s:
            hist.stopped = f"CPU budget of {budget_cpu_s:.0f} s spent"
            break
    else:
        hist.stopped = f"{cfg.epochs} epochs"
    hist.cpu_s = time.process_time() - c0
    hist.wall_s = time.monotonic() - t0
    return best, hist


def predict(params, cfg: Config, batch: Batch, chunk: int = 256):
    """(delta_med, delta_q, attention received [N, L], last attention [N, L, L]) in numpy."""
    jax_, jnp = jax()
    fwd = _compiled_forward(cfg)
    mus, qs, recs, atts = [], [], [], []
    for i in range(0, len(batch), chunk):
        rows = np.arange(i, min(i + chunk, len(batch)))
        part = batch.take(_padded(rows, chunk))
        mu, q, rec, att = fwd(params, part.ids, part.feats, part.region, part.mask)
        mus.append(np.asarray(mu)[:len(rows)])
        qs.append(np.asarray(q)[:len(rows)])
        recs.append(np.asarray(rec)[:len(rows)])
        atts.append(np.asarray(att)[:len(rows)])
    if not mus:
        empty = np.zeros(0)
        return empty, empty, np.zeros((0, cfg.seq)), np.zeros((0, cfg.seq, cfg.seq))
    return (np.exp(np.concatenate(mus)), np.exp(np.concatenate(qs)), np.concatenate(recs),
            np.concatenate(atts))


def _padded(rows: np.ndarray, chunk: int) -> np.ndarray:
    """Rows repeated up to the next power of two (at most `chunk`): XLA compiles the forward
    pass once per batch shape, about a second each on this host, and programs of 2 to 6
    regions would otherwise compile one shape each; the repeats' outputs are dropped."""
    size = min(chunk, 1 << (len(rows) - 1).bit_length())
    return np.concatenate([rows, np.full(size - len(rows), rows[-1])])


_FORWARDS: dict[Config, Any] = {}


def _compiled_forward(cfg: Config):
    if cfg not in _FORWARDS:
        jax_, _ = jax()
        _FORWARDS[cfg] = jax_.jit(lambda p, i, f, r, m: forward(p, cfg, i, f, r, m))
    return _FORWARDS[cfg]


# --- saving ----------------------------------------------------------------------------------

def flatten(params, prefix: str = "") -> dict[str, np.ndarray]:
    out = {}
    if isinstance(params, dict):
        for k, v in params.items():
            out.update(flatten(v, f"{prefix}{k}/"))
    elif isinstance(params, list):
        for i, v in enumerate(params):
            out.update(flatten(v, f"{prefix}{i}/"))
    else:
        out[prefix.rstrip("/")] = np.asarray(params)
    return out


def unflatten(arrays: dict[str, np.ndarray], cfg: Config):
    """The parameter tree of `cfg`'s shape filled from flat arrays (KeyError if one lacks)."""
    jax_, jnp = jax()
    # Shapes only: running init would dispatch (and compile) each of its ~50 random draws,
    # most of a minute of a loaded 2-CPU host's time at every model load.
    template = jax_.eval_shape(lambda: init(cfg, 0))

    def fill(node, prefix):
        if isinstance(node, dict):
            return {k: fill(v, f"{prefix}{k}/") for k, v in node.items()}
        if isinstance(node, list):
            return [fill(v, f"{prefix}{i}/") for i, v in enumerate(node)]
        arr = arrays[prefix.rstrip("/")]
        if arr.shape != node.shape:
            raise ValueError(f"{prefix.rstrip('/')}: shape {arr.shape}, expected {node.shape}")
        return jnp.asarray(arr)

    return fill(template, "")


def config_dict(cfg: Config) -> dict[str, Any]:
    return asdict(cfg)
