"""The reasoner state read in place (format 6, ``reckon.datalog._columns``): every
container a restore hands out behaves like the plain container it stands for, under any
sequence of reads and changes, and writes back the columns the plain one would.

Oracles: a ``set`` of facts, a ``dict`` of ranks, a ``defaultdict(set)`` index entry, a
Python list of terms -- built independently of the columns."""

from __future__ import annotations

import marshal
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyoxigraph import BaseDirection, BlankNode, Literal, NamedNode, Triple

from reckon.datalog import _factstore
from reckon.datalog._columns import (
    COLUMNS_LAYOUT,
    FactColumns,
    LazyFacts,
    LazyIds,
    LazyRanks,
    RankColumns,
    TermColumns,
    fact_columns,
    rank_columns,
    term_columns,
    term_key,
)
from reckon.datalog._factstore import (
    BNODE,
    IRI,
    LITERAL,
    TRIPLE,
    FactStore,
    TermDictionary,
    _ColumnEntry,
    _Span,
    index_width,
)
from reckon.datalog.evaluate import Reasoner, _direction, materialize
from reckon.datalog.srl import parse_srl

IDS = st.integers(0, 6) | st.integers(2**31 - 3, 2**31 - 1)  # small ids, and ids at the top of a C int
FACTS = st.tuples(IDS, st.integers(0, 3), IDS)


def _cols(facts: set[tuple[int, int, int]]) -> FactColumns:
    return FactColumns(fact_columns(facts))


# --------------------------------------------------------------------------- facts

FACT_OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), FACTS), st.tuples(st.just("discard"), FACTS), st.tuples(st.just("in"), FACTS),
    st.tuples(st.just("update"), st.lists(FACTS, max_size=4)),
    st.tuples(st.just("difference_update"), st.lists(FACTS, max_size=4)),
    st.tuples(st.just("update_new"), st.lists(FACTS, max_size=4)),
    st.tuples(st.just("copy"), st.none()), st.tuples(st.just("write"), st.none()),
), max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.sets(FACTS, max_size=25), FACT_OPS)
def test_restored_facts_behave_like_a_set(facts: set[tuple[int, int, int]], ops: list[tuple[str, Any]]) -> None:
    """If a set of facts is written in columns and restored (``LazyFacts``), then every
    read answers as the set would and every change leaves the same facts, after any
    sequence of adds, removals, copies and rewrites; the columns it writes are those of
    the set it stands for."""
    oracle = set(facts)
    lazy = LazyFacts(_cols(facts))
    for op, arg in ops:
        if op == "add":
            lazy.add(arg)
            oracle.add(arg)
        elif op == "discard":
            lazy.discard(arg)
            oracle.discard(arg)
        elif op == "in":
            assert (arg in lazy) == (arg in oracle)
        elif op == "update":
            lazy.update(arg)
            oracle.update(arg)
        elif op == "difference_update":
            lazy.difference_update(arg)
            oracle.difference_update(arg)
        elif op == "update_new":  # the caller's promise: none of them is in the set
            new = [f for f in dict.fromkeys(arg) if f not in oracle]
            lazy.update_new(new)
            oracle.update(new)
        elif op == "copy":
            lazy = lazy.copy()
        else:  # written and restored again
            lazy = LazyFacts(FactColumns(lazy.written()))
        assert len(lazy) == len(oracle)
    assert set(lazy) == oracle and lazy == oracle and oracle == lazy
    assert lazy.materialize() == oracle
    assert lazy.predicates() == {f[1] for f in oracle}
    assert fact_columns(lazy) == fact_columns(oracle)
    assert (lazy - {f for f in oracle if f[1] == 0}) == {f for f in oracle if f[1] != 0}


