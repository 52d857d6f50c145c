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
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import accumulate, chain, compress, repeat
from operator import is_
from typing import Any

from pyoxigraph import BlankNode, Literal, NamedNode, Triple

from reckon._lazydict import LazyDict

__all__ = ["BNODE", "IRI", "LITERAL", "TRIPLE", "FactStore", "TermDictionary"]

IRI, BNODE, LITERAL, TRIPLE = 0, 1, 2, 3
"""Term kinds recorded in :attr:`TermDictionary.kinds`."""

Fact = tuple[int, int, int]


class TermDictionary:
    """Bidirectional map RDF term <-> int id.

    :param canonical: optional term -> term function giving the identity of a literal
        (e.g. :func:`reckon.store.terms.canonical_term`, the tenant store's own): every
        spelling of one value then gets one id and decodes to the canonical term, so
        literals computed by rules (``SET``, ``BIND``) and rule constants are the terms
        the store holds. ``None``: terms are compared as given (RDF term equality).

    :ivar terms: id -> pyoxigraph term.
    :ivar kinds: id -> kind (:data:`IRI`, :data:`BNODE`, :data:`LITERAL`, :data:`TRIPLE`).
    :ivar parts: triple-term id -> ``(s, p, o)`` ids of its components.
    :ivar triple_ids: ``(s, p, o)`` ids -> triple-term id.
    """

    __slots__ = ("canonical", "ids", "kinds", "parts", "terms", "triple_ids")

    def __init__(self, canonical: Callable[[object], object] | None = None) -> None:
        self.canonical = canonical
        self.terms: list[object] = []
        self.ids: dict[object, int] = {}
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


_NOKEY = object()
_BUILDING = threading.Lock()
"""Held while a restored entry replaces placeholders (:class:`_LazyEntry`): two threads
reading one key build it once, and the entry turns plain only when none is left."""
_dget: Any = dict.get  # the underlying dict's values: sets and placeholders (ints)
_dvalues: Any = dict.values


class _EntryBase(defaultdict[int, set[int]]):
    """The layout :class:`_Entry` and :class:`_LazyEntry` share, so that a lazy entry
    whose every key is built becomes a plain one (``__class__`` assignment)."""

    __slots__ = ("_ends", "_flat", "_left", "_raw")


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
        if isinstance(other, _LazyEntry):
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


def _unpack_entry(raw: RawEntry) -> defaultdict[int, set[int]]:
    """A written entry as a mapping whose keys' sets are built when first read (:class:`_LazyEntry`)."""
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
            return len(r[0]) // _WIDTH
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
        self.facts: set[Fact] = set()
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
        out.facts = set(self.facts)
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
        all_.update(added)
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
                for s, _, o in group:
                    sp[s].add(o)
                    ps[o].add(s)
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
            sp = self.spo[p]
            os_ = sp[s]
            os_.discard(o)
            if not os_:
                del sp[s]
            ps = self.pos.get(p)
            if ps is not None:
                ss = ps[o]
                ss.discard(s)
                if not ss:
                    del ps[o]
            c = self.count[p] - 1
            if c:
                self.count[p] = c
            else:
                del self.count[p], self.spo[p]
                self.pos.pop(p, None)
        return True

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
        def index(ix: dict[int, defaultdict[int, set[int]]]) -> dict[int, RawEntry]:
            # an entry restored and never read since is written as it was read
            raw = ix.raw if isinstance(ix, _LazyIndex) else {}
            return {p: raw[p] if p in raw else _LazyEntry.packed(d) if isinstance(d, _LazyEntry) else _pack_entry(d)
                    for p, d in dict.items(ix)}

        if beside is not None and len(beside) <= len(self.facts) and beside <= self.facts:
            split, rest = True, self.facts - beside
        else:
            split, rest = False, self.facts
        facts = (split, array("i", chain.from_iterable(rest)).tobytes())
        return (LAYOUT, facts, index(self.spo), index(self.pos), self.count, sorted(self.pos_preds),
                self.pos_all, self.indexed, self.index_below)

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
    def from_lists(cls, parts: tuple[object, ...], beside: set[Fact] | None = None) -> FactStore:
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
                out.facts = beside.copy()
                out.facts.update(zip(it, it, it))
                if len(out.facts) != len(beside) + n:
                    raise ValueError("fact store parts overlap")
            else:
                out.facts = set(zip(it, it, it))
                if len(out.facts) != n:
                    raise ValueError("duplicate facts")
            out.count = dict(count)  # type: ignore[call-overload]
            # each entry built on first access (_LazyIndex); its shape is checked now
            spo_raw: dict[int, RawEntry] = dict(spo)  # type: ignore[call-overload]
            pos_raw: dict[int, RawEntry] = dict(pos)  # type: ignore[call-overload]
            for p, raw in spo_raw.items():
                if _check_entry(raw) != out.count.get(p):
                    raise ValueError("an index entry and its count disagree")
            for raw in pos_raw.values():
                _check_entry(raw)
            out.spo = _LazyIndex(spo_raw)
            out.pos = _LazyIndex(pos_raw)
            out.pos_preds = set(pos_preds)  # type: ignore[call-overload]
            out.pos_all = bool(pos_all)
        except (TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"not a fact store: {e}") from e
        n = sum(out.count.values())
        if out.indexed and (n > len(out.facts) if below is not None else n != len(out.facts)):
            raise ValueError("fact store parts disagree in size")
        return out

    def predicates(self) -> set[int]:
        """Predicate ids present (computed from ``facts`` when not indexed)."""
        if self.indexed and self.index_below is None:
            return set(self.spo)
        return {f[1] for f in self.facts}

