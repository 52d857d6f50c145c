"""Server verbs: ``reckon serve`` (HTTP), ``reckon mcp`` (MCP over stdio) and
``reckon token create|list|revoke`` (API tokens of the HTTP server).

Exit codes: 0 ok; 2 input error (unknown tenant, bad option, unknown token id);
3 internal error.
"""

from __future__ import annotations

from typing import Any

import typer

from reckon.cli._app import app, fail, state
from reckon.cli._tenant import AS_OPT, MEMBER_OF_OPT, OPERATOR_OPT, TENANT_OPT, engine, open_tenant, print_json, say, warn

token_app = typer.Typer(help="API tokens of the HTTP server (per tenant, stored hashed).", no_args_is_help=True)
app.add_typer(token_app, name="token")


#: With neither ``--warm`` nor ``--warm-all``, the most tenants ``serve`` opens before it
#: binds (those holding a live API token, newest token first).
AUTO_WARM = 8


@app.command("serve")
def serve_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (default: loopback only)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port."),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level (critical .. trace)."),
    query_timeout: float = typer.Option(10.0, "--query-timeout", min=0.01,
                                        help="Seconds a SPARQL query may run before it is cancelled (503)."),
    max_query_bytes: int = typer.Option(1 << 20, "--max-query-bytes", min=1,
                                        help="Largest SPARQL query text, bytes (413)."),
    max_depth: int = typer.Option(1000, "--max-query-depth", min=1,
                                  help="Deepest nesting + operator chains of a query (400)."),
    max_rows: int = typer.Option(100_000, "--max-rows", min=1, help="Most rows of a SPARQL result (413)."),
    max_result_bytes: int = typer.Option(32 << 20, "--max-result-bytes", min=1,
                                         help="Largest SPARQL result, bytes (413)."),
    query_workers: int = typer.Option(2, "--query-workers", min=1, help="SPARQL worker processes."),
    query_memory: int = typer.Option(4 << 30, "--query-memory", min=64 << 20,
                                     help="Resident memory of a SPARQL worker, bytes (503 beyond)."),
    rate_limit: float = typer.Option(20.0, "--rate-limit", min=0,
                                     help="Requests per second per API token (429 beyond); 0 = off."),
    rate_burst: int = typer.Option(40, "--rate-burst", min=1, help="Requests a token may send at once."),
    max_body_bytes: int = typer.Option(4 << 20, "--max-body-bytes", min=1024,
                                       help="Largest request body, bytes (413)."),
    wall_clock: bool = typer.Option(True, "--wall-clock/--no-wall-clock",
                                    help="Move each tenant's in-graph clock to the wall clock before its requests "
                                         "(default); --no-wall-clock leaves it to `reckon tick` (replays, demos)."),
    warm: list[str] = typer.Option([], "--warm", metavar="TENANT",
                                   help="Open this tenant before binding (repeatable): its store, reasoner, recall "
                                        "index and clock, so that its first request is as fast as the later ones. "
                                        "Other tenants open on their first request."),
    warm_all: bool = typer.Option(False, "--warm-all",
                                  help="Open every tenant of the data directory before binding, as --warm does "
                                       "(about 0.2-1 s each: a server of a few busy tenants)."),
    auto_warm: bool = typer.Option(True, "--auto-warm/--no-auto-warm",
                                   help="With neither --warm nor --warm-all: open before binding the tenants that "
                                        f"hold a live API token (the only ones a request can reach), at most "
                                        f"{AUTO_WARM}, newest token first (default); --no-auto-warm opens every "
                                        "tenant on its first request."),
) -> None:
    """Serve the memory inspector at / and the HTTP API: per-tenant SPARQL endpoint and
    REST routes (OpenAPI at /openapi.json).

    API requests need `Authorization: Bearer <token>` with a token of the tenant in the
    URL (`reckon token create --tenant T --as PERSON`); in the inspector, sign in once
    with the same token (kept in an HttpOnly cookie of the browser session). SPARQL
    queries (endpoint and console) run in sandboxed worker processes (no network) under
    the limits above.
    """
    import time

    import uvicorn

    from reckon.server.http import create_app
    from reckon.store import QueryLimits

    _check_bind(host, port)  # before the warm-up: a typo costs no wait, and exits 2 naming it
    limits = QueryLimits(max_query_bytes=max_query_bytes, max_depth=max_depth, timeout=query_timeout,
                         max_rows=max_rows, max_result_bytes=max_result_bytes, max_memory_bytes=query_memory,
                         workers=query_workers)
    eng = engine(limits)
    eng.query_pool.start()  # warm workers: the first query does not pay for their start
    _load_model(eng)  # the embedder too: loaded before the server binds
    for tenant_id in tenants_to_warm(eng, warm, warm_all=warm_all, auto=auto_warm):
        t0 = time.perf_counter()
        t = eng.tenant(tenant_id)  # UnknownTenant -> exit 2
        _warm_tenant(t, wall_clock=wall_clock, callers=_token_principals(tenant_id))
        warn(f"reckon: tenant {tenant_id} opened in {time.perf_counter() - t0:.1f} s")
    application = create_app(eng, rate_limit=rate_limit or None, rate_burst=rate_burst,
                             max_body_bytes=max_body_bytes, wall_clock=wall_clock)
    warn(f"reckon: serving {state.data_dir} on http://{host}:{port} (inspector: /, OpenAPI: /openapi.json)")
    uvicorn.run(application, host=host, port=port, log_level=log_level, access_log=False)


