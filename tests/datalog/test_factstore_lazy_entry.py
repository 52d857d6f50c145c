"""A restored index entry (one predicate's ``k -> set(v)``) builds each key's set only
when that key is read, and otherwise behaves exactly like the ``defaultdict(set)`` that
was written, under any sequence of reads and changes, and is written back equal."""

from __future__ import annotations

import copy
import pickle
from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from reckon.datalog._factstore import FactStore, _pack_entry, _unpack_entry

KEYS = st.integers(0, 7)
OPS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["get", "getitem", "add", "pop", "del", "setdefault", "set", "in"]), KEYS),
    st.tuples(st.sampled_from(["items", "values", "iter", "dict", "eq", "len", "copy", "pickle", "dump",
                               "clear", "popitem", "update"]), st.just(0)),
), max_size=20)


def _restored(facts: list[tuple[int, int, int]]) -> tuple[FactStore, FactStore]:
    original = FactStore(facts)
    return original, FactStore.from_lists(original.to_lists())


def _unbuilt(d: dict[int, set[int]]) -> set[int]:
    """Keys whose set is not built yet (C-level read of the underlying dict)."""
    return {k for k, v in dict.items(d) if not isinstance(v, set)}


def test_reading_a_key_builds_that_key_only() -> None:
    _, restored = _restored([(s, 1, o) for s in range(100) for o in (s, s + 1)])
    sp = restored.spo[1]
    assert len(sp) == 100 and 5 in sp and 500 not in sp and sorted(sp) == list(range(100))
    assert _unbuilt(sp) == set(range(100))  # keys, len, in, iteration build nothing
    assert sp.get(5) == {5, 6} and sp[7] == {7, 8}
    assert sp.get(500) is None and sp.get(500, "x") == "x" and 500 not in sp
    assert _unbuilt(sp) == set(range(100)) - {5, 7}
    assert restored.add((9, 1, 1000))  # a maintenance write (through [])
    assert restored.spo[1][9] == {9, 10, 1000}
    assert _unbuilt(sp) == set(range(100)) - {5, 7, 9}
    again = FactStore.from_lists(restored.to_lists())  # written back without building the rest
    assert _unbuilt(sp) == set(range(100)) - {5, 7, 9}
    assert again.spo[1][9] == {9, 10, 1000} and again.spo[1][50] == {50, 51}


def test_an_entry_whose_keys_are_all_read_is_a_plain_defaultdict_again() -> None:
    _, restored = _restored([(s, 1, s) for s in range(3)])
    sp = restored.spo[1]
    for k in range(3):
        assert sp[k] == {k}
    assert type(sp).get is dict.get and type(sp).__getitem__ is dict.__getitem__  # C-level reads
    assert isinstance(sp, defaultdict) and sp[5] == set() and 5 in sp


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(KEYS, KEYS), max_size=25), OPS)
def test_a_restored_entry_behaves_like_the_written_one(pairs: list[tuple[int, int]],
                                                       ops: list[tuple[str, int]]) -> None:
    original, restored = _restored([(s, 1, o) for s, o in pairs])
    if not pairs:
        assert 1 not in restored.spo
        return
    a, b = original.spo[1], restored.spo[1]
    for op, k in ops:
        if op == "get":
            assert b.get(k) == a.get(k) and b.get(k, "d") == a.get(k, "d")
        elif op == "getitem":
            assert b[k] == a[k]
        elif op == "add":
            a[k].add(99)
            b[k].add(99)
        elif op == "pop":
            assert b.pop(k, "d") == a.pop(k, "d")
        elif op == "del":
            if k in a:
                del a[k]
                del b[k]
        elif op == "setdefault":
            assert b.setdefault(k, {42}) == a.setdefault(k, {42})
        elif op == "set":
            a[k] = {k, 77}
            b[k] = {k, 77}
        elif op == "in":
            assert (k in b) == (k in a)
        elif op == "items":
            assert sorted(b.items()) == sorted(a.items())
        elif op == "values":
            assert sorted(map(sorted, b.values())) == sorted(map(sorted, a.values()))
        elif op == "iter":
            assert list(b) == list(a) and list(b.keys()) == list(a.keys())
        elif op == "dict":
            assert dict(b) == dict(a) and {**b} == {**a}
        elif op == "eq":
            assert b == a and a == b and not (b != a)
        elif op == "len":
            assert len(b) == len(a) and bool(b) == bool(a)
        elif op == "copy":
            assert dict(b.copy()) == dict(a) and dict(copy.copy(b)) == dict(a)
        elif op == "pickle":
            assert dict(pickle.loads(pickle.dumps(b))) == dict(a)
        elif op == "dump":  # the entry written (as FactStore.to_lists does) and read again
            b = _unpack_entry(b.packed() if hasattr(b, "packed") else _pack_entry(b))
        elif op == "clear":
            a.clear()
            b.clear()
        elif op == "popitem":
            if a:
                assert b.popitem() == a.popitem()
        else:
            a.update({k: {1}})
            b.update({k: {1}})
        assert dict(b) == dict(a)


def test_threads_reading_one_restored_entry_build_each_key_once() -> None:
    """Readers racing over the keys of one restored entry all get the written sets, and
    the entry turns plain only once every key is built (no placeholder left behind)."""
    import sys
    import threading

    n = 3000
    _, restored = _restored([(s, 1, s + 1) for s in range(n)])
    sp = restored.spo[1]
    errors: list[object] = []

    def read(offset: int) -> None:
        try:
            for k in range(n):
                j = (k + offset) % n
                if sp.get(j) != {j + 1} or sp[j] != {j + 1}:
                    errors.append(j)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=read, args=(i * 7,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    assert _unbuilt(sp) == set() and dict(sp) == {s: {s + 1} for s in range(n)}
    assert type(sp).get is dict.get  # plain again
