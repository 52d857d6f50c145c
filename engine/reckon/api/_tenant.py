"""The :class:`Tenant` facade: SPARQL, business data, the clock, export, and the memory
operations (delegated verbatim to ``reckon.memory.MemoryService``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from typing import Literal as TLiteral

from pyoxigraph import Literal, NamedNode, Quad, Triple

from reckon import vocab as V
from reckon._args import bind_error, checked_methods
from reckon._errors import InvalidInput
from reckon.api._neighbours import NeighboursMixin
from reckon.business import writers as B
from reckon.memory.models import HistoryEntry, Kind, Memory, Principal, PropertyValue, Scope, Source
from reckon.store import Commit, QueryResult, TenantStore
from reckon.vocab import A

if TYPE_CHECKING:  # pragma: no cover
    from reckon.api._engine import Engine
    from reckon.memory.service import MemoryService
    from reckon.recall.bundle import ContextBundle, SearchHit, TenantRecall

__all__ = ["UNSET", "Tenant", "Unset"]



class Unset:
    """The type of :data:`UNSET`: "not given" in a three-state partial edit."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET = Unset()
"""A field of :meth:`Tenant.update` left untouched (``None`` removes it)."""




@checked_methods
class Tenant(NeighboursMixin):
    """One tenant of an :class:`~reckon.api.Engine` (obtain with ``engine.tenant(id)``).

    Every write below is one store transaction: serialized across threads and
    processes, validated, reasoned incrementally and committed atomically.

    :ivar id: the tenant id.
    :ivar store: the underlying :class:`~reckon.store.TenantStore`.
    """

    store: TenantStore

    def __init__(self, engine: Engine, store: TenantStore) -> None:
        self.engine = engine
        self.store = store
        self.id: str = store.tenant_id
        self._memory: Any = None
        self._recall: Any = None
        self._transcripts: Any = None
        self._turn_index: Any = None
        self._mlock = threading.Lock()
        #: True once :meth:`close` ran (its calls then raise :class:`~reckon.TenantClosed`)
        self.closed = False
        # every asserted write of this tenant meets its shapes (issue 10: one validator)
        store.validator = self._check_write

    def close(self, *, wait: float = 10.0) -> None:
        """Stop this tenant's background threads and close its store (the
        :class:`Engine` reopens a new Tenant on demand). The recall index writes its
        snapshot and its embedding thread stops (memories still waiting for a vector are
        embedded by the next process that opens the index: the store holds their text);
        the event graph's similarity thread gets up to ``wait`` seconds to finish its
        queue (an unfinished queue is caught up when the graph is next opened).

        :param wait: seconds each background thread is given to stop.
        """
        self.closed = True  # every later call raises TenantClosed; engine.tenant() opens a new object
        events = getattr(self, "_events", None)
        similarity = getattr(events, "similarity", None)
        if similarity is not None:
            try:
                similarity.wait(timeout=wait)
            except Exception:  # noqa: BLE001 - closing must close
                logging.getLogger("reckon").warning("the similarity thread did not finish", exc_info=True)
        turns, self._turn_index = self._turn_index, None
        try:
            if self._memory is not None:
                self._memory.peers.close()  # the peer index's file, for the next process
            if turns is not None:
                turns.close()
            if self._recall is not None:
                self._recall.close(wait=wait)
        except Exception:  # noqa: BLE001 - closing must close the store
            logging.getLogger("reckon").warning("closing tenant %s's recall failed", self.id, exc_info=True)
        self.store.close()

    def _derived_predicates(self) -> frozenset[str]:
        """IRIs the tenant's stored program derives (its rule heads; ``rdf:type`` aside):
        handed to the memory layer, which refuses to assert them."""
        key = self.store.program_key
        cached = getattr(self, "_derived_cache", None)
        if cached is not None and cached[0] == key and key is not None:
            return cached[1]  # type: ignore[no-any-return]
        rs = self.program().ruleset()
        out = frozenset() if rs is None else frozenset(
            tp.p.value for r in rs.rules for tp in r.head if isinstance(tp.p, NamedNode)
        ) - {A.value}
        self._derived_cache = (key, out)
        return out

    def _check_write(self, added: Any, removed: Any, view: Any) -> None:
        self.memory.check_write(added, removed, view)

    def __repr__(self) -> str:
        return f"Tenant({self.id!r})"

    # ------------------------------------------------------------------ reads
    def sparql(self, query: str) -> QueryResult:
        """Run a read-only SPARQL 1.2 query; the default graph is the union of the
        schema, memories, business and inferred graphs, each addressable with ``GRAPH``
        (and nameable in ``FROM`` / ``FROM NAMED``).

        The text is checked first (:func:`reckon.store.inspect_query`: form, updates,
        ``SERVICE``, dataset, size, depth), then evaluated once in a query worker
        process that cannot open a network connection, under the engine's
        :class:`~reckon.store.QueryLimits` (``Engine(query_limits=...)``).

        :returns: SELECT: list of dicts (variable name -> pyoxigraph term); ASK: bool;
            CONSTRUCT / DESCRIBE: list of ``Triple``.
        :raises ReadOnlyQuery: for an update or a SERVICE clause.
        :raises InvalidInput: when the text does not parse, or ``FROM`` names a graph
            that is not public.
        :raises QueryLimitExceeded: over a limit (``.limit`` says which: query_bytes,
            depth, deadline, rows, result_bytes, busy, resources).
        :raises TenantGone: when the tenant was deleted meanwhile.
        """
        result: QueryResult = self.sparql_outcome(query).to_python()
        return result

    def sparql_outcome(self, query: str) -> Any:
        """Like :meth:`sparql`, but the worker's serialized result
        (:class:`reckon.store.QueryOutcome`: form, variables, SPARQL JSON results or
        N-Triples bytes), for servers that pass it on."""
        from reckon.store import inspect_query
        from reckon.store.tenant_store import PUBLIC_IRIS

        plan = inspect_query(query, self.engine.query_limits, public_graphs=PUBLIC_IRIS)
        return self.engine.query_pool.run(self.store, plan)

    def explain(self, s: Any, p: Any, o: Any) -> Any:
        """Why an inferred triple holds (``reckon.datalog`` Explanation: rule, bindings and
        supporting facts down to asserted ones; ``.render()`` gives text). Strings for
        ``s`` and ``p`` are IRIs.

        :raises ExplainError: when the triple is not inferred.
        """
        s_ = NamedNode(s) if isinstance(s, str) else s
        p_ = NamedNode(p) if isinstance(p, str) else p
        if isinstance(o, str):
            raise InvalidInput("explain: give the object as a pyoxigraph term (NamedNode or Literal)", field="o")
        return self.store.reasoner().explain(Triple(s_, p_, o))  # type: ignore[attr-defined]

    def dump(self) -> bytes:
        """Sorted N-Quads of the tenant's public graphs (byte-stable)."""
        return self.store.dump()

    def export(self, path: str | Path) -> Path:
        """Write the asserted graphs as TriG with a ``# reckon-export-version: 1`` header.
        Re-import with ``engine.import_tenant(new_id, path)``.

        :raises StoreError: when the file cannot be written.
        """
        self.store.export_trig(path)
        return Path(path)

    def verify_export(self, path: str | Path) -> bool:
        """True when the export at ``path`` is isomorphic to the tenant's asserted graphs."""
        return self.store.verify_export(path)

    # ------------------------------------------------------------------ program and settings
    def program(self) -> Any:
        """The program the tenant stores and reasons with
        (:class:`reckon.schema.program.Program`: modules, digest, ``ruleset()``)."""
        from reckon.api._program import stored_program

        key = self.store.program_key
        cached = getattr(self, "_program_cache", None)
        if cached is not None and cached[0] == key and key is not None:
            return cached[1]
        with self.store.snapshot() as view:
            prog = stored_program(view)
        if prog is None:  # pragma: no cover - tenants are adopted when opened
            prog = self.engine.program
        self._program_cache = (self.store.program_key, prog)
        return prog

    def modules(self) -> list[Any]:
        """The tenant's modules in program order (``ModuleInfo``: name, digest, files, kinds)."""
        from reckon.api._program import ModuleInfo

        return [ModuleInfo.of(m) for m in self.program().modules]

    def install_module(
        self, paths: str | Path | list[str | Path], *, name: str | None = None, upgrade: bool = False
    ) -> Any:
        """Add a module (``.ttl`` ontology / shapes, ``.srl`` / ``.dlog`` rules, or a folder)
        to the tenant's program, or with ``upgrade=True`` replace the installed module of
        that name: ONE atomic migration that writes the schema changes, the stored
        program and the inferred graph re-derived under it (``reckon.api._program``).

        :param paths: file(s) or a folder; or the name of a shipped module (``"core"``,
            ``"marketing"``, ``"recruiting"``) to install or upgrade to this Reckon's copy.
        :param name: the module's name (default: the folder's name or the first file's stem).
        :returns: :class:`~reckon.api._program.MigrationReport` (what changed; action
            ``"unchanged"`` when that exact module is installed).
        :raises InvalidInput: a file is missing or bad, the name is taken (without
            ``upgrade``), a module setting contradicts the tenant's value, or a class
            still used by memories would disappear.
        :raises RuleError: the rules do not parse or the program does not stratify.
        :raises ShapeViolation: existing memories would not conform to the new shapes.
        """
        from reckon.api._program import install
        from reckon.schema.program import SHIPPED_MODULES, Module

        if isinstance(paths, str) and paths in SHIPPED_MODULES and not Path(paths).exists():
            return install(self, Module.shipped(paths), upgrade=upgrade)  # this Reckon's shipped module
        items = paths if isinstance(paths, (list, tuple)) else [paths]
        return install(self, Module.from_paths(list(items), name=name), upgrade=upgrade)

    def remove_module(self, name: str) -> Any:
        """Remove a module from the tenant's program (one atomic migration).

        :returns: :class:`~reckon.api._program.MigrationReport`.
        :raises InvalidInput: no such module, ``core``, or a class it declares is used by memories.
        """
        from reckon.api._program import remove

        return remove(self, name)

    def settings(self) -> dict[str, Any]:
        """Every setting, by name: ``near_limit_threshold`` (``Decimal`` in [0, 1]),
        ``live_context_cap`` (``int`` >= 0), ``confidence_floor`` (``Decimal`` in [0, 1]),
        ``live_importance_floor`` (``int`` 1-5), and those of the tenant's modules
        (``reckon.api._settings``)."""
        from reckon.api._settings import get_settings

        return get_settings(self)

    def set_setting(self, name: str, value: Any) -> Any:
        """Replace one setting's value (one value each); the statuses that read it are
        re-derived incrementally.

        :param name: ``near_limit_threshold`` etc. (or the property's local name).
        :returns: ``SettingChange`` dict (name, property, before, after, generation).
        :raises InvalidInput: unknown setting or a value of the wrong type.
        :raises ShapeViolation: a value outside the setting's range.
        """
        from reckon.api._settings import set_setting

        return set_setting(self, name, value)

    # ------------------------------------------------------------------ business data
    def set_kpi(
        self,
        metric: str,
        value: float | Decimal | int | str,
        *,
        platform: str | None = None,
        period: str | None = None,
        as_of: datetime | None = None,
    ) -> Commit | None:
        """Set the current value of a KPI (replacing the previous current value of the
        same metric and platform-or-none).

        :param metric: an mk:Metric by label or local name (``"ROAS"``, ``"cpa"``,
            ``"conversion_rate"``).
        :param value: the value in the metric's unit (stored as ``xsd:decimal``).
        :param platform: ``"meta"``, ``"google"`` ...; ``None`` = company-wide.
        :param period: optional mk:Period (``"monthly"`` ...).
        :param as_of: observation time (time-zone-aware; stored in UTC; default now).
        :raises InvalidInput: for an unknown metric / platform / period, a value that is
            not a finite decimal below 1e15 in magnitude with at most 18 fractional
            digits, or a naive ``as_of``.
        """
        from reckon.business.models import KpiInput, parse_model

        k = parse_model(KpiInput, metric=metric, value=value, platform=platform, period=period, as_of=as_of)
        when = k.as_of or datetime.now().astimezone()
        with self.store.transaction() as txn:
            B.write_kpi(txn, self.id, metric=k.metric, value=k.value, platform=k.platform,
                        period=k.period, as_of=when)
        return txn.commit

    def set_spend(
        self,
        platform: str,
        amount: float | Decimal | int | str,
        *,
        period: str = "monthly",
        period_start: date | None = None,
        currency: str = "USD",
        as_of: datetime | None = None,
    ) -> Commit | None:
        """Set the current spend of a platform for a period (replacing the previous
        record of the same platform, period and currency), and record it in the spend
        history (one ``mk:SpendObservation`` per UTC day of ``as_of``).

        :param amount: spend in ``currency``, 0 <= amount < 1e15 with at most 18 fractional
            digits (stored as ``xsd:decimal``, canonical: ``"34000.10"`` -> ``34000.1``).
        :param as_of: when the amount was observed (time-zone-aware; default: the in-graph
            clock, else now).
        :raises InvalidInput: for an unknown platform / period, an amount out of that
            range, a naive ``as_of`` or a currency that is not three upper-case letters.
        """
        from reckon.business.models import SpendInput, parse_model

        sp = parse_model(SpendInput, platform=platform, amount=amount, period=period,
                         period_start=period_start, currency=currency, as_of=as_of)
        with self.store.transaction() as txn:
            B.write_spend(txn, self.id, platform=sp.platform, amount=sp.amount, period=sp.period,
                          period_start=sp.period_start, currency=sp.currency, as_of=sp.as_of)
        return txn.commit

    def connect_account(self, platform: str, account_id: str, name: str | None = None) -> Commit | None:
        """Connect an ad account to the company (re-connecting replaces its name).

        :raises InvalidInput: for an unknown platform or an empty id.
        """
        from reckon.business.models import AccountInput, parse_model

        a = parse_model(AccountInput, platform=platform, account_id=account_id, name=name)
        with self.store.transaction() as txn:
            B.write_account(txn, self.id, platform=a.platform, account_id=a.account_id, name=a.name)
        return txn.commit

    def set_subscription(self, plan: str, status: str = "active", seats: int | None = None) -> Commit | None:
        """Set the company's subscription (replaces the previous one).

        :param status: an mk:SubscriptionStatus: active, trial, past_due, cancelled.
        :raises InvalidInput: for an unknown status or negative seats.
        """
        from reckon.business.models import SubscriptionInput, parse_model

        s = parse_model(SubscriptionInput, plan=plan, status=status, seats=seats)
        with self.store.transaction() as txn:
            B.write_subscription(txn, self.id, plan=s.plan, status=s.status, seats=s.seats)
        return txn.commit

    def tick(self, now: datetime, *, allow_backwards: bool = False) -> Commit | None:
        """Set the in-graph clock ``rk:clock rk:now`` (exactly one value, stored in UTC).
        Expiry and every clock-dependent status are re-derived. Setting the current
        value again changes nothing.

        :param now: a time-zone-aware ``datetime`` (any offset).
        :param allow_backwards: allow a value earlier than the current clock (a
            correction); otherwise that is refused.
        :raises InvalidInput: when ``now`` is not a ``datetime``, is naive (no time zone),
            or is earlier than the current clock without ``allow_backwards``.
        """
        if not isinstance(now, datetime):
            raise InvalidInput(f"tick: now must be a datetime, not {type(now).__name__}", field="now")
        with self.store.transaction() as txn:
            B.write_clock(txn, now, allow_backwards=allow_backwards)
        return txn.commit

    def clock(self) -> datetime | None:
        """The in-graph clock ``rk:clock rk:now`` (UTC), or ``None`` when never ticked."""

        from reckon.store import BUSINESS

        with self.store.snapshot() as view:
            vals = view.objects(B.CLOCK, B.rk("now"), BUSINESS)
        if not vals or not isinstance(vals[0], Literal):
            return None
        try:
            t = datetime.fromisoformat(vals[0].value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return t if t.tzinfo else t.replace(tzinfo=UTC)

    def advance_clock(self, now: datetime | None = None, *, min_step: float = 60.0) -> bool:
        """Move the in-graph clock forward to ``now`` (default: the wall clock) when it is
        unset or more than ``min_step`` seconds behind; never back. The HTTP and MCP
        servers call this on each request, so that expiry is judged against the present
        there (a memory with a future ``expires_at`` is active, one past it is not);
        through the Python API and the CLI the clock moves only by :meth:`tick`.

        :returns: whether the clock was moved.
        """

        now = now or datetime.now(UTC)
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        cur = self.clock()
        if cur is not None and (now - cur).total_seconds() <= min_step:
            return False
        self.tick(now)
        return True

    def add_team(self, team_id: str, name: str | None = None) -> NamedNode:
        """Add (or rename) a team; returns its IRI. Teams are made only by an operator
        (here, :meth:`add_person` with ``teams``, an onboarding file): a memory write or
        a principal naming a team the tenant lacks raises :class:`~reckon.UnknownTeam`.

        Team ids are exact (case-sensitive) once surrounding whitespace is stripped (as
        for every id given here). A new id differing from an existing team only in case
        or Unicode form (``Growth`` beside ``growth``; :func:`reckon.vocab.team_key`) is
        refused so a variant never becomes a second team.

        :raises InvalidInput: (field ``team_id``) for an empty id or such a variant.
        """
        from reckon.business.models import TeamInput, parse_model

        t = parse_model(TeamInput, team_id=team_id, name=name)
        with self.store.transaction() as txn:
            node = B.write_team(txn, self.id, t.team_id, t.name)
        return node

    def teams(self) -> list[str]:
        """The tenant's team ids (made by :meth:`add_team`, :meth:`add_person` or
        onboarding), sorted."""
        return self.memory.team_ids()

    def add_person(self, person_id: str, name: str | None = None, teams: list[str] | None = None) -> NamedNode:
        """Add (or rename) a person and make them a member of ``teams`` (``team
        rk:member person``); returns the person's IRI. Naming a team here creates it when
        new: this is an explicit org-structure write by the operator, like
        :meth:`add_team` (and refuses the same case / Unicode variants of an existing
        team). Memory writes and principals never create teams.

        :raises InvalidInput: for an empty id or a refused team id (field ``teams``).
        """
        from reckon.business.models import PersonInput, parse_model

        p = parse_model(PersonInput, person_id=person_id, name=name, teams=list(teams or []))
        with self.store.transaction() as txn:
            node = B.write_person(txn, self.id, p.person_id, p.name, p.teams)
        return node

    def add_project(self, project_id: str, name: str | None = None, members: list[str] | None = None) -> NamedNode:
        """Add (or rename) a project and add ``members`` to it (``project rk:member
        person``; persons created when new). Members of a project read and write its
        project-scope memories (:mod:`reckon.memory.authz`). Returns the project's IRI.

        :raises InvalidInput: for an empty id or member id.
        """
        from reckon.business.models import ProjectInput, parse_model

        p = parse_model(ProjectInput, project_id=project_id, name=name, members=members if members is not None else [])
        with self.store.transaction() as txn:
            node = B.write_project(txn, self.id, p.project_id, p.name, p.members)
        return node

    def remove_project_member(self, project_id: str, person_id: str) -> NamedNode:
        """Remove ``person_id`` from a project's members (they no longer read its memories).

        :raises InvalidInput: (field ``project_id``) when the tenant has no such project.
        """
        from reckon.business.models import ProjectInput, parse_model

        p = parse_model(ProjectInput, project_id=project_id, members=[person_id])
        with self.store.transaction() as txn:
            if not txn.view.contains(Quad(V.project_iri(self.id, p.project_id), V.A, V.rk("Project"), V.MEMORIES)):
                raise InvalidInput(f"project_id: no project {p.project_id!r} in tenant {self.id!r} "
                                   "(add it with Tenant.add_project)", field="project_id")
            node = B.remove_project_member(txn, self.id, p.project_id, person_id)
        return node

    def add_participant(self, conversation: str, person_id: str) -> NamedNode:
        """Make ``person_id`` a participant of a conversation (``conversation
        rk:participant person``), e.g. before they speak in it; whoever spoke in it
        (recorded turns, ``ag:participant``) takes part too. Participants read and write
        the conversation's conversation-scope memories. Returns the conversation's IRI.

        :raises InvalidInput: for an empty conversation or person id.
        """
        from reckon.business.models import ParticipantInput, parse_model

        p = parse_model(ParticipantInput, conversation=conversation, person_id=person_id)
        with self.store.transaction() as txn:
            node = B.write_participant(txn, self.id, p.conversation, p.person_id)
        return node

    def principal_of(self, principal: Principal) -> Principal:
        """``principal`` with the memberships the tenant's graph holds for their person
        added: the projects they are a member of (``project rk:member person``) and the
        conversations they take part in (``rk:participant``, asserted, or
        ``ag:participant``, derived from who spoke). Every facade call taking a
        principal reads through it, so authorization of project and conversation
        memories follows the graph. Anything else is returned unchanged (the callee
        refuses it).

        The principal's ``teams`` (the caller's statement: a token's, the CLI's
        ``--member-of``) must be teams of the tenant: a reader naming a team that does
        not exist would silently see none of its memories, and a writer would write
        for it.

        :raises UnknownTeam: (field ``principal.teams``) naming the unknown teams and
            the tenant's teams; nothing is read or written.
        """
        if not isinstance(principal, Principal):
            return principal
        if principal.teams:
            self.memory.check_teams(principal.teams, field="principal.teams")
        me = V.person_iri(self.id, principal.person)
        project_prefix = V.project_iri(self.id, "").value
        with self.store.snapshot() as view:
            projects = {V.slug_of(s.value) for s in view.subjects(V.rk("member"), me, V.MEMORIES)
                        if isinstance(s, NamedNode) and s.value.startswith(project_prefix)}
            convs = {V.slug_of(s.value) for s in view.subjects(V.rk("participant"), me, V.MEMORIES)
                     if isinstance(s, NamedNode)}
            convs |= {V.slug_of(s.value) for s in view.subjects(NamedNode(V.AG + "participant"), me, V.INFERRED)
                      if isinstance(s, NamedNode)}
        if projects <= set(principal.projects) and convs <= set(principal.conversations):
            return principal
        return principal.model_copy(update={"projects": sorted(projects | set(principal.projects)),
                                            "conversations": sorted(convs | set(principal.conversations))})

    # ------------------------------------------------------------------ memory (reckon.memory)
    @property
    def memory(self) -> MemoryService:
        """The tenant's ``reckon.memory.MemoryService`` (created on first use)."""
        m = self._memory
        if m is not None:  # set once, never replaced: a write does not wait for a first
            return cast("MemoryService", m)  # search that holds the lock while recall opens
        with self._mlock:
            if self._memory is None:
                from reckon.memory.service import MemoryService

                self._memory = MemoryService(self.store, judge=self.engine.judge_for(self),
                                             derived=self._derived_predicates)
            return cast("MemoryService", self._memory)

    def set_judge(self, judge: Any) -> None:
        """Replace this tenant's conflict judge (a ``reckon.memory.conflicts.ConflictJudge``:
        ``judge(new, candidates) -> ids``), e.g. a ``ContradictionJudge(encoder=...)`` or
        the model judge ``reckon.capture.judge.ModelJudge``.

        :raises InvalidInput: when ``judge`` has no ``judge`` method.
        """
        if not callable(getattr(judge, "judge", None)):
            raise InvalidInput("judge: an object with a judge(new, candidates) method is required", field="judge")
        self.memory.judge = judge

    def remember(
        self,
        *,
        principal: Principal,
        kind: Kind,
        scope: Scope,
        importance: int,
        source: Source,
        label: str,
        content: str,
        subclass: str | None = None,
        properties: Mapping[str, PropertyValue] | None = None,
        confidence: float | None = None,
        expires_at: datetime | None = None,
        teams: list[str] | None = None,
        owner: str | None = None,
        project: str | None = None,
        conversation: str | None = None,
        derived_from: list[str] | None = None,
        supersedes: Sequence[str] | None = None,
        conflict_resolution: TLiteral["replace", "keep_both"] | None = None,
        conflict_id: str | None = None,
    ) -> Memory:
        """Store a new memory, or update the same-label memory (dedup); see
        ``MemoryService.remember`` for dedup, conflicts and supersession.

        The fields are :class:`~reckon.memory.MemoryInput`'s: ``kind`` (preference | fact |
        objective | context), ``scope`` (user | conversation | project | team | company),
        ``importance`` 1-5,
        ``source`` (agent_tool | extraction | operator | onboarding | import), ``label``
        (1-500 characters), ``content`` (1-20,000 characters), ``subclass`` (a class under
        rk:Memory by local name or IRI) with its ``properties`` (by ``sh:name`` or local
        name), ``confidence`` 0-1 (default 1 for human sources), ``expires_at`` (aware),
        ``teams`` (team scope), ``owner`` (user scope; default the principal),
        ``project`` (project scope: its id), ``conversation`` (conversation scope: its
        id), ``derived_from`` (turn ids). It is searchable by keyword at once; its embedding is
        computed after the write, off the caller's path.

        :param supersedes: ids this memory explicitly replaces (their owner only).
        :param conflict_resolution: ``"replace"`` / ``"keep_both"``, with the ``conflict_id``
            of a :class:`~reckon.ConflictPending`.
        :raises InvalidInput: a missing, unknown or bad field (``.field`` names it).
        :raises ShapeViolation: the memory does not conform to its class's shapes.
        :raises ConflictPending: it would replace memories a human may want to keep.
        :raises NotAuthorized: the principal may not write this memory.
        :raises UnknownMemory: a ``supersedes`` id that is absent or not readable.
        """
        fields: dict[str, Any] = {
            "kind": kind, "scope": scope, "importance": importance, "source": source, "label": label,
            "content": content, "subclass": subclass, "properties": properties, "confidence": confidence,
            "expires_at": expires_at, "teams": teams, "owner": owner, "project": project,
            "conversation": conversation, "derived_from": derived_from,
        }
        fields = {k: v for k, v in fields.items() if v is not None}
        principal = self.principal_of(principal)
        m = self.memory.remember(principal=principal, supersedes=supersedes,
                                 conflict_resolution=conflict_resolution, conflict_id=conflict_id, **fields)
        self._indexed()
        return m

    def remember_many(self, items: Any, *, principal: Any, conflicts: str = "raise") -> list[Any]:
        """Store many memories in one transaction (one commit, one reasoning pass, one
        embedding batch): bulk import. All or nothing: the first bad item raises naming
        ``items[i]`` and nothing is written; see ``MemoryService.remember_many``.

        :param conflicts: ``"raise"`` (ConflictPending for the item), ``"keep_both"`` or
            ``"skip"`` (``None`` in the result).
        :returns: ``list[Memory | None]`` in item order.
        """
        ms: list[Any] = _checked(self.memory.remember_many, items, principal=self.principal_of(principal),
                                 conflicts=conflicts)
        self._indexed_many([m for m in ms if m is not None])
        return ms

    # ------------------------------------------------------------------ transcripts (reckon.transcripts)
    @property
    def transcripts(self) -> Any:
        """The tenant's ``reckon.transcripts.TranscriptService`` (created on first use)."""
        memory = self.memory
        if self._transcripts is not None:  # set once: no wait for a first search (see ``memory``)
            return self._transcripts
        with self._mlock:
            if self._transcripts is None:
                from reckon.transcripts.service import TranscriptService

                self._transcripts = TranscriptService(self.store, memory)
            return self._transcripts

    @property
    def turn_index(self) -> Any:
        """The tenant's transcript search index (``reckon.transcripts.search.TurnIndex``,
        persisted in ``<tenant>/recall-turns``), sharing the memory index's embedder."""
        transcripts = self.transcripts
        recall = self.recall
        with self._mlock:
            if self._turn_index is None:
                from reckon.transcripts.search import TurnIndex

                path = getattr(self.store, "path", None)
                embedder = getattr(recall.index, "embedder", None)  # the process's shared embedder
                self._turn_index = TurnIndex(transcripts, path / "recall-turns" if path else None, embedder=embedder)
            return self._turn_index

    def record_turn(self, conversation: str, text: str, *, principal: Any, role: str = "user",
                    speaker: str | None = None, at: datetime | None = None, order: int | None = None,
                    caption: str | None = None, external_id: str | None = None) -> Any:
        """Record one turn of a conversation (post-turn persistence, seed 002): stored as
        RDF, indexed for :meth:`search_turns`, and counted toward background extraction
        (which never runs here: a job is queued when enough new turns accumulated).
        Recording the same turn again is a no-op. See ``TranscriptService.record``.

        :param role: ``user``, ``assistant``, ``tool``, ``web`` or ``system``; tool and
            web output is stored but never extracted from (seed 001).
        :returns: ``reckon.transcripts.Turn``.
        :raises InvalidInput, NotAuthorized, ShapeViolation: see ``record_turns``.
        """
        turn = {k: v for k, v in dict(conversation=conversation, text=text, role=role, speaker=speaker, at=at,
                                      order=order, caption=caption, external_id=external_id).items()
                if v is not None}
        return self.record_turns([turn], principal=principal)[0]

    def record_turns(self, turns: Any, *, principal: Any) -> list[Any]:
        """Record turns in one transaction per 2,000 (one commit, one reasoning pass, one
        embedding batch). All or nothing: the first bad turn raises naming ``turns[i]``
        and nothing is written.

        :returns: ``list[Turn]`` in input order.
        :raises InvalidInput: a malformed turn, or new text at an already recorded position.
        :raises NotAuthorized: a member recording another person's turn or a system turn.
        :raises ShapeViolation: a turn that does not conform to ``ag:TurnShape``.
        """
        recorded: list[Any] = _checked(self.transcripts.record, turns, principal=principal)
        try:
            self.turn_index.add(recorded)
        except Exception:  # noqa: BLE001 - indexing never fails a committed write
            import logging

            logging.getLogger("reckon.recall").warning("indexing recorded turns failed", exc_info=True)
        self.engine.after_turns(self, recorded)
        return recorded

    def turns(self, conversation: str, *, after: int = -1) -> list[Any]:
        """Turns of a conversation with order > ``after``, in order."""
        return list(self.transcripts.turns(conversation, after=after))

    def turn(self, turn_id: str) -> Any:
        """One turn by id (``"<conversation>/<order>"``) or IRI (``UnknownMemory`` if absent)."""
        return self.transcripts.turn(turn_id)

    def provenance(self, memory_id: str) -> list[Any]:
        """Where a memory came from: the turns it was extracted from (``rk:derivedFrom``),
        oldest first; empty for a memory written directly.

        :raises UnknownMemory: no such memory.
        """
        m = self.memory.get(memory_id)
        turns: list[Any] = [self.transcripts.turn(iri) for iri in m.derived_from]
        return sorted(turns, key=lambda t: (t.at, t.conversation, t.order))

    def conversations(self) -> list[Any]:
        """Every conversation: turns, last order, participants, extraction watermark."""
        return list(self.transcripts.conversations())

    def search_turns(self, query: str, *, principal: Any, k: int = 10, conversations: Any = None,
                     roles: Any = None) -> list[Any]:
        """Search what was said: hybrid search over the turns of the conversations
        ``principal`` may read (operators: all; members: those they spoke in).

        :returns: ``list[TurnHit]`` (``.turn``, ``.score``), best first.
        :raises InvalidInput: for a bad query, k or role.
        """
        hits: list[Any] = _checked(self.turn_index.search, query, principal=principal, k=k,
                                   conversations=conversations, roles=roles)
        return hits

    def update(
        self,
        memory_id: str,
        *,
        principal: Principal,
        kind: Kind | Unset = UNSET,
        importance: int | Unset = UNSET,
        label: str | Unset = UNSET,
        content: str | Unset = UNSET,
        confidence: float | None | Unset = UNSET,
        expires_at: datetime | None | Unset = UNSET,
        properties: Mapping[str, PropertyValue | None] | None | Unset = UNSET,
        teams: list[str] | None | Unset = UNSET,
    ) -> Memory:
        """Three-state partial edit of :class:`~reckon.memory.MemoryPatch`'s fields: a
        field not given is untouched, ``None`` removes it, a value sets it; see
        ``MemoryService.update``.

        :raises InvalidInput: an unknown or bad field, or a required field set to ``None``.
        :raises NotAuthorized: the principal may not edit this memory.
        :raises UnknownMemory: absent, or not readable by ``principal``.
        """
        given = {"kind": kind, "importance": importance, "label": label, "content": content,
                 "confidence": confidence, "expires_at": expires_at, "properties": properties, "teams": teams}
        changes = {k: v for k, v in given.items() if v is not UNSET}
        m = self.memory.update(memory_id, principal=self.principal_of(principal), **changes)
        self._indexed()
        return m

    def supersede(self, old_id: str, new: Mapping[str, Any] | str, *, principal: Principal) -> Memory:
        """Replace ``old_id`` by a new memory (a mapping of :meth:`remember` fields) or by
        an existing one (its id); see ``MemoryService.supersede``.

        :returns: the new (or given) memory.
        :raises NotAuthorized: the principal does not own ``old_id``.
        :raises UnknownMemory: either memory absent or not readable by ``principal``."""
        if isinstance(new, Mapping):
            new = dict(new)
        m = self.memory.supersede(old_id, new, principal=self.principal_of(principal))
        self._indexed()
        return m

    def restore(self, memory_id: str, *, principal: Principal) -> Memory:
        """Operator only: undo a supersession; see ``MemoryService.restore``.

        :raises RestoreRefused: a live memory would contradict it."""
        m = self.memory.restore(memory_id, principal=principal)
        self._indexed()
        return m

    def delete(self, memory_id: str, *, principal: Principal, reason: str | None = None) -> None:
        """Operator only: delete a memory; see ``MemoryService.delete`` (``reason`` is
        kept on the tombstone and shown by ``history()``)."""
        self.memory.delete(memory_id, principal=principal, reason=reason)
        self._indexed()

    def feedback(self, memory_id: str, vote: int, *, principal: Principal) -> int:
        """Rate a memory the principal may read: ``vote`` +1 (it helped) or -1 (it did
        not). Ranking boosts by net feedback (:func:`reckon.recall.rank.feedback_boost`)
        and maintenance never evicts a positively rated memory (:mod:`reckon.lifecycle`).

        :returns: the memory's net feedback.
        :raises InvalidInput: when ``vote`` is not +1 or -1.
        :raises UnknownMemory: when absent or not readable by ``principal``."""
        if isinstance(vote, bool) or vote not in (1, -1):
            raise InvalidInput(f"vote: +1 or -1 is required, got {vote!r}", field="vote")
        m = self.memory.get(memory_id, principal=principal)
        return self.recall.usage.feedback(m.id, int(vote))

    def usage(self, memory_id: str, *, principal: Principal | None = None) -> dict[str, Any]:
        """``{"access_count", "feedback", "last_access"}`` of a memory (searches and
        bundles that returned it; votes). :raises UnknownMemory: when absent or not
        readable by ``principal``."""
        m = self.memory.get(memory_id, principal=principal)
        u = self.recall.usage.get(m.id)
        return {"access_count": u.access, "feedback": u.feedback, "last_access": u[2]}

    def index_document(self, text: str | None = None, *, principal: Principal, location: str | None = None,
                       path: str | Path | None = None, title: str | None = None, scope: str = "user",
                       importance: int = 3) -> Any:
        """Chunk a document into searchable, citeable memories (:func:`reckon.knowledge.index_document`:
        ``semantic-text-splitter``, ~1,400-character chunks with 180 overlap, seed 002).

        :returns: :class:`reckon.knowledge.IndexedDocument`."""
        from reckon.knowledge import index_document

        return index_document(self, text, principal=principal, location=location, path=path, title=title,
                              scope=scope, importance=importance)

    def maintain(self, *, dry_run: bool = False) -> Any:
        """Lifecycle maintenance: purge expired working memory and notes, merge duplicate
        auto-captured memories, enforce capacity (:func:`reckon.lifecycle.maintain`).

        :returns: :class:`reckon.lifecycle.MaintenanceReport`."""
        from reckon.lifecycle import maintain

        return maintain(self, dry_run=dry_run)

    def get(self, memory_id: str, *, principal: Principal | None = None) -> Memory:
        """One memory by id.

        :param principal: who reads (``None``: the tenant's own code, no read policy); a
            memory they may not read (:func:`reckon.memory.authz.can_read`) is reported
            exactly as an absent one.
        :raises UnknownMemory: when absent, or not readable by ``principal``."""
        return self.memory.get(memory_id, principal=self.principal_of(principal) if principal is not None else None)

    def history(self, memory_id: str, *, principal: Principal | None = None) -> list[HistoryEntry]:
        """The supersession chain and lineage of a memory, oldest first.

        :param principal: who reads: the memory must be readable by them (else
            ``UnknownMemory``, as when absent); entries they may not read are left out.
        :raises UnknownMemory: when absent, or not readable by ``principal``."""
        return self.memory.history(memory_id, principal=self.principal_of(principal) if principal is not None else None)

    def memories(
        self,
        *,
        active_only: bool = True,
        kind: Kind | None = None,
        scope: Scope | None = None,
        subclass: str | None = None,
    ) -> list[Memory]:
        """Memories of the tenant, filtered (``subclass``: instances of that class or any
        class below it), sorted by creation time then id. No read policy: filter with
        :func:`reckon.memory.authz.can_read_memory` for a principal."""
        return self.memory.memories(
            active_only=active_only, kind=kind, scope=scope, subclass=subclass)

    # ------------------------------------------------------------------ recall (reckon.recall.bundle)
    @property
    def recall(self) -> TenantRecall:
        """The tenant's ``reckon.recall.bundle.TenantRecall`` (bundle, search, index)."""
        memory = self.memory  # outside the lock (not re-entrant)
        if self._recall is not None:
            return cast("TenantRecall", self._recall)
        # imported outside the lock: the first import takes ~0.5 s (10k-memory bench tenant),
        # which another thread's first ``transcripts`` would otherwise wait for
        from reckon.recall.bundle import TenantRecall

        with self._mlock:
            if self._recall is None:
                self._recall = TenantRecall(self.store, memory, embedder=getattr(self.engine, "embedder", None))
            return cast("TenantRecall", self._recall)

    def _indexed(self) -> None:
        """After a write: the recall index (if open in this process) follows the commits
        the write made, whatever they were (a replaced memory leaves the index, a
        restored one returns). Never fails a committed write; the next read retries."""
        if self._recall is not None:
            self._recall.after_write()

    def _indexed_many(self, ms: list[Any]) -> None:
        """After a batch write: the recall index follows the commit (one embedding batch,
        off the caller's path)."""
        del ms
        self._indexed()

    def context(self, principal: Principal, conversation: str | Sequence[str] = "",
                budget_chars: int | None = None, *, budget_tokens: int | None = None,
                record_access: bool = True, project: str | None = None,
                conversation_id: str | None = None) -> ContextBundle:
        """The context bundle for a new turn; see ``TenantRecall.context``.

        Precedence, most specific first: personal > conversation > project > team >
        company.

        :param conversation: the recent conversation's text (ranking only).
        :param budget_chars: maximum length of the text in characters (>= 500; default
            6,000); ``budget_tokens``: in tokens instead (>= 100,
            :mod:`reckon.recall.tokens`).
        :param record_access: count one access of each item shown
            (:mod:`reckon.recall.usage`); False for an inspection (``reckon bundle``).
        :param project: the project the turn works on: its live project-scope memories
            join the bundle when the principal is a member (else none are added).
        :param conversation_id: the conversation the turn belongs to: its live
            conversation-scope memories join the bundle when the principal takes part.
            Without a ``conversation``, the bundle ranks by that conversation as recorded
            (:meth:`record_turn`): its last 6 turns' lines (``"<speaker or role>: <text>"``)
            when the principal may read it, with the vectors the transcript index already
            computed for them, so an agent that records each turn is encoded only the lines
            not embedded yet (typically the user's newest turn; its own reply was embedded
            in the background after it was recorded). No recorded turns: ranked by
            importance, then recency.
        :returns: :class:`~reckon.recall.bundle.ContextBundle` (``.render()`` is the prompt
            text, ``.ledger`` the budget, priority blocks and what was left out).
        :raises InvalidInput: when ``conversation`` is longer than
            ``reckon.api._limits.MAX_CONVERSATION_CHARS`` (100,000) characters, or
            ``project`` / ``conversation_id`` is not a non-empty string."""
        from reckon.api._limits import MAX_CONVERSATION_CHARS

        if isinstance(conversation, str) and len(conversation) > MAX_CONVERSATION_CHARS:
            raise InvalidInput(f"conversation: at most {MAX_CONVERSATION_CHARS} characters, got {len(conversation)}",
                               field="conversation")
        for name, v in (("project", project), ("conversation_id", conversation_id)):
            if v is not None and (not isinstance(v, str) or not v):
                raise InvalidInput(f"{name}: a non-empty id string is required, got {v!r}", field=name)
        recall = self.recall
        who = self.principal_of(principal)
        recorded = None
        if not conversation and conversation_id is not None:
            conversation = recorded = self._recorded_conversation(who, conversation_id)
        if conversation:
            recall.prefetch_model()  # loads while the bundle is prepared (a fresh process's first context)
        bundle = recall.context(who, conversation, budget_chars, budget_tokens=budget_tokens,
                                record_access=record_access, project=project, conversation_id=conversation_id)
        if recorded:
            self._offer_turn_vectors(recorded)
        return bundle

    def _turn_tindex(self) -> Any:
        """The transcript index's :class:`~reckon.recall.tenant_index.TenantIndex` when this
        process has opened it (recorded or searched turns), else None: a bundle never
        opens it (a snapshot load) only to look up at most six vectors."""
        ti = self._turn_index
        return getattr(ti, "_tindex", None) if ti is not None else None

    def _recorded_conversation(self, who: Principal, conversation_id: str) -> list[str]:
        """The recent conversation of ``conversation_id`` as recorded (:meth:`record_turn`):
        the lines of its last turns, oldest first, as the transcript index embeds them
        (``reckon.transcripts.search.turn_line``); ``[]`` when it has no turns or
        ``who`` may not read it (``TranscriptService.visible``). Vectors the transcript
        index already computed for those lines go into the recall query cache, so the
        bundle encodes only the lines not embedded yet."""
        from reckon.recall.bundle import _CONVERSATION_TURNS
        from reckon.transcripts.search import turn_line

        ts = self.transcripts
        with self.store.snapshot() as view:
            turns = ts.recent(conversation_id, _CONVERSATION_TURNS, view=view)
            if not turns:
                return []
            if not who.is_operator and conversation_id not in who.conversations:
                speakers = {t.speaker for t in turns}
                if who.person not in speakers and not ts.visible(who, ts.conversation(conversation_id).participants):
                    return []
        lines = [turn_line(t) for t in turns]
        ti = self._turn_tindex()
        if ti is not None:
            self.recall.index.remember_query_vectors(ti.stored_vectors(lines))
        return lines

    def _offer_turn_vectors(self, lines: list[str]) -> None:
        """The lines the bundle just encoded go to the transcript index's queue (which
        would encode them again moments later)."""
        ti = self._turn_tindex()
        if ti is not None:
            try:
                ti.offer_vectors(self.recall.index.cached_query_vectors(lines))
            except Exception:  # noqa: BLE001 - a bundle never fails for the turn index
                import logging

                logging.getLogger("reckon.recall").warning("offering turn vectors failed", exc_info=True)

    def search(
        self,
        query: str,
        *,
        principal: Principal,
        k: int = 10,
        kinds: Collection[str] | None = None,
        scopes: Collection[str] | None = None,
        subclasses: Collection[str] | None = None,
        importance: tuple[int, int] | Collection[int] | str = (2, 3),
        explain: bool = False,
        now: datetime | None = None,
        record_access: bool = True,
        expand: str | None = None,
    ) -> list[SearchHit]:
        """Hybrid search (BM25 + embeddings, RRF, recency, MMR) over the active memories
        that are readable by and addressed to ``principal`` (company, their teams', their
        own), importance 2-3 by default; see ``TenantRecall.search``.

        :param k: number of hits (1-100).
        :param importance: tiers: ``(lo, hi)``, a collection, or ``"all"``.
        :param explain: attach each hit's score explanation.
        :param record_access: count one access of each hit returned (ranking and
            maintenance use the counts); False for an inspection (``reckon search``).
        :param expand: ``"graph"``: after the hits, their depth-1 neighbours over the links
            between memories (a chunk's document and a document's chunks, supersession
            lineage, memories extracted from the same turn), each marked with
            ``expanded_from`` and ``via``, read-checked like the hits, never displacing one
            (:func:`reckon.recall.search.search`).
        :returns: :class:`~reckon.recall.bundle.SearchHit` list, best first.
        :raises InvalidInput: when ``query`` is longer than
            ``reckon.api._limits.MAX_SEARCH_CHARS`` (2,000) characters, or an option is bad."""
        from reckon.api._limits import MAX_SEARCH_CHARS

        if isinstance(query, str) and len(query) > MAX_SEARCH_CHARS:
            raise InvalidInput(f"query: at most {MAX_SEARCH_CHARS} characters, got {len(query)}", field="query")
        recall = self.recall
        recall.prefetch_model()  # loads while the index opens (a fresh process's first search)
        return recall.search(query, principal=self.principal_of(principal), k=k, kinds=kinds,
                                  scopes=scopes, subclasses=subclasses, importance=importance,
                                  explain=explain, now=now, record_access=record_access,
                                  expand=expand)

    def tool_definitions(self, format: str = "openai") -> Any:
        """LLM tool definitions (remember, search, supersede, get_context); see
        ``reckon.api._tools.tool_definitions``."""
        from reckon.api._tools import tool_definitions

        return tool_definitions(self, format)  # type: ignore[arg-type]

    def handle_tool_call(self, name: str, arguments: Any, principal: Any) -> dict[str, Any]:
        """Validate and run one LLM tool call; never raises for bad input; see
        ``reckon.api._tools.handle_tool_call``."""
        from reckon.api._tools import handle_tool_call

        return handle_tool_call(self, name, arguments, principal)


def _checked(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` after checking the arguments against its signature, so a missing or
    unknown argument raises :class:`InvalidInput` naming it and the accepted ones (every
    public call raises a ``ReckonError``), not a bare ``TypeError``.

    :raises InvalidInput: when the arguments do not fit ``fn``'s signature.
    """
    import inspect

    sig = inspect.signature(fn)
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise bind_error(fn, sig, exc, kwargs=kwargs) from None
    return fn(*args, **kwargs)
