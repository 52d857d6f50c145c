"""A tenant's quads on an existing SPARQL server (SPARQL 1.1 Protocol over ``httpx``).

Sources: SPARQL 1.1 Protocol (https://www.w3.org/TR/sparql11-protocol/, sections 2.1
query and 2.2 update operations, both as ``application/x-www-form-urlencoded`` POSTs),
SPARQL 1.1 Update (https://www.w3.org/TR/sparql11-update/, section 3.1.3
``DELETE/INSERT``: the WHERE clause is evaluated once, before any template is applied,
and the operation is atomic), SPARQL 1.1 Query Results JSON Format.

Layout: **one set of named graphs per tenant**. The logical graphs of
:mod:`reckon.store.graphs` (``urn:reckon:graph:memories`` ...) are stored as
``<graph_prefix><tenant id>:graph:<name>`` (default prefix ``urn:reckon:tenant:``),
e.g. ``urn:reckon:tenant:acme:graph:memories``. Only :class:`RemoteBackend` builds
these IRIs, only from a validated tenant id (``[a-z0-9][a-z0-9_-]{0,62}``: no ``:``,
so no id is a prefix of another's graph) and only for the seven logical graphs: every
request a tenant's backend sends names that tenant's graphs and no other (tested with
crafted ids and graph names in ``tests/store/test_remote.py``). User SPARQL never goes
to the server: it is checked by :mod:`reckon.store.query_guard` and evaluated on the
process's mirror (an exact copy of the tenant's graphs) in the sandboxed query worker,
exactly as on the embedded backend -- so ``SERVICE``, ``FROM`` of private graphs and
``GRAPH ?g`` over other tenants' graphs cannot reach the server at all.

Writes: the private META graph holds ``<urn:reckon:store> <urn:reckon:generation> n``,
the incarnation, the **write lease** and the last commit records. Every commit is ONE
SPARQL Update operation ``DELETE { changes } INSERT { changes, gen n+1, commit record }
WHERE { gen n . lease holder = this node }``: it applies whole or not at all, and only
when no other node wrote since (compare-and-set on the generation) and this node still
holds the lease (fencing). A commit record ``<urn:reckon:commit:N> <urn:reckon:commitToken>
"random"`` makes a retried commit idempotent: after a timeout or a dropped connection
the backend reads the generation and the token back -- its token at ``n+1`` means the
first attempt landed (nothing is sent twice), generation ``n`` with its lease means it
did not (it is sent again: the WHERE clause keeps a late duplicate from applying twice),
anything else is a :class:`~reckon.store.backends.WriteConflict` with nothing written.
The record also carries the commit's update text (up to :data:`JOURNAL_TEXT_MAX`
characters), which is the journal other nodes replay.

Requests per write (one transaction of :class:`~reckon.store.TenantStore`, measured with
:attr:`Endpoint.requests`): **four** -- (1) take the lease (one request of three
conditional operations), (2) read it back together with the generation and incarnation
(this read is also the transaction's starting generation: nobody else can commit while
the lease is held), (3) the commit, with the lease release as a second operation of the
same request when the store gives the writer up after this transaction (its lock does
not linger), (4) read the generation and the commit token back. A full load sends its
six per-graph SELECTs side by side (:meth:`Endpoint.select_many`).

The lease (``<urn:reckon:store> <urn:reckon:leaseHolder> "node"`` and
``<urn:reckon:leaseUntil>`` seconds since the epoch, by the writer's clock) is taken by
one conditional update (free, expired, or already ours) and read back; a node that dies
holding it blocks writers for at most ``lease_ttl`` seconds (default 10); a node that
dies mid-commit either committed (acknowledged or not) or wrote nothing. Nodes' clocks
must agree to well within ``lease_ttl`` (NTP); correctness does not rest on the clock:
the generation compare-and-set refuses a commit based on a stale state whatever the
lease says.

Server differences handled (measured on Oxigraph server 0.5.13 and Virtuoso Open Source
7.2.5):

* **Update size.** Virtuoso compiles an update to SQL and refuses templates above about
  500 triples ("SP031: The length of generated SQL text has exceeded 10000 lines") and
  ``INSERT DATA`` above about 5,000 ("SP030 ... memory exhausted"). A change larger than
  ``max_update_quads`` (Virtuoso: 400, Oxigraph: unlimited) is *staged*: written in
  chunks into staging graphs ``<prefix><id>:stage:<token>:...`` that no reader looks
  at, then applied by one conditional operation whose templates are ``GRAPH ?g { ?s ?p
  ?o }`` over the staging graphs -- still one atomic operation; the staging graphs are
  dropped after. A node killed between staging and applying leaves unreferenced staging
  graphs (removed by ``tenant delete``); nothing visible changes.
* **Decimal constants in templates.** Virtuoso turns a ``"40000"^^xsd:decimal`` constant
  of a ``DELETE/INSERT`` template into an integer (read back as ``xsd:integer``); the
  backend binds each decimal of a template with ``STRDT`` in the WHERE clause instead
  (``INSERT DATA`` and copies through variables keep the datatype).
* **Literal forms.** Virtuoso returns ``"1"^^xsd:boolean`` for ``true``, ``PT86400S`` for
  ``P1D``, ``1.5`` for ``1.5E0``, and the JSON result type ``typed-literal`` (SPARQL
  1.0). Every term read back is parsed by :func:`_term` (both result types) and put in
  the store's canonical form (:func:`reckon.store.terms.canonical_term`), so the mirror,
  the reasoner and the next delete see the term exactly as the embedded store would.
  Deletes match by value on both servers.
* **Triple terms** (RDF 1.2): Virtuoso's parser refuses ``<<( s p o )>>``; a write
  holding one is refused with :class:`~reckon._errors.StoreError` naming the server, and
  nothing is written. Oxigraph stores them.
* **ASK.** Virtuoso answers ASK with a one-row result set; the backend only sends
  SELECT.
* **Endpoints and auth.** Oxigraph server: ``/query`` and ``/update``, no auth.
  Virtuoso: ``/sparql`` for reads and ``/sparql-auth`` (HTTP digest, a user with
  ``SPARQL_UPDATE``) for writes; ``auth = {"digest": [user, password]}`` in the
  endpoint's configuration (:class:`Endpoint`).
* **Isolation of reads.** Virtuoso's default graph is the union of every graph on the
  server (Oxigraph's is its own default graph); Reckon never relies on either: every
  query it sends names the tenant's graphs with ``GRAPH <...>``.
* **Several operations in one request.** Both servers take ``;``-separated operations
  in one update request (the lease, the commit + release). Reckon does not rely on a
  request being one transaction: every operation is conditional on its own, and after a
  lost answer the release is sent again.
* **Concurrent requests.** Both servers answer the parallel SELECTs of a load on one
  HTTP/1.1 connection pool (at most 8 connections per endpoint); Virtuoso's digest
  authentication is negotiated per connection by ``httpx``.
* **Read isolation.** Virtuoso reads are read-committed, not snapshots; a full load
  (one SELECT per graph) reads the generation before and after and retries when it
  moved. Nothing is visible of a commit before it is committed, so an unchanged
  generation means an unchanged tenant.
"""

