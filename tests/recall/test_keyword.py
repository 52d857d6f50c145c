"""KeywordIndex: hand-computed BM25 values, incremental bookkeeping, ids layout."""

from __future__ import annotations

import math
from datetime import UTC

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reckon.recall.keyword import KeywordIndex, tokenize


def lucene_bm25(tf: int, df: int, n: int, dl: int, avgdl: float, k1: float = 1.2, b: float = 0.75) -> float:
    """Kamphuis et al. 2020, Lucene variant, written out independently of the module."""
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))


def scores_by_id(kw: KeywordIndex, q: str | list[str]) -> dict[str, float]:
    ids, s = kw.scores(q)
    return dict(zip(ids, s.tolist(), strict=True))


def test_tokenize_lowercases_drops_stopwords_and_possessive() -> None:
    assert tokenize("Caroline's new painting of the Sunrise!") == ["caroline", "new", "painting", "sunrise"]
    assert tokenize("the of and") == []


def test_scores_match_the_lucene_formula_by_hand() -> None:
    kw = KeywordIndex()
    kw.add_many([("a", "red apple red"), ("b", "green apple"), ("c", "blue sky today")])
    # lengths 3, 2, 3 -> avgdl 8/3; df(red)=1, df(apple)=2
    s = scores_by_id(kw, "red apple")
    avgdl = 8 / 3
    assert s["a"] == pytest.approx(lucene_bm25(2, 1, 3, 3, avgdl) + lucene_bm25(1, 2, 3, 3, avgdl), rel=1e-6)
    assert s["b"] == pytest.approx(lucene_bm25(1, 2, 3, 2, avgdl), rel=1e-6)
    assert s["c"] == 0.0


def test_a_write_changes_n_avgdl_and_df_of_every_score() -> None:
    kw = KeywordIndex(k1=1.5, b=0.5)
    kw.add_many([("a", "red apple"), ("b", "green apple")])
    before = scores_by_id(kw, "apple")
    assert before["a"] == pytest.approx(lucene_bm25(1, 2, 2, 2, 2.0, 1.5, 0.5), rel=1e-6)
    kw.add("c", "apple pie with cream and sugar")  # tokens: apple pie cream sugar
    after = scores_by_id(kw, "apple")
    assert after["a"] == pytest.approx(lucene_bm25(1, 3, 3, 2, 8 / 3, 1.5, 0.5), rel=1e-6)
    assert after["c"] == pytest.approx(lucene_bm25(1, 3, 3, 4, 8 / 3, 1.5, 0.5), rel=1e-6)
    assert after["a"] != before["a"]
    kw.add("c", "plum")  # update: apple leaves c, length 1
    s = scores_by_id(kw, "apple")
    assert s["c"] == 0.0 and s["a"] == pytest.approx(lucene_bm25(1, 2, 3, 2, 5 / 3, 1.5, 0.5), rel=1e-6)
    assert kw.document_frequencies(["apple", "plum", "pie"]) == {"apple": 2, "plum": 1, "pie": 0}


def test_repeated_query_token_counts_twice_and_unknown_tokens_score_zero() -> None:
    kw = KeywordIndex()
    kw.add_many([("a", "red apple"), ("b", "green pear")])
    once = scores_by_id(kw, ["apple"])["a"]
    assert scores_by_id(kw, ["apple", "apple", "kiwi"])["a"] == pytest.approx(2 * once, rel=1e-6)
    ids, s = kw.scores("kiwi mango")
    assert sorted(ids) == ["a", "b"] and not s.any()
    ids, s = kw.scores("")
    assert len(ids) == 2 and not s.any()


def test_empty_document_counts_as_length_one() -> None:
    kw = KeywordIndex()
    kw.add_many([("a", "red apple"), ("e", "the of and")])
    assert kw.tokens("e") == [] and len(kw) == 2
    # N = 2, avgdl = (2 + 1) / 2
    assert scores_by_id(kw, "apple")["a"] == pytest.approx(lucene_bm25(1, 1, 2, 2, 1.5), rel=1e-6)


def test_remove_moves_last_document_and_keeps_scores_exact() -> None:
    kw = KeywordIndex()
    kw.add_many([(f"d{i}", f"topic{i % 3} shared word{i}") for i in range(10)])
    kw.remove("d2")
    kw.remove("d2")  # absent: no error
    kw.remove("nope")
    assert len(kw) == 9 and "d2" not in kw and "d9" in kw
    fresh = KeywordIndex()
    fresh.add_many([(f"d{i}", f"topic{i % 3} shared word{i}") for i in range(10) if i != 2])
    for q in ("topic2 word9", "shared", "word2"):
        assert scores_by_id(kw, q) == scores_by_id(fresh, q)
    assert not any(scores_by_id(kw, "word2").values())
    kw.remove("d9")  # the document that was moved into d2's slot
    assert scores_by_id(kw, "word9") == {f"d{i}": 0.0 for i in range(9) if i != 2}
    for i in range(10):
        kw.remove(f"d{i}")
    ids, s = kw.scores("shared")
    assert ids == [] and s.shape == (0,) and kw.document_frequencies(["shared"]) == {"shared": 0}


