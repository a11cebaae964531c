"""The transformer and its losses: a planted rule is learnt, the alignment term moves the
attention where it should, the paper's two flaws are what docs/learn.md says they are.
(JAX runs in a child interpreter: see _jaxwork.)"""

from __future__ import annotations

import numpy as np
import pytest

import _jaxwork
from _learnkit import in_child


@pytest.mark.slow
def test_a_planted_rule_is_learnt():
    r = in_child(_jaxwork.planted_rule)
    assert r["acc10"] >= 0.8 and r["acc10"] > r["constant"] + 0.2, r
    assert r["params"] <= 1_000_000


@pytest.mark.slow
def test_the_alignment_term_moves_attention_to_the_l2_tokens():
    kls = in_child(_jaxwork.alignment_moves_attention)
    assert kls["kl"] < 0.5 * kls["none"], kls


@pytest.mark.slow
def test_softmax_rows_sum_to_one_so_the_papers_row_map_is_constant():
    r = in_child(_jaxwork.attention_sums)
    assert np.allclose(r["rows"], 1.0, atol=1e-5)  # every row: the paper's "Attention_MAP"
    assert r["col_spread"] > 1e-4  # column sums (attention received) do differ


@pytest.mark.slow
def test_the_papers_score_prefers_uniform_attention_ours_prefer_proportional():
    pen = in_child(_jaxwork.penalties)
    assert pen["paper"]["uniform"] < pen["paper"]["proportional"]  # flaw 2
    for kind in ("cosine", "kl"):
        assert pen[kind]["proportional"] < pen[kind]["uniform"]
        assert pen[kind]["proportional"] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.slow
def test_saved_model_round_trip(tmp_path):
    assert in_child(_jaxwork.saved_round_trip, str(tmp_path / "m"))


@pytest.mark.slow
def test_saved_quantile_network_round_trip(tmp_path):
    assert in_child(_jaxwork.saved_round_trip, str(tmp_path / "m"), "quantile")


@pytest.mark.slow
def test_programs_of_two_to_six_regions_share_compiled_shapes():
    """Each batch shape costs an XLA compile of about a second; one per program size made the
    first prediction of a 2-region program 1.7 s a region. Batches are padded to a power of
    two: every batch seen (1, 2, 3, 4, 5, 6 and the calibration's 6) compiles shapes 1, 2, 4
    and 8 only, and the padding does not change a prediction."""
    r = in_child(_jaxwork.compiled_shapes)
    assert r["compiled"] == 4, r
    assert all(r["same"]), r