def test_fact_columns_sort_by_predicate_then_key_and_refuse_disorder() -> None:
    """The columns hold each predicate's keys ``s << 32 | o`` ascending, predicates
    ascending; columns that disagree in size or order are refused (ValueError)."""
    preds, ends, keys = fact_columns({(2, 1, 3), (1, 1, 9), (0, 0, 0), (2**31 - 1, 1, 2**31 - 1)})
    cols = FactColumns((preds, ends, keys))
    assert cols.spans == {0: (0, 1), 1: (1, 4)}
    assert list(cols.keys) == [0, (1 << 32) | 9, (2 << 32) | 3, ((2**31 - 1) << 32) | (2**31 - 1)]
    assert sorted(cols) == sorted({(2, 1, 3), (1, 1, 9), (0, 0, 0), (2**31 - 1, 1, 2**31 - 1)})
    with pytest.raises(ValueError):
        FactColumns((preds, ends, keys[:-8]))
    with pytest.raises(ValueError):
        FactColumns((preds[::-1] if len(preds) > 4 else preds + preds, ends, keys))
    with pytest.raises(ValueError):
        FactColumns((preds, ends, keys[:-1]))  # not whole keys
    with pytest.raises(ValueError):
        FactColumns((list(preds), ends, keys))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- ranks

RANK_OPS = st.lists(st.one_of(
    st.tuples(st.just("get"), FACTS), st.tuples(st.just("set"), st.tuples(FACTS, st.integers(0, 9))),
    st.tuples(st.just("pop"), FACTS), st.tuples(st.just("del"), FACTS),
    st.tuples(st.just("setdefault"), st.tuples(FACTS, st.integers(0, 9))),
    st.tuples(st.just("update"), st.dictionaries(FACTS, st.integers(0, 9), max_size=3)),
    st.tuples(st.just("write"), st.none()),
), max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(FACTS, st.integers(0, 2**31 - 1), max_size=20), RANK_OPS, st.booleans())
def test_restored_ranks_behave_like_a_dict(ranks: dict[tuple[int, int, int], int], ops: list[tuple[str, Any]],
                                           whole_first: bool) -> None:
    """If a fact -> rank map is written in columns and restored (``LazyRanks``), then
    ``get``, ``[]``, ``in``, ``pop``, ``del``, ``setdefault``, ``[]=`` and ``update``
    answer and change it as a dict would, and it writes the columns of that dict; read
    whole (``len``, ``==``) it turns into a plain ``Ranks`` holding the same entries."""
    oracle = dict(ranks)
    lazy: Any = LazyRanks.restored(RankColumns(rank_columns(ranks)))
    for op, arg in ops:
        if op == "get":
            assert lazy.get(arg) == oracle.get(arg) and (arg in lazy) == (arg in oracle)
            if arg in oracle:
                assert lazy[arg] == oracle[arg]
            else:
                with pytest.raises(KeyError):
                    lazy[arg]
        elif op == "set":
            lazy[arg[0]] = arg[1]
            oracle[arg[0]] = arg[1]
        elif op == "pop":
            assert lazy.pop(arg, None) == oracle.pop(arg, None)
        elif op == "del":
            if arg in oracle:
                del lazy[arg]
                del oracle[arg]
            else:
                with pytest.raises(KeyError):
                    del lazy[arg]
        elif op == "setdefault":
            assert lazy.setdefault(*arg) == oracle.setdefault(*arg)
        elif op == "update":
            lazy.update(arg)
            oracle.update(arg)
        elif type(lazy) is LazyRanks:  # written and restored again
            lazy = LazyRanks.restored(RankColumns(lazy.written()))
    assert rank_columns(lazy) == rank_columns(oracle)
    if whole_first:
        assert len(lazy) == len(oracle)
    assert lazy == oracle and dict(lazy.items()) == oracle and sorted(lazy) == sorted(oracle)
    assert type(lazy).__name__ == "Ranks"


# --------------------------------------------------------------------------- index entries

ENTRY_OPS = st.lists(st.one_of(
    st.tuples(st.just("get"), IDS), st.tuples(st.just("getitem"), IDS), st.tuples(st.just("in"), IDS),
    st.tuples(st.just("add"), st.tuples(IDS, IDS)), st.tuples(st.just("discard"), st.tuples(IDS, IDS)),
    st.tuples(st.just("del"), IDS), st.tuples(st.just("pop"), IDS), st.tuples(st.just("len"), st.none()),
    st.tuples(st.just("setdefault"), IDS), st.tuples(st.just("set"), st.tuples(IDS, IDS)),
    st.tuples(st.just("put"), st.tuples(IDS, IDS)), st.tuples(st.just("take"), st.tuples(IDS, IDS)),
), max_size=30)