def test_generation_changes_only_when_the_ids_layout_changes() -> None:
    kw = KeywordIndex()
    kw.add_many([("a", "red apple"), ("b", "green pear")])
    ids0, _ = kw.scores("apple")
    g = kw.generation
    kw.add("a", "yellow apple")  # update in place: same layout
    ids1, s = kw.scores("yellow")
    assert kw.generation == g and ids1 == ids0 and s[ids1.index("a")] > 0
    kw.add("c", "blue plum")
    ids2, _ = kw.scores("plum")
    assert kw.generation == g + 1 and set(ids2) == {"a", "b", "c"}
    kw.remove("a")
    ids3, _ = kw.scores("plum")
    assert kw.generation == g + 2 and set(ids3) == {"b", "c"} and kw.rebuilds == kw.generation


def test_returned_ids_are_a_copy() -> None:
    kw = KeywordIndex()
    kw.add("a", "red apple")
    ids, _ = kw.scores("apple")
    ids.append("zzz")
    assert kw.scores("apple")[0] == ["a"]
    assert np.asarray(kw.scores("apple")[1]).dtype == np.float32


def test_recall_index_keyword_scores_follow_rows_after_interleaved_writes() -> None:
    """RecallIndex maps KeywordIndex scores to its rows, with or without the same layout."""
    from datetime import datetime

    from reckon.recall import HashingEmbedder, RankConfig, RecallIndex

    now = datetime(2026, 3, 1, tzinfo=UTC)
    ix = RecallIndex(None, embedder=HashingEmbedder(), config=RankConfig())
    texts = {f"m{i}": f"topic{i % 4} note{i} shared" for i in range(30)}
    for k, t in texts.items():
        ix.add(k, t, time=now)
    for i in range(0, 30, 4):
        ix.remove(f"m{i}")
        del texts[f"m{i}"]
    ix.update("m5", text="topic9 rewritten")
    texts["m5"] = "topic9 rewritten"
    ix.add("m99", "topic1 late arrival", time=now)
    texts["m99"] = "topic1 late arrival"

    fresh = KeywordIndex()
    fresh.add_many(texts.items())
    want = scores_by_id(fresh, "topic1 topic9 shared")

    def got() -> dict[str, float]:
        row_scores = ix._bm25_by_row("topic1 topic9 shared")
        return {k: float(row_scores[ix._row[k]]) for k in texts}

    assert got() == want and want["m5"] > 0 and want["m99"] > 0
    # a keyword index whose ids are in another order than the rows: remapped, same scores
    shuffled = KeywordIndex()
    shuffled.add_many(sorted(texts.items(), reverse=True))
    ix._kw = shuffled
    assert shuffled.scores("x")[0] != ix._row_ids
    assert got() == want
    assert [h.id for h in ix.search("topic9", now=now, config=RankConfig(use_vector=False))] == ["m5"]


def test_memoised_contributions_follow_writes_and_parameter_changes() -> None:
    kw = KeywordIndex()
    kw.add_many([("a", "red apple"), ("b", "green apple pie")])
    first = scores_by_id(kw, "apple")
    assert scores_by_id(kw, "apple") == first  # memoised, same values
    kw.add("c", "plum")  # N and avgdl change: apple's idf and length norm change
    assert scores_by_id(kw, "apple")["a"] == pytest.approx(lucene_bm25(1, 2, 3, 2, 2.0), rel=1e-6)
    kw.k1, kw.b = 2.0, 0.0
    assert scores_by_id(kw, "apple")["b"] == pytest.approx(lucene_bm25(1, 2, 3, 3, 2.0, 2.0, 0.0), rel=1e-6)


_WORDS = "red green blue apple sky sea tree stone river cloud".split()
_text = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=6).map(" ".join)
_ops = st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 11), _text), max_size=12)


@settings(max_examples=60, deadline=None)
@given(docs=st.dictionaries(st.integers(0, 11).map(lambda i: f"d{i}"), _text, max_size=10), ops=_ops,
       order_seed=st.randoms(use_true_random=False))
