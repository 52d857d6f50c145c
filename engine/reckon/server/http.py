"""The HTTP server: a FastAPI application over one :class:`~reckon.api.Engine`.

Routes (every ``/tenants/{tenant_id}/...`` route needs ``Authorization: Bearer <token>``
with a token of that tenant, see :mod:`reckon.server.auth`; the OpenAPI document is
at ``/openapi.json``, interactive docs at ``/docs``):

=====================================================  ===================================
``GET|POST /tenants/{id}/sparql``                      SPARQL 1.1 Protocol query operation
``POST /tenants/{id}/turns``                           record conversation turns
``GET /tenants/{id}/conversations[/{cid}/turns]``      conversations / their turns (visible ones)
``GET /tenants/{id}/turns/search?q=...``               search what was said
``POST /tenants/{id}/memories``                        remember
``GET /tenants/{id}/memories``                         memories visible to the token (filters)
``GET /tenants/{id}/memories/{memory_id}``             one memory (if visible to the token)
``GET /tenants/{id}/memories/{memory_id}/history``     its supersession chain
``POST /tenants/{id}/memories/{memory_id}/restore``    undo a supersession (operator)
``DELETE /tenants/{id}/memories/{memory_id}``          delete (operator)
``PATCH /tenants/{id}/memories/{memory_id}``           update (JSON ``null`` removes a field)
``POST /tenants/{id}/memories/{memory_id}/supersede``  supersede
``GET /tenants/{id}/search?q=...``                     hybrid search (the long tail)
``GET /tenants/{id}/bundle``                           the context bundle of the token's person
``GET /tenants/{id}/tools``                            LLM tool definitions
``POST /tenants/{id}/tools/{name}``                    one LLM tool call (body: the arguments)
``/tenants/{id}/notes/{key}``, ``note-namespaces``      keyed notes (reckon.server._neighbours)
``/tenants/{id}/maintenance``, ``.../feedback``         lifecycle (reckon.server._lifecycle)
``GET /tenants/{id}/metrics``, ``GET /metrics``        memories per kind and scope, reasoning
                                                       and write times (Prometheus text or JSON)
=====================================================  ===================================

**SPARQL** (https://www.w3.org/TR/sparql11-protocol/#query-operation): ``GET ?query=``,
``POST`` with an ``application/sparql-query`` body or a form-encoded ``query=``.
Results are serialised by pyoxigraph: SELECT / ASK as
``application/sparql-results+json`` (default), ``application/sparql-results+xml``,
``text/csv`` or ``text/tab-separated-values``; CONSTRUCT / DESCRIBE as ``text/turtle``
(default) or ``application/n-triples``, chosen by ``Accept`` (406 when none fits). The
endpoint is read-only: SPARQL Update (INSERT, DELETE, LOAD, CLEAR, DROP, CREATE, ADD,
MOVE, COPY), ``SERVICE``, an ``update=`` form field and an ``application/sparql-update``
body are refused with 400. ``default-graph-uri`` / ``named-graph-uri`` are refused too
(the dataset is fixed: the default graph is the union of the tenant's graphs, each
addressable with ``GRAPH``). The endpoint reads every memory of the tenant, so it needs
a token with the ``sparql`` grant (operators have it).

**Errors** are JSON ``{"error": {"type", "message", "field", "constraint", ...}}``, every
one of them (routing errors too): InvalidInput / ShapeViolation / request validation 422
(``field`` always a name: the dotted location in the body or query, ``body`` for a body
that is not JSON or not an object; validation errors also list ``errors: [{field,
constraint, message}]``; UnknownTeam is a 422 of type ``unknown_team`` with ``teams``, the
unknown ids, and ``known``, the tenant's), ReadOnlyQuery and malformed SPARQL 400, missing or invalid
token 401, NotAuthorized or a token of another tenant 403, UnknownTenant / UnknownMemory
and no such route 404, a method the path does not serve 405 (with ``Allow``), ConflictPending
409 (with ``conflict_id`` and ``candidates``), RestoreRefused 409, a body that is not
``application/json`` on a JSON route 415, StoreError 503.

The memory inspector (browser pages at ``/`` and ``/ui/...``) is
:mod:`reckon.server.inspector`.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from typing import Literal as TLiteral
from urllib.parse import parse_qs

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, StrictInt
from pyoxigraph import (
    BlankNode,
    Literal,
    NamedNode,
    QueryResultsFormat,
    RdfFormat,
    Triple,
    parse_query_results,
    serialize,
)
from starlette.exceptions import HTTPException as StarletteHTTPException

from reckon import _json as strict_json
from reckon import vocab as _vocab
from reckon._config import MAX_SEARCH_K
from reckon._errors import (
    ConflictPending,
    InvalidInput,
    InvalidTenantId,
    NotAuthorized,
    QueryLimitExceeded,
    ReadOnlyQuery,
    ReckonError,
    RestoreRefused,
    ShapeViolation,
    StoreError,
    TenantGone,
    UnknownMemory,
    UnknownTeam,
    UnknownTenant,
)
from reckon._json import InvalidJSON
from reckon.api._limits import MAX_CONVERSATION_CHARS, MAX_SEARCH_CHARS
from reckon.memory.models import HistoryEntry, Kind, Memory, Scope, Source, WholeDateTime
from reckon.recall.bundle import ContextBundle
from reckon.server.auth import TokenError, TokenForbidden, TokenRecord, TokenStore, parse_token

__all__ = ["ApiError", "create_app", "negotiate"]

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

#: media type -> pyoxigraph format, for SELECT / ASK results (first = default).
RESULT_TYPES: dict[str, QueryResultsFormat] = {
    "application/sparql-results+json": QueryResultsFormat.JSON,
    "application/sparql-results+xml": QueryResultsFormat.XML,
    "text/csv": QueryResultsFormat.CSV,
    "text/tab-separated-values": QueryResultsFormat.TSV,
    "application/json": QueryResultsFormat.JSON,
    "application/xml": QueryResultsFormat.XML,
}
#: media type -> pyoxigraph format, for CONSTRUCT / DESCRIBE results (first = default).
GRAPH_TYPES: dict[str, RdfFormat] = {
    "text/turtle": RdfFormat.TURTLE,
    "application/n-triples": RdfFormat.N_TRIPLES,
    "text/plain": RdfFormat.N_TRIPLES,
}


# ---------------------------------------------------------------------------------------
# response and request models (published in the OpenAPI document)
# ---------------------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    """What went wrong, in terms a client can act on."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="invalid_input, shape_violation, read_only_query, unauthenticated, forbidden, "
                                  "not_authorized, unknown_tenant, unknown_memory, conflict_pending, ...")
    message: str
    field: str | None = Field(default=None, description="The offending field, when known.")
    constraint: str | None = Field(default=None, description="The violated constraint (SHACL component or "
                                                              "validation rule), when known.")


class ErrorBody(BaseModel):
    error: ErrorDetail


