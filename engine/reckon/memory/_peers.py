"""The write path's peer index: the active memories of a tenant grouped by scope and
stakeholder, with their normalised labels and word tokens, so dedup by label and the
conflict judge's candidates are found without a query per write. A cache of the store
kept per generation (:class:`PeerCache`, one per :class:`~reckon.memory.service.MemoryService`);
the store decides.

**Persisted beside the store.** Reading one (scope, stakeholder) group cold costs ~5 term
reads per member on the store (~60 µs a member: ~28 ms for a person with 450 memories),
and a process writes for many people. So the groups a process has read are saved in
``<tenant>/peers/index.bin`` (:data:`SIDECAR`), each group with the store generation it
is exact at, and a later process lists a group from that file instead of re-reading it:
the members written since (:meth:`TenantStore.changes
<reckon.store.TenantStore.changes>`, other processes' commits included) are re-read from
the store first. The file is ``MAGIC``, the SHA-256 of the payload, then the payload (a
:mod:`marshal` dump of plain strings, ints and tuples: version, tenant, incarnation, and
per group its generation and its members as one flat blob, :data:`_SavedGroup`: member
IRIs, their type sets, normalised labels and word tokens as a few joined strings and
integer arrays, and the label -> members and token -> members maps as sorted keys with
offsets, read by binary search; so listing a saved group on its first write is a few
C-level calls, not an object per member and token. The blob is decoded and checked on
that first use (layout, lengths, ranges but the token map's, sortedness, and that the
maps hold as many pairs as the members say), and a group whose blob does not fit is read
from the store; what a map's key lists is checked against the members' rows (and the
token map's indices against the member count) when the key is first read.
A file of an earlier layout (another ``MAGIC``) is ignored and replaced at the next save.
Written under a unique temporary name and renamed (a
process killed mid-write leaves the previous file); a file that is torn (checksum), of
another tenant or incarnation, of another version, ahead of the store, or whose
generations the change log no longer bridges (or whose commits since changed the
schema) is ignored: the groups are read from the store as without it. A cache only:
the store decides, and losing the file loses nothing.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import marshal
import os
import secrets
import threading
import time
import weakref
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from operator import lt
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pyoxigraph import NamedNode, Quad

from reckon._errors import TenantClosed, TenantGone
from reckon._lazydict import LazyDict
from reckon.memory import _rdf as R
from reckon.memory.conflicts import tokens
from reckon.memory.models import MemoryInput, normalise_label

if TYPE_CHECKING:
    from reckon.memory.service import MemoryService

__all__ = ["MAGIC", "SIDECAR", "PeerCache", "_PeerEntry", "_PeerIndex", "_groups_of"]

log = logging.getLogger(__name__)

SIDECAR = Path("peers") / "index.bin"
"""The saved peer index, relative to the tenant directory."""
MAGIC = b"RKPEERS\x03"
_VERSION = 3  # bump when the entry layout, normalise_label or tokens change
SAVE_EVERY = 1.0
"""Seconds the write path must be idle before the background saver writes the index (a
save encodes the groups changed since the last: ~10-20 ms at 10k memories, under
:attr:`PeerCache.guard`, so never inside a user's write); asked for when a group was read
cold, or when the file is :data:`RESAVE_AFTER` generations behind."""
PREFILL = True
"""Whether the idle saver lists every person's group (:meth:`PeerCache.prefill`) before
it saves."""
PREFILL_CHUNK = 16
"""Members the prefill reads per store snapshot: a write of this process waits at most
that many members' reads (~0.1 ms each) behind it."""
SAVE_AT_MOST = 30.0
"""Seconds after which the saver writes even though the write path never went idle."""
SAVE_BEHIND = 512
"""A saved group more generations behind the store than this is not used (read from the
store instead): bringing it forward parses the change log since (~0.05 ms a commit at 10k
memories: ~25 ms at this bound, once per process) and probes each memory a commit
touched since for its groups (~0.05 ms each; read whole only when it is in the group
listed), which beyond this costs more than a cold read of a person's group (~60 µs a
member). Commits that touch no memory (transcript turns, business data) cost only
their parse, so a process that records turns for a while does not age the file out."""
_YIELD_EVERY = 256
"""Members a save encodes between two offers of the GIL to the write path."""
RESAVE_AFTER = 32
"""Generations a process's index may move ahead of its last save before a write asks
the idle saver for a new one."""


class _PeerEntry:
    """One active memory as the write path's dedup / conflict reads see it."""

    __slots__ = ("a", "enc", "full", "groups", "label_key", "lean", "saved", "toks")

    def __init__(self, a: dict[Any, list[Any]], groups: list[tuple[Any, ...]], full: bool = True,
                 lean: bool = False) -> None:
        # asserted triples: all of them when ``full``; else the peers query's fields; only
        # type, label and content when ``lean`` (a group's first read: the rest on need)
        self.a = a
        self.full = full
        self.lean = lean and not full
        self.groups = groups  # the (scope, stakeholder) groups of the index it is listed in
        self.enc: tuple[Any, ...] | None = None  # its row in the saved index, once encoded
        self.saved = False  # made from the saved index (restore): checked against the store when read
        self.label_key = normalise_label(a[R.LABEL][0].value)
        content = a.get(R.P_CONTENT)
        self.toks = frozenset(tokens(f"{a[R.LABEL][0].value} {content[0].value if content else ''}"))

    @classmethod
    def restore(cls, a: dict[Any, list[Any]], label_key: str, toks: frozenset[str]) -> _PeerEntry:
        """A lean entry from the saved index (label key and tokens as saved)."""
        e = cls.__new__(cls)
        e.a, e.full, e.lean, e.groups, e.label_key, e.toks = a, False, True, [], label_key, toks
        e.enc, e.saved = None, True
        return e

    def node(self, m: NamedNode, view: Any) -> dict[Any, list[Any]]:
        """All asserted triples of the memory (read from ``view`` once, on first need)."""
        if not self.full:
            a: dict[Any, list[Any]] = defaultdict(list)
            for q in view.quads(m, None, None, R.MEMORIES):
                a[q.predicate].append(q.object)
            self.a, self.full, self.lean = dict(a), True, False
        return self.a

    def partial(self, scope_iri: NamedNode, m: NamedNode | None = None, view: Any = None) -> dict[Any, list[Any]]:
        """The fields the peers query reads (type, label, content, team, kind, source,
        scope); a lean entry reads its node from ``view`` first."""
        if self.lean:
            if view is None or m is None:
                raise ValueError("a lean peer entry needs its memory and a view to list its fields")
            self.node(m, view)
        d: dict[Any, list[Any]] = defaultdict(list)
        for p in _PEER_FIELDS:
            if p in self.a:
                d[p] = list(dict.fromkeys(self.a[p]))
        d[R.P_SCOPE] = [scope_iri]
        return d


def _read(m: Any, view: Any) -> dict[Any, list[Any]] | None:
    """The asserted triples of ``m`` when it is an active memory with a scope, a type and
    a label, else ``None``."""
    if not isinstance(m, NamedNode) or not view.contains(Quad(m, R.A, R.ACTIVE, R.INFERRED)):
        return None
    a: dict[Any, list[Any]] = defaultdict(list)
    for q in view.quads(m, None, None, R.MEMORIES):
        a[q.predicate].append(q.object)
    if not a.get(R.P_SCOPE) or not a.get(R.A) or not a.get(R.LABEL):
        return None
    return dict(a)


_UNREAD: Any = object()
_GROUP_FIELDS = (R.P_SCOPE, R.P_OWNER, R.P_TEAM, *(pred for pred, _ in R.LINKS.values()))


def _groups_now(m: Any, view: Any) -> list[tuple[Any, ...]]:
    """The groups memory ``m`` is listed in as of ``view`` (:func:`_groups_of` of its
    scope, owner, team and link triples; none when it is not an active memory): a few
    pattern reads, where :func:`_read` reads every triple of it."""
    if not isinstance(m, NamedNode) or not view.contains(Quad(m, R.A, R.ACTIVE, R.INFERRED)):
        return []
    a: dict[Any, list[Any]] = {}
    for pred in _GROUP_FIELDS:
        objs = [q.object for q in view.quads(m, pred, None, R.MEMORIES)]
        if objs:
            a[pred] = objs
    return _groups_of(a)


_PEER_FIELDS = (R.A, R.LABEL, R.P_CONTENT, R.P_TEAM, R.P_KIND, R.P_SOURCE)  # what a peer read returns
_USER = R.SCOPE_IRI["user"]
_TEAM = R.SCOPE_IRI["team"]
_LINKED = {R.SCOPE_IRI[name]: pred for name, (pred, _) in R.LINKS.items()}


def _groups_of(a: dict[Any, list[Any]]) -> list[tuple[Any, ...]]:
    """(scope, stakeholder) group keys of a memory: (user scope, owner) per owner, (team
    scope, team set), (project / conversation scope, its project / conversation),
    (scope,) otherwise."""
    out: list[tuple[Any, ...]] = []
    for s in a.get(R.P_SCOPE, []):
        if s == _USER:
            out.extend((s, o) for o in a.get(R.P_OWNER, []))
        elif s == _TEAM:
            if a.get(R.P_TEAM):
                out.append((s, frozenset(a[R.P_TEAM])))
        elif s in _LINKED:
            out.extend((s, o) for o in a.get(_LINKED[s], []))
        else:
            out.append((s,))
    return out


_K = TypeVar("_K")
_V = TypeVar("_V")


class _Unplaced(LazyDict[_K, _V]):
    """A :class:`~reckon._lazydict.LazyDict` without placeholders: ``len`` counts both
    parts, iteration makes every entry first."""

    __slots__ = ()

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.raw)

    def __iter__(self) -> Any:
        self.load_all()
        return dict.__iter__(self)

    def keys(self) -> Any:
        self.load_all()
        return dict.keys(self)


