"""Recall: keyword + vector hybrid search over one tenant's memories.

A tenant's index is :class:`reckon.recall.tenant_index.TenantIndex` (derived from the
store, see there); embedders are chosen by ``$RECKON_EMBEDDER``
(:mod:`reckon.recall.embed`).

Public API (store-independent; the memory layer decides eligibility)::

    RecallIndex(directory, embedder=..., config=RankConfig(...))
        .add(id, text, time=..., importance=..., scope=..., kind=..., owner=..., teams=...)
        .update(id, **changes) / .remove(id) / .record_access(id) / .feedback(id, +1 | -1)
        .search(query, limit=10, allowed_ids=..., now=..., explain=True) -> list[Hit]
        .rank_by_similarity(query_text, ids) -> list[(id, cosine)]

Sources: seed 003 §6 (rank by similarity inside the eligible set; long tail on demand),
seed 000 (hybrid retrieval, rescoring, MMR, explain). Formulae in :mod:`reckon.recall.rank`.
"""

from __future__ import annotations

from reckon.recall.embed import (
    DIM,
    EMBEDDER_NAMES,
    Embedder,
    EmbeddingUnavailable,
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    configured_embedder,
    default_embedder,
    embedder_from_name,
    minilm_available,
)
from reckon.recall.index import DocRecord, RecallIndex
from reckon.recall.keyword import KeywordIndex, tokenize
from reckon.recall.rank import Hit, RankConfig, ScoreExplanation, mmr_select, recency_factor, rrf_score

__all__ = [
    "DIM",
    "DocRecord",
    "EMBEDDER_NAMES",
    "Embedder",
    "EmbeddingUnavailable",
    "HashingEmbedder",
    "Hit",
    "KeywordIndex",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "RankConfig",
    "RecallIndex",
    "ScoreExplanation",
    "configured_embedder",
    "default_embedder",
    "embedder_from_name",
    "minilm_available",
    "mmr_select",
    "recency_factor",
    "rrf_score",
    "tokenize",
]
