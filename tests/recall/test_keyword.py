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


# ---------------------------------------------------------------- the postings as the only copy
_POOL = [f"d{i}" for i in range(12)]
_wtext = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=8).map(" ".join)
_writes = st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.sampled_from(_POOL), _wtext), max_size=16)
_QUERIES = [*_WORDS, "red apple sky", "stone stone river", "sea sea sea tree", "nothing here"]


def _apply(kw: KeywordIndex, texts: dict[str, str], ops: list[tuple[str, str, str]]) -> None:
    """Apply ``ops`` (add = add or update, remove) to ``kw`` and to the oracle's ``texts``."""
    for op, key, text in ops:
        if op == "add":
            kw.add(key, text)
            texts[key] = text
        else:
            kw.remove(key)
            texts.pop(key, None)


def _pure_bm25(texts: dict[str, str], q: str, k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
    """An independent oracle: the Lucene formula (``lucene_bm25``) over ``texts`` in plain
    Python, lengths counted as at least 1."""
    toks = {k: tokenize(v) for k, v in texts.items()}
    n = len(toks)
    if not n:
        return {}
    dl = {k: max(1, len(t)) for k, t in toks.items()}
    avgdl = sum(dl.values()) / n
    df = {t: sum(t in d for d in toks.values()) for t in set(tokenize(q))}
    return {k: sum(lucene_bm25(d.count(t), df[t], n, dl[k], avgdl, k1, b) for t in tokenize(q) if t in d)
            for k, d in toks.items()}


def _same_as_scratch(kw: KeywordIndex, texts: dict[str, str]) -> None:
    """``kw`` holds exactly ``texts``: as an index built anew by ``add_many`` (bit for bit),
    as the plain-Python formula (to float32 precision), and token / df counts by hand."""
    from collections import Counter

    oracle = KeywordIndex()
    oracle.add_many(reversed(list(texts.items())))  # another slot order than the loaded index's
    assert len(kw) == len(texts) == len(oracle) and all(k in kw for k in texts)
    for q in _QUERIES:
        got = scores_by_id(kw, q)
        assert got == scores_by_id(oracle, q), q
        want = _pure_bm25(texts, q)
        assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k], rel=1e-5, abs=1e-6) for k in got), q
    vocab = [*_WORDS, "absent"]
    assert kw.document_frequencies(vocab) == oracle.document_frequencies(vocab) == {
        t: sum(t in tokenize(v) for v in texts.values()) for t in vocab}
    for k, v in texts.items():
        assert Counter(kw.tokens(k)) == Counter(tokenize(v)), k
    assert kw.tokens("never-indexed") == []


@settings(max_examples=150, deadline=None)
@given(docs=st.dictionaries(st.sampled_from(_POOL), _wtext, max_size=12), before=_writes, after=_writes,
       order_seed=st.randoms(use_true_random=False), scans=st.sampled_from([0, 1, 128]))
def test_loaded_without_tokens_then_written_equals_an_index_built_from_scratch(  # type: ignore[no-untyped-def]
        docs, before, after, order_seed, scans) -> None:
    """export(tokens=False) -> load(tokens=None, dl=None), then adds, updates and removals
    (of loaded documents, of documents moved by a removal, of new ones): the reloaded index
    scores, counts and tokenises as an index built from scratch on the final texts. With
    ``scans`` 0 or 1 the loaded tokens are derived through the per-document index."""
    from unittest import mock

    from reckon.recall import keyword

    kw = KeywordIndex()
    kw.add_many(docs.items())
    texts = dict(docs)
    _apply(kw, texts, before)
    order = list(texts)
    order_seed.shuffle(order)
    a = kw.export(order, tokens=False)
    assert "tokens" not in a and np.array_equal(a["dl"], kw.export(order)["dl"])
    loaded = KeywordIndex()
    loaded.load(order, None, None, a["terms"], a["off"], a["doc"], a["tf"])  # type: ignore[arg-type]
    with mock.patch.object(keyword, "_SCANS_BEFORE_INDEX", scans):
        _same_as_scratch(loaded, texts)  # tokens() derives, and stores, the loaded ones
        again = KeywordIndex()
        again.load(order, None, None, a["terms"], a["off"], a["doc"], a["tf"])  # type: ignore[arg-type]
        _apply(again, texts, after)  # writes derive what they need (nothing derived before)
        _same_as_scratch(again, texts)
    b = again.export(sorted(texts), tokens=False)
    fresh = KeywordIndex()
    fresh.add_many(texts.items())
    want = fresh.export(sorted(texts), tokens=False)
    assert b["terms"] == want["terms"] and b.keys() == want.keys()
    for k in ("off", "doc", "tf", "dl"):
        assert np.array_equal(b[k], want[k]), k