class ApiError(Exception):
    """An HTTP error with a JSON body ``{"error": {...}}``."""

    def __init__(self, status: int, type_: str, message: str, *, headers: dict[str, str] | None = None,
                 **extra: Any) -> None:
        self.status = status
        self.body = {"error": {"type": type_, "message": message, "field": None, "constraint": None, **extra}}
        self.headers = headers
        super().__init__(message)


class MemoryFields(BaseModel):
    """A memory's fields as ``remember`` takes them (see ``reckon.memory.models.MemoryInput``)."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind
    scope: Scope
    importance: StrictInt = Field(ge=1, le=5, description="1 Disabled, 2 Low, 3 Medium, 4 High, 5 Critical "
                                                         "(an integer; \"5\" or 5.0 is refused).")
    source: Source = Field(default="agent_tool", description="Where it comes from (operator, onboarding and "
                                                             "import need an operator token).")
    label: str = Field(min_length=1, max_length=500)
    content: str = Field(min_length=1, max_length=20000)
    subclass: str | None = Field(default=None, description="Memory class (local name or IRI), e.g. "
                                                           "BudgetConstraintMemory.")
    properties: dict[str, Any] | None = Field(default=None, description="The subclass's properties.")
    confidence: float | None = Field(default=None, ge=0, le=1)
    expires_at: WholeDateTime | None = None
    teams: list[str] | None = None
    owner: str | None = None
    project: str | None = Field(default=None, description="Project id of a project-scope memory.")
    conversation: str | None = Field(default=None, description="Conversation id of a conversation-scope memory.")


class RememberBody(MemoryFields):
    """A new memory, plus the supersession / conflict-confirmation fields."""

    supersedes: list[str] | None = Field(default=None, description="Ids this memory explicitly replaces.")
    conflict_resolution: TLiteral["replace", "keep_both"] | None = Field(
        default=None, description="Only when retrying after a 409 conflict_pending.")
    conflict_id: str | None = Field(default=None, description="The conflict_id of that 409.")


class PatchBody(BaseModel):
    """A partial edit: a field absent from the JSON object is untouched, JSON ``null``
    removes it (optional fields only), a value sets it. In ``properties`` each key
    follows the same rule."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind | None = None
    importance: StrictInt | None = None
    label: str | None = None
    content: str | None = None
    confidence: float | None = None
    expires_at: WholeDateTime | None = None
    properties: dict[str, Any] | None = None
    teams: list[str] | None = None


class SupersedeBody(BaseModel):
    """Exactly one of ``replacement`` (a new memory) or ``new_id`` (an existing one)."""

    model_config = ConfigDict(extra="forbid")

    replacement: MemoryFields | None = None
    new_id: str | None = None


class SearchHitOut(BaseModel):
    memory: Memory
    score: float
    document: str | None = None
    citation: str | None = None
    expanded_from: str | None = Field(None, description="expand=graph: the direct hit this neighbour was reached from.")
    via: str | None = Field(None, description="expand=graph: the edge (partOf, hasPart, supersedes, supersededBy, "
                                              "derivedFrom).")


class SearchOut(BaseModel):
    query: str
    hits: list[SearchHitOut]


class MetricsOut(BaseModel):
    """Metrics of one tenant (the JSON form of the Prometheus text)."""

    tenant: str
    generation: int = Field(description="Committed writes since creation.")
    memories: list[dict[str, Any]] = Field(description="[{kind, scope, active, count}]")
    reasoner: dict[str, Any] = Field(description="Last derivation: seconds, derived facts, strata, rounds.")
    writes: dict[str, dict[str, int | float]] = Field(description="Per write route of this server process: count (refused writes "
                                                            "included), "
                                                            "seconds_sum (validation + reasoning + commit), "
                                                            "derivations and derivation_seconds_sum (the "
                                                            "reasoner's incremental apply of the committed "
                                                            "ones).")


# ---------------------------------------------------------------------------------------
# SPARQL results
# ---------------------------------------------------------------------------------------


def negotiate(accept: str | None, offered: list[str]) -> str | None:
    """The offered media type that ``accept`` prefers (RFC 9110 section 12.5.1: q-values,
    ``type/*`` and ``*/*``); the first offered when ``accept`` is empty; ``None`` when
    nothing offered is acceptable."""
    if not accept or not accept.strip():
        return offered[0]
    prefs: list[tuple[float, int, str]] = []
    for i, part in enumerate(accept.split(",")):
        fields = [f.strip() for f in part.split(";")]
        mt = fields[0].lower()
        if not mt:
            continue
        q = 1.0
        for f in fields[1:]:
            if f.lower().startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        if q > 0 and math.isfinite(q):
            prefs.append((q, i, mt))
    prefs.sort(key=lambda t: (-t[0], t[1]))
    for _, _, mt in prefs:
        if mt in offered:
            return mt
        if mt == "*/*":
            return offered[0]
        if mt.endswith("/*"):
            major = mt[:-1]
            for o in offered:
                if o.startswith(major):
                    return o
    return None


def _term_json(t: Any) -> dict[str, Any]:
    """A term in the SPARQL 1.1 Query Results JSON Format (section 3.2.2); triple terms
    as in SPARQL 1.2 (``"type": "triple"``)."""
    if isinstance(t, NamedNode):
        return {"type": "uri", "value": t.value}
    if isinstance(t, BlankNode):
        return {"type": "bnode", "value": t.value}
    if isinstance(t, Literal):
        out: dict[str, Any] = {"type": "literal", "value": t.value}
        if t.language:
            out["xml:lang"] = t.language
        elif t.datatype.value not in (_XSD_STRING, _RDF_LANG_STRING):
            out["datatype"] = t.datatype.value
        return out
    if isinstance(t, Triple):
        return {"type": "triple", "value": {"subject": _term_json(t.subject),
                                            "predicate": _term_json(t.predicate),
                                            "object": _term_json(t.object)}}
    raise TypeError(f"not an RDF term: {t!r}")


