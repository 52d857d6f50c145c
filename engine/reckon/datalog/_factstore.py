"""Dictionary encoding of RDF terms and indexed sets of integer triples.

Private support for :mod:`reckon.datalog.evaluate`. Every RDF term (IRI, blank node,
literal, RDF 1.2 triple term) is interned once as a small ``int``; a fact is a
``(s, p, o)`` tuple of ints. Triple terms are interned with their components recorded
(``TermDictionary.parts``) so that a ``TripleTermPattern`` is matched by decoding an id
into component ids instead of building pyoxigraph objects.

A :class:`FactStore` keeps, per predicate id ``p``, two hash indexes
``spo[p]: s -> set(o)`` and (on demand) ``pos[p]: o -> set(s)``, plus the flat set
``facts`` used for membership tests and for deltas. Variable-predicate patterns iterate ``spo.items()``
(the number of distinct predicates is small in practice).
"""

from __future__ import annotations

import sys
import threading
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable
from functools import partial
from itertools import accumulate, chain, compress, repeat
from operator import is_
from typing import Any

from pyoxigraph import BlankNode, Literal, NamedNode, Triple

from reckon._lazydict import LazyDict
from reckon.datalog._columns import (
    AUTO,
    BNODE,
    COLUMNS_LAYOUT,
    IRI,
    LITERAL,
    TRIPLE,
    FactColumns,
    Ids,
    LazyFacts,
    LazyIds,
    LazyTerms,
    TermColumns,
    Terms,
    fact_columns,
    numpy_for,
)

__all__ = ["BNODE", "IRI", "LITERAL", "TRIPLE", "FactStore", "TermDictionary"]

# IRI, BNODE, LITERAL, TRIPLE: the term kinds recorded in TermDictionary.kinds

Fact = tuple[int, int, int]

FactSet = set[Fact] | LazyFacts
"""A fact store's facts: a ``set``, or as restored from columns (:class:`LazyFacts`)."""


class TermDictionary:
    """Bidirectional map RDF term <-> int id.

    :param canonical: optional term -> term function giving the identity of a literal
        (e.g. :func:`reckon.store.terms.canonical_term`, the tenant store's own): every
        spelling of one value then gets one id and decodes to the canonical term, so
        literals computed by rules (``SET``, ``BIND``) and rule constants are the terms
        the store holds. ``None``: terms are compared as given (RDF term equality).

    :ivar terms: id -> pyoxigraph term (a :class:`~reckon.datalog._columns.LazyTerms`
        after :meth:`restore_columns`: each term decoded when first read).
    :ivar ids: term -> id (a :class:`~reckon.datalog._columns.LazyIds` after
        :meth:`restore_columns`: a term looked up in the written columns when first asked).
    :ivar kinds: id -> kind (:data:`IRI`, :data:`BNODE`, :data:`LITERAL`, :data:`TRIPLE`).
    :ivar parts: triple-term id -> ``(s, p, o)`` ids of its components.
    :ivar triple_ids: ``(s, p, o)`` ids -> triple-term id.
    """

    __slots__ = ("canonical", "ids", "kinds", "parts", "terms", "triple_ids")

    def __init__(self, canonical: Callable[[object], object] | None = None) -> None:
        self.canonical = canonical
        self.terms: list[object] = Terms()
        self.ids: dict[object, int] = Ids()
        self.kinds = bytearray()
        self.parts: dict[int, Fact] = {}
        self.triple_ids: dict[Fact, int] = {}

    def __len__(self) -> int:
        return len(self.terms)

    def intern(self, term: object) -> int:
        """Id of ``term``, allocating one if it is new.

        :raises TypeError: when ``term`` is not an RDF term.
        """
        i = self.ids.get(term)
        if i is not None:
            return i
        if self.canonical is not None and isinstance(term, Literal):
            c = self.canonical(term)
            if c != term:  # one id for every spelling of the value
                i = self.intern(c)
                self.ids[term] = i
                return i
        if isinstance(term, Triple):
            key = (self.intern(term.subject), self.intern(term.predicate), self.intern(term.object))
            i = self.triple_ids.get(key)
            if i is not None:  # equal triples hash equal; or another spelling of a literal part
                self.ids[term] = i
                return i
            if self.canonical is not None:
                self.ids[term] = len(self.terms)
                term = Triple(self.terms[key[0]], self.terms[key[1]], self.terms[key[2]])  # type: ignore[arg-type]
            i = self._append(term, TRIPLE)
            self.parts[i] = key
            self.triple_ids[key] = i
            return i
        if isinstance(term, NamedNode):
            kind = IRI
        elif isinstance(term, BlankNode):
            kind = BNODE
        elif isinstance(term, Literal):
            kind = LITERAL
        else:
            raise TypeError(f"not an RDF term: {term!r}")
        return self._append(term, kind)

    def lookup(self, term: object) -> int | None:
        """Id of ``term`` or ``None`` if it was never interned (so matches nothing)."""
        i = self.ids.get(term)
        if i is None and self.canonical is not None and isinstance(term, (Literal, Triple)):
            c = self.canonical(term)
            if c != term:
                i = self.ids.get(c)
        return i

    def triple_term(self, s: int, p: int, o: int) -> int | None:
        """Id of the triple term ``<<( s p o )>>`` built from component ids, interning it
        if new; ``None`` when the components do not form an RDF triple (literal subject,
        non-IRI predicate)."""
        key = (s, p, o)
        i = self.triple_ids.get(key)
        if i is not None:
            return i
        kinds = self.kinds
        if kinds[s] > BNODE or kinds[p] != IRI:
            return None
        term = Triple(self.terms[s], self.terms[p], self.terms[o])  # type: ignore[arg-type]
        i = self._append(term, TRIPLE)
        self.parts[i] = key
        self.triple_ids[key] = i
        return i

    def new_blank_node(self) -> int:
        """Intern a fresh blank node (head blank nodes are freshened per solution)."""
        return self._append(BlankNode(), BNODE)

    def decode(self, fact: Fact) -> Triple:
        """The pyoxigraph ``Triple`` of an encoded fact."""
        t = self.terms
        return Triple(t[fact[0]], t[fact[1]], t[fact[2]])  # type: ignore[arg-type]

    def encode(self, triple: Triple) -> Fact:
        """Encode a pyoxigraph ``Triple`` as ids (interning new terms)."""
        return (self.intern(triple.subject), self.intern(triple.predicate), self.intern(triple.object))

    def encode_all(self, triples: Iterable[Triple]) -> list[Fact]:
        """:meth:`encode` of each triple, in order (terms seen before are looked up
        inline: a graph's terms repeat, and the per-term call is most of the cost)."""
        ids = self.ids
        get = ids.get
        encode = self.encode
        out: list[Fact] = []
        append = out.append
        for t in triples:
            s = get(t.subject)
            p = get(t.predicate)
            o = get(t.object)
            if s is None or p is None or o is None:
                append(encode(t))
            else:
                append((s, p, o))
        return out

    def encode_existing(self, triple: Triple) -> Fact | None:
        """Encode without interning; ``None`` if some term is unknown (so not a fact)."""
        ids = self.ids
        s = ids.get(triple.subject)
        p = ids.get(triple.predicate)
        o = ids.get(triple.object)
        if o is None and self.canonical is not None:
            o = self.lookup(triple.object)
        if s is None or p is None or o is None:
            if isinstance(triple.object, Triple) and s is not None and p is not None:
                inner = self.encode_existing(triple.object)
                o = None if inner is None else self.triple_ids.get(inner)
                if o is not None:
                    return (s, p, o)
            return None
        return (s, p, o)

    def _append(self, term: object, kind: int) -> int:
        i = len(self.terms)
        self.terms.append(term)
        self.ids[term] = i
        self.kinds.append(kind)
        return i

    def restored_columns(self) -> TermColumns | None:
        """The columns :meth:`restore_columns` attached, while some term is still read
        from them (``None`` otherwise)."""
        return self.terms._cols if type(self.terms) is LazyTerms else None

    def restore_columns(self, cols: TermColumns, triples: list[int]) -> None:
        """Extend this dictionary (its first ``len(self)`` ids, the rule constants, equal
        to the written ones: the caller checked) by the written terms of ``cols``, decoded
        when first read; triple terms (``triples``: their components' ids, flat, in id
        order) are built now. The caller has checked the columns."""
        n0, n = len(self.terms), cols.n
        terms, ids = self.terms, self.ids
        terms.extend([None] * (n - n0))
        terms.__class__ = LazyTerms
        terms._cols = cols  # type: ignore[attr-defined]
        self.kinds.extend(cols.kinds[n0:])
        ids.__class__ = LazyIds
        ids._cols = cols  # type: ignore[attr-defined]
        i, j = -1, 0
        kinds = cols.kinds
        while (i := kinds.find(TRIPLE, i + 1)) >= 0:
            key = (triples[j], triples[j + 1], triples[j + 2])
            j += 3
            if i < n0:
                continue
            t = Triple(terms[key[0]], terms[key[1]], terms[key[2]])  # type: ignore[arg-type]
            list.__setitem__(terms, i, t)
            self.parts[i] = key
            self.triple_ids.setdefault(key, i)
            dict.setdefault(ids, t, i)

    def materialize(self) -> None:
        """Decode every term still in the restored columns (a bulk change reads many)."""
        if type(self.terms) is LazyTerms:
            self.terms.materialize()
        if type(self.ids) is LazyIds:
            self.ids.materialize()


