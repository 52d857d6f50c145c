"""Per-tenant RDF storage: named graphs, write serialization, incremental reasoning.

Public API (DESIGN.md "The store")::

    validate_tenant_id(id) -> id         refuse bad ids before any path is built
    TenantStore(path, reasoner_factory=...)
        .transaction(validate=...)        one atomic write, serialized across processes
        .query(sparql)                    read-only SPARQL over a committed snapshot
        .snapshot() / .exclusive()        batch reads / batch writes
        .dump() / .export_trig() / .import_trig() / .verify_export()
        .reasoner() / .rebuild_inferred()

Not built yet: the second backend of DESIGN.md (SPARQL 1.1 Protocol + Graph Store
Protocol to an ``oxigraph serve`` / Fuseki / GraphDB server, tenants sharded by a
tenant -> endpoint map). The seam is where :class:`TenantStore` touches pyoxigraph's
on-disk ``Store``: open/close under the lock, ``_gen_of`` (read the generation), the
mirror load (``list(store)``) and the one ``update()`` per write. A remote backend would
implement those four over HTTP (``httpx``); since ``flock`` does not span machines it
would make the write conditional on the generation instead
(``DELETE { gen n } INSERT { gen n+1 ... } WHERE { gen n }`` -- optimistic concurrency:
retry after reloading when no row matched).
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