def sparql_response(tenant: Any, query: str, accept: str | None) -> Response:
    """Run a read-only query on ``tenant`` (once, in a query worker: see
    ``Tenant.sparql``) and serialise the result for ``accept``.

    :raises ReadOnlyQuery: for an update or SERVICE (through ``Tenant.sparql_outcome``).
    :raises QueryLimitExceeded: over a query limit (413 / 400 / 503 by the handler).
    :raises ApiError: 400 when the query does not parse, 406 when no offered format
        is acceptable.
    """
    from pyoxigraph import parse

    try:
        outcome = tenant.sparql_outcome(query)  # the guard, then the sandboxed worker
    except InvalidInput as exc:  # SPARQL 1.1 Protocol section 2.1.4: malformed query -> 400
        raise ApiError(400, "malformed_query", str(exc), field="query", constraint="syntax") from None
    if outcome.form != "graph":
        mt = negotiate(accept, list(RESULT_TYPES))
        if mt is None:
            raise ApiError(406, "not_acceptable", "SELECT / ASK results are available as "
                           + ", ".join(list(RESULT_TYPES)[:4]))
        if outcome.form == "ask":
            doc = json.dumps({"head": {}, "boolean": outcome.boolean}).encode()
        else:
            doc = outcome.body
        if RESULT_TYPES[mt] == QueryResultsFormat.JSON:
            body = doc
        else:
            body = parse_query_results(doc, QueryResultsFormat.JSON).serialize(format=RESULT_TYPES[mt]) or b""
        charset = "; charset=utf-8" if mt.startswith("text/") else ""
        return Response(content=body, media_type=mt + charset)
    mt = negotiate(accept, list(GRAPH_TYPES))
    if mt is None:
        raise ApiError(406, "not_acceptable", "CONSTRUCT / DESCRIBE results are available as "
                       + ", ".join(list(GRAPH_TYPES)[:2]))
    if GRAPH_TYPES[mt] == RdfFormat.N_TRIPLES:
        body = outcome.body
    else:
        triples = [Triple(q.subject, q.predicate, q.object) for q in parse(outcome.body, format=RdfFormat.N_TRIPLES)]
        body = serialize(triples, format=GRAPH_TYPES[mt]) or b""
    charset = "; charset=utf-8" if mt.startswith("text/") else ""
    return Response(content=body, media_type=mt + charset)


# ---------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------

_Q_MEMORIES = _vocab.sparql_prefixes("rk") + """SELECT ?kind ?scope ?active (COUNT(DISTINCT ?m) AS ?n) WHERE {
  ?m a rk:Memory ; rk:kind ?kind ; rk:scope ?scope .
  BIND(EXISTS { ?m a rk:ActiveMemory } AS ?active)
} GROUP BY ?kind ?scope ?active
"""


class WriteTimes:
    """Per tenant and write route: number of writes and total seconds (this process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, dict[str, list[float]]] = {}

    @contextmanager
    def timed(self, tenant: Any, route: str) -> Iterator[None]:
        """Time one write of ``tenant`` (a :class:`reckon.api.Tenant`); on success also
        record the reasoner's derivation time of that write (``Reasoner.stats["seconds"]``,
        read right after the commit)."""
        t0 = time.perf_counter()
        ok = False
        try:
            yield
            ok = True
        finally:
            dt = time.perf_counter() - t0
            derive = None
            if ok:
                try:
                    derive = float((getattr(tenant.store.reasoner(), "stats", {}) or {}).get("seconds", 0.0))
                except Exception:  # noqa: BLE001 - metrics never fail a committed write
                    derive = None
            with self._lock:
                c = self._data.setdefault(tenant.id, {}).setdefault(route, [0.0, 0.0, 0.0, 0.0])
                c[0] += 1
                c[1] += dt
                if derive is not None:
                    c[2] += 1
                    c[3] += derive

    def of(self, tenant: str) -> dict[str, dict[str, float]]:
        with self._lock:
            return {r: {"count": int(c[0]), "seconds_sum": c[1], "derivations": int(c[2]),
                        "derivation_seconds_sum": c[3]}
                    for r, c in self._data.get(tenant, {}).items()}


def tenant_metrics(tenant: Any, writes: WriteTimes) -> MetricsOut:
    """Counts of memories per kind, scope and active state; the reasoner's last
    derivation (``Reasoner.stats``); write times of this process."""
    from reckon import vocab as R

    rows = tenant.store.query(_Q_MEMORIES)  # our own text: evaluated in-process
    mem = []
    for r in rows:
        kind = R.IRI_KIND.get(r["kind"], R.local_name(r["kind"].value) if isinstance(r["kind"], NamedNode) else str(r["kind"]))
        scope = R.IRI_SCOPE.get(r["scope"], R.local_name(r["scope"].value) if isinstance(r["scope"], NamedNode) else str(r["scope"]))
        mem.append({"kind": kind, "scope": scope, "active": r["active"].value == "true", "count": int(r["n"].value)})
    mem.sort(key=lambda d: (d["kind"], d["scope"], not d["active"]))
    stats = dict(getattr(tenant.store.reasoner(), "stats", {}) or {})
    reasoner = {
        "last_derivation_seconds": float(stats.get("seconds", 0.0)),
        "derived_facts": int(stats.get("derived", 0)),
        "strata": int(stats.get("strata", 0)),
        "rounds": int(stats.get("rounds", 0)),
        "seconds_per_stratum": [float(x) for x in stats.get("seconds_per_stratum", [])],
    }
    return MetricsOut(tenant=tenant.id, generation=tenant.store.generation(), memories=mem, reasoner=reasoner,
                      writes=writes.of(tenant.id))


def _label(v: Any) -> str:
    return str(v).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def prometheus_text(metrics: list[MetricsOut]) -> str:
    """Prometheus text exposition format 0.0.4."""
    out: list[str] = []

    def family(name: str, kind: str, help_: str, samples: list[tuple[dict[str, Any], float]]) -> None:
        out.append(f"# HELP {name} {help_}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            lab = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
            out.append(f"{name}{{{lab}}} {value:g}" if isinstance(value, float) else f"{name}{{{lab}}} {value}")

    family("reckon_memories", "gauge", "Memories by kind, scope and active state.",
           [({"tenant": m.tenant, "kind": d["kind"], "scope": d["scope"], "active": str(d["active"]).lower()},
             d["count"]) for m in metrics for d in m.memories])
    family("reckon_store_generation", "counter", "Committed writes of the tenant store.",
           [({"tenant": m.tenant}, m.generation) for m in metrics])
    family("reckon_reasoner_last_derivation_seconds", "gauge",
           "Wall time of the reasoner's last derivation (materialization or incremental apply).",
           [({"tenant": m.tenant}, float(m.reasoner["last_derivation_seconds"])) for m in metrics])
    family("reckon_reasoner_derived_facts", "gauge", "Facts in the inferred graph after the last derivation.",
           [({"tenant": m.tenant}, m.reasoner["derived_facts"]) for m in metrics])
    family("reckon_write_seconds_sum", "counter", "Seconds spent in writes (validation, reasoning, commit).",
           [({"tenant": m.tenant, "route": r}, float(c["seconds_sum"])) for m in metrics for r, c in m.writes.items()])
    family("reckon_write_seconds_count", "counter", "Writes served.",
           [({"tenant": m.tenant, "route": r}, int(c["count"])) for m in metrics for r, c in m.writes.items()])
    family("reckon_derivation_seconds_sum", "counter",
           "Seconds the reasoner spent deriving (incremental apply) in the writes served.",
           [({"tenant": m.tenant, "route": r}, float(c["derivation_seconds_sum"])) for m in metrics
            for r, c in m.writes.items()])
    family("reckon_derivation_seconds_count", "counter", "Derivations timed.",
           [({"tenant": m.tenant, "route": r}, int(c["derivations"])) for m in metrics for r, c in m.writes.items()])
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------
# the application
# ---------------------------------------------------------------------------------------

_STATUS: list[tuple[type[BaseException], int, str]] = [
    (ShapeViolation, 422, "shape_violation"),
    (InvalidTenantId, 404, "unknown_tenant"),
    (UnknownTeam, 422, "unknown_team"),
    (InvalidInput, 422, "invalid_input"),
    (ReadOnlyQuery, 400, "read_only_query"),
    (NotAuthorized, 403, "not_authorized"),
    (TenantGone, 404, "tenant_gone"),
    (UnknownTenant, 404, "unknown_tenant"),
    (UnknownMemory, 404, "unknown_memory"),
    (ConflictPending, 409, "conflict_pending"),
    (RestoreRefused, 409, "restore_refused"),
    (StoreError, 503, "store_error"),
]


_HTTP_ERRORS: dict[int, tuple[str, str]] = {
    400: ("bad_request", "bad request"),
    401: ("unauthenticated", "authentication required"),
    403: ("forbidden", "forbidden"),
    404: ("not_found", "not found"),
    405: ("method_not_allowed", "method not allowed"),
    406: ("not_acceptable", "not acceptable"),
    413: ("payload_too_large", "request body too large"),
    415: ("unsupported_media_type", "unsupported media type"),
    429: ("rate_limited", "too many requests"),
}

_SOURCES = ("body", "query", "path", "header", "cookie")


def _validation_item(e: Any) -> dict[str, Any]:
    """One request-validation error as ``{"field", "constraint", "message"}``: ``field``
    is the dotted location inside its source (``teams.0``, ``k``), or the source itself
    (``body``) when the error is about the whole of it (not JSON, not an object)."""
    loc = list(e.get("loc", ()))
    source = str(loc[0]) if loc and loc[0] in _SOURCES else "body"
    rest = [str(x) for x in (loc[1:] if loc and loc[0] in _SOURCES else loc)]
    constraint = str(e.get("type") or "invalid")
    msg = str(e.get("msg") or "invalid value")
    if constraint == "json_invalid":  # loc = ("body", character position)
        where = f" at character {rest[0]}" if rest else ""
        rest, msg = [], f"{msg}{where}: the body is not valid JSON"
    return {"field": ".".join(rest) or source, "constraint": constraint, "message": msg}


#: QueryLimitExceeded.limit -> HTTP status (413: the request or its result is too large;
#: 400: the query nests too deep; 503: the server could not evaluate it in time).
QUERY_LIMIT_STATUS = {"query_bytes": 413, "depth": 400, "rows": 413, "result_bytes": 413,
                      "deadline": 503, "busy": 503, "resources": 503}


def _error_response(exc: ReckonError) -> JSONResponse:
    if isinstance(exc, QueryLimitExceeded):
        status = QUERY_LIMIT_STATUS.get(exc.limit, 400)
        headers = {"Retry-After": "1"} if status == 503 else None
        return JSONResponse(status_code=status, headers=headers, content={"error": {
            "type": "query_limit", "message": str(exc), "field": "query", "constraint": exc.limit,
            "limit": exc.value}})
    status, type_ = 400, "error"
    for cls, st, ty in _STATUS:
        if isinstance(exc, cls):
            status, type_ = st, ty
            break
    err: dict[str, Any] = {"type": type_, "message": str(exc), "field": None, "constraint": None}
    if isinstance(exc, ShapeViolation):
        vs = [{k: (v if isinstance(v, (str, int, float, bool)) or v is None else str(v)) for k, v in d.items()}
              for d in exc.violations]
        first = vs[0] if vs else {}
        err.update(field=first.get("field") or first.get("path") or "properties",
                   constraint=first.get("constraint") or "shape", violations=vs)
    elif isinstance(exc, UnknownTeam):
        err.update(field=exc.field or "teams", constraint="exists", teams=list(exc.teams), known=list(exc.known))
    elif isinstance(exc, InvalidInput):
        err.update(field=exc.field or "request", constraint="value")
    elif isinstance(exc, ReadOnlyQuery):
        err.update(field="query", constraint="read_only")
    elif isinstance(exc, ConflictPending):
        err.update(conflict_id=exc.conflict_id, candidates=list(exc.candidates),
                   field="conflict_resolution", constraint="confirmation")
    elif isinstance(exc, NotAuthorized):
        err.update(constraint="authorization")
    return JSONResponse(status_code=status, content={"error": err})


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _visible(m: Memory, p: Any) -> bool:
    """Whether principal ``p`` may read memory ``m`` (:func:`reckon.memory.authz.can_read`:
    operators all; members company memories, their teams', their projects', their
    conversations' and their own)."""
    from reckon.memory.authz import can_read_memory

    return can_read_memory(p, m)


_bearer = HTTPBearer(auto_error=False, description="A Reckon API token of the tenant in the URL "
                                                   "(`reckon token create --tenant T --as PERSON`).")

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or invalid token."},
    403: {"model": ErrorBody, "description": "Token of another tenant, or not authorized."},
    404: {"model": ErrorBody, "description": "Unknown tenant or memory."},
}