def test_a_fresh_load_exports_without_deriving_any_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    """export(tokens=False) of a freshly loaded index (and of a frozen view of it) derives no
    document's tokens; with tokens it derives them, each document's terms sorted."""
    from reckon.recall import keyword

    kw = KeywordIndex()
    kw.add_many([("a", "sky red apple red"), ("b", "green apple"), ("c", ""), ("d", "river")])
    order = ["d", "c", "b", "a"]
    a = kw.export(order, tokens=False)
    loaded = KeywordIndex()
    loaded.load(order, None, a["dl"], a["terms"], a["off"], a["doc"], a["tf"])  # type: ignore[arg-type]

    def refuse(*_: object) -> None:
        raise AssertionError("a loaded document's tokens were derived")

    with monkeypatch.context() as m:
        m.setattr(keyword._LoadedTokens, "of", refuse)  # noqa: SLF001
        m.setattr(keyword._LoadedTokens, "joined", refuse)  # noqa: SLF001
        b = loaded.export(order, tokens=False)
        with loaded.frozen() as view:
            c = view.export(order, tokens=False)
    for k in ("off", "doc", "tf", "dl"):
        assert np.array_equal(b[k], a[k]) and np.array_equal(c[k], a[k]), k
    assert loaded.export(order)["tokens"] == ["river", "", "apple green", "apple red red sky"]
    assert loaded.tokens("a") == ["apple", "red", "red", "sky"] and loaded.tokens("c") == []


def test_frozen_view_of_a_loaded_index_exports_derived_tokens_as_they_were() -> None:
    """A frozen view taken of a loaded index, some of whose documents' tokens were never
    derived, exports them (tokens=True) as they were when it was taken, whatever writes
    (removing, moving, re-indexing loaded documents) happen meanwhile."""
    kw = KeywordIndex()
    kw.add_many((f"d{i}", f"granite river {'basalt ' * (i % 3)}stone {i}") for i in range(12))
    ids = [f"d{i}" for i in range(12)]
    a = kw.export(ids, tokens=False)
    loaded = KeywordIndex()
    loaded.load(ids, None, None, a["terms"], a["off"], a["doc"], a["tf"])  # type: ignore[arg-type]
    loaded.add("d2", "granite lagoon")  # one document's tokens stored, the others' not
    want = loaded.export(ids)
    with loaded.frozen() as view:
        loaded.remove("d0")  # d11 moves into slot 0
        loaded.add("d5", "marble")
        loaded.remove("d7")
        got = view.export(ids)
    assert got["tokens"] == want["tokens"] and got["terms"] == want["terms"]
    for k in ("off", "doc", "tf", "dl"):
        assert np.array_equal(got[k], want[k]), k
    assert [sorted(str(t).split()) for t in want["tokens"]] == [
        sorted(tokenize("granite lagoon" if i == 2 else f"granite river {'basalt ' * (i % 3)}stone {i}"))
        for i in range(12)]


