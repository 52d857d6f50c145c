"""The :class:`Engine`: a data directory of tenants, and the program it gives new tenants.

Each tenant owns its program (``reckon.schema.program``): the modules it was created or
migrated with are stored in it and every opener -- this class, the CLI, ``reckon serve``,
``reckon mcp``, import -- reasons with exactly those (the store follows the stored
program through :data:`reckon.store.tenant_store.ProgramResolver`). An engine built
with an explicit program (``rules=`` or ``modules=``) refuses to open a tenant that
stores another one (:class:`~reckon._errors.ProgramMismatch`); without one it opens
every tenant with the tenant's own program.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyoxigraph import NamedNode, Quad

from reckon._config import default_data_dir
from reckon._errors import InvalidInput, InvalidTenantId, TenantExists, UnknownTenant
from reckon.store import (
    SCHEMA,
    QueryLimits,
    QueryPool,
    TenantStore,
    read_export,
    tenant_dir,
    validate_tenant_id,
)
from reckon.store.graphs import PROGRAM
from reckon.store.tenant_store import ReasonerFactory

if TYPE_CHECKING:  # pragma: no cover
    from reckon.api._tenant import Tenant

__all__ = ["DEFAULT_RULES", "Engine"]

DEFAULT_RULES: tuple[str, ...] = ("core.srl", "marketing.srl", "recruiting.srl", "agent.srl")
"""Shipped rule files of the default program (resolved by ``reckon.datalog.loader``)."""

_RULE_SUFFIXES = (".srl", ".dlog")



class Engine:
    """Entry point: tenants under ``data_dir/tenants/<id>/``.

    :param data_dir: directory holding the tenants; ``None`` = :func:`default_data_dir`
        (``$RECKON_DATA_DIR``, the directory the CLI uses too). Created by the first
        write (``create_tenant`` / ``import_tenant``): reading a directory that does not
        exist finds no tenants and creates nothing.
    :param rules: rule files of the program given to NEW tenants (paths or shipped
        names such as ``"core.srl"``); ``None`` = every shipped module's rules
        (:data:`DEFAULT_RULES`); ``[]`` = no rules.
    :param modules: an author's modules (``.ttl`` ontology / shapes, ``.srl`` / ``.dlog``
        rules, or folders), grouped by file stem into named modules
        (``reckon.schema.program.modules_from_paths``) and added to new tenants' programs.
        Giving ``rules`` or ``modules`` makes the program explicit: opening a tenant
        that stores another program raises :class:`~reckon._errors.ProgramMismatch`
        (migrate it with ``Tenant.install_module`` / ``remove_module`` instead).
    :param lock_timeout: seconds a write waits for another process's write before
        :class:`~reckon._errors.StoreError`; ``None`` waits.
    :param judge: conflict judge of every tenant's write path: a
        ``reckon.memory.conflicts.ConflictJudge``, or a callable ``tenant -> judge``;
        ``None`` = ``ContradictionJudge()`` (no model).
    :param jobs: background extraction (``reckon.jobs.Jobs``): ``None`` = the embedded
        default under ``data_dir/jobs`` when ``RECKON_EXTRACT_EVERY`` or a worker is
        configured, see :meth:`after_turns`; ``False`` = never queue jobs.
    :param query_limits: limits of the read-only SPARQL interface (``Tenant.sparql``,
        ``reckon sparql``, the HTTP endpoint): text size, depth, deadline, result size,
        worker processes (default :class:`~reckon.store.QueryLimits`).
    :param embedder: the recall embedder of every tenant: an
        :class:`~reckon.recall.embed.Embedder`, a name (``"minilm"``, ``"openai"``,
        ``"hashing"``; see :mod:`reckon.recall.embed`) or ``None`` = ``$RECKON_EMBEDDER``.
    :param refuse_inconsistent: a write (memory or business data) after which a tenant's
        rules derive a new ``?x rdf:type owl:Nothing`` (``rules/owl2rl.srl``: disjoint
        classes, irreflexive properties, ...) raises
        :class:`~reckon._errors.InconsistentGraph` and leaves the store unchanged.
        Default off: the inconsistency is stored and reported by ``tenant validate``.
    :raises StoreError: when ``data_dir`` cannot be created (on the first write).

    >>> import tempfile
    >>> engine = Engine(tempfile.mkdtemp(), rules=[])
    >>> engine.create_tenant("acme").id
    'acme'
    >>> engine.list_tenants()
    ['acme']
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        rules: Sequence[str | Path] | None = None,
        modules: Sequence[str | Path] | None = None,
        lock_timeout: float | None = None,
        judge: Any = None,
        jobs: Any = None,
        query_limits: QueryLimits | None = None,
        embedder: Any = None,
        refuse_inconsistent: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.refuse_inconsistent = bool(refuse_inconsistent)
        """Every tenant's store refuses a write after which its rules derive a new
        inconsistency (see :meth:`reasoner_factory`)."""
        module_paths = [Path(m) for m in (modules or [])]
        for m in module_paths:
            if not m.is_dir() and m.suffix not in _RULE_SUFFIXES + (".ttl", ".nt"):
                raise InvalidInput(f"module {m}: expected a .srl, .dlog or .ttl file", field="modules")
        self._rules_arg = None if rules is None else list(rules)
        self._modules_arg = module_paths
        self.explicit_program: bool = rules is not None or bool(modules)
        """True when ``rules`` or ``modules`` were given (see the class docstring)."""
        self._program: Any = None
        self._lock_timeout = lock_timeout
        self._judge = judge
        self._jobs = jobs
        self.embedder = embedder
        self._lock = threading.RLock()
        self._tenants: OrderedDict[str, Tenant] = OrderedDict()
        self.max_open_tenants: int = max(1, int(os.environ.get("RECKON_MAX_OPEN_TENANTS", "128")))
        """Tenants kept open (mirror, reasoner, lock files) at once; the least recently
        used beyond this is suspended (``TenantStore.suspend``) and reopens on demand."""
        if query_limits is not None and not isinstance(query_limits, QueryLimits):
            raise InvalidInput("query_limits must be a reckon.store.QueryLimits", field="query_limits")
        self.query_limits: QueryLimits = query_limits or QueryLimits()
        self._query_pool: QueryPool | None = None
        _sweep_aside(self.data_dir / "tenants")

    @property
    def query_pool(self) -> QueryPool:
        """The worker processes that evaluate read-only SPARQL (started on first use;
        see :mod:`reckon.store.query_pool`)."""
        with self._lock:
            if self._query_pool is None:
                self._query_pool = QueryPool(self.query_limits)
            return self._query_pool

    def close(self) -> None:
        """Stop the query workers and close every open tenant (:meth:`Tenant.close`:
        its recall snapshot written, its background threads stopped). The engine can be
        used again: workers and tenants reopen on demand. ``with Engine(...) as engine:``
        closes it on leaving the block."""
        with self._lock:
            pool, self._query_pool = self._query_pool, None
            tenants, self._tenants = list(self._tenants.values()), OrderedDict()
        if pool is not None:
            pool.close()
        for t in tenants:
            t.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ program & schema
    @property
    def program(self) -> Any:
        """The program this engine gives new tenants
        (:class:`reckon.schema.program.Program`; read from the files once).

        :raises InvalidInput: a module file is missing or two modules share a name.
        """
        with self._lock:
            if self._program is None:
                from reckon.schema.program import default_program

                self._program = default_program(self._rules_arg, self._modules_arg)
            return self._program

    @property
    def ruleset(self) -> Any:
        """The checked rule program of :attr:`program` (``reckon.datalog.model.RuleSet``),
        or ``None`` when it has no rules. A tenant's own: ``Tenant.program().ruleset()``.

        :raises RuleError: when a rule file does not parse or is not stratifiable.
        """
        return self.program.ruleset()

    def reasoner_factory(self, *, refuse_inconsistent: bool | None = None) -> ReasonerFactory | None:
        """A factory of empty reasoners for :attr:`program` (``None`` without rules).

        :param refuse_inconsistent: the reasoners refuse a change after which the rules
            derive a new inconsistency (``?x rdf:type owl:Nothing``): the store's write
            raises :class:`~reckon._errors.InconsistentGraph` and nothing is written.
            ``None``: the engine's ``refuse_inconsistent``.
        """
        refuse = self.refuse_inconsistent if refuse_inconsistent is None else refuse_inconsistent
        return self.program.reasoner_factory(refuse_inconsistent=refuse)  # type: ignore[no-any-return]

    def schema_quads(self) -> list[Quad]:
        """Quads of the SCHEMA graph of a new tenant: the program's ontology and shapes
        triples and its settings defaults (one value each).

        :raises InvalidInput: when a module does not parse or settings conflict.
        """
        from reckon.schema.program import SETTINGS

        prog = self.program
        quads = [Quad(t.subject, t.predicate, t.object, SCHEMA) for t in prog.schema_triples()]
        quads += [Quad(SETTINGS, p, v, SCHEMA) for p, v in prog.default_settings().items()]
        return quads

    def _resolve(self, quads: list[Quad]) -> ReasonerFactory | None:
        """The store's program resolver: the stored program's reasoner factory; for a
        tenant that stores none (created before programs were stored), this engine's."""
        from reckon.schema.program import Program

        stored = Program.from_quads(quads)
        if stored is None:
            return self.reasoner_factory()
        return stored.reasoner_factory(refuse_inconsistent=self.refuse_inconsistent)  # type: ignore[no-any-return]

    def judge_for(self, tenant: Tenant) -> Any:
        """The conflict judge for ``tenant``'s write path (``None`` = the default)."""
        j = self._judge
        if j is None or callable(getattr(j, "judge", None)):
            return j
        return j(tenant)

    @property
    def jobs(self) -> Any:
        """The background job queue (``reckon.jobs.Jobs``) or ``None`` when disabled."""
        with self._lock:
            if self._jobs is None:
                from reckon.jobs import Jobs

                self._jobs = Jobs.for_engine(self)
            return self._jobs or None

    def after_turns(self, tenant: Tenant, turns: Sequence[Any]) -> None:
        """Called after turns were recorded: queue an extraction job for each
        conversation that has enough unprocessed turns (never runs extraction here).
        Queueing never fails the recorded write."""
        if self._jobs is False or not turns:
            return
        try:
            jobs = self.jobs
            if jobs is not None:
                jobs.turns_recorded(tenant, turns)
        except Exception:  # noqa: BLE001
            import logging

            logging.getLogger("reckon.jobs").warning("queueing extraction failed", exc_info=True)
    def _make_data_dir(self) -> None:
        """Create ``data_dir/tenants`` (before the first write).

        :raises StoreError: when it cannot be created.
        """
        from reckon._errors import StoreError

        try:
            (self.data_dir / "tenants").mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the data directory {self.data_dir}: {e}") from e

    # ------------------------------------------------------------------ tenants
    def create_tenant(self, tenant_id: str, *, company_name: str | None = None, exist_ok: bool = False) -> Tenant:
        """Create a tenant: schema graph, company node, clock node, derived closure.

        :param exist_ok: return the existing tenant instead of raising (a script that
            creates its tenant can run twice); ``company_name`` is then not applied.
        :raises InvalidTenantId: when the id is invalid (before any path is built).
        :raises TenantExists: when it already exists (and not ``exist_ok``).
        """
        from reckon.api._tenant import Tenant
        from reckon.business.writers import initial_quads

        validate_tenant_id(tenant_id)
        if company_name is not None and (not isinstance(company_name, str) or not company_name.strip()):
            raise InvalidInput("company_name must be a non-empty string", field="company_name")
        path = tenant_dir(self.data_dir, tenant_id)
        with self._lock:
            if (path / "meta.json").exists():
                if exist_ok:
                    return self.tenant(tenant_id)
                raise TenantExists(f"tenant {tenant_id!r} already exists")
            self._make_data_dir()
            remote = self._new_tenant_endpoint()
            store = TenantStore.create(
                path,
                tenant_id,
                initial=self.schema_quads() + initial_quads(tenant_id, company_name),
                reasoner_factory=self.reasoner_factory(),
                program=self.program.to_quads(PROGRAM),
                program_resolver=self._resolve,
                remote=remote,
            )
            if remote is not None:
                from reckon.store.shards import set_placement

                set_placement(self.data_dir, tenant_id, remote.name)
            t = Tenant(self, store)
            self._cache(tenant_id, t)
            return t

    def _shards(self) -> Any:
        from reckon.store.shards import ShardMap

        return ShardMap.load(self.data_dir)

    def _new_tenant_endpoint(self) -> Any:
        """The endpoint new tenants go to (the shard map's ``default``), or None: embedded."""
        from reckon.store.shards import EMBEDDED

        m = self._shards()
        return None if m.default == EMBEDDED else m.endpoint(m.default)

    def _cache(self, tenant_id: str, t: Tenant) -> None:
        """Remember ``t`` as most recently used; suspend the least recently used beyond
        :attr:`max_open_tenants` (bounded file descriptors and memory)."""
        self._tenants[tenant_id] = t
        self._tenants.move_to_end(tenant_id)
        while len(self._tenants) > self.max_open_tenants:
            _, old = self._tenants.popitem(last=False)
            old.store.suspend()

    def tenant(self, tenant_id: str) -> Tenant:
        """An existing tenant (one :class:`Tenant` object per id per engine).

        :raises InvalidTenantId: when the id is invalid.
        :raises UnknownTenant: when no such tenant exists.
        :raises ProgramMismatch: this engine has an explicit program and the tenant
            stores another; or the tenant predates stored programs and does not match
            this engine's program (``reckon.api._program``: it is adopted when it does).
        """
        from reckon.api._program import check_open
        from reckon.api._tenant import Tenant

        validate_tenant_id(tenant_id)
        with self._lock:
            t = self._tenants.get(tenant_id)
            path = tenant_dir(self.data_dir, tenant_id)
            moved = self._moved_here(tenant_id, path)
            if moved:
                self._tenants.pop(tenant_id, None)
                if t is not None:
                    t.store.mark_gone()
                    t.store.close()
                    t = None
                from reckon.store.shards import EMBEDDED

                shards = self._shards()
                where = shards.placement(tenant_id)
                if where == EMBEDDED:
                    raise UnknownTenant(f"no tenant {tenant_id!r} in {self.data_dir} (the shard map says it is "
                                        "embedded, and this node's directory points elsewhere)")
                TenantStore.attach(path, tenant_id, shards.endpoint(where), replace=True,
                                   program_resolver=self._resolve).close()
            if not (path / "meta.json").is_file():
                from reckon.store.shards import EMBEDDED

                shards = self._shards()
                where = shards.placement(tenant_id)
                if where == EMBEDDED:
                    self._tenants.pop(tenant_id, None)
                    raise UnknownTenant(f"no tenant {tenant_id!r} in {self.data_dir}")
                # on a SPARQL server and new to this node: build its local directory
                self._make_data_dir()
                TenantStore.attach(path, tenant_id, shards.endpoint(where), program_resolver=self._resolve).close()
            if t is not None and t.closed:  # closed by Tenant.close(): a new object
                self._tenants.pop(tenant_id, None)
                t = None
            if t is not None and not t.store.is_current():
                # deleted (and maybe re-created) by another process: never serve the dead one
                self._tenants.pop(tenant_id, None)
                t.store.mark_gone()
                t.store.close()
                t = None
            if t is None:
                store = TenantStore(path, lock_timeout=self._lock_timeout, program_resolver=self._resolve)
                if store.tenant_id != tenant_id:
                    store.close()
                    raise UnknownTenant(
                        f"no tenant {tenant_id!r} in {self.data_dir}: its directory holds tenant {store.tenant_id!r}"
                    )
                t = Tenant(self, store)
                check_open(t, self.program, self.explicit_program)
            self._cache(tenant_id, t)
            return t

    def _moved_here(self, tenant_id: str, path: Path) -> bool:
        """True when this node's directory of a tenant names another place than the
        shard map (another node moved the tenant)."""
        import json

        from reckon.store.shards import EMBEDDED

        try:
            meta = json.loads((path / "meta.json").read_text())
        except (OSError, ValueError):
            return False
        spec = meta.get("backend") or {}
        local = spec.get("endpoint") if spec.get("kind") == "sparql" else EMBEDDED
        where = self._shards().placement(tenant_id)
        if where == EMBEDDED and local == EMBEDDED:
            return False
        return bool(where != local)

    def move_tenant(self, tenant_id: str, to: str) -> Tenant:
        """Move a tenant to endpoint ``to`` of the shard map (or ``"embedded"``): export,
        import on the target, verify, switch (writes wait only now), delete the source
        (:mod:`reckon.store.move`).

        :raises InvalidInput: when it is already there; StoreError when the copy does not
            verify (nothing switched).
        """
        from reckon.api._tenant import Tenant
        from reckon.store.move import move_tenant

        t = self.tenant(tenant_id)
        with self._lock:
            store = move_tenant(self.data_dir, t.store, to, program_resolver=self._resolve,
                                lock_timeout=self._lock_timeout)
            recall = getattr(t, "_recall", None)
            if recall is not None and recall.loaded:
                recall.index.close(save=False)
            self._tenants.pop(tenant_id, None)
            nt = Tenant(self, store)
            self._cache(tenant_id, nt)
            return nt

    def list_tenants(self) -> list[str]:
        """Ids of the existing tenants, sorted."""
        out: list[str] = []
        root = self.data_dir / "tenants"
        if not root.is_dir():
            return sorted(self._shards().remote_tenants())
        for p in root.iterdir():
            try:
                validate_tenant_id(p.name)
            except InvalidTenantId:
                continue
            if not p.is_symlink() and (p / "meta.json").is_file():
                out.append(p.name)
        return sorted(set(out) | set(self._shards().remote_tenants()))

    def delete_tenant(self, tenant_id: str) -> None:
        """Delete a tenant and all its data (waits for a write in progress).

        :raises UnknownTenant: when no such tenant exists.
        """
        from reckon._errors import TenantGone

        for _ in range(3):
            t = self.tenant(tenant_id)
            path = t.store.path
            grave = path.parent / f".deleting-{tenant_id}-{uuid.uuid4().hex}"
            with self._lock:
                try:
                    with t.store.exclusive():
                        os.rename(path, grave)
                except TenantGone:
                    self._tenants.pop(tenant_id, None)
                    continue  # another process replaced it meanwhile: delete the current one
                t.store.mark_gone()
                destroy = getattr(t.store.backend, "destroy", None)
                t.store.close()
                if destroy is not None:  # on a SPARQL server: drop its graphs, forget its place
                    from reckon.store.shards import set_placement

                    destroy()
                    set_placement(self.data_dir, tenant_id, None)
                recall = getattr(t, "_recall", None)
                if recall is not None and recall.loaded:
                    recall.index.close(save=False)  # its thread must not write into the grave
                self._tenants.pop(tenant_id, None)
            shutil.rmtree(grave, ignore_errors=True)
            return
        raise UnknownTenant(f"tenant {tenant_id!r} keeps being re-created by another process; not deleted")

    # ------------------------------------------------------------------ export / import
    def import_tenant(self, tenant_id: str, source: str | Path | bytes) -> Tenant:
        """Create ``tenant_id`` from a :meth:`Tenant.export` file: its asserted graphs
        replace the new tenant's, tenant IRIs ``urn:reckon:<old>:`` are renamed to
        ``urn:reckon:<tenant_id>:``, and the inferred graph is derived from scratch with
        the export's program (version 2 exports carry it; a version 1 export gets this
        engine's program). Atomic: the tenant directory is built aside and renamed into
        place.

        :raises InvalidInput: when the export is not readable.
        :raises TenantExists: when the tenant exists.
        :raises ProgramMismatch: this engine has an explicit program and the export
            carries another.
        """
        from reckon.schema.program import Program

        quads = read_export(source)
        program_quads = [q for q in quads if q.graph_name == PROGRAM]
        quads = [q for q in quads if q.graph_name != PROGRAM]
        stored = Program.from_quads(program_quads)
        program = stored or self.program
        if stored is None:  # a version 1 export: adopted like a tenant of that version
            from reckon._errors import ProgramMismatch
            from reckon.api._program import _legacy_mismatch

            problems = _legacy_mismatch({q.triple for q in quads if q.graph_name == SCHEMA}, set(), program)
            if problems:
                raise ProgramMismatch(
                    f"the export (version 1, no program) does not match this Engine's program: "
                    f"{'; '.join(problems)}; import it with an Engine given the modules it was made with",
                    problems,
                )
        if self.explicit_program and program.digest != self.program.digest:
            from reckon._errors import ProgramMismatch
            from reckon.api._program import _differences

            diff = _differences(program, self.program)
            raise ProgramMismatch(
                f"the export carries another program than the one this Engine was given: {'; '.join(diff)}", diff
            )
        old = _export_tenant(source)
        if old is not None and old != tenant_id:
            quads = [_rename_quad(q, f"urn:reckon:{old}:", f"urn:reckon:{tenant_id}:") for q in quads]
        from reckon.api._tenant import Tenant

        validate_tenant_id(tenant_id)
        path = tenant_dir(self.data_dir, tenant_id)
        with self._lock:
            if (path / "meta.json").exists():
                raise TenantExists(f"tenant {tenant_id!r} already exists")
            self._make_data_dir()
            # built beside the tenant directory and renamed into place: all or nothing
            remote = self._new_tenant_endpoint()
            store = TenantStore.create(
                path, tenant_id, initial=quads, reasoner_factory=program.reasoner_factory(refuse_inconsistent=self.refuse_inconsistent),
                program=program.to_quads(PROGRAM) if stored is not None else (), program_resolver=self._resolve,
                remote=remote,
            )
            if remote is not None:
                from reckon.store.shards import set_placement

                set_placement(self.data_dir, tenant_id, remote.name)
            t = Tenant(self, store)
            if stored is None:
                from reckon.api._program import migrate

                migrate(t, program, action="adopt", validate=False)
            self._cache(tenant_id, t)
        return t


