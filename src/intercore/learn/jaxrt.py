"""The one place that imports JAX: CPU only, one thread unless asked (XLA's own thread pool
only fights the measured workloads and other tenants on a small host), and a clear exit 3
when the learning extra is not installed."""

from __future__ import annotations

import os

from ..base.errors import HostUnsupported

_THREADS = os.environ.get("INTERCORE_LEARN_THREADS", "1")


def jax():
    """(jax, jax.numpy), imported on first use."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if _THREADS == "1":
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                           "intra_op_parallelism_threads=1")
    try:
        import jax as _jax
        import jax.numpy as jnp
    except ImportError:
        raise HostUnsupported("the learning stage's models need JAX: "
                              "pip install 'intercore[learn]'") from None
    return _jax, jnp


def adamw(params, grads, state, *, lr: float, wd: float = 1e-4, b1: float = 0.9,
          b2: float = 0.999, eps: float = 1e-8):
    """One AdamW step on a pytree; state = (step, m, v). Decoupled weight decay on matrices
    only (biases, norms and embeddings' scales keep their values)."""
    jax_, jnp = jax()
    step, m, v = state
    step = step + 1
    m = jax_.tree.map(lambda a, g: b1 * a + (1 - b1) * g, m, grads)
    v = jax_.tree.map(lambda a, g: b2 * a + (1 - b2) * g * g, v, grads)
    c1, c2 = 1 - b1 ** step, 1 - b2 ** step

    def upd(p, a, b):
        decay = wd * p if p.ndim >= 2 else 0.0
        return p - lr * ((a / c1) / (jnp.sqrt(b / c2) + eps) + decay)

    return jax_.tree.map(upd, params, m, v), (step, m, v)


def adam_state(params):
    jax_, jnp = jax()
    zeros = jax_.tree.map(jnp.zeros_like, params)
    return (jnp.zeros((), jnp.float32), zeros, jax_.tree.map(jnp.zeros_like, params))