class RateLimiter:
    """Token buckets per API token id (RFC 6585 section 4: 429 with ``Retry-After``).

    Each request takes one unit from the bucket of the token id it presents (the public
    middle part of ``rkt_<tenant>.<id>.<secret>``, read before the secret is checked); a
    failed verification takes :attr:`failure_cost` units, so guessing secrets of a known
    token id (each guess costs ~90 ms of scrypt) is slowed to ``rate / failure_cost``
    guesses per second.

    :param rate: units added per second (requests per second sustained); ``None``: off.
    :param burst: bucket size (requests allowed at once).
    """

    failure_cost = 10.0

    def __init__(self, rate: float | None = 20.0, burst: int = 40) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._buckets: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, cost: float = 1.0) -> float:
        """Take ``cost`` units; returns 0 when allowed, else seconds until it would be."""
        if self.rate is None:
            return 0.0
        now = time.monotonic()
        with self._lock:
            b = self._buckets.get(key)
            if b is None:
                if len(self._buckets) > 100_000:
                    self._buckets.clear()
                b = self._buckets[key] = [self.burst, now]
            b[0] = min(self.burst, b[0] + (now - b[1]) * self.rate)
            b[1] = now
            if b[0] >= cost:
                b[0] -= cost
                return 0.0
            return (cost - b[0]) / self.rate

    def penalize(self, key: str) -> None:
        """Charge a failed verification (may drive the bucket below zero)."""
        if self.rate is None:
            return
        with self._lock:
            b = self._buckets.setdefault(key, [self.burst, time.monotonic()])
            b[0] -= self.failure_cost