def _sweep_aside(tenants: Path) -> None:
    """Remove what killed creates, imports and deletes left beside the tenants:
    ``.creating-<id>-<pid>-<thread>`` of a process that no longer runs and
    ``.deleting-<id>-<uuid>`` (already renamed away from its tenant)."""
    try:
        entries = list(tenants.iterdir())
    except OSError:
        return
    for p in entries:
        name = p.name
        if name.startswith(".deleting-"):
            shutil.rmtree(p, ignore_errors=True)
        elif name.startswith(".creating-"):
            parts = name.rsplit("-", 2)
            try:
                pid = int(parts[-2])
            except (ValueError, IndexError):
                continue
            if pid == os.getpid() or _pid_alive(pid):
                continue
            shutil.rmtree(p, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _export_tenant(source: str | Path | bytes) -> str | None:
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    for line in data.split(b"\n", 8)[:8]:
        if line.startswith(b"# tenant:"):
            tid = line[len(b"# tenant:"):].strip().decode("ascii", errors="replace")
            try:
                return validate_tenant_id(tid)
            except InvalidTenantId:
                return None
    return None


def _rename(term: Any, old: str, new: str) -> Any:
    from pyoxigraph import Triple

    if isinstance(term, NamedNode) and term.value.startswith(old):
        return NamedNode(new + term.value[len(old):])
    if isinstance(term, Triple):
        return Triple(_rename(term.subject, old, new), _rename(term.predicate, old, new), _rename(term.object, old, new))
    return term


def _rename_quad(q: Quad, old: str, new: str) -> Quad:
    return Quad(_rename(q.subject, old, new), _rename(q.predicate, old, new), _rename(q.object, old, new), q.graph_name)

