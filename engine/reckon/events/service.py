"""The typed event graph of a tenant (ontology/events.ttl; seed 000 "MAGMA", seed 004
"Graph Memory").

Events and episodes (sessions) are recorded on timelines with a time; they name their
causes (``caused_by``) and the entities they mention. An entity is one node per label and
type: its IRI is made from the normalised label (Unicode NFKC, case-folded, white space
collapsed) and the type, so "Caroline" and " caroline " of type ``person`` are one node
and "Paris" the ``place`` and "Paris" the ``person`` are two. Everything is written to
``<urn:reckon:graph:events>`` in one store transaction per call, SHACL-validated
(``ev:EventShape``, ``ev:EntityShape``).

What is derived is derived by ``rules/events.srl``, never here: temporal order
(``ev:before`` / ``ev:after`` from the times on one timeline, ``ev:next`` /
``ev:previous`` for the next distinct time), ``ev:ledTo``, ``ev:mentionedIn``,
``ev:contains`` and the transitive ``ev:affects`` closure that :meth:`EventGraph.impact`
reads (seed 004: "What's affected if we change Auth?" -> the impact graph).

:meth:`EventGraph.related` walks the typed edges breadth-first from a node (seed 000
MAGMA retrieval step 3: "Walk NEXT/PREV edges -> narrative context; walk CAUSED_BY /
LED_TO edges -> causal chain; walk MENTIONS edges -> other events involving the same
entities") and :meth:`EventGraph.mermaid` renders a subgraph as a Mermaid flowchart (seed
004 ``visualize(): string; // Mermaid diagram``).

Limits: the graph holds at most the tenant setting ``event_graph_max_nodes`` events,
episodes and entities (default 10,000: seed 004 configuration ``graph.maxNodes``); a call
that would pass it is refused with nothing written. An event mentions at most 200
entities (ours); one call records at most 5,000 events (ours).
"""

from __future__ import annotations

import builtins
import re
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote

from pyoxigraph import Literal, NamedNode, Quad, Triple

from reckon import vocab as V
from reckon._args import checked_methods
from reckon._errors import InvalidInput, UnknownMemory
from reckon.events.similarity import DEFAULT_THRESHOLD, P_SIMILAR, Similarity
from reckon.memory import _rdf as R
from reckon.store.terms import check_text, parse_datetime_text
from reckon.vocab import EV, EVENTS, INFERRED, ev

__all__ = [
    "EDGE_TYPES",
    "EV",
    "Entity",
    "Event",
    "EventGraph",
    "GraphNode",
    "Related",
    "normalize_label",
]

T_EVENT, T_EPISODE, T_TIMELINE, T_ENTITY = ev("Event"), ev("Episode"), ev("Timeline"), ev("Entity")
P_AT, P_TIMELINE, P_EPISODE, P_CAUSED_BY = ev("at"), ev("timeline"), ev("episode"), ev("causedBy")
P_MENTIONS, P_TYPE, P_NORM, P_DEPENDS = ev("mentions"), ev("entityType"), ev("normalizedLabel"), ev("dependsOn")
P_BEFORE, P_AFTER, P_NEXT, P_PREVIOUS = ev("before"), ev("after"), ev("next"), ev("previous")
P_LED_TO, P_MENTIONED_IN, P_CONTAINS, P_AFFECTS = ev("ledTo"), ev("mentionedIn"), ev("contains"), ev("affects")

EDGE_TYPES: dict[str, tuple[tuple[NamedNode, NamedNode, bool], ...]] = {
    "temporal": ((P_NEXT, INFERRED, False), (P_PREVIOUS, INFERRED, False)),
    "causal": ((P_CAUSED_BY, EVENTS, False), (P_LED_TO, INFERRED, False)),
    "entity": ((P_MENTIONS, EVENTS, False), (P_MENTIONED_IN, INFERRED, False)),
    "episode": ((P_EPISODE, EVENTS, False), (P_CONTAINS, INFERRED, False)),
    "dependency": ((P_DEPENDS, EVENTS, False), (P_DEPENDS, EVENTS, True)),
    "semantic": ((P_SIMILAR, EVENTS, False),),
}
"""Edge type -> (predicate, graph, walked backwards) pairs :meth:`EventGraph.related` follows
(seed 000 MAGMA's temporal, causal, entity and semantic graphs; seed 004 direct relations).
``semantic`` edges (``ev:similarTo``, symmetric) are written in the background after
embedding (:mod:`reckon.events.similarity`)."""

