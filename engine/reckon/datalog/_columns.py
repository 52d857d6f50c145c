"""The reasoner state in columns (format 6), and the containers a restore hands out:
nothing is decoded until it is read.

Private support for :mod:`reckon.datalog.evaluate` and :mod:`reckon.datalog._factstore`.
A fresh process restoring a big tenant's reasoner (100k memories: ~250k terms, ~800k
facts, ~200k ranks) used to build every term object, every fact tuple and every rank
entry before its first write, which then read a few dozen of them. Here the state is
kept as it was written -- a few flat buffers -- and read in place:

* **facts** (:class:`FactColumns`, :class:`LazyFacts`): per predicate, the sorted keys
  ``s << 32 | o`` (``array("Q")``); a fact is found by binary search, changes since the
  restore live in two small sets (added, removed);
* **ranks** (:class:`RankColumns`, :class:`LazyRanks`): the same keys with each fact's
  rank beside it; changes live in the ``dict`` itself;
* **terms** (:class:`TermColumns`, :class:`LazyTerms`, :class:`LazyIds`): IRIs and literal
  values as one UTF-8 blob each with offsets; a term is decoded when its id is read; a
  term's id is found through a table of 64-bit hashes of its written form (CRC-32 and
  Adler-32 of the bytes: stable across processes, unlike :func:`hash`), sorted, each
  candidate checked against the written bytes.

Reads cost a binary search (~1 µs) instead of a hash lookup (~50 ns): nothing for a
write's maintenance, which reads a few hundred facts. A large change (a bulk load)
first builds the plain containers (:meth:`LazyFacts.materialize`, ...). Writing merges
the changes into the columns with numpy (imported only then), so a state restored and
written again is never decoded whole.

The columns hold C integers of fixed widths (:data:`COLUMNS_LAYOUT`): a state written on
a machine of another byte order or width is refused, not misread.
"""

from __future__ import annotations

import sys
import threading
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, MutableSet
from itertools import accumulate, chain
from typing import Any

from pyoxigraph import BlankNode, Literal, NamedNode

__all__ = [
    "COLUMNS_LAYOUT", "FactColumns", "Ids", "LazyFacts", "LazyIds", "LazyRanks", "LazyTerms", "RankColumns",
    "Ranks", "TermColumns", "Terms", "fact_columns", "merge_sorted", "rank_columns", "term_key",
]

Fact = tuple[int, int, int]

IRI, BNODE, LITERAL, TRIPLE = 0, 1, 2, 3  # as reckon.datalog._factstore (which imports this module)

COLUMNS_LAYOUT = (f"{sys.byteorder}-i{array('i').itemsize}-q{array('q').itemsize}-Q{array('Q').itemsize}")
"""Byte order and widths of the integer columns of format 6 (ids: C ``int``, ``array("i")``,
below 2**31; offsets ``array("q")``; keys and hashes ``array("Q")``, 64 bits)."""

_LOW = (1 << 32) - 1
_MISS: Any = object()
_SWAP = threading.Lock()
"""Held while a lazy container turns into its plain class (every entry decoded)."""


def _ints(code: str, b: object) -> array[int]:
    """The ``array(code)`` of a written buffer.

    :raises ValueError: when ``b`` is not bytes of whole items."""
    if not isinstance(b, bytes):
        raise ValueError(f"a column of type {type(b).__name__}, not bytes")
    a = array(code)
    try:
        a.frombytes(b)
    except ValueError as e:
        raise ValueError(f"a column that is not whole items ({e})") from e
    return a


def _view(code: str, b: object) -> Any:
    """A written buffer read in place as C integers (``memoryview.cast``: no copy).

    :raises ValueError: when ``b`` is not bytes of whole items."""
    if not isinstance(b, bytes):
        raise ValueError(f"a column of type {type(b).__name__}, not bytes")
    try:
        return memoryview(b).cast(code)  # type: ignore[call-overload]
    except TypeError as e:
        raise ValueError(f"a column that is not whole items ({e})") from e


NUMPY_FROM = 50_000
"""Size (facts, ranks or terms to write) from which the writers sort with numpy; below
it they use Python's sort, unless numpy is imported already (the same bytes either way):
a small tenant's one-write CLI command imports no numpy (~0.1 s)."""

AUTO: Any = object()
"""The ``np`` argument of the writers: choose by :func:`numpy_for`."""


def numpy_for(n: int) -> Any:
    """numpy when it is imported already or ``n`` reaches :data:`NUMPY_FROM`, else ``None``."""
    np = sys.modules.get("numpy")
    if np is None and n >= NUMPY_FROM:
        import numpy as np
    return np