_EMPTY: frozenset[int] = frozenset()

_WIDTH = array("i").itemsize
LAYOUT = f"{sys.byteorder}-{_WIDTH}"
"""Byte order and width of the integer columns :meth:`FactStore.to_lists` writes
(C ints, ``array("i")``, 4 bytes wide on common platforms; ids must stay below 2**31):
a state written on a machine of another layout is refused, not misread."""

RawEntry = tuple[bytes, bytes, bytes]
"""One predicate's index entry as written: the keys, each key's number of values, and
the values one key after another (``array("i")`` buffers)."""


def _ints(b: object) -> array[int]:
    """The ``array("i")`` of a written buffer.

    :raises TypeError: when ``b`` is not bytes; :raises ValueError: when its length is
        not a whole number of ints."""
    if not isinstance(b, bytes):
        raise TypeError("an integer column that is not bytes")
    a = array("i")
    a.frombytes(b)
    return a


def _pack_entry(d: dict[int, set[int]] | dict[int, list[int]]) -> RawEntry:
    """One predicate's index ``k -> values`` as written (:data:`RawEntry`)."""
    vs = d.values()
    return (array("i", d).tobytes(), array("i", map(len, vs)).tobytes(),
            array("i", chain.from_iterable(vs)).tobytes())


_NOKEY: Any = object()
_LOW32 = (1 << 32) - 1
_BUILD_AT_MOST = 64
"""A restored column's key with at most this many values is built when a write changes it
(:meth:`_ColumnEntry.put`, :meth:`_ColumnEntry.take`); a larger one keeps the change
beside the column until it is read."""
_BUILDING = threading.Lock()
"""Held while a restored entry replaces placeholders (:class:`_LazyEntry`): two threads
reading one key build it once, and the entry turns plain only when none is left."""
_dget: Any = dict.get  # the underlying dict's values: sets and placeholders (ints)
_dvalues: Any = dict.values


class _EntryBase(defaultdict[int, set[int]]):
    """The layout :class:`_Entry`, :class:`_LazyEntry` and :class:`_ColumnEntry` share,
    so that a lazy entry whose every key is built becomes a plain one (``__class__``
    assignment)."""

    __slots__ = ("_ends", "_flat", "_left", "_more", "_raw")


class _Entry(_EntryBase):
    """A restored index entry whose values are all built: a ``defaultdict(set)``
    (C-level ``get``, ``[]``, ``items``: no method of its own)."""

    __slots__ = ()