class _BodyLimit:
    """ASGI middleware: refuse a request body over ``max_bytes`` with 413 in the error
    envelope (by ``Content-Length`` up front, or while it streams in)."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        for k, v in scope.get("headers", []):
            if k == b"content-length":
                try:
                    if int(v) > limit:
                        await self._refuse(send)
                        return
                except ValueError:
                    pass
        seen = 0
        refused = False

        async def limited_receive() -> Any:
            nonlocal seen, refused
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    refused = True
                    raise _TooLarge()
            return msg

        try:
            await self.app(scope, limited_receive, send)
        except _TooLarge:
            await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps({"error": {"type": "request_too_large", "field": "body", "constraint": "max_bytes",
                                     "message": f"the request body is larger than {self.max_bytes} bytes",
                                     "limit": self.max_bytes}}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass


class _JSONRefused(HTTPException):
    """A JSON body :func:`reckon._json.loads` refused (FastAPI turns any other exception
    from ``Request.json`` into a bare 400); answered 422 ``invalid_input`` in the error envelope."""

    def __init__(self, exc: InvalidJSON) -> None:
        self.refusal = exc
        super().__init__(status_code=422, detail=str(exc))


class _StrictJSONRequest(Request):
    """A request whose JSON body is parsed by :func:`reckon._json.loads` (too deep, duplicate
    keys, NaN, a non-finite number, an over-long integer, not UTF-8 or a lone surrogate is a
    422 naming it)."""

    exact = False

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                self._json = strict_json.loads(await self.body(), what="body", exact=self.exact)
            except InvalidJSON as exc:
                raise _JSONRefused(exc) from None
        return self._json


class _ExactJSONRequest(_StrictJSONRequest):
    """A strict JSON request whose body keeps every digit of a number with a fraction or
    exponent (``decimal.Decimal``, not a binary float): ``"amount": 12345678901234.123456789012345678``
    reaches the memory's xsd:decimal exactly."""

    exact = True


class _ExactJSONRoute(APIRoute):
    """The routes of :func:`create_app`; all parse JSON bodies strictly, and those that write
    memories (``/memories``) with :class:`_ExactJSONRequest` (a note's value stays plain JSON).
    A query parameter the route does not declare (``?budget=10`` for ``budget_chars``) is
    refused with 422 naming it and the ones the route takes, as an unknown JSON field is
    (:func:`_refuse_unknown_query`: a tenant's routes after the token is checked, so a
    foreign token still meets 403 first); the SPARQL routes check theirs themselves
    (SPARQL 1.1 Protocol §2.1)."""

    query_names: list[str] | None = None

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        def names(d: Any) -> set[str]:  # the query parameters of a route and its dependencies
            return {p.alias for p in d.query_params}.union(*(names(sub) for sub in d.dependencies))

        handler = super().get_route_handler()
        cls = _ExactJSONRequest if "/memories" in self.path else _StrictJSONRequest
        self.query_names = None if self.path.endswith("/sparql") else sorted(names(self.dependant))
        early = "{tenant_id}" not in self.path

        async def strict(request: Request) -> Response:
            if early:
                _refuse_unknown_query(request)
            return await handler(cls(request.scope, request.receive, request._send))  # noqa: SLF001

        return strict


def _refuse_unknown_query(request: Request) -> None:
    """:raises ApiError: 422 when the request names a query parameter its route
    (:class:`_ExactJSONRoute`) does not take."""
    taken = getattr(request.scope.get("route"), "query_names", None)
    if taken is None:
        return
    unknown = sorted(set(request.query_params) - set(taken))
    if unknown:
        raise ApiError(422, "invalid_input", f"unknown query parameter {unknown[0]!r}; {request.url.path} takes "
                       + (", ".join(taken) if taken else "none"), field=unknown[0], constraint="unknown_parameter")