@settings(max_examples=400, deadline=None)
@given(st.sets(st.tuples(IDS, IDS), max_size=25), ENTRY_OPS, st.sampled_from([0, 1, 2, 64]))
# a change left beside the column, then read one key / built whole / an existing value put again
@example({(1, 1), (1, 2), (1, 3)}, [("take", (1, 2)), ("get", 1)], 0)
@example({(1, 1), (1, 2)}, [("take", (1, 1)), ("put", (1, 5))], 0)
@example({(1, 1), (1, 2)}, [("put", (1, 1)), ("take", (1, 1)), ("getitem", 1)], 0)
@example({(1, 1), (1, 2)}, [("take", (1, 1)), ("take", (1, 2)), ("in", 1), ("put", (1, 3)), ("get", 1)], 1)
def test_a_column_entry_behaves_like_a_defaultdict(pairs: set[tuple[int, int]], ops: list[tuple[str, Any]],
                                                   build_at_most: int) -> None:
    """If one predicate's index ``k -> {v}`` is read from a sorted key column
    (``_ColumnEntry``), then every read and change answers as the ``defaultdict(set)``
    it stands for, ``len`` is right without building it, and a removed key never comes
    back from the column; the fact store's writes (``put``, ``take``: add a value, take
    one and drop an emptied key) left beside a key larger than ``_BUILD_AT_MOST`` are
    applied when it is read; built whole it equals the oracle."""
    old, _factstore._BUILD_AT_MOST = _factstore._BUILD_AT_MOST, build_at_most
    try:
        _column_entry_against_the_oracle(pairs, ops)
    finally:
        _factstore._BUILD_AT_MOST = old


def _column_entry_against_the_oracle(pairs: set[tuple[int, int]], ops: list[tuple[str, Any]]) -> None:
    oracle: defaultdict[int, set[int]] = defaultdict(set)
    for k, v in pairs:
        oracle[k].add(v)
    keys = sorted((k << 32) | v for k, v in pairs)
    from array import array

    col = memoryview(array("Q", keys).tobytes()).cast("Q")
    entry: Any = _ColumnEntry.restored(_Span(col, 0, len(keys), len(oracle)))
    for op, arg in ops:
        if op == "get":
            assert entry.get(arg) == oracle.get(arg)
        elif op == "getitem":
            assert entry[arg] == oracle[arg]  # a missing key gets an empty set in both
        elif op == "in":
            assert (arg in entry) == (arg in oracle)
        elif op == "add":
            entry[arg[0]].add(arg[1])
            oracle[arg[0]].add(arg[1])
        elif op == "discard":
            entry[arg[0]].discard(arg[1])
            oracle[arg[0]].discard(arg[1])
        elif op == "del":
            if arg in oracle:
                del entry[arg]
                del oracle[arg]
            else:
                with pytest.raises(KeyError):
                    del entry[arg]
        elif op == "pop":
            assert entry.pop(arg, None) == oracle.pop(arg, None)
        elif op == "setdefault":
            assert entry.setdefault(arg, {99}) == oracle.setdefault(arg, {99})
        elif op == "set":
            entry[arg[0]] = {arg[1]}
            oracle[arg[0]] = {arg[1]}
        elif op == "put":
            _factstore._putter(entry)(*arg)
            oracle[arg[0]].add(arg[1])
        elif op == "take":
            _factstore._take(entry, *arg)
            oracle[arg[0]].discard(arg[1])
            if not oracle[arg[0]]:
                del oracle[arg[0]]
        else:
            assert len(entry) == len(oracle)
        assert len(entry) == len(oracle)
    assert dict(entry) == dict(oracle) and entry == oracle
    assert type(entry).__name__ == "_Entry"


