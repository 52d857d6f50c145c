"""Per-tenant RDF storage: named graphs, write serialization, incremental reasoning.

Public API (see DESIGN.md "The store")::

    validate_tenant_id(id) -> id         refuse bad ids before any path is built
    TenantStore(path, reasoner_factory=..., backend=...)
        .transaction(validate=...)        one atomic write, serialized across processes
        .query(sparql)                    read-only SPARQL over a committed snapshot
        .snapshot() / .exclusive()        batch reads / batch writes
        .dump() / .export_trig() / .import_trig() / .verify_export()
        .reasoner() / .rebuild_inferred()

Backends (:mod:`reckon.store.backends`): where the quads live is a
:class:`~reckon.store.backends.StoreBackend` beneath :class:`TenantStore` -- the embedded
on-disk Oxigraph store (default) or a SPARQL 1.1 server (:mod:`reckon.store.remote`:
Oxigraph server, Virtuoso), one set of named graphs per tenant, one conditional update
per commit, a write lease per tenant in the server. :mod:`reckon.store.shards` maps
tenants to endpoints; :mod:`reckon.store.move` moves a tenant between them.
"""

from reckon.store.graphs import ASSERTED, BUSINESS, INFERRED, MEMORIES, PUBLIC, SCHEMA, TRANSCRIPTS
from reckon.store.ids import FORMAT_VERSION, tenant_dir, validate_tenant_id
from reckon.store.query_guard import QueryLimits, QueryPlan, inspect_query
from reckon.store.query_pool import QueryOutcome, QueryPool
from reckon.store.tenant_store import (
    Commit,
    QueryResult,
    ReasonerFactory,
    ReasonerLike,
    StoreView,
    TenantStore,
    Txn,
    ValidateHook,
    read_export,
)

__all__ = [
    "ASSERTED",
    "BUSINESS",
    "Commit",
    "FORMAT_VERSION",
    "INFERRED",
    "MEMORIES",
    "PUBLIC",
    "QueryLimits",
    "QueryOutcome",
    "QueryPlan",
    "QueryPool",
    "QueryResult",
    "ReasonerFactory",
    "ReasonerLike",
    "SCHEMA",
    "TRANSCRIPTS",
    "StoreView",
    "TenantStore",
    "Txn",
    "ValidateHook",
    "inspect_query",
    "read_export",
    "tenant_dir",
    "validate_tenant_id",
]