def _py_columns(by_p: dict[int, list[Any]], with_values: bool = False) -> tuple[bytes, ...]:
    """Predicates, ends and keys (and values) of ``p -> [key, ...]`` (or ``[(key, value),
    ...]``), sorted by predicate then key, with Python's sort."""
    preds = sorted(by_p)
    keys, ends, vals = array("Q"), array("q", (0,)), array("i")
    for p in preds:
        got = sorted(by_p[p])
        if with_values:
            keys.extend(k for k, _ in got)
            vals.extend(v for _, v in got)
        else:
            keys.extend(got)
        ends.append(len(keys))
    out = (array("i", preds).tobytes(), ends.tobytes(), keys.tobytes())
    return (*out, vals.tobytes()) if with_values else out


def _hash(key: bytes) -> int:
    """A 64-bit hash of a term's written form, the same in every process."""
    return (zlib.crc32(key) << 32) | zlib.adler32(key)


# --------------------------------------------------------------------------- facts

class FactColumns:
    """One fact store's facts as written (format 6): the predicates present (ascending
    ids), where each one's keys end, and the keys ``s << 32 | o``, ascending within a
    predicate. Read-only.

    :raises ValueError: when the columns disagree (sizes, order of the predicates)."""

    __slots__ = ("keys", "spans", "written")

    def __init__(self, written: tuple[bytes, bytes, bytes]) -> None:
        preds_b, ends_b, keys_b = written
        preds, ends, keys = _ints("i", preds_b), _ints("q", ends_b), _view("Q", keys_b)
        if len(ends) != len(preds) + 1 or ends[0] != 0 or ends[-1] != len(keys):
            raise ValueError("fact columns whose sizes disagree")
        if any(a >= b for a, b in zip(ends, ends[1:])) or any(a >= b for a, b in zip(preds, preds[1:])):
            raise ValueError("fact columns out of order")
        self.written = written
        self.keys = keys
        self.spans: dict[int, tuple[int, int]] = dict(zip(preds, zip(ends, ends[1:])))

    def __len__(self) -> int:
        return len(self.keys)

    def find(self, s: int, p: int, o: int) -> int:
        """Row of the fact ``(s, p, o)``, or -1."""
        span = self.spans.get(p)
        if span is None:
            return -1
        k = (s << 32) | o
        lo, hi = span
        keys = self.keys
        i = bisect_left(keys, k, lo, hi)
        return i if i < hi and keys[i] == k else -1

    def __iter__(self) -> Iterator[Fact]:
        keys = self.keys
        for p, (lo, hi) in self.spans.items():
            for k in keys[lo:hi]:
                yield (k >> 32, p, k & _LOW)

    def predicates(self) -> set[int]:
        return set(self.spans)


class LazyFacts(MutableSet[Fact]):
    """A fact store's set of facts restored from :class:`FactColumns`: the written facts
    (found by binary search) minus those removed since, plus those added since (two
    small sets). The set operations of :class:`collections.abc.MutableSet` work (through
    iteration); C code taking it for a ``set`` never does (it is not one), so a use
    this class does not serve fails loudly instead of reading half of it."""

    __slots__ = ("_added", "_cols", "_gone")

    def __init__(self, cols: FactColumns) -> None:
        self._cols = cols
        self._added: set[Fact] = set()
        self._gone: set[Fact] = set()

    def __contains__(self, f: object) -> bool:
        if f in self._added:
            return True
        if self._gone and f in self._gone:
            return False
        try:
            fact: Fact = f  # type: ignore[assignment]
            return self._cols.find(*fact) >= 0
        except (TypeError, ValueError, OverflowError):
            return False

    def __len__(self) -> int:
        return len(self._cols) - len(self._gone) + len(self._added)

    def __iter__(self) -> Iterator[Fact]:
        gone = self._gone
        raw: Iterable[Fact] = (f for f in self._cols if f not in gone) if gone else self._cols
        return chain(raw, list(self._added))

    def add(self, f: Fact) -> None:
        if f in self._gone:
            self._gone.discard(f)
        elif f not in self._added and self._cols.find(*f) < 0:
            self._added.add(f)

    def discard(self, f: Fact) -> None:
        if f in self._added:
            self._added.discard(f)
        elif f not in self._gone and self._cols.find(*f) >= 0:
            self._gone.add(f)

    def update(self, *others: Iterable[Fact]) -> None:
        for other in others:
            for f in other:
                self.add(f)

    def update_new(self, facts: Iterable[Fact]) -> None:
        """Add facts the caller knows are not in the set (:meth:`FactStore.add_all
        <reckon.datalog._factstore.FactStore.add_all>`)."""
        gone = self._gone
        if not gone:
            self._added.update(facts)
            return
        for f in facts:
            if f in gone:
                gone.discard(f)
            else:
                self._added.add(f)

    def difference_update(self, *others: Iterable[Fact]) -> None:
        for other in others:
            for f in list(other):
                self.discard(f)

    @classmethod
    def _from_iterable(cls, it: Iterable[Any]) -> set[Any]:  # the Set operators' results: plain sets
        return set(it)

    def copy(self) -> LazyFacts:
        out = LazyFacts(self._cols)
        out._added, out._gone = set(self._added), set(self._gone)
        return out

    def changed(self) -> bool:
        """Whether anything was added or removed since the restore."""
        return bool(self._added or self._gone)

    def changed_predicates(self) -> set[int]:
        """The predicates of the facts added or removed since the restore."""
        return {f[1] for f in self._added} | {f[1] for f in self._gone}

    def materialize(self) -> set[Fact]:
        """A plain ``set`` of the same facts."""
        out = set(self._cols)
        out.difference_update(self._gone)
        out.update(self._added)
        return out

    def predicates(self) -> set[int]:
        """The predicates of the facts held."""
        out = {p for p in self._cols.spans}
        if self._gone:  # a predicate whose every fact was removed
            for p in {f[1] for f in self._gone}:
                lo, hi = self._cols.spans[p]
                if hi - lo <= sum(1 for f in self._gone if f[1] == p):
                    out.discard(p)
        out.update(f[1] for f in self._added)
        return out

    def written(self) -> tuple[bytes, bytes, bytes]:
        """The columns of the facts held now (the restored ones when nothing changed)."""
        return fact_columns(self)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyFacts({len(self)} facts, {len(self._added)} added, {len(self._gone)} removed)"


