"""The write path's peer index: the active memories of a tenant grouped by scope and
stakeholder, with their normalised labels and word tokens, so dedup by label and the
conflict judge's candidates are found without a query per write. A cache of the store
kept per generation (``MemoryService._index``); the store decides.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pyoxigraph import NamedNode, Quad

from reckon.memory import _rdf as R
from reckon.memory.conflicts import tokens
from reckon.memory.models import normalise_label

__all__ = ["_PeerEntry", "_PeerIndex", "_groups_of"]


class _PeerEntry:
    """One active memory as the write path's dedup / conflict reads see it."""

    __slots__ = ("a", "full", "groups", "label_key", "toks")

    def __init__(self, a: dict[Any, list[Any]], groups: list[tuple[Any, ...]], full: bool = True) -> None:
        self.a = a  # asserted triples: all of them when ``full``, else the peers query's fields
        self.full = full
        self.groups = groups  # the (scope, stakeholder) groups of the index it is listed in
        self.label_key = normalise_label(a[R.LABEL][0].value)
        content = a.get(R.P_CONTENT)
        self.toks = frozenset(tokens(f"{a[R.LABEL][0].value} {content[0].value if content else ''}"))

    def node(self, m: NamedNode, view: Any) -> dict[Any, list[Any]]:
        """All asserted triples of the memory (read from ``view`` once, on first need)."""
        if not self.full:
            a: dict[Any, list[Any]] = defaultdict(list)
            for q in view.quads(m, None, None, R.MEMORIES):
                a[q.predicate].append(q.object)
            self.a, self.full = dict(a), True
        return self.a

    def partial(self, scope_iri: NamedNode) -> dict[Any, list[Any]]:
        """The fields the peers query reads (type, label, content, team, kind, source, scope)."""
        d: dict[Any, list[Any]] = defaultdict(list)
        for p in (R.A, R.LABEL, R.P_CONTENT, R.P_TEAM, R.P_KIND, R.P_SOURCE):
            if p in self.a:
                d[p] = list(dict.fromkeys(self.a[p]))
        d[R.P_SCOPE] = [scope_iri]
        return d


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
        self.entries: dict[NamedNode, _PeerEntry] = {}
        self.groups: dict[tuple[Any, ...], set[NamedNode]] = defaultdict(set)
        self.by_label: dict[tuple[Any, ...], set[NamedNode]] = defaultdict(set)
        self.by_token: dict[tuple[Any, ...], set[NamedNode]] = defaultdict(set)

    def _drop(self, m: NamedNode) -> None:
        e = self.entries.pop(m, None)
        if e is None:
            return
        for g in e.groups:
            keys = [(self.groups, g), (self.by_label, (g, e.label_key))]
            keys += [(self.by_token, (g, tok)) for tok in e.toks]
            for d, k in keys:
                members = d.get(k)
                if members is not None:
                    members.discard(m)
                    if not members:
                        del d[k]

    def _join(self, m: NamedNode, e: _PeerEntry, g: tuple[Any, ...]) -> None:
        self.groups[g].add(m)
        self.by_label[(g, e.label_key)].add(m)
        for tok in e.toks:
            self.by_token[(g, tok)].add(m)

    def refresh(self, m: Any, view: Any) -> None:
        """Re-read memory ``m`` from ``view``: listed in its built groups when it is an
        active memory, else dropped."""
        self._drop(m)
        if not isinstance(m, NamedNode) or not view.contains(Quad(m, R.A, R.ACTIVE, R.INFERRED)):
            return
        a: dict[Any, list[Any]] = defaultdict(list)
        for q in view.quads(m, None, None, R.MEMORIES):
            a[q.predicate].append(q.object)
        if not a.get(R.P_SCOPE) or not a.get(R.A) or not a.get(R.LABEL):
            return
        groups = [g for g in _groups_of(a) if self.complete or g in self.built]
        if groups:
            e = _PeerEntry(dict(a), groups)
            self.entries[m] = e
            for g in groups:
                self._join(m, e, g)

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

    def add_group(self, g: tuple[Any, ...], nodes: dict[NamedNode, dict[Any, list[Any]]]) -> None:
        """List the group's members (``nodes``: memory -> peers-query fields)."""
        self.built.add(g)
        for m, a in nodes.items():
            e = self.entries.get(m)
            if e is None:
                e = self.entries[m] = _PeerEntry(dict(a), [g], full=False)
            elif g not in e.groups:
                e.groups.append(g)
            self._join(m, e, g)