class _LazyEntry(_EntryBase):
    """One predicate's index ``k -> set(v)`` as :meth:`FactStore.from_lists` restores it
    (through :class:`_LazyIndex`): a ``defaultdict(set)`` whose keys are all present
    from the start, each standing with its position in the written buffers (an ``int``)
    until it is read, when its set is built from the saved values (``_flat[_ends[i] :
    _ends[i + 1]]``). A write's maintenance reads a few keys of a predicate of ~10^5
    subjects: building every key's set was most of a fresh 100k-memory tenant's first
    write. Once every key is built it becomes an :class:`_Entry` (C-level reads again).

    Keys, ``in``, ``len`` and iteration over keys answer at C speed without building;
    ``[]``, ``get``, ``pop`` and ``setdefault`` build the one key they read; ``items``,
    ``values``, ``copy``, ``==``, ``repr``, pickling build all. Iteration is overridden
    (returning the C iterator) so that C code copying the mapping (``dict(d)``,
    ``{**d}``) reads it through ``keys`` and ``[]``, never the placeholders. Placeholders are
    replaced under one lock (:data:`_BUILDING`), and methods are called through the
    class, so that concurrent readers never see an entry turn plain early."""

    __slots__ = ()

    _raw: RawEntry  # as written; its value columns are decoded on the first build (_columns)
    _ends: array[int] | None
    _flat: array[int] | None
    _left: int

    @staticmethod
    def from_raw(raw: RawEntry) -> _Entry | _LazyEntry:
        keys, counts, vals = raw
        k = _ints(keys)
        if not k:
            return _Entry(set)
        out = _LazyEntry(set, zip(k, range(len(k))))  # type: ignore[arg-type]  # placeholders
        out._raw, out._ends, out._flat, out._left = raw, None, None, len(out)
        return out

    def _columns(self) -> tuple[array[int], array[int]]:
        """Each key's values start offset (one more at the end) and the values."""
        if self._ends is None or self._flat is None:
            ends = array("i", (0,))
            ends.extend(accumulate(_ints(self._raw[1])))
            self._ends, self._flat = ends, _ints(self._raw[2])
        return self._ends, self._flat

    def _build(self, key: int, i: int) -> set[int]:
        with _BUILDING:
            cur = _dget(self, key, _NOKEY)
            if type(cur) is not int:  # built meanwhile by another thread (or removed)
                return set() if cur is _NOKEY else cur
            ends, flat = self._columns()
            v = set(flat[ends[i]:ends[i + 1]])
            dict.__setitem__(self, key, v)
            self._dropped(1)
            return v

    def _dropped(self, n: int) -> None:
        """``n`` placeholders were replaced or removed."""
        self._left -= n
        if self._left <= 0:
            self._ends = self._flat = self._raw = None  # type: ignore[assignment]
            self.__class__ = _Entry  # type: ignore[assignment]

    def build_all(self) -> None:
        """Build every key still in its written form (the entry becomes an :class:`_Entry`)."""
        with _BUILDING:
            if type(self) is _LazyEntry:
                self._build_rest()

    def _build_rest(self) -> None:
        ends_, flat_ = self._columns()
        ends, flat = ends_.tolist(), flat_.tolist()
        keys, at = list(dict.keys(self)), list(_dvalues(self))
        if self._left != len(at):  # some built: only the placeholders (ints)
            mask = list(map(is_, map(type, at), repeat(int)))
            keys, at = list(compress(keys, mask)), list(compress(at, mask))
        todo = keys
        dict.update(self, zip(keys, map(set, map(flat.__getitem__, map(
            slice, map(ends.__getitem__, at), map(ends.__getitem__, map((1).__add__, at)))))))
        self._dropped(len(todo))

    def packed(self) -> RawEntry:
        """The entry as written (:data:`RawEntry`), without building a key."""
        with _BUILDING:
            if type(self) is not _LazyEntry:  # every key built meanwhile
                return _pack_entry(self)
            return self._packed()

    def _packed(self) -> RawEntry:
        n = len(self)
        if self._left == n == len(self._raw[0]) // _WIDTH:  # every key written, none built
            return self._raw
        ends, flat = self._columns()
        counts, vals = array("i"), array("i")
        for v in _dvalues(self):
            if type(v) is int:
                a, b = ends[v], ends[v + 1]
                counts.append(b - a)
                vals.extend(flat[a:b])
            else:
                counts.append(len(v))
                vals.extend(v)
        return (array("i", dict.keys(self)).tobytes(), counts.tobytes(), vals.tobytes())

    def __iter__(self) -> Any:
        return dict.__iter__(self)

    def __getitem__(self, key: int) -> set[int]:
        v: Any = defaultdict.__getitem__(self, key)  # a missing key: a new empty set, as defaultdict
        return _LazyEntry._build(self, key, v) if type(v) is int else v

    def get(self, key: int, default: Any = None) -> Any:
        v = _dget(self, key, _NOKEY)
        if v is _NOKEY:
            return default
        return _LazyEntry._build(self, key, v) if type(v) is int else v

    def setdefault(self, key: int, default: Any = None) -> Any:
        v = _dget(self, key, _NOKEY)
        if v is _NOKEY:
            return dict.setdefault(self, key, default)
        return _LazyEntry._build(self, key, v) if type(v) is int else v

    def pop(self, key: int, *default: Any) -> Any:
        v = _dget(self, key, _NOKEY)
        if type(v) is int:
            v = _LazyEntry._build(self, key, v)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[int, set[int]]:
        _LazyEntry.build_all(self)
        return dict.popitem(self)

    def __setitem__(self, key: int, value: set[int]) -> None:
        with _BUILDING:
            old = _dget(self, key)
            dict.__setitem__(self, key, value)
            if type(old) is int:
                self._dropped(1)

    def __delitem__(self, key: int) -> None:
        with _BUILDING:
            old = _dget(self, key)
            dict.__delitem__(self, key)
            if type(old) is int:
                self._dropped(1)

    def clear(self) -> None:
        with _BUILDING:
            dict.clear(self)
            if type(self) is _LazyEntry:
                self._dropped(self._left)

    def update(self, *args: Any, **kw: Any) -> None:
        for key, value in dict(*args, **kw).items():
            self[key] = value

    def items(self) -> Any:
        _LazyEntry.build_all(self)
        return dict.items(self)

    def values(self) -> Any:
        _LazyEntry.build_all(self)
        return dict.values(self)

    def copy(self) -> Any:
        _LazyEntry.build_all(self)
        return defaultdict.copy(self)

    __copy__ = copy

    def __eq__(self, other: object) -> bool:
        _LazyEntry.build_all(self)
        if isinstance(other, (_LazyEntry, _ColumnEntry)):
            other.build_all()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        _LazyEntry.build_all(self)
        return defaultdict.__repr__(self)

    def __or__(self, other: Any) -> Any:
        _LazyEntry.build_all(self)
        return defaultdict.__or__(self, other)

    def __ior__(self, other: Any) -> Any:
        self.update(other)
        return self

    def __reduce__(self) -> Any:
        _LazyEntry.build_all(self)
        return defaultdict.__reduce__(self)