def fact_columns(facts: Iterable[Fact], np: Any = AUTO) -> tuple[bytes, bytes, bytes]:
    """The columns (format 6) of ``facts``: a :class:`LazyFacts` is merged with its
    changes per predicate (predicates without a change are copied as written), any other
    iterable of distinct facts is sorted whole. ``np``: numpy, or ``None`` for Python's
    sort (default: :func:`numpy_for` the number of facts)."""
    if isinstance(facts, LazyFacts) and not facts.changed():
        return facts._cols.written  # noqa: SLF001 - this module's own class
    if np is AUTO:
        np = numpy_for(len(facts) if isinstance(facts, (set, LazyFacts)) else NUMPY_FROM)
    if np is None:
        by_p: dict[int, list[int]] = {}
        for s, p, o in facts:
            by_p.setdefault(p, []).append((s << 32) | o)
        return _py_columns(by_p)  # type: ignore[return-value]
    if isinstance(facts, LazyFacts):
        cols = facts._cols  # noqa: SLF001
        gone_by: dict[int, list[int]] = {}
        added_by: dict[int, list[int]] = {}
        for s, p, o in facts._gone:  # noqa: SLF001
            gone_by.setdefault(p, []).append((s << 32) | o)
        for s, p, o in facts._added:  # noqa: SLF001
            added_by.setdefault(p, []).append((s << 32) | o)
        keys = np.frombuffer(cols.written[2], dtype=np.uint64)
        preds: list[int] = []
        parts: list[Any] = []
        for p in sorted(set(cols.spans) | set(added_by)):
            lo, hi = cols.spans.get(p, (0, 0))
            a = keys[lo:hi]
            if p in gone_by:
                g = np.sort(np.array(gone_by[p], dtype=np.uint64))
                a = np.delete(a, np.searchsorted(a, g))  # each removed key is in the column
            if p in added_by:
                a = merge_sorted(np, a, np.array(added_by[p], dtype=np.uint64))
            if len(a):
                preds.append(p)
                parts.append(a)
        ends = np.cumsum([0] + [len(a) for a in parts], dtype=np.int64)
        flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
        return array("i", preds).tobytes(), ends.tobytes(), flat.astype(np.uint64).tobytes()
    ints = array("i", chain.from_iterable(facts))
    rows = np.frombuffer(ints.tobytes(), dtype=np.int32).reshape(-1, 3).astype(np.int64)
    out: tuple[bytes, bytes, bytes] = _sorted_columns(
        np, rows[:, 1], (rows[:, 0].astype(np.uint64) << np.uint64(32)) | rows[:, 2].astype(np.uint64))
    return out


def merge_sorted(np: Any, a: Any, new: Any) -> Any:
    """The ascending keys ``a`` with the keys ``new`` (any order) inserted, each once:
    linear in ``len(a)`` (no sort of the whole)."""
    new = np.sort(new)
    if len(new) > 1:
        new = new[np.concatenate(([True], new[1:] != new[:-1]))]
    at = np.searchsorted(a, new)
    fresh = (at >= len(a)) | (a[np.minimum(at, max(len(a) - 1, 0))] != new) if len(a) else np.ones(len(new), bool)
    return np.insert(a, at[fresh], new[fresh])