from __future__ import annotations

import os
import random
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple

from reckon._errors import StoreError, TenantExists
from reckon.store.backends import BackendGone, BlockWriter, WriteConflict
from reckon.store.graphs import (
    ASSERTED,
    GENERATION,
    INCARNATION,
    INFERRED,
    META,
    PROGRAM,
    STORE_NODE,
)
from reckon.store.ids import validate_tenant_id
from reckon.store.sparql import quads_to_data_block, term_to_sparql
from reckon.store.terms import canonical_term

__all__ = ["Endpoint", "RemoteBackend", "JOURNAL_TEXT_MAX"]

LOGICAL_GRAPHS: tuple[NamedNode, ...] = (*ASSERTED, INFERRED, META, PROGRAM)  # every asserted graph (notes, events ...)
_DATA_GRAPHS = tuple(g for g in LOGICAL_GRAPHS if g != META)
_XSD = "http://www.w3.org/2001/XMLSchema#"
_XSD_INTEGER = NamedNode(_XSD + "integer")
_XSD_DECIMAL = NamedNode(_XSD + "decimal")
LEASE_HOLDER = NamedNode("urn:reckon:leaseHolder")
LEASE_UNTIL = NamedNode("urn:reckon:leaseUntil")
COMMIT_TOKEN = NamedNode("urn:reckon:commitToken")
COMMIT_GEN = NamedNode("urn:reckon:commitGeneration")
COMMIT_TEXT = NamedNode("urn:reckon:commitText")
KEEP_COMMITS = 256
"""Commit records kept in META (older ones are pruned): the journal other nodes replay."""
JOURNAL_TEXT_MAX = 256 * 1024
"""Characters of update text kept in a commit record; a larger commit is not journaled
(a node that missed it loads the tenant in full)."""

_SERVER_DEFAULTS: dict[str, dict[str, Any]] = {
    "oxigraph": {"query_path": "/query", "update_path": "/update", "max_update_quads": 0, "triple_terms": True},
    "virtuoso": {"query_path": "/sparql", "update_path": "/sparql-auth", "max_update_quads": 400,
                 "triple_terms": False},
    "generic": {"query_path": "/sparql", "update_path": "/sparql", "max_update_quads": 1000, "triple_terms": False},
}


