"""The memory write path: validated, authorized, deduplicated, conflict-checked writes
and the lifecycle (supersede, restore, delete, update, history) — seed §3–§5, §9.

Pipeline of every write (DESIGN.md "Architecture"): pydantic model (field errors as
:class:`~reckon._errors.InvalidInput`) -> authorization (:mod:`reckon.memory.authz`)
-> RDF terms (:mod:`reckon.memory._rdf`) -> SHACL validation of the changed node's small
graph (:class:`~reckon._errors.ShapeViolation`) -> one store transaction (asserted
MEMORIES graph; the store's reasoner maintains the INFERRED graph). Any refusal raises
before the transaction commits, so a failed write leaves the store byte-identical.

Reads bind values through ``substitutions``; no SPARQL text is built from user values.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, cast
from typing import Literal as TLiteral

from pyoxigraph import Literal, NamedNode, Quad, Triple

from reckon._errors import (
    ConflictPending,
    InvalidInput,
    ReckonError,
    RestoreRefused,
    UnknownMemory,
)
from reckon.memory import _rdf as R
from reckon.memory import authz
from reckon.memory._peers import _groups_of, _PeerEntry, _PeerIndex
from reckon.memory.conflicts import (
    ConflictJudge,
    ContradictionJudge,
    Subject,
    conflict_digest,
    tokens,
)
from reckon.memory.models import (
    Conflict,
    HistoryEntry,
    Kind,
    Memory,
    MemoryInput,
    Principal,
    Scope,
    Source,
    normalise_label,
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


def _refuse_derived(spec: Any, name: str, derived: frozenset[str]) -> None:
    """:raises InvalidInput: when property ``name`` (``spec``) is one the rules derive."""
    if spec.iri in derived:
        raise InvalidInput(
            f"properties.{name}: {spec.local} is derived by the rules from live data; it cannot be written",
            field=f"properties.{name}",
        )


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
        self._peer_index: _PeerIndex | None = None
        self._commits: dict[int, Any] = {}  # generation -> Commit of this service's writes
        self._commits_lock = threading.Lock()

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
        with self.store.transaction() as txn:
            self._tl.txn = txn
            try:
                yield txn
            finally:
                self._tl.txn = None
        commit = getattr(txn, "commit", None)
        if commit is not None and isinstance(getattr(commit, "generation", None), int):
            with self._commits_lock:
                self._commits[commit.generation] = commit

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
        self._peer_index = None
        if hasattr(self._validator, "reset"):
            self._validator.reset()  # type: ignore[union-attr]

    def _validate(self, focus: NamedNode, triples: list[Triple]) -> None:
        if self._validator is not None:
            self._validator(focus, triples)
        else:
            self.schema.validate(focus, triples)

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
        def one(p: NamedNode) -> Any:
            v = asserted.get(p)
            return v[0] if v else None

        hex_id = m.value.rsplit(":", 1)[-1]
        types = [t for t in asserted.get(R.A, []) if isinstance(t, NamedNode)]
        subclass = next((t for t in types if t != R.MEMORY), None)
        props: dict[str, Any] = {}
        if subclass is not None:
            specs = self.schema.properties(subclass)
            for p, objs in asserted.items():
                if p.value in R.BASE_PROPERTIES:
                    continue
                spec = specs.get(p.value)
                vals = sorted((self.schema.from_term(o) for o in objs), key=repr)
                many = spec is not None and spec.max_count != 1 and (spec.max_count or 2) > 1
                props[R.local_name(p.value)] = vals if (many or len(vals) > 1) else vals[0]
        status: dict[str, Any] = {}
        for p, objs in inferred.items():
            if p in (R.A, R.P_SUPERSEDES):
                continue
            vals = []
            for o in objs:
                if isinstance(o, NamedNode):
                    vals.append(self.schema.label_of(o) or R.local_name(o.value))
                else:
                    vals.append(R.python_value(o))
            status[R.local_name(p.value)] = vals[0] if len(vals) == 1 else sorted(vals, key=repr)
        owner = one(R.P_OWNER)
        author = one(R.P_AUTHOR)
        return Memory(
            id=hex_id,
            iri=m.value,
            kind=cast(Kind, R.IRI_KIND[one(R.P_KIND)]),
            scope=cast(Scope, R.IRI_SCOPE[one(R.P_SCOPE)]),
            importance=int(one(R.P_IMPORTANCE).value),
            source=cast(Source, R.IRI_SOURCE[one(R.P_SOURCE)]),
            label=one(R.LABEL).value,
            content=one(R.P_CONTENT).value if one(R.P_CONTENT) is not None else "",
            confidence=float(one(R.P_CONFIDENCE).value),
            owner=R.slug_of(owner.value) if owner is not None else None,
            teams=sorted(R.slug_of(t.value) for t in asserted.get(R.P_TEAM, [])),
            subclass=R.local_name(subclass.value) if subclass is not None else None,
            subclass_iri=subclass.value if subclass is not None else None,
            properties=props,
            expires_at=R.python_value(one(R.P_EXPIRES)) if one(R.P_EXPIRES) is not None else None,
            created_at=R.python_value(one(R.P_CREATED)) if one(R.P_CREATED) is not None else None,
            updated_at=R.python_value(one(R.P_UPDATED)) if one(R.P_UPDATED) is not None else None,
            author=R.slug_of(author.value) if author is not None else None,
            superseded_by=sorted(o.value.rsplit(":", 1)[-1] for o in asserted.get(R.P_SUPERSEDED_BY, [])),
            supersedes=sorted(o.value.rsplit(":", 1)[-1] for o in inferred.get(R.P_SUPERSEDES, [])),
            active=R.ACTIVE in inferred.get(R.A, []),
            status=status,
            derived_from=sorted(o.value for o in asserted.get(R.P_DERIVED_FROM, [])),
        )

    def _absent(self, memory_id: object) -> UnknownMemory:
        """The one answer for a memory that is absent or that the reader may not see."""
        return UnknownMemory(f"no memory {memory_id!r} in tenant {self.tenant!r}")

    @staticmethod
    def _audience(asserted: dict[Any, list[Any]]) -> dict[str, Any]:
        """``scope``, ``owner`` and ``teams`` of a memory's asserted triples (the read
        policy's inputs, :func:`reckon.memory.authz.can_read`)."""
        scope = asserted.get(R.P_SCOPE)
        owner = asserted.get(R.P_OWNER)
        return {
            "scope": R.IRI_SCOPE.get(scope[0], "user") if scope else "user",
            "owner": R.slug_of(owner[0].value) if owner else None,
            "teams": sorted(R.slug_of(t.value) for t in asserted.get(R.P_TEAM, [])),
        }

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
        if principal is not None and not authz.can_read(principal, **self._audience(loaded[1])):
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
    # building triples
    # ------------------------------------------------------------------------------
    def _person(self, person: str) -> NamedNode:
        try:
            return R.person_iri(self.tenant, person)
        except ValueError:  # pragma: no cover - percent-encoding makes every id valid
            raise InvalidInput(f"person: {person!r} cannot be a person id", field="person") from None

    def _team(self, team: str) -> NamedNode:
        return R.team_iri(self.tenant, team)

    def _exists(self, iri: NamedNode, klass: NamedNode) -> bool:
        with self._view() as v:
            return bool(v.contains(Quad(iri, R.A, klass, R.MEMORIES)))

    def _types_of(self, iri: NamedNode) -> list[NamedNode]:
        with self._view() as v:
            return [q.object for g in ASSERTED for q in v.quads(iri, R.A, None, g)]

    def _derived_predicates(self) -> frozenset[str]:
        """IRIs of predicates some rule of the tenant's program derives (rule heads):
        a writer never asserts them (derived triples live only in the inferred graph),
        else a stored "status" could contradict the derived one. From the ``derived``
        callable the service was built with (the facade hands it the tenant's program),
        else from the store's reasoner."""
        if self._derived is not None:
            return self._derived()
        try:
            rs = getattr(self.store.reasoner(), "ruleset", None)
        except Exception:  # noqa: BLE001 - no reasoner: nothing is derived
            rs = None
        if rs is None:
            return frozenset()
        return frozenset(
            tp.p.value for r in rs.rules for tp in r.head if isinstance(tp.p, NamedNode)
        ) - {R.A.value}

    def _subclass_triples(self, m: NamedNode, klass: NamedNode, properties: dict[str, Any]) -> list[Triple]:
        out = []
        derived = self._derived_predicates() if properties else frozenset()
        for name, value in properties.items():
            spec = self.schema.resolve_property(klass, name)
            _refuse_derived(spec, name, derived)
            for term in self.schema.to_terms(spec, value):
                out.append(Triple(m, NamedNode(spec.iri), term))
        return out

    def _turns(self, iris: Sequence[str] | None) -> list[NamedNode]:
        """Turn IRIs of ``derived_from`` (each must be a turn of this tenant; SHACL
        checks it is an ``ag:Turn``).

        :raises InvalidInput: for a value that is not an IRI of this tenant.
        """
        out: list[NamedNode] = []
        for v in iris or ():
            if not isinstance(v, str) or not v.startswith(f"urn:reckon:{self.tenant}:"):
                raise InvalidInput(f"derived_from: {v!r} is not a turn of tenant {self.tenant!r}",
                                   field="derived_from")
            try:
                out.append(NamedNode(v))
            except ValueError:
                raise InvalidInput(f"derived_from: {v!r} is not an IRI", field="derived_from") from None
        return list(dict.fromkeys(out))

    def _stakeholders(self, data: MemoryInput, principal: Principal) -> tuple[str | None, list[str]]:
        owner = data.owner
        teams = list(data.teams or [])
        if data.scope == "user":
            if teams:
                raise InvalidInput("teams: a user-scope memory has no team links", field="teams")
            owner = owner or principal.person
        elif data.scope == "team":
            teams = teams or sorted(set(principal.teams))
            if not teams:
                raise InvalidInput("teams: a team-scope memory needs at least one team", field="teams")
        return owner, teams

    def _linked_types(self, triples: Iterable[Triple]) -> tuple[list[Triple], list[Quad]]:
        """Type triples of linked nodes for validation, and quads creating missing
        person / team nodes (``<p> a rk:Person`` / ``<t> a rk:Team``) in MEMORIES."""
        ctx: list[Triple] = []
        create: list[Quad] = []
        seen: set[NamedNode] = set()
        for t in triples:
            o = t.object
            if not isinstance(o, NamedNode) or o in seen or t.predicate == R.A:
                continue
            seen.add(o)
            if t.predicate in (R.P_OWNER, R.P_AUTHOR):
                if not self._exists(o, R.PERSON):
                    create.append(Quad(o, R.A, R.PERSON, R.MEMORIES))
                ctx.append(Triple(o, R.A, R.PERSON))
            elif t.predicate == R.P_TEAM:
                if not self._exists(o, R.TEAM):
                    create.append(Quad(o, R.A, R.TEAM, R.MEMORIES))
                ctx.append(Triple(o, R.A, R.TEAM))
            elif o.value.startswith(f"urn:reckon:{self.tenant}:"):
                ctx.extend(Triple(o, R.A, ty) for ty in self._types_of(o))
        return ctx, create

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
        """
        if not isinstance(principal, Principal):
            raise InvalidInput("principal: a reckon Principal is required", field="principal")
        data = parse_input(fields)
        if conflict_resolution not in (None, "replace", "keep_both"):
            raise InvalidInput(
                f"conflict_resolution: expected 'replace' or 'keep_both', got {conflict_resolution!r}",
                field="conflict_resolution",
            )
        owner, teams = self._stakeholders(data, principal)
        authz.check_create(principal, scope=data.scope, source=data.source, owner=owner, label=data.label)
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
                owner, teams = self._stakeholders(data, principal)
                authz.check_create(principal, scope=data.scope, source=data.source, owner=owner, label=data.label)
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
                self._peer_index = None  # it listed nodes of the batch that was not written
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
        # -- dedup ------------------------------------------------------------
        # An explicit replacement (supersedes=[ids], e.g. supersede(old, new) with the same
        # label) is never turned into an in-place update: the caller asked for a new
        # memory that supersedes the old one (seed §9 "explicit replacement").
        key = normalise_label(data.label)
        group = None if supersedes else self._group(data.scope, owner, teams)
        peers: dict[NamedNode, tuple[dict[Any, list[Any]], None]] | None = None
        same_label: list[NamedNode] = []
        if supersedes:
            pass
        elif group is None:
            peers = self._peers(data.scope, owner, teams, klass)
            same_label = [
                pid for pid, (a, _) in peers.items()
                if normalise_label(a[R.LABEL][0].value) == key and klass in a.get(R.A, [])
            ]
        else:
            idx, gkey = group
            same_label = [
                pid for pid in sorted(idx.by_label.get((gkey, key), ()), key=lambda n: n.value)
                if klass in idx.entries[pid].a.get(R.A, [])
            ]
        # A restatement updates in place; a different person's (or a different source's)
        # new text under the same label is not silently written over a memory a human may
        # have meant to keep: it becomes a conflict candidate (ask-before-overwrite, seed §9).
        forced: list[NamedNode] = []
        for pid in same_label:
            current = self._node(pid)[0]
            if self._restates(current, data, principal):
                new = self._dedup_update(txn, pid, current, data, principal)
                self._pend(pid, new)
                return pid
            forced.append(pid)

        # -- new node --------------------------------------------------------
        m = R.memory_iri(self.tenant, uuid.uuid4().hex)
        now = R.dt_literal(self._clock())
        triples = [
            Triple(m, R.A, klass),
            Triple(m, R.LABEL, Literal(data.label)),
            Triple(m, R.P_CONTENT, Literal(data.content)),
            Triple(m, R.P_KIND, R.KIND_IRI[data.kind]),
            Triple(m, R.P_SCOPE, R.SCOPE_IRI[data.scope]),
            Triple(m, R.P_IMPORTANCE, Literal(str(data.importance), datatype=R.X_INTEGER)),
            Triple(m, R.P_SOURCE, R.SOURCE_IRI[data.source]),
            Triple(m, R.P_CONFIDENCE, R.decimal_literal(data.resolved_confidence())),
            Triple(m, R.P_CREATED, now),
            Triple(m, R.P_UPDATED, now),
            Triple(m, R.P_AUTHOR, self._person(principal.person)),
        ]
        if owner is not None:
            triples.append(Triple(m, R.P_OWNER, self._person(owner)))
        triples.extend(Triple(m, R.P_TEAM, self._team(t)) for t in teams)
        if data.expires_at is not None:
            triples.append(Triple(m, R.P_EXPIRES, R.dt_literal(data.expires_at)))
        if klass != R.MEMORY:
            triples.extend(self._subclass_triples(m, klass, data.properties))
        triples.extend(Triple(m, R.P_DERIVED_FROM, t) for t in self._turns(data.derived_from))

        # validate the node before anything else is decided about it
        ctx, create = self._linked_types(triples)
        self._validate(m, triples + ctx)

        # -- what it replaces ------------------------------------------------
        replaced: list[NamedNode] = []
        if supersedes:
            for sid in supersedes:
                old, oa, _ = self._load_for(sid, principal)
                self._check_supersedable(principal, old, oa)
                replaced.append(old)
        else:
            if peers is not None:
                candidates = {pid: v for pid, v in peers.items() if klass == R.MEMORY or klass in v[0].get(R.A, [])}
            else:
                assert group is not None  # peers are read by query exactly when there is no group
                candidates = self._candidates(group, data, klass)
            hits = self._judge(m, klass, data, triples, candidates)
            if forced:
                candidates = dict(candidates)  # never mutate the peer index's mapping
                for pid in forced:
                    candidates.setdefault(pid, (self._node(pid)[0], None))
                hits = sorted(set(hits) | set(forced), key=lambda n: n.value)
            if hits:
                # auto-captured context resolves silently, but never over a memory a human
                # wrote or imported (seed 003 §9: "we never silently clobber a human's memory")
                silent = data.source == "extraction" and data.kind == "context" and all(
                    candidates[h][0].get(R.P_SOURCE, [None])[0] == R.SOURCE_IRI["extraction"] for h in hits)
                cid = conflict_digest(self._canonical(data, owner, teams), [h.value for h in hits])
                if not silent and (conflict_resolution is None or conflict_id != cid):
                    labels = [candidates[h][0][R.LABEL][0].value for h in hits]
                    ids = [h.value.rsplit(":", 1)[-1] for h in hits]
                    conflict = Conflict(
                        conflict_id=cid,
                        label=data.label,
                        candidates=ids,
                        candidate_labels=labels,
                        reason="stale conflict_id; candidates changed"
                        if conflict_id is not None and conflict_id != cid
                        else "the new memory would replace these",
                    )
                    exc = ConflictPending(
                        f"memory {data.label!r} would replace {len(ids)} existing memory(ies) "
                        f"{', '.join(f'{i} ({lb!r})' for i, lb in zip(ids, labels))}; retry with "
                        f"conflict_resolution='replace' or 'keep_both' and conflict_id={cid!r}",
                        cid,
                        ids,
                    )
                    exc.conflict = conflict  # type: ignore[attr-defined]
                    raise exc
                if silent or conflict_resolution == "replace":
                    for h in hits:
                        self._check_supersedable(principal, h, self._node(h)[0])
                    replaced = hits

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
            self._pend(m, dict(a))
            pidx = self._peer_index
            for old in replaced:
                if pidx is not None:
                    pidx._drop(old)  # noqa: SLF001 - superseded in this batch: no longer a peer
        return m

    def _pend(self, m: NamedNode, asserted: dict[Any, list[Any]] | None) -> None:
        """Inside :meth:`remember_many`: remember the pending node and list it in the peer
        index, so later items of the batch dedup and conflict against it."""
        pending = getattr(self._tl, "pending", None)
        if pending is None or asserted is None:
            return
        pending[m] = asserted
        idx = self._peer_index
        if idx is None:
            return
        idx._drop(m)  # noqa: SLF001
        groups = [g for g in _groups_of(asserted) if idx.complete or g in idx.built]
        if groups and asserted.get(R.LABEL):
            e = _PeerEntry(dict(asserted), groups)
            idx.entries[m] = e
            for g in groups:
                idx._join(m, e, g)  # noqa: SLF001

    def _canonical(self, data: MemoryInput, owner: str | None, teams: list[str]) -> str:
        d = data.model_dump(mode="json")
        d["owner"], d["teams"] = owner, teams
        return json.dumps(d, sort_keys=True, default=str)

    # -- the peer index (dedup / conflict candidates) ------------------------------
    def _affected(self, old: int, new: int) -> set[Any] | None:
        """Subjects whose peer entry may differ between generations ``old`` and ``new``,
        from the commits this process knows of (this service's own writes and the
        store's last commit); ``None`` when a commit in between is unknown (another
        writer or process) or changed the schema."""
        if new < old:
            return None
        with self._commits_lock:
            known = dict(self._commits)
            for g in [g for g in self._commits if g <= new]:
                del self._commits[g]
        last = getattr(self.store, "last_commit", None)
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

    def _index(self) -> _PeerIndex | None:
        """The peer index at the open transaction's generation (``None`` outside a
        transaction or over a store without generations). Another writer's commit
        (unknown to this process) rebuilds it from the mirror."""
        txn = getattr(self._tl, "txn", None)
        gen_of = getattr(self.store, "generation", None)
        if txn is None or gen_of is None:
            return None
        gen = gen_of()
        idx, self._peer_index = self._peer_index, None  # a failure below leaves no half-updated index
        view = txn.view
        if idx is not None and idx.gen != gen:
            affected = self._affected(idx.gen, gen)
            if affected is None:
                idx = None
            else:
                for m in affected:
                    idx.refresh(m, view)
                idx.gen = gen
        if idx is None:
            with self._commits_lock:
                self._commits = {g: c for g, c in self._commits.items() if g > gen}
            # group by group, as writes need them: a fresh process's first write reads only
            # its own (scope, stakeholder) group, not every active memory of the tenant
            # (``_PeerIndex.build`` did, ~1 s at 10k memories)
            idx = _PeerIndex(gen)
        self._peer_index = idx
        return idx

    def _group(self, scope: str, owner: str | None, teams: list[str]) -> tuple[_PeerIndex, tuple[Any, ...]] | None:
        """The peer index and the (scope, stakeholder) group key, or ``None`` to read peers by query."""
        idx = self._index()
        if idx is None:
            return None
        scope_iri = R.SCOPE_IRI[scope]
        g: tuple[Any, ...]
        if scope == "user":
            g = (scope_iri, self._person(owner)) if owner is not None else ("none",)
        elif scope == "team":
            g = (scope_iri, frozenset(self._team(t) for t in teams)) if teams else ("none",)
        else:
            g = (scope_iri,)
        if not idx.complete and g not in idx.built:
            self._peer_index = None  # until the group is listed
            idx.add_group(g, {m: d for m, (d, _) in self._query_peers(scope, owner, teams).items()})
            self._peer_index = idx
        return idx, g

    def _candidates(
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
            view = self._tl.txn.view
            for pid in members:
                e = idx.entries[pid]
                if klass in e.a.get(R.A, []):
                    out[pid] = (e.node(pid, view), None)
            return out
        judge = self.judge
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

    def _peers(
        self, scope: str, owner: str | None, teams: list[str], klass: NamedNode | None = None
    ) -> dict[NamedNode, tuple[dict[Any, list[Any]], None]]:
        """Active memories with the same scope and stakeholder: same owner (user), the
        same team set (team), any (company)."""
        scope_iri = R.SCOPE_IRI[scope]
        group = self._group(scope, owner, teams)
        if group is not None:
            idx, gkey = group
            out = {}
            for pid in idx.groups.get(gkey, set()):
                e = idx.entries[pid]
                full = klass is not None and klass != R.MEMORY and klass in e.a.get(R.A, [])
                out[pid] = (e.node(pid, self._tl.txn.view) if full else e.partial(scope_iri), None)
            return out
        nodes = self._query_peers(scope, owner, teams)
        subclassed = [m for m, (d, _) in nodes.items() if klass is not None and klass != R.MEMORY and klass in d[R.A]]
        if subclassed:  # same-class nodes in full: the judge reads their identifying properties
            with self._view() as v:
                for m in subclassed:
                    d = defaultdict(list)
                    for qd in v.quads(m, None, None, R.MEMORIES):
                        d[qd.predicate].append(qd.object)
                    nodes[m] = (d, None)
        return nodes

    def _query_peers(
        self, scope: str, owner: str | None, teams: list[str]
    ) -> dict[NamedNode, tuple[dict[Any, list[Any]], None]]:
        """Type, label, content, team and scope of the active memories of a (scope,
        stakeholder) group. User and team groups are read from the owner / team link
        (indexed pattern reads: O(group), not O(tenant) -- a SPARQL query with the owner
        bound as a substitution scans every user memory on pyoxigraph 0.5)."""
        scope_iri = R.SCOPE_IRI[scope]
        nodes: dict[NamedNode, dict[Any, list[Any]]] = {}
        with self._view() as v:
            if scope == "user":
                if owner is None:
                    return {}
                members = v.subjects(R.P_OWNER, self._person(owner), R.MEMORIES)
            elif scope == "team":
                if not teams:
                    return {}
                members = v.subjects(R.P_TEAM, self._team(teams[0]), R.MEMORIES)
            else:
                members = v.subjects(R.P_SCOPE, scope_iri, R.MEMORIES)
            for m in members:
                if not isinstance(m, NamedNode) or not v.contains(Quad(m, R.A, R.ACTIVE, R.INFERRED)):
                    continue
                if not v.contains(Quad(m, R.P_SCOPE, scope_iri, R.MEMORIES)):
                    continue
                d: dict[Any, list[Any]] = defaultdict(list)
                for pred in (R.A, R.LABEL, R.P_CONTENT, R.P_TEAM, R.P_KIND, R.P_SOURCE):
                    for q in v.quads(m, pred, None, R.MEMORIES):
                        if q.object not in d[pred]:
                            d[pred].append(q.object)
                if not d.get(R.A) or not d.get(R.LABEL):
                    continue
                d[R.P_SCOPE] = [scope_iri]
                nodes[m] = d
        if scope == "team":
            want = {self._team(t) for t in teams}
            nodes = {k: v for k, v in nodes.items() if set(v.get(R.P_TEAM, [])) == want}
        return {k: (v, None) for k, v in nodes.items()}

    def _subject(self, m: NamedNode, klass: NamedNode, label: str, content: str, triples: dict[Any, list[Any]]) -> Subject:
        keys: dict[str, str] = {}
        if klass != R.MEMORY:
            specs = self.schema.properties(klass)
            for p, objs in triples.items():
                spec = specs.get(p.value)
                if spec is not None and spec.identifying and len(objs) == 1:
                    keys[p.value] = str(objs[0])
        kind = triples.get(R.P_KIND)
        source = triples.get(R.P_SOURCE)
        return Subject(
            id=m.value, label=label, content=content,
            subclass=klass.value if klass != R.MEMORY else None, keys=keys,
            kind=R.IRI_KIND.get(kind[0]) if kind else None,
            source=R.IRI_SOURCE.get(source[0]) if source else None,
        )

    def _judge(
        self,
        m: NamedNode,
        klass: NamedNode,
        data: MemoryInput,
        triples: list[Triple],
        candidates: dict[NamedNode, tuple[dict[Any, list[Any]], None]],
    ) -> list[NamedNode]:
        if not candidates:
            return []
        mine: dict[Any, list[Any]] = defaultdict(list)
        for t in triples:
            mine[t.predicate].append(t.object)
        new = self._subject(m, klass, data.label, data.content, mine)
        subs = []
        for cid, (a, _) in candidates.items():
            types = [t for t in a.get(R.A, []) if isinstance(t, NamedNode)]
            ck = types[0] if types else R.MEMORY
            content = a.get(R.P_CONTENT)
            subs.append(self._subject(cid, ck, a[R.LABEL][0].value, content[0].value if content else "", a))
        picked = set(self.judge.judge(new, subs))
        return sorted((c for c in candidates if c.value in picked), key=lambda n: n.value)

    def _check_supersedable(self, principal: Principal, old: NamedNode, asserted: dict[Any, list[Any]]) -> None:
        owner = asserted.get(R.P_OWNER)
        authz.check_supersede(
            principal,
            memory_id=old.value.rsplit(":", 1)[-1],
            scope=R.IRI_SCOPE[asserted[R.P_SCOPE][0]],
            owner=R.slug_of(owner[0].value) if owner else None,
        )
        if asserted.get(R.P_SUPERSEDED_BY):
            raise InvalidInput(
                f"supersedes: memory {old.value.rsplit(':', 1)[-1]} is already superseded by "
                f"{asserted[R.P_SUPERSEDED_BY][0].value.rsplit(':', 1)[-1]}",
                field="supersedes",
            )

    def _restates(self, current: dict[Any, list[Any]], data: MemoryInput, principal: Principal) -> bool:
        """Whether writing ``data`` over the same-label memory ``current`` is a restatement
        (updated in place, dedup) rather than a possible overwrite (a conflict).

        A restatement: the same text (whitespace and case aside); or its author or owner
        writing from the same source; or auto-captured (extraction) over auto-captured.
        """
        def norm(text: str) -> str:
            return " ".join(text.split()).casefold()

        old_content = current.get(R.P_CONTENT, [Literal("")])[0].value
        if norm(old_content) == norm(data.content):
            return True
        old_source = current.get(R.P_SOURCE, [None])[0]
        same_source = old_source == R.SOURCE_IRI[data.source]
        if same_source and data.source == "extraction":
            return True
        me = self._person(principal.person)
        author = current.get(R.P_AUTHOR, [None])[0]
        owner = current.get(R.P_OWNER, [None])[0]
        return same_source and me in (author, owner)

    def _dedup_update(
        self, txn: Any, m: NamedNode, asserted: dict[Any, list[Any]], data: MemoryInput, principal: Principal,
    ) -> dict[Any, list[Any]]:
        owner = asserted.get(R.P_OWNER)
        authz.check_update(
            principal, memory_id=m.value.rsplit(":", 1)[-1],
            scope=data.scope, owner=R.slug_of(owner[0].value) if owner else None,
        )
        changes: dict[str, Any] = {
            "label": data.label, "content": data.content, "importance": data.importance,
            "kind": data.kind, "confidence": data.resolved_confidence(),
        }
        if data.expires_at is not None:
            changes["expires_at"] = data.expires_at
        if data.properties:
            changes["properties"] = data.properties
        if data.derived_from:  # a restatement from another conversation adds its turns
            changes["derived_from"] = sorted(
                set(asserted.get(R.P_DERIVED_FROM, [])) | set(self._turns(data.derived_from)), key=str)
        return self._apply_patch(txn, m, asserted, changes, principal)

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
            )
            self._apply_patch(txn, m, asserted, patch.given(), principal)
        return self.get(m.value)

    def _apply_patch(
        self, txn: Any, m: NamedNode, asserted: dict[Any, list[Any]], given: dict[str, Any], principal: Principal
    ) -> dict[Any, list[Any]]:
        new: dict[Any, list[Any]] = {p: list(v) for p, v in asserted.items()}
        scope = R.IRI_SCOPE[asserted[R.P_SCOPE][0]]
        simple: dict[str, tuple[NamedNode, Callable[[Any], Any]]] = {
            "label": (R.LABEL, lambda v: Literal(v)),
            "content": (R.P_CONTENT, lambda v: Literal(v)),
            "kind": (R.P_KIND, lambda v: R.KIND_IRI[v]),
            "importance": (R.P_IMPORTANCE, lambda v: Literal(str(v), datatype=R.X_INTEGER)),
            "confidence": (R.P_CONFIDENCE, R.decimal_literal),
            "expires_at": (R.P_EXPIRES, R.dt_literal),
        }
        for name, value in given.items():
            if name in simple:
                pred, conv = simple[name]
                new[pred] = [] if value is None else [conv(value)]
            elif name == "derived_from":  # internal: set by a restatement (dedup), not by update()
                new[R.P_DERIVED_FROM] = list(value)
            elif name == "teams":
                if scope != "team":
                    if value:
                        raise InvalidInput(f"teams: a {scope}-scope memory has no team links", field="teams")
                    continue
                if not value:
                    raise InvalidInput("teams: a team-scope memory needs at least one team", field="teams")
                new[R.P_TEAM] = [self._team(t) for t in value]
            elif name == "properties":
                klass = next((t for t in asserted.get(R.A, []) if t != R.MEMORY), None)
                if klass is None:
                    if value:
                        raise InvalidInput("properties: only a subclass memory carries properties", field="properties")
                    continue
                specs = self.schema.properties(klass)
                if value is None:
                    for p in list(new):
                        if p.value in specs:
                            new[p] = []
                    continue
                derived = self._derived_predicates()
                for pname, pval in value.items():
                    spec = self.schema.resolve_property(klass, pname)
                    _refuse_derived(spec, pname, derived)
                    p = NamedNode(spec.iri)
                    new[p] = [] if pval is None else self.schema.to_terms(spec, pval)
        now = R.dt_literal(self._clock())
        new[R.P_UPDATED] = [now]
        new[R.P_AUTHOR] = [self._person(principal.person)]
        old_set = {Triple(m, p, o) for p, objs in asserted.items() for o in objs}
        new_set = {Triple(m, p, o) for p, objs in new.items() for o in objs}
        validate_set = [t for t in new_set if t.predicate != R.P_SUPERSEDED_BY]
        ctx, create = self._linked_types(new_set)
        self._validate(m, sorted(validate_set, key=str) + ctx)
        for q in create:
            txn.add(q)
        if new.get(R.LABEL) != asserted.get(R.LABEL) or new.get(R.P_CONTENT) != asserted.get(R.P_CONTENT):
            # history keeps what an in-place update overwrites (a rk:Revision node)
            r = R.revision_iri(self.tenant, uuid.uuid4().hex)
            txn.add(Quad(r, R.A, R.REVISION, R.MEMORIES))
            txn.add(Quad(r, R.P_REVISION_OF, m, R.MEMORIES))
            for o in asserted.get(R.LABEL, []):
                txn.add(Quad(r, R.LABEL, o, R.MEMORIES))
            for o in asserted.get(R.P_CONTENT, []):
                txn.add(Quad(r, R.P_CONTENT, o, R.MEMORIES))
            txn.add(Quad(r, R.P_REVISED_AT, now, R.MEMORIES))
            txn.add(Quad(r, R.P_REVISED_BY, self._person(principal.person), R.MEMORIES))
        for t in old_set - new_set:
            txn.remove(Quad(t.subject, t.predicate, t.object, R.MEMORIES))
        for t in new_set - old_set:
            txn.add(Quad(t.subject, t.predicate, t.object, R.MEMORIES))
        return {p: v for p, v in new.items() if v}

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
        if isinstance(new, dict):
            fields = dict(new)
            fields.pop("principal", None)
            return self.remember(principal=principal, supersedes=[old_id], **fields)
        with self._transaction() as txn:
            old, oa, _ = self._load_for(old_id, principal)
            target, ta, _ = self._load_for(new, principal)
            if old == target:
                raise InvalidInput("supersedes: a memory cannot supersede itself", field="supersedes")
            self._check_supersedable(principal, old, oa)
            # the replacement gains the (derived) supersedes pointer and is returned to the
            # caller: it must be a memory the principal could supersede too (own it, or be an
            # operator for team/company memories) — never someone else's private memory
            t_owner = ta.get(R.P_OWNER)
            authz.check_supersede(
                principal,
                memory_id=target.value.rsplit(":", 1)[-1],
                scope=R.IRI_SCOPE[ta[R.P_SCOPE][0]],
                owner=R.slug_of(t_owner[0].value) if t_owner else None,
            )
            # refuse cycles: walk the newer memory's chain
            cur, seen = ta.get(R.P_SUPERSEDED_BY, []), set()
            while cur:
                nxt = cur[0]
                if nxt == old:
                    raise InvalidInput(
                        f"supersedes: {new} is already (transitively) superseded by {old_id}; "
                        f"the chain would form a cycle",
                        field="supersedes",
                    )
                if nxt in seen:
                    break
                seen.add(nxt)
                cur = self._node(nxt)[0].get(R.P_SUPERSEDED_BY, [])
            if ta.get(R.P_SUPERSEDED_BY):
                raise InvalidInput(
                    f"supersede: the replacement {target.value.rsplit(':', 1)[-1]} is itself superseded by "
                    f"{ta[R.P_SUPERSEDED_BY][0].value.rsplit(':', 1)[-1]}; nothing would stay live "
                    "(supersede with the live memory instead)",
                    field="new",
                )
            txn.add(Quad(old, R.P_SUPERSEDED_BY, target, R.MEMORIES))
        return self.get(target.value)

    def restore(self, memory_id: str, *, principal: Principal) -> Memory:
        """Undo a supersession (operator only): removes ``rk:supersededBy`` from the memory.

        :raises NotAuthorized: the principal is not an operator.
        :raises RestoreRefused: the memory that superseded it is still active, or an
            active memory of the same scope and stakeholder conflicts with it.
        :raises UnknownMemory: no such memory.
        """
        authz.check_restore(principal, memory_id=str(memory_id))
        with self._transaction() as txn:
            m, a, _ = self._load(memory_id)
            by = a.get(R.P_SUPERSEDED_BY, [])
            if not by:
                raise InvalidInput(
                    f"restore: memory {m.value.rsplit(':', 1)[-1]} ({a[R.LABEL][0].value!r}) is not superseded; "
                    f"there is nothing to restore"
                    + (" (it is inactive because it expired: update its expires_at instead)"
                       if a.get(R.P_EXPIRES) else ""),
                    field="memory_id",
                )
            for newer in by:
                with self._view() as v:
                    newer_active = v.contains(Quad(newer, R.A, R.ACTIVE, R.INFERRED))
                if newer_active:
                    raise RestoreRefused(
                        f"cannot restore memory {m.value.rsplit(':', 1)[-1]} ({a[R.LABEL][0].value!r}): "
                        f"the memory that superseded it, {newer.value.rsplit(':', 1)[-1]}, is still active; "
                        f"supersede or delete that one first"
                    )
            scope = R.IRI_SCOPE[a[R.P_SCOPE][0]]
            owner = a.get(R.P_OWNER)
            klass = next((t for t in a.get(R.A, []) if t != R.MEMORY), R.MEMORY)
            peers = self._peers(scope, R.slug_of(owner[0].value) if owner else None,
                                sorted(R.slug_of(t.value) for t in a.get(R.P_TEAM, [])), klass)
            peers.pop(m, None)
            klass = next((t for t in a.get(R.A, []) if t != R.MEMORY), R.MEMORY)
            cands = {pid: v for pid, v in peers.items() if klass == R.MEMORY or klass in v[0].get(R.A, [])}
            me = self._subject(m, klass, a[R.LABEL][0].value, a.get(R.P_CONTENT, [Literal("")])[0].value, a)
            subs = []
            for cid, (ca, _) in cands.items():
                ck = next((t for t in ca.get(R.A, []) if t != R.MEMORY), R.MEMORY)
                subs.append(self._subject(cid, ck, ca[R.LABEL][0].value, ca.get(R.P_CONTENT, [Literal("")])[0].value, ca))
            hits = sorted(self.judge.judge(me, subs))
            if hits:
                raise RestoreRefused(
                    f"cannot restore memory {m.value.rsplit(':', 1)[-1]} ({a[R.LABEL][0].value!r}): it would "
                    f"contradict active memory(ies) {', '.join(h.rsplit(':', 1)[-1] for h in hits)}"
                )
            for newer in by:
                txn.remove(Quad(m, R.P_SUPERSEDED_BY, newer, R.MEMORIES))
            now = R.dt_literal(self._clock())
            for o in a.get(R.P_UPDATED, []):
                txn.remove(Quad(m, R.P_UPDATED, o, R.MEMORIES))
            txn.add(Quad(m, R.P_UPDATED, now, R.MEMORIES))
            for o in a.get(R.P_AUTHOR, []):
                txn.remove(Quad(m, R.P_AUTHOR, o, R.MEMORIES))
            txn.add(Quad(m, R.P_AUTHOR, self._person(principal.person), R.MEMORIES))
        return self.get(m.value)

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
        authz.check_delete(principal, memory_id=str(memory_id))
        if reason is not None and (not isinstance(reason, str) or not reason.strip() or len(reason) > 2000):
            raise InvalidInput("reason: a non-empty string of at most 2,000 characters is required", field="reason")
        with self._transaction() as txn:
            m, a, _ = self._load(memory_id)
            for p, objs in a.items():
                for o in objs:
                    txn.remove(Quad(m, p, o, R.MEMORIES))
            with self._view() as v:
                for r in v.subjects(R.P_REVISION_OF, m, R.MEMORIES):
                    txn.remove_pattern(r, None, None, R.MEMORIES)
            who = self._person(principal.person)
            if not self._exists(who, R.PERSON):
                txn.add(Quad(who, R.A, R.PERSON, R.MEMORIES))
            txn.add(Quad(m, R.A, R.DELETED, R.MEMORIES))
            txn.add(Quad(m, R.P_DELETED_AT, R.dt_literal(self._clock()), R.MEMORIES))
            txn.add(Quad(m, R.P_DELETED_BY, who, R.MEMORIES))
            if reason is not None:
                txn.add(Quad(m, R.rk("deletionReason"), Literal(reason), R.MEMORIES))
            for o in a.get(R.P_SUPERSEDED_BY, []):
                txn.add(Quad(m, R.P_SUPERSEDED_BY, o, R.MEMORIES))

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
        if principal is not None and not principal.is_operator:
            self._load_for(memory_id, principal)
        start = self._history_entry(memory_id)
        if start is None:
            raise self._absent(memory_id)
        seen: dict[str, HistoryEntry] = {start.id: start}
        todo = [start]
        while todo:
            cur = todo.pop()
            for nid in [*cur.superseded_by, *cur.supersedes]:
                if nid in seen:
                    continue
                entry = self._history_entry(nid)
                if entry is None:  # pragma: no cover - a pointer to nothing (tenants before tombstones)
                    continue
                seen[nid] = entry
                todo.append(entry)
        out = list(seen.values())
        if principal is not None and not principal.is_operator:
            out = [e for e in out if e.id == start.id or self.readable(e.id, principal)]
        far = datetime.min.replace(tzinfo=UTC)
        out.sort(key=lambda e: (e.created_at or e.deleted_at or far, e.id))
        return out

    def _history_entry(self, memory_id: str) -> HistoryEntry | None:
        """The history entry of a memory or of a deleted memory's tombstone."""
        from reckon.memory.models import Revision

        try:
            m = self.iri(memory_id)
        except UnknownMemory:
            return None
        asserted, inferred = self._node(m)
        hex_id = m.value.rsplit(":", 1)[-1]
        older = self._older(m.value)
        with self._view() as v:
            revs = []
            for r in v.subjects(R.P_REVISION_OF, m, R.MEMORIES):
                d: dict[Any, list[Any]] = defaultdict(list)
                for q in v.quads(r, None, None, R.MEMORIES):
                    d[q.predicate].append(q.object)
                by = d.get(R.P_REVISED_BY)
                revs.append(Revision(
                    label=d[R.LABEL][0].value if d.get(R.LABEL) else "",
                    content=d[R.P_CONTENT][0].value if d.get(R.P_CONTENT) else None,
                    revised_at=R.python_value(d[R.P_REVISED_AT][0]) if d.get(R.P_REVISED_AT) else None,
                    revised_by=R.slug_of(by[0].value) if by else None,
                ))
        far = datetime.min.replace(tzinfo=UTC)
        revs.sort(key=lambda r: (r.revised_at or far, r.label))
        superseded_by = sorted(o.value.rsplit(":", 1)[-1] for o in asserted.get(R.P_SUPERSEDED_BY, []))
        if R.P_KIND not in asserted:
            if R.DELETED not in asserted.get(R.A, []):
                return None
            by = asserted.get(R.P_DELETED_BY)
            return HistoryEntry(
                id=hex_id, label=None, content=None, source=None, author=None, created_at=None, updated_at=None,
                superseded_by=superseded_by, supersedes=older, active=False, event="deleted",
                deleted_at=R.python_value(asserted[R.P_DELETED_AT][0]) if asserted.get(R.P_DELETED_AT) else None,
                deleted_by=R.slug_of(by[0].value) if by else None,
                deleted_reason=(asserted[R.rk("deletionReason")][0].value
                                if asserted.get(R.rk("deletionReason")) else None),
            )
        mem = self._to_memory(m, asserted, inferred)
        event: TLiteral["created", "updated", "superseded", "current", "deleted"]
        if mem.superseded_by:
            event = "superseded"
        elif revs or (mem.updated_at and mem.created_at and mem.updated_at > mem.created_at):
            event = "updated"
        else:
            event = "current" if mem.active else "created"
        return HistoryEntry(
            id=mem.id, label=mem.label, content=mem.content, source=mem.source, author=mem.author,
            created_at=mem.created_at, updated_at=mem.updated_at,
            superseded_by=mem.superseded_by,
            supersedes=sorted(set(mem.supersedes) | set(older)),
            active=mem.active, event=event, revisions=revs,
        )

    def _older(self, iri: str) -> list[str]:
        with self._view() as v:
            olds = v.subjects(R.P_SUPERSEDED_BY, NamedNode(iri), R.MEMORIES)
        return sorted(o.value.rsplit(":", 1)[-1] for o in olds)
