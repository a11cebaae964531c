"""The channel table's evidence: the verdicts stored by `model validate` for a model."""

from __future__ import annotations

import math
from pathlib import Path

from ..store import Store
from .channels import Evidence


def evidence(db: Path, model_hash: str) -> dict[frozenset[str], Evidence]:
    """The newest verdict for each pair validated against this exact model (by hash)."""
    if not Path(db).exists():
        return {}
    with Store.open(db) as store:
        verdicts = store.validations.verdicts(model_hash)
    out: dict[frozenset[str], Evidence] = {}
    for invocation, v in verdicts:
        ci = (math.nan if v.ci_low is None else v.ci_low,
              math.nan if v.ci_high is None else v.ci_high)
        out[frozenset((v.victim_tx, v.aggressor_tx))] = Evidence(
            v.verdict, v.delta, ci, v.n, v.regime, v.victim_tx, v.aggressor_tx, invocation)
    return out