def create_app(
    engine: Any,
    *,
    tokens: TokenStore | None = None,
    title: str = "Reckon",
    rate_limit: float | None = 20.0,
    rate_burst: int = 40,
    max_body_bytes: int = 4 << 20,
    sparql_concurrency: int | None = None,
    wall_clock: bool = True,
) -> FastAPI:
    """The FastAPI application serving ``engine``'s tenants.

    :param engine: a :class:`reckon.api.Engine`, or its data directory (one Engine per
        process: pass the one you have). Its ``query_limits`` govern the SPARQL
        endpoint (size 413, depth 400, deadline 503, result size 413).
    :param tokens: the token store (default: over the engine's data directory).
    :param rate_limit: requests per second per API token (``None``: no limit); over it
        429 with ``Retry-After`` (see :class:`RateLimiter`).
    :param rate_burst: requests a token may send at once.
    :param max_body_bytes: largest request body, bytes (413 beyond).
    :param sparql_concurrency: SPARQL queries one token may have running at once; more
        wait (429 after the query timeout), so one client cannot hold every query worker
        (default: one less than the engine's query workers, at least 1).
    :param wall_clock: before each tenant request, move the tenant's in-graph clock
        forward to the wall clock when it is more than a minute behind
        (``Tenant.advance_clock``); ``False`` leaves the clock to ``tick`` (replays).
    """
    if isinstance(engine, (str, Path)):
        from reckon.api import Engine

        engine = Engine(engine)
    tokens = tokens or TokenStore(engine.data_dir)
    writes = WriteTimes()
    limiter = RateLimiter(rate_limit, rate_burst)
    if sparql_concurrency is None:
        workers = getattr(getattr(engine, "query_limits", None), "workers", 2)
        sparql_concurrency = max(1, workers - 1)
    running: dict[str, int] = {}
    running_cond = threading.Condition()
    app = FastAPI(
        title=title,
        version=_version(),
        description="Typed, rule-derived memory for AI agents: per-tenant SPARQL 1.1 query endpoint (read-only) "
                    "and REST routes for memories, search and the context bundle.",
    )
    app.router.route_class = _ExactJSONRoute  # before the routes below are declared
    app.state.engine = engine
    app.state.tokens = tokens
    app.state.writes = writes
    app.state.limiter = limiter
    app.add_middleware(_BodyLimit, max_bytes=max_body_bytes)

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(status_code=exc.status, content=exc.body, headers=exc.headers)

    @app.exception_handler(ReckonError)
    async def _reckon_error(_: Request, exc: ReckonError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errs = [_validation_item(e) for e in exc.errors()] or [
            {"field": "body", "constraint": "invalid", "message": "invalid request"}]
        return JSONResponse(status_code=422, content={"error": {
            "type": "invalid_input", "message": "; ".join(f"{e['field']}: {e['message']}" for e in errs),
            "field": errs[0]["field"], "constraint": errs[0]["constraint"], "errors": errs}})

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        """Routing errors (404 no route, 405 method not allowed, ...) in the error envelope."""
        if isinstance(exc, _JSONRefused):
            r = exc.refusal
            item = {"field": r.field or "body", "constraint": r.constraint, "message": str(r)}
            return JSONResponse(status_code=422, content={"error": {
                "type": "invalid_input", "message": str(r), "field": item["field"],
                "constraint": r.constraint, "errors": [item]}})
        type_, message = _HTTP_ERRORS.get(exc.status_code, ("http_error", str(exc.detail)))
        field, constraint = None, None
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # Starlette's Allow names only the first route of the path; list every route's methods
            from starlette.routing import Match

            methods = {m for route in request.app.routes for m in (getattr(route, "methods", None) or ())
                       if route.matches({**request.scope, "method": m})[0] == Match.FULL}
            allow = ", ".join(sorted(methods)) or headers.get("Allow") or headers.get("allow") or ""
            headers.pop("allow", None)
            if allow:
                headers["Allow"] = allow
            message = f"{request.method} is not allowed on {request.url.path}" + (f" (allowed: {allow})" if allow else "")
            field, constraint = "method", "allowed_methods"
        elif exc.status_code == 404:
            message = f"no route {request.method} {request.url.path} (the API is described at /openapi.json)"
            field, constraint = "path", "route"
        return JSONResponse(status_code=exc.status_code, headers=headers, content={"error": {
            "type": type_, "message": message, "field": field, "constraint": constraint}})

    @app.middleware("http")
    async def _json_bodies(request: Request, call_next: Any) -> Any:
        """415 for a body that is not JSON on the JSON routes (the SPARQL endpoint and
        the inspector's forms take other media types and check them themselves)."""
        path = request.url.path
        if (request.method in ("POST", "PUT", "PATCH") and path.startswith("/tenants/")
                and not path.endswith("/sparql")):
            ctype = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
            has_body = request.headers.get("content-length", "0") not in ("", "0") or \
                "transfer-encoding" in request.headers
            if has_body and ctype != "application/json" and not ctype.endswith("+json"):
                return JSONResponse(status_code=415, content={"error": {
                    "type": "unsupported_media_type",
                    "message": f"send the request body as application/json (got {ctype or 'no content type'})",
                    "field": "content-type", "constraint": "media_type"}})
        return await call_next(request)

    def _authenticate(tenant_id: str, creds: HTTPAuthorizationCredentials | None) -> TokenRecord:
        if creds is None or creds.scheme.lower() != "bearer" or not creds.credentials:
            raise ApiError(401, "unauthenticated", "an API token is required: Authorization: Bearer <token>",
                           headers={"WWW-Authenticate": "Bearer"})
        try:
            key = ".".join(parse_token(creds.credentials)[:2])
        except TokenError as exc:
            raise ApiError(401, "unauthenticated", str(exc), headers={"WWW-Authenticate": "Bearer"}) from None
        wait = limiter.take(key)
        if wait > 0:
            after = max(1, math.ceil(wait))  # Retry-After takes whole seconds (RFC 9110 §10.2.3)
            raise ApiError(429, "rate_limited", f"too many requests with this token; retry in {after} s",
                           headers={"Retry-After": str(after)}, constraint="rate_limit")
        try:
            return tokens.verify(tenant_id, creds.credentials)
        except TokenForbidden as exc:
            raise ApiError(403, "forbidden", str(exc)) from None
        except TokenError as exc:
            limiter.penalize(key)
            raise ApiError(401, "unauthenticated", str(exc), headers={"WWW-Authenticate": "Bearer"}) from None

    class Ctx:
        def __init__(self, tenant: Any, record: TokenRecord) -> None:
            self.tenant = tenant
            self.record = record
            self.principal = record.principal()

    def ctx(request: Request, tenant_id: str, creds: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Ctx:
        record = _authenticate(tenant_id, creds)
        _refuse_unknown_query(request)
        t = engine.tenant(tenant_id)
        if wall_clock:
            t.advance_clock()  # the server serves the present: expiry against the wall clock
        return Ctx(t, record)

    # ------------------------------------------------------------------ SPARQL
    def _sparql_checks(c: Ctx, params: dict[str, list[str]]) -> None:
        if not c.record.sparql:
            raise ApiError(403, "forbidden", "this token has no SPARQL grant: the endpoint reads every memory of "
                           "the tenant (create the token with --sparql, or use an operator token)")
        if "update" in params:
            raise ApiError(400, "read_only_query", "SPARQL Update is refused: this endpoint is read-only "
                           "(the update= parameter of the SPARQL 1.1 Protocol is not served)",
                           field="update", constraint="read_only")
        for p in ("default-graph-uri", "named-graph-uri", "using-graph-uri", "using-named-graph-uri"):
            if p in params:
                raise ApiError(400, "invalid_input", f"{p} is not supported: the dataset is fixed (default graph = "
                               "union of the tenant's graphs; use GRAPH <urn:reckon:graph:...>)",
                               field=p, constraint="unsupported")

    def _sparql(c: Ctx, query: str, accept: str | None) -> Response:
        key = c.record.id
        wait = getattr(getattr(engine, "query_limits", None), "timeout", None) or 10.0
        with running_cond:
            if not running_cond.wait_for(lambda: running.get(key, 0) < sparql_concurrency, timeout=wait):
                raise ApiError(429, "rate_limited", f"this token kept {sparql_concurrency} SPARQL queries running "
                               f"for {wait} s; wait for one to finish", headers={"Retry-After": "1"},
                               constraint="concurrency")
            running[key] = running.get(key, 0) + 1
        try:
            return sparql_response(c.tenant, query, accept)
        finally:
            with running_cond:
                running[key] -= 1
                if not running[key]:
                    del running[key]
                running_cond.notify_all()

    def _one_query(params: dict[str, list[str]]) -> str:
        qs = params.get("query", [])
        if len(qs) != 1:
            raise ApiError(400, "invalid_input", "exactly one query parameter is required", field="query",
                           constraint="required" if not qs else "maxCount")
        return qs[0]

    _sparql_doc: dict[int | str, dict[str, Any]] = {
        200: {"description": "Query results (format by Accept)", "content": {
            **{mt: {} for mt in list(RESULT_TYPES)[:4]}, **{mt: {} for mt in list(GRAPH_TYPES)[:2]}}},
        400: {"model": ErrorBody, "description": "An update, SERVICE, or a query that does not parse."},
        406: {"model": ErrorBody, "description": "No acceptable result format."},
        **_ERRORS,
    }

    @app.get("/tenants/{tenant_id}/sparql", summary="SPARQL 1.1 query (GET)", tags=["sparql"],
             responses=_sparql_doc, response_class=Response)
    def sparql_get(request: Request, query: str | None = Query(None, description="The SPARQL query."),
                   c: Ctx = Depends(ctx)) -> Response:
        params = parse_qs(request.url.query, keep_blank_values=True)
        _sparql_checks(c, params)
        return _sparql(c, _one_query(params), request.headers.get("accept"))

    @app.post("/tenants/{tenant_id}/sparql", summary="SPARQL 1.1 query (POST)", tags=["sparql"],
              responses=_sparql_doc, response_class=Response,
              openapi_extra={"requestBody": {"content": {
                  "application/sparql-query": {"schema": {"type": "string"}},
                  "application/x-www-form-urlencoded": {"schema": {
                      "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}}})
    async def sparql_post(request: Request, c: Ctx = Depends(ctx)) -> Response:
        ctype = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        try:
            body = (await request.body()).decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError(400, "invalid_input", "the request body is not UTF-8", field="body",
                           constraint="encoding") from None
        url_params = parse_qs(request.url.query, keep_blank_values=True)
        if ctype == "application/sparql-update":
            _sparql_checks(c, {"update": [""]})
        if ctype == "application/sparql-query":
            _sparql_checks(c, url_params)
            query = body
        elif ctype == "application/x-www-form-urlencoded":
            form = parse_qs(body, keep_blank_values=True)
            _sparql_checks(c, {**url_params, **form})
            query = _one_query(form)
        else:
            raise ApiError(415, "unsupported_media_type", "POST a query as application/sparql-query or "
                           "application/x-www-form-urlencoded (query=...)", field="content-type",
                           constraint="media_type")
        accept = request.headers.get("accept")
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(_sparql, c, query, accept)

    # ------------------------------------------------------------------ memories
    @app.post("/tenants/{tenant_id}/memories", summary="Remember a memory", tags=["memories"],
              response_model=Memory, status_code=201,
              responses={409: {"model": ErrorBody, "description": "conflict_pending: confirm with "
                               "conflict_resolution and conflict_id"},
                         422: {"model": ErrorBody, "description": "Invalid field or shape violation."}, **_ERRORS})
    def remember(body: RememberBody, c: Ctx = Depends(ctx)) -> Memory:
        fields = body.model_dump(exclude_none=True)
        with writes.timed(c.tenant, "remember"):
            return c.tenant.remember(principal=c.principal, **fields)  # type: ignore[no-any-return]

    @app.get("/tenants/{tenant_id}/memories/{memory_id}", summary="Get a memory", tags=["memories"],
             response_model=Memory, responses=_ERRORS)
    def get_memory(memory_id: str, c: Ctx = Depends(ctx)) -> Memory:
        m: Memory = c.tenant.get(memory_id, principal=c.principal)
        return m

    @app.patch("/tenants/{tenant_id}/memories/{memory_id}", summary="Update a memory (three-state)",
               tags=["memories"], response_model=Memory,
               responses={422: {"model": ErrorBody, "description": "Invalid field or shape violation."}, **_ERRORS})
    def update_memory(memory_id: str, body: PatchBody, c: Ctx = Depends(ctx)) -> Memory:
        changes = body.model_dump(exclude_unset=True)
        with writes.timed(c.tenant, "update"):
            return c.tenant.update(memory_id, principal=c.principal, **changes)  # type: ignore[no-any-return]

    @app.post("/tenants/{tenant_id}/memories/{memory_id}/supersede", summary="Supersede a memory",
              tags=["memories"], response_model=Memory,
              responses={422: {"model": ErrorBody, "description": "Invalid field or shape violation."}, **_ERRORS})
    def supersede_memory(memory_id: str, body: SupersedeBody, c: Ctx = Depends(ctx)) -> Memory:
        if (body.replacement is None) == (body.new_id is None):
            raise InvalidInput("give exactly one of replacement or new_id", field="replacement")
        new: Any = body.new_id if body.new_id is not None else body.replacement.model_dump(exclude_none=True)  # type: ignore[union-attr]
        with writes.timed(c.tenant, "supersede"):
            return c.tenant.supersede(memory_id, new, principal=c.principal)  # type: ignore[no-any-return]

    @app.get("/tenants/{tenant_id}/memories", summary="List memories visible to the token", tags=["memories"],
             response_model=list[Memory], responses=_ERRORS)
    def list_memories(
        kind: Kind | None = Query(None), scope: Scope | None = Query(None),
        subclass: str | None = Query(None, description="A memory class (instances of subclasses match too)."),
        active_only: bool = Query(True), c: Ctx = Depends(ctx),
    ) -> list[Memory]:
        ms = c.tenant.memories(active_only=active_only, kind=kind, scope=scope, subclass=subclass)
        who = c.tenant.principal_of(c.principal)  # the graph's project / conversation memberships
        return [m for m in ms if _visible(m, who)]

    @app.get("/tenants/{tenant_id}/memories/{memory_id}/history", summary="Supersession chain of a memory",
             tags=["memories"], response_model=list[HistoryEntry], responses=_ERRORS)
    def memory_history(memory_id: str, c: Ctx = Depends(ctx)) -> list[HistoryEntry]:
        h: list[HistoryEntry] = c.tenant.history(memory_id, principal=c.principal)
        return h

    @app.post("/tenants/{tenant_id}/memories/{memory_id}/restore", summary="Restore a superseded memory "
              "(operator)", tags=["memories"], response_model=Memory,
              responses={409: {"model": ErrorBody, "description": "restore_refused: its replacement is live."},
                         **_ERRORS})
    def restore_memory(memory_id: str, c: Ctx = Depends(ctx)) -> Memory:
        with writes.timed(c.tenant, "restore"):
            return c.tenant.restore(memory_id, principal=c.principal)  # type: ignore[no-any-return]

    @app.delete("/tenants/{tenant_id}/memories/{memory_id}", summary="Delete a memory (operator)",
                tags=["memories"], status_code=204, response_class=Response, responses=_ERRORS)
    def delete_memory(memory_id: str, c: Ctx = Depends(ctx)) -> Response:
        with writes.timed(c.tenant, "delete"):
            c.tenant.delete(memory_id, principal=c.principal)
        return Response(status_code=204)

    # ------------------------------------------------------------------ recall
    @app.get("/tenants/{tenant_id}/search", summary="Search memories (hybrid: BM25 + embeddings)",
             tags=["recall"], response_model=SearchOut, responses=_ERRORS)
    def search(
        q: str = Query(..., min_length=1, max_length=MAX_SEARCH_CHARS, description="What to look for."),
        k: int = Query(10, ge=1, le=MAX_SEARCH_K),
        kind: list[Kind] | None = Query(None, description="Restrict to kinds (repeat)."),
        scope: list[Scope] | None = Query(None, description="Restrict to scopes (repeat)."),
        subclass: list[str] | None = Query(None, description="Restrict to memory classes (repeat)."),
        importance: list[int] | None = Query(None, description="Tiers to search (repeat); default 2 and 3."),
        expand: TLiteral["graph"] | None = Query(None, description="graph: add the hits' depth-1 graph neighbours "
                                                                "(marked expanded_from / via)."),
        c: Ctx = Depends(ctx),
    ) -> SearchOut:
        opts: dict[str, Any] = {"k": k, "expand": expand}
        if kind:
            opts["kinds"] = kind
        if scope:
            opts["scopes"] = scope
        if subclass:
            opts["subclasses"] = subclass
        if importance:
            opts["importance"] = sorted(set(importance))
        hits = c.tenant.search(q, principal=c.principal, **opts)
        return SearchOut(query=q, hits=[SearchHitOut(memory=h.memory, score=h.score, document=h.document,
                                                       citation=h.citation, expanded_from=h.expanded_from,
                                                       via=h.via) for h in hits])

    @app.get("/tenants/{tenant_id}/bundle", summary="The context bundle of the token's person", tags=["recall"],
             response_model=ContextBundle,
             responses={200: {"content": {"text/plain": {}}}, **_ERRORS})
    def bundle(
        request: Request,
        conversation: str = Query("", max_length=MAX_CONVERSATION_CHARS,
                                  description="Recent conversation text (orders items inside blocks)."),
        budget_chars: int | None = Query(None, ge=500, le=200_000,
                                         description="Maximum length of the text (characters; default 6000)."),
        budget_tokens: int | None = Query(None, ge=100, le=200_000,
                                          description="Maximum length in tokens instead of characters."),
        project: str | None = Query(None, min_length=1, max_length=256,
                                    description="The project of the turn (adds its project-scope memories)."),
        conversation_id: str | None = Query(None, min_length=1, max_length=256,
                                            description="The conversation of the turn (adds its conversation memories; "
                                                        "without a conversation, ranks by its recorded turns)."),
        c: Ctx = Depends(ctx),
    ) -> Any:
        b = c.tenant.context(c.principal, conversation=conversation, budget_chars=budget_chars,
                             budget_tokens=budget_tokens, project=project, conversation_id=conversation_id)
        if negotiate(request.headers.get("accept"), ["application/json", "text/plain"]) == "text/plain":
            return PlainTextResponse(b.render())
        return b

    @app.get("/tenants/{tenant_id}/tools", summary="LLM tool definitions of the tenant", tags=["recall"],
             responses=_ERRORS)
    def tools(format: TLiteral["openai", "anthropic"] = Query("openai"), c: Ctx = Depends(ctx)) -> Any:
        return c.tenant.tool_definitions(format=format)

    @app.post("/tenants/{tenant_id}/tools/{name}", summary="Call an LLM tool as the token's person",
              tags=["recall"], responses=_ERRORS)
    def call_tool(name: str, arguments: dict[str, Any], c: Ctx = Depends(ctx)) -> dict[str, Any]:
        """Run one tool call through ``Tenant.handle_tool_call``: always 200 with
        ``{"ok": true, ...}`` or ``{"ok": false, "error": {type, field, constraint,
        message}}`` -- the tool-call protocol, a result the model can correct."""
        with writes.timed(c.tenant, f"tool:{name}") if name in ("remember", "supersede") else _nothing():
            return c.tenant.handle_tool_call(name, arguments, c.principal)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ transcripts
    @app.post("/tenants/{tenant_id}/turns", summary="Record conversation turns (post-turn persistence)",
              tags=["transcripts"], status_code=201, responses=_ERRORS)
    def record_turns(body: dict[str, Any], c: Ctx = Depends(ctx)) -> dict[str, Any]:
        """Body: one turn ``{"conversation", "text", "role"?, "speaker"?, "at"?, "order"?,
        "caption"?, "external_id"?}`` or ``{"turns": [...]}``. All or nothing: a bad
        turn is a 422 naming ``turns[i]`` and nothing is written. Returns the turns."""
        turns = body.get("turns") if isinstance(body.get("turns"), list) else [body]
        with writes.timed(c.tenant, "record_turns"):
            out = c.tenant.record_turns(turns, principal=c.principal)
        return {"turns": [json.loads(t.model_dump_json()) for t in out]}

    @app.get("/tenants/{tenant_id}/conversations", summary="Conversations visible to the token",
             tags=["transcripts"], responses=_ERRORS)
    def list_conversations(c: Ctx = Depends(ctx)) -> list[dict[str, Any]]:
        out = []
        for conv in c.tenant.conversations():
            if c.principal.is_operator or c.principal.person in conv.participants:
                out.append(json.loads(conv.model_dump_json()))
        return out

    @app.get("/tenants/{tenant_id}/conversations/{conversation}/turns", summary="Turns of a conversation",
             tags=["transcripts"], responses=_ERRORS)
    def conversation_turns(conversation: str, after: int = Query(-1, ge=-1), c: Ctx = Depends(ctx)) -> Any:
        conv = c.tenant.transcripts.conversation(conversation)
        if not (c.principal.is_operator or c.principal.person in conv.participants):
            raise ApiError(404, "unknown_memory", f"no conversation {conversation!r} visible to this token")
        return [json.loads(t.model_dump_json()) for t in c.tenant.turns(conversation, after=after)]

    @app.get("/tenants/{tenant_id}/turns/search", summary="Search what was said", tags=["transcripts"],
             responses=_ERRORS)
    def search_turns(q: str = Query(..., min_length=1), k: int = Query(10, ge=1, le=100),
                     conversation: list[str] | None = Query(None), c: Ctx = Depends(ctx)) -> Any:
        hits = c.tenant.search_turns(q, principal=c.principal, k=k, conversations=conversation)
        return {"query": q, "hits": [{"score": h.score, "turn": json.loads(h.turn.model_dump_json())} for h in hits]}

    # ------------------------------------------------------------------ metrics
    def _metrics_response(request: Request, tenant: Any) -> Response:
        m = tenant_metrics(tenant, writes)
        if negotiate(request.headers.get("accept"), ["text/plain", "application/json"]) == "application/json":
            return JSONResponse(m.model_dump(mode="json"))
        return PlainTextResponse(prometheus_text([m]), media_type="text/plain; version=0.0.4; charset=utf-8")

    _metrics_doc = {200: {"model": MetricsOut, "content": {"text/plain": {}}}, **_ERRORS}

    @app.get("/tenants/{tenant_id}/metrics", summary="Metrics of one tenant (Prometheus text or JSON)",
             tags=["metrics"], responses=_metrics_doc, response_class=Response)
    def metrics_of_tenant(request: Request, c: Ctx = Depends(ctx)) -> Response:
        return _metrics_response(request, c.tenant)

    @app.get("/metrics", summary="Metrics of the token's tenant (Prometheus text or JSON)", tags=["metrics"],
             responses=_metrics_doc, response_class=Response)
    def metrics(request: Request, creds: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Response:
        if creds is None:
            raise ApiError(401, "unauthenticated", "an API token is required: Authorization: Bearer <token>",
                           headers={"WWW-Authenticate": "Bearer"})
        try:
            tenant_id = tokens.tenant_of(creds.credentials)
        except TokenError as exc:
            raise ApiError(401, "unauthenticated", str(exc), headers={"WWW-Authenticate": "Bearer"}) from None
        _authenticate(tenant_id, creds)
        return _metrics_response(request, engine.tenant(tenant_id))

    @app.get("/healthz", summary="Liveness", tags=["metrics"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    from reckon.server._neighbours import register as register_neighbours

    register_neighbours(app, ctx, _ERRORS, ApiError)  # notes (reckon.server._neighbours)
    from reckon.server._lifecycle import register as register_lifecycle

    register_lifecycle(app, ctx, _ERRORS, ApiError)  # maintenance, feedback, documents
    from reckon.server.inspector import mount as mount_inspector

    mount_inspector(app, engine, tokens)  # the browser pages: /, /ui/... (reckon.server.inspector)
    return app


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("reckon")
    except Exception:  # noqa: BLE001 - not installed (PYTHONPATH=engine)
        return "0"