def _putter(ix: dict[int, set[int]]) -> Any:
    """``ix[key].add(value)`` as a function of ``(key, value)`` (:meth:`_ColumnEntry.put`
    for a restored column's entry)."""
    if type(ix) is _ColumnEntry:
        return partial(_ColumnEntry.put, ix)
    return lambda key, value: ix[key].add(value)


def _take(ix: dict[int, set[int]], key: int, value: int) -> None:
    """``ix[key].discard(value)``, the key dropped when no value is left
    (:meth:`_ColumnEntry.take` for a restored column's entry)."""
    if type(ix) is _ColumnEntry:
        _ColumnEntry.take(ix, key, value)
        return
    vs = ix[key]
    vs.discard(value)
    if not vs:
        del ix[key]


class _Span:
    """Where one predicate's index entry lies in a store's sorted key column (format 6):
    ``keys[lo:hi]``, each ``k << 32 | v`` for the entry's ``k -> {v, ...}`` (subject and
    object for :attr:`FactStore.spo`, object and subject for :attr:`FactStore.pos`), and
    the number of distinct ``k`` (``width``: the planner's estimate reads it unbuilt)."""

    __slots__ = ("hi", "keys", "lo", "width")

    def __init__(self, keys: array[int], lo: int, hi: int, width: int) -> None:
        self.keys, self.lo, self.hi, self.width = keys, lo, hi, width


