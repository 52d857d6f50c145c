"""The memory write path: validated, authorized, deduplicated, conflict-checked writes
and the lifecycle (supersede, restore, delete, update, history) — seed §3–§5, §9.

Pipeline of every write (DESIGN.md "Architecture"): pydantic model (field errors as
:class:`~reckon._errors.InvalidInput`) -> authorization (:mod:`reckon.memory.authz`)
-> RDF terms (:mod:`reckon.memory._rdf`) -> SHACL validation of the changed node's small
graph (:class:`~reckon._errors.ShapeViolation`) -> one store transaction (asserted
MEMORIES graph; the store's reasoner maintains the INFERRED graph). Any refusal raises
before the transaction commits, so a failed write leaves the store byte-identical.

Reads bind values through ``substitutions``; no SPARQL text is built from user values.

:class:`MemoryService` orchestrates; each job lives in its own module:

* :mod:`reckon.memory._codec` — memory <-> RDF triples (and the one refusal of a
  property the rules derive);
* :mod:`reckon.memory._peers` — the peer-index cache (dedup and conflict candidates);
* :mod:`reckon.memory._policy` — the dedup / conflict policy of a new write;
* :mod:`reckon.memory._lifecycle` — in-place edits, supersede, restore, delete;
* :mod:`reckon.memory._history` — history and lineage.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, cast
from typing import Literal as TLiteral

from pyoxigraph import NamedNode, Quad, Triple

from reckon._errors import (
    ConflictPending,
    InvalidInput,
    ReckonError,
    UnknownMemory,
)
from reckon.memory import _codec as C
from reckon.memory import _history as H
from reckon.memory import _lifecycle as L
from reckon.memory import _policy as P
from reckon.memory import _rdf as R
from reckon.memory import authz
from reckon.memory._peers import PeerCache
from reckon.memory.conflicts import (
    ConflictJudge,
    ContradictionJudge,
)
from reckon.memory.models import (
    HistoryEntry,
    Memory,
    MemoryInput,
    Principal,
    parse_input,
    parse_patch,
)
from reckon.memory.protocols import MemoryStore
from reckon.schema.tenant import TenantSchema
from reckon.store.graphs import ASSERTED
from reckon.vocab import MEMORIES, sparql_prefixes

__all__ = ["MemoryService", "Validator"]

#: ``validator(focus, triples) -> None``: SHACL-validate the small graph of one memory
#: (its triples plus the type triples of the nodes it links to); raises ShapeViolation.
Validator = Callable[[NamedNode, list[Triple]], None]

_PREFIXES = sparql_prefixes("rk", "rdfs")
_Q_ALL = _PREFIXES + (
    "SELECT ?m ?g ?p ?o WHERE { GRAPH " + str(MEMORIES) + " { ?m rk:kind ?k } GRAPH ?g { ?m ?p ?o } }"
)




def _now() -> datetime:
    return datetime.now(UTC)


def _at_index(exc: ReckonError, i: int) -> ReckonError:
    """``exc`` re-raised for item ``i`` of a batch: ``items[i]: <message>``, field
    ``items[i].<field>``; ConflictPending keeps its id and candidates."""
    field = getattr(exc, "field", None)
    msg = f"items[{i}]: {exc}"
    if isinstance(exc, ConflictPending):
        new: ReckonError = ConflictPending(msg, exc.conflict_id, exc.candidates)
        if hasattr(exc, "conflict"):
            new.conflict = exc.conflict  # type: ignore[attr-defined]
    else:
        try:
            new = type(exc)(msg)
        except TypeError:  # pragma: no cover - an error class with other constructor args
            new = InvalidInput(msg)
    for k, v in vars(exc).items():
        if k not in ("args",):
            try:
                setattr(new, k, v)
            except AttributeError:  # pragma: no cover
                pass
    try:
        new.field = f"items[{i}].{field}" if field else f"items[{i}]"  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover
        pass
    new.index = i  # type: ignore[attr-defined]
    return new


class MemoryService:
    """Memory operations of one tenant, over a :class:`reckon.store.TenantStore`.

    :param store: the tenant store (``tenant_id``, ``query``, ``transaction``).
    :param judge: conflict judge; default :class:`~reckon.memory.conflicts.ContradictionJudge`
        (no model: word-count similarity for candidates, then the contradiction test).
    :param validator: SHACL validator of one node's small graph; default
        ``reckon.schema.validate`` over the tenant's SCHEMA graph.
    :param clock: wall clock for ``rk:createdAt`` / ``rk:updatedAt`` (UTC).
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        judge: ConflictJudge | None = None,
        validator: Validator | None = None,
        clock: Callable[[], datetime] = _now,
        derived: Callable[[], frozenset[str]] | None = None,
    ) -> None:
        self.store: MemoryStore = store
        self._derived = derived
        self.tenant = store.tenant_id
        self.judge: ConflictJudge = judge or ContradictionJudge()
        self._validator = validator
        self._clock = clock
        self._schema: TenantSchema | None = None
        self._tl = threading.local()
        self.peers = PeerCache(self)  # dedup / conflict peers, kept per store generation

    def _query(self, sparql: str, substitutions: dict[Any, Any] | None = None) -> Any:
        """Read through the open transaction's view when inside one (the store's own
        ``query`` would wait for the lock this thread holds), else through the store."""
        txn = getattr(self._tl, "txn", None)
        if txn is not None:
            return txn.query(sparql, substitutions=substitutions)
        return self.store.query(sparql, substitutions=substitutions)

    @contextmanager
    def _view(self) -> Iterator[Any]:
        """A committed snapshot for direct pattern reads (the open transaction's view
        inside one)."""
        txn = getattr(self._tl, "txn", None)
        if txn is not None:
            yield txn.view
        else:
            with self.store.snapshot() as view:
                yield view

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        # the peer index's guard inside the store's lock (that order only: no deadlock with
        # a thread holding the store's lock first); a background save of the index waits
        try:
            with self.store.transaction() as txn, self.peers.guard:
                self._tl.txn = txn
                try:
                    yield txn
                finally:
                    self._tl.txn = None
        finally:
            # the write path's use ends with its commit (validation, the reasoner): a slow
            # first write must not let the idle saver's prefill start while it still runs
            self.peers.last_use = time.perf_counter()
        commit = getattr(txn, "commit", None)
        if commit is not None and isinstance(getattr(commit, "generation", None), int):
            self.peers.record(commit)

    # ------------------------------------------------------------------------------
    # schema and validation
    # ------------------------------------------------------------------------------
    def _schema_fresh(self) -> None:
        """Forget the cached schema when the tenant's stored program changed (a module
        migration, in this process or another one)."""
        key = getattr(self.store, "program_key", None)
        if key != getattr(self, "_program_key", None):
            if getattr(self, "_program_key", None) is not None or self._schema is not None:
                self.reload_schema()
            self._program_key = key

    @property
    def schema(self) -> TenantSchema:
        """The tenant's :class:`~reckon.schema.TenantSchema` (cached; see :meth:`reload_schema`)."""
        return self.schema_for(self._query)

    def schema_for(self, query: Callable[..., Any]) -> TenantSchema:
        """:attr:`schema`, read through ``query`` when not cached (the store's write check
        runs inside the store's lock and reads through the transaction's view)."""
        self._schema_fresh()
        schema = self._schema
        if schema is None:
            schema = self._schema = TenantSchema.read(query)
        return schema

    def reload_schema(self) -> None:
        """Forget the cached schema (after the tenant's SCHEMA graph changed)."""
        self._schema = None
        self.peers.invalidate()
        if hasattr(self._validator, "reset"):
            self._validator.reset()  # type: ignore[union-attr]

    def _validate(self, focus: NamedNode, triples: list[Triple]) -> None:
        if self._validator is not None:
            self._validator(focus, triples)
        else:
            self.schema.validate(focus, triples)

    def _validate_new(self, txn: Any, m: NamedNode, triples: list[Triple], ctx: list[Triple],
                      create: list[Quad]) -> None:
        """Validate new node ``m`` before anything else is decided about it. With the
        tenant's shapes, in the very graph the store's write check builds for it at commit
        (:meth:`reckon.schema.TenantSchema.node_graph` over the transaction's view: its
        triples, the person / conversation nodes it creates, the stored types of what it links
        to), so that check finds the graph validated already and the node is validated
        once per write; with a custom ``validator``, in ``triples + ctx``.

        :raises ShapeViolation: the node does not conform; nothing is written.
        """
        view = getattr(txn, "view", None)
        if self._validator is None and view is not None:
            new: dict[Any, list[Quad]] = defaultdict(list)
            for t in triples:
                new[m].append(Quad(t.subject, t.predicate, t.object, R.MEMORIES))
            for q in create:
                new[q.subject].append(q)
            graph = self.schema.node_graph(m, view, new)
            if graph is not None:
                self.schema.validate(m, graph)
                return
        self._validate(m, triples + ctx)

    def check_write(self, added: Sequence[Quad], removed: Sequence[Quad], view: Any) -> None:
        """The store's write check (``TenantStore.validator``): every node an asserted
        write changes must conform to the tenant's shapes
        (:meth:`reckon.schema.TenantSchema.check_delta`).

        :raises ShapeViolation: for a node that does not conform; nothing is written.
        """
        self.schema_for(view.query).check_delta(added, removed, view)

    # ------------------------------------------------------------------------------
    # ids and reads
    # ------------------------------------------------------------------------------
    def iri(self, memory_id: str) -> NamedNode:
        """A memory id (32 hex digits) or full IRI -> the memory IRI of this tenant.

        :raises UnknownMemory: when the id is not a memory id of this tenant.
        """
        prefix = R.memory_prefix(self.tenant)
        if isinstance(memory_id, NamedNode):
            memory_id = memory_id.value
        if not isinstance(memory_id, str):
            raise UnknownMemory(f"no memory {memory_id!r} in tenant {self.tenant!r}")
        hex_id = memory_id[len(prefix):] if memory_id.startswith(prefix) else memory_id
        if len(hex_id) != 32 or any(c not in "0123456789abcdef" for c in hex_id):
            raise UnknownMemory(f"no memory {memory_id!r} in tenant {self.tenant!r}")
        return R.memory_iri(self.tenant, hex_id)

    def _node(self, m: NamedNode) -> tuple[dict[Any, list[Any]], dict[Any, list[Any]]]:
        pending = getattr(self._tl, "pending", None)
        if pending is not None and m in pending:  # written earlier in this batch (remember_many)
            return {p: list(v) for p, v in pending[m].items()}, {}
        asserted: dict[Any, list[Any]] = defaultdict(list)
        inferred: dict[Any, list[Any]] = defaultdict(list)
        with self._view() as v:
            for q in v.quads(m, None, None, R.MEMORIES):
                asserted[q.predicate].append(q.object)
            for q in v.quads(m, None, None, R.INFERRED):
                inferred[q.predicate].append(q.object)
        return asserted, inferred

    def _load(self, memory_id: str) -> tuple[NamedNode, dict[Any, list[Any]], dict[Any, list[Any]]]:
        m = self.iri(memory_id)
        asserted, inferred = self._node(m)
        if R.P_KIND not in asserted:
            if R.DELETED in asserted.get(R.A, []):
                when = asserted.get(R.P_DELETED_AT, [None])[0]
                raise UnknownMemory(
                    f"memory {memory_id!r} of tenant {self.tenant!r} was deleted"
                    + (f" at {when.value}" if when is not None else "") + "; history() still shows its lineage"
                )
            raise UnknownMemory(f"no memory {memory_id!r} in tenant {self.tenant!r}")
        return m, asserted, inferred

    def _to_memory(self, m: NamedNode, asserted: dict[Any, list[Any]], inferred: dict[Any, list[Any]]) -> Memory:
        """:func:`reckon.memory._codec.to_memory` (the bundle reads memories through it)."""
        return C.to_memory(self, m, asserted, inferred)

    def _absent(self, memory_id: object) -> UnknownMemory:
        """The one answer for a memory that is absent or that the reader may not see."""
        return UnknownMemory(f"no memory {memory_id!r} in tenant {self.tenant!r}")

    def _load_for(
        self, memory_id: str, principal: Principal | None
    ) -> tuple[NamedNode, dict[Any, list[Any]], dict[Any, list[Any]]]:
        """:meth:`_load` under the read policy: a memory ``principal`` may not read is
        reported exactly like an absent one (no owner, no existence leaks); a deleted
        memory's tombstone is an operator's to see. ``principal=None``: no policy (the
        caller is the tenant's own code)."""
        try:
            loaded = self._load(memory_id)
        except UnknownMemory:
            if principal is not None and not principal.is_operator:
                raise self._absent(memory_id) from None
            raise
        if principal is not None and not authz.can_read(principal, **C.audience(loaded[1])):
            raise self._absent(memory_id)
        return loaded

    def readable(self, memory_id: str, principal: Principal) -> bool:
        """Whether ``principal`` may read memory ``memory_id`` (``False`` when absent)."""
        try:
            self._load_for(memory_id, principal)
        except UnknownMemory:
            return False
        return True

    def get(self, memory_id: str, *, principal: Principal | None = None) -> Memory:
        """One memory with its derived state (``active``, ``status``, ``supersedes``).

        :param principal: who reads; a memory they may not read
            (:func:`reckon.memory.authz.can_read`) is reported as absent.
        :raises UnknownMemory: when there is no such memory in this tenant (or none
            ``principal`` may read: the same message).
        """
        m, asserted, inferred = self._load_for(memory_id, principal)
        return self._to_memory(m, asserted, inferred)

    def memories(
        self,
        *,
        active_only: bool = True,
        kind: str | None = None,
        scope: str | None = None,
        subclass: str | None = None,
    ) -> list[Memory]:
        """All memories of the tenant, filtered; sorted by creation time then id.

        ``subclass`` (local name or IRI) matches instances of that class or any class
        below it.

        :raises InvalidInput: when ``kind`` / ``scope`` / ``subclass`` is unknown.
        """
        if kind is not None and kind not in R.KIND_IRI:
            raise InvalidInput(f"kind: unknown kind {kind!r}", field="kind")
        if scope is not None and scope not in R.SCOPE_IRI:
            raise InvalidInput(f"scope: unknown scope {scope!r}", field="scope")
        cls = self.schema.resolve_class(subclass) if subclass is not None else None
        nodes: dict[NamedNode, tuple[dict[Any, list[Any]], dict[Any, list[Any]]]] = {}
        for row in self._query(_Q_ALL):
            a, i = nodes.setdefault(row["m"], (defaultdict(list), defaultdict(list)))
            if row["g"] == R.MEMORIES:
                a[row["p"]].append(row["o"])
            elif row["g"] == R.INFERRED:
                i[row["p"]].append(row["o"])
        out = []
        for m, (a, i) in nodes.items():
            if active_only and R.ACTIVE not in i.get(R.A, []):
                continue
            if kind is not None and R.KIND_IRI[kind] not in a.get(R.P_KIND, []):
                continue
            if scope is not None and R.SCOPE_IRI[scope] not in a.get(R.P_SCOPE, []):
                continue
            if cls is not None:
                types = [t for t in a.get(R.A, []) if isinstance(t, NamedNode)]
                if not any(t == cls or cls in self.schema.class_chain(t) for t in types):
                    continue
            out.append(self._to_memory(m, a, i))
        out.sort(key=lambda x: (x.created_at or datetime.min.replace(tzinfo=UTC), x.id))
        return out

    # ------------------------------------------------------------------------------
    # people, teams and linked nodes (the codec and the policy use these)
    # ------------------------------------------------------------------------------
    def _person(self, person: str) -> NamedNode:
        try:
            return R.person_iri(self.tenant, person)
        except ValueError:  # pragma: no cover - percent-encoding makes every id valid
            raise InvalidInput(f"person: {person!r} cannot be a person id", field="person") from None

    def _team(self, team: str) -> NamedNode:
        return R.team_iri(self.tenant, team)

    def team_ids(self) -> list[str]:
        """The tenant's team ids (``<team> a rk:Team`` in MEMORIES), sorted."""
        prefix = R.team_iri(self.tenant, "").value
        with self._view() as v:
            return sorted({R.slug_of(q.subject.value) for q in v.quads(None, R.A, R.TEAM, R.MEMORIES)
                           if isinstance(q.subject, NamedNode) and q.subject.value.startswith(prefix)})

    def check_teams(self, teams: Iterable[str], *, field: str = "teams") -> None:
        """:func:`reckon.memory._codec.check_teams`: every id is a team of the tenant.

        :raises UnknownTeam: naming the unknown ids and the known ones.
        """
        C.check_teams(self, teams, field=field)

    def _exists(self, iri: NamedNode, klass: NamedNode) -> bool:
        with self._view() as v:
            return bool(v.contains(Quad(iri, R.A, klass, R.MEMORIES)))

    def _types_of(self, iri: NamedNode) -> list[NamedNode]:
        with self._view() as v:
            return [q.object for g in ASSERTED for q in v.quads(iri, R.A, None, g)]

    # ------------------------------------------------------------------------------
    # remember
    # ------------------------------------------------------------------------------
    def remember(
        self,
        *,
        principal: Principal,
        supersedes: Sequence[str] | None = None,
        conflict_resolution: TLiteral["replace", "keep_both"] | None = None,
        conflict_id: str | None = None,
        **fields: Any,
    ) -> Memory:
        """Store a new memory (seed §5), or update the same-label memory (dedup, §9.1).

        ``fields``: kind, scope, importance, source, label, content, subclass, properties,
        confidence, expires_at, teams, owner (see :class:`MemoryInput`).

        * **dedup** — an active memory with the same normalised label, scope and
          stakeholder (owner for user scope, the team set for team scope, the company)
          and the same class is updated in place and returned.
        * **conflicts** — otherwise the judge sees the active same-scope memories (same
          subclass when the newcomer has one) and names those it would replace (same
          subject and attribute, different value; :mod:`reckon.memory.conflicts`).
          Auto-captured context (``source="extraction"``, ``kind="context"``)
          supersedes them silently when every one of them was auto-captured too; any
          other write (and any over a human's memory) raises :class:`ConflictPending`
          with nothing written, and is
          retried with ``conflict_resolution="replace"`` (the newcomer supersedes them)
          or ``"keep_both"`` plus the ``conflict_id``.
        * **explicit replacement** — ``supersedes=[ids]`` skips detection; each named
          memory gets ``rk:supersededBy`` the new one.

        :raises InvalidInput: a field is missing or invalid (``field`` names it).
        :raises ShapeViolation: the node does not conform to the SHACL shapes.
        :raises NotAuthorized: the principal may not write this memory / supersede those.
        :raises ConflictPending: confirmation needed (see above).
        :raises UnknownMemory: a ``supersedes`` id does not exist.
        :raises UnknownTeam: a team-scope memory names (or defaults to) a team the tenant
            does not have; nothing is written and no team is created.
        """
        if not isinstance(principal, Principal):
            raise InvalidInput("principal: a reckon Principal is required", field="principal")
        data = parse_input(fields)
        if conflict_resolution not in (None, "replace", "keep_both"):
            raise InvalidInput(
                f"conflict_resolution: expected 'replace' or 'keep_both', got {conflict_resolution!r}",
                field="conflict_resolution",
            )
        owner, teams = C.stakeholders(data, principal)
        C.check_project(self, data)
        if data.scope == "team":
            C.check_teams(self, teams)
        authz.check_create(principal, scope=data.scope, source=data.source, owner=owner, label=data.label,
                           project=data.project, conversation=data.conversation)
        klass = self.schema.resolve_class(data.subclass) if data.subclass else R.MEMORY
        if data.properties and klass == R.MEMORY:
            raise InvalidInput("properties: only a subclass memory carries properties", field="properties")

        with self._transaction() as txn:
            target = self._write_new(
                txn, data, klass, owner, teams, principal, supersedes, conflict_resolution, conflict_id
            )
        return self.get(target.value)

    def remember_many(
        self,
        items: Sequence[dict[str, Any]],
        *,
        principal: Principal | Sequence[Principal],
        conflicts: TLiteral["raise", "keep_both", "skip"] = "raise",
        within: Callable[[Any], None] | None = None,
    ) -> list[Memory | None]:
        """Store many memories in ONE store transaction (one commit, one reasoning pass):
        bulk import and background extraction.

        Each item is a dict of :meth:`remember` fields (optionally with ``supersedes``).
        Every item is parsed and authorized before anything is written; then all are
        written in order inside one transaction, each going through the same dedup,
        validation and conflict rules as :meth:`remember` and seeing the items before it
        (a later item can restate or replace an earlier one). **All or nothing**: the
        first bad item raises, naming it (``items[3]: ...``, ``field="items[3].label"``),
        and nothing is written.

        :param principal: who writes: one principal for every item, or one per item
            (extraction writes each memory as the person who said it).
        :param conflicts: what a pending conflict does: ``"raise"`` :class:`ConflictPending`
            for that item (nothing written); ``"keep_both"`` writes the item beside the
            memories it would replace; ``"skip"`` leaves that item out (``None`` in the
            result). Auto-captured context still supersedes auto-captured context silently.
        :param within: called with the open transaction after the items, to add quads
            that must commit with them (the extraction watermark).
        :returns: the memories in item order (the updated one for a restatement).
        :raises InvalidInput, ShapeViolation, NotAuthorized, ConflictPending,
            UnknownMemory: as :meth:`remember`, for ``items[i]``.
        """
        if isinstance(items, (str, bytes, dict)) or not isinstance(items, Sequence):
            raise InvalidInput("items: a list of memory field dicts is required", field="items")
        principals: list[Principal] = (list(principal) if isinstance(principal, (list, tuple))
                                       else [cast(Principal, principal)] * len(items))
        if len(principals) != len(items) or not all(isinstance(p, Principal) for p in principals):
            raise InvalidInput("principal: a reckon Principal (or one per item) is required", field="principal")
        if conflicts not in ("raise", "keep_both", "skip"):
            raise InvalidInput(f"conflicts: expected 'raise', 'keep_both' or 'skip', got {conflicts!r}",
                               field="conflicts")
        plan = []
        for i, (raw, principal) in enumerate(zip(items, principals)):
            try:
                if not isinstance(raw, dict):
                    raise InvalidInput("expected a dict of memory fields", field="item")
                fields = dict(raw)
                supersedes = fields.pop("supersedes", None)
                data = parse_input(fields)
                owner, teams = C.stakeholders(data, principal)
                C.check_project(self, data)
                if data.scope == "team":
                    C.check_teams(self, teams)
                authz.check_create(principal, scope=data.scope, source=data.source, owner=owner, label=data.label,
                                   project=data.project, conversation=data.conversation)
                klass = self.schema.resolve_class(data.subclass) if data.subclass else R.MEMORY
                if data.properties and klass == R.MEMORY:
                    raise InvalidInput("properties: only a subclass memory carries properties", field="properties")
            except ReckonError as exc:
                raise _at_index(exc, i) from None
            plan.append((data, klass, owner, teams, supersedes, principal))
        targets: list[NamedNode | None] = []
        ok = False
        try:
            with self._transaction() as txn:
                self._tl.pending = {}
                for i, (data, klass, owner, teams, supersedes, principal) in enumerate(plan):
                    try:
                        try:
                            m = self._write_new(txn, data, klass, owner, teams, principal, supersedes, None, None)
                        except ConflictPending as exc:
                            if conflicts == "raise":
                                raise
                            if conflicts == "skip":
                                targets.append(None)
                                continue
                            m = self._write_new(txn, data, klass, owner, teams, principal, supersedes,
                                                "keep_both", exc.conflict_id)
                    except ReckonError as exc:
                        raise _at_index(exc, i) from None
                    targets.append(m)
                if within is not None:
                    within(txn)
                self._tl.pending = None
            ok = True
        finally:
            self._tl.pending = None
            if not ok:
                self.peers.invalidate()  # it listed nodes of the batch that was not written
        out: list[Memory | None] = []
        seen: dict[NamedNode, Memory] = {}
        for t in targets:
            if t is None:
                out.append(None)
                continue
            if t not in seen:
                seen[t] = self.get(t.value)
            out.append(seen[t])
        return out

    def _write_new(
        self,
        txn: Any,
        data: MemoryInput,
        klass: NamedNode,
        owner: str | None,
        teams: list[str],
        principal: Principal,
        supersedes: Sequence[str] | None,
        conflict_resolution: str | None,
        conflict_id: str | None,
    ) -> NamedNode:
        group, peers, same_label = P.same_label(self, data, klass, owner, teams, supersedes)
        # A restatement updates in place; a different person's (or a different source's)
        # new text under the same label is not silently written over a memory a human may
        # have meant to keep: it becomes a conflict candidate (ask-before-overwrite, seed §9).
        forced: list[NamedNode] = []
        for pid in same_label:
            current = self._node(pid)[0]
            if P.restates(self, current, data, principal):
                new = P.dedup_update(self, txn, pid, current, data, principal)
                self.peers.pend(pid, new)
                return pid
            forced.append(pid)

        # -- new node: validated before anything else is decided about it -----
        m = R.memory_iri(self.tenant, uuid.uuid4().hex)
        triples = C.node_triples(self, m, data, klass, owner, teams, principal)
        ctx, create = C.linked_types(self, triples)
        self._validate_new(txn, m, triples, ctx, create)

        # -- what it replaces ------------------------------------------------
        replaced: list[NamedNode] = []
        if supersedes:
            for sid in supersedes:
                old, oa, _ = self._load_for(sid, principal)
                P.check_supersedable(principal, old, oa)
                replaced.append(old)
        else:
            replaced = P.replaced(self, m, klass, data, triples, owner, teams, principal, group, peers, forced,
                                  conflict_resolution, conflict_id)

        for q in create:
            txn.add(q)
        for t in triples:
            txn.add(Quad(t.subject, t.predicate, t.object, R.MEMORIES))
        for old in replaced:
            txn.add(Quad(old, R.P_SUPERSEDED_BY, m, R.MEMORIES))
        if getattr(self._tl, "pending", None) is not None:
            a: dict[Any, list[Any]] = defaultdict(list)
            for t in triples:
                a[t.predicate].append(t.object)
            self.peers.pend(m, dict(a))
            for old in replaced:
                self.peers.drop(old)  # superseded in this batch: no longer a peer
        return m

    # ------------------------------------------------------------------------------
    # update
    # ------------------------------------------------------------------------------
    def update(self, memory_id: str, *, principal: Principal, **changes: Any) -> Memory:
        """Partial edit with three-state semantics: a field not given is untouched,
        ``None`` removes it, a value sets it (seed §5). Records ``rk:updatedAt`` and
        ``rk:author`` (the editing person).

        :raises InvalidInput: unknown / immutable field, bad value, or a required field
            set to ``None``.
        :raises ShapeViolation: the edited node no longer conforms (e.g. a subclass's
            required property removed).
        :raises NotAuthorized: the principal may not edit this memory.
        :raises UnknownMemory: no such memory.
        """
        patch = parse_patch(changes)
        with self._transaction() as txn:
            m, asserted, _ = self._load_for(memory_id, principal)
            owner = asserted.get(R.P_OWNER)
            authz.check_update(
                principal, memory_id=m.value.rsplit(":", 1)[-1],
                scope=R.IRI_SCOPE[asserted[R.P_SCOPE][0]], owner=R.slug_of(owner[0].value) if owner else None,
                **R.links_of(asserted),
            )
            L.apply_patch(self, txn, m, asserted, patch.given(), principal)
        return self.get(m.value)

    # ------------------------------------------------------------------------------
    # supersede / restore / delete
    # ------------------------------------------------------------------------------
    def supersede(self, old_id: str, new: dict[str, Any] | str, *, principal: Principal) -> Memory:
        """Replace ``old_id`` by ``new`` (a dict of :meth:`remember` fields, or the id of an
        existing memory). The primary write is ``old rk:supersededBy new`` on the old
        node; ``rk:supersedes`` is derived (seed §9).

        :raises NotAuthorized: the principal does not own the old memory.
        :raises InvalidInput: the old memory is already superseded, the replacement is
            itself superseded (nothing would stay live: supersede with its live
            successor), or the pointer would form a cycle.
        :raises UnknownMemory: either memory does not exist.
        :returns: the new memory.
        """
        return L.supersede(self, old_id, new, principal=principal)

    def restore(self, memory_id: str, *, principal: Principal) -> Memory:
        """Undo a supersession (operator only): removes ``rk:supersededBy`` from the memory.

        :raises NotAuthorized: the principal is not an operator.
        :raises RestoreRefused: the memory that superseded it is still active, or an
            active memory of the same scope and stakeholder conflicts with it.
        :raises UnknownMemory: no such memory.
        """
        return L.restore(self, memory_id, principal=principal)

    def delete(self, memory_id: str, *, principal: Principal, reason: str | None = None) -> None:
        """Delete a memory (operator only): its triples, and the revisions of its earlier
        label and content, are removed, and a tombstone is left in their place:
        ``m a rk:DeletedMemory ; rk:deletedAt now ; rk:deletedBy person`` (plus the
        ``rk:supersededBy`` pointer it had). So ``history(id)`` still works, and an
        older memory's ``rk:supersededBy`` pointing at it points at the tombstone, not
        at nothing; that older memory stays superseded (the newer one remains
        authoritative for it, seed §9; restore it explicitly if wanted).

        :param reason: why, kept on the tombstone (``rk:deletionReason``; lifecycle
            maintenance says which rule removed it) and shown by ``history()``.
        :raises NotAuthorized: the principal is not an operator.
        :raises UnknownMemory: no such memory (or it was deleted already).
        """
        return L.delete(self, memory_id, principal=principal, reason=reason)

    # ------------------------------------------------------------------------------
    # history
    # ------------------------------------------------------------------------------
    def history(self, memory_id: str, *, principal: Principal | None = None) -> list[HistoryEntry]:
        """The lineage of a memory through the supersession chain in both directions
        (older memories it replaced, newer ones that replaced it), oldest first; each
        entry has source, times, author and whether it was updated after creation.

        A deleted memory is an entry of its own (``event="deleted"``, from its tombstone);
        each entry lists the earlier label / content of its in-place updates
        (``revisions``).

        :param principal: who reads: the memory must be one they may read (else it is
            reported as absent); entries of memories they may not read, and tombstones
            unless they are an operator, are left out.
        :raises UnknownMemory: no such memory and no tombstone of one.
        """
        return H.history(self, memory_id, principal=principal)