_EDGE_NAME = {P_NEXT: "next", P_PREVIOUS: "previous", P_CAUSED_BY: "causedBy", P_LED_TO: "ledTo",
              P_MENTIONS: "mentions", P_MENTIONED_IN: "mentionedIn", P_EPISODE: "episode", P_CONTAINS: "contains",
              P_SIMILAR: "similarTo"}
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")
_TYPE = re.compile(r"[a-z][a-z0-9_-]{0,63}")
MAX_MENTIONS = 200
MAX_BATCH = 5000
_Q_COUNT = (
    V.sparql_prefixes("ev")
    + f"SELECT (COUNT(DISTINCT ?n) AS ?c) WHERE {{ GRAPH {EVENTS} {{ "
    "{ ?n a ev:Event } UNION { ?n a ev:Entity } } }"
)
_Q_TIMELINE = (
    V.sparql_prefixes("ev")
    + f"SELECT ?e ?at ?tl WHERE {{ GRAPH {EVENTS} {{ ?e ev:timeline ?tl ; ev:at ?at }} }} ORDER BY ?at ?e"
)
_Q_ENTITIES = (
    V.sparql_prefixes("ev")
    + f"SELECT ?x WHERE {{ GRAPH {EVENTS} {{ ?x a ev:Entity ; ev:normalizedLabel ?n }} }} ORDER BY ?x"
)


def normalize_label(label: str) -> str:
    """The label entities are deduplicated by: NFKC, case-folded, white space collapsed."""
    return " ".join(unicodedata.normalize("NFKC", label).casefold().split())


@dataclass(frozen=True)
class Entity:
    """An entity node.

    :ivar id: ``"<type>:<normalised label>"``.
    :ivar label: the label it was first recorded with.
    :ivar type: its type slug.
    """

    id: str
    iri: str
    label: str
    type: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "iri": self.iri, "label": self.label, "type": self.type}


@dataclass(frozen=True)
class Event:
    """An event or episode as recorded.

    :ivar id: its id (caller's, or 32 hex digits).
    :ivar at: when (UTC).
    :ivar episode: the id of its episode, or ``None``.
    :ivar caused_by: ids of its causes.
    :ivar mentions: ids of the entities it mentions.
    """

    id: str
    iri: str
    label: str
    at: datetime
    timeline: str
    kind: str = "event"
    episode: str | None = None
    caused_by: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "iri": self.iri, "kind": self.kind, "label": self.label, "at": self.at.isoformat(),
                "timeline": self.timeline, "episode": self.episode, "caused_by": list(self.caused_by),
                "mentions": list(self.mentions)}


GraphNode = Event | Entity


@dataclass(frozen=True)
class Related:
    """A node reached by :meth:`EventGraph.related`.

    :ivar node: the event, episode or entity.
    :ivar distance: hops from the start (1 = a neighbour).
    :ivar edge: the edge of the last hop (``next``, ``causedBy``, ``mentionedIn`` ...).
    :ivar via: the id of the node it was reached from.
    """

    node: Event | Entity
    distance: int
    edge: str
    via: str

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node.to_dict(), "distance": self.distance, "edge": self.edge, "via": self.via}


@dataclass
class _Pending:
    triples: list[Triple] = field(default_factory=list)
    nodes: set[NamedNode] = field(default_factory=set)