def _sorted_columns(np: Any, preds: Any, keys: Any, values: Any = None) -> Any:
    """Predicates, ends and keys (and values, when given) sorted by predicate then key."""
    order = np.lexsort((keys, preds))
    preds, keys = preds[order], keys[order]
    present, starts = np.unique(preds, return_index=True)
    ends = np.append(starts, len(preds)).astype(np.int64)
    out = (present.astype(np.int32).tobytes(), ends.tobytes(), keys.astype(np.uint64).tobytes())
    if values is None:
        return out
    return (*out, values[order].astype(np.int32).tobytes())


# --------------------------------------------------------------------------- ranks

class RankColumns(FactColumns):
    """:class:`FactColumns` with each fact's rank beside its key (``array("i")``)."""

    __slots__ = ("values", "written_values")

    def __init__(self, written: tuple[bytes, bytes, bytes, bytes]) -> None:
        super().__init__(written[:3])
        self.written_values = written[3]
        self.values = _view("i", written[3])
        if len(self.values) != len(self.keys):
            raise ValueError("rank columns whose sizes disagree")

    def value(self, f: object, default: Any) -> Any:
        try:
            fact: Fact = f  # type: ignore[assignment]
            i = self.find(*fact)
        except (TypeError, ValueError, OverflowError):
            return default
        return default if i < 0 else self.values[i]

    def items(self) -> Iterator[tuple[Fact, int]]:
        return zip(iter(self), self.values)


class Ranks(dict[Fact, int]):
    """Fact -> rank: a ``dict`` subclass, which the cyclic garbage collector never untracks.

    CPython's full collections untrack an exact ``dict`` whose keys and values hold no
    container (fact tuples of ints, int ranks), and the next store of a fresh fact tuple
    tracks it again as a *new* object: every later young collection then traverses all
    its entries (measured on LUBM(10): one dict of 1.8M facts, 0.13-0.2 s of the 0.2-0.3 s
    of a 100-fact deletion, paid when ``apply`` turns the collector back on). A subclass
    instance stays tracked, so it stays in the oldest generation. (The slots serve
    :class:`LazyRanks`, which turns into this class.)"""

    __slots__ = ("_cols", "_gone")