class _SavedSets(_Unplaced[str, set[NamedNode]]):
    """A saved group's label or token map (:class:`_SortedMap`: key -> member indices, as
    saved), each key's set of members made on its first lookup: a write looks up one
    label and its own tokens, not every key of the group. Behaves as the dict of sets it
    stands for (:class:`reckon._lazydict.LazyDict`); a key whose members all changed since
    the save has no entry (``in`` and iteration make entries first to leave it out).

    What a key lists is checked against the members' rows as it is made: a label key
    keeps the members whose row has that label (a dedup decision reads it), a token keeps
    those whose row's tokens contain it (a superset at worst: the judge reads the
    candidates' text)."""

    __slots__ = ("_iris", "_rows", "_skip")

    def __init__(self, raw: _SortedMap, iris: list[str], skip: set[int], rows: list[str], exact: bool) -> None:
        super().__init__(raw, placeholders=False)  # type: ignore[arg-type]  # a group has thousands of tokens: no per-key cost
        self._iris = iris
        self._skip = skip  # members changed since the group was saved: not listed from it
        self._rows = (rows, exact)  # the members' label keys (exact) or token strings

    def _make(self, key: str, ix: tuple[int, ...]) -> set[NamedNode] | None:
        iris, skip = self._iris, self._skip
        rows, exact = self._rows
        fits = (lambda i: rows[i] == key) if exact else (lambda i: key in rows[i])
        members = {m for i in ix if i not in skip and fits(i) and (m := _term(iris[i])) is not None}
        return members or None

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (key in self.raw and self._load(key) is not None)


class _SavedRows:
    """The written part of :class:`_Entries`: memory -> its rows in the saved groups
    listed (``[(ctx, i, group), ...]``; ``ctx`` a group's decoded columns, ``i`` the
    member's row) for the members whose entry was not made yet. Held per group as the
    group's IRI -> row dict (``dict(zip(...))``, C speed) and the rows taken from it (made
    since, or changed since the save), not a term and a tuple per member (~60 ms of a
    40k-member group). What :class:`~reckon._lazydict.LazyDict` reads of its ``raw``:
    ``in``, ``get``, ``pop`` (the rows; the member then taken from every group),
    iteration and ``len``."""

    __slots__ = ("groups",)

    def __init__(self) -> None:
        self.groups: list[tuple[dict[str, int], tuple[Any, ...], tuple[Any, ...], set[int]]] = []

    def add(self, index: dict[str, int], ctx: tuple[Any, ...], g: tuple[Any, ...], taken: set[int]) -> None:
        """Serve group ``g``'s members (``index``: IRI -> row of ``ctx``) but ``taken``."""
        self.groups.append((index, ctx, g, taken))

    def _rows(self, m: object) -> list[tuple[Any, ...]]:
        if type(m) is not NamedNode:
            return []
        v = m.value
        out = []
        for index, ctx, g, taken in self.groups:
            i = index.get(v)
            if i is not None and i not in taken:
                out.append((ctx, i, g))
        return out

    def __contains__(self, m: object) -> bool:
        if type(m) is not NamedNode:
            return False
        v = m.value
        for index, _, _, taken in self.groups:
            i = index.get(v)
            if i is not None and i not in taken:
                return True
        return False

    def get(self, m: object, default: Any = None) -> Any:
        return self._rows(m) or default

    def pop(self, m: object, *default: Any) -> Any:
        rows = self._rows(m)
        if not rows:
            if default:
                return default[0]
            raise KeyError(m)
        v = m.value  # type: ignore[attr-defined]  # rows: a NamedNode
        for index, _, _, taken in self.groups:
            i = index.get(v)
            if i is not None:
                taken.add(i)
        return rows

    def __iter__(self) -> Iterator[NamedNode]:
        seen: set[str] = set()
        out = []
        for index, _, _, taken in self.groups:
            for v, i in index.items():
                if i not in taken and v not in seen and (m := _term(v)) is not None:
                    seen.add(v)
                    out.append(m)
        return iter(out)

    def __len__(self) -> int:
        return len(list(iter(self)))


class _Entries(_Unplaced[NamedNode, _PeerEntry]):
    """The peer index's entries by memory. A member of a group listed from the saved
    index stands as its rows there (``raw``: :class:`_SavedRows`) until its entry is
    read: a write reads the few members its label and tokens name, not a 40k-member
    company group's every entry (making them all was ~0.3 s of a fresh process's first
    company-scope write at 100k memories). Only ``[]``, ``get``, ``pop``, assignment
    and ``del`` are used; ``in``, ``len`` and iteration see both parts."""

    __slots__ = ()

    raw: _SavedRows  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__(_SavedRows(), placeholders=False)  # type: ignore[arg-type]

    def _make(self, m: NamedNode, rows: list[tuple[Any, ...]]) -> _PeerEntry:
        ctx, i, _ = rows[0]
        iris, types, type_idx, label_keys, toks_of, kinds = ctx
        k = type_idx[i]
        ts = toks_of[i]
        e = _PeerEntry.restore({R.A: list(kinds[k])}, label_keys[i], frozenset(ts.split(" ")) if ts else frozenset())
        e.enc = (iris[i], types[k], label_keys[i], ts)  # as it would encode again
        for _, _, g in rows:
            if g not in e.groups:
                e.groups.append(g)
        return e

    def enc_of(self, m: NamedNode) -> tuple[Any, ...] | _PeerEntry:
        """Member ``m``'s encoded row when its entry was never read (nothing made), else
        its entry."""
        if dict.__contains__(self, m):
            return dict.__getitem__(self, m)
        rows = self.raw.get(m)
        if rows is None:
            raise KeyError(m)
        return _row(rows[0][0], rows[0][1])

    def __contains__(self, m: object) -> bool:
        return dict.__contains__(self, m) or m in self.raw


def _as_listed(m: Any, a: dict[Any, list[Any]], gkey: tuple[Any, ...], view: Any) -> bool:
    """Whether memory ``m`` (its asserted triples ``a``, read from ``view``) is an active
    memory of group ``gkey``, as the index lists it."""
    return (bool(a.get(R.LABEL)) and bool(a.get(R.A)) and gkey in _groups_of(a)
            and view.contains(Quad(m, R.A, R.ACTIVE, R.INFERRED)))


def _term(iri: str) -> NamedNode | None:
    """The term of an IRI read from the file (``None``: it does not parse, never listed)."""
    try:
        return NamedNode(iri)
    except ValueError:
        return None


def _row(ctx: tuple[Any, ...], i: int) -> tuple[Any, ...]:
    """Row ``i`` of a saved group's columns ``ctx`` as :func:`_enc_rows` encodes it."""
    iris, types, type_idx, label_keys, toks_of = ctx[:5]
    return iris[i], types[type_idx[i]], label_keys[i], toks_of[i]