@dataclass
class Endpoint:
    """One SPARQL server that holds tenants (an entry of the shard map,
    :mod:`reckon.store.shards`).

    :param name: the endpoint's name in the shard map (``[a-z0-9_-]+``).
    :param url: base URL, e.g. ``http://127.0.0.1:7878``; ``query_url`` / ``update_url``
        default to it plus the server kind's paths.
    :param server: ``"oxigraph"``, ``"virtuoso"`` or ``"generic"`` (sets the paths, the
        staging threshold and whether triple terms are stored).
    :param timeout: seconds for one HTTP request (connect, read, write).
    :param headers: extra request headers (e.g. ``Authorization``); ``headers_env`` maps a
        header to an environment variable holding its value (no secret in the file).
    :param auth: ``{"basic": [user, password]}`` or ``{"digest": [user, password]}``.
    :param verify: TLS: ``True`` (system CAs), ``False``, or a CA bundle path.
    :param graph_prefix: prefix of the tenants' graph IRIs.
    :param lease_ttl: seconds a write lease lasts without renewal.
    :param lease_wait: seconds a writer waits for another node's lease.
    :param retries: attempts per request on a transport error (timeouts, resets).
    """

    name: str
    url: str = ""
    server: str = "generic"
    query_url: str = ""
    update_url: str = ""
    timeout: float = 10.0
    headers: dict[str, str] = field(default_factory=dict)
    headers_env: dict[str, str] = field(default_factory=dict)
    auth: dict[str, list[str]] | None = None
    verify: bool | str = True
    graph_prefix: str = "urn:reckon:tenant:"
    lease_ttl: float = 10.0
    lease_wait: float = 30.0
    retries: int = 3
    max_update_quads: int | None = None
    triple_terms: bool | None = None

    def __post_init__(self) -> None:
        import re

        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,62}", self.name or ""):
            raise StoreError(f"endpoint name {self.name!r}: expected [a-z0-9][a-z0-9_-]{{0,62}}")
        if self.server not in _SERVER_DEFAULTS:
            raise StoreError(f"endpoint {self.name!r}: server must be one of {sorted(_SERVER_DEFAULTS)}")
        d = _SERVER_DEFAULTS[self.server]
        base = self.url.rstrip("/")
        self.query_url = self.query_url or (base + d["query_path"] if base else "")
        self.update_url = self.update_url or (base + d["update_path"] if base else "")
        if not self.query_url.startswith(("http://", "https://")) or not self.update_url.startswith(("http://", "https://")):
            raise StoreError(f"endpoint {self.name!r}: url (or query_url and update_url) must be http(s) URLs")
        if self.max_update_quads is None:
            self.max_update_quads = int(d["max_update_quads"])
        if self.triple_terms is None:
            self.triple_terms = bool(d["triple_terms"])
        try:
            NamedNode(self.graph_prefix + "x")
        except ValueError as e:
            raise StoreError(f"endpoint {self.name!r}: graph_prefix is not an IRI prefix: {e}") from e
        if not self.graph_prefix.endswith((":", "/", "#")):
            raise StoreError(f"endpoint {self.name!r}: graph_prefix must end with ':', '/' or '#'")
        self._client: Any = None
        self._pool: Any = None
        self._client_lock = threading.Lock()
        self.requests = 0
        """HTTP requests sent (every attempt; benchmarks count round trips per write)."""

    @classmethod
    def from_dict(cls, name: str, d: Mapping[str, Any]) -> Endpoint:
        """From a shard-map entry (unknown keys refused).

        :raises StoreError: on an unknown key or a bad value.
        """
        allowed = {f for f in cls.__dataclass_fields__ if f != "name"}
        unknown = set(d) - allowed
        if unknown:
            raise StoreError(f"endpoint {name!r}: unknown settings {sorted(unknown)} (known: {sorted(allowed)})")
        try:
            return cls(name=name, **dict(d))
        except TypeError as e:
            raise StoreError(f"endpoint {name!r}: {e}") from e

    def to_dict(self) -> dict[str, Any]:
        """Every setting (the shard map reuses an endpoint's connections while they are equal)."""
        return {f: getattr(self, f) for f in self.__dataclass_fields__}

    def client(self) -> Any:
        """The shared ``httpx.Client`` of this endpoint (connection pool bounded to 8)."""
        with self._client_lock:
            if self._client is None:
                import httpx

                headers = dict(self.headers)
                for h, var in self.headers_env.items():
                    v = os.environ.get(var)
                    if v is None:
                        raise StoreError(f"endpoint {self.name!r}: header {h} needs ${var}, which is not set")
                    headers[h] = v
                auth: Any = None
                if self.auth:
                    if "digest" in self.auth:
                        auth = httpx.DigestAuth(*self.auth["digest"])
                    elif "basic" in self.auth:
                        auth = httpx.BasicAuth(*self.auth["basic"])
                    else:
                        raise StoreError(f"endpoint {self.name!r}: auth must be basic or digest")
                import socket as _socket

                limits = httpx.Limits(max_connections=8, max_keepalive_connections=8)
                # TCP_NODELAY: a request is written as headers then body; with Nagle's
                # algorithm the body waits for the server's delayed ACK (~40 ms per request)
                transport = httpx.HTTPTransport(
                    verify=self.verify, limits=limits, retries=0,
                    socket_options=[(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)],
                )
                self._client = httpx.Client(
                    timeout=self.timeout, headers=headers, auth=auth, transport=transport, trust_env=False,
                )
            return self._client

    def close(self) -> None:
        with self._client_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
            if self._client is not None:
                self._client.close()
                self._client = None

    def backend(self, tenant_id: str, incarnation: str) -> RemoteBackend:
        """The backend of one tenant on this endpoint."""
        return RemoteBackend(self, tenant_id, incarnation)

    # ------------------------------------------------------------------ protocol
    def select(self, text: str) -> list[dict[str, Any]]:
        """Run a SELECT (SPARQL 1.1 Protocol, form-encoded POST); rows as dicts of
        pyoxigraph terms (canonical literals).

        :raises StoreError: on an HTTP error, or after ``retries`` transport errors.
        """
        r = self._post(self.query_url, {"query": text}, {"Accept": "application/sparql-results+json"}, retry=True,
                       get=len(text) < 2000)
        try:
            data = r.json()
            return [{k: _term(v) for k, v in b.items()} for b in data["results"]["bindings"]]
        except (ValueError, KeyError, TypeError) as e:
            raise StoreError(f"endpoint {self.name!r} sent an unreadable SPARQL result: {e}") from e

    def select_many(self, texts: Sequence[str]) -> list[list[dict[str, Any]]]:
        """Several SELECTs at once (each as :meth:`select`), concurrently on the
        connection pool through the endpoint's small thread pool (4 threads, shared by
        every tenant of the endpoint); results in order.

        :raises StoreError: as :meth:`select` (the first failure).
        """
        if len(texts) <= 1:
            return [self.select(t) for t in texts]
        with self._client_lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"reckon-sparql-{self.name}")
            pool = self._pool
        return list(pool.map(self.select, texts))

    def update(self, text: str, *, retry: bool = True) -> None:
        """Run a SPARQL Update. ``retry=False`` for a commit (the caller checks what landed).

        :raises StoreError: on an HTTP error; ``httpx.TransportError`` when ``retry`` is
            False and the request may or may not have arrived.
        """
        self._post(self.update_url, {"update": text}, {}, retry=retry)

    def _post(self, url: str, data: dict[str, str], headers: dict[str, str], *, retry: bool,
              get: bool = False) -> Any:
        """POST ``data`` form-encoded (``get``: a GET with it as the query string, for
        short queries)."""
        import httpx

        attempts = max(1, self.retries) if retry else 1
        delay = 0.05
        for attempt in range(attempts):
            self.requests += 1
            try:
                if get:
                    r = self.client().get(url, params=data, headers=headers)
                else:
                    r = self.client().post(url, data=data, headers=headers)
            except httpx.TransportError as e:
                if not retry:
                    raise
                if attempt + 1 >= attempts:
                    raise StoreError(f"SPARQL endpoint {self.name!r} ({url}) unreachable: {type(e).__name__}: {e}") from e
                time.sleep(delay)
                delay *= 4
                continue
            if r.status_code >= 400:
                body = r.text[:300].replace("\n", " ")
                raise StoreError(f"SPARQL endpoint {self.name!r} answered {r.status_code}: {body}")
            return r
        raise AssertionError("unreachable")  # pragma: no cover