def test_exported_then_loaded_index_scores_like_one_built_from_scratch(docs, ops, order_seed) -> None:  # type: ignore[no-untyped-def]
    """export -> load (the snapshot's path), then further adds, updates and removals: every
    query scores every document exactly as an index built from scratch on the final
    documents (the oracle: the incremental index, itself checked against bm25s)."""
    kw = KeywordIndex()
    kw.add_many(docs.items())
    order = list(docs)
    order_seed.shuffle(order)  # the snapshot's row order need not be the slots' order
    arrays = kw.export(order)
    loaded = KeywordIndex()
    loaded.load(order, arrays["tokens"], arrays["dl"], arrays["terms"], arrays["off"], arrays["doc"],
                arrays["tf"])
    final = dict(docs)
    for op, i, text in ops:
        key = f"d{i}"
        if op == "add":
            loaded.add(key, text)
            final[key] = text
        else:
            loaded.remove(key)
            final.pop(key, None)
    oracle = KeywordIndex()
    oracle.add_many(final.items())
    assert len(loaded) == len(final) and all(k in loaded for k in final)
    for q in [*_WORDS, "red apple sky", "stone stone river"]:
        want = scores_by_id(oracle, q)
        got = scores_by_id(loaded, q)
        assert got == want, q
        assert loaded.document_frequencies(tokenize(q)) == oracle.document_frequencies(tokenize(q))
    for k, text in final.items():
        assert loaded.tokens(k) == tokenize(text)
    again = loaded.export(sorted(final))  # a loaded index exports what it holds
    assert again["terms"] == oracle.export(sorted(final))["terms"]


def test_load_refuses_arrays_that_do_not_fit_and_stays_empty() -> None:
    kw = KeywordIndex()
    kw.add_many([("a", "red apple"), ("b", "green apple")])
    arr = kw.export(["a", "b"])
    bad_doc = np.array(arr["doc"])
    bad_doc[0] = 7  # a document number past the end
    for args in (
        (["a", "b"], arr["tokens"], arr["dl"], arr["terms"], arr["off"], bad_doc, arr["tf"]),
        (["a"], arr["tokens"], arr["dl"], arr["terms"], arr["off"], arr["doc"], arr["tf"]),
        (["a", "b"], arr["tokens"], arr["dl"], arr["terms"], arr["off"][:-1], arr["doc"], arr["tf"]),
        (["a", "a"], arr["tokens"], arr["dl"], arr["terms"], arr["off"], arr["doc"], arr["tf"]),
    ):
        fresh = KeywordIndex()
        with pytest.raises(ValueError):
            fresh.load(*args)
        assert len(fresh) == 0 and fresh.scores("apple")[0] == []
    with pytest.raises(ValueError):
        kw.load(["a", "b"], arr["tokens"], arr["dl"], arr["terms"], arr["off"], arr["doc"], arr["tf"])


def _blob(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    raw = [s.encode() for s in strings]
    off = np.zeros(len(raw) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(r) for r in raw])
    return np.frombuffer(b"".join(raw), dtype=np.uint8), off


_ANAGRAMS = "stone notes onset tones sea ase red der".split()
_atext = st.lists(st.sampled_from(_ANAGRAMS + _WORDS), min_size=0, max_size=6).map(" ".join)


@settings(max_examples=80, deadline=None)
@given(docs=st.lists(_atext, min_size=1, max_size=8), pick=st.randoms(use_true_random=False))
def test_postings_match_tokens_accepts_an_export_and_refuses_any_other_postings(docs, pick) -> None:  # type: ignore[no-untyped-def]
    """The snapshot's consistency check (``postings_match_tokens``) holds for what
    ``export`` writes; the oracle for any other postings: the (term, document) ->
    frequency table they give differs from the one the tokens give."""
    from collections import Counter

    from reckon.recall.keyword import postings_match_tokens

    kw = KeywordIndex()
    ids = [f"d{i}" for i in range(len(docs))]
    kw.add_many(zip(ids, docs, strict=True))
    a = kw.export(ids)
    tb, to = _blob(list(a["terms"]))
    kb, ko = _blob(list(a["tokens"]))
    off, doc, tf, dl = (np.asarray(a[k]).copy() for k in ("off", "doc", "tf", "dl"))
    assert postings_match_tokens(tb, to, kb, ko, off, doc, tf, dl)

    def table(terms: list[str], off: np.ndarray, doc: np.ndarray, tf: np.ndarray) -> Counter[tuple[str, int]]:
        c: Counter[tuple[str, int]] = Counter()
        for j, t in enumerate(terms):
            for p in range(int(off[j]), int(off[j + 1])):
                c[(t, int(doc[p]))] += int(tf[p])
        return c

    want = Counter({(t, d): n for d, s in enumerate(a["tokens"]) for t, n in Counter(s.split()).items()})
    if not len(doc):
        return
    # one random alteration of the postings, kept in range
    terms = list(a["terms"])
    what = pick.choice(["doc", "tf", "term"])
    p = pick.randrange(len(doc))
    if what == "doc":
        doc[p] = pick.randrange(len(docs))
    elif what == "tf":
        tf[p] = max(1, int(tf[p]) + pick.choice([-1, 1]))
    else:
        j = pick.randrange(len(terms))
        terms[j] = "".join(pick.sample(terms[j], len(terms[j])))  # an anagram (or the same term)
        tb, to = _blob(terms)
    dup = len({(int(d), j) for j in range(len(terms)) for d in doc[off[j]:off[j + 1]]}) != len(doc)
    same = table(terms, off, doc, tf) == want and not dup
    assert postings_match_tokens(tb, to, kb, ko, off, doc, tf, dl) == same