class LazyRanks(Ranks):
    """:class:`Ranks` restored from :class:`RankColumns`: a fact's rank is the one set
    since the restore (the ``dict`` itself: ``[]=`` and ``update`` are the ``dict``'s
    own), else the written one unless removed since (``pop``, ``del``). Reads that need
    every entry (``len``, iteration, ``items``, ``==``, ...) decode them all first and
    the object becomes a plain :class:`Ranks`."""

    __slots__ = ()

    _cols: RankColumns
    _gone: set[Fact]

    @staticmethod
    def restored(cols: RankColumns) -> LazyRanks:
        out = LazyRanks()
        out._cols, out._gone = cols, set()
        return out

    def get(self, f: Fact, default: Any = None) -> Any:
        v = dict.get(self, f, _MISS)
        if v is not _MISS:
            return v
        if f in self._gone:
            return default
        return self._cols.value(f, default)

    def __getitem__(self, f: Fact) -> int:
        v = LazyRanks.get(self, f, _MISS)
        if v is _MISS:
            raise KeyError(f)
        return v  # type: ignore[no-any-return]

    def __contains__(self, f: object) -> bool:
        return LazyRanks.get(self, f, _MISS) is not _MISS  # type: ignore[arg-type]

    def pop(self, f: Fact, *default: Any) -> Any:
        v = dict.pop(self, f, _MISS)
        if f not in self._gone:
            raw = self._cols.value(f, _MISS)
            if raw is not _MISS:
                self._gone.add(f)
                if v is _MISS:
                    v = raw
        if v is _MISS:
            if default:
                return default[0]
            raise KeyError(f)
        return v

    def __delitem__(self, f: Fact) -> None:
        LazyRanks.pop(self, f)

    def setdefault(self, f: Fact, default: Any = None) -> Any:
        v = LazyRanks.get(self, f, _MISS)
        if v is _MISS:
            dict.__setitem__(self, f, default)
            return default
        return v

    def written(self) -> tuple[bytes, bytes, bytes, bytes]:
        """The columns of the ranks held now, without decoding them."""
        return rank_columns(self)

    def materialize(self) -> None:
        """Decode every written rank into the ``dict``; the object becomes a plain :class:`Ranks`."""
        with _SWAP:
            if type(self) is not LazyRanks:
                return
            cols, gone = self._cols, self._gone
            setdefault = dict.setdefault
            for f, r in cols.items():
                if f not in gone:
                    setdefault(self, f, r)
            self.__class__ = Ranks  # type: ignore[assignment]
            self._cols = self._gone = None  # type: ignore[assignment]

    def _whole(self) -> Ranks:
        LazyRanks.materialize(self)
        return self

    def __len__(self) -> int:
        return len(self._whole())

    def __iter__(self) -> Iterator[Fact]:
        return iter(self._whole())

    def keys(self) -> Any:
        return self._whole().keys()

    def values(self) -> Any:
        return self._whole().values()

    def items(self) -> Any:
        return self._whole().items()

    def copy(self) -> dict[Fact, int]:
        return dict(self._whole())

    def popitem(self) -> tuple[Fact, int]:
        return self._whole().popitem()

    def clear(self) -> None:
        self._whole().clear()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyRanks):
            other.materialize()
        return dict.__eq__(self._whole(), other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return dict.__repr__(self._whole())

    def __reduce__(self) -> Any:
        return (dict, (list(self._whole().items()),))


def rank_columns(ranks: dict[Fact, int], np: Any = AUTO) -> tuple[bytes, bytes, bytes, bytes]:
    """The columns (format 6) of a fact -> rank map: a :class:`LazyRanks` is merged with
    its changes (the written columns reused when there are none). ``np`` as
    :func:`fact_columns`."""
    lazy = isinstance(ranks, LazyRanks)
    if lazy:
        cols, gone = ranks._cols, ranks._gone  # type: ignore[attr-defined]  # noqa: SLF001 - this module's own class
        if not gone and not dict.__len__(ranks):
            return (*cols.written, cols.written_values)
    if np is AUTO:
        np = numpy_for((len(cols) if lazy else 0) + dict.__len__(ranks))
    if np is None:
        current: dict[Fact, int] = {}
        if lazy:
            current = {f: r for f, r in cols.items() if f not in gone}
        current.update(dict.items(ranks))
        by_p: dict[int, list[tuple[int, int]]] = {}
        for (s, p, o), r in current.items():
            by_p.setdefault(p, []).append(((s << 32) | o, r))
        return _py_columns(by_p, with_values=True)  # type: ignore[return-value]
    if lazy:
        keys = np.frombuffer(cols.written[2], dtype=np.uint64)
        vals = np.frombuffer(cols.written_values, dtype=np.int32)
        preds = np.repeat(np.array(list(cols.spans), dtype=np.int64),
                          [hi - lo for lo, hi in cols.spans.values()])
        keep = np.ones(len(keys), dtype=bool)
        for f in chain(gone, dict.keys(ranks)):  # removed, or set anew since
            i = cols.find(*f)
            if i >= 0:
                keep[i] = False
        new = list(dict.items(ranks))
        ints = array("i", chain.from_iterable(f for f, _ in new))
        rows = np.frombuffer(ints.tobytes(), dtype=np.int32).reshape(-1, 3).astype(np.int64)
        nk = (rows[:, 0].astype(np.uint64) << np.uint64(32)) | rows[:, 2].astype(np.uint64)
        nv = np.array([r for _, r in new], dtype=np.int64)
        merged: tuple[bytes, bytes, bytes, bytes] = _sorted_columns(
            np, np.concatenate((preds[keep], rows[:, 1])), np.concatenate((keys[keep], nk)),
            np.concatenate((vals[keep].astype(np.int64), nv)))
        return merged
    items = list(dict.items(ranks))
    ints = array("i", chain.from_iterable(f for f, _ in items))
    rows = np.frombuffer(ints.tobytes(), dtype=np.int32).reshape(-1, 3).astype(np.int64)
    keys = (rows[:, 0].astype(np.uint64) << np.uint64(32)) | rows[:, 2].astype(np.uint64)
    return _sorted_columns(np, rows[:, 1], keys, np.array([r for _, r in items], dtype=np.int64))  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- terms

def term_key(term: object) -> bytes | None:
    """The written form of an IRI, blank node or literal that the hash table of
    :class:`TermColumns` is keyed by (``None`` for anything else: triple terms are
    never looked up there)."""
    if isinstance(term, NamedNode):
        return b"<" + term.value.encode("utf-8", "surrogatepass")
    if isinstance(term, Literal):
        lang = term.language
        if lang:
            d = term.direction
            tail = "@" + lang + ("" if d is None else "--" + str(d.value))
        else:
            tail = term.datatype.value
        return b'"' + term.value.encode("utf-8", "surrogatepass") + b"\x00" + tail.encode("utf-8")
    if isinstance(term, BlankNode):
        return b"_" + term.value.encode("utf-8", "surrogatepass")
    return None


class TermColumns:
    """A term dictionary as written (format 6): per id its kind and its row in its
    kind's column; names (IRIs, blank nodes) and literal values as UTF-8 blobs with
    offsets; per literal its datatype's number (-1: language-tagged, the tag in
    ``langs``); and the hash table (``hashes`` ascending, ``hash_ids`` beside them) of
    every name and literal by :func:`term_key`. Read-only.

    :raises ValueError: when the columns disagree in size."""

    __slots__ = ("dt_keys", "dt_nodes", "dts", "hash_ids", "hashes", "kinds", "langs", "lits", "lits_off", "n",
                 "names", "names_off", "rows", "written")

    def __init__(self, written: tuple[Any, ...], kinds: bytes,
                 direction: Callable[[str], Any]) -> None:
        (rows_b, names, names_off_b, lits, lits_off_b, dts_b, dt_names, langs, hashes_b, hash_ids_b) = written
        if not isinstance(names, bytes) or not isinstance(lits, bytes) or not isinstance(langs, dict):
            raise ValueError("term columns of another shape")
        self.written = written
        self.kinds = kinds
        self.n = len(kinds)
        self.rows = _view("i", rows_b)
        self.names: bytes = names
        self.lits: bytes = lits
        self.names_off, self.lits_off = _view("q", names_off_b), _view("q", lits_off_b)
        self.dts = _view("i", dts_b)
        self.hashes, self.hash_ids = _view("Q", hashes_b), _view("i", hash_ids_b)
        n_names = kinds.count(IRI) + kinds.count(BNODE)
        n_lits = kinds.count(LITERAL)
        if (len(self.rows) != self.n or len(self.names_off) != n_names + 1 or len(self.lits_off) != n_lits + 1
                or len(self.dts) != n_lits or len(self.hashes) != len(self.hash_ids)
                or len(self.hashes) != n_names + n_lits
                or self.names_off[-1] != len(names) or self.lits_off[-1] != len(lits)):
            raise ValueError("term columns whose sizes disagree")
        self.dt_nodes = [NamedNode(d) for d in dt_names]
        self.dt_keys = [d.encode("utf-8") for d in dt_names]
        self.langs: dict[int, tuple[Any, ...]] = {
            j: (lang, None if d is None else direction(d)) for j, (lang, d) in langs.items()}

    def _name(self, r: int) -> bytes:
        off = self.names_off
        return self.names[off[r]:off[r + 1]]

    def _lit(self, r: int) -> bytes:
        off = self.lits_off
        return self.lits[off[r]:off[r + 1]]

    def key(self, i: int) -> bytes | None:
        """:func:`term_key` of term ``i`` from its written form (``None``: a triple term)."""
        k = self.kinds[i]
        r = self.rows[i]
        if k == IRI:
            return b"<" + self._name(r)
        if k == BNODE:
            return b"_" + self._name(r)
        if k == LITERAL:
            d = self.dts[r]
            if d >= 0:
                tail = self.dt_keys[d]
            else:
                lang, direction = self.langs[r]
                tail = ("@" + lang + ("" if direction is None else "--" + str(direction.value))).encode("utf-8")
            out: bytes = b'"' + self._lit(r) + b"\x00" + tail
            return out
        return None

    def decode(self, i: int) -> object:
        """Term ``i`` (an IRI, blank node or literal; triple terms are decoded by the restore)."""
        k = self.kinds[i]
        r = self.rows[i]
        if k == IRI:
            return NamedNode(self._name(r).decode("utf-8", "surrogatepass"))
        if k == BNODE:
            return BlankNode(self._name(r).decode("utf-8", "surrogatepass"))
        if k == LITERAL:
            value = self._lit(r).decode("utf-8", "surrogatepass")
            d = self.dts[r]
            if d >= 0:
                return Literal(value, datatype=self.dt_nodes[d])
            lang, direction = self.langs[r]
            return Literal(value, language=lang, direction=direction) if direction else Literal(value, language=lang)
        raise ValueError(f"term {i} is a triple term")

    def find(self, term: object) -> int | None:
        """The smallest id whose written form is ``term``'s, or ``None``."""
        key = term_key(term)
        if key is None:
            return None
        h = _hash(key)
        hashes, ids = self.hashes, self.hash_ids
        j = bisect_left(hashes, h)
        while j < len(hashes) and hashes[j] == h:
            i = ids[j]
            if self.key(i) == key:
                return int(i)
            j += 1
        return None


class Terms(list[object]):
    """A term dictionary's id -> term list (:attr:`TermDictionary.terms
    <reckon.datalog._factstore.TermDictionary.terms>`). (The slot serves
    :class:`LazyTerms`, which turns into this class.)"""

    __slots__ = ("_cols",)


class LazyTerms(Terms):
    """:class:`Terms` of a restored dictionary: an id not read yet holds ``None`` and is
    decoded from :class:`TermColumns` when first read (``[]``). Reads that need every term
    (iteration, ``in``, ``index``, ``copy``, ``==``, slices decode only what they cover)
    decode them all and the object becomes a plain :class:`Terms`."""

    __slots__ = ()

    _cols: TermColumns

    def __getitem__(self, i: Any) -> Any:
        t = list.__getitem__(self, i)
        if t is None:
            cols = self._cols
            if cols is None:  # materialized meanwhile by another thread
                return list.__getitem__(self, i)
            t = cols.decode(i if i >= 0 else i + len(self))
            list.__setitem__(self, i, t)
            return t
        if isinstance(i, slice):
            return [LazyTerms.__getitem__(self, j) for j in range(*i.indices(len(self)))]
        return t

    def materialize(self) -> None:
        """Decode every term; the object becomes a plain :class:`Terms`."""
        with _SWAP:
            if type(self) is not LazyTerms:
                return
            cols = self._cols
            for i in range(min(cols.n, len(self))):
                if list.__getitem__(self, i) is None:
                    list.__setitem__(self, i, cols.decode(i))
            self.__class__ = Terms  # type: ignore[assignment]
            self._cols = None  # type: ignore[assignment]

    def _whole(self) -> Terms:
        LazyTerms.materialize(self)
        return self

    def __iter__(self) -> Iterator[object]:
        return iter(self._whole())

    def __reversed__(self) -> Iterator[object]:
        return reversed(self._whole())

    def __contains__(self, t: object) -> bool:
        return list.__contains__(self._whole(), t)

    def index(self, *args: Any) -> int:
        return list.index(self._whole(), *args)

    def count(self, t: object) -> int:
        return list.count(self._whole(), t)

    def copy(self) -> list[object]:
        return list(self._whole())

    def __eq__(self, other: object) -> bool:
        return list.__eq__(self._whole(), other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return list.__repr__(self._whole())

    def __reduce__(self) -> Any:
        return (list, (list(self._whole()),))


class Ids(dict[object, int]):
    """A term dictionary's term -> id map (:attr:`TermDictionary.ids
    <reckon.datalog._factstore.TermDictionary.ids>`). (The slot serves :class:`LazyIds`,
    which turns into this class.)"""

    __slots__ = ("_cols",)


class LazyIds(Ids):
    """:class:`Ids` of a restored dictionary: the ``dict`` holds the terms looked up or
    added since the restore; a term it lacks is looked up in :class:`TermColumns`'s
    hash table (``get``, ``[]``, ``in``) and kept. Reads that need every entry
    (``len``, iteration, ``items``, ...) decode them all and the object becomes a plain
    :class:`Ids`."""

    __slots__ = ()

    _cols: TermColumns

    def get(self, term: object, default: Any = None) -> Any:
        i = dict.get(self, term, _MISS)
        if i is not _MISS:
            return i
        cols = self._cols
        if cols is None:  # materialized meanwhile by another thread
            return dict.get(self, term, default)
        try:
            i = cols.find(term)
        except (TypeError, AttributeError):
            return default
        if i is None:
            return default
        dict.__setitem__(self, term, i)
        return i

    def __getitem__(self, term: object) -> int:
        i = LazyIds.get(self, term, _MISS)
        if i is _MISS:
            raise KeyError(term)
        return i  # type: ignore[no-any-return]

    def __contains__(self, term: object) -> bool:
        return LazyIds.get(self, term, _MISS) is not _MISS

    def setdefault(self, term: object, default: Any = None) -> Any:
        i = LazyIds.get(self, term, _MISS)
        if i is _MISS:
            dict.__setitem__(self, term, default)
            return default
        return i

    def materialize(self) -> None:
        """Enter every written term; the object becomes a plain :class:`Ids`. The
        first id of a term wins, as when interning; an entry made since the restore
        stays."""
        with _SWAP:
            if type(self) is not LazyIds:
                return
            cols = self._cols
            setdefault = dict.setdefault
            for i in range(cols.n):
                if cols.kinds[i] != TRIPLE:
                    setdefault(self, cols.decode(i), i)
            self.__class__ = Ids  # type: ignore[assignment]
            self._cols = None  # type: ignore[assignment]

    def _whole(self) -> Ids:
        LazyIds.materialize(self)
        return self

    def __len__(self) -> int:
        return len(self._whole())

    def __iter__(self) -> Iterator[object]:
        return iter(self._whole())

    def keys(self) -> Any:
        return self._whole().keys()

    def values(self) -> Any:
        return self._whole().values()

    def items(self) -> Any:
        return self._whole().items()

    def copy(self) -> dict[object, int]:
        return dict(self._whole())

    def pop(self, term: object, *default: Any) -> Any:
        return self._whole().pop(term, *default)

    def popitem(self) -> tuple[object, int]:
        return self._whole().popitem()

    def clear(self) -> None:
        self._whole().clear()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyIds):
            other.materialize()
        return dict.__eq__(self._whole(), other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return dict.__repr__(self._whole())

    def __reduce__(self) -> Any:
        return (dict, (list(self._whole().items()),))


def term_columns(terms: list[object], kinds: bytes | bytearray, parts: dict[int, Fact],
                 restored: TermColumns | None, np: Any = AUTO) -> tuple[Any, ...]:
    """The term dictionary's columns (format 6) and its triple-term components (flat
    ``s, p, o`` ids, in id order). With ``restored`` (the columns a :class:`LazyTerms`
    was restored from) those terms' written forms are kept as they are and only the
    terms added since are encoded. ``np`` as :func:`fact_columns`."""
    if np is AUTO:
        np = numpy_for(len(kinds))
    n0 = 0 if restored is None else restored.n
    n = len(kinds)
    if restored is not None:
        (rows_b, names_blob, names_off_b, lits_blob, lits_off_b, dts_b, dt_names_w, langs_w, hashes_b,
         ids_b) = restored.written
        rows = _ints("i", rows_b)
        names_off, lits_off, dts = _ints("q", names_off_b), _ints("q", lits_off_b), _ints("i", dts_b)
        dt_names = list(dt_names_w)
        langs = dict(langs_w)
    else:
        rows, names_off, lits_off, dts = array("i"), array("q", (0,)), array("q", (0,)), array("i")
        names_blob = lits_blob = b""
        dt_names, langs = [], {}
    dt_table = {d: j for j, d in enumerate(dt_names)}
    names: list[bytes] = []
    lits: list[bytes] = []
    keys: list[bytes] = []
    key_ids = array("i")
    n_names, n_lits = len(names_off) - 1, len(lits_off) - 1
    get = list.__getitem__  # the lazy list's decoding is not needed: new terms are objects
    for i in range(n0, n):
        k = kinds[i]
        t = get(terms, i)
        if k == IRI or k == BNODE:
            v = t.value.encode("utf-8", "surrogatepass")  # type: ignore[attr-defined]
            rows.append(n_names)
            n_names += 1
            names.append(v)
            keys.append((b"<" if k == IRI else b"_") + v)
        elif k == LITERAL:
            lit: Literal = t  # type: ignore[assignment]
            v = lit.value.encode("utf-8", "surrogatepass")
            lang = lit.language
            if lang:
                d = lit.direction
                dir_name = None if d is None else str(d.value)
                langs[n_lits] = (lang, dir_name)
                dts.append(-1)
                tail = ("@" + lang + ("" if dir_name is None else "--" + dir_name)).encode("utf-8")
            else:
                dt = lit.datatype.value
                j = dt_table.get(dt)
                if j is None:
                    j = dt_table[dt] = len(dt_names)
                    dt_names.append(dt)
                dts.append(j)
                tail = dt.encode("utf-8")
            rows.append(n_lits)
            n_lits += 1
            lits.append(v)
            keys.append(b'"' + v + b"\x00" + tail)
        else:
            rows.append(-1)
            continue
        key_ids.append(i)
    names_off.extend(list(accumulate(map(len, names), initial=names_off[-1]))[1:])
    lits_off.extend(list(accumulate(map(len, lits), initial=lits_off[-1]))[1:])
    if restored is not None and len(keys) == 0:
        hashes_out, ids_out = hashes_b, ids_b
    elif np is None:
        pairs = sorted(chain(zip(_view("Q", hashes_b), _view("i", ids_b)) if restored is not None else (),
                             zip(map(_hash, keys), key_ids)))
        hashes_out = array("Q", (h for h, _ in pairs)).tobytes()
        ids_out = array("i", (i for _, i in pairs)).tobytes()
    else:
        new_h = np.fromiter(map(_hash, keys), dtype=np.uint64, count=len(keys))
        new_i = np.frombuffer(key_ids.tobytes(), dtype=np.int32)
        old_h = np.frombuffer(hashes_b, dtype=np.uint64) if restored is not None else np.zeros(0, np.uint64)
        old_i = np.frombuffer(ids_b, dtype=np.int32) if restored is not None else np.zeros(0, np.int32)
        # by hash, then id (the first id of equal terms first): the new ids are above
        # every written one, so each goes after the written entries of its hash
        order = np.lexsort((new_i, new_h))
        new_h, new_i = new_h[order], new_i[order]
        at = np.searchsorted(old_h, new_h, side="right")
        hashes_out = np.insert(old_h, at, new_h).tobytes()
        ids_out = np.insert(old_i, at, new_i).astype(np.int32).tobytes()
    triples: list[int] = []
    i = -1
    while (i := kinds.find(TRIPLE, i + 1)) >= 0:
        triples.extend(parts[i])
    columns = (rows.tobytes(), names_blob + b"".join(names), names_off.tobytes(), lits_blob + b"".join(lits),
               lits_off.tobytes(), dts.tobytes(), dt_names, langs, hashes_out, ids_out)
    return columns, triples