class _Members:
    """The members of a group listed from the saved index: its members as saved (the
    group's IRI -> row dict, ``index``) less those that left since (``out``, IRIs), plus
    those that joined (``joined``, terms). ``in``, ``add``, ``discard`` and ``len`` make
    no term; iterating (a subclass memory's candidates, a peers read) makes the set of
    terms once and keeps it in step (``_all``). A save encodes the group from ``index``,
    ``out`` and ``joined`` (:meth:`PeerCache._save_job`)."""

    __slots__ = ("_all", "ctx", "index", "joined", "out")

    def __init__(self, index: dict[str, int], out: set[str], ctx: tuple[Any, ...]) -> None:
        self.index, self.out, self.ctx = index, out, ctx  # ctx: the group's decoded columns (_row)
        self.joined: set[NamedNode] = set()
        self._all: set[NamedNode] | None = None

    def __contains__(self, m: object) -> bool:
        if type(m) is NamedNode and m.value in self.index:
            return m.value not in self.out
        return m in self.joined

    def add(self, m: NamedNode) -> None:
        if type(m) is NamedNode and m.value in self.index:
            self.out.discard(m.value)
        else:
            self.joined.add(m)
        if self._all is not None:
            self._all.add(m)

    def discard(self, m: NamedNode) -> None:
        if type(m) is NamedNode and m.value in self.index:
            self.out.add(m.value)
        else:
            self.joined.discard(m)
        if self._all is not None:
            self._all.discard(m)

    def update(self, ms: Any) -> None:
        for m in ms:
            self.add(m)

    def __len__(self) -> int:
        return len(self.index) - len(self.out) + len(self.joined)

    def __iter__(self) -> Iterator[NamedNode]:
        if self._all is None:
            out = self.out
            try:
                self._all = set(map(NamedNode, (v for v in self.index if v not in out) if out else self.index))
            except ValueError:  # an IRI that does not parse (a foreign writer's file): left out
                self._all = {m for v in self.index if v not in out and (m := _term(v)) is not None}
            self._all |= self.joined
        return iter(self._all)


class _PeerIndex:
    """Active memories of a tenant by (scope, stakeholder) group, as of one store
    generation: normalised label -> memories (dedup) and word token -> memories
    (conflict candidates of the lexical judge). A group is read (by the peers query)
    the first time a write needs it, then kept; the index is brought forward by
    re-reading only the memories that known commits touched."""

    def __init__(self, gen: int) -> None:
        self.gen = gen
        self.complete = False  # every group listed (built whole from the mirror)
        self.built: set[tuple[Any, ...]] = set()
        self.entries: _Entries = _Entries()
        self.groups: dict[tuple[Any, ...], set[NamedNode] | _Members] = defaultdict(set)
        # per group: normalised label -> members, word token -> members (a map per group, so
        # listing a saved group is a few dict comprehensions, not a tuple key per token)
        self.by_label: dict[tuple[Any, ...], dict[str, set[NamedNode]]] = defaultdict(dict)
        self.by_token: dict[tuple[Any, ...], dict[str, set[NamedNode]]] = defaultdict(dict)
        # groups of the saved index not listed yet: key -> (its generation, encoded members)
        self.saved: dict[tuple[Any, ...], tuple[int, bytes]] = {}
        # memories a commit touched after the oldest saved group: memory -> last generation
        self.touched: dict[Any, int] = {}
        self.reads: dict[Any, dict[Any, list[Any]] | None] = {}  # touched memories as read now
        self.probes: dict[Any, list[tuple[Any, ...]]] = {}  # touched memories' groups now (_groups_now)
        self.cold = 0  # groups read from the store (not the saved index)
        self.dirty: set[tuple[Any, ...]] = set()  # listed groups changed since their last encoding
        self.encoded: dict[tuple[Any, ...], bytes] = {}  # listed groups as last encoded
        # lists nodes of a batch not committed yet (remember_many): never saved until the
        # index is brought forward past that batch's commit (a failed batch drops it)
        self.unsaved = False

    def _drop(self, m: NamedNode) -> None:
        e = self.entries.pop(m, None)
        if e is None:
            return
        for g in e.groups:
            self.dirty.add(g)
            members = self.groups.get(g)
            if members is not None:
                members.discard(m)
                if not members:
                    del self.groups[g]
            for d, keys in ((self.by_label, (e.label_key,)), (self.by_token, e.toks)):
                sub = d.get(g)
                if sub is None:
                    continue
                for k in keys:
                    members = sub.get(k)
                    if members is not None:
                        members.discard(m)
                        if not members:
                            del sub[k]
                if not sub:
                    del d[g]

    def _join(self, m: NamedNode, e: _PeerEntry, g: tuple[Any, ...]) -> None:
        self.dirty.add(g)
        self.groups[g].add(m)
        labels = self.by_label[g]
        members = labels.get(e.label_key)
        if members is None:
            labels[e.label_key] = {m}
        else:
            members.add(m)
        toks = self.by_token[g]
        for tok in e.toks:
            members = toks.get(tok)
            if members is None:
                toks[tok] = {m}
            else:
                members.add(m)

    def refresh(self, m: Any, view: Any) -> dict[Any, list[Any]] | None:
        """Re-read memory ``m`` from ``view``: listed in its built groups when it is an
        active memory, else dropped. Returns its asserted triples (``None``: not an
        active memory)."""
        self._drop(m)
        a = _read(m, view)
        if a is None:
            return None
        groups = [g for g in _groups_of(a) if self.complete or g in self.built]
        if groups:
            e = _PeerEntry(dict(a), groups)
            self.entries[m] = e
            for g in groups:
                self._join(m, e, g)
        return a

    @classmethod
    def build(cls, gen: int, view: Any) -> _PeerIndex:
        """Every group at once from the mirror: one pattern read per indexed predicate."""
        idx = cls(gen)
        active = {q.subject for q in view.quads(None, R.A, R.ACTIVE, R.INFERRED)}
        nodes: dict[Any, dict[Any, list[Any]]] = {}
        for p in (R.A, R.LABEL, R.P_CONTENT, R.P_SCOPE, R.P_OWNER, R.P_TEAM, R.P_PROJECT, R.P_CONVERSATION,
                  R.P_KIND, R.P_SOURCE):
            for q in view.quads(None, p, None, R.MEMORIES):
                if q.subject in active:
                    nodes.setdefault(q.subject, {}).setdefault(p, []).append(q.object)
        for m, a in nodes.items():
            if isinstance(m, NamedNode) and a.get(R.P_SCOPE) and a.get(R.A) and a.get(R.LABEL):
                groups = _groups_of(a)
                if groups:
                    e = idx.entries[m] = _PeerEntry(a, groups, full=False)
                    for g in groups:
                        idx._join(m, e, g)
        idx.complete = True
        return idx

    def add_saved(self, g: tuple[Any, ...], g0: int, rows: _SavedGroup, kinds: list[list[NamedNode]],
                  view: Any) -> None:
        """List group ``g`` from the saved index (exact at generation ``g0``; ``rows`` as
        :func:`_dec_group` decoded it, ``kinds`` its type sets as terms), then re-read
        from ``view`` the memories a commit after ``g0`` touched. Makes no term per
        member (:class:`_Members`, :class:`_SavedRows`, :class:`_SavedSets`)."""
        iris, types, type_idx, label_keys, toks_of, labelmap, tokmap = rows
        self.built.add(g)
        self.dirty.add(g)
        index = dict(zip(iris, range(len(iris))))
        touched = self.touched
        # changed since the save: listed as read now (below), not from the file
        stale = {i for m, when in touched.items()
                 if when > g0 and type(m) is NamedNode and (i := index.get(m.value)) is not None}
        taken = set(stale)
        entries = self.entries
        for m in dict.keys(entries):  # listed already (another group's member too): its entry
            i = index.get(m.value)
            if i is not None and i not in stale:
                taken.add(i)
                e = dict.__getitem__(entries, m)
                if g not in e.groups:
                    e.groups.append(g)
        ctx = (iris, types, type_idx, label_keys, toks_of, kinds)
        entries.raw.add(index, ctx, g, taken)
        for d, saved, keyed, exact in ((self.by_label, labelmap, label_keys, True),
                                       (self.by_token, tokmap, toks_of, False)):
            have = d.get(g)
            lazy = _SavedSets(saved, iris, stale, keyed, exact)
            if have:  # the group was not listed: nothing of it is in the maps (join what is, to be sure)
                for key, members in have.items():
                    lazy.setdefault(key, set()).update(members)
            d[g] = lazy
        had = self.groups.get(g)
        self.groups[g] = listed = _Members(index, {iris[i] for i in stale}, ctx)
        if had:
            listed.update(had)
        for m, when in touched.items():
            if when <= g0:
                continue
            now = self.reads.get(m, _UNREAD)
            if now is _UNREAD:
                probe = self.probes.get(m)
                if probe is None:
                    probe = self.probes[m] = _groups_now(m, view)
                if g not in probe:
                    continue  # another group's memory (most of those written since): not read whole
                now = self.reads[m] = _read(m, view)
            if now is None or g not in _groups_of(now):
                continue
            e = self.entries.get(m)
            if e is None:
                e = self.entries[m] = _PeerEntry(dict(now), [g])
            elif g not in e.groups:
                e.groups.append(g)
            self._join(m, e, g)

    def add_group(self, g: tuple[Any, ...], nodes: dict[NamedNode, dict[Any, list[Any]]]) -> None:
        """List the group's members (``nodes``: memory -> its type, label and content)."""
        self.built.add(g)
        for m, a in nodes.items():
            e = self.entries.get(m)
            if e is None:
                e = self.entries[m] = _PeerEntry(dict(a), [g], full=False, lean=True)
            elif g not in e.groups:
                e.groups.append(g)
            self._join(m, e, g)


