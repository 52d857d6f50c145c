"""Hybrid ranking: RRF fusion of BM25 and cosine rankings, rescoring, MMR, explanations.

Pipeline (seed 000 "Evolving Memory": hybrid retrieval -> rescore -> MMR, with a
per-component explain; DESIGN.md "Recall"):

1. **Fusion** -- Reciprocal Rank Fusion (Cormack, Clarke & Büttcher 2009, "Reciprocal
   Rank Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR):
   ``rrf(d) = sum_r w_r / (k + rank_r(d))`` with ranks starting at 1 and ``k = 60``;
   a ranker that did not retrieve ``d`` contributes nothing. Each ranker contributes its
   top ``depth`` documents (default 25, never fewer than the search limit): with deep
   lists, two mediocre ranks (40 + 40) outscore one confident first rank, which cost
   6 points of R@10 on LoCoMo (``bench/recall_locomo.py``: depth 100 -> 25 raises
   plain RRF from 54.8 to 61.1). Rankers: BM25 over the
   document text, cosine of the embeddings, and optionally (``context_keyword_weight``)
   BM25 over the document's context + text (e.g. a conversation turn with the turn
   before it). Optional pseudo-relevance feedback re-runs both rankers once with an
   expanded query (see :meth:`reckon.recall.index.RecallIndex.search`).
2. **Rescoring** -- ``relevance = rrf * recency * access_boost * feedback_boost`` with
   ``recency = 0.5 ** (age_days / half_life_days)`` (exponential decay relative to a
   supplied ``now``; 1 when disabled), ``access_boost = 1 + a * log1p(access_count)`` and
   ``feedback_boost = 1 + f * s / (1 + |s|)`` where ``s`` is the net feedback (+1/-1 votes).
3. **Diversity** -- Maximal Marginal Relevance (Carbonell & Goldstein 1998, "The use of
   MMR, diversity-based reranking for reordering documents and producing summaries",
   SIGIR): greedily pick ``argmax lambda * rel(d) / max_rel - (1 - lambda) * max_{s in S}
   max(0, cos(d, s))``. The picked value is the hit's final score, so scores never increase
   down the list. With MMR off, the final score is the relevance.

Every component is reported by :class:`ScoreExplanation` when asked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Hit",
    "RankConfig",
    "ScoreExplanation",
    "access_boost",
    "feedback_boost",
    "mmr_select",
    "ranks_from_scores",
    "recency_factor",
    "rrf_score",
]


class RankConfig(BaseModel):
    """Knobs of the recall pipeline; every component can be switched off.

    Defaults are the memory-recall defaults (recency on). For benchmarks with no query
    time (LoCoMo) set ``half_life_days=None``.
    """

    model_config = ConfigDict(frozen=True)

    use_keyword: bool = True
    use_vector: bool = True
    rrf_k: int = Field(default=60, ge=1, description="RRF constant k (Cormack et al. 2009)")
    keyword_weight: float = Field(default=1.0, ge=0)
    vector_weight: float = Field(default=1.0, ge=0)
    context_keyword_weight: float = Field(
        default=0.0, ge=0, description="RRF weight of a third ranker: BM25 over context + text; 0 = off")
    depth: int = Field(
        default=25, ge=1,
        description="candidates taken from each ranker (at least the search limit). Shallow "
        "lists keep weak agreement between rankers (rank 40 + rank 40) from outscoring a "
        "confident single-ranker hit; measured on one LoCoMo conversation (bench/).")
    bm25_k1: float = Field(default=1.2, gt=0)
    bm25_b: float = Field(default=0.75, ge=0, le=1)
    half_life_days: float | None = Field(default=90.0, gt=0, description="recency half-life, days; None = off")
    access_weight: float = Field(
        default=0.01, ge=0,
        description="weight of log1p(access count): every search hit and bundle item counts as an access, so "
        "the boost must stay below the gap between adjacent RRF ranks (1/61 vs 1/62 = 1.6 %) for a "
        "few uses; at 0.01 one access is +0.7 %, a hundred +4.6 % (a hit shown is not a relevance "
        "judgment; explicit feedback weighs more)")
    feedback_weight: float = Field(default=0.2, ge=0, le=1)
    mmr_lambda: float | None = Field(default=0.8, gt=0, le=1, description="MMR trade-off; None or 1 = off")
    # pseudo-relevance feedback (RM3-style expansion for BM25, Rocchio for the vector)
    prf_docs: int = Field(default=0, ge=0, description="top fused docs used for feedback; 0 = off")
    prf_terms: int = Field(default=10, ge=1)
    prf_keyword_weight: float = Field(default=0.5, ge=0)
    prf_vector_weight: float = Field(default=0.5, ge=0)

    def components(self) -> dict[str, object]:
        """Which stages are on, for reports."""
        return {
            "keyword": self.use_keyword,
            "vector": self.use_vector,
            "rrf_k": self.rrf_k,
            "weights": (self.keyword_weight, self.vector_weight),
            "context_keyword_weight": self.context_keyword_weight,
            "recency_half_life_days": self.half_life_days,
            "access_weight": self.access_weight,
            "feedback_weight": self.feedback_weight,
            "mmr_lambda": self.mmr_lambda,
            "prf_docs": self.prf_docs,
        }


class ScoreExplanation(BaseModel):
    """Per-component scores of one hit (ranks are 1-based; None = not retrieved)."""

    bm25_rank: int | None = None
    bm25_score: float | None = None
    vector_rank: int | None = None
    cosine: float | None = None
    context_bm25_rank: int | None = None
    rrf: float
    recency: float = 1.0
    access_boost: float = 1.0
    feedback_boost: float = 1.0
    relevance: float = Field(description="rrf * recency * access_boost * feedback_boost")
    mmr_lambda: float | None = None
    mmr_similarity: float = Field(0.0, description="max cosine to hits ranked above")
    mmr_penalty: float = Field(0.0, description="(1 - lambda) * mmr_similarity")
    final: float

    def recompute(self, max_relevance: float) -> float:
        """The final score recomposed from the components (for checks and tests)."""
        rel = self.rrf * self.recency * self.access_boost * self.feedback_boost
        if self.mmr_lambda is None:
            return rel
        return self.mmr_lambda * rel / max_relevance - self.mmr_penalty


class Hit(BaseModel):
    """One search result: a document id and its final score (higher is better)."""

    id: str
    score: float
    explanation: ScoreExplanation | None = None


def ranks_from_scores(scores: np.ndarray, eligible: np.ndarray, depth: int) -> dict[int, int]:
    """1-based ranks of the ``depth`` best eligible positions with score > 0.

    :param scores: float array ``(n,)``; NaN = no score.
    :param eligible: bool array ``(n,)``.
    :returns: ``{position: rank}``; ties broken by position (stable).
    """
    # only the eligible positions with a finite score > 0 (NaN > 0 is False) take part:
    # the partition and sort never touch the rest of the rows
    pos = np.flatnonzero(eligible & (scores > 0) & (scores < np.inf))
    if len(pos) == 0 or depth <= 0:
        return {}
    vals = scores[pos]
    take = min(depth, len(pos))
    if take < len(pos):
        # top-k without sorting every candidate (O(m) + O(k log k)): the take-th best score
        # by partition, every candidate at least that good (ties included), then ordered
        # by (score descending, position) -- the same ranks as a stable full sort
        kth = np.partition(vals, len(vals) - take)[len(vals) - take]
        keep = vals >= kth
        pos, vals = pos[keep], vals[keep]
    order = pos[np.lexsort((pos, -vals))][:take]
    return {int(p): r + 1 for r, p in enumerate(order.tolist())}


def rrf_score(ranks: Sequence[int | None], k: int = 60, weights: Sequence[float] | None = None) -> float:
    """Reciprocal Rank Fusion: ``sum_i w_i / (k + rank_i)`` over rankers that ranked the doc.

    >>> round(rrf_score([1, 3], k=60), 6) == round(1/61 + 1/63, 6)
    True
    """
    w = list(weights) if weights is not None else [1.0] * len(ranks)
    return float(sum(wi / (k + r) for r, wi in zip(ranks, w) if r is not None))


def recency_factor(time: datetime, now: datetime, half_life_days: float | None) -> float:
    """``0.5 ** (age_days / half_life_days)``; 1.0 when ``half_life_days`` is None or the
    document is newer than ``now``. Naive datetimes are taken as UTC."""
    if half_life_days is None:
        return 1.0
    t = time if time.tzinfo else time.replace(tzinfo=UTC)
    n = now if now.tzinfo else now.replace(tzinfo=UTC)
    age = max(0.0, (n - t).total_seconds() / 86400.0)
    return float(0.5 ** (age / half_life_days))


def access_boost(access_count: int, weight: float) -> float:
    """``1 + weight * log1p(access_count)``."""
    return 1.0 + weight * math.log1p(max(0, access_count))


def feedback_boost(net_feedback: int, weight: float) -> float:
    """``1 + weight * s / (1 + |s|)`` for net feedback ``s``: bounded in (1-w, 1+w)."""
    s = float(net_feedback)
    return 1.0 + weight * s / (1.0 + abs(s))


def mmr_select(
    relevance: np.ndarray, vectors: np.ndarray, lam: float, limit: int
) -> tuple[list[int], list[float], list[float]]:
    """Maximal Marginal Relevance selection (Carbonell & Goldstein 1998).

    :param relevance: float ``(m,)``, > 0; normalised by its maximum inside.
    :param vectors: float32 ``(m, d)`` unit rows (zero row = unknown, similarity 0).
    :param lam: trade-off in (0, 1]; 1 = pure relevance order.
    :param limit: number of picks.
    :returns: ``(order, final_scores, max_similarities)``; final scores are
        non-increasing.
    """
    m = len(relevance)
    if m == 0 or limit <= 0:
        return [], [], []
    rel = relevance / float(relevance.max())
    maxsim = np.zeros(m, dtype=np.float64)  # clipped at 0: keeps final scores non-increasing
    chosen = np.zeros(m, dtype=bool)
    order: list[int] = []
    finals: list[float] = []
    sims: list[float] = []
    for _ in range(min(limit, m)):
        score = lam * rel - (1.0 - lam) * maxsim
        score[chosen] = -np.inf
        j = int(np.argmax(score))
        order.append(j)
        finals.append(float(score[j]))
        sims.append(float(maxsim[j]))
        chosen[j] = True
        if lam < 1.0:
            maxsim = np.maximum(maxsim, vectors @ vectors[j])
    return order, finals, sims
