"""The :class:`Engine`: a data directory of tenants, the rule program, the schema files."""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from pyoxigraph import NamedNode, Quad

from reckon._errors import InvalidInput, InvalidTenantId, TenantExists, UnknownTenant
from reckon.store import SCHEMA, TenantStore, read_export, tenant_dir, validate_tenant_id
from reckon.store.tenant_store import ReasonerFactory

if TYPE_CHECKING:  # pragma: no cover
    from reckon.api._tenant import Tenant

__all__ = ["DEFAULT_RULES", "Engine"]

DEFAULT_RULES: tuple[str, ...] = ("core.srl", "marketing.srl", "recruiting.srl")
"""Shipped rule files of the default program (resolved by ``reckon.datalog.loader``)."""

_RULE_SUFFIXES = (".srl", ".dlog")


class Engine:
    """Entry point: tenants under ``data_dir/tenants/<id>/``, one rule program for all.

    :param data_dir: directory holding the tenants (created if missing).
    :param rules: rule files of the program (paths or shipped names such as
        ``"core.srl"``); ``None`` = :data:`DEFAULT_RULES`; ``[]`` = no rules.
    :param modules: extra domain modules: ``.srl`` / ``.dlog`` files are added to the
        rule program, ``.ttl`` files (ontology and shapes) to each NEW tenant's schema
        graph.
    :param lock_timeout: seconds a write waits for another process's write before
        :class:`~reckon._errors.StoreError`; ``None`` waits.
    :raises StoreError: when ``data_dir`` cannot be created.

    >>> import tempfile
    >>> engine = Engine(tempfile.mkdtemp(), rules=[])
    >>> engine.create_tenant("acme").id
    'acme'
    >>> engine.list_tenants()
    ['acme']
    """

    def __init__(
        self,
        data_dir: str | Path,
        *,
        rules: Sequence[str | Path] | None = None,
        modules: Sequence[str | Path] | None = None,
        lock_timeout: float | None = None,
    ) -> None:
        from reckon._errors import StoreError

        self.data_dir = Path(data_dir)
        try:
            (self.data_dir / "tenants").mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the data directory {self.data_dir}: {e}") from e
        modules = [Path(m) for m in (modules or [])]
        for m in modules:
            if m.suffix not in _RULE_SUFFIXES + (".ttl",):
                raise InvalidInput(f"module {m}: expected a .srl, .dlog or .ttl file", field="modules")
        self._rule_files: list[str | Path] = list(DEFAULT_RULES if rules is None else rules)
        self._rule_files += [m for m in modules if m.suffix in _RULE_SUFFIXES]
        self._schema_modules = [m for m in modules if m.suffix == ".ttl"]
        self._lock_timeout = lock_timeout
        self._ruleset: Any = None
        self._lock = threading.RLock()
        self._tenants: dict[str, "Tenant"] = {}

    # ------------------------------------------------------------------ program & schema
    @property
    def ruleset(self) -> Any:
        """The loaded, checked rule program (``reckon.datalog.model.RuleSet``), or
        ``None`` when the engine has no rules.

        :raises RuleError: when a rule file does not parse or is not stratifiable.
        """
        with self._lock:
            if self._ruleset is None and self._rule_files:
                from reckon.datalog.loader import load_rules

                self._ruleset = load_rules(*self._rule_files)
            return self._ruleset

    def reasoner_factory(self, *, refuse_inconsistent: bool = False) -> ReasonerFactory | None:
        """A factory of empty reasoners for the program (``None`` without rules).

        :param refuse_inconsistent: the reasoners refuse a change after which the rules
            derive a new inconsistency (``?x rdf:type owl:Nothing``): the store's write
            raises :class:`~reckon._errors.InconsistentGraph` and nothing is written.
            Default off (a tenant setting may turn it on).
        """
        ruleset = self.ruleset
        if ruleset is None:
            return None
        from reckon.datalog.evaluate import Reasoner

        return lambda: Reasoner(ruleset, refuse_inconsistent=refuse_inconsistent)

    def schema_quads(self) -> list[Quad]:
        """Quads of the SCHEMA graph of a new tenant: shipped ontology + shapes and the
        engine's ``.ttl`` modules (through ``reckon.schema.load_schema``).

        :raises SchemaError: when a file is missing or does not parse.
        """
        from reckon.schema import load_schema

        schema = load_schema(*self._schema_modules)
        return [Quad(t.subject, t.predicate, t.object, SCHEMA) for t in schema.triples()]

    # ------------------------------------------------------------------ tenants
    def create_tenant(self, tenant_id: str, *, company_name: str | None = None) -> "Tenant":
        """Create a tenant: schema graph, company node, clock node, derived closure.

        :raises InvalidTenantId: when the id is invalid (before any path is built).
        :raises TenantExists: when it already exists.
        """
        from reckon.api._business import initial_quads
        from reckon.api._tenant import Tenant

        validate_tenant_id(tenant_id)
        if company_name is not None and (not isinstance(company_name, str) or not company_name.strip()):
            raise InvalidInput("company_name must be a non-empty string", field="company_name")
        path = tenant_dir(self.data_dir, tenant_id)
        with self._lock:
            if (path / "meta.json").exists():
                raise TenantExists(f"tenant {tenant_id!r} already exists")
            store = TenantStore.create(
                path,
                tenant_id,
                initial=self.schema_quads() + initial_quads(tenant_id, company_name),
                reasoner_factory=self.reasoner_factory(),
            )
            t = Tenant(self, store)
            self._tenants[tenant_id] = t
            return t

    def tenant(self, tenant_id: str) -> "Tenant":
        """An existing tenant (one :class:`Tenant` object per id per engine).

        :raises InvalidTenantId: when the id is invalid.
        :raises UnknownTenant: when no such tenant exists.
        """
        from reckon.api._tenant import Tenant

        validate_tenant_id(tenant_id)
        with self._lock:
            t = self._tenants.get(tenant_id)
            path = tenant_dir(self.data_dir, tenant_id)
            if not (path / "meta.json").is_file():
                self._tenants.pop(tenant_id, None)
                raise UnknownTenant(f"no tenant {tenant_id!r} in {self.data_dir}")
            if t is None:
                store = TenantStore(
                    path, reasoner_factory=self.reasoner_factory(), lock_timeout=self._lock_timeout
                )
                t = Tenant(self, store)
                self._tenants[tenant_id] = t
            return t

    def list_tenants(self) -> list[str]:
        """Ids of the existing tenants, sorted."""
        out = []
        for p in (self.data_dir / "tenants").iterdir():
            try:
                validate_tenant_id(p.name)
            except InvalidTenantId:
                continue
            if (p / "meta.json").is_file():
                out.append(p.name)
        return sorted(out)

    def delete_tenant(self, tenant_id: str) -> None:
        """Delete a tenant and all its data (waits for a write in progress).

        :raises UnknownTenant: when no such tenant exists.
        """
        t = self.tenant(tenant_id)
        path = t.store.path
        grave = path.parent / f".deleting-{tenant_id}-{uuid.uuid4().hex}"
        with self._lock:
            with t.store.exclusive():
                os.rename(path, grave)
            t.store.close()
            self._tenants.pop(tenant_id, None)
        shutil.rmtree(grave, ignore_errors=True)

    # ------------------------------------------------------------------ export / import
    def import_tenant(self, tenant_id: str, source: str | Path | bytes) -> "Tenant":
        """Create ``tenant_id`` from a :meth:`Tenant.export` file: its asserted graphs
        replace the new tenant's, tenant IRIs ``urn:reckon:<old>:`` are renamed to
        ``urn:reckon:<tenant_id>:``, and the inferred graph is derived from scratch.
        Atomic: the tenant directory is built aside and renamed into place.

        :raises InvalidInput: when the export is not readable.
        :raises TenantExists: when the tenant exists.
        """
        quads = read_export(source)
        old = _export_tenant(source)
        if old is not None and old != tenant_id:
            quads = [_rename_quad(q, f"urn:reckon:{old}:", f"urn:reckon:{tenant_id}:") for q in quads]
        from reckon.api._tenant import Tenant

        validate_tenant_id(tenant_id)
        path = tenant_dir(self.data_dir, tenant_id)
        with self._lock:
            if (path / "meta.json").exists():
                raise TenantExists(f"tenant {tenant_id!r} already exists")
            # built beside the tenant directory and renamed into place: all or nothing
            store = TenantStore.create(path, tenant_id, initial=quads, reasoner_factory=self.reasoner_factory())
            t = Tenant(self, store)
            self._tenants[tenant_id] = t
        return t


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