def _enc_key(g: tuple[Any, ...]) -> tuple[Any, ...]:
    head = g[0] if isinstance(g[0], str) else "<" + g[0].value
    if len(g) == 1:
        return (head,)
    x = g[1]
    return (head, tuple(sorted(t.value for t in x)) if isinstance(x, frozenset) else x.value)


def _dec_key(k: tuple[Any, ...]) -> tuple[Any, ...]:
    head: Any = NamedNode(k[0][1:]) if k[0].startswith("<") else k[0]
    if len(k) == 1:
        return (head,)
    x = k[1]
    return (head, frozenset(NamedNode(v) for v in x) if isinstance(x, tuple) else NamedNode(x))


# A group as saved: a marshal of plain strings, bytes and ints, laid out so that decoding
# it is a few C-level calls, not an object per member and token (a 40k-member company
# group: ~0.12 s as tuples of tuples, ~10 ms so), and the maps are read by binary search:
# (member count; member IRIs, sorted, joined by "\n"; the distinct type sets; per member the
# index of its type set (array "i"); normalised labels joined by "\n"; word tokens, each
# member's sorted and joined by " ", joined by "\n"; the label map and the token map, each
# (keys sorted and joined by "\n", offsets into the member indices (array "i", one more
# than the keys), member indices (array "i"))). "\n" is in no IRI, label key or token
# (encoding checks), " " in no token.
_SavedMap = tuple[str, bytes, bytes]
_SavedGroup = tuple[list[str], tuple[tuple[str, ...], ...], "array[int]", list[str], list[str], "_SortedMap", "_SortedMap"]


def _enc_map(d: dict[str, list[int]]) -> _SavedMap:
    keys = sorted(d)
    off, ix = array("i", [0]), array("i")
    for k in keys:
        ix.extend(d[k])
        off.append(len(ix))
    return "\n".join(keys), off.tobytes(), ix.tobytes()


def _saved_rows(index: dict[str, int], out: set[str], made: dict[str, _PeerEntry], joined: list[tuple[str, Any]],
                ctx: tuple[Any, ...]) -> list[tuple[str, _PeerEntry | tuple[Any, ...]]]:
    """The rows of a group listed from the file (:class:`_Members`) as :func:`_enc_rows`
    takes them: each member as saved (``index``) but those that left (``out``), from its
    entry when one was made since (``made``), else its saved row; then those that
    joined."""
    rows: list[tuple[str, Any]] = []
    for i, (iri, at) in enumerate(index.items()):
        if not i % (8 * _YIELD_EVERY):
            time.sleep(0)  # the GIL to a write of this process now and then
        if iri not in out:
            e = made.get(iri)
            rows.append((iri, e if e is not None else _row(ctx, at)))
    rows.extend(joined)
    return rows


def _enc_rows(rows: list[tuple[str, _PeerEntry | tuple[Any, ...]]]) -> bytes:
    """A group's members (``rows``: each member's IRI with its entry, or its encoded row
    when its entry was never made) as :data:`_SavedGroup`, marshalled.

    :raises TypeError: when a member has a type that is not an IRI, or a field holds the
        layout's separator (the group is not saved)."""
    iris: list[str] = []
    types: dict[tuple[str, ...], int] = {}
    type_idx = array("i")
    labels: list[str] = []
    toks: list[str] = []
    labelmap: dict[str, list[int]] = {}
    tokmap: dict[str, list[int]] = {}
    by_iri = sorted(rows, key=lambda r: r[0])
    for i, (m, e) in enumerate(by_iri):
        if not i % _YIELD_EVERY:
            time.sleep(0)  # the GIL to a write of this process now and then (the saver runs beside writes)
        if isinstance(e, tuple):
            iri, kinds, label_key, ts = e
        else:
            if e.enc is None:  # an entry is replaced, never changed, when its memory changes
                kinds = tuple(_enc_iri(o) for o in e.a.get(R.A, ()))
                e.enc = (m, kinds, e.label_key, " ".join(sorted(e.toks)))
            iri, kinds, label_key, ts = e.enc
        iris.append(iri)
        type_idx.append(types.setdefault(kinds, len(types)))
        labels.append(label_key)
        toks.append(ts)
        labelmap.setdefault(label_key, []).append(i)
        if ts:
            for t in ts.split(" "):
                tokmap.setdefault(t, []).append(i)
    n = len(iris)
    out = ["\n".join(iris), "\n".join(labels), "\n".join(toks)]
    if n and any(x.count("\n") != n - 1 for x in out) or any("\n" in k or " " in k for k in tokmap):
        raise TypeError("a separator in a saved field")
    return marshal.dumps((n, out[0], tuple(types), type_idx.tobytes(), out[1], out[2],
                          _enc_map(labelmap), _enc_map(tokmap)))


def _enc_iri(t: Any) -> str:
    if type(t) is NamedNode:
        return t.value
    raise TypeError(f"not saved in the peer index: {t!r}")


def _ints(b: Any) -> array[int]:
    if type(b) is not bytes or len(b) % array("i").itemsize:
        raise ValueError("peer group layout")
    out: array[int] = array("i")
    out.frombytes(b)
    return out


def _lines(s: Any, n: int) -> list[str]:
    if type(s) is not str:
        raise ValueError("peer group layout")
    out = s.split("\n") if n else []
    if len(out) != n or (n == 0 and s):
        raise ValueError("peer group member")
    return out


class _SortedMap:
    """A saved label or token map (:data:`_SavedMap`, decoded and checked): key -> member
    indices by binary search over the sorted keys, without a dict of the group's ~10^5
    keys. The ``raw`` of a :class:`_SavedSets`: ``in``, ``pop`` (a key's indices, once),
    ``len`` and iteration over the keys not popped yet. With ``checked`` every index is
    range-checked here (the label map: one per member); else a key's indices are
    range-checked as they are read, and one that is not a member's is left out (the token
    map: checking the ~4*10^5 indices of a 40k-member group cost more than the rest of its
    decode, and a token only offers the judge candidates)."""

    __slots__ = ("_ix", "_keys", "_members", "_off", "_popped")

    def __init__(self, saved: Any, members: int, checked: bool) -> None:
        """:raises ValueError: when the map does not fit a group of ``members`` members."""
        if type(saved) is not tuple or len(saved) != 3:
            raise ValueError("peer group maps")
        keys_s, off_b, ix_b = saved
        off, ix = _ints(off_b), _ints(ix_b)
        keys = _lines(keys_s, len(off) - 1) if off else None
        if keys is None or off[0] != 0 or off[-1] != len(ix):
            raise ValueError("peer group maps")
        # offsets strictly increasing (no key without members), keys strictly sorted (C-level passes)
        if not all(map(lt, off, off[1:])) or not all(map(lt, keys, keys[1:])):
            raise ValueError("peer group maps")
        if checked and ix and (min(ix) < 0 or max(ix) >= members):
            raise ValueError("peer group member index")
        self._keys, self._off, self._ix, self._members = keys, off, ix, members
        self._popped: set[str] = set()

    def pairs(self) -> int:
        """(key, member) pairs in the map as saved."""
        return len(self._ix)

    def _at(self, key: object) -> int:
        keys = self._keys
        i = bisect_left(keys, key) if type(key) is str else len(keys)
        return i if i < len(keys) and keys[i] == key and key not in self._popped else -1

    def _span(self, i: int) -> tuple[int, ...]:
        n = self._members
        return tuple(x for x in self._ix[self._off[i]:self._off[i + 1]] if 0 <= x < n)

    def __contains__(self, key: object) -> bool:
        return self._at(key) >= 0

    def pop(self, key: str, *default: Any) -> Any:
        i = self._at(key)
        if i < 0:
            if default:
                return default[0]
            raise KeyError(key)
        self._popped.add(key)
        return self._span(i)

    def get(self, key: str, default: Any = None) -> Any:
        i = self._at(key)
        return default if i < 0 else self._span(i)

    def __len__(self) -> int:
        return len(self._keys) - len(self._popped)

    def __iter__(self) -> Iterator[str]:
        popped = self._popped
        return iter([k for k in self._keys if k not in popped] if popped else list(self._keys))