@checked_methods
class EventGraph:
    """The event graph of one tenant (see the module docstring).

    :param store: the tenant store.
    :param memory: the tenant's ``MemoryService`` (its SHACL validator).
    :param max_nodes: returns the tenant setting ``event_graph_max_nodes``.
    :param embedder: the tenant's embedder (``None``: the engine default) for the
        semantic edges.
    :param similarity_threshold: returns the tenant setting ``event_similarity_threshold``.
    """

    _ARGUMENT_HINTS = {"record": "events is a list of event dicts ({'label', 'at', ...}); for one event "
                                  "call record_event(label, at=...)"}

    def __init__(self, store: Any, memory: Any, *, max_nodes: Callable[[], int] | None = None,
                 embedder: Any = None, similarity_threshold: Callable[[], float] | None = None) -> None:
        self.store = store
        self.memory = memory
        self.tenant: str = store.tenant_id
        self._max_nodes = max_nodes or (lambda: 10000)
        base = getattr(store, "path", None)
        self.similarity = Similarity(store, embedder=embedder,
                                     threshold=similarity_threshold or (lambda: DEFAULT_THRESHOLD),
                                     directory=base / "recall" / "events" if base is not None else None)
        """The background maintainer of the semantic edges (``wait``, ``pending``, ``rebuild``)."""
        self.similarity.catch_up()

    # ------------------------------------------------------------------ IRIs
    def event_iri(self, event_id: str) -> NamedNode:
        return NamedNode(f"urn:reckon:{self.tenant}:event:{quote(event_id, safe='-._~:')}")

    def timeline_iri(self, timeline: str) -> NamedNode:
        return NamedNode(f"urn:reckon:{self.tenant}:timeline:{quote(timeline, safe='-._~:')}")

    def entity_iri(self, label: str, type_: str) -> NamedNode:
        return NamedNode(f"urn:reckon:{self.tenant}:entity:{type_}:{quote(normalize_label(label), safe='')}")

    def _id_of(self, iri: str) -> str:
        prefix = f"urn:reckon:{self.tenant}:"
        rest = iri.removeprefix(prefix)
        kind, _, local = rest.partition(":")
        if kind == "entity":
            type_, _, lab = local.partition(":")
            return f"{type_}:{unquote(lab)}"
        return unquote(local)

    def _event_ref(self, ref: Any, field: str) -> NamedNode:
        if isinstance(ref, Event):
            return NamedNode(ref.iri)
        if isinstance(ref, NamedNode):
            return ref
        if isinstance(ref, str) and ref.startswith(f"urn:reckon:{self.tenant}:event:"):
            return NamedNode(ref)
        if isinstance(ref, str) and _ID.fullmatch(ref):
            return self.event_iri(ref)
        raise InvalidInput(f"{field}: {ref!r} is not an event id", field=field)

    def _entity_ref(self, ref: Any, field: str) -> tuple[NamedNode, str, str]:
        """-> (IRI, label, type) of an entity reference: an Entity, ``(label, type)``, a
        ``{"label", "type"}`` dict or ``"type:label"``."""
        if isinstance(ref, Entity):
            return NamedNode(ref.iri), ref.label, ref.type
        if isinstance(ref, dict):
            label, type_ = ref.get("label"), ref.get("type")
            if set(ref) - {"label", "type"}:
                raise InvalidInput(f"{field}: an entity is {{'label', 'type'}}, not {sorted(ref)}", field=field)
        elif isinstance(ref, (tuple, list)) and len(ref) == 2:
            label, type_ = ref
        elif isinstance(ref, str) and ":" in ref:
            type_, _, label = ref.partition(":")
        else:
            raise InvalidInput(f"{field}: an entity is (label, type), {{'label': ..., 'type': ...}} or "
                               f"'type:label', not {ref!r}", field=field)
        if not isinstance(type_, str) or not _TYPE.fullmatch(type_):
            raise InvalidInput(f"{field}: entity type {type_!r}: a lower-case slug ([a-z][a-z0-9_-]*, at most 64)",
                               field=field)
        if not isinstance(label, str) or not normalize_label(label) or len(label) > 500:
            raise InvalidInput(f"{field}: entity label {label!r}: 1 to 500 characters, not only white space",
                               field=field)
        check_text(label, field)
        return self.entity_iri(label, type_), " ".join(label.split()), type_

    def _node_ref(self, ref: Any) -> NamedNode:
        if isinstance(ref, (Event, Entity)):
            return NamedNode(ref.iri)
        if isinstance(ref, NamedNode):
            return ref
        if isinstance(ref, str) and ref.startswith(f"urn:reckon:{self.tenant}:"):
            return NamedNode(ref)
        if isinstance(ref, (tuple, list, dict)):
            return self._entity_ref(ref, "node")[0]
        return self._event_ref(ref, "node")

    # ------------------------------------------------------------------ writes
    def record(self, events: Sequence[Any]) -> builtins.list[Event]:
        """Record events and episodes (dicts with ``label``, ``at``, and optionally
        ``id``, ``kind`` ("event" / "episode"), ``timeline`` (default ``"default"``),
        ``episode``, ``caused_by``, ``mentions``) in ONE transaction: all or nothing.
        A cause or episode may be recorded earlier or earlier in the same call.
        Recording an id again with the same label, time, timeline and episode adds its
        new causes and mentions; with another of those it is refused (events are
        immutable).

        :returns: the events, in input order.
        :raises InvalidInput: a malformed event (``events[i].field``), an unknown cause
            or episode, an id recorded otherwise, or the graph would pass
            ``event_graph_max_nodes``.
        :raises ShapeViolation: a node that does not conform to the shapes.
        """
        if isinstance(events, (str, bytes, dict)) or not isinstance(events, Sequence):
            raise InvalidInput("events: a list of events is required", field="events")
        if len(events) > MAX_BATCH:
            raise InvalidInput(f"events: at most {MAX_BATCH} per call, not {len(events)}", field="events")
        out: list[Event] = []
        with self.store.transaction() as txn:
            view = txn.view
            pending = _Pending()
            in_batch: dict[NamedNode, tuple[str, str]] = {}  # event IRI -> (kind, timeline)
            for i, raw in enumerate(events):
                where = f"events[{i}]." if len(events) != 1 else ""
                out.append(self._one(view, txn, pending, in_batch, raw, where))
            if pending.nodes:
                limit = self._max_nodes()
                have = int(next(iter(view.query(_Q_COUNT)))["c"].value)
                new = sum(1 for n in pending.nodes if not view.contains(Quad(n, R.A, T_EVENT, EVENTS))
                          and not view.contains(Quad(n, R.A, T_ENTITY, EVENTS)))
                if have + new > limit:
                    raise InvalidInput(f"events: the event graph would hold {have + new:,} nodes; the limit "
                                       f"event_graph_max_nodes is {limit:,} (seed 004 graph.maxNodes)",
                                       field="events")
            for t in pending.triples:
                txn.add(Quad(t.subject, t.predicate, t.object, EVENTS))
        self.similarity.enqueue(n for n in pending.nodes if any(
            t.subject == n and t.object == T_EVENT for t in pending.triples))
        return out

    def delete(self, node: Any) -> Event:
        """Delete an event or episode and every edge to or from it (its causes, mentions,
        ``ev:similarTo`` both ways, other events' ``ev:causedBy`` / ``ev:episode`` naming
        it) in one transaction; what was derived from it is retracted by the rules.
        Entities stay.

        :returns: the event as it was.
        :raises UnknownMemory: when there is no such event.
        """
        iri = self._event_ref(node, "node")
        with self.store.transaction() as txn:
            got = self._read(txn.view, iri)
            if not isinstance(got, Event):
                raise UnknownMemory(f"no event {self._id_of(iri.value)!r} in tenant {self.tenant!r}")
            for q in list(txn.view.quads(iri, None, None, EVENTS)) + list(txn.view.quads(None, None, iri, EVENTS)):
                txn.remove(q)
        return got

    def wait(self, timeout: float | None = 60.0) -> bool:
        """Block until the semantic edges of every recorded event are written (tests,
        benchmarks); ``False`` when ``timeout`` seconds passed first."""
        return self.similarity.wait(timeout)

    def record_event(self, label: str, *, at: Any, timeline: str = "default", episode: Any = None,
                     caused_by: Iterable[Any] = (), mentions: Iterable[Any] = (), id: str | None = None,
                     kind: str = "event") -> Event:
        """Record one event (see :meth:`record`)."""
        return self.record([{"label": label, "at": at, "timeline": timeline, "episode": episode,
                             "caused_by": list(caused_by), "mentions": list(mentions), "id": id, "kind": kind}])[0]

    def record_episode(self, label: str, *, at: Any, timeline: str = "default", mentions: Iterable[Any] = (),
                       id: str | None = None) -> Event:
        """Record one episode (a session that contains events; see :meth:`record`)."""
        return self.record_event(label, at=at, timeline=timeline, mentions=mentions, id=id, kind="episode")

    def add_dependency(self, entity: Any, depends_on: Any) -> Entity:
        """Assert ``entity ev:dependsOn depends_on`` (both created when new), e.g.
        ``("UserService", "service")`` depends on ``("Auth", "service")``.

        :returns: ``entity``.
        :raises InvalidInput: for a malformed entity reference or a self-dependency.
        """
        a_iri, a_label, a_type = self._entity_ref(entity, "entity")
        b_iri, b_label, b_type = self._entity_ref(depends_on, "depends_on")
        if a_iri == b_iri:
            raise InvalidInput("depends_on: an entity does not depend on itself", field="depends_on")
        with self.store.transaction() as txn:
            pending = _Pending()
            for iri, label, type_ in ((a_iri, a_label, a_type), (b_iri, b_label, b_type)):
                self._entity_triples(txn.view, pending, iri, label, type_)
            if pending.nodes:
                have = int(next(iter(txn.view.query(_Q_COUNT)))["c"].value)
                if have + len(pending.nodes) > self._max_nodes():
                    raise InvalidInput(f"the event graph would pass event_graph_max_nodes "
                                       f"({self._max_nodes():,})", field="entity")
            pending.triples.append(Triple(a_iri, P_DEPENDS, b_iri))
            for t in pending.triples:
                txn.add(Quad(t.subject, t.predicate, t.object, EVENTS))
        return Entity(self._id_of(a_iri.value), a_iri.value, a_label, a_type)

    def _entity_triples(self, view: Any, pending: _Pending, iri: NamedNode, label: str, type_: str) -> None:
        if iri in pending.nodes or view.contains(Quad(iri, R.A, T_ENTITY, EVENTS)):
            return
        triples = [Triple(iri, R.A, T_ENTITY), Triple(iri, R.LABEL, Literal(label)),
                   Triple(iri, P_TYPE, Literal(type_)), Triple(iri, P_NORM, Literal(normalize_label(label)))]
        self.memory._validate(iri, triples)
        pending.triples += triples
        pending.nodes.add(iri)

    def _one(self, view: Any, txn: Any, pending: _Pending, in_batch: dict[NamedNode, tuple[str, str]],
             raw: Any, where: str) -> Event:
        if not isinstance(raw, dict):
            raise InvalidInput(f"{where or 'event'}: a dict of event fields is required", field=where.rstrip(".") or "event")
        allowed = {"label", "at", "timeline", "episode", "caused_by", "mentions", "id", "kind"}
        extra = sorted(set(raw) - allowed)
        if extra:
            raise InvalidInput(f"{where}{extra[0]}: unknown field (fields: {', '.join(sorted(allowed))})",
                               field=f"{where}{extra[0]}")
        label = raw.get("label")
        if not isinstance(label, str) or not label.strip() or len(label) > 10000:
            raise InvalidInput(f"{where}label: one string of 1 to 10,000 characters is required", field=f"{where}label")
        check_text(label, f"{where}label")
        at = _when(raw.get("at"), f"{where}at")
        kind = raw.get("kind") or "event"
        if kind not in ("event", "episode"):
            raise InvalidInput(f"{where}kind: 'event' or 'episode', not {kind!r}", field=f"{where}kind")
        timeline = raw.get("timeline") or "default"
        if not isinstance(timeline, str) or not _ID.fullmatch(timeline):
            raise InvalidInput(f"{where}timeline: {timeline!r}: 1-200 characters of A-Z a-z 0-9 . _ : - starting "
                               f"with a letter or digit", field=f"{where}timeline")
        eid = raw.get("id") or uuid.uuid4().hex
        if not isinstance(eid, str) or not _ID.fullmatch(eid):
            raise InvalidInput(f"{where}id: {eid!r}: 1-200 characters of A-Z a-z 0-9 . _ : - starting with a "
                               f"letter or digit", field=f"{where}id")
        node = self.event_iri(eid)
        tl = self.timeline_iri(timeline)
        episode = None
        if raw.get("episode") is not None:
            episode = self._event_ref(raw["episode"], f"{where}episode")
            known = in_batch.get(episode)
            if not (view.contains(Quad(episode, R.A, T_EPISODE, EVENTS)) or (known and known[0] == "episode")):
                raise InvalidInput(f"{where}episode: no episode {self._id_of(episode.value)!r} (record it first)",
                                   field=f"{where}episode")
        causes = []
        for j, c in enumerate(_seq(raw.get("caused_by"), f"{where}caused_by")):
            ci = self._event_ref(c, f"{where}caused_by[{j}]")
            if ci == node:
                raise InvalidInput(f"{where}caused_by[{j}]: an event does not cause itself", field=f"{where}caused_by")
            if not (view.contains(Quad(ci, R.A, T_EVENT, EVENTS)) or ci in in_batch):
                raise InvalidInput(f"{where}caused_by[{j}]: no event {self._id_of(ci.value)!r} (record it first)",
                                   field=f"{where}caused_by")
            causes.append(ci)
        ments = [self._entity_ref(m, f"{where}mentions[{j}]")
                 for j, m in enumerate(_seq(raw.get("mentions"), f"{where}mentions"))]
        if len({m[0] for m in ments}) > MAX_MENTIONS:
            raise InvalidInput(f"{where}mentions: at most {MAX_MENTIONS} entities", field=f"{where}mentions")
        at_lit = R.dt_literal(at, f"{where}at")
        core = [Triple(node, R.A, T_EVENT), Triple(node, R.LABEL, Literal(label)), Triple(node, P_AT, at_lit),
                Triple(node, P_TIMELINE, tl)]
        if kind == "episode":
            core.append(Triple(node, R.A, T_EPISODE))
        if episode is not None:
            core.append(Triple(node, P_EPISODE, episode))
        exists = view.contains(Quad(node, R.A, T_EVENT, EVENTS)) or node in in_batch
        if exists:
            have = {(q.predicate, q.object) for q in view.quads(node, None, None, EVENTS)}
            have |= {(t.predicate, t.object) for t in pending.triples if t.subject == node}
            same = all((t.predicate, t.object) in have for t in core) and sum(
                1 for p, _ in have if p in (P_AT, P_TIMELINE, P_EPISODE, R.LABEL)) == sum(
                1 for t in core if t.predicate in (P_AT, P_TIMELINE, P_EPISODE, R.LABEL))
            if not same or ((R.A, T_EPISODE) in have) != (kind == "episode"):
                raise InvalidInput(f"{where}id: event {eid!r} is already recorded with another label, time, "
                                   f"timeline, kind or episode; events are immutable", field=f"{where}id")
        links = [Triple(node, P_CAUSED_BY, c) for c in causes] + [Triple(node, P_MENTIONS, m[0]) for m in ments]
        self.memory._validate(node, core + links)
        if not view.contains(Quad(tl, R.A, T_TIMELINE, EVENTS)):
            pending.triples.append(Triple(tl, R.A, T_TIMELINE))
        for m in ments:
            self._entity_triples(view, pending, *m)
        pending.triples += core + links
        pending.nodes.add(node)
        in_batch[node] = (kind, timeline)
        return Event(eid, node.value, label, _utc(at), timeline, kind,
                     self._id_of(episode.value) if episode is not None else None,
                     tuple(self._id_of(c.value) for c in causes), tuple(self._id_of(m[0].value) for m in ments))

    # ------------------------------------------------------------------ reads
    def get(self, node: Any) -> Event | Entity:
        """The event, episode or entity named by ``node`` (an event id, an entity
        ``(label, type)``, an IRI, or an Event / Entity).

        :raises UnknownMemory: when the graph has no such node.
        """
        iri = self._node_ref(node)
        with self.store.snapshot() as view:
            got = self._read(view, iri)
        if got is None:
            raise UnknownMemory(f"no event or entity {self._id_of(iri.value)!r} in tenant {self.tenant!r}")
        return got

    def entity(self, label: str, type_: str) -> Entity | None:
        """The entity of ``label`` and ``type_`` (deduplicated as recorded), or ``None``."""
        iri = self._entity_ref((label, type_), "entity")[0]
        with self.store.snapshot() as view:
            got = self._read(view, iri)
        return got if isinstance(got, Entity) else None

    def entities(self, type_: str | None = None) -> builtins.list[Entity]:
        """Every entity (of ``type_``), by IRI."""
        with self.store.snapshot() as view:
            out = [self._read(view, r["x"]) for r in view.query(_Q_ENTITIES)]
        return [e for e in out if isinstance(e, Entity) and (type_ is None or e.type == type_)]

    def timeline(self, timeline: str = "default") -> builtins.list[Event]:
        """The events and episodes of a timeline, by time (then id)."""
        tl = self.timeline_iri(timeline)
        with self.store.snapshot() as view:
            rows = [r for r in view.query(_Q_TIMELINE) if r["tl"] == tl]
            out = [self._read(view, r["e"]) for r in rows]
        return [e for e in out if isinstance(e, Event)]

    def related(self, node: Any, *, depth: int = 1, edge_types: Iterable[str] | None = None) -> builtins.list[Related]:
        """Nodes reachable from ``node`` in at most ``depth`` hops over ``edge_types``
        (``temporal``: ev:next / ev:previous; ``causal``: ev:causedBy / ev:ledTo;
        ``entity``: ev:mentions / ev:mentionedIn; ``episode``: ev:episode / ev:contains;
        ``dependency``: ev:dependsOn both ways; ``semantic``: ev:similarTo, once the
        background embedding has written it; default all), breadth-first, each once at
        its shortest distance; ordered by distance, then time, then id.

        :param depth: 1 to 10 hops.
        :raises InvalidInput: an unknown edge type or a bad depth.
        :raises UnknownMemory: when ``node`` is not in the graph.
        """
        preds = self._edge_preds(edge_types)
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 10:
            raise InvalidInput("depth: an integer from 1 to 10", field="depth")
        start = self._node_ref(node)
        with self.store.snapshot() as view:
            if self._read(view, start) is None:
                raise UnknownMemory(f"no event or entity {self._id_of(start.value)!r} in tenant {self.tenant!r}")
            seen = {start}
            frontier = [start]
            found: list[tuple[int, NamedNode, str, NamedNode]] = []
            for d in range(1, depth + 1):
                nxt: list[NamedNode] = []
                for n in frontier:
                    for p, g, back in preds:
                        quads = view.quads(None, p, n, g) if back else view.quads(n, p, None, g)
                        for q in quads:
                            other = q.subject if back else q.object
                            if isinstance(other, NamedNode) and other not in seen:
                                seen.add(other)
                                nxt.append(other)
                                name = ("dependedOnBy" if back else "dependsOn") if p == P_DEPENDS else _EDGE_NAME[p]
                                found.append((d, other, name, n))
                frontier = nxt
            out = []
            for d, other, name, via in found:
                got = self._read(view, other)
                if got is not None:
                    out.append(Related(got, d, name, self._id_of(via.value)))
        return sorted(out, key=lambda r: (r.distance, getattr(r.node, "at", _EPOCH), r.node.id))

    def impact(self, node: Any) -> builtins.list[Event | Entity]:
        """What changing ``node`` affects, transitively: the ``ev:affects`` closure
        derived by ``rules/events.srl`` (an event affects what it caused; an entity what
        depends on it), by id.

        :raises UnknownMemory: when ``node`` is not in the graph.
        """
        start = self._node_ref(node)
        with self.store.snapshot() as view:
            if self._read(view, start) is None:
                raise UnknownMemory(f"no event or entity {self._id_of(start.value)!r} in tenant {self.tenant!r}")
            out = [self._read(view, q.object) for q in view.quads(start, P_AFFECTS, None, INFERRED)]
        return sorted((x for x in out if x is not None), key=lambda x: x.id)

    def mermaid(self, node: Any = None, *, depth: int = 1, edge_types: Iterable[str] | None = None,
                max_nodes: int = 200) -> str:
        """A Mermaid flowchart (``flowchart LR``) of ``node`` and what :meth:`related`
        reaches from it, or of the whole graph when ``node`` is ``None`` (at most
        ``max_nodes`` nodes: the earliest events first, then entities). Events are
        boxes, episodes subroutine boxes, entities circles; an edge is labelled with its
        predicate (temporal edges drawn as ``next`` only; ``similarTo`` once per pair as
        an undirected link ``---``). Labels are cut at 60
        characters and escaped (``"`` ``<`` ``>`` ``#`` as Mermaid entity codes).

        :returns: Mermaid text (https://mermaid.js.org/syntax/flowchart.html).
        """
        if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or not 1 <= max_nodes <= 10000:
            raise InvalidInput("max_nodes: an integer from 1 to 10,000", field="max_nodes")
        preds = self._edge_preds(edge_types)
        if node is not None:
            start = self.get(node)
            nodes: list[Event | Entity] = [start] + [r.node for r in self.related(start, depth=depth,
                                                                                   edge_types=edge_types)]
        else:
            tl_events: list[Event | Entity] = []
            with self.store.snapshot() as view:
                for r in view.query(_Q_TIMELINE):
                    got = self._read(view, r["e"])
                    if got is not None:
                        tl_events.append(got)
            nodes = tl_events + list(self.entities())
        nodes = nodes[:max_nodes]
        ids = {NamedNode(n.iri): f"n{i}" for i, n in enumerate(nodes)}
        lines = ["flowchart LR"]
        for n in nodes:
            text = _mermaid_text(n.label if isinstance(n, Event) else f"{n.label} ({n.type})")
            nid = ids[NamedNode(n.iri)]
            if isinstance(n, Entity):
                lines.append(f'    {nid}(("{text}"))')
            elif n.kind == "episode":
                lines.append(f'    {nid}[["{text}"]]')
            else:
                lines.append(f'    {nid}["{text}"]')
        drawn: set[tuple[str, str, str]] = set()
        with self.store.snapshot() as view:
            for iri, nid in ids.items():
                for p, g, back in preds:
                    if back or p in (P_PREVIOUS, P_LED_TO, P_MENTIONED_IN, P_CONTAINS):
                        continue  # draw each relation once, in its asserted (or forward) direction
                    for q in view.quads(iri, p, None, g):
                        other = ids.get(q.object) if isinstance(q.object, NamedNode) else None
                        if p == P_SIMILAR and other is not None:  # symmetric: once, undirected
                            a, b = sorted((nid, other), key=lambda x: int(x[1:]))
                            if (a, "similarTo", b) not in drawn:
                                drawn.add((a, "similarTo", b))
                                lines.append(f"    {a} ---|similarTo| {b}")
                            continue
                        edge = (nid, _EDGE_NAME.get(p, "dependsOn"), other or "")
                        if other is not None and edge not in drawn:
                            drawn.add(edge)
                            lines.append(f"    {nid} -->|{edge[1]}| {other}")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ internals
    def _edge_preds(self, edge_types: Iterable[str] | None) -> builtins.list[tuple[NamedNode, NamedNode, bool]]:
        if edge_types is None:
            names = list(EDGE_TYPES)
        elif isinstance(edge_types, str):
            names = [edge_types]
        else:
            names = list(edge_types)
        bad = [n for n in names if n not in EDGE_TYPES]
        if bad or not names:
            raise InvalidInput(f"edge_types: {bad or names!r}; choose from {', '.join(EDGE_TYPES)}",
                               field="edge_types")
        return [p for n in names for p in EDGE_TYPES[n]]

    def _read(self, view: Any, iri: Any) -> Event | Entity | None:
        if not isinstance(iri, NamedNode):
            return None
        po: dict[Any, list[Any]] = {}
        for q in view.quads(iri, None, None, EVENTS):
            po.setdefault(q.predicate, []).append(q.object)
        types = set(po.get(R.A, []))
        label = (po.get(R.LABEL) or [Literal("")])[0].value
        if T_ENTITY in types:
            return Entity(self._id_of(iri.value), iri.value, label, (po.get(P_TYPE) or [Literal("")])[0].value)
        if T_EVENT not in types:
            return None
        at = _parse_dt((po.get(P_AT) or [None])[0]) or _EPOCH
        tl = (po.get(P_TIMELINE) or [NamedNode("urn:x:timeline:default")])[0]
        ep = (po.get(P_EPISODE) or [None])[0]
        return Event(self._id_of(iri.value), iri.value, label, at, self._id_of(tl.value),
                     "episode" if T_EPISODE in types else "event",
                     self._id_of(ep.value) if ep is not None else None,
                     tuple(sorted(self._id_of(c.value) for c in po.get(P_CAUSED_BY, []))),
                     tuple(sorted(self._id_of(m.value) for m in po.get(P_MENTIONS, []))))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _seq(value: Any, field: str) -> builtins.list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field}: a list is required", field=field)
    return list(value)


def _when(value: Any, field: str) -> datetime:
    if isinstance(value, str):
        try:
            value = parse_datetime_text(value)
        except ValueError as exc:
            why = f": {exc}" if "fractional" in str(exc) else ""
            raise InvalidInput(f"{field}: not an ISO 8601 date-time: {value!r}{why}", field=field) from None
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field}: a date-time with a time zone is required", field=field)
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"{field}: {value.isoformat()} has no time zone; give an offset (Z, +02:00)", field=field)
    return value


def _utc(t: datetime) -> datetime:
    return t.astimezone(UTC)


def _parse_dt(term: Any) -> datetime | None:
    if not isinstance(term, Literal):
        return None
    try:
        t = datetime.fromisoformat(term.value)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _mermaid_text(label: str) -> str:
    text = " ".join(label.split())
    if len(text) > 60:
        text = text[:59] + "…"
    return (text.replace("#", "#35;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
            .replace("|", "#124;").replace("[", "#91;").replace("]", "#93;"))
