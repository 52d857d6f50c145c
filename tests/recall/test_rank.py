"""Ranking formulae: RRF (Cormack et al. 2009), recency decay, boosts, MMR (Carbonell &
Goldstein 1998)."""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reckon.recall.rank import (
    access_boost,
    feedback_boost,
    mmr_select,
    ranks_from_scores,
    recency_factor,
    rrf_score,
)

from .conftest import NOW


def test_rrf_matches_hand_computed_ranks() -> None:
    # doc ranked 1st by BM25 and 3rd by vector, k=60: 1/61 + 1/63
    assert rrf_score([1, 3], k=60) == pytest.approx(0.016393442622950821 + 0.015873015873015872)
    # only one ranker retrieved it
    assert rrf_score([None, 2], k=60) == pytest.approx(1 / 62)
    # weights multiply each term
    assert rrf_score([1, 1], k=10, weights=[2.0, 0.5]) == pytest.approx(2 / 11 + 0.5 / 11)
    # a document ranked (2, 2) beats one ranked (1, 30) with k=60
    assert rrf_score([2, 2]) > rrf_score([1, 30])


def test_ranks_from_scores_ignores_ineligible_and_zero_scores() -> None:
    scores = np.array([0.5, 2.0, 0.0, 1.0, np.nan], dtype=np.float32)
    elig = np.array([True, True, True, False, True])
    assert ranks_from_scores(scores, elig, depth=10) == {1: 1, 0: 2}
    assert ranks_from_scores(scores, elig, depth=1) == {1: 1}


def test_recency_halves_at_half_life() -> None:
    assert recency_factor(NOW, NOW, 30.0) == pytest.approx(1.0)
    assert recency_factor(NOW - timedelta(days=30), NOW, 30.0) == pytest.approx(0.5)
    assert recency_factor(NOW - timedelta(days=60), NOW, 30.0) == pytest.approx(0.25)
    assert recency_factor(NOW - timedelta(days=60), NOW, None) == 1.0
    # a document from the future is not boosted above 1
    assert recency_factor(NOW + timedelta(days=5), NOW, 30.0) == 1.0
    # naive datetimes are UTC
    assert recency_factor((NOW - timedelta(days=30)).replace(tzinfo=None), NOW, 30.0) == pytest.approx(0.5)


def test_access_and_feedback_boosts() -> None:
    assert access_boost(0, 0.1) == 1.0
    assert access_boost(9, 0.1) == pytest.approx(1 + 0.1 * math.log(10))
    assert feedback_boost(0, 0.2) == 1.0
    assert feedback_boost(1, 0.2) == pytest.approx(1.1)
    assert feedback_boost(-1, 0.2) == pytest.approx(0.9)
    assert 1.19 < feedback_boost(100, 0.2) < 1.2


def test_mmr_demotes_near_duplicate() -> None:
    a = np.array([1.0, 0.0, 0.0])
    a_dup = np.array([0.995, 0.0998749, 0.0])
    b = np.array([0.0, 1.0, 0.0])
    vecs = np.stack([a, a_dup, b])
    rel = np.array([1.0, 0.95, 0.8])
    order, finals, sims = mmr_select(rel, vecs, lam=0.7, limit=3)
    assert order == [0, 2, 1]  # the duplicate falls behind the distinct doc
    assert finals == sorted(finals, reverse=True)
    assert sims[2] == pytest.approx(0.995)
    # first pick: lambda * 1; second: lambda * 0.8 - (1 - lambda) * max(0, cos(b, a)) = 0.56
    assert finals[0] == pytest.approx(0.7)
    assert finals[1] == pytest.approx(0.56)
    # lambda = 1 keeps relevance order
    assert mmr_select(rel, vecs, lam=1.0, limit=3)[0] == [0, 1, 2]


@given(st.lists(st.sampled_from([float("nan"), -1.0, 0.0, 0.5, 1.0, 2.0, 2.0, 3.5]), min_size=1, max_size=300),
       st.integers(1, 40), st.integers(0, 2**32 - 1))
@settings(max_examples=300, deadline=None)
def test_top_k_ranks_equal_a_stable_full_sort(vals, depth, seed) -> None:  # type: ignore[no-untyped-def]
    """ranks_from_scores (partition + sort of the candidates) against an independent
    oracle: sort every eligible positive position by (score desc, position)."""
    rng = np.random.default_rng(seed)
    scores = np.array(vals, dtype=np.float32)
    elig = rng.random(len(vals)) < 0.8
    ok = [p for p in range(len(vals)) if elig[p] and not np.isnan(scores[p]) and scores[p] > 0]
    want = sorted(ok, key=lambda p: (-float(scores[p]), p))[:depth]
    assert ranks_from_scores(scores, elig, depth) == {p: r + 1 for r, p in enumerate(want)}