def _dec_group(blob: bytes) -> _SavedGroup:
    """A saved group, checked whole (C-level passes) before anything of it is listed.

    :raises ValueError: when its layout or an index in it does not fit (never listed)."""
    t = marshal.loads(blob)
    if type(t) is not tuple or len(t) != 8 or type(t[0]) is not int or type(t[2]) is not tuple:
        raise ValueError("peer group layout")
    n, iris_s, types, type_idx_b, labels_s, toks_s, labelmap_s, tokmap_s = t
    iris, labels, toks = _lines(iris_s, n), _lines(labels_s, n), _lines(toks_s, n)
    type_idx = _ints(type_idx_b)
    if "" in iris:
        raise ValueError("peer group member")
    if len(type_idx) != n:
        raise ValueError("peer group layout")
    if not all(type(ts) is tuple and all(type(x) is str for x in ts) for ts in types):
        raise ValueError("peer group types")
    if type_idx and (min(type_idx) < 0 or max(type_idx) >= len(types)):
        raise ValueError("peer group type index")
    labelmap, tokmap = _SortedMap(labelmap_s, n, True), _SortedMap(tokmap_s, n, False)
    # the maps must say as much as the members do: each member under one label, and as
    # many (token, member) pairs as the members have tokens (what each key lists is
    # checked against the member's row when the key is first read: _SavedSets)
    if labelmap.pairs() != n or tokmap.pairs() != toks_s.count(" ") + n - toks.count(""):
        raise ValueError("peer group maps")
    return iris, types, type_idx, labels, toks, labelmap, tokmap


def _subjects(c: Any) -> set[Any] | None:
    """Memories whose peer entry commit ``c`` may change (asserted memory triples, the
    active status); ``None`` when it changed the schema."""
    out: set[Any] = set()
    for q in (*c.added, *c.removed):
        if q.graph_name == R.MEMORIES:
            out.add(q.subject)
        elif q.graph_name == R.SCHEMA:
            return None
    for t in (*c.inferred_added, *c.inferred_removed):
        if t.predicate == R.A and t.object == R.ACTIVE:
            out.add(t.subject)
    return out


