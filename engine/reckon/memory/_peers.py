"""The write path's peer index: the active memories of a tenant grouped by scope and
stakeholder, with their normalised labels and word tokens, so dedup by label and the
conflict judge's candidates are found without a query per write. A cache of the store
kept per generation (:class:`PeerCache`, one per :class:`~reckon.memory.service.MemoryService`);
the store decides.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from pyoxigraph import NamedNode, Quad

from reckon.memory import _rdf as R
from reckon.memory.conflicts import tokens
from reckon.memory.models import MemoryInput, normalise_label

if TYPE_CHECKING:
    from reckon.memory.service import MemoryService

__all__ = ["PeerCache", "_PeerEntry", "_PeerIndex", "_groups_of"]


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
        for p in _PEER_FIELDS:
            if p in self.a:
                d[p] = list(dict.fromkeys(self.a[p]))
        d[R.P_SCOPE] = [scope_iri]
        return d


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
        """List the group's members (``nodes``: memory -> all its asserted triples)."""
        self.built.add(g)
        for m, a in nodes.items():
            e = self.entries.get(m)
            if e is None:
                e = self.entries[m] = _PeerEntry(dict(a), [g])
            elif g not in e.groups:
                e.groups.append(g)
            self._join(m, e, g)


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

    def record(self, commit: Any) -> None:
        """Remember a commit of the service's own (``commit.generation`` an int)."""
        with self.lock:
            self.commits[commit.generation] = commit

    def invalidate(self) -> None:
        """Forget the index (the schema changed, or a batch that it listed was not written)."""
        self.current = None

    def drop(self, m: NamedNode) -> None:
        """Unlist memory ``m`` (superseded inside a batch: no longer a peer)."""
        if self.current is not None:
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
        for g in range(old + 1, new + 1):
            c = known.get(g)
            if c is None:
                return None
            for q in (*c.added, *c.removed):
                if q.graph_name == R.MEMORIES:
                    out.add(q.subject)
                elif q.graph_name == R.SCHEMA:
                    return None
            for t in (*c.inferred_added, *c.inferred_removed):
                if t.predicate == R.A and t.object == R.ACTIVE:
                    out.add(t.subject)
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
                    idx.refresh(m, view)
                idx.gen = gen
        if idx is None:
            with self.lock:
                self.commits = {g: c for g, c in self.commits.items() if g > gen}
            # group by group, as writes need them: a fresh process's first write reads only
            # its own (scope, stakeholder) group, not every active memory of the tenant
            # (``_PeerIndex.build`` did, ~1 s at 10k memories)
            idx = _PeerIndex(gen)
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
            idx.add_group(g, self.read_group(scope, owner, teams))
            self.current = idx
        return idx, g

    def candidates(
        self, group: tuple[_PeerIndex, tuple[Any, ...]], data: MemoryInput, klass: NamedNode
    ) -> dict[NamedNode, tuple[dict[Any, list[Any]], None]]:
        """Conflict candidates from the index: same-class peers for a subclass memory;
        otherwise every peer, or for a judge ranking candidates by word-count cosine
        (lexical; contradiction without an encoder) only peers sharing a word token (their
        cosine is 0 < threshold for the others)."""
        idx, gkey = group
        members = idx.groups.get(gkey, set())
        scope_iri = gkey[0]
        out: dict[NamedNode, tuple[dict[Any, list[Any]], None]] = {}
        if klass != R.MEMORY:
            view = self.svc._tl.txn.view
            for pid in members:
                e = idx.entries[pid]
                if klass in e.a.get(R.A, []):
                    out[pid] = (e.node(pid, view), None)
            return out
        judge = self.svc.judge
        # a judge that never matches texts without a shared word token is offered only the
        # candidates that share one (ConflictJudge.needs_shared_word)
        if bool(getattr(judge, "needs_shared_word", False)):
            pool: set[NamedNode] = set()
            for tok in set(tokens(f"{data.label} {data.content}")):
                pool |= idx.by_token.get((gkey, tok), set())
        else:
            pool = members
        for pid in pool:
            out[pid] = (idx.entries[pid].partial(scope_iri), None)
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
                out[pid] = (e.node(pid, self.svc._tl.txn.view) if full else e.partial(scope_iri), None)
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

    def read_group(self, scope: str, owner: str | None, teams: list[str]) -> dict[NamedNode, dict[Any, list[Any]]]:
        """Every asserted triple (predicate -> objects) of the active memories of a
        (scope, stakeholder) group. Members are read from the owner / team / link or
        scope triple (an indexed pattern read: O(group), not O(tenant) -- a SPARQL query
        with the owner bound as a substitution scans every user memory on pyoxigraph
        0.5), then each member with two reads: its active status and its triples."""
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
            for m in members:
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