class _ColumnEntry(_EntryBase):
    """One predicate's index ``k -> set(v)`` restored from a sorted key column
    (:class:`_Span`, format 6): the ``dict`` starts empty and a key is looked up in the
    column (binary search) when first read, its set built then and kept. Keys removed
    since (``del``, ``pop``) are remembered, so the column never brings them back.

    ``[]`` (through ``__missing__``: a key in neither gets an empty set, as
    ``defaultdict``), ``get``, ``in``, ``pop``, ``setdefault`` and ``len`` (counted as
    keys come and go) read one key or none; iteration, ``items``, ``values``, ``copy``,
    ``==``, ``repr``, pickling build every key first and the entry becomes an
    :class:`_Entry` (C-level reads again).

    A value added to or removed from a key with more than :data:`_BUILD_AT_MOST` values in
    the column and not read yet (:meth:`put`, :meth:`take`, the fact store's writes)
    waits beside the column until the key is read: a write adding one memory to
    ``?m a Memory`` or ``?m scope Company`` at 100k memories built those keys' sets of
    10^4-10^5 values only to add one. Slots: ``_raw`` the span, ``_flat`` the removed
    keys, ``_left`` the number of keys, ``_more`` key -> (values added, values removed)
    not applied yet (the added ones are not in the column, the removed ones are)."""

    __slots__ = ()

    _raw: _Span
    _flat: set[int]
    _left: int
    _ends: None
    _more: dict[int, tuple[set[int], set[int]]]

    @staticmethod
    def restored(span: _Span) -> _ColumnEntry:
        out = _ColumnEntry(set)
        out._raw, out._flat, out._ends, out._left, out._more = span, set(), None, span.width, {}
        return out

    def _where(self, key: int) -> tuple[int, int]:
        """Where ``key``'s values lie in the column (empty: none, or removed since)."""
        if key in self._flat:
            return 0, 0
        sp = self._raw
        keys = sp.keys
        i = bisect_left(keys, key << 32, sp.lo, sp.hi)
        return i, bisect_left(keys, (key + 1) << 32, i, sp.hi)

    def _read(self, key: int) -> set[int] | None:
        """The values of ``key``: the column's, with what :meth:`put` and :meth:`take`
        left beside it (``None``: none, or removed since). The caller keeps the set."""
        i, j = _ColumnEntry._where(self, key)
        if i == j:
            return None
        out = {k & _LOW32 for k in self._raw.keys[i:j]}
        more = self._more.pop(key, None)
        if more is not None:
            out -= more[1]
            out |= more[0]
        return out

    def _has(self, key: int, i: int, j: int, value: int) -> bool:
        keys, k = self._raw.keys, key << 32 | value
        x = bisect_left(keys, k, i, j)
        return x < j and keys[x] == k

    def put(self, key: int, value: int) -> None:
        """``self[key].add(value)``, without building a large key not read yet."""
        with _BUILDING:
            if type(self) is not _ColumnEntry:
                defaultdict.__getitem__(self, key).add(value)
                return
            v = _dget(self, key, _NOKEY)
            if v is _NOKEY:
                more = self._more.get(key)
                if more is None:
                    i, j = _ColumnEntry._where(self, key)
                    if j - i <= _BUILD_AT_MOST:
                        if i == j:
                            self._left += 1  # a new key (or one removed since)
                            v = set()
                        else:
                            v = {k & _LOW32 for k in self._raw.keys[i:j]}
                        dict.__setitem__(self, key, v)
                    else:
                        more = self._more[key] = (set(), set())
                if more is not None:
                    added, removed = more
                    if value in removed:
                        removed.discard(value)
                    elif not _ColumnEntry._has(self, key, *_ColumnEntry._where(self, key), value):
                        added.add(value)
                    return
            v.add(value)

    def take(self, key: int, value: int) -> None:
        """``self[key].discard(value)``, the key dropped when no value is left, without
        building a large key not read yet."""
        with _BUILDING:
            if type(self) is not _ColumnEntry:
                vs = defaultdict.__getitem__(self, key)
                vs.discard(value)
                if not vs:
                    dict.__delitem__(self, key)
                return
            v = _dget(self, key, _NOKEY)
            if v is not _NOKEY:
                v.discard(value)
                if not v:
                    dict.pop(self, key)
                    self._flat.add(key)
                    self._left -= 1
                return
            i, j = _ColumnEntry._where(self, key)
            if i == j:
                return  # not a key: nothing to take
            more = self._more.get(key)
            if more is None:
                if j - i <= _BUILD_AT_MOST:
                    v = {k & _LOW32 for k in self._raw.keys[i:j]}
                    v.discard(value)
                    if v:
                        dict.__setitem__(self, key, v)
                    else:
                        self._flat.add(key)
                        self._left -= 1
                    return
                more = self._more[key] = (set(), set())
            added, removed = more
            if value in added:
                added.discard(value)
            elif _ColumnEntry._has(self, key, i, j, value):
                removed.add(value)
            if (j - i) - len(removed) + len(added) == 0:
                del self._more[key]
                self._flat.add(key)
                self._left -= 1

    def __missing__(self, key: int) -> set[int]:
        with _BUILDING:
            v = dict.get(self, key)
            if v is None:
                v = None if type(self) is not _ColumnEntry else _ColumnEntry._read(self, key)
                if v is None:  # a new key
                    v = set()
                    if type(self) is _ColumnEntry:
                        self._left += 1
                dict.__setitem__(self, key, v)
            return v

    def __setitem__(self, key: int, value: set[int]) -> None:
        with _BUILDING:
            if type(self) is _ColumnEntry:
                if not _ColumnEntry.__contains__(self, key):
                    self._left += 1
                self._more.pop(key, None)
            dict.__setitem__(self, key, value)

    def get(self, key: int, default: Any = None) -> Any:
        v = _dget(self, key, _NOKEY)
        if v is not _NOKEY:
            return v
        if type(self) is not _ColumnEntry:  # built whole meanwhile
            return _dget(self, key, default)
        with _BUILDING:
            v = _dget(self, key, _NOKEY)
            if v is _NOKEY:
                v = _ColumnEntry._read(self, key)
                if v is None:
                    return default
                dict.__setitem__(self, key, v)
            return v

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        if type(self) is not _ColumnEntry or key in self._flat or type(key) is not int:
            return False
        sp = self._raw
        i = bisect_left(sp.keys, key << 32, sp.lo, sp.hi)
        return i < sp.hi and sp.keys[i] >> 32 == key

    def setdefault(self, key: int, default: Any = None) -> Any:
        v = _ColumnEntry.get(self, key, _NOKEY)
        if v is _NOKEY:
            _ColumnEntry.__setitem__(self, key, default)
            return default
        return v

    def pop(self, key: int, *default: Any) -> Any:
        v = _ColumnEntry.get(self, key, _NOKEY)
        if v is _NOKEY:
            if default:
                return default[0]
            raise KeyError(key)
        with _BUILDING:
            if type(self) is _ColumnEntry:
                dict.pop(self, key, None)
                self._flat.add(key)
                self._left -= 1
            else:
                dict.pop(self, key, None)
        return v

    def __delitem__(self, key: int) -> None:
        _ColumnEntry.pop(self, key)

    def build_all(self) -> None:
        """Build every key of the column not read yet (the entry becomes an :class:`_Entry`)."""
        with _BUILDING:
            if type(self) is not _ColumnEntry:
                return
            sp, gone = self._raw, self._flat
            keys = sp.keys
            groups: dict[int, set[int]] = {}
            for k in keys[sp.lo:sp.hi]:
                groups.setdefault(k >> 32, set()).add(k & _LOW32)
            setdefault = dict.setdefault
            for key, v in groups.items():
                if key not in gone:
                    setdefault(self, key, v)
            for key, (added, removed) in self._more.items():  # keys never read: built above
                v = dict.__getitem__(self, key)
                v -= removed
                v |= added
            self._raw = self._flat = self._more = None  # type: ignore[assignment]
            self.__class__ = _Entry  # type: ignore[assignment]

    def _whole(self) -> _Entry:
        _ColumnEntry.build_all(self)
        return self  # type: ignore[return-value]

    def __len__(self) -> int:
        if type(self) is _ColumnEntry:
            return self._left
        return dict.__len__(self)

    def __iter__(self) -> Any:
        return iter(self._whole())

    def keys(self) -> Any:
        return self._whole().keys()

    def items(self) -> Any:
        return self._whole().items()

    def values(self) -> Any:
        return self._whole().values()

    def copy(self) -> Any:
        return defaultdict.copy(self._whole())

    __copy__ = copy

    def popitem(self) -> tuple[int, set[int]]:
        return self._whole().popitem()

    def clear(self) -> None:
        self._whole().clear()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (_LazyEntry, _ColumnEntry)):
            other.build_all()
        return dict.__eq__(self._whole(), other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return defaultdict.__repr__(self._whole())

    def __or__(self, other: Any) -> Any:
        return defaultdict.__or__(self._whole(), other)

    def __reduce__(self) -> Any:
        return defaultdict.__reduce__(self._whole())


def _unpack_entry(raw: RawEntry | _Span) -> defaultdict[int, set[int]]:
    """A written entry as a mapping whose keys' sets are built when first read
    (:class:`_LazyEntry`, :class:`_ColumnEntry`)."""
    if isinstance(raw, _Span):
        return _ColumnEntry.restored(raw)
    return _LazyEntry.from_raw(raw)


def _check_entry(raw: object) -> int:
    """Number of values of a written index entry; :raises ValueError: (or TypeError)
    when it is not a :data:`RawEntry` whose columns agree."""
    if not isinstance(raw, tuple) or len(raw) != 3:
        raise ValueError("an index entry of another shape")
    keys, counts, vals = map(_ints, raw)
    if len(keys) != len(counts) or (counts and min(counts) < 0) or sum(counts) != len(vals):
        raise ValueError("an index entry whose columns disagree")
    return len(vals)


class _LazyIndex(LazyDict[int, defaultdict[int, set[int]]]):
    """A fact store's index ``p -> {k -> set(v)}`` (:attr:`FactStore.spo`,
    :attr:`FactStore.pos`) as :meth:`FactStore.from_lists` restores it: every predicate's
    entry is kept in its written form (:data:`RawEntry`: three integer buffers, which
    cost the restore no objects) and built on first access
    (``[]``, ``get``, ``items``, ``values``, ``pop``, ...), so a restored state pays only
    for the predicates the next evaluation reads -- building all of them was 1.05 of a
    100k-memory tenant's 3.9 CPU s restore, and a write's maintenance reads a few.

    Keys, ``in`` and ``len`` answer without building (:class:`reckon._lazydict.LazyDict`
    says what else builds and what C-level access does not see)."""

    __slots__ = ()

    raw: dict[int, RawEntry]

    def _make(self, p: int, written: RawEntry) -> defaultdict[int, set[int]]:
        return _unpack_entry(written)

    build_all = LazyDict.load_all

    def width(self, p: int) -> int:
        """Number of keys of predicate ``p``'s entry (0 when absent), without building it."""
        r = self.raw.get(p)
        if r is not None:
            return r.width if isinstance(r, _Span) else len(r[0]) // _WIDTH
        d = dict.get(self, p)
        return 0 if d is None else len(d)


def index_width(ix: dict[int, defaultdict[int, set[int]]], p: int) -> int:
    """Number of keys of predicate ``p`` in the index ``ix`` (:attr:`FactStore.spo`,
    :attr:`FactStore.pos`), 0 when absent; a restored index's entry is not built for it."""
    if isinstance(ix, _LazyIndex):
        return ix.width(p)
    d = ix.get(p)
    return 0 if d is None else len(d)


class FactStore:
    """A set of encoded facts with per-predicate hash indexes.

    :ivar facts: the set of ``(s, p, o)`` id tuples.
    :ivar spo: ``p -> {s -> set(o)}`` (only when ``indexed``).
    :ivar pos: ``p -> {o -> set(s)}``, kept only for the predicates some compiled plan
        asked for (:meth:`need_pos`, :meth:`need_pos_all`): many predicates are only ever
        looked up by subject, and indexing is the dominant cost of materialization.
    :ivar count: ``p -> number of facts with predicate p`` (only when ``indexed``).
    :ivar index_below: when set, only predicates with a smaller id are indexed (``spo``,
        ``pos``, ``count``); the others are only in ``facts``. A reasoner sets it to the
        size of its dictionary once the rule constants are interned, when no body atom
        has a variable predicate: a compiled plan then looks predicates up by constant
        ids only, and the data's own predicates (labels, texts, timestamps no rule
        reads: half the facts of a tenant) cost no index.
    """

    __slots__ = ("count", "facts", "index_below", "indexed", "pos", "pos_all", "pos_preds", "scans", "spo")

    def __init__(self, facts: Iterable[Fact] = (), *, indexed: bool = True, fresh: bool = False,
                 index_below: int | None = None) -> None:
        self.index_below = index_below
        self.facts: FactSet = set()
        self.spo: dict[int, defaultdict[int, set[int]]] = {}
        self.pos: dict[int, defaultdict[int, set[int]]] = {}
        self.count: dict[int, int] = {}
        self.pos_preds: set[int] = set()
        self.pos_all = False
        self.indexed = indexed
        self.scans: dict[int, int] = {}
        self.add_all(facts, fresh=fresh)

    def copy(self) -> FactStore:
        """An independent copy (facts, indexes, counts, which object indexes are kept):
        copying the index sets is several times faster than adding the facts again."""
        out = FactStore(indexed=self.indexed, index_below=self.index_below)
        out.facts = self.facts.copy()
        out.spo = {p: defaultdict(set, {s: set(os_) for s, os_ in d.items()}) for p, d in self.spo.items()}
        out.pos = {p: defaultdict(set, {o: set(ss) for o, ss in d.items()}) for p, d in self.pos.items()}
        out.count = dict(self.count)
        out.pos_preds = set(self.pos_preds)
        out.pos_all = self.pos_all
        return out

    def __len__(self) -> int:
        return len(self.facts)

    def __contains__(self, fact: object) -> bool:
        return fact in self.facts

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.facts)

    def need_pos(self, p: int) -> None:
        """Keep the ``o -> set(s)`` index of predicate ``p`` from now on (built now)."""
        if self.pos_all or p in self.pos_preds:
            return
        self.pos_preds.add(p)
        sp = self.spo.get(p)
        if sp is not None:
            ps: defaultdict[int, set[int]] = defaultdict(set)
            for s, os_ in sp.items():
                for o in os_:
                    ps[o].add(s)
            self.pos[p] = ps

    def shared_pos(self, p: int) -> dict[int, set[int]] | None:
        """The object index of ``p`` if it is kept, or built now when this is at least the
        second request for it; ``None`` on the first (the caller scans instead).

        For a semi-naive delta, looked up by object by many rules of one round (every
        ``?x rdf:type owl:SomeClass`` atom): one scan is cheaper than building the index,
        two or more are not."""
        ps = self.pos.get(p)
        if ps is not None:
            return ps
        n = self.scans.get(p, 0) + 1
        self.scans[p] = n
        if n < 2 or p not in self.spo:
            return None
        self.need_pos(p)
        return self.pos.get(p)

    def need_pos_all(self) -> None:
        """Keep the object index of every predicate (variable-predicate patterns)."""
        if not self.pos_all:
            for p in list(self.spo):
                self.need_pos(p)
            self.pos_all = True

    def add(self, fact: Fact) -> bool:
        """Add one fact; ``True`` if it was new."""
        if fact in self.facts:
            return False
        self.add_all((fact,))
        return True

    def add_all(self, facts: Iterable[Fact], *, fresh: bool = False) -> list[Fact]:
        """Add facts; returns those that were new (each once).

        :param fresh: the caller guarantees that ``facts`` are distinct and none is in
            the store yet (a semi-naive round's new facts, a delta): the membership
            test and the de-duplication are skipped (half the cost of adding).
        """
        all_ = self.facts
        if fresh:
            added = facts if isinstance(facts, list) else list(facts)
        else:
            added = [f for f in facts if f not in all_]
            if len(added) > 1 and not isinstance(facts, (set, frozenset)):
                added = list(dict.fromkeys(added))
        if type(all_) is set:
            all_.update(added)
        else:
            all_.update_new(added)  # type: ignore[union-attr]
        if not self.indexed or not added:
            return added
        by_p: defaultdict[int, list[Fact]] = defaultdict(list)
        for f in added:
            by_p[f[1]].append(f)
        spo, pos, count = self.spo, self.pos, self.count
        below = self.index_below
        for p, group in by_p.items():
            if below is not None and p >= below:
                continue
            sp = spo.get(p)
            if sp is None:
                sp = spo[p] = defaultdict(set)
                count[p] = 0
            if self.pos_all or p in self.pos_preds:
                ps = pos.get(p)
                if ps is None:
                    ps = pos[p] = defaultdict(set)
                if type(sp) is _ColumnEntry or type(ps) is _ColumnEntry:  # a large key stays unbuilt
                    put_s, put_o = _putter(sp), _putter(ps)
                    for s, _, o in group:
                        put_s(s, o)
                        put_o(o, s)
                else:
                    for s, _, o in group:
                        sp[s].add(o)
                        ps[o].add(s)
            elif type(sp) is _ColumnEntry:
                for s, _, o in group:
                    _ColumnEntry.put(sp, s, o)
            else:
                for s, _, o in group:
                    sp[s].add(o)
            count[p] += len(group)
        return added

    def remove(self, fact: Fact) -> bool:
        """Remove one fact; ``True`` if it was present."""
        if fact not in self.facts:
            return False
        self.facts.discard(fact)
        if self.indexed and (self.index_below is None or fact[1] < self.index_below):
            s, p, o = fact
            _take(self.spo[p], s, o)
            ps = self.pos.get(p)
            if ps is not None:
                _take(ps, o, s)
            c = self.count[p] - 1
            if c:
                self.count[p] = c
            else:
                del self.count[p], self.spo[p]
                self.pos.pop(p, None)
        return True

    def settle(self) -> None:
        """Turn facts restored from columns (:class:`LazyFacts`) into a plain ``set``
        (before a change that reads many of them)."""
        if type(self.facts) is not set:
            self.facts = self.facts.materialize()  # type: ignore[union-attr]

    def _written_indexes(self) -> tuple[dict[int, RawEntry], dict[int, RawEntry]]:
        def index(ix: dict[int, defaultdict[int, set[int]]]) -> dict[int, RawEntry]:
            # an entry restored and never read since is written as it was read
            raw = ix.raw if isinstance(ix, _LazyIndex) else {}
            out: dict[int, RawEntry] = {}
            for p, d in dict.items(ix):
                r = raw.get(p)
                if r is not None and not isinstance(r, _Span):
                    out[p] = r
                elif isinstance(d, _LazyEntry):
                    out[p] = _LazyEntry.packed(d)
                else:
                    out[p] = _pack_entry(ix[p])  # built now if it was not
            return out

        return index(self.spo), index(self.pos)

    def to_columns(self, np: Any = AUTO) -> tuple[object, ...]:
        """The store as written in a reasoner state of format 6: the facts in columns
        (:func:`reckon.datalog._columns.fact_columns`: per predicate the sorted keys
        ``s << 32 | o``; facts restored from columns and unchanged are written as read),
        the object indexes kept (:attr:`pos`) as the same facts' keys ``o << 32 | s``, the
        number of distinct subjects and objects per predicate, counts and settings. The
        subject index (:attr:`spo`) is the facts' columns themselves. :meth:`from_columns`
        reads it. ``np``: numpy, or ``None`` for Python's sort (default:
        :func:`~reckon.datalog._columns.numpy_for` the number of facts)."""
        if np is AUTO:
            np = numpy_for(len(self.facts))
        facts = fact_columns(self.facts, np)
        preds, ends = _ints(facts[0]), array("q")
        ends.frombytes(facts[1])
        keys: Any = np.frombuffer(facts[2], dtype=np.uint64) if np is not None else memoryview(facts[2]).cast("Q")
        # what a restore left in columns and no change touched is written as read
        lazy = type(self.facts) is LazyFacts
        touched = self.facts.changed_predicates() if lazy else set()  # type: ignore[union-attr]

        def restored(ix: dict[int, Any], p: int) -> _Span | None:
            if not lazy or p in touched or not isinstance(ix, _LazyIndex):
                return None
            r: Any = ix.raw.get(p)
            if r is None:
                d = dict.get(ix, p)
                r = d._raw if type(d) is _ColumnEntry else None
            return r if isinstance(r, _Span) else None

        def width(col: Any) -> int:  # distinct high halves of ascending keys
            if np is None:
                return len({k >> 32 for k in col})
            high = col >> np.uint64(32)
            return int(np.count_nonzero(high[1:] != high[:-1])) + 1

        def by_object(col: Any) -> Any:  # o << 32 | s, ascending
            if np is None:
                return array("Q", sorted(((k & _LOW32) << 32) | (k >> 32) for k in col))
            return np.sort((col << np.uint64(32)) | (col >> np.uint64(32)))

        widths: dict[int, int] = {}
        pos_widths: dict[int, int] = {}
        pos_preds, pos_ends, pos_keys = array("i"), array("q", (0,)), []
        for p, a, b in zip(preds, ends, ends[1:]):
            if not self._indexes(p):
                continue
            sp = restored(self.spo, p)
            widths[p] = sp.width if sp is not None else width(keys[a:b])
            if p in self.pos:
                sp = restored(self.pos, p)
                if sp is not None:
                    swapped = (np.frombuffer(sp.keys, dtype=np.uint64)[sp.lo:sp.hi] if np is not None
                               else sp.keys[sp.lo:sp.hi])
                    pos_widths[p] = sp.width
                else:
                    swapped = by_object(keys[a:b])
                    pos_widths[p] = width(swapped)
                pos_preds.append(p)
                pos_keys.append(swapped)
                pos_ends.append(pos_ends[-1] + len(swapped))
        pos_col = b"".join(bytes(k) if np is None else k.tobytes() for k in pos_keys)
        return (COLUMNS_LAYOUT, facts, (pos_preds.tobytes(), pos_ends.tobytes(), pos_col), widths, pos_widths,
                self.count, sorted(self.pos_preds), self.pos_all, self.indexed, self.index_below)

    def _indexes(self, p: int) -> bool:
        """Whether predicate ``p`` is in this store's indexes (``spo``, ``count``)."""
        return self.indexed and (self.index_below is None or p < self.index_below)

    @classmethod
    def from_columns(cls, parts: tuple[object, ...]) -> FactStore:
        """Inverse of :meth:`to_columns`: the facts stay in their columns
        (:class:`LazyFacts`), and so do the indexes: each predicate's entry reads its
        column when first read (:class:`_ColumnEntry`), each key's set built only then.

        :raises ValueError: when ``parts`` is not of that shape (or of another machine's
            :data:`~reckon.datalog._columns.COLUMNS_LAYOUT`), or its facts, indexes and
            counts disagree in size.
        """
        try:
            (layout, written, pos_w, widths, pos_widths, count, pos_preds, pos_all, indexed,
             below) = parts
            if layout != COLUMNS_LAYOUT:
                raise ValueError(f"integer columns of another layout ({layout!r}, here {COLUMNS_LAYOUT!r})")
            if below is not None and not isinstance(below, int):
                raise ValueError("index_below is not an int")
            if not isinstance(written, tuple) or len(written) != 3 or not isinstance(pos_w, tuple) or len(pos_w) != 3:
                raise ValueError("fact columns of another shape")
            out = cls(indexed=bool(indexed), index_below=below)
            cols = FactColumns(written)
            out.facts = LazyFacts(cols)
            out.count = dict(count)  # type: ignore[call-overload]
            spo_raw: dict[int, Any] = {}
            for p, (lo, hi) in cols.spans.items():
                if out._indexes(p):
                    if out.count.get(p) != hi - lo:
                        raise ValueError("a predicate's facts and its count disagree")
                    spo_raw[p] = _Span(cols.keys, lo, hi, int(widths[p]))  # type: ignore[index]
            if len(spo_raw) != len(out.count):
                raise ValueError("counts of predicates without facts")
            pos_cols = FactColumns(pos_w)
            pos_raw: dict[int, Any] = {}
            for p, (lo, hi) in pos_cols.spans.items():
                if out.count.get(p) != hi - lo:
                    raise ValueError("an object index and its count disagree")
                pos_raw[p] = _Span(pos_cols.keys, lo, hi, int(pos_widths[p]))  # type: ignore[index]
            out.spo = _LazyIndex(spo_raw)
            out.pos = _LazyIndex(pos_raw)
            out.pos_preds = set(pos_preds)  # type: ignore[call-overload]
            out.pos_all = bool(pos_all)
        except (TypeError, ValueError, AttributeError, KeyError) as e:
            raise ValueError(f"not a fact store: {e}") from e
        out._check_sizes(below)
        return out

    def _restore_indexes(self, spo: object, pos: object, count: object, pos_preds: object, pos_all: object) -> None:
        self.count = dict(count)  # type: ignore[call-overload]
        # each entry built on first access (_LazyIndex); its shape is checked now
        spo_raw: dict[int, RawEntry] = dict(spo)  # type: ignore[call-overload]
        pos_raw: dict[int, RawEntry] = dict(pos)  # type: ignore[call-overload]
        for p, raw in spo_raw.items():
            if _check_entry(raw) != self.count.get(p):
                raise ValueError("an index entry and its count disagree")
        for raw in pos_raw.values():
            _check_entry(raw)
        self.spo = _LazyIndex(spo_raw)
        self.pos = _LazyIndex(pos_raw)
        self.pos_preds = set(pos_preds)  # type: ignore[call-overload]
        self.pos_all = bool(pos_all)

    def _check_sizes(self, below: object) -> None:
        n = sum(self.count.values())
        if self.indexed and (n > len(self.facts) if below is not None else n != len(self.facts)):
            raise ValueError("fact store parts disagree in size")

    def to_lists(self, beside: set[Fact] | None = None) -> tuple[object, ...]:
        """The store as ints, bytes, tuples, lists and dicts -- no sets -- for
        :mod:`marshal`: the facts as one buffer of C ints ``s, p, o, s, p, o, ...``
        (``array("i")``), each predicate's index ``k -> set(v)`` as a :data:`RawEntry`
        (keys, counts, values: three buffers). Buffers cost :mod:`marshal` a copy, where
        a list of tuples costs it one object per tuple and per int on reading (and a set
        a sort on writing). :meth:`from_lists` rebuilds the facts with C-level maps and
        each index entry only when first read (:class:`_LazyIndex`).

        :param beside: facts :meth:`from_lists` will be given again (the base graph of an
            evaluation graph): when they are all in this store only the others are
            written, and the set is rebuilt by copying that one (no rehashing)."""
        if beside is not None and len(beside) <= len(self.facts) and beside <= self.facts:
            split, rest = True, self.facts - beside
        else:
            split, rest = False, self.facts
        facts = (split, array("i", chain.from_iterable(rest)).tobytes())
        spo, pos = self._written_indexes()
        return (LAYOUT, facts, spo, pos, self.count, sorted(self.pos_preds), self.pos_all, self.indexed,
                self.index_below)

    @staticmethod
    def upgrade_lists(parts: tuple[object, ...]) -> tuple[object, ...]:
        """The written form of an older engine (reasoner state format 3: the facts as a
        list of tuples, each index entry as ``(keys, value lists)``) in the current one,
        for :meth:`from_lists`.

        :raises ValueError: when ``parts`` is not of that shape."""
        try:
            head, spo, pos, *rest = parts
            split: bool
            facts: list[Fact]
            split, facts = head  # type: ignore[misc]
            packed = (split, array("i", chain.from_iterable(facts)).tobytes())

            def index(ix: Any) -> dict[int, RawEntry]:
                return {p: _pack_entry(dict(zip(k, v))) for p, (k, v) in dict(ix).items()}

            return (LAYOUT, packed, index(spo), index(pos), *rest)
        except (TypeError, ValueError, AttributeError, OverflowError) as e:
            raise ValueError(f"not a fact store of the older layout: {e}") from e

    @classmethod
    def from_lists(cls, parts: tuple[object, ...], beside: FactSet | None = None) -> FactStore:
        """Inverse of :meth:`to_lists` (equal facts, indexes, counts and kept object indexes).

        :param beside: the set given to :meth:`to_lists` (its facts are not in ``parts``).
        :raises ValueError: when ``parts`` is not of that shape (or of another machine's
            :data:`LAYOUT`), or its facts, indexes and counts disagree in size.
        """
        try:
            layout, head, spo, pos, count, pos_preds, pos_all, indexed, below = parts
            if layout != LAYOUT:
                raise ValueError(f"integer columns of another layout ({layout!r}, here {LAYOUT!r})")
            split: bool
            flat: bytes
            split, flat = head  # type: ignore[misc]
            if below is not None and not isinstance(below, int):
                raise ValueError("index_below is not an int")
            out = cls(indexed=bool(indexed), index_below=below)
            cols = _ints(flat)
            if len(cols) % 3:
                raise ValueError("a fact column that is not whole triples")
            it = iter(cols)
            n = len(cols) // 3
            if split:
                if beside is None:
                    raise ValueError("a fact store written beside another")
                facts = set(beside)
                facts.update(zip(it, it, it))
                if len(facts) != len(beside) + n:
                    raise ValueError("fact store parts overlap")
            else:
                facts = set(zip(it, it, it))
                if len(facts) != n:
                    raise ValueError("duplicate facts")
            out.facts = facts
            out._restore_indexes(spo, pos, count, pos_preds, pos_all)
        except (TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"not a fact store: {e}") from e
        out._check_sizes(below)
        return out

    def predicates(self) -> set[int]:
        """Predicate ids present (computed from ``facts`` when not indexed)."""
        if self.indexed and self.index_below is None:
            return set(self.spo)
        if type(self.facts) is not set:
            return self.facts.predicates()  # type: ignore[union-attr]
        return {f[1] for f in self.facts}

