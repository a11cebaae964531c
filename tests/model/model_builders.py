"""Helpers for the model tests: load a model from text, run the calculus, read verdicts."""

from __future__ import annotations

import textwrap

import yaml

from intercore.model.calculus import analyze
from intercore.model.channels import build_table
from intercore.model.loader import loads, with_rules


def platform(text: str, *, enable=(), disable=(), source: str = "model.yaml"):
    p = loads(textwrap.dedent(text), source)
    return with_rules(p, enable, disable) if enable or disable else p


def from_data(data: dict, *, source: str = "model.yaml"):
    return loads(yaml.safe_dump(data, sort_keys=False), source)


def verdicts(p, k: int = 2) -> dict[frozenset[str], str]:
    """k-set (transaction names) -> 'itf' | 'free' for every reported set."""
    a = analyze(p, k)
    names = a.problem.transactions
    out = {frozenset(names[i] for i in s): "itf" for s, _ in a.interference}
    out.update({frozenset(names[i] for i in s): "free" for s in a.free})
    return out


def table(p, k: int = 2):
    return build_table(analyze(p, k), p)


def row(p, *txs: str):
    """The channel row (or free row) of one set of transactions."""
    t = table(p, len(txs))
    wanted = frozenset(txs)
    for r in (*t.channels, *t.free):
        if frozenset(r.transactions) == wanted:
            return r
    raise AssertionError(f"no row for {sorted(wanted)}")