class PeerCache:
    """The peer index of one :class:`~reckon.memory.service.MemoryService` (``current``),
    brought forward from generation to generation by the commits this process knows of
    (``commits``: generation -> Commit of the service's own writes), and the peer reads
    the write path makes through it (dedup by label, conflict candidates)."""

    def __init__(self, svc: MemoryService) -> None:
        self.svc = svc
        self.current: _PeerIndex | None = None
        self.commits: dict[int, Any] = {}
        self.lock = threading.Lock()
        self.saved_at = float("-inf")  # perf_counter of this process's last save
        self.saved_gen = -1  # the oldest group generation in the last file read (or written: all at one)
        self.saved_cold = 0  # groups read cold, as of the last save
        # held by the write path while it reads or changes the index (inside the store's
        # transaction: the store's lock is always taken first), and by a save
        self.guard = threading.RLock()
        self._save_lock = threading.Lock()  # one file write at a time (idle saver, close, exit)
        self.last_use = time.perf_counter()  # of the write path, for the idle save
        self._saver: threading.Thread | None = None
        self._exit_hook = False
        self._closed = False
        self.distrusted = 0  # indexes dropped for disagreeing with the store (distrust)

    def sidecar(self) -> Path | None:
        """The saved index's path (``None``: a store without a tenant directory)."""
        path = getattr(self.svc.store, "path", None)
        inc = getattr(self.svc.store, "incarnation", None)
        return Path(path) / SIDECAR if isinstance(path, (str, Path)) and isinstance(inc, str) else None

    def load(self, gen: int) -> _PeerIndex | None:
        """The saved index brought to generation ``gen`` (inside the open transaction),
        its groups still encoded; ``None`` when there is no usable file (module docstring)."""
        path = self.sidecar()
        if path is None:
            return None
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        if raw[:len(MAGIC)] != MAGIC and raw[:len(MAGIC) - 1] == MAGIC[:-1]:
            return None  # another layout's file (an older release): replaced at the next save
        try:
            if raw[:len(MAGIC)] != MAGIC or hashlib.sha256(raw[len(MAGIC) + 32:]).digest() != raw[len(MAGIC):len(MAGIC) + 32]:
                raise ValueError("checksum")
            version, tenant, inc, groups = marshal.loads(raw[len(MAGIC) + 32:])
            if version != _VERSION or tenant != self.svc.tenant or inc != getattr(self.svc.store, "incarnation", None):
                return None
            saved = {_dec_key(k): (g0, blob) for k, (g0, blob) in groups.items()
                     if type(g0) is int and type(blob) is bytes}
        except Exception as e:  # noqa: BLE001 - a cache: whatever is wrong in it (OverflowError of an infinite
            # generation, a nested structure of another shape), the groups are read from the store
            log.warning("peer index %s unreadable (%s: %s): groups are read from the store", path,
                        type(e).__name__, str(e)[:200])
            return None
        saved = {k: v for k, v in saved.items() if 0 <= gen - v[0] <= SAVE_BEHIND}
        if not saved:
            return None
        oldest = min(g0 for g0, _ in saved.values())
        touched = self.touched(oldest, gen)
        if touched is None:
            return None
        idx = _PeerIndex(gen)
        idx.saved, idx.touched = saved, touched
        self.saved_gen = min(g0 for g0, _ in saved.values())  # the oldest: a save brings it forward
        return idx

    def touched(self, old: int, new: int) -> dict[Any, int] | None:
        """Memory -> the last generation in ``old + 1 .. new`` whose commit may change its
        peer entry, from the store's change log; ``None`` when it does not reach back or a
        commit in between changed the schema."""
        changes = getattr(self.svc.store, "changes", None)
        if changes is None:
            return None
        commits = changes(old, new) if new > old else []
        if commits is None:
            return None
        out: dict[Any, int] = {}
        for c in commits:
            subjects = _subjects(c)
            if subjects is None:
                return None
            for m in subjects:
                out[m] = c.generation
        return out

    def save(self, idx: _PeerIndex) -> None:
        """Write the index (listed groups at ``idx.gen``, saved ones not listed yet at
        their own generation) under a unique temporary name, then rename it. Called
        under :attr:`guard` (as :meth:`flush` does): this takes what the file needs
        (:meth:`_save_job`, a few ms), lets the guard go while the changed groups are
        encoded and the file written, and takes it again at the end."""
        job = self._save_job(idx)
        depth = 0
        while True:  # out of the guard (re-entrant: however often this thread holds it)
            try:
                self.guard.release()
            except RuntimeError:
                break
            depth += 1
        try:
            self._write(job)
        finally:
            for _ in range(depth):
                self.guard.acquire()

    def _save_job(self, idx: _PeerIndex) -> tuple[Any, ...]:
        """What :meth:`_write` needs of ``idx``, taken under :attr:`guard`: the saved
        groups as they are, each listed group's blob when unchanged since its last
        encoding, else its members and their entries (entries are replaced, never
        changed, when a memory changes: reading them later is safe)."""
        saved = {_enc_key(k): v for k, v in idx.saved.items()}
        groups: list[tuple[tuple[Any, ...], bytes | None, Any]] = []
        enc_of, entries = idx.entries.enc_of, idx.entries
        for g in idx.built:
            blob = idx.encoded.get(g)
            if blob is not None and g not in idx.dirty:  # an unchanged group is exact at idx.gen still
                groups.append((g, blob, None))
                continue
            # its cached blob is stale from now on: a save taken while this one encodes must
            # encode the group itself, never stamp the old blob with this generation
            idx.encoded.pop(g, None)
            members = idx.groups.get(g, ())
            if type(members) is _Members:  # listed from the file: its rows, and what changed since
                index, out = members.index, set(members.out)
                made = {m.value: dict.__getitem__(entries, m) for m in dict.keys(entries)
                        if m.value in index and m.value not in out}
                joined = [(m.value, enc_of(m)) for m in members.joined]
                groups.append((g, None, (index, out, made, joined, members.ctx)))
            else:
                groups.append((g, None, [(m.value, enc_of(m)) for m in members]))
        idx.dirty.clear()
        return idx, idx.gen, idx.cold, saved, groups, self.distrusted

    def _write(self, job: tuple[Any, ...]) -> None:
        """Encode the changed groups of ``job`` (:meth:`_save_job`) and write the file,
        outside :attr:`guard` (a write of this process does not wait for it); one save
        at a time."""
        idx, gen, cold, saved, groups, distrusted = job
        path = self.sidecar()
        if path is None or not path.parent.parent.is_dir():
            return  # no tenant directory (deleted, e.g. before the exit hook ran): nothing to keep
        with self._save_lock:
            if distrusted != self.distrusted:
                return  # the index was dropped since the job was taken (distrust)
            self.saved_at = time.perf_counter()
            self.saved_cold = cold
            try:
                out = dict(saved)
                fresh: dict[tuple[Any, ...], bytes] = {}
                for g, blob, rows in groups:
                    if blob is None:
                        try:
                            blob = fresh[g] = _enc_rows(rows if type(rows) is list else _saved_rows(*rows))
                        except TypeError:
                            continue  # a term the file does not keep: that group is read from the store
                    out[_enc_key(g)] = (gen, blob)
                self._write_file(path, marshal.dumps((_VERSION, self.svc.tenant,
                                                      getattr(self.svc.store, "incarnation", None), out)))
                self.saved_gen = gen
            except OSError as e:  # a cache: the write goes on without it
                if path.parent.parent.is_dir():  # else the tenant was deleted meanwhile: nothing lost
                    log.warning("peer index %s not saved: %s", path, e)
                return
        with self.guard:  # the blobs serve the next save, for the groups no write changed meanwhile
            for g, blob in fresh.items():
                if g not in idx.dirty and idx.gen == gen:
                    idx.encoded[g] = blob
                else:
                    idx.encoded.pop(g, None)

    @staticmethod
    def _write_file(path: Path, payload: bytes) -> None:
        """``payload`` under :data:`MAGIC` and its SHA-256, written under a unique
        temporary name then renamed. :raises OSError: when it cannot be written."""
        path.parent.mkdir(exist_ok=True)
        tmp = path.parent / f".index.{os.getpid()}.{secrets.token_hex(6)}.tmp"
        try:
            with open(tmp, "wb") as fh:
                fh.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def due(self, idx: _PeerIndex) -> bool:
        """Whether the file is worth writing: this process read a group cold since its
        last save, or the file is 8 generations behind (or none was read or written)."""
        if not idx.built and not idx.saved:
            return False
        behind = idx.gen - self.saved_gen if self.saved_gen >= 0 else SAVE_BEHIND
        return idx.cold != self.saved_cold or behind >= 8

    def flush(self) -> None:
        """Save the index now if :meth:`due`, brought to the store's generation first
        (:meth:`forwarded`: never while a write of this process reads or changes it; never
        inside :meth:`remember_many`, whose index lists the batch's pending nodes). Called
        at :meth:`close`, from the idle saver and at interpreter exit -- never from inside
        a write."""
        with self.forwarded(build=False):
            pass  # the store's lock is let go before the save: another process's write never waits on it
        with self.guard:
            idx = self.current
            if idx is not None and not idx.unsaved and self.due(idx):
                self.save(idx)

    @contextmanager
    def forwarded(self, *, build: bool) -> Iterator[tuple[_PeerIndex | None, Any]]:
        """The index brought to the store's generation, and the snapshot it was brought
        forward from, for the ``with`` block: the store's shared lock, then :attr:`guard`
        (the write path's order: the store's lock is always taken first). Brought forward
        over the commits since its own generation -- this service's writes, other writers'
        and processes' (transcript turns, business data), from the change log -- so that a
        save is exact at the newest generation and a later process can use it however many
        commits this one made after its last write (``load`` drops groups more than
        :data:`SAVE_BEHIND` generations behind).

        ``build=False``: only an index this process already has (``None`` when it has
        none, or it is a batch's). Without snapshots (or once the store is closed) the
        index as it is, under the guard, and no view."""
        store = self.svc.store
        with ExitStack() as stack:
            view = None
            if getattr(store, "snapshot", None) is not None and getattr(store, "generation", None) is not None:
                try:
                    view = stack.enter_context(store.snapshot())
                except (TenantClosed, TenantGone):
                    view = None
            stack.enter_context(self.guard)
            idx = self.current
            if view is None or (not build and (idx is None or idx.unsaved)):
                yield (idx if not build else None), None
                return
            start = self.last_use
            self.svc._tl.txn = _ViewOnly(view)
            try:
                idx = self.index()
            finally:
                self.svc._tl.txn = None
                self.last_use = start  # not the write path's use
            yield idx, view

    def schedule(self) -> None:
        """Ask for a save once the write path has been idle :data:`SAVE_EVERY` seconds
        (a daemon thread; the write that asks pays nothing), and at interpreter exit (a
        single-write process -- the CLI -- leaves its groups for the next one)."""
        if self._closed or self.sidecar() is None:
            return
        if not self._exit_hook:
            self._exit_hook = True
            ref = weakref.ref(self)
            atexit.register(_flush_at_exit, ref)
        saver = self._saver
        if saver is not None and saver.is_alive():
            return
        self._saver = threading.Thread(target=self._idle_save, name="reckon-peer-save", daemon=True)
        self._saver.start()

    def prefill(self) -> int:
        """List every person's user group and the company group not listed yet, and the
        groups the saved file has besides (a team's: from the file). A write of
        this process never waits behind it for more than one chunk's read: each group is
        read :data:`PREFILL_CHUNK` members per store snapshot, outside :attr:`guard`
        (the write path's lock on the index), and listed under the guard only when the
        index is still at the generation every chunk was read at (else dropped: read
        again on need). The index is brought forward first (another service's or
        process's commits). Stops as soon as the write path is used again or the cache is
        closed. Results are exactly a cold read's (the same reads, at one generation).
        Returns the number of groups listed.

        Called by the idle saver, so that the file it writes next lists the tenant's
        groups and a later process (a CLI write, a server's first request for a
        person) lists its group from the file instead of reading it from the store.
        """
        store = self.svc.store
        if getattr(store, "snapshot", None) is None or getattr(store, "generation", None) is None:
            return 0
        with store.snapshot() as view:
            people = [q.subject for q in view.quads(None, R.A, R.PERSON, R.MEMORIES)]
        keys: list[tuple[str, str | None]] = [("company", None)]
        for iri in people:
            if isinstance(iri, NamedNode):
                slug = R.slug_of(iri.value)
                if self.svc._person(slug) == iri:
                    keys.append(("user", slug))
        start, done = self.last_use, 0
        for scope, owner in keys:
            if self._closed or self.last_use != start:
                break  # the write path is busy again: fill later
            g = (R.SCOPE_IRI[scope], self.svc._person(owner)) if owner is not None else (R.SCOPE_IRI[scope],)
            with self.forwarded(build=True) as (idx, view):  # brought forward (a few reads)
                if idx is None or idx.unsaved or view is None:
                    break
                if idx.complete or g in idx.built:
                    continue
                if g in idx.saved and _list_saved(idx, g, view):
                    # listed from the file (brought forward), so the next save stamps it at
                    # the newest generation: a group this process never wrote to does not
                    # age out of the file (SAVE_BEHIND)
                    done += 1
                    continue
                gen = idx.gen
            nodes = self._read_chunked(scope, owner, gen, start)
            if nodes is None:
                break  # a write came (or a commit between two chunks): fill later
            with self.guard:
                idx = self.current
                if idx is None or idx.unsaved or idx.gen != gen or idx.complete or g in idx.built:
                    continue  # the index moved on meanwhile: this group is read on need
                idx.saved.pop(g, None)
                idx.add_group(g, nodes)
                idx.cold += 1
                done += 1
            time.sleep(0.001)  # let a waiting write in between two groups
        else:  # the file's other groups (a team's): listed from it, so the next save restamps them
            with self.forwarded(build=False) as (idx, view):
                if idx is not None and view is not None and not idx.unsaved and not self._closed \
                        and self.last_use == start:
                    done += sum(_list_saved(idx, g, view) for g in list(idx.saved))
        return done

    def _read_chunked(self, scope: str, owner: str | None, gen: int,
                      start: float) -> dict[NamedNode, dict[Any, list[Any]]] | None:
        """:meth:`read_group` (lean) of a user or the company group, :data:`PREFILL_CHUNK`
        members per snapshot, every snapshot at generation ``gen``; ``None`` when the
        store moved on, the write path was used or the cache closed in between."""
        store = self.svc.store
        with store.snapshot() as view:
            if view.generation != gen:
                return None
            if scope == "user" and owner is not None:
                members = list(view.subjects(R.P_OWNER, self.svc._person(owner), R.MEMORIES))
            else:
                members = list(view.subjects(R.P_SCOPE, R.SCOPE_IRI[scope], R.MEMORIES))
        nodes: dict[NamedNode, dict[Any, list[Any]]] = {}
        for i in range(0, len(members), PREFILL_CHUNK):
            if self._closed or self.last_use != start:
                return None
            with store.snapshot() as view:
                if view.generation != gen:
                    return None
                nodes.update(_read_lean(view, members[i:i + PREFILL_CHUNK], R.SCOPE_IRI[scope], scope == "team"))
            time.sleep(0)  # the GIL to a waiting write
        return nodes

    def _idle_save(self) -> None:
        start = time.perf_counter()
        while not self._closed:
            wait = self.last_use + SAVE_EVERY - time.perf_counter()
            if wait > 0 and time.perf_counter() - start < SAVE_AT_MOST:
                time.sleep(min(wait, 0.25))
                continue
            try:
                if wait <= 0 and PREFILL:
                    self.prefill()
                self.flush()
            except (TenantClosed, TenantGone):
                pass  # the store closed (Tenant.close, Engine.close) or the tenant was deleted under the saver: nothing to keep
            except Exception:  # noqa: BLE001 - a cache: never let the saver break the process
                log.warning("saving the peer index failed", exc_info=True)
            return

    def close(self) -> None:
        """Stop the idle saver (a prefill stops at its next group) and save the index if
        :meth:`due` (``Tenant.close``)."""
        self._closed = True
        self.flush()

    def record(self, commit: Any) -> None:
        """Remember a commit of the service's own (``commit.generation`` an int)."""
        with self.lock:
            self.commits[commit.generation] = commit

    def invalidate(self) -> None:
        """Forget the index (the schema changed, or a batch that it listed was not written)."""
        self.current = None

    def confirmed(self, group: tuple[_PeerIndex, tuple[Any, ...]], pids: Any,
                  key: str | None = None) -> list[NamedNode] | None:
        """``pids`` (what index ``group[0]`` lists in group ``group[1]``, under label key
        ``key`` when given) once the open transaction's store confirms those listed from
        the saved file: active memories of that group (with that label key); the others
        were read from the store, or written, by this process. ``None`` when one is not:
        the index disagrees with the store (a file that a foreign writer, a copied tenant
        directory or a bug made wrong), so it is dropped and its file removed
        (:meth:`distrust`); the caller reads the group from the store instead. The store
        decides."""
        idx, gkey = group
        view = self.svc._tl.txn.view
        out = []
        for pid in pids:
            e = idx.entries.get(pid)
            if e is not None and not e.saved:
                out.append(pid)
                continue
            a = _read(pid, view)
            if a is None or not _as_listed(pid, a, gkey, view) or (
                    key is not None and normalise_label(a[R.LABEL][0].value) != key):
                self.distrust(f"{pid.value if isinstance(pid, NamedNode) else pid!r} is not as listed")
                return None
            out.append(pid)
        return out

    def distrust(self, why: str) -> None:
        """Drop the index and remove its file: it disagrees with the store (``why``)."""
        log.warning("peer index disagrees with the store (%s): dropped, groups are read from the store", why)
        with self.guard:
            self.current = None
            self.saved_gen = -1
            self.distrusted += 1  # a save of the dropped index taken before now is never written
            path = self.sidecar()
            if path is not None:
                try:
                    path.unlink(missing_ok=True)
                except OSError as e:
                    log.warning("peer index %s not removed: %s", path, e)

    def drop(self, m: NamedNode) -> None:
        """Unlist memory ``m`` (superseded inside a batch: no longer a peer)."""
        if self.current is not None:
            self.current.unsaved = True
            self.current._drop(m)  # noqa: SLF001

    def pend(self, m: NamedNode, asserted: dict[Any, list[Any]] | None) -> None:
        """Inside :meth:`remember_many`: remember the pending node and list it in the peer
        index, so later items of the batch dedup and conflict against it."""
        pending = getattr(self.svc._tl, "pending", None)
        if pending is None or asserted is None:
            return
        pending[m] = asserted
        idx = self.current
        if idx is None:
            return
        idx.unsaved = True
        idx._drop(m)  # noqa: SLF001
        groups = [g for g in _groups_of(asserted) if idx.complete or g in idx.built]
        if groups and asserted.get(R.LABEL):
            e = _PeerEntry(dict(asserted), groups)
            idx.entries[m] = e
            for g in groups:
                idx._join(m, e, g)  # noqa: SLF001

    def affected(self, old: int, new: int) -> set[Any] | None:
        """Subjects whose peer entry may differ between generations ``old`` and ``new``,
        from the commits this process knows of (this service's own writes and the
        store's last commit); ``None`` when a commit in between is unknown (another
        writer or process) or changed the schema."""
        if new < old:
            return None
        with self.lock:
            known = dict(self.commits)
            for g in [g for g in self.commits if g <= new]:
                del self.commits[g]
        last = getattr(self.svc.store, "last_commit", None)
        if last is not None and isinstance(getattr(last, "generation", None), int):
            known.setdefault(last.generation, last)
        out: set[Any] = set()
        if any(g not in known for g in range(old + 1, new + 1)):
            # another writer's commits (another engine or process): the store's change log
            touched = self.touched(old, new)
            return None if touched is None else set(touched)
        for g in range(old + 1, new + 1):
            subjects = _subjects(known[g])
            if subjects is None:
                return None
            out |= subjects
        return out

    def index(self) -> _PeerIndex | None:
        """The peer index at the open transaction's generation (``None`` outside a
        transaction or over a store without generations). Another writer's commit
        (unknown to this process) rebuilds it from the mirror."""
        txn = getattr(self.svc._tl, "txn", None)
        gen_of = getattr(self.svc.store, "generation", None)
        if txn is None or gen_of is None:
            return None
        gen = gen_of()
        idx, self.current = self.current, None  # a failure below leaves no half-updated index
        view = txn.view
        if idx is not None and idx.gen != gen:
            affected = self.affected(idx.gen, gen)
            if affected is None:
                idx = None
            else:
                for m in affected:
                    now = idx.refresh(m, view)
                    if idx.saved:
                        idx.touched[m], idx.reads[m] = gen, now
                        idx.probes.pop(m, None)
                idx.gen, idx.unsaved = gen, False
        if idx is None:
            with self.lock:
                self.commits = {g: c for g, c in self.commits.items() if g > gen}
            # group by group, as writes need them: a fresh process's first write reads only
            # its own (scope, stakeholder) group, not every active memory of the tenant
            # (``_PeerIndex.build`` did, ~1 s at 10k memories), from the saved index when
            # it has the group
            idx = self.load(gen) or _PeerIndex(gen)
        elif idx.gen - self.saved_gen >= RESAVE_AFTER and self.saved_gen >= 0:
            self.schedule()  # before the file is too far behind for the next process to use
        self.last_use = time.perf_counter()
        self.current = idx
        return idx

    def group(self, scope: str, owner: str | None, teams: list[str]) -> tuple[_PeerIndex, tuple[Any, ...]] | None:
        """The peer index and the (scope, stakeholder) group key, or ``None`` to read peers by query."""
        idx = self.index()
        if idx is None:
            return None
        scope_iri = R.SCOPE_IRI[scope]
        g: tuple[Any, ...]
        if scope == "user":
            g = (scope_iri, self.svc._person(owner)) if owner is not None else ("none",)
        elif scope == "team":
            g = (scope_iri, frozenset(self.svc._team(t) for t in teams)) if teams else ("none",)
        elif scope in R.LINKS:
            g = (scope_iri, R.LINKS[scope][1](self.svc.tenant, teams[0])) if teams else ("none",)
        else:
            g = (scope_iri,)
        if not idx.complete and g not in idx.built:
            self.current = None  # until the group is listed
            if not _list_saved(idx, g, self.svc._tl.txn.view):
                idx.add_group(g, self.read_group(scope, owner, teams, lean=True))
                idx.cold += 1
                self.schedule()
                if not idx.saved:
                    idx.touched, idx.reads, idx.probes = {}, {}, {}
            self.current = idx
        return idx, g

    def candidates(
        self, group: tuple[_PeerIndex, tuple[Any, ...]], data: MemoryInput, klass: NamedNode
    ) -> dict[NamedNode, tuple[dict[Any, list[Any]], None]] | None:
        """Conflict candidates from the index: same-class peers for a subclass memory;
        otherwise every peer, or for a judge ranking candidates by word-count cosine
        (lexical; contradiction without an encoder) only peers sharing a word token (their
        cosine is 0 < threshold for the others). Each is confirmed against the store
        (:meth:`confirmed`); ``None`` when one is not (the index was dropped: read the
        peers by query)."""
        idx, gkey = group
        members = idx.groups.get(gkey, set())
        scope_iri = gkey[0]
        out: dict[NamedNode, tuple[dict[Any, list[Any]], None]] = {}
        if klass != R.MEMORY:
            view = self.svc._tl.txn.view
            for pid in members:
                e = idx.entries[pid]
                if klass in e.a.get(R.A, []):
                    suspect = e.saved and not e.full  # listed from the file, not read in this process
                    out[pid] = (e.node(pid, view), None)
                    if suspect and not _as_listed(pid, e.a, gkey, view):
                        self.distrust(f"{pid.value} is not as listed")
                        return None
            return out
        judge = self.svc.judge
        # a judge that never matches texts without a shared word token is offered only the
        # candidates that share one (ConflictJudge.needs_shared_word)
        pool: set[NamedNode] | _Members
        if bool(getattr(judge, "needs_shared_word", False)):
            pool = set()
            by_token = idx.by_token.get(gkey, {})
            for tok in set(tokens(f"{data.label} {data.content}")):
                pool |= by_token.get(tok, set())
        else:
            pool = members
        view = self.svc._tl.txn.view
        for pid in pool:
            e = idx.entries[pid]
            suspect = e.saved and not e.full  # listed from the file: its node is read now (partial), checked
            out[pid] = (e.partial(scope_iri, pid, view), None)
            if suspect and not _as_listed(pid, e.a, gkey, view):
                self.distrust(f"{pid.value} is not as listed")
                return None
        return out

    def peers(
        self, scope: str, owner: str | None, teams: list[str], klass: NamedNode | None = None
    ) -> dict[NamedNode, tuple[dict[Any, list[Any]], None]]:
        """Active memories with the same scope and stakeholder: same owner (user), the
        same team set (team), any (company)."""
        scope_iri = R.SCOPE_IRI[scope]
        group = self.group(scope, owner, teams)
        if group is not None:
            idx, gkey = group
            out = {}
            for pid in idx.groups.get(gkey, set()):
                e = idx.entries[pid]
                full = klass is not None and klass != R.MEMORY and klass in e.a.get(R.A, [])
                view = self.svc._tl.txn.view
                out[pid] = (e.node(pid, view) if full else e.partial(scope_iri, pid, view), None)
            return out
        nodes = self.query_peers(scope, owner, teams)
        subclassed = [m for m, (d, _) in nodes.items() if klass is not None and klass != R.MEMORY and klass in d[R.A]]
        if subclassed:  # same-class nodes in full: the judge reads their identifying properties
            with self.svc._view() as v:
                for m in subclassed:
                    d = defaultdict(list)
                    for qd in v.quads(m, None, None, R.MEMORIES):
                        d[qd.predicate].append(qd.object)
                    nodes[m] = (d, None)
        return nodes

    def query_peers(
        self, scope: str, owner: str | None, teams: list[str]
    ) -> dict[NamedNode, tuple[dict[Any, list[Any]], None]]:
        """Type, label, content, team and scope of the active memories of a (scope,
        stakeholder) group (see :meth:`read_group`)."""
        scope_iri = R.SCOPE_IRI[scope]
        out: dict[NamedNode, tuple[dict[Any, list[Any]], None]] = {}
        for m, a in self.read_group(scope, owner, teams).items():
            d: dict[Any, list[Any]] = defaultdict(list)
            for pred in _PEER_FIELDS:
                if pred in a:
                    d[pred] = list(dict.fromkeys(a[pred]))
            d[R.P_SCOPE] = [scope_iri]
            out[m] = (d, None)
        return out

    def read_group(self, scope: str, owner: str | None, teams: list[str],
                   lean: bool = False) -> dict[NamedNode, dict[Any, list[Any]]]:
        """Every asserted triple (predicate -> objects) of the active memories of a
        (scope, stakeholder) group; with ``lean`` only their types, label and content
        (and team, for a team group), what dedup and the token index need. Members are
        read from the owner / team / link or scope triple (an indexed pattern read:
        O(group), not O(tenant) -- a SPARQL query with the owner bound as a substitution
        scans every user memory on pyoxigraph 0.5), then each member's active status and
        triples (each term read costs a lookup on the on-disk store: lean reads few)."""
        scope_iri = R.SCOPE_IRI[scope]
        nodes: dict[NamedNode, dict[Any, list[Any]]] = {}
        with self.svc._view() as v:
            if scope == "user":
                if owner is None:
                    return {}
                members = v.subjects(R.P_OWNER, self.svc._person(owner), R.MEMORIES)
            elif scope == "team":
                if not teams:
                    return {}
                members = v.subjects(R.P_TEAM, self.svc._team(teams[0]), R.MEMORIES)
            elif scope in R.LINKS:
                if not teams:
                    return {}
                pred, iri_of = R.LINKS[scope]
                members = v.subjects(pred, iri_of(self.svc.tenant, teams[0]), R.MEMORIES)
            else:
                members = v.subjects(R.P_SCOPE, scope_iri, R.MEMORIES)
            if lean:
                nodes = _read_lean(v, members, scope_iri, scope == "team")
            for m in members if not lean else ():
                if not isinstance(m, NamedNode) or not v.contains(Quad(m, R.A, R.ACTIVE, R.INFERRED)):
                    continue
                a: dict[Any, list[Any]] = defaultdict(list)
                for q in v.quads(m, None, None, R.MEMORIES):
                    a[q.predicate].append(q.object)
                if scope_iri not in a.get(R.P_SCOPE, ()) or not a.get(R.A) or not a.get(R.LABEL):
                    continue
                nodes[m] = dict(a)
        if scope == "team":
            want = {self.svc._team(t) for t in teams}
            nodes = {k: a for k, a in nodes.items() if set(a.get(R.P_TEAM, [])) == want}
        return nodes