# --------------------------------------------------------------------------- terms

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
IRI_TERMS = st.builds(lambda s: NamedNode("http://ex.org/" + "".join(c for c in s if c.isalnum())), TEXT)
LITERALS = st.one_of(
    st.builds(Literal, TEXT),
    st.builds(lambda v, d: Literal(v, datatype=NamedNode("http://www.w3.org/2001/XMLSchema#" + d)), TEXT,
              st.sampled_from(["token", "anyURI", "normalizedString"])),
    st.builds(lambda v, lang: Literal(v, language=lang), TEXT, st.sampled_from(["en", "fr-CA", "ar"])),
    st.builds(lambda v, lang, d: Literal(v, language=lang, direction=d), TEXT, st.sampled_from(["en", "ar"]),
              st.sampled_from([BaseDirection.LTR, BaseDirection.RTL])),
)
TERMS = st.one_of(IRI_TERMS, LITERALS, st.builds(lambda s: BlankNode("b" + str(abs(hash(s)) % 97)), TEXT))


def _dictionary(terms: list[object]) -> TermDictionary:
    d = TermDictionary()
    for t in terms:
        d.intern(t)
    return d


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TERMS, max_size=25), st.lists(TERMS, max_size=8), st.lists(TERMS, max_size=6))
def test_restored_terms_decode_and_look_up_like_the_dictionary(first: list[object], constants: list[object],
                                                                 later: list[object]) -> None:
    """If a term dictionary is written in columns and restored behind the same
    constants, then each id decodes to its term, each term looks up to its id (unknown
    terms to nothing), terms interned after the restore get the ids a plain dictionary
    would give them, and written again the dictionary reads back the same: an IRI, a
    blank node and literals of every kind (datatypes, language tags, base directions,
    any Unicode text, the empty string)."""
    original = _dictionary(constants + first)
    n0 = len(_dictionary(constants).terms)
    written, triples = term_columns(original.terms, original.kinds, original.parts, None)
    payload = marshal.loads(marshal.dumps((bytes(original.kinds), written)))  # as a file holds them
    cols = TermColumns(payload[1], payload[0], _direction)
    restored = _dictionary(constants)
    assert len(restored.terms) == n0
    restored.restore_columns(cols, triples)
    assert isinstance(restored.ids, LazyIds)
    for i, t in enumerate(original.terms):
        assert restored.terms[i] == t and restored.lookup(t) == original.lookup(t)
        assert cols.key(i) == term_key(t)
    assert restored.lookup(NamedNode("http://ex.org/never-seen")) is None
    for t in later:
        assert restored.intern(t) == original.intern(t)
    assert list(restored.terms) == list(original.terms) and bytes(restored.kinds) == bytes(original.kinds)
    again, triples2 = term_columns(restored.terms, restored.kinds, restored.parts, cols)
    assert again == term_columns(original.terms, original.kinds, original.parts, None)[0] and triples2 == triples
    restored.materialize()
    assert dict(restored.ids.items()) == {t: original.lookup(t) for t in original.terms}


# --------------------------------------------------------------------------- the reasoner

RULES = """PREFIX : <http://ex.org/>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
RULE { ?x :label2 ?l } WHERE { ?x :label ?l }
RULE { ?x a :Big } WHERE { ?x :amount ?a . FILTER(?a > 10) }
RULE { ?x :quoted <<( ?x :says ?y )>> } WHERE { ?x :says ?y }
RULE { ?x :reach ?z } WHERE { ?x :link ?y . ?y :reach ?z }
RULE { ?x :reach ?y } WHERE { ?x :link ?y }
RULE { ?x :alone true } WHERE { ?x a :Node . NOT { ?x :link ?y } }
"""


def _n(s: str) -> NamedNode:
    return NamedNode("http://ex.org/" + s)