def _check_bind(host: str, port: int) -> None:
    """:raises typer.Exit: (2) when ``host`` is not an address of this machine or the
    port cannot be bound there (in use, or a privileged port), naming which."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise fail(f"--host {host!r}: not an address (or a name this machine resolves): "
                   f"{getattr(e, 'strerror', None) or e}") from None
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(addr)
        except OSError as e:
            raise fail(f"cannot bind {host}:{port}: {e.strerror or e}") from None


@app.command("mcp")
def mcp_cmd(
    tenant: str = TENANT_OPT,
    person: str = AS_OPT,
    member_of: list[str] = MEMBER_OF_OPT,
    operator: bool = OPERATOR_OPT,
    wall_clock: bool = typer.Option(True, "--wall-clock/--no-wall-clock",
                                    help="Move the tenant's in-graph clock to the wall clock before each tool call "
                                         "(default); --no-wall-clock leaves it to `reckon tick`."),
) -> None:
    """Serve one tenant, as one person, over MCP stdio: the memory tools (remember, search,
    supersede, get_context), the conversation tools (record_turn, search_turns), the notes,
    event-graph, experience and lifecycle tools (note_put, note_get, note_list, note_delete,
    event_record, graph_related, graph_impact, graph_mermaid, experience_record,
    experience_recall, memory_feedback, document_index), the resources reckon://T/bundle,
    reckon://T/memories/ID and reckon://T/ontology, and the start_conversation prompt.
    Configure it in the agent host as the command `reckon --data-dir DIR mcp --tenant T --as PERSON`."""
    from reckon.api import Principal
    from reckon.server.mcp import run_stdio

    t = engine().tenant(tenant)
    p = Principal(person=person, teams=list(member_of), role="operator" if operator else "member")
    _warm_tenant(t, p, wall_clock=wall_clock)
    run_stdio(t, p, wall_clock=wall_clock)


def tenants_to_warm(eng: Any, named: list[str], *, warm_all: bool, auto: bool = False) -> list[str]:
    """The tenants ``serve`` opens before it binds: those named (``--warm``, in order,
    once each), then with ``--warm-all`` every other tenant of the data directory
    (sorted); with neither and ``auto`` (``--auto-warm``, the default), the tenants that
    hold a live API token -- no request can reach another -- newest token first, at most
    :data:`AUTO_WARM`."""
    out = list(dict.fromkeys(named))
    if warm_all:
        out += [t for t in sorted(eng.list_tenants()) if t not in out]
    elif auto and not out:
        out = [t for _, t in sorted(_tokened(eng), reverse=True)][:AUTO_WARM]
    return out


def _tokened(eng: Any) -> list[tuple[Any, str]]:
    """``(newest live token's creation time, tenant)`` of each tenant holding one."""
    from reckon.server.auth import TokenStore

    store = TokenStore(eng.data_dir)
    out = []
    for tenant_id in eng.list_tenants():
        try:
            recs = store.list(tenant_id)
        except Exception:  # noqa: BLE001 - a tenant whose token file cannot be read: not warmed, served as before
            continue
        if recs:
            out.append((max(r.created_at for r in recs), tenant_id))
    return out


#: The most API-token principals ``serve --warm`` builds a first bundle for.
WARM_CALLERS = 16


def _token_principals(tenant_id: str) -> list[Any]:
    """The principals of the tenant's API tokens (the callers ``serve`` will see), newest
    first, at most :data:`WARM_CALLERS`."""
    from reckon.server.auth import TokenStore

    try:
        recs = TokenStore(state.data_dir).list(tenant_id)
    except Exception:  # noqa: BLE001 - no token file yet: nothing to warm per caller
        return []
    recs = sorted(recs, key=lambda r: r.created_at, reverse=True)[:WARM_CALLERS]
    return [r.principal() for r in recs]


class _WarmAbort(Exception):
    """Leaves the warm-up's transaction: nothing written (``TenantStore.transaction``)."""


def _warm_tenant(t: Any, principal: Any = None, *, wall_clock: bool, callers: Any = ()) -> None:
    """Everything a tenant's first request would otherwise pay for, before it arrives:
    the recall index and model, the reasoner's state, the schema view and its catalogue
    (the agent tools' schemas), the compiled SHACL fast path, the clock's first move, and
    for ``principal`` (default: an operator) and each of ``callers`` (``serve``: the
    tenant's API-token principals) one bundle with a conversation, built without
    recording an access (the records, conflict verdicts, compiled templates and that
    principal's prepared bundle parts), and the peer groups their writes dedup against,
    read inside a transaction that is abandoned (the store's writer opened, nothing
    written); then the tool arguments' JSON Schema validator.

    Nothing but the clock's move (``wall_clock``) is written: no memory, no access count.
    """
    from reckon.api import Principal

    t.recall.warm()  # the index open and the model loaded
    t.store.reasoner()  # the write path: the reasoner's state loaded
    t.memory.schema.catalogue()  # the schema view and its memory-class catalogue (tool schemas, property specs)
    t.memory.schema.fast  # noqa: B018 - the compiled SHACL fast path every write validates with
    if wall_clock:
        t.advance_clock()  # the clock's first move (a write re-deriving expiry), as the first request would
    who = principal or Principal.operator(person="reckon-warm-up")
    everyone = [who, *(c for c in callers if c != who)]
    for p in everyone:
        t.context(p, record_access=False)
        t.context(p, conversation="warm up", record_access=False)
    _warm_peers(t, everyone)
    t.handle_tool_call("search", {}, who)  # refused by the tool's JSON Schema (no query): loads the validator only


def _warm_peers(t: Any, principals: Any) -> None:
    """Read the peer groups a write by each of ``principals`` dedups against (their own
    user memories, each of their teams', the company's) in a transaction left by an
    exception, so the store writes nothing; the writer it opened stays open."""
    peers = getattr(t.memory, "peers", None)
    if peers is None:
        return
    try:
        with t.memory._transaction():  # noqa: SLF001 - the memory layer's own transaction, abandoned below
            for p in principals:
                peers.group("user", p.person, [])
                for team in p.teams:
                    peers.group("team", None, [team])
            peers.group("company", None, [])
            raise _WarmAbort
    except _WarmAbort:
        pass


def _load_model(eng: object) -> None:
    """Load the recall embedder before the first request (not on it)."""
    import time

    from reckon.recall.embed import EmbeddingUnavailable, configured_embedder

    t0 = time.perf_counter()
    emb = configured_embedder(getattr(eng, "embedder", None))
    try:
        load = getattr(emb, "load", None)
        if callable(load):
            load()
        emb.encode(["warm up"])
    except EmbeddingUnavailable as exc:
        warn(f"reckon: embedding model unavailable ({exc}); recall ranks by keyword")
        return
    warn(f"reckon: embedder {emb.name} ready in {time.perf_counter() - t0:.1f} s")


@token_app.command("create")
def token_create(
    tenant: str = TENANT_OPT,
    person: str = typer.Option(..., "--as", help="Person id the token acts as."),
    member_of: list[str] = MEMBER_OF_OPT,
    operator: bool = OPERATOR_OPT,
    sparql: bool = typer.Option(False, "--sparql", help="Allow the SPARQL endpoint (operators always may)."),
    label: str = typer.Option(None, "--label", help="A note to recognise the token by."),
    as_json: bool = typer.Option(False, "--json", help="Print the record and token as JSON."),
) -> None:
    """Create an API token. It is printed once and stored only as a salted scrypt hash."""
    from reckon.server.auth import TokenStore

    open_tenant(tenant).memory.check_teams(member_of)  # UnknownTenant, UnknownTeam -> exit 2
    record, token = TokenStore(state.data_dir).create(
        tenant, person=person, teams=list(member_of), role="operator" if operator else "member",
        sparql=sparql or None, label=label)
    if as_json:
        print_json({**record.model_dump(mode="json"), "token": token})
        return
    warn(f"token {record.id} for {record.role} {record.person!r} of tenant {tenant!r} "
         f"(shown once; store it now):")
    typer.echo(token)


@token_app.command("list")
def token_list(
    tenant: str = TENANT_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print JSON records."),
) -> None:
    """List a tenant's tokens (ids and principals; the tokens themselves are not stored)."""
    from reckon.server.auth import TokenStore

    recs = TokenStore(state.data_dir).list(tenant)
    if as_json:
        print_json([r.model_dump(mode="json") for r in recs])
        return
    for r in recs:
        teams = f" teams={','.join(r.teams)}" if r.teams else ""
        say(f"{r.id}  {r.role:8} {r.person}{teams}{' sparql' if r.sparql else ''}  "
            f"{r.created_at.isoformat()}{'  ' + r.label if r.label else ''}", markup=False)


@token_app.command("revoke")
def token_revoke(
    token_id: str = typer.Argument(..., help="The token id (12 hex digits, from `reckon token list`)."),
    tenant: str = TENANT_OPT,
) -> None:
    """Revoke a token: it stops working at once, in every server process."""
    from reckon.server.auth import TokenStore

    r = TokenStore(state.data_dir).revoke(tenant, token_id)
    say(f"revoked token {r.id} of {r.person!r} in tenant {tenant!r}")