def _list_saved(idx: _PeerIndex, g: tuple[Any, ...], view: Any) -> bool:
    """List group ``g`` from the saved index (brought to ``idx.gen`` by re-reading from
    ``view`` what was touched since its generation); ``False`` when the file has no
    usable entry for it (not saved, or its blob does not decode: read it from the store)."""
    saved = idx.saved.pop(g, None)
    if saved is None:
        return False
    try:
        rows = _dec_group(saved[1])
        kinds = [[NamedNode(t) for t in ts] for ts in rows[1]]  # few distinct type sets: each decoded once
    except Exception as e:  # noqa: BLE001 - checksummed: a foreign writer; the group is read from the store
        log.warning("peer index group unreadable (%s: %s): read from the store", type(e).__name__, str(e)[:200])
        return False
    idx.add_saved(g, saved[0], rows, kinds, view)
    if not idx.saved:
        idx.touched, idx.reads, idx.probes = {}, {}, {}
    return True


def _read_lean(v: Any, members: Any, scope_iri: NamedNode, team: bool) -> dict[NamedNode, dict[Any, list[Any]]]:
    """Type, label and content (and team, for a team group) of those of ``members`` that
    are active memories of scope ``scope_iri`` with a type and a label, read from view ``v``."""
    nodes: dict[NamedNode, dict[Any, list[Any]]] = {}
    for m in members:
        if not isinstance(m, NamedNode) or not v.contains(Quad(m, R.A, R.ACTIVE, R.INFERRED)):
            continue
        if not v.contains(Quad(m, R.P_SCOPE, scope_iri, R.MEMORIES)):
            continue
        a: dict[Any, list[Any]] = defaultdict(list)
        for pred in (R.A, R.LABEL, R.P_CONTENT) + ((R.P_TEAM,) if team else ()):
            for q in v.quads(m, pred, None, R.MEMORIES):
                a[pred].append(q.object)
        a[R.P_SCOPE] = [scope_iri]
        if not a.get(R.A) or not a.get(R.LABEL):
            continue
        nodes[m] = dict(a)
    return nodes


class _ViewOnly:
    """A read-only stand-in for the write path's transaction (its ``view``), for the
    prefill's snapshot."""

    __slots__ = ("view",)

    def __init__(self, view: Any) -> None:
        self.view = view


def _flush_at_exit(ref: weakref.ref[PeerCache]) -> None:
    cache = ref()
    if cache is not None and not cache._closed:  # noqa: SLF001
        cache._closed = True  # noqa: SLF001 - a prefill stops at its next group
        try:
            cache.flush()
        except Exception:  # noqa: BLE001 - at exit: a cache, never an error
            log.warning("saving the peer index at exit failed", exc_info=True)