def test_load_then_remove_every_document_leaves_an_empty_index() -> None:
    kw = KeywordIndex()
    kw.add_many([("a", "red apple red"), ("b", "green apple"), ("c", "blue sky"), ("e", "")])
    ids = ["c", "a", "e", "b"]
    a = kw.export(ids, tokens=False)
    loaded = KeywordIndex()
    loaded.load(ids, None, None, a["terms"], a["off"], a["doc"], a["tf"])  # type: ignore[arg-type]
    for i in ["a", "c", "b", "e", "a"]:
        loaded.remove(i)
    left, s = loaded.scores("red apple sky")
    assert len(loaded) == 0 and left == [] and s.shape == (0,)
    assert loaded.document_frequencies(["red", "apple", "sky"]) == {"red": 0, "apple": 0, "sky": 0}
    assert loaded.tokens("a") == [] and loaded._postings == {} and loaded._base == {}  # noqa: SLF001
    e = loaded.export([], tokens=False)
    assert e["terms"] == [] and len(e["doc"]) == 0 and np.array_equal(e["off"], [0])
    loaded.add("z", "red river")  # and it indexes again
    ids_z, s = loaded.scores("red")
    assert ids_z == ["z"] and s[0] > 0 and scores_by_id(loaded, "apple") == {"z": 0.0}


def _arrays(texts: dict[str, str]) -> tuple[list[str], dict[str, np.ndarray | list[str]]]:
    kw = KeywordIndex()
    kw.add_many(texts.items())
    ids = list(texts)
    return ids, kw.export(ids, tokens=False)


@pytest.mark.parametrize("damage", ["doc-twice", "doc-twice-unsorted", "doc-past-end", "doc-negative", "tf-zero",
                                    "off-short-end", "off-long-end", "off-not-from-zero", "term-without-postings",
                                    "dl-disagrees", "float-doc", "two-dim-doc", "term-twice", "id-twice",
                                    "tokens-count"])
def test_load_refuses_damaged_postings_and_stays_empty(damage: str) -> None:
    """Arrays a write could trip over (a document twice in one term's postings, a document
    number out of range, a frequency of 0, offsets that do not span the postings, ...) are
    refused with ValueError, the index left empty and loadable."""
    ids, a = _arrays({"a": "red apple red", "b": "green apple", "c": "apple sky"})
    terms = list(a["terms"])
    off, doc, tf = (np.array(a[k]) for k in ("off", "doc", "tf"))
    dl: np.ndarray | None = None
    tokens: list[str] | None = None
    apple = terms.index("apple")
    p0, p1, p2 = range(int(off[apple]), int(off[apple + 1]))  # apple's postings: a, b, c
    if damage == "doc-twice":
        doc[p1] = doc[p0]
    elif damage == "doc-twice-unsorted":
        doc[p0], doc[p1], doc[p2] = doc[p2], doc[p0], doc[p2]
    elif damage == "doc-past-end":
        doc[p2] = len(ids)
    elif damage == "doc-negative":
        doc[p0] = -1
    elif damage == "tf-zero":
        tf[p0] = 0
    elif damage == "off-short-end":
        off[-1] -= 1
    elif damage == "off-long-end":
        off[-1] += 1
    elif damage == "off-not-from-zero":
        off[0] = 1
    elif damage == "term-without-postings":
        off[apple + 1] = off[apple]
    elif damage == "dl-disagrees":
        dl = np.array(a["dl"])
        dl[1] += 1
    elif damage == "float-doc":
        doc = doc.astype(np.float64) + 0.5
    elif damage == "two-dim-doc":
        doc, tf = doc.reshape(1, -1), tf.reshape(1, -1)
    elif damage == "term-twice":
        terms[apple - 1 if apple else 1] = "apple"
    elif damage == "id-twice":
        ids = ["a", "b", "a"]
    elif damage == "tokens-count":
        tokens = ["red apple red", "green apple"]
    fresh = KeywordIndex()
    with pytest.raises(ValueError):
        fresh.load(ids, tokens, dl, terms, off, doc, tf)
    left, s = fresh.scores("apple")
    assert len(fresh) == 0 and left == [] and s.shape == (0,)
    assert fresh.tokens("a") == [] and fresh.document_frequencies(["apple"]) == {"apple": 0}
    ids, good = _arrays({"a": "red apple red", "b": "green apple"})
    fresh.load(ids, None, None, good["terms"], good["off"], good["doc"], good["tf"])  # type: ignore[arg-type]
    assert sorted(fresh.tokens("a")) == ["apple", "red", "red"] and len(fresh) == 2


