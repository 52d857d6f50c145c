"""A fact store restored from its written form (``FactStore.from_lists``, what a fresh
process does with the reasoner state file) behaves exactly like the one written, under
any sequence of reads and changes -- although its per-predicate indexes are only built
when first read."""

from __future__ import annotations

from array import array
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reckon.datalog._factstore import LAYOUT, FactStore, index_width

FACTS = st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(0, 5))
OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), FACTS), st.tuples(st.just("remove"), FACTS),
    st.tuples(st.just("need_pos"), st.integers(0, 4)), st.tuples(st.just("get"), st.integers(0, 4)),
    st.tuples(st.just("shared_pos"), st.integers(0, 4)), st.tuples(st.just("dump"), st.just(0)),
), max_size=25)


def _plain(ix: dict[int, defaultdict[int, set[int]]]) -> dict[int, dict[int, set[int]]]:
    return {p: dict(d) for p, d in ix.items()}


def _view(fs: FactStore) -> tuple[object, ...]:
    return (set(fs.facts), _plain(fs.spo), _plain(fs.pos), dict(fs.count), set(fs.pos_preds), fs.pos_all)


@settings(max_examples=150, deadline=None)
@given(st.lists(FACTS, max_size=30), st.lists(st.integers(0, 4), max_size=3), st.sampled_from([None, 3]), OPS)
def test_a_restored_store_behaves_like_the_original(facts: list[tuple[int, int, int]], pos: list[int],
                                                     below: int | None, ops: list[tuple[str, object]]) -> None:
    """Every operation gives the same answer on the original and the restored store,
    and after each one both hold the same facts, indexes and counts; a store written
    again before or after its entries are built reads back the same."""
    original = FactStore(facts, index_below=below)
    for p in pos:
        original.need_pos(p)
    restored = FactStore.from_lists(original.to_lists())
    for op, arg in ops:
        if op == "add":
            assert restored.add(arg) == original.add(arg)  # type: ignore[arg-type]
        elif op == "remove":
            assert restored.remove(arg) == original.remove(arg)  # type: ignore[arg-type]
        elif op == "need_pos":
            restored.need_pos(arg)  # type: ignore[arg-type]
            original.need_pos(arg)  # type: ignore[arg-type]
        elif op == "get":
            assert index_width(restored.spo, arg) == index_width(original.spo, arg)  # type: ignore[arg-type]
            assert (arg in restored.spo) == (arg in original.spo) and len(restored.spo) == len(original.spo)
            a, b = restored.spo.get(arg), original.spo.get(arg)  # type: ignore[call-overload]
            assert (None if a is None else dict(a)) == (None if b is None else dict(b))
        elif op == "shared_pos":
            a, b = restored.shared_pos(arg), original.shared_pos(arg)  # type: ignore[arg-type]
            assert (None if a is None else dict(a)) == (None if b is None else dict(b))
        else:  # written and read again (the scan counts of shared_pos are not written)
            scans = restored.scans
            restored = FactStore.from_lists(restored.to_lists())
            restored.scans = dict(scans)
        assert sorted(restored.spo) == sorted(original.spo)
    assert _view(restored) == _view(original)
    assert _view(FactStore.from_lists(restored.to_lists())) == _view(original)


def test_a_restored_store_builds_only_the_entries_read() -> None:
    """Restoring a store builds no per-predicate index; reading one predicate builds
    that one only (the rest stay in their written form until read)."""
    original = FactStore([(s, p, s + 1) for s in range(50) for p in range(4)])
    original.need_pos(2)
    restored = FactStore.from_lists(original.to_lists())
    assert sorted(getattr(restored.spo, "raw", {})) == [0, 1, 2, 3]
    assert index_width(restored.spo, 1) == 50
    assert dict(restored.spo[1]) == {s: {s + 1} for s in range(50)}
    assert sorted(getattr(restored.spo, "raw", {})) == [0, 2, 3]
    assert dict(restored.pos.get(2)) == {s + 1: {s} for s in range(50)}
    assert getattr(restored.pos, "raw", None) == {}


def _written() -> tuple[object, ...]:
    original = FactStore([(s, p, (s * 7 + p) % 40) for s in range(40) for p in range(3)])
    original.need_pos(1)
    return original.to_lists()


def test_the_written_form_holds_integer_buffers_and_reads_back_equal() -> None:
    """The facts and each index entry are written as buffers of machine ints (bytes, no
    tuple per fact, no list per key), with the machine's layout; they read back equal."""
    parts = _written()
    layout, (split, flat), spo, pos = parts[:4]
    assert layout == LAYOUT and split is False and isinstance(flat, bytes)
    assert all(isinstance(c, bytes) for entry in (*spo.values(), *pos.values()) for c in entry)  # type: ignore[attr-defined]
    restored = FactStore.from_lists(parts)
    assert set(restored.facts) == {(s, p, (s * 7 + p) % 40) for s in range(40) for p in range(3)}
    assert dict(restored.spo[2]) == {s: {(s * 7 + 2) % 40} for s in range(40)}


def _damaged(how: str) -> tuple[object, ...]:
    parts = list(_written())
    split, flat = parts[1]  # type: ignore[misc]
    spo: dict[int, tuple[bytes, bytes, bytes]] = dict(parts[2])  # type: ignore[call-overload]
    keys, counts, vals = spo[0]
    if how == "other-layout":  # a state written by a machine of another byte order or int width
        parts[0] = "big-8" if LAYOUT != "big-8" else "little-8"
    elif how == "truncated-facts":
        parts[1] = (split, flat[:-1])
    elif how == "facts-not-whole-triples":
        parts[1] = (split, flat[:-4])  # one int short of whole triples
    elif how == "counts-disagree":
        spo[0] = (keys, counts[:-4] + array("i", [1000]).tobytes(), vals)
    elif how == "a-key-dropped":
        spo[0] = (keys[:-4], counts, vals)
    elif how == "a-value-dropped":
        spo[0] = (keys, counts, vals[:-4])
    elif how == "not-bytes":
        spo[0] = (list(keys), counts, vals)  # type: ignore[assignment]
    elif how == "older-layout":  # format 3: (keys, value lists)
        spo[0] = ([0, 1], [[1], [2]])  # type: ignore[assignment]
    parts[2] = spo
    return tuple(parts)


@pytest.mark.parametrize("how", ["other-layout", "truncated-facts", "facts-not-whole-triples", "counts-disagree",
                                 "a-key-dropped", "a-value-dropped", "not-bytes", "older-layout"])
def test_a_damaged_or_foreign_written_form_is_refused(how: str) -> None:
    """A written form whose buffers do not agree (cut, a count changed, a key or value
    dropped), of another machine's integer layout, or of the older layout is refused
    with ValueError when restored -- never read as other facts."""
    with pytest.raises(ValueError):
        FactStore.from_lists(_damaged(how))