def _term(v: Mapping[str, Any]) -> Any:
    """A SPARQL JSON results term (``uri``, ``literal``, ``typed-literal``, ``bnode``,
    ``triple``) as a pyoxigraph term, literals in the store's canonical form."""
    t = v.get("type")
    if t == "uri":
        return NamedNode(v["value"])
    if t in ("literal", "typed-literal"):
        lang = v.get("xml:lang")
        if lang:
            return Literal(v["value"], language=lang)
        dt = v.get("datatype")
        if dt and dt != _XSD + "string":
            return canonical_term(Literal(v["value"], datatype=NamedNode(dt)))
        return Literal(v["value"])
    if t == "bnode":
        return BlankNode(str(v["value"]).replace("nodeID://", "").replace("_:", "") or "b")
    if t == "triple":
        val = v["value"]
        return Triple(_term(val["subject"]), _term(val["predicate"]), _term(val["object"]))
    raise ValueError(f"unknown SPARQL JSON term type {t!r}")


_DECIMAL_CONST = re.compile(r'(?<!\\)"([0-9.+-]+)"\^\^<http://www\.w3\.org/2001/XMLSchema#decimal>')


def _decimals_as_variables(*blocks: str) -> tuple[str, ...]:
    """Virtuoso compiles a ``"40000"^^xsd:decimal`` constant of an update *template* to an
    SQL integer (stored and read back as ``xsd:integer``, so a SHACL ``sh:datatype
    xsd:decimal`` fails on the next node); a value made by ``STRDT`` in the WHERE clause
    keeps its datatype. Each decimal constant of the templates becomes a variable bound
    that way; returns the rewritten blocks and the ``BIND`` clauses."""
    names: dict[str, str] = {}

    def var(m: re.Match[str]) -> str:
        return names.setdefault(m.group(1), f"?rkdec{len(names)}")

    out = tuple(_DECIMAL_CONST.sub(var, b) for b in blocks)
    binds = " ".join(f'BIND(STRDT("{lex}", <{_XSD}decimal>) AS {v})' for lex, v in names.items())
    return (*out, binds)