@settings(max_examples=300, deadline=None)
@given(docs=st.lists(_wtext, min_size=1, max_size=6), pick=st.randoms(use_true_random=False),
       given_dl=st.booleans())
def test_load_accepts_exactly_the_self_consistent_postings(docs, pick, given_dl) -> None:  # type: ignore[no-untyped-def]
    """One random alteration of exported postings (a document number, a frequency, an
    offset, two postings exchanged, within one term or across): ``load`` accepts them iff,
    checked here posting by posting, the offsets span the postings with every term at least
    one, every number is in range and no term names a document twice (and a given ``dl``
    is the postings' lengths); then the index is that of the documents the postings
    describe, and every document can be removed."""
    from collections import Counter

    ids = [f"d{i}" for i in range(len(docs))]
    _, a = _arrays(dict(zip(ids, docs, strict=True)))
    terms = list(a["terms"])
    off, doc, tf = (np.array(a[k]).astype(np.int64) for k in ("off", "doc", "tf"))
    n = len(ids)
    what = pick.choice(["doc", "tf", "off", "swap", "none"])
    if what == "doc" and len(doc):
        doc[pick.randrange(len(doc))] = pick.randrange(-1, n + 1)
    elif what == "tf" and len(tf):
        tf[pick.randrange(len(tf))] = pick.randrange(0, 4)
    elif what == "off":
        off[pick.randrange(len(off))] = pick.randrange(-1, len(doc) + 2)
    elif what == "swap" and len(doc) > 1:
        i, j = pick.randrange(len(doc)), pick.randrange(len(doc))
        doc[i], doc[j] = doc[j], doc[i]
    ol, dlist, tlist = off.tolist(), doc.tolist(), tf.tolist()
    ok = ol[0] == 0 and ol[-1] == len(dlist) and all(x < y for x, y in zip(ol, ol[1:]))
    ok = ok and all(0 <= d < n for d in dlist) and all(f >= 1 for f in tlist)
    table: Counter[tuple[int, str]] = Counter()
    if ok:
        for j, t in enumerate(terms):
            seen = dlist[ol[j]:ol[j + 1]]
            ok = ok and len(set(seen)) == len(seen)
            for p in range(ol[j], ol[j + 1]):
                table[(dlist[p], t)] += tlist[p]
    lengths = [max(1, sum(f for (d, _), f in table.items() if d == k)) for k in range(n)]
    dl = np.array(a["dl"]) if given_dl else None
    ok = ok and (dl is None or lengths == dl.tolist())
    kw = KeywordIndex()
    if not ok:
        with pytest.raises(ValueError):
            kw.load(ids, None, dl, terms, off, doc, tf)
        assert len(kw) == 0
        return
    kw.load(ids, None, dl, terms, off, doc, tf)
    described = {ids[k]: [t for (d, t), f in sorted(table.items()) if d == k for _ in range(f)] for k in range(n)}
    oracle = KeywordIndex()
    oracle.add_tokens(described.items())
    for q in [*_WORDS, "red apple sky"]:
        assert scores_by_id(kw, q) == scores_by_id(oracle, q), q
    for k, want in described.items():
        assert Counter(kw.tokens(k)) == Counter(want)
    for k in pick.sample(ids, len(ids)):  # no write trips over the postings
        kw.remove(k)
    assert len(kw) == 0 and kw._postings == {} and kw._base == {}  # noqa: SLF001
