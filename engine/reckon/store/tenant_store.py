"""One tenant's Oxigraph store, its in-memory reasoner and the write transaction.

Design (DESIGN.md "The store", "Measured facts about our dependencies"):

* **Backends.** Everything below about ``<tenant>/store/`` is the embedded backend
  (:class:`~reckon.store.backends.EmbeddedBackend`); a tenant on a SPARQL server
  (:mod:`reckon.store.remote`) keeps the same mirror, reasoner, generation counter and
  journal semantics, with a write lease in the server instead of RocksDB's open and a
  generation-conditional update instead of ``Store.update``.
* **Disk.** ``<tenant>/store/`` is an on-disk pyoxigraph ``Store``. A path admits one
  read-write ``Store`` at a time in any process, so a process opens it only while it
  holds the tenant's exclusive ``flock`` (:class:`~reckon.store.locking.TenantLock`),
  and closes it before releasing. ``Store.update`` is atomic; every write is exactly
  one ``update()`` carrying the asserted changes, the inferred delta and the bumped
  generation counter. A ``SIGKILL`` at any point leaves either the whole write or none.
* **Generation.** ``<urn:reckon:store> <urn:reckon:generation> n`` in the private
  :data:`~reckon.store.graphs.META` graph. Under the exclusive lock a writer compares
  the store's generation with its own; if another process wrote in between, it
  reloads its mirror and brings its reasoner up to date before applying its change.
  The ``generation`` file beside the store is a hint for readers (written after each
  commit, under the lock); the store holds the truth.
* **Mirror.** With the embedded backend (the default, ``mirror="disk"``) a process
  reads the on-disk store itself: the "mirror" is the read-write handle while this
  process is the writer, else a read-only open (8-40 ms) taken with the shared
  ``flock`` and dropped before the flock is (a read-only handle never outlives the lock
  that keeps writers out). Nothing is copied, so opening a tenant is constant in its
  size (a full copy cost 8.5 s at 10k memories). Reads (SPARQL, ``Txn.objects``, dump,
  export) therefore see a consistent committed snapshot. A remote backend, and the
  query workers (``mirror="memory"``), keep an in-memory pyoxigraph copy brought up to
  date from the journal. SPARQL from users (``Tenant.sparql``, CLI, HTTP) is evaluated
  in a query worker process (:mod:`reckon.store.query_pool`) on the worker's own copy,
  which this process brings up to date by handing over its recent commit texts
  (:meth:`TenantStore.sync_texts`); the worker holds the shared ``flock`` only while it
  syncs from disk, never while it evaluates, so a long query does not hold up a writer.
* **Reasoner.** In memory per process (``reckon.datalog.evaluate.Reasoner``), over the
  union of the asserted graphs as triples (a triple in two asserted graphs is one base
  fact; it leaves the base only when it is gone from every asserted graph). Its
  inferred graph is kept equal to the ``INFERRED`` named graph. Its state persists in
  ``<tenant>/reasoner.state`` (one JSON header line: stored program digest, engine and
  state-format versions, incarnation, generation, and a SHA-256 over the rest of the
  header and the payload (:func:`state_seal`); then ``Reasoner.dump_state``): a fresh
  process loads it and applies the commits since from the journal instead of
  materializing from scratch; a missing, damaged or mismatched file -- a header whose
  generation was changed included, which would skip those commits -- means a recompute.
  The file is rewritten never inside a write: when the lock is released after
  ``linger`` idle seconds with nobody waiting (the lock's background thread), at
  :meth:`TenantStore.close`, when the engine evicts the tenant and when the process exits --
  each time only if this process recomputed, or if replaying the commits since the file
  (measured: the replay after the restore plus each commit's maintenance) would cost a
  restoring process more than the dump (measured) costs this one; and at any release
  once it trails :attr:`TenantStore.STATE_LAG` generations.
  Written under the tenant's flock and this process's thread lock (the reasoner is not
  changed while it is dumped), by rename: a crash leaves the old file or the new one,
  and a torn file fails its length and SHA-256 checks.
* **Journal.** After each commit the writer appends the exact update text to
  ``<tenant>/journal``; another process whose mirror is behind replays those texts
  instead of copying the whole store (copying 11k quads costs ~260 ms under load, a
  read-only open 20-40 ms). A missing or torn record falls back to a full reload, and
  the next writer starts a fresh journal; it is emptied past 8 MB.
* **Terms.** Every quad a transaction adds or removes is first put in the store's own
  canonical form (:func:`reckon.store.terms.canonical_term`: ``"…34.829040Z"`` ->
  ``"…34.82904Z"``, ``"0005"^^xsd:int`` -> ``"5"^^xsd:integer``), so the pending
  changes, the commit, the mirror, the journal and the reasoner's base all hold the
  term exactly as the store does: a delete always finds what an insert added.
* **Incarnation.** Every created or imported tenant gets a random incarnation id
  (``meta.json`` and the META graph). Each time this process takes the tenant's flock it
  checks that the locked file is still ``<tenant>/lock`` and that ``meta.json`` names
  its incarnation: a process holding a deleted (and maybe re-created) tenant gets
  :class:`~reckon._errors.TenantGone` and never reads the old mirror as current nor
  writes into the successor.
* **Blank nodes** are stored as Skolem IRIs (:data:`~reckon.store.graphs.SKOLEM_PREFIX`)
  because an update cannot name an existing blank node; the reasoner and exports see
  blank nodes.

Measured on this machine (2 cores, pyoxigraph 0.5.13): opening a read-write store
27-37 ms idle and 100-150 ms under load (RocksDB syncs a new MANIFEST on open),
read-only 8-37 ms, closing 2.5-11 ms, a one-triple ``update`` 0.2-0.7 ms, ``flush``
20-150 ms (not needed for durability against a killed process: RocksDB's write-ahead
log is written before ``update`` returns). A write that opens the store therefore
costs about one open; so a process keeps its lock and the store open while no other
process waits (``linger``, see :mod:`reckon.store.locking`), and
:meth:`TenantStore.exclusive` pins them for a batch.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import json
import logging
import os
import secrets
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Protocol

from pyoxigraph import (
    BlankNode,
    Literal,
    NamedNode,
    Quad,
    QueryBoolean,
    QuerySolutions,
    RdfFormat,
    Store,
    Triple,
    Variable,
    serialize,
)

from reckon._errors import InvalidInput, ReckonError, StoreError, TenantGone
from reckon.store.backends import (
    BackendGone,
    EmbeddedBackend,
    StoreBackend,
    WriteConflict,
)
from reckon.store.graphs import (
    ASSERTED,
    GENERATION,
    INCARNATION,
    INFERRED,
    META,
    PROGRAM,
    PUBLIC,
    SKOLEM_PREFIX,
    STORE_NODE,
)
from reckon.store.ids import FORMAT_VERSION, validate_tenant_id
from reckon.store.locking import TenantLock
from reckon.store.query_guard import DEFAULT_PREFIX_MAP, QueryLimits, QueryPlan, inspect_query
from reckon.store.sparql import deskolemize, quads_to_data_block, skolemize
from reckon.store.terms import canonical_quad
from reckon.vocab import PREFIXES

__all__ = [
    "Commit",
    "PUBLIC_IRIS",
    "QueryResult",
    "ReasonerFactory",
    "ReasonerLike",
    "StoreView",
    "TenantStore",
    "Txn",
    "ValidateHook",
    "state_seal",
]

_XSD_INTEGER = NamedNode("http://www.w3.org/2001/XMLSchema#integer")

log = logging.getLogger(__name__)

STATE_HEADER_FORMAT = 2
"""The reasoner state file's header format: 2 seals the header with the payload
(:func:`state_seal`); 1 (an older engine's) checksummed the payload alone -- a header
edited by mistake (its generation raised) then skipped commits, and derived statuses
went wrong. A format-1 file is still read, and rewritten in format 2."""


def state_seal(head: Mapping[str, Any], payload: bytes | memoryview) -> str:
    """The ``sha256`` field of a reasoner state file's header (format 2): SHA-256 of the
    header's other fields (as sorted JSON), a newline, then the payload."""
    import hashlib

    h = hashlib.sha256(json.dumps({k: v for k, v in head.items() if k != "sha256"}, sort_keys=True).encode())
    h.update(b"\n")
    h.update(payload)
    return h.hexdigest()

Term = NamedNode | BlankNode | Literal | Triple
QueryResult = list[dict[str, Term]] | bool | list[Triple]
"""SELECT: one dict per solution (variable name -> term, unbound variables absent);
ASK: bool; CONSTRUCT / DESCRIBE: list of triples."""


class _DeltaLike(Protocol):
    added: frozenset[Triple]
    removed: frozenset[Triple]


class ReasonerLike(Protocol):
    """What the store needs of ``reckon.datalog.evaluate.Reasoner``."""

    def load(self, base: Iterable[Triple]) -> None: ...

    def apply(self, insert: Iterable[Triple] = (), delete: Iterable[Triple] = ()) -> Any: ...

    def inferred(self) -> set[Triple]: ...


ReasonerFactory = Callable[[], ReasonerLike]

ProgramResolver = Callable[[list[Quad]], "ReasonerFactory | None"]
"""``resolver(program_quads) -> factory``: the reasoner factory of the program stored in
the tenant's private program graph (``[]`` for a tenant that stores none). Supplied by
the layer that understands programs (``reckon.api.Engine``); the store calls it whenever
the stored program changes (on first read, and after a migration by any process)."""

PROGRAM_KEY = NamedNode("urn:reckon:programDigest")
"""The predicate of the program graph whose object identifies the stored program."""


class _NoRules:
    """Reasoner of the empty rule program: nothing is ever inferred."""

    def load(self, base: Iterable[Triple]) -> None:
        for _ in base:
            pass

    def apply(self, insert: Iterable[Triple] = (), delete: Iterable[Triple] = ()) -> _EmptyDelta:
        return _EmptyDelta()

    def inferred(self) -> set[Triple]:
        return set()


@dataclass(frozen=True)
class _EmptyDelta:
    added: frozenset[Triple] = frozenset()
    removed: frozenset[Triple] = frozenset()


@dataclass(frozen=True)
class Commit:
    """What one committed write changed.

    :ivar generation: the store generation after the write.
    :ivar added: asserted quads added (blank nodes as blank nodes).
    :ivar removed: asserted quads removed.
    :ivar inferred_added: triples added to the inferred graph.
    :ivar inferred_removed: triples removed from the inferred graph.
    """

    generation: int
    added: frozenset[Quad] = frozenset()
    removed: frozenset[Quad] = frozenset()
    inferred_added: frozenset[Triple] = frozenset()
    inferred_removed: frozenset[Triple] = frozenset()


class StoreView:
    """Read access to a consistent committed snapshot (the process's mirror).

    Only valid inside the ``with`` block that produced it
    (:meth:`TenantStore.snapshot` or a transaction).

    :ivar generation: the committed generation the snapshot shows.
    """

    def __init__(self, mirror: Store, generation: int = -1) -> None:
        self._store: Store | None = mirror
        self.generation = generation

    @property
    def _mirror(self) -> Store:
        if self._store is None:
            raise StoreError("this store view is closed: read inside the snapshot or transaction that made it")
        return self._store

    def _release(self) -> None:
        self._store = None

    def quads(
        self,
        s: Term | None = None,
        p: NamedNode | None = None,
        o: Term | None = None,
        graph: NamedNode | None = None,
    ) -> list[Quad]:
        """Quads matching the pattern (``None`` = any) in ``graph`` (``None`` = every
        public graph: schema, memories, business, inferred). Blank nodes come back as
        blank nodes."""
        s_, o_ = (skolemize(s) if s is not None else None), (skolemize(o) if o is not None else None)
        if isinstance(s_, Literal):
            return []  # a literal is never a subject
        graphs = [graph] if graph is not None else list(PUBLIC)
        out: list[Quad] = []
        for g in graphs:
            if g == META:
                raise InvalidInput("the meta graph is private to the store", field="graph")
            for q in self._mirror.quads_for_pattern(s_, p, o_, g):
                out.append(_desk_quad(q))
        return out

    def quads_in(
        self, s: Term | None, p: NamedNode | None, o: Term | None, graphs: Collection[NamedNode]
    ) -> list[Quad]:
        """Quads matching the pattern in any of ``graphs`` (public graphs), read with one
        scan of the store (not one per graph); blank nodes come back as blank nodes."""
        if META in graphs:
            raise InvalidInput("the meta graph is private to the store", field="graph")
        s_, o_ = (skolemize(s) if s is not None else None), (skolemize(o) if o is not None else None)
        if isinstance(s_, Literal):
            return []
        keep = graphs if isinstance(graphs, (set, frozenset)) else frozenset(graphs)
        return [_desk_quad(q) for q in self._mirror.quads_for_pattern(s_, p, o_, None) if q.graph_name in keep]

    def objects(self, s: Term, p: NamedNode, graph: NamedNode | None = None) -> list[Term]:
        """Distinct objects of ``s p ?o`` in ``graph`` (``None`` = every public graph),
        in first-seen order."""
        seen: dict[Term, None] = {}
        for q in self.quads(s, p, None, graph):
            seen.setdefault(q.object, None)
        return list(seen)

    def subjects(self, p: NamedNode, o: Term, graph: NamedNode | None = None) -> list[Term]:
        """Distinct subjects of ``?s p o`` in ``graph`` (``None`` = every public graph)."""
        seen: dict[Term, None] = {}
        for q in self.quads(None, p, o, graph):
            seen.setdefault(q.subject, None)
        return list(seen)

    def contains(self, quad: Quad) -> bool:
        """True when the quad is in the snapshot."""
        return _sk_quad(quad) in self._mirror

    def program_quads(self) -> list[Quad]:
        """The quads of the tenant's private program graph (``[]`` when it stores none)."""
        return list(self._mirror.quads_for_pattern(None, None, None, PROGRAM))

    def query(
        self,
        sparql: str,
        *,
        substitutions: Mapping[Variable | str, Term] | None = None,
        use_default_graph_as_union: bool = True,
    ) -> QueryResult:
        """Read-only SPARQL over the snapshot; see :meth:`TenantStore.query`."""
        plan = inspect_query(sparql, None, public_graphs=PUBLIC_IRIS)
        return self._run(plan, substitutions, use_default_graph_as_union)

    def _run(
        self, plan: QueryPlan, substitutions: Mapping[Variable | str, Term] | None, union: bool
    ) -> QueryResult:
        return results_to_python(evaluate_plan(self._mirror, plan, union=union, substitutions=substitutions))


ValidateHook = Callable[[Sequence[Quad], Sequence[Quad], StoreView], None]
"""``validate(added, removed, view)``: raise (e.g. ShapeViolation) to abort the write.
``added`` / ``removed`` are the net asserted changes; ``view`` shows the state before."""


class Txn:
    """Pending asserted changes of one write transaction (see :meth:`TenantStore.transaction`).

    Reads (:meth:`objects`, :meth:`quads`, :attr:`view`) see the committed state as of the
    start of the transaction, not the pending changes.
    """

    def __init__(self, view: StoreView) -> None:
        self.view = view
        self._ops: dict[Quad, bool] = {}  # skolemized quad -> True add / False remove
        self.commit: Commit | None = None
        self.fresh_reasoner = False
        self._program: tuple[list[Quad], ReasonerFactory | None] | None = None

    def set_program(self, quads: Iterable[Quad], factory: ReasonerFactory | None) -> None:
        """Replace the tenant's stored program (the private program graph) in this
        transaction, and re-derive the inferred graph from scratch with ``factory``'s
        reasoner (``None``: no rules). Written in the same atomic update as the asserted
        changes: a crash leaves the old program with its state or the new with its.

        :param quads: the new program graph (any graph name; stored in the program graph).
        """
        self._program = ([Quad(q.subject, q.predicate, q.object, PROGRAM) for q in quads], factory)
        self.fresh_reasoner = True

    def add(self, quad: Quad) -> None:
        """Assert ``quad`` (its graph must be schema, memories or business). Its object is
        held in the store's canonical form (:func:`reckon.store.terms.canonical_term`).

        :raises InvalidInput: when the graph is not an asserted graph.
        """
        self._ops[_check_asserted(quad)] = True

    def remove(self, quad: Quad) -> None:
        """Retract ``quad`` (a no-op if absent).

        :raises InvalidInput: when the graph is not an asserted graph.
        """
        self._ops[_check_asserted(quad)] = False

    def remove_pattern(
        self,
        s: Term | None = None,
        p: NamedNode | None = None,
        o: Term | None = None,
        graph: NamedNode | None = None,
    ) -> int:
        """Retract every committed asserted quad matching the pattern (``graph=None``:
        every asserted graph). Returns how many quads matched.

        :raises InvalidInput: when ``graph`` is not an asserted graph.
        """
        graphs = [graph] if graph is not None else list(ASSERTED)
        n = 0
        for g in graphs:
            if g not in ASSERTED:
                raise InvalidInput(f"{g} is not an asserted graph", field="graph")
            for q in self.view.quads(s, p, o, g):
                self._ops[_sk_quad(q)] = False
                n += 1
        return n

    def objects(self, s: Term, p: NamedNode, graph: NamedNode | None = None) -> list[Term]:
        """Objects of ``s p ?o`` in the committed state (see :meth:`StoreView.objects`)."""
        return self.view.objects(s, p, graph)

    def quads(
        self,
        s: Term | None = None,
        p: NamedNode | None = None,
        o: Term | None = None,
        graph: NamedNode | None = None,
    ) -> list[Quad]:
        """Committed quads matching the pattern (see :meth:`StoreView.quads`)."""
        return self.view.quads(s, p, o, graph)

    def query(self, sparql: str, **kwargs: Any) -> QueryResult:
        """Read-only SPARQL over the committed state."""
        return self.view.query(sparql, **kwargs)

    @property
    def pending(self) -> dict[Quad, bool]:
        """Pending operations: quad (blank nodes skolemized) -> True (add) / False (remove)."""
        return dict(self._ops)


@dataclass
class _State:
    mirror: Store | None = None
    gen: int = -1
    reasoner: ReasonerLike | None = None
    reasoner_gen: int = -1
    inferred_in_sync: bool = False
    saved_gen: int = -1  # generation of the reasoner state file this process last wrote or read
    save_pending: bool = False  # recomputed here (or a new program): the file does not serve this reasoner
    # Both are CPU seconds of the thread doing the work (time.thread_time): the process
    # clock also counts the embedder's and the other threads' work, and costs a walk of
    # every thread per reading.
    replay_s: float = 0.0  # estimated CPU seconds a process restoring the file spends catching up to reasoner_gen
    dump_s: float = -1.0  # estimated CPU seconds to write the file (-1: unknown)


def _pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (signal 0: nothing is sent; a
    process of another user counts as alive)."""
    if pid <= 0:
        return True  # not a process id: keep the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # PermissionError: another user's process
        return True
    return True


class TenantStore:
    """One tenant's store (see the module docstring for the design).

    :param path: the tenant directory ``DATA_DIR/tenants/<id>`` (must exist: see
        :meth:`create`).
    :param reasoner_factory: builds an empty reasoner for the tenant's rule program
        (``None``: no rules, nothing inferred).
    :param lock_timeout: seconds to wait for another process's write; ``None`` waits.
    :param linger: seconds this process keeps the lock (and the read-write store open)
        after an operation while no other process waits (see
        :mod:`reckon.store.locking`); 0 releases after every operation.
    :param backend: where the quads live (:class:`~reckon.store.backends.StoreBackend`);
        ``None``: what ``meta.json`` names -- the embedded store, or a SPARQL endpoint of
        the shard map (:mod:`reckon.store.shards`). A remote backend never lingers
        (``linger`` 0: the write lease goes back after each operation) and waits
        ``lock_timeout`` for another node's lease.
    :param program_resolver: maps the program stored in the tenant to its reasoner
        factory (:data:`ProgramResolver`); with it the store reasons with exactly the
        tenant's program, whoever opened it, and follows another process's migration.
        Without it, ``reasoner_factory`` is used as given.
    :raises UnknownTenant: never (the engine checks existence); StoreError when the
        directory is not a tenant store of a supported format version.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        reasoner_factory: ReasonerFactory | None = None,
        lock_timeout: float | None = None,
        linger: float = 1.0,
        program_resolver: ProgramResolver | None = None,
        backend: StoreBackend | None = None,
        mirror: str = "disk",
    ) -> None:
        self.path = Path(path)
        meta = _read_meta(self.path)
        self.tenant_id: str = validate_tenant_id(meta["tenant_id"])
        if self.path.is_symlink() or (self.path / "store").is_symlink():
            raise StoreError(f"{self.path}: a tenant directory and its store are never reached through links")
        self.incarnation: str = str(meta.get("incarnation") or "legacy")
        if backend is None:
            backend = _backend_from_meta(self.path, self.tenant_id, meta)
        self._backend: StoreBackend = backend
        if mirror not in ("disk", "memory"):
            raise InvalidInput(f"mirror must be 'disk' or 'memory', not {mirror!r}", field="mirror")
        self._direct = backend.kind == "embedded" and mirror == "disk"
        """Reads go to the on-disk store itself (no in-memory copy): see the module docstring."""
        if backend.kind != "embedded":
            if lock_timeout is not None:
                backend.lease_wait = lock_timeout  # type: ignore[attr-defined]
            linger = 0.0  # the lease is given back after each operation: other nodes cannot ask for it
        self._gone = False
        self._factory: ReasonerFactory = reasoner_factory or _NoRules
        self._resolver = program_resolver
        self._program_key: str | None = None
        self._program_known = False  # the factory matches the mirror's stored program
        self._resolved = False
        self._lock = TenantLock(
            self.path / "lock", timeout=lock_timeout, linger=linger, on_release=self._on_release,
            on_acquire=self._check_incarnation,
        )
        self._recent: dict[int, str] = {}  # generation -> update text of that commit (newest last)
        self._st = _State()
        self._fresh = False  # mirror known current since this process took its flock
        self._tl = threading.local()
        self.last_commit: Commit | None = None
        self._recent_commits: dict[int, Commit] = {}  # this process's last commits, by generation
        self.validator: ValidateHook | None = None
        """Run on every write's net asserted changes before anything is written (the
        facade installs the tenant schema's check, ``reckon.schema.TenantSchema.check_delta``);
        raise to abort the write."""
        self._remove_stale_state_temps()

    def _remove_stale_state_temps(self) -> None:
        """Delete the temporaries ``.reasoner.state.<pid>.<thread>`` that
        :meth:`_save_reasoner_state` left behind when its process died mid-write (a
        SIGKILL, a power cut: each is as large as the state file) -- only those whose
        process no longer exists on this machine; a live one may still be writing it.
        Errors are ignored (another process may remove the same file)."""
        prefix = f".{self.STATE_FILE}."
        try:
            with os.scandir(self.path) as it:
                names = [e.name for e in it if e.name.startswith(prefix)]
        except OSError:
            return
        for name in names:
            pid_s, _, tid = name[len(prefix):].partition(".")
            if not (pid_s.isdigit() and tid.isdigit()) or _pid_alive(int(pid_s)):
                continue
            try:
                os.unlink(self.path / name)
            except OSError:
                pass

    # ------------------------------------------------------------------ creation
    @classmethod
    def create(
        cls,
        path: str | Path,
        tenant_id: str,
        *,
        initial: Iterable[Quad] = (),
        reasoner_factory: ReasonerFactory | None = None,
        program: Iterable[Quad] = (),
        program_resolver: ProgramResolver | None = None,
        remote: Any = None,
    ) -> TenantStore:
        """Create the tenant directory atomically (built beside it, then renamed) with
        ``initial`` asserted quads, their inferred closure under ``reasoner_factory``'s
        reasoner, and ``program`` as its stored program graph.

        :raises TenantExists: when ``path`` already exists.
        :raises InvalidInput: when an initial quad is not in an asserted graph.
        :param remote: a :class:`reckon.store.remote.Endpoint` to keep the tenant's
            quads on (a SPARQL server) instead of the embedded store; the tenant
            directory then holds ``meta.json``, the lock and the recall index only.
        :raises StoreError: on an I/O error, or when the server refuses the write.
        """
        from reckon._errors import TenantExists

        validate_tenant_id(tenant_id)
        path = Path(path)
        if path.exists():
            raise TenantExists(f"tenant {tenant_id!r} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".creating-{tenant_id}-{os.getpid()}-{threading.get_ident()}"
        try:
            tmp.mkdir()
            (tmp / "recall").mkdir()
            quads = [_check_asserted(q) for q in initial]
            reasoner = (reasoner_factory or _NoRules)()
            base = {_desk_triple(q) for q in quads}
            reasoner.load(base)
            inferred = [Quad(*_sk_triple_parts(t), INFERRED) for t in reasoner.inferred()]
            incarnation = secrets.token_hex(16)
            prog = [Quad(q.subject, q.predicate, q.object, PROGRAM) for q in program]
            everything = quads + inferred + prog + [_gen_quad(1), _incarnation_quad(incarnation)]
            meta: dict[str, Any] = {
                "format_version": FORMAT_VERSION,
                "tenant_id": tenant_id,
                "created_at": _dt.datetime.now(_dt.UTC).isoformat(),
                "incarnation": incarnation,
            }
            if remote is None:
                EmbeddedBackend.create_at(tmp, everything)
            else:
                remote.backend(tenant_id, incarnation).create(everything)
                meta["backend"] = {"kind": "sparql", "endpoint": remote.name}
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
            try:
                os.rename(tmp, path)
            except OSError:
                if path.exists():
                    raise TenantExists(f"tenant {tenant_id!r} already exists") from None
                raise
        except ReckonError:
            _rmtree(tmp)
            raise
        except OSError as e:
            _rmtree(tmp)
            raise StoreError(f"cannot create tenant {tenant_id!r} at {path}: {e}") from e
        backend = None if remote is None else remote.backend(tenant_id, incarnation)
        return cls(path, reasoner_factory=reasoner_factory, program_resolver=program_resolver, backend=backend)

    @property
    def backend(self) -> StoreBackend:
        """Where the quads live (:class:`~reckon.store.backends.EmbeddedBackend` or
        :class:`~reckon.store.remote.RemoteBackend`)."""
        return self._backend

    # ------------------------------------------------------------------ locking / sync
    @contextmanager
    def exclusive(self) -> Iterator[StoreView]:
        """Hold the tenant's write lock with the read-write store open for the block
        (several transactions then share one store open). Other processes wait.

        :raises StoreError: when the store cannot be opened or locked.
        """
        if self._gone:
            raise self._gone_error()
        with self._lock.hold(exclusive=True):
            if self._direct:
                if self._backend.open_writer() or self._st.mirror is None:
                    self._direct_sync()
                    self._fresh = True
            elif self._backend.open_writer():
                had_mirror = self._st.mirror is not None
                try:
                    reloaded = self._sync_from(True)
                except BaseException:
                    self._backend.close_writer()
                    raise
                if reloaded and had_mirror:
                    # the journal missed a step this process needed: start a clean one
                    # (a process that had no mirror yet found no gap: the journal stays,
                    # so other processes keep catching up from it)
                    self._backend.reset_journal()
                self._fresh = True
            assert self._st.mirror is not None
            self._refresh_program()
            view = StoreView(self._st.mirror, self._st.gen)
            try:
                yield view
            finally:
                view._release()  # a view kept past its block must not keep the store open

    @contextmanager
    def snapshot(self) -> Iterator[StoreView]:
        """A consistent committed snapshot for several reads (shared lock; writers of
        other processes wait until the block ends). Inside :meth:`exclusive` or a
        transaction of the same thread it reuses the held write lock; a transaction
        cannot be opened inside a snapshot (the lock cannot be upgraded).

        :raises StoreError: when the store cannot be read.
        """
        if self._gone:
            raise self._gone_error()
        with self._lock.hold(exclusive=False):
            if self._direct:
                if not self._fresh or self._st.mirror is None:
                    self._direct_sync()
                    self._fresh = True
            elif not self._fresh:
                try:
                    hint = self._backend.hint()
                except BackendGone:
                    self._dead()
                if self._st.mirror is None or hint is None or (
                    hint != self._st.gen and not self._catch_up(hint)
                ):
                    self._sync_from(False)
                self._fresh = True
            assert self._st.mirror is not None
            self._refresh_program()
            view = StoreView(self._st.mirror, self._st.gen)
            try:
                yield view
            finally:
                view._release()  # a view kept past its block must not keep the store open

    def _check_incarnation(self, fd: int) -> None:
        """Called right after this process took the flock on ``fd``: the tenant must
        still be the incarnation this object was opened on.

        :raises TenantGone: when ``<tenant>/lock`` is no longer the locked file (the
            directory was renamed away by a delete) or ``meta.json`` names another
            incarnation (deleted and re-created).
        """
        if self._gone:
            raise self._gone_error()
        try:
            locked = os.fstat(fd)
            st = os.stat(self.path / "lock", follow_symlinks=False)
            same = (locked.st_ino, locked.st_dev) == (st.st_ino, st.st_dev)
            if same and self.incarnation != "legacy":
                same = _read_meta(self.path).get("incarnation") == self.incarnation
        except (OSError, StoreError):
            same = False
        if not same:
            self._dead()

    def _dead(self) -> NoReturn:
        self._gone = True
        self._st = _State()
        self._backend.close()
        self._recent.clear()
        raise self._gone_error()

    def _gone_error(self) -> TenantGone:
        return TenantGone(
            f"tenant {self.tenant_id!r} (incarnation {self.incarnation[:8]}) was deleted while this process "
            "held it; nothing was read or written. Open the tenant again to reach a new tenant of that id."
        )

    @property
    def gone(self) -> bool:
        """True once this process noticed that its tenant was deleted (or re-created)."""
        return self._gone

    def is_current(self) -> bool:
        """True when ``<tenant>/meta.json`` still names this object's incarnation (one
        small file read; the full check runs on every lock acquisition)."""
        if self._gone:
            return False
        try:
            return _read_meta(self.path).get("incarnation", "legacy") == self.incarnation and not self.path.is_symlink()
        except StoreError:
            return False

    def mark_gone(self) -> None:
        """Mark this object dead (the engine deleted its tenant): every later call
        raises :class:`TenantGone`."""
        self._gone = True

    def _on_release(self) -> None:
        """Called by the lock just before this process drops its flock: an idle release
        (the lock's background thread, nobody waiting) writes the reasoner state when
        that pays (:meth:`_state_worth_saving`); a release at the end of an operation or
        for a waiting process only when the file trails by :attr:`STATE_LAG` generations
        (a process that never idles)."""
        try:
            st = self._st
            if self._lock.idle_release or (st.saved_gen >= 0 and st.gen - st.saved_gen >= self.STATE_LAG):
                if self._state_worth_saving():
                    self._save_reasoner_state()
        finally:
            self._backend.close_writer()
            self._fresh = False
            if self._direct:
                self._st.mirror = None  # the handle is only valid under the flock

    # ------------------------------------------------------------------ reasoner state file
    STATE_FILE = "reasoner.state"
    STATE_LAG = 256
    """Generations the state file may trail the store before any release (also one at
    the end of an operation) rewrites it, for a process that never idles."""

    def _persist_state(self, *, wait: bool) -> None:
        """Write the reasoner state file when :meth:`_state_worth_saving` (at
        :meth:`close` and when the process exits), as an idle release does: through the
        flock this process lingers on, else (``wait``) under a shared hold taken for it,
        when the store is still at the reasoner's generation."""
        st = self._st
        if self._gone or st.reasoner is None or self._backend.kind != "embedded" or not self._state_worth_saving():
            return
        if self._lock.mode != "none":
            self._lock.release(idle=True)  # no-op inside an operation of this thread
            return
        if not wait:
            return
        try:
            with self._lock.hold(exclusive=False):
                if (self._fresh or self._backend.hint() == st.gen) and self._state_worth_saving():
                    self._save_reasoner_state()
        except ReckonError:
            pass

    def _state_worth_saving(self) -> bool:
        """True when this process's reasoner is current and the state file does not
        serve it: none was read or written, it is of another program, or a process
        restoring it would spend longer applying the commits since
        (:attr:`_State.replay_s`, measured: the replay after a restore plus each
        commit's maintenance) than writing it anew costs (:attr:`_State.dump_s`: the
        last write, else the restore's time)."""
        st = self._st
        if st.reasoner is None or st.reasoner_gen != st.gen or st.gen < 0:
            return False
        if st.save_pending:  # e.g. read from an older format: rewritten even if the store did not move
            return True
        if st.saved_gen == st.gen:
            return False
        return st.saved_gen < 0 or st.dump_s < 0 or st.replay_s >= st.dump_s

    def _state_key(self, reasoner: Any) -> dict[str, Any] | None:
        """What a reasoner state must match to be used: the stored program's digest, the
        engine and reasoner-state versions, the tenant incarnation (``None``: no stored
        program, the state is not persisted)."""
        if self._program_key is None:
            return None
        import reckon

        fmt = getattr(reasoner, "STATE_VERSION", None)
        reasoner_cls = f"{type(reasoner).__module__}.{type(reasoner).__qualname__}"
        return {
            "format": STATE_HEADER_FORMAT,
            "engine": str(getattr(reckon, "__version__", "0")),
            "program": self._program_key,
            "incarnation": self.incarnation,
            "state_version": fmt,
            "reasoner": reasoner_cls,
        }

    def _save_reasoner_state(self) -> None:
        """Write the reasoner's state (``reasoner.state`` beside the store: one JSON
        header line -- the key of :meth:`_state_key`, the generation, whether the stored
        inferred graph equals the reasoner's, the payload's SHA-256 -- then the payload of
        ``Reasoner.dump_state``), under a unique temporary name then renamed; called
        while this process holds the tenant's flock and its thread lock (no operation
        runs: the reasoner is not changed while it is dumped), never inside a write: at
        an idle release (:meth:`_on_release`), at :meth:`close` and when the process
        exits (:func:`_save_at_exit`). Failures are ignored (the file is an
        optimisation: a missing or bad one costs a recompute)."""
        st = self._st
        r = st.reasoner
        dump = getattr(r, "dump_state", None)
        if (r is None or not callable(dump) or st.reasoner_gen != st.gen or st.gen < 0 or self._gone
                or self._backend.kind != "embedded"):
            return
        if st.saved_gen == st.gen and not st.save_pending:
            return
        key = self._state_key(r)
        if key is None:
            return
        import gc

        t0 = time.thread_time()
        enabled = gc.isenabled()
        gc.disable()
        try:
            payload: bytes = dump()
        except Exception:  # noqa: BLE001 - an optimisation must never fail a write
            return
        finally:
            if enabled:
                gc.enable()
        head = dict(key, generation=st.gen, in_sync=st.inferred_in_sync, bytes=len(payload))
        head["sha256"] = state_seal(head, payload)
        path = self.path / self.STATE_FILE
        tmp = self.path / f".{self.STATE_FILE}.{os.getpid()}.{threading.get_ident()}"
        try:
            with open(tmp, "wb") as f:
                f.write(json.dumps(head, sort_keys=True).encode() + b"\n")
                f.write(payload)
            os.replace(tmp, path)
            st.saved_gen = st.gen
            st.save_pending = False
            st.replay_s = 0.0
            st.dump_s = time.thread_time() - t0
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def _restore_reasoner(self) -> bool:
        """Load the reasoner from the state file when its key matches this tenant's
        program and engine, its checksum holds and its generation is not ahead of the
        store (then :meth:`_sync_reasoner` applies the commits since); True when loaded.
        Anything else -- missing, torn, corrupted, another program or version -- is
        ignored and the caller recomputes (and rewrites the file)."""
        st = self._st
        if self._program_key is None or self._backend.kind != "embedded":
            return False
        import hashlib

        try:
            data = (self.path / self.STATE_FILE).read_bytes()
        except OSError:
            return False
        nl = data.find(b"\n")
        line, payload = data[:max(nl, 0)], memoryview(data)[nl + 1:]  # the payload read in place
        try:
            head = json.loads(line)
            if nl < 0 or not isinstance(head, dict):
                return False
            r = self._factory()
            key = self._state_key(r)
            readable: tuple[Any, ...] = getattr(r, "READ_STATE_VERSIONS", None) or ((key or {}).get("state_version"),)
            fmt = head.get("format")
            if key is None or fmt not in (1, STATE_HEADER_FORMAT) or any(
                    head.get(k) != v for k, v in key.items() if k not in ("state_version", "format")):
                return False
            if head.get("state_version") not in readable:
                return False
            gen = head["generation"]
            if type(gen) is not int or gen > st.gen or gen < 1 or head.get("bytes") != len(payload):
                return False
            sealed = {k: v for k, v in head.items() if k != "sha256"}
            # format 1 (an older engine's) checksummed the payload alone: read, then rewritten
            want = state_seal(sealed, payload) if fmt == STATE_HEADER_FORMAT else hashlib.sha256(payload).hexdigest()
            if want != head.get("sha256"):
                return False
            restore = getattr(r, "restore_state", None)
            if not callable(restore):
                return False
            t0 = time.thread_time()
            restore(payload)
        except Exception as e:  # noqa: BLE001 - a file that does not serve, whatever is wrong with it: recomputed
            if not isinstance(e, (ValueError, TypeError, KeyError, AttributeError)):
                why = f"{type(e).__name__}: {e}"[:300]  # a string: the record keeps no traceback (and store) alive
                log.warning("reasoner state of tenant %s not used (%s): recomputing", self.tenant_id, why)
            return False
        st.reasoner = r
        st.reasoner_gen = gen
        st.inferred_in_sync = bool(head.get("in_sync"))
        st.saved_gen = gen
        st.save_pending = head.get("state_version") != key["state_version"] or fmt != STATE_HEADER_FORMAT  # rewrite
        st.replay_s = 0.0
        # what writing it again would cost: a state read in place (format 6) restores in a
        # fraction of its dump (merge, marshal, checksum, write: measured ~1 s per 300 MB);
        # an older format's restore costs more than its rewrite
        st.dump_s = max(time.thread_time() - t0, len(payload) / 300e6)
        _LIVE.add(self)
        return True

    def _direct_sync(self) -> None:
        """Direct mode (embedded backend): point the "mirror" at the on-disk store
        (the writer's handle, else a read-only open) and read its generation; the
        reasoner and the program follow lazily. Nothing is copied: opening is constant
        in tenant size."""
        reader = getattr(self._backend, "reader")  # noqa: B009 - EmbeddedBackend only
        try:
            store: Store = reader()
        except BackendGone:
            self._dead()
        try:
            from reckon.store.backends import gen_of, incarnation_of

            gen, inc = gen_of(store), incarnation_of(store)
        except (OSError, StoreError):
            self._dead()
        if inc is not None and inc != self.incarnation:
            self._dead()
        if gen != self._st.gen:
            self._program_known = False
        self._st.mirror = store
        self._st.gen = gen

    def release(self) -> None:
        """Let other processes in now: drop a lingering lock and close the store."""
        self._lock.release()

    def _sync_from(self, writer: bool) -> bool:
        """Bring the mirror to the store's generation (``writer``: through the writer
        handle, else a read-only look); True when it was reloaded whole."""
        try:
            if writer:
                disk_gen, inc = self._backend.head(writer=True)
                quads = None
            else:
                disk_gen, inc, quads = self._backend.load(writer=False)
        except BackendGone:
            self._dead()
        if inc is not None and inc != self.incarnation:
            self._dead()
        if self._st.mirror is not None and disk_gen == self._st.gen:
            return False
        if self._catch_up(disk_gen):
            return False
        if quads is None:
            disk_gen, inc, quads = self._backend.load(writer=True)
        mirror = Store()
        mirror.extend(quads)
        self._st.mirror = mirror
        self._st.gen = disk_gen
        self._program_known = False
        self._recent.clear()
        return True

    def _catch_up(self, target: int) -> bool:
        """Bring the mirror from its generation to ``target`` by replaying the journal
        (the exact update texts other processes committed). False when the journal does
        not hold every step (then the caller reloads the whole store)."""
        st = self._st
        if st.mirror is None or target < st.gen:
            return False
        entries = self._backend.journal(st.gen + 1, target)
        if entries is None:
            return False
        try:
            for text in entries:
                st.mirror.update(text)
        except (OSError, SyntaxError, ValueError, RuntimeError):
            st.mirror, st.gen = None, -1
            self._recent.clear()
            return False
        for k, text in enumerate(entries):
            self._remember_text(st.gen + 1 + k, text)
        st.gen = target
        self._program_known = False
        return True

    def _refresh_program(self) -> None:
        """Follow the program stored in the mirror: a new program (first read, or another
        process migrated the tenant) gets its reasoner factory from the resolver and a
        fresh reasoner."""
        if self._program_known or self._resolver is None:
            return
        mirror = self._st.mirror
        assert mirror is not None
        key = None
        for q in mirror.quads_for_pattern(None, PROGRAM_KEY, None, PROGRAM):
            key = q.object.value  # type: ignore[union-attr]
        if key != self._program_key or not self._resolved:
            self._factory = self._resolver(list(mirror.quads_for_pattern(None, None, None, PROGRAM))) or _NoRules
            self._resolved = True
            self._program_key = key
            self._invalidate_reasoner()
        self._program_known = True

    @property
    def program_key(self) -> str | None:
        """The digest of the stored program as of this process's last read (``None``
        when the tenant stores none, or before the first read)."""
        return self._program_key

    _RECENT_MAX = 256
    _RECENT_MAX_CHARS = 16 << 20

    def _remember_text(self, gen: int, text: str) -> None:
        """Keep the update text of commit ``gen`` for the query workers (a bounded ring:
        a worker whose mirror is older reloads from disk instead)."""
        recent = self._recent
        if recent and next(reversed(recent)) != gen - 1:
            recent.clear()
        recent[gen] = text
        while len(recent) > self._RECENT_MAX or (
            len(recent) > 1 and sum(len(t) for t in recent.values()) > self._RECENT_MAX_CHARS
        ):
            del recent[next(iter(recent))]

    def _sync_reasoner(self) -> ReasonerLike:
        st = self._st
        assert st.mirror is not None
        self._refresh_program()
        if st.reasoner is not None and st.reasoner_gen == st.gen:
            return st.reasoner
        if st.reasoner is None:
            self._restore_reasoner()
        if st.reasoner is not None and st.reasoner_gen != st.gen:
            # behind (another process wrote, or the state file is older): apply the
            # commits in between as one base delta, else recompute
            t0 = time.thread_time()
            commits = self.changes(st.reasoner_gen, st.gen) if st.reasoner_gen < st.gen else None
            if commits is None:
                self._invalidate_reasoner()
            else:
                ins, rem = self._base_delta(commits)
                try:
                    st.reasoner.apply(insert=ins, delete=rem)
                except BaseException:
                    self._invalidate_reasoner()
                    raise
                st.replay_s += time.thread_time() - t0
                # both reasoners equal the materialization of the same base graph
                # (incremental = from scratch), so the stored inferred graph is this
                # reasoner's -- unless rules mint blank nodes (then equal up to names)
                mints = getattr(st.reasoner, "mints_blank_nodes", None)
                st.inferred_in_sync = st.inferred_in_sync and callable(mints) and not mints()
                st.reasoner_gen = st.gen
        if st.reasoner is None:
            r = self._factory()
            r.load(self._asserted_base())
            st.reasoner = r
            st.reasoner_gen = st.gen
            st.inferred_in_sync = False
            st.save_pending = True
            _LIVE.add(self)
        return st.reasoner

    def _base_delta(self, commits: Sequence[Commit]) -> tuple[set[Triple], set[Triple]]:
        """The base-graph change (triples, blank nodes as blank nodes) of ``commits``,
        as the store holds it now: every triple a commit added or removed in an asserted
        graph goes in if it is in some asserted graph now, else out."""
        mirror = self._st.mirror
        assert mirror is not None
        touched: set[tuple[Any, Any, Any]] = set()
        for c in commits:
            for q in (*c.added, *c.removed):
                touched.add((skolemize(q.subject), q.predicate, skolemize(q.object)))
        ins: set[Triple] = set()
        rem: set[Triple] = set()
        for sk in touched:
            t = Triple(deskolemize(sk[0]), sk[1], deskolemize(sk[2]))  # type: ignore[arg-type]
            if any(Quad(*sk, g) in mirror for g in ASSERTED):
                ins.add(t)
            else:
                rem.add(t)
        return ins, rem

    def _asserted_base(self) -> set[Triple]:
        assert self._st.mirror is not None
        base: set[Triple] = set()
        for g in ASSERTED:
            for q in self._st.mirror.quads_for_pattern(None, None, None, g):
                base.add(_desk_triple(q))
        return base

    def _stored_inferred(self) -> set[Triple]:
        assert self._st.mirror is not None
        return {_desk_triple(q) for q in self._st.mirror.quads_for_pattern(None, None, None, INFERRED)}

    # ------------------------------------------------------------------ writes
    @contextmanager
    def transaction(self, *, validate: ValidateHook | None = None) -> Iterator[Txn]:
        """A write transaction, serialized per tenant across threads and processes.

        On leaving the block without an exception: net asserted changes are computed,
        ``validate(added, removed, view)`` runs (raise to abort), the reasoner applies
        the base delta incrementally, and ONE atomic store update writes the asserted
        changes, the inferred delta and the next generation. ``txn.commit`` (and
        :attr:`last_commit`) then holds the :class:`Commit`. An empty change writes
        nothing. On any exception nothing is written and the exception propagates.

        :raises StoreError: when the store cannot be opened, locked or written.
        :raises EvaluationLimitExceeded: when the rule program hits its limits.
        """
        with self.exclusive() as view:
            txn = Txn(view)
            yield txn
            try:
                txn.commit = self._commit(txn, validate)
            except BaseException as exc:
                # the frames of a failed commit hold the on-disk store's handle, and
                # pyoxigraph's Store has no close: an exception the caller keeps (a log
                # record, pytest.raises) would keep RocksDB open -- and its LOCK taken --
                # after this process gives the tenant's flock up. Drop those frames' locals.
                traceback.clear_frames(exc.__traceback__)
                raise

    def _commit(self, txn: Txn, validate: ValidateHook | None) -> Commit | None:
        st = self._st
        mirror = st.mirror
        assert mirror is not None
        added_sk = [q for q, add in txn._ops.items() if add and q not in mirror]
        removed_sk = [q for q, add in txn._ops.items() if not add and q in mirror]
        if not added_sk and not removed_sk and not txn.fresh_reasoner:
            return None
        added = [_desk_quad(q) for q in added_sk]
        removed = [_desk_quad(q) for q in removed_sk]
        if validate is not None:
            validate(added, removed, txn.view)
        if self.validator is not None:
            self.validator(added, removed, txn.view)

        # triple-level delta of the base graph (a triple counts once over the asserted graphs)
        removed_set = set(removed_sk)
        added_set = set(added_sk)

        def in_asserted_after(sk_triple: tuple[Any, Any, Any]) -> bool:
            for g in ASSERTED:
                q = Quad(*sk_triple, g)
                if q in added_set:
                    return True
                if q in mirror and q not in removed_set:
                    return True
            return False

        program = txn._program
        if txn.fresh_reasoner:
            factory = self._factory if program is None else (program[1] or _NoRules)
            reasoner = factory()
            new_base = {
                _desk_triple(q)
                for g in ASSERTED
                for q in mirror.quads_for_pattern(None, None, None, g)
                if q not in removed_set
            } | {_desk_triple(q) for q in added_sk}
            try:
                reasoner.load(new_base)
            except BaseException:
                raise
            ins_inf, rem_inf = self._full_inferred_diff(reasoner)
            st.reasoner = reasoner
            st.save_pending = True  # the file (if any) is of the old program
            _LIVE.add(self)
        else:
            reasoner = self._sync_reasoner()
            base_ins = {_desk_triple(q) for q in added_sk}  # already in the base: a no-op for the reasoner
            base_del = set()
            for q in removed_sk:
                parts = (q.subject, q.predicate, q.object)
                if not in_asserted_after(parts):
                    base_del.add(_desk_triple(q))
            t0 = time.thread_time()
            try:
                delta = reasoner.apply(insert=base_ins, delete=base_del)
            except BaseException:
                self._invalidate_reasoner()
                raise
            applied_s = time.thread_time() - t0
            if st.inferred_in_sync:
                ins_inf = set(delta.added)
                rem_inf = set(delta.removed)
            else:
                ins_inf, rem_inf = self._full_inferred_diff(reasoner)

        new_gen = st.gen + 1
        delete_quads = (
            removed_sk
            + [Quad(*_sk_triple_parts(t), INFERRED) for t in rem_inf]
            + [_gen_quad(st.gen)]
        )
        insert_quads = (
            added_sk
            + [Quad(*_sk_triple_parts(t), INFERRED) for t in ins_inf]
            + [_gen_quad(new_gen)]
        )
        if program is not None:
            old_prog = set(mirror.quads_for_pattern(None, None, None, PROGRAM))
            new_prog = set(program[0])
            delete_quads += list(old_prog - new_prog)
            insert_quads += list(new_prog - old_prog)
        text = (
            f"DELETE DATA {{ {quads_to_data_block(delete_quads)} }} ;\n"
            f"INSERT DATA {{ {quads_to_data_block(insert_quads)} }}"
        )
        try:
            self._backend.commit(st.gen, new_gen, delete_quads, insert_quads, text, quads_to_data_block,
                                 release=self._lock.releases_after_hold())
        except BaseException as e:
            self._invalidate_reasoner()
            if isinstance(e, WriteConflict):
                # another node wrote: this process's mirror is stale, reload at the next hold
                st.mirror, st.gen = None, -1
                self._fresh = False
            if isinstance(e, BackendGone):
                self._dead()
            if isinstance(e, (OSError, SyntaxError)):
                raise StoreError(f"write to tenant {self.tenant_id!r} failed: {e}") from e
            raise
        try:
            if not self._direct:  # direct: the mirror is the store the backend just wrote
                mirror.update(text)
        except BaseException:  # pragma: no cover - the same text just succeeded on disk
            st.mirror, st.gen = None, -1
            self._fresh = False
            self._invalidate_reasoner()
            raise
        st.gen = new_gen
        st.reasoner_gen = new_gen
        st.inferred_in_sync = True
        if not txn.fresh_reasoner:
            st.replay_s += applied_s  # what a process restoring the state file pays again for this commit
        if program is not None:
            self._factory = program[1] or _NoRules
            self._resolved = True
            self._program_key = next(
                (q.object.value for q in program[0] if q.predicate == PROGRAM_KEY), None  # type: ignore[union-attr]
            )
            self._program_known = True
        self._remember_text(new_gen, text)
        commit = Commit(
            generation=new_gen,
            added=frozenset(added),
            removed=frozenset(removed),
            inferred_added=frozenset(ins_inf),
            inferred_removed=frozenset(rem_inf),
        )
        self.last_commit = commit
        self._recent_commits[new_gen] = commit
        if len(self._recent_commits) > _RECENT_COMMITS:
            del self._recent_commits[min(self._recent_commits)]
        return commit

    def changes(self, since: int, until: int) -> list[Commit] | None:
        """The commits that took the store from generation ``since`` to ``until``, in
        order, or ``None`` when one of them is not known any more.

        Commits of this process are kept (the last 256); those of other processes are
        read back from the journal (the exact update text each writer appended). Derived
        artefacts beside the store (the recall index) follow the store with it: on
        ``None`` they rebuild from a snapshot. Call it inside :meth:`snapshot` (or a
        transaction) with ``until = view.generation`` so that no write lands in between.

        :returns: one :class:`Commit` per generation ``since + 1 .. until`` (blank nodes
            stay skolemized in commits read from the journal); ``[]`` when equal.
        """
        if until < since:
            return None
        out: list[Commit] = []
        missing = [g for g in range(since + 1, until + 1) if g not in self._recent_commits]
        texts = self._backend.journal(missing[0], missing[-1]) if missing else []
        if texts is None:
            return None
        by_gen = dict(zip(range(missing[0], missing[-1] + 1), texts)) if missing else {}
        for g in range(since + 1, until + 1):
            c = self._recent_commits.get(g)
            if c is None:
                c = _commit_from_update(g, by_gen[g])
                if c is None:
                    return None
            out.append(c)
        return out

    def _full_inferred_diff(self, reasoner: ReasonerLike) -> tuple[set[Triple], set[Triple]]:
        target = set(reasoner.inferred())
        current = self._stored_inferred()
        return target - current, current - target

    def _invalidate_reasoner(self) -> None:
        self._st.reasoner = None
        self._st.reasoner_gen = -1
        self._st.inferred_in_sync = False

    def rebuild_inferred(self) -> Commit | None:
        """Recompute the inferred graph from scratch with a fresh reasoner and write the
        difference (``None`` when it already matched). Used by import and checks.

        :raises StoreError: when the store cannot be written.
        """
        with self.transaction() as txn:
            txn.fresh_reasoner = True
        commit = txn.commit
        if commit is not None and not (commit.inferred_added or commit.inferred_removed or commit.added or commit.removed):
            return None
        return commit

    # ------------------------------------------------------------------ reads
    def query(
        self,
        sparql: str,
        *,
        substitutions: Mapping[Variable | str, Term] | None = None,
        use_default_graph_as_union: bool = True,
        limits: QueryLimits | None = None,
    ) -> QueryResult:
        """Run a read-only SPARQL 1.2 query on a committed snapshot, in this process.

        For trusted query texts (Reckon's own). Text from users goes through the query
        workers (``Tenant.sparql``, :class:`reckon.store.query_pool.QueryPool`), which
        enforce a deadline and cannot reach the network.

        The default graph is the union of the public graphs (schema, memories,
        business, inferred) unless ``use_default_graph_as_union=False`` (then it is the
        empty store default graph); each is addressable with ``GRAPH
        <urn:reckon:graph:...>``, and ``FROM`` / ``FROM NAMED`` may name them (nothing
        else: the private meta graph is never part of a query's dataset).

        :param substitutions: variable -> term bindings (SEP-0007), keys ``Variable`` or name.
        :param limits: size and depth limits (``None``: none).
        :returns: SELECT: list of dicts (variable name -> term); ASK: bool;
            CONSTRUCT / DESCRIBE: list of triples.
        :raises ReadOnlyQuery: for an update (INSERT, DELETE, LOAD, CLEAR, DROP, CREATE,
            ADD, MOVE, COPY) or a SERVICE clause.
        :raises InvalidInput: when the text is not a SPARQL query, or a dataset clause
            names a graph that is not public.
        :raises QueryLimitExceeded: over a limit of ``limits``.
        """
        plan = inspect_query(sparql, limits, public_graphs=PUBLIC_IRIS)
        with self.snapshot() as view:
            return view._run(plan, substitutions, use_default_graph_as_union)

    # ------------------------------------------------------------------ query workers
    def sync_texts(self, since: int | None) -> tuple[int, list[str] | None]:
        """``(generation, texts)``: the committed generation now and the update texts
        that bring a mirror at generation ``since`` to it (``[]`` when equal), or
        ``None`` when this process no longer holds them all. For the query pool.

        :raises TenantGone: when the tenant was deleted.
        """
        with self.snapshot():
            gen = self._st.gen
            if since is None or since > gen:
                return gen, None
            if since == gen:
                return gen, []
            texts = [self._recent.get(g) for g in range(since + 1, gen + 1)]
            if any(t is None for t in texts):
                return gen, None
            return gen, texts  # type: ignore[return-value]

    def query_mirror(self) -> tuple[Store, int]:
        """The in-memory mirror at the committed generation, and that generation. The
        shared lock is held only while the mirror is brought up to date; evaluate on the
        returned store only where nothing else changes the mirror (a query worker).

        :raises TenantGone: when the tenant was deleted.
        """
        with self.snapshot():
            assert self._st.mirror is not None
            return self._st.mirror, self._st.gen

    def advance_mirror(self, since: int, texts: Sequence[str]) -> int | None:
        """Apply committed update texts (from :meth:`sync_texts` of another process) to
        the mirror when it is at generation ``since``; returns the new generation, or
        ``None`` when the mirror is elsewhere (then use :meth:`query_mirror`)."""
        st = self._st
        if self._gone or st.mirror is None or st.gen != since:
            return None
        try:
            for text in texts:
                st.mirror.update(text)
        except (OSError, SyntaxError, ValueError, RuntimeError):
            st.mirror, st.gen = None, -1
            self._fresh = False
            return None
        st.gen = since + len(texts)
        self._fresh = False  # the hint decides freshness at the next snapshot
        return st.gen

    def mirror_nquads(self) -> tuple[int, bytes]:
        """``(generation, N-Quads of the mirror)`` at the committed generation: what a
        query worker is handed for a tenant whose store it cannot reach (remote)."""
        with self.snapshot():
            assert self._st.mirror is not None
            return self._st.gen, self._st.mirror.dump(format=RdfFormat.N_QUADS) or b""

    def install_mirror(self, gen: int, nquads: bytes) -> int:
        """Replace the mirror by ``nquads`` at generation ``gen`` (from
        :meth:`mirror_nquads` of another process); returns ``gen``."""
        mirror = Store()
        mirror.load(nquads, format=RdfFormat.N_QUADS)
        self._st = _State(mirror=mirror, gen=gen)
        self._fresh = False
        return gen

    def generation(self) -> int:
        """The committed generation (number of writes since creation, starting at 1)."""
        with self.snapshot():
            return self._st.gen

    def reasoner(self) -> ReasonerLike:
        """The in-memory reasoner, brought up to date with the committed store."""
        with self.snapshot():
            return self._sync_reasoner()

    def inferred(self) -> set[Triple]:
        """The stored inferred graph (blank nodes as blank nodes)."""
        with self.snapshot():
            return self._stored_inferred()

    def asserted(self) -> set[Quad]:
        """Every asserted quad (blank nodes as blank nodes)."""
        with self.snapshot():
            assert self._st.mirror is not None
            return {
                _desk_quad(q) for g in ASSERTED for q in self._st.mirror.quads_for_pattern(None, None, None, g)
            }

    def dump(self) -> bytes:
        """Sorted N-Quads of the public graphs (byte-stable: equal stores dump equal bytes).

        The private generation counter is not included, so a refused write leaves the
        dump byte-identical.
        """
        with self.snapshot():
            assert self._st.mirror is not None
            quads = [q for g in PUBLIC for q in self._st.mirror.quads_for_pattern(None, None, None, g)]
        data = serialize(quads, format=RdfFormat.N_QUADS) or b""
        lines = sorted(set(data.splitlines()))
        return b"".join(line + b"\n" for line in lines)

    # ------------------------------------------------------------------ export / import
    def export_trig(self, path: str | Path | None = None) -> bytes:
        """TriG of the asserted graphs (schema, memories, business) and of the stored
        program (the private program graph: the tenant's modules travel with its data)
        with a versioned header (``# reckon-export-version: 2``, tenant, generation,
        time). Written to ``path`` when given; the bytes are returned either way.

        :raises StoreError: when the file cannot be written.
        """
        with self.snapshot():
            assert self._st.mirror is not None
            gen = self._st.gen
            quads = [
                _desk_quad(q)
                for g in (*ASSERTED, PROGRAM)
                for q in self._st.mirror.quads_for_pattern(None, None, None, g)
            ]
        quads.sort(key=lambda q: (str(q.graph_name), str(q.subject), str(q.predicate), str(q.object)))
        body = serialize(quads, format=RdfFormat.TRIG, prefixes=_EXPORT_PREFIXES) or b""
        now = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
        header = (
            f"# reckon-export-version: {EXPORT_VERSION}\n"
            f"# tenant: {self.tenant_id}\n"
            f"# generation: {gen}\n"
            f"# exported-at: {now}\n"
        ).encode()
        data = header + body
        if path is not None:
            try:
                Path(path).write_bytes(data)
            except OSError as e:
                raise StoreError(f"cannot write export {path}: {e}") from e
        return data

    def import_trig(self, source: str | Path | bytes) -> Commit | None:
        """Replace the asserted graphs with those of a :meth:`export_trig` file (and the
        stored program with the export's, when it has one: version 2) and re-derive the
        inferred graph from scratch, in one write.

        :raises InvalidInput: when the header is missing / of another version, the TriG
            does not parse, or a quad is outside the asserted and program graphs.
        """
        quads = read_export(source)
        program = [q for q in quads if q.graph_name == PROGRAM]
        with self.transaction() as txn:
            txn.remove_pattern(None, None, None, None)
            for q in quads:
                if q.graph_name != PROGRAM:
                    txn.add(q)
            if program and self._resolver is not None:
                txn.set_program(program, self._resolver(program))
            txn.fresh_reasoner = True
        return txn.commit

    def verify_export(self, source: str | Path | bytes) -> bool:
        """True when the export's asserted graphs are isomorphic to the store's (blank
        nodes compared up to renaming: RDF Dataset Canonicalization).

        :raises InvalidInput: when the export cannot be read.
        """
        from pyoxigraph import CanonicalizationAlgorithm, Dataset

        exported = Dataset(read_export(source))
        with self.snapshot() as view:
            stored = Dataset(list(self.asserted()) + view.program_quads())
        exported.canonicalize(CanonicalizationAlgorithm.UNSTABLE)
        stored.canonicalize(CanonicalizationAlgorithm.UNSTABLE)
        return set(exported) == set(stored)

    def suspend(self) -> None:
        """Give back what an idle tenant holds -- mirror, reasoner, lock files, the
        read-write store or lease, connections -- while staying usable: the next
        operation reopens on demand (the engine's tenant cache calls this for tenants
        it evicts). A no-op inside an operation of this thread."""
        if self._lock._depth:  # noqa: SLF001 - an operation of this thread holds it
            return
        self._persist_state(wait=False)  # the reasoner goes: leave its state file current when that pays
        self._lock.close_files()
        self._st = _State()
        self._fresh = False
        self._recent.clear()
        self._recent_commits.clear()
        self._backend.close()

    @classmethod
    def attach(cls, path: str | Path, tenant_id: str, remote: Any, *, replace: bool = False,
               **kwargs: Any) -> TenantStore:
        """Open a tenant that lives on ``remote`` (an :class:`~reckon.store.remote.Endpoint`)
        from a node that has no directory for it yet: the directory (``meta.json`` with the
        server's incarnation, the lock, ``recall/``) is built aside and renamed into place.

        :raises UnknownTenant: when the server holds no tenant of that id.
        """
        from reckon._errors import UnknownTenant

        validate_tenant_id(tenant_id)
        path = Path(path)
        probe = remote.backend(tenant_id, "legacy")
        gen, inc, _ = probe._state()  # noqa: SLF001
        if gen is None:
            raise UnknownTenant(f"no tenant {tenant_id!r} on endpoint {remote.name!r}")
        meta = {"format_version": FORMAT_VERSION, "tenant_id": tenant_id,
                "created_at": _dt.datetime.now(_dt.UTC).isoformat(),
                "incarnation": inc or "legacy", "backend": {"kind": "sparql", "endpoint": remote.name}}
        if replace and (path / "meta.json").exists():
            # the tenant moved (the shard map names another endpoint): point this node's
            # directory at its new place, keeping its tokens; the recall index follows the store
            tmp_meta = path / f".meta.json.{os.getpid()}"
            tmp_meta.write_text(json.dumps(meta, indent=2) + "\n")
            os.replace(tmp_meta, path / "meta.json")
            _rmtree(path / "store")
        elif not (path / "meta.json").exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.parent / f".creating-{tenant_id}-{os.getpid()}-{threading.get_ident()}"
            try:
                tmp.mkdir()
                (tmp / "recall").mkdir()
                (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
                try:
                    os.rename(tmp, path)
                except OSError:
                    _rmtree(tmp)
                    if not (path / "meta.json").exists():
                        raise
            except OSError as e:
                _rmtree(tmp)
                raise StoreError(f"cannot attach tenant {tenant_id!r} at {path}: {e}") from e
        return cls(path, **kwargs)

    def close(self) -> None:
        """Write the reasoner state when that pays (:meth:`_persist_state`), drop the
        mirror and reasoner and close the lock file."""
        self._persist_state(wait=True)
        self._st = _State()
        self._lock.close()
        self._backend.close()


_LIVE: weakref.WeakSet[TenantStore] = weakref.WeakSet()
"""Stores of this process that hold a reasoner (restored or computed here)."""


@atexit.register
def _save_at_exit() -> None:
    """A process that exits without closing its tenants (a CLI command, a script) still
    leaves the reasoner state file current when that pays: each store this process
    lingers on is released as an idle one (:meth:`TenantStore._persist_state`)."""
    for store in list(_LIVE):
        try:
            store._persist_state(wait=False)  # noqa: SLF001
        except Exception:  # noqa: BLE001, S110 - an optimisation must never fail an exit
            pass


EXPORT_VERSION = 2
"""Version 2 adds the program graph; version 1 files (asserted graphs only) are read too."""
_READ_VERSIONS = (b"1", b"2")
_EXPORT_PREFIXES = dict(PREFIXES)


def read_export(source: str | Path | bytes) -> list[Quad]:
    """Parse a Reckon TriG export (header checked) into quads of the asserted graphs and
    (version 2) of the program graph.

    :raises InvalidInput: on a missing / unsupported header, a TriG syntax error, or a
        quad outside schema / memories / business / program.
    """
    from pyoxigraph import parse

    if isinstance(source, bytes):
        data = source
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as e:
            raise InvalidInput(f"cannot read export {source}: {e}", field="path") from e
    first = data.split(b"\n", 1)[0].strip()
    prefix = b"# reckon-export-version:"
    if not first.startswith(prefix):
        raise InvalidInput("not a Reckon export: first line must be '# reckon-export-version: N'")
    version = first[len(prefix):].strip()
    if version not in _READ_VERSIONS:
        raise InvalidInput(
            f"unsupported export version {version.decode(errors='replace')!r} "
            f"(this Reckon reads {', '.join(v.decode() for v in _READ_VERSIONS)})"
        )
    try:
        quads = list(parse(data, format=RdfFormat.TRIG))
    except SyntaxError as e:
        raise InvalidInput(f"export does not parse as TriG: {e}") from e
    allowed = ASSERTED + ((PROGRAM,) if version == b"2" else ())
    for q in quads:
        if q.graph_name not in allowed:
            raise InvalidInput(f"export quad outside the asserted and program graphs: {q}")
    return quads


# ---------------------------------------------------------------------- helpers
DEFAULT_PREFIXES = "".join(f"PREFIX {p}: <{ns}> " for p, ns in DEFAULT_PREFIX_MAP.items())
"""Prefixes every read-only query may use without declaring them (rdf, rdfs, xsd, owl,
sh, and Reckon's rk / mk / rc), as SPARQL text; queries get them through pyoxigraph's
``prefixes=`` (so error positions are the caller's) and a ``PREFIX`` overrides them."""

PUBLIC_IRIS: tuple[str, ...] = tuple(g.value for g in PUBLIC)
"""IRIs of the graphs a ``FROM`` / ``FROM NAMED`` clause may name."""


def evaluate_plan(
    store: Store,
    plan: QueryPlan,
    *,
    union: bool = True,
    substitutions: Mapping[Variable | str, Term] | None = None,
) -> Any:
    """Evaluate an inspected query on ``store`` with a dataset fixed by the caller: the
    query's ``FROM`` / ``FROM NAMED`` (already limited to public graphs) or else the
    union of the public graphs (``union=False``: the empty store default graph) and
    every public graph as a named graph. pyoxigraph's ``default_graph`` /
    ``named_graphs`` replace the query's own dataset, so no text reaches another graph.

    :returns: the pyoxigraph result (``QuerySolutions``, ``QueryBoolean`` or ``QueryTriples``).
    :raises InvalidInput: when the text does not parse (line and column given) or fails.
    """
    from pyoxigraph import DefaultGraph

    subs: dict[Variable, Any] | None = None
    if substitutions:
        subs = {Variable(k) if isinstance(k, str) else k: skolemize(v) for k, v in substitutions.items()}
    default: list[Any]
    named: list[Any]
    if plan.from_graphs:
        default = [NamedNode(g) for g in plan.from_graphs]
    elif plan.has_dataset:
        default = [DefaultGraph()]  # only FROM NAMED: the default graph is empty (SPARQL 1.1 section 13.2)
    else:
        default = list(PUBLIC) if union else [DefaultGraph()]
    named = [NamedNode(g) for g in plan.from_named] if plan.has_dataset else list(PUBLIC)
    try:
        return store.query(plan.text, prefixes=DEFAULT_PREFIX_MAP, substitutions=subs, default_graph=default,
                           named_graphs=named)
    except SyntaxError as e:
        raise InvalidInput(f"SPARQL query does not parse: {e}", field="query") from e
    except (OSError, RuntimeError, ValueError) as e:
        raise InvalidInput(f"SPARQL query failed: {e}", field="query") from e


def results_to_python(result: Any) -> QueryResult:
    """A pyoxigraph query result as :data:`QueryResult` (rows as dicts, unbound
    variables absent).

    :raises InvalidInput: when evaluation fails while the results are read.
    """
    try:
        if isinstance(result, QueryBoolean):
            return bool(result)
        if isinstance(result, QuerySolutions):
            names = [v.value for v in result.variables]
            rows: list[dict[str, Term]] = []
            for sol in result:
                row: dict[str, Term] = {}
                for n in names:
                    t = sol[n]
                    if t is not None:
                        row[n] = t
                rows.append(row)
            return rows
        return list(result)
    except (OSError, RuntimeError, ValueError) as e:
        raise InvalidInput(f"SPARQL query failed: {e}", field="query") from e


def _check_asserted(quad: Quad) -> Quad:
    if not isinstance(quad, Quad):
        raise InvalidInput(f"expected a pyoxigraph Quad, got {type(quad).__name__}")
    if quad.graph_name not in ASSERTED:
        raise InvalidInput(
            f"quads may only be asserted in the schema, memories or business graph, not {quad.graph_name}",
            field="graph",
        )
    return _sk_quad(canonical_quad(quad))


def _sk_quad(q: Quad) -> Quad:
    return Quad(skolemize(q.subject), q.predicate, skolemize(q.object), q.graph_name)  # type: ignore[arg-type]


def _desk_quad(q: Quad) -> Quad:
    s, o = q.subject, q.object
    # fast path: no Skolem IRI in the quad (nearly every quad) -> the quad itself
    if (type(s) is NamedNode and not s.value.startswith(SKOLEM_PREFIX)
            and (type(o) is Literal or (type(o) is NamedNode and not o.value.startswith(SKOLEM_PREFIX)))):
        return q
    return Quad(deskolemize(s), q.predicate, deskolemize(o), q.graph_name)  # type: ignore[arg-type]


def _desk_triple(q: Quad | Triple) -> Triple:
    return Triple(deskolemize(q.subject), q.predicate, deskolemize(q.object))  # type: ignore[arg-type]


def _sk_triple_parts(t: Triple) -> tuple[Any, Any, Any]:
    return skolemize(t.subject), t.predicate, skolemize(t.object)


def _gen_quad(n: int) -> Quad:
    return Quad(STORE_NODE, GENERATION, Literal(str(n), datatype=_XSD_INTEGER), META)


def _incarnation_quad(incarnation: str) -> Quad:
    return Quad(STORE_NODE, INCARNATION, Literal(incarnation), META)


_RECENT_COMMITS = 256


def _commit_from_update(gen: int, text: str) -> Commit | None:
    """The :class:`Commit` of one journal record (``DELETE DATA {..} ;\nINSERT DATA {..}``
    as :meth:`TenantStore._commit` writes it), or None when it does not parse. Terms
    stay as stored (skolemized); the private meta graph is left out."""
    from pyoxigraph import parse

    head, sep, tail = text.partition(" } ;\nINSERT DATA { ")
    if not sep or not head.startswith("DELETE DATA { ") or not tail.endswith(" }"):
        return None
    try:
        removed = list(parse(head[len("DELETE DATA { "):], format=RdfFormat.TRIG))
        added = list(parse(tail[:-2], format=RdfFormat.TRIG))
    except (SyntaxError, ValueError):
        return None

    def split(qs: list[Quad]) -> tuple[frozenset[Quad], frozenset[Triple]]:
        asserted = frozenset(q for q in qs if q.graph_name in ASSERTED)
        inferred = frozenset(q.triple for q in qs if q.graph_name == INFERRED)
        return asserted, inferred

    a, ia = split(added)
    r, ir = split(removed)
    return Commit(generation=gen, added=a, removed=r, inferred_added=ia, inferred_removed=ir)


def _read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads((path / "meta.json").read_text())
    except (OSError, ValueError) as e:
        raise StoreError(f"{path} is not a Reckon tenant directory (meta.json: {e})") from e
    if meta.get("format_version") != FORMAT_VERSION:
        raise StoreError(
            f"tenant store {path} has format version {meta.get('format_version')!r}; "
            f"this Reckon reads version {FORMAT_VERSION}"
        )
    return meta  # type: ignore[no-any-return]


def _rmtree(p: Path) -> None:
    import shutil

    shutil.rmtree(p, ignore_errors=True)



def _backend_from_meta(path: Path, tenant_id: str, meta: Mapping[str, Any]) -> StoreBackend:
    """The backend ``meta.json`` names: embedded unless ``"backend": {"kind": "sparql",
    "endpoint": NAME}``, whose endpoint comes from the shard map of the data directory
    (:mod:`reckon.store.shards`: ``$RECKON_SHARDS`` or ``DATA_DIR/shards.json``).

    :raises StoreError: when the endpoint is not configured.
    """
    spec = meta.get("backend") or {}
    if not spec or spec.get("kind") == "embedded":
        return EmbeddedBackend(path, tenant_id)
    if spec.get("kind") != "sparql":
        raise StoreError(f"tenant {tenant_id!r}: unknown store backend {spec.get('kind')!r} in meta.json")
    from reckon.store.shards import ShardMap

    shards = ShardMap.load(path.parent.parent)
    endpoint = shards.endpoint(str(spec.get("endpoint")))
    return endpoint.backend(tenant_id, str(meta.get("incarnation") or "legacy"))