def _int(x: Any) -> int:
    return int(str(x.value))


def _dec(t: float) -> Literal:
    return Literal(f"{t:.3f}", datatype=_XSD_DECIMAL)


class RemoteBackend:
    """One tenant's graphs on an :class:`Endpoint` (see the module docstring).

    :raises InvalidTenantId: when ``tenant_id`` is not a valid tenant id.
    """

    kind = "sparql"

    def __init__(self, endpoint: Endpoint, tenant_id: str, incarnation: str) -> None:
        self.endpoint = endpoint
        self.tenant_id = validate_tenant_id(tenant_id)
        self.incarnation = incarnation
        base = f"{endpoint.graph_prefix}{self.tenant_id}:"
        self._base = base
        self._map = {g: NamedNode(base + "graph:" + g.value.rsplit(":", 1)[1]) for g in LOGICAL_GRAPHS}
        self._unmap = {v: k for k, v in self._map.items()}
        self.meta = self._map[META]
        self.node = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._holding = False
        self._taken: tuple[int, str | None] | None = None  # (gen, inc) read back when the lease was taken
        self.lease_wait: float | None = None  # set by TenantStore from its lock timeout
        self.commits = 0

    # ------------------------------------------------------------------ graphs
    def graph(self, logical: NamedNode) -> NamedNode:
        """The server graph of a logical graph of this tenant.

        :raises StoreError: for anything but the seven logical graphs.
        """
        try:
            return self._map[logical]
        except KeyError:
            raise StoreError(f"{logical} is not a graph of a Reckon tenant") from None

    def graphs(self) -> list[NamedNode]:
        """The server graphs of this tenant (data graphs and META)."""
        return list(self._map.values())

    def _remote(self, quads: Iterable[Quad]) -> list[Quad]:
        out = []
        for q in quads:
            if not self.endpoint.triple_terms and (isinstance(q.subject, Triple) or isinstance(q.object, Triple)):
                raise StoreError(
                    f"the SPARQL server of endpoint {self.endpoint.name!r} ({self.endpoint.server}) cannot store "
                    f"triple terms (RDF 1.2); nothing was written: {q}"
                )
            out.append(Quad(q.subject, q.predicate, q.object, self.graph(q.graph_name)))  # type: ignore[arg-type]
        return out

    # ------------------------------------------------------------------ head
    def _state(self) -> tuple[int | None, str | None, set[str]]:
        m, s = term_to_sparql(self.meta), term_to_sparql(STORE_NODE)
        rows = self.endpoint.select(
            f"SELECT ?g ?inc ?h WHERE {{ GRAPH {m} {{ {s} {term_to_sparql(GENERATION)} ?g "
            f"OPTIONAL {{ {s} {term_to_sparql(INCARNATION)} ?inc }} "
            f"OPTIONAL {{ {s} {term_to_sparql(LEASE_HOLDER)} ?h }} }} }}"
        )
        if not rows:
            return None, None, set()
        gens = {_int(r["g"]) for r in rows}
        if len(gens) != 1:
            raise StoreError(f"tenant {self.tenant_id!r} on {self.endpoint.name!r} has {len(gens)} generation counters")
        inc = next((str(r["inc"].value) for r in rows if "inc" in r), None)
        holders = {str(r["h"].value) for r in rows if "h" in r}
        return gens.pop(), inc, holders

    def _check(self, gen: int | None, inc: str | None) -> int:
        if gen is None:
            raise BackendGone(f"tenant {self.tenant_id!r} is no longer on endpoint {self.endpoint.name!r}")
        if self.incarnation != "legacy" and inc is not None and inc != self.incarnation:
            raise BackendGone(f"tenant {self.tenant_id!r} on {self.endpoint.name!r} is another incarnation")
        return gen

    def exists(self) -> bool:
        return self._state()[0] is not None

    def head(self, *, writer: bool) -> tuple[int, str | None]:
        if writer and self._holding and self._taken is not None:
            # read with the lease, one request ago: nobody else can have committed since
            taken, self._taken = self._taken, None
            return taken
        gen, inc, _ = self._state()
        return self._check(gen, inc), inc

    def hint(self) -> int | None:
        gen, inc, _ = self._state()
        return self._check(gen, inc)

    def load(self, *, writer: bool) -> tuple[int, str | None, list[Quad]]:
        for _ in range(20):
            before = self.hint()
            quads = []
            # one query per graph (narrower rows, no server-side union), sent side by side
            # on the endpoint's connection pool: one round trip of wall time, not six
            texts = [f"SELECT ?s ?p ?o WHERE {{ GRAPH {term_to_sparql(self._map[g])} {{ ?s ?p ?o }} }}"
                     for g in _DATA_GRAPHS]
            for g, rows in zip(_DATA_GRAPHS, self.endpoint.select_many(texts), strict=True):
                quads += [Quad(r["s"], r["p"], r["o"], g) for r in rows]
            gen, inc, _ = self._state()
            after = self._check(gen, inc)
            if before != after:
                continue
            quads.append(Quad(STORE_NODE, GENERATION, Literal(str(after), datatype=_XSD_INTEGER), META))
            if inc is not None:
                quads.append(Quad(STORE_NODE, INCARNATION, Literal(inc), META))
            return after, inc, quads
        raise StoreError(f"tenant {self.tenant_id!r}: the store kept changing while it was read; try again")

    # ------------------------------------------------------------------ lease
    def open_writer(self) -> bool:
        if self._holding:
            return False
        ep = self.endpoint
        m, s = term_to_sparql(self.meta), term_to_sparql(STORE_NODE)
        me = term_to_sparql(Literal(self.node))
        h, u = term_to_sparql(LEASE_HOLDER), term_to_sparql(LEASE_UNTIL)
        wait = ep.lease_wait if self.lease_wait is None else self.lease_wait
        deadline = time.monotonic() + wait
        delay = 0.002
        while True:
            now = time.time()
            until = term_to_sparql(_dec(now + ep.lease_ttl))
            # three operations, none with OPTIONAL (Virtuoso 7.2 applies a DELETE template
            # bound by an OPTIONAL even where the FILTER refuses the solution): drop a
            # holder without an expiry, take a free lease, take over an expired (or our own)
            ep.update(
                f"DELETE {{ GRAPH {m} {{ {s} {h} ?h }} }} WHERE {{ GRAPH {m} {{ {s} {h} ?h "
                f"FILTER NOT EXISTS {{ {s} {u} ?any }} }} }} ;\n"
                f"INSERT {{ GRAPH {m} {{ {s} {h} {me} . {s} {u} {until} }} }} "
                f"WHERE {{ GRAPH {m} {{ {s} {term_to_sparql(GENERATION)} ?g FILTER NOT EXISTS {{ {s} {h} ?h }} }} }} ;\n"
                f"DELETE {{ GRAPH {m} {{ {s} {h} ?h . {s} {u} ?u }} }} "
                f"INSERT {{ GRAPH {m} {{ {s} {h} {me} . {s} {u} {until} }} }} "
                f"WHERE {{ GRAPH {m} {{ {s} {h} ?h . {s} {u} ?u FILTER(?h = {me} || ?u < {term_to_sparql(_dec(now))}) }} }}"
            )
            gen, inc, holders = self._state()
            self._taken = (self._check(gen, inc), inc)
            if holders == {self.node}:
                self._holding = True
                return True
            self._taken = None
            if self.node in holders:  # two nodes raced past each other: both step back
                self._release()
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"tenant {self.tenant_id!r}: another Reckon node holds the write lease "
                    f"({', '.join(sorted(holders - {self.node})) or 'unknown'}) for more than {wait} s"
                )
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.05)

    def _release_op(self) -> str:
        m, s = term_to_sparql(self.meta), term_to_sparql(STORE_NODE)
        me = term_to_sparql(Literal(self.node))
        h, u = term_to_sparql(LEASE_HOLDER), term_to_sparql(LEASE_UNTIL)
        return f"DELETE {{ GRAPH {m} {{ {s} {h} {me} . {s} {u} ?u }} }} WHERE {{ GRAPH {m} {{ {s} {h} {me} . {s} {u} ?u }} }}"

    def _release(self) -> None:
        self.endpoint.update(self._release_op())

    def close_writer(self) -> None:
        self._taken = None
        if not self._holding:
            return
        self._holding = False
        try:
            self._release()
        except StoreError:
            pass  # the lease expires by itself after lease_ttl

    # ------------------------------------------------------------------ writes
    def _commit_op(
        self, where: str, delete: list[Quad], insert: list[Quad], extra_delete: str, extra_insert: str,
        block: BlockWriter, token: str,
    ) -> tuple[str, list[NamedNode]]:
        """The one conditional operation (and the staging graphs it reads, when staged)."""
        limit = self.endpoint.max_update_quads or 0
        if not limit or len(delete) + len(insert) <= limit:
            del_text, ins_text = block(delete), block(insert)
            if self.endpoint.server == "virtuoso":
                del_text, ins_text, binds = _decimals_as_variables(del_text, ins_text)
                where = f"{where} {binds}"
            return (
                f"DELETE {{ {del_text} {extra_delete} }} INSERT {{ {ins_text} {extra_insert} }} "
                f"WHERE {{ {where} }}", []
            )
        staged: list[NamedNode] = []
        branches = []
        for kind, quads in (("del", delete), ("ins", insert)):
            by_graph: dict[NamedNode, list[Quad]] = {}
            for q in quads:
                by_graph.setdefault(q.graph_name, []).append(q)  # type: ignore[arg-type]
            for g, qs in by_graph.items():
                sg = NamedNode(f"{self._base}stage:{token}:{kind}:{len(staged)}")
                staged.append(sg)
                for i in range(0, len(qs), limit):
                    chunk = [Quad(q.subject, q.predicate, q.object, sg) for q in qs[i:i + limit]]
                    self.endpoint.update(f"INSERT DATA {{ {block(chunk)} }}")
                var = "?dg" if kind == "del" else "?ig"
                branches.append(f"{{ BIND({term_to_sparql(g)} AS {var}) GRAPH {term_to_sparql(sg)} {{ ?s ?p ?o }} }}")
        branches.append("{ }")
        return (
            f"DELETE {{ GRAPH ?dg {{ ?s ?p ?o }} {extra_delete} }} INSERT {{ GRAPH ?ig {{ ?s ?p ?o }} {extra_insert} }} "
            f"WHERE {{ {where} {' UNION '.join(branches)} }}", staged
        )

    def _drop(self, graphs: Sequence[NamedNode]) -> None:
        if graphs:
            self.endpoint.update(" ; ".join(f"DROP SILENT GRAPH {term_to_sparql(g)}" for g in graphs))

    def commit(
        self, gen: int, new_gen: int, delete: Sequence[Quad], insert: Sequence[Quad], text: str,
        block: BlockWriter = quads_to_data_block, *, release: bool = False,
    ) -> None:
        """The conditional commit (module docstring, "Writes"): two requests -- the
        operation, then one SELECT reading the generation, the commit token and the lease
        back. ``release``: the lease release rides in the commit's request (a second
        operation, conditional on this node holding the lease), so a write costs four
        requests in all: take the lease, read it back with the generation, commit +
        release, check the token."""
        import httpx

        ep = self.endpoint
        if not self._holding:  # a second commit in one hold after a folded release
            self.open_writer()
            self._taken = None
        token = secrets.token_hex(8)
        m, s = term_to_sparql(self.meta), term_to_sparql(STORE_NODE)
        me = term_to_sparql(Literal(self.node))
        c = term_to_sparql(NamedNode(f"urn:reckon:commit:{new_gen}"))
        until = term_to_sparql(_dec(time.time() + ep.lease_ttl))
        record = (f"{c} {term_to_sparql(COMMIT_TOKEN)} {term_to_sparql(Literal(token))} ; "
                  f"{term_to_sparql(COMMIT_GEN)} {new_gen}")
        if len(text) <= JOURNAL_TEXT_MAX and len(delete) + len(insert) <= (ep.max_update_quads or 1 << 30):
            record += f" ; {term_to_sparql(COMMIT_TEXT)} {term_to_sparql(Literal(text))}"
        where = (f"GRAPH {m} {{ {s} {term_to_sparql(GENERATION)} {gen} . {s} {term_to_sparql(LEASE_HOLDER)} {me} . "
                 f"{s} {term_to_sparql(LEASE_UNTIL)} ?u }}")
        op, staged = self._commit_op(
            where, self._remote(delete), self._remote(insert),
            f"GRAPH {m} {{ {s} {term_to_sparql(LEASE_UNTIL)} ?u }}",
            f"GRAPH {m} {{ {s} {term_to_sparql(LEASE_UNTIL)} {until} . {record} }}",
            block, token,
        )
        sent = f"{op} ;\n{self._release_op()}" if release else op
        lost = False
        try:
            for attempt in range(max(1, ep.retries)):
                try:
                    ep.update(sent, retry=False)
                except httpx.TransportError:
                    lost = True  # did it land? the token says
                landed, now_gen, holder_ok = self._landed(new_gen, token)
                if landed:
                    break
                if now_gen == gen and holder_ok and attempt + 1 < ep.retries:
                    continue  # it did not arrive: the WHERE clause keeps a late copy from applying twice
                if now_gen == gen and holder_ok:
                    raise StoreError(f"write to tenant {self.tenant_id!r} on {ep.name!r} did not arrive; nothing written")
                self._holding = holder_ok
                raise WriteConflict(
                    f"tenant {self.tenant_id!r}: another Reckon node wrote generation {now_gen} (or took the write "
                    f"lease) while this one wrote generation {new_gen}; nothing was written"
                )
        finally:
            if staged:
                try:
                    self._drop(staged)
                except StoreError:
                    pass
        self.commits += 1
        if release:
            self._holding = False
            if lost:  # a server that applies a request's operations one by one may have stopped between them
                try:
                    self._release()
                except StoreError:
                    pass  # the lease expires by itself after lease_ttl
        if new_gen % 64 == 0:
            self._prune(new_gen)

    def _landed(self, new_gen: int, token: str) -> tuple[bool, int | None, bool]:
        m, s = term_to_sparql(self.meta), term_to_sparql(STORE_NODE)
        c = term_to_sparql(NamedNode(f"urn:reckon:commit:{new_gen}"))
        deadline = time.monotonic() + max(self.endpoint.timeout, 1.0) * 3
        while True:
            try:
                rows = self.endpoint.select(
                    f"SELECT ?g ?tok ?h WHERE {{ GRAPH {m} {{ {s} {term_to_sparql(GENERATION)} ?g "
                    f"OPTIONAL {{ {c} {term_to_sparql(COMMIT_TOKEN)} ?tok }} "
                    f"OPTIONAL {{ {s} {term_to_sparql(LEASE_HOLDER)} ?h }} }} }}"
                )
                break
            except StoreError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        if not rows:
            raise BackendGone(f"tenant {self.tenant_id!r} is no longer on endpoint {self.endpoint.name!r}")
        gen = _int(rows[0]["g"])
        landed = any(str(r["tok"].value) == token for r in rows if "tok" in r)
        holders = {str(r["h"].value) for r in rows if "h" in r}
        return landed, gen, holders == {self.node}

    def _prune(self, new_gen: int) -> None:
        m = term_to_sparql(self.meta)
        g = term_to_sparql(COMMIT_GEN)
        try:
            self.endpoint.update(
                f"DELETE {{ GRAPH {m} {{ ?c ?p ?o }} }} WHERE {{ GRAPH {m} {{ ?c {g} ?n ; ?p ?o }} "
                f"FILTER(?n <= {new_gen - KEEP_COMMITS}) }}"
            )
        except StoreError:
            pass

    def create(self, quads: Sequence[Quad]) -> None:
        """Write a new tenant's quads (logical graphs, META's generation and incarnation
        among them) in one conditional operation: only where no tenant of this id is.

        :raises TenantExists: when the server already holds a tenant of this id.
        """
        m, s = term_to_sparql(self.meta), term_to_sparql(STORE_NODE)
        token = secrets.token_hex(8)
        where = f"FILTER NOT EXISTS {{ GRAPH {m} {{ {s} {term_to_sparql(GENERATION)} ?any }} }}"
        op, staged = self._commit_op(where, [], self._remote(quads), "", "", quads_to_data_block, token)
        try:
            self.endpoint.update(op)
        finally:
            if staged:
                self._drop(staged)
        gen, inc, _ = self._state()
        if gen is None:
            raise StoreError(f"tenant {self.tenant_id!r} was not created on {self.endpoint.name!r}")
        if inc != self.incarnation:
            raise TenantExists(f"tenant {self.tenant_id!r} already exists on endpoint {self.endpoint.name!r}")

    def destroy(self) -> None:
        """Drop every graph of this tenant, staging graphs and API-token records included
        (for delete / move)."""
        rows = self.endpoint.select(
            "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } FILTER(STRSTARTS(STR(?g), "
            f"{term_to_sparql(Literal(self._base + 'stage:'))})) }}"
        )
        tokens = NamedNode(self._base + "tokens")  # the API-token records (reckon.store.tokens)
        self._drop([self.meta] + [g for g in self.graphs() if g != self.meta] + [tokens] + [r["g"] for r in rows])

    # ------------------------------------------------------------------ journal
    def journal(self, first: int, last: int) -> list[str] | None:
        if first > last:
            return []
        m = term_to_sparql(self.meta)
        rows = self.endpoint.select(
            f"SELECT ?n ?t WHERE {{ GRAPH {m} {{ ?c {term_to_sparql(COMMIT_GEN)} ?n ; {term_to_sparql(COMMIT_TEXT)} ?t }} "
            f"FILTER(?n >= {first} && ?n <= {last}) }}"
        )
        found = {_int(r["n"]): str(r["t"].value) for r in rows}
        if any(g not in found for g in range(first, last + 1)):
            return None
        return [found[g] for g in range(first, last + 1)]

    def reset_journal(self) -> None:
        return None

    def close(self) -> None:
        self.close_writer()