def _base() -> list[Triple]:
    xsd = "http://www.w3.org/2001/XMLSchema#"
    out = [Triple(_n(f"v{i}"), _n("link"), _n(f"v{i + 1}")) for i in range(30)]
    out += [Triple(_n(f"v{i}"), NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"), _n("Node"))
            for i in range(35)]
    out += [
        Triple(_n("a"), _n("label"), Literal("لا", language="ar", direction=BaseDirection.RTL)),
        Triple(_n("a"), _n("label"), Literal("chat", language="fr")),
        Triple(_n("a"), _n("label"), Literal("\u00e9t\u00e9 \U0001f600 \x00 tab\t")),
        Triple(_n("a"), _n("amount"), Literal("40000.50", datatype=NamedNode(xsd + "decimal"))),
        Triple(_n("b"), _n("amount"), Literal("7", datatype=NamedNode(xsd + "integer"))),
        Triple(BlankNode("k1"), _n("says"), Literal("hi")),
        Triple(_n("c"), _n("says"), Triple(_n("a"), _n("label"), Literal("chat", language="fr"))),
    ]
    return out


def test_a_format_6_state_restores_reads_in_place_and_maintains_like_the_original() -> None:
    """If a reasoner over terms of every kind (language tags with directions, any
    Unicode, decimals, blank nodes, triple terms) is dumped and restored, then the
    restore decodes nothing -- terms, facts, ranks and indexes stay in their columns --
    and the restored reasoner explains as the original, keeps a small change in place,
    holds the same inference graph (read whole: settled into plain containers first),
    and after deletions and insertions (a large one among them) gives the original's
    deltas and equals materialize(); dumped again it restores the same."""
    rs = parse_srl(RULES)
    base = _base()
    original = Reasoner(rs)
    original.load(base)
    state = original.dump_state()
    assert marshal.loads(state)[0] == Reasoner.STATE_VERSION == 6
    restored = Reasoner(rs)
    restored.restore_state(memoryview(state))
    st_ = restored._state
    assert type(st_.full.facts) is LazyFacts and type(st_.base.facts) is LazyFacts
    assert type(st_.rank) is LazyRanks and type(restored._dic.ids) is LazyIds
    assert sum(t is not None for t in list.__iter__(restored._dic.terms)) < len(restored._dic.terms)
    assert set(getattr(st_.full.spo, "raw", {})) == set(st_.full.count)  # no index entry built
    t = Triple(_n("v3"), _n("reach"), _n("v9"))
    assert restored.explain(t).render() == original.explain(t).render()
    d = restored.apply(delete=[Triple(_n("v0"), _n("link"), _n("v1"))])  # a small change: read in place
    assert type(restored._state.full.facts) is LazyFacts and type(restored._state.rank) is LazyRanks
    assert d == original.apply(delete=[Triple(_n("v0"), _n("link"), _n("v1"))])
    base.remove(Triple(_n("v0"), _n("link"), _n("v1")))
    assert restored.inferred() == original.inferred()  # reads every fact: settled first
    assert type(restored._state.full.facts) is set
    steps = [
        ([], [Triple(_n("v5"), _n("link"), _n("v6"))]),
        ([Triple(_n("b"), _n("amount"), Literal("11", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#integer")))],
         [Triple(_n("a"), _n("label"), Literal("chat", language="fr"))]),
        ([Triple(_n(f"w{i}"), _n("link"), _n(f"x{i % 7}")) for i in range(Reasoner.SETTLE_AT)], []),
        ([Triple(_n("v5"), _n("link"), _n("v6"))], [Triple(_n("w3"), _n("link"), _n("x3"))]),
    ]
    current = set(base)
    for ins, dels in steps:
        d1, d2 = original.apply(insert=ins, delete=dels), restored.apply(insert=ins, delete=dels)
        current = (current - set(dels)) | set(ins)
        assert (d2.added, d2.removed) == (d1.added, d1.removed)
        assert restored.inferred() == original.inferred() == materialize(rs, current)
        again = Reasoner(rs)
        again.restore_state(restored.dump_state())
        assert again.inferred() == original.inferred()
        assert again._state.rank == original._state.rank


def test_a_restored_store_reads_its_indexes_from_the_fact_columns() -> None:
    """A store written in format 6 keeps no index beside its facts: each predicate's
    subject index is read from the facts' columns, its object index (when kept) from
    the same facts keyed by object; the planner's widths are read unbuilt; both equal
    the original's."""
    original = FactStore([(s, p, (s * 7 + p) % 40) for s in range(40) for p in range(3)])
    original.need_pos(1)
    parts = original.to_columns()
    assert parts[0] == COLUMNS_LAYOUT
    restored = FactStore.from_columns(parts)
    for p in range(3):
        assert index_width(restored.spo, p) == index_width(original.spo, p)
    assert index_width(restored.pos, 1) == index_width(original.pos, 1) and 0 not in restored.pos
    assert dict(restored.spo[2]) == dict(original.spo[2]) and dict(restored.pos[1]) == dict(original.pos[1])
    assert set(restored.facts) == set(original.facts) and restored.count == original.count


@pytest.mark.parametrize("how", ["layout", "count", "facts-cut", "pos-count", "width-missing", "shape"])
def test_a_damaged_format_6_store_is_refused(how: str) -> None:
    """Columns of another machine's layout, counts that disagree with the facts or the
    object index, a missing width or another shape are refused with ValueError."""
    original = FactStore([(s, p, s % 5) for s in range(30) for p in range(3)])
    original.need_pos(2)
    parts = list(original.to_columns())
    if how == "layout":
        parts[0] = "big-i4-q8-Q8" if COLUMNS_LAYOUT != "big-i4-q8-Q8" else "little-i4-q8-Q8"
    elif how == "count":
        parts[5] = {**parts[5], 1: 29}  # type: ignore[dict-item]
    elif how == "facts-cut":
        preds, ends, keys = parts[1]  # type: ignore[misc]
        parts[1] = (preds, ends, keys[:-8])
    elif how == "pos-count":
        preds, ends, keys = parts[2]  # type: ignore[misc]
        parts[2] = (preds, ends[:-8] + (int.from_bytes(ends[-8:], "little") - 1).to_bytes(8, "little"), keys[:-8])
    elif how == "width-missing":
        parts[3] = {}
    else:
        parts[1] = list(parts[1])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        FactStore.from_columns(tuple(parts))


def test_kinds_are_shared_with_the_fact_store_module() -> None:
    assert (IRI, BNODE, LITERAL, TRIPLE) == (0, 1, 2, 3)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(FACTS, max_size=25), st.lists(st.tuples(st.booleans(), FACTS), max_size=8),
       st.dictionaries(FACTS, st.integers(0, 2**31 - 1), max_size=15), st.lists(TERMS, max_size=12),
       st.lists(TERMS, max_size=5))
def test_python_and_numpy_writers_write_the_same_bytes(facts: set[tuple[int, int, int]],
                                                       changes: list[tuple[bool, tuple[int, int, int]]],
                                                       ranks: dict[tuple[int, int, int], int], terms: list[object],
                                                       later: list[object]) -> None:
    """A small state is written with Python's sort (no numpy import for a one-write CLI
    command), a large one with numpy: both write the same bytes -- facts, ranks, terms
    and a fact store's columns, fresh or restored and changed since."""
    import numpy

    lazy = LazyFacts(_cols(facts))
    store = FactStore(facts)
    for add, f in changes:
        (lazy.add if add else lazy.discard)(f)
        (store.add if add else store.remove)(f)
    store.need_pos(1)
    for x in (facts, lazy):
        assert fact_columns(x, None) == fact_columns(x, numpy)
    assert store.to_columns(None) == store.to_columns(numpy)
    restored = FactStore.from_columns(store.to_columns(numpy))
    for add, f in changes[:3]:
        (restored.add if add else restored.remove)(f)
    assert restored.to_columns(None) == restored.to_columns(numpy)
    lr: Any = LazyRanks.restored(RankColumns(rank_columns(ranks, numpy)))
    for _, f in changes[:4]:
        lr.pop(f, None)
    lr[(1, 2, 3)] = 7
    assert rank_columns(ranks, None) == rank_columns(ranks, numpy) and rank_columns(lr, None) == rank_columns(lr, numpy)
    d = _dictionary(terms)
    assert term_columns(d.terms, d.kinds, d.parts, None, None) == term_columns(d.terms, d.kinds, d.parts, None, numpy)
    written, triples = term_columns(d.terms, d.kinds, d.parts, None, numpy)
    r = TermDictionary()
    r.restore_columns(TermColumns(written, bytes(d.kinds), _direction), triples)
    for t in later:
        r.intern(t)
    cols = r.restored_columns()
    assert term_columns(r.terms, r.kinds, r.parts, cols, None) == term_columns(r.terms, r.kinds, r.parts, cols, numpy)
