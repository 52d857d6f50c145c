"""A fact store restored from its written form (``FactStore.from_lists``, what a fresh
process does with the reasoner state file) behaves exactly like the one written, under
any sequence of reads and changes -- although its per-predicate indexes are only built
when first read."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from reckon.datalog._factstore import FactStore, index_width

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
