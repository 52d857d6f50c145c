"""Hostile SPARQL on every query path: no request leaves the process, no update runs.

Paths: ``Tenant.sparql`` (Python), ``reckon sparql`` (CLI), HTTP GET ``?query=``, POST
``application/sparql-query`` and POST form ``query=``. (The MCP server has no query tool:
:func:`test_mcp_exposes_no_query_tool` pins that.) A listener on 127.0.0.1 counts TCP
connections; every generated text aims ``SERVICE`` or ``LOAD`` at it, hidden behind
escapes, comments, strings, IRIs with ``#``, prefixed names with ``\\#`` / ``\\'``, case
and codepoint escapes (issue 9, point 1). Oracles: the listener saw 0 connections, the
query raised ``ReadOnlyQuery`` or ``InvalidInput`` (never returned rows), and the
tenant's dump is byte-identical afterwards.

The second wall is tested on its own: a ``SERVICE`` query handed straight to a query
worker, past the check, still makes no connection (seccomp denies Internet sockets).
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon._errors import InvalidInput, ReadOnlyQuery
from reckon.api import Engine
from reckon.store import QueryPlan

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the seccomp wall is Linux-only")

# --- generated attack texts -------------------------------------------------------------

NOISE = [
    r"?s ex:a\#b ?o .",  # PN_LOCAL_ESC '#': the old scanner took it for a comment
    r"?s ex:a\'b ?o .",  # PN_LOCAL_ESC quote: the old scanner took it for a string
    r"?s ex:x\,y\;z ?o .",
    r'FILTER(?o != "a\"b # }")',
    r"FILTER(?o != 'it\'s # {')",
    "FILTER(?o != '''x ' '' # SERVICE''')",
    'FILTER(?o != """x " "" # {""")',
    "# a comment that mentions SERVICE and LOAD\n",
    "# comment \\u000A still a comment\n",
    "?s <http://example.org/#frag> ?o .",
    "?s <http://example.org/a'b> ?o .",
    r'?s ?p "\u0022 SERVICE" .',
    r'?s ?p "\\" .',
    "OPTIONAL { ?s ?p ?o }",
    "{ ?s ?p ?o } UNION { ?s ?p ?o }",
    "?s ?p ?o FILTER(?o < 3 && ?o > 1)",
    "BIND(<http://127.0.0.1/> AS ?u)",
    "?s ?p _:b1 .",
    "?s ?p (1 2 3) .",
    "?s ?p [ ex:q 1 ] .",
    "VALUES ?v { 1 'x' <urn:y> }",
    "?s ?p true",  # with an empty joiner: ``trueSERVICE<...>`` (PEG keywords need no boundary)
    "?s ?p 1",
    "{}",
]


def _case(word: str, mask: int) -> str:
    return "".join(c.upper() if (mask >> (i % 16)) & 1 else c.lower() for i, c in enumerate(word))


@st.composite
def hidden_service(draw: st.DrawFn, port: int) -> str:
    kw = draw(st.sampled_from(["SERVICE", "SERVICE SILENT", "SERVICESILENT", "case", r"SERV\u0049CE",
                               r"\u0053ERVICE"]))
    if kw == "case":
        kw = _case("service", draw(st.integers(0, 0xFFFF))) + draw(st.sampled_from(["", " SILENT", " silent"]))
    host = draw(st.sampled_from(["127.0.0.1", "localhost", "[::1]"]))
    endpoint = draw(st.sampled_from([
        f"<http://{host}:{port}/sparql>", f"<http://{host}:{port}/x#frag>", f"<http://{host}:{port}/\\u0073>",
        "?svc", "ex:svc", ":svc", "ex:",
    ]))
    sep = draw(st.sampled_from([" ", "\n", "\t", "#c\n", "#c\r", "", "\r\n"]))
    join = draw(st.sampled_from([" ", "\n", ""]))
    before = draw(st.lists(st.sampled_from(NOISE), max_size=4))
    after = draw(st.lists(st.sampled_from(NOISE), max_size=2))
    body = join.join(before) + f"{join}{kw}{sep}{endpoint}{sep}{{?x ?p ?o}}{join}" + join.join(after)
    if endpoint == "?svc":
        body = f"BIND(<http://{host}:{port}/> AS ?svc) " + body
    wrap = draw(st.sampled_from(["plain", "optional", "nested", "subselect", "exists", "minus", "graph", "union"]))
    if wrap == "optional":
        body = f"OPTIONAL {{ {body} }}"
    elif wrap == "nested":
        body = "{ { " + body + " } }"
    elif wrap == "subselect":
        body = "{ SELECT * WHERE { " + body + " } }"
    elif wrap == "exists":
        body = "?s ?p ?o FILTER NOT EXISTS { " + body + " }"
    elif wrap == "minus":
        body = "?s ?p ?o MINUS {" + body + "}"
    elif wrap == "graph":
        body = "GRAPH ?g {" + body + "}"
    elif wrap == "union":
        body = "{ ?s ?p ?o } UNION {" + body + "}"
    form = draw(st.sampled_from(["SELECT * WHERE", "ASK", "CONSTRUCT { ?x ?p ?o } WHERE", "select distinct ?x where"]))
    prefix = f"PREFIX ex: <http://{host}:{port}/> PREFIX : <http://{host}:{port}/> "
    return f"{prefix}{form} {{ {body} }}"


@st.composite
def hidden_update(draw: st.DrawFn, port: int) -> str:
    op = draw(st.sampled_from([
        f"LOAD <http://127.0.0.1:{port}/data.ttl>",
        f"LOAD SILENT <http://127.0.0.1:{port}/data.ttl> INTO GRAPH <urn:reckon:graph:memories>",
        'INSERT DATA { GRAPH <urn:reckon:graph:memories> { <urn:a> <urn:b> "c" } }',
        "DELETE WHERE { GRAPH <urn:reckon:graph:memories> { ?s ?p ?o } }",
        "DELETE { GRAPH ?g { ?s ?p ?o } } WHERE { GRAPH ?g { ?s ?p ?o } }",
        "WITH <urn:reckon:graph:memories> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
        "CLEAR ALL", "CLEAR SILENT GRAPH <urn:reckon:graph:memories>", "DROP ALL", "DROP DEFAULT",
        "CREATE GRAPH <urn:x>", "ADD <urn:reckon:graph:memories> TO <urn:x>",
        "MOVE <urn:reckon:graph:memories> TO <urn:x>", "COPY DEFAULT TO <urn:x>",
        r"INS\u0045RT DATA { <urn:a> <urn:b> <urn:c> }",
        "insert data { <urn:a> <urn:b> <urn:c> }",
    ]))
    lead = draw(st.sampled_from([
        "", "PREFIX ex: <http://e/> ", "# SELECT * WHERE {}\n", "# SELECT * WHERE {}\r", "BASE <http://e/> ",
        "SELECT * WHERE { ?s ?p ?o } ; ", "ASK {} ;\n", r"PREFIX ex: <http://e/#\u0023> ",
    ]))
    tail = draw(st.sampled_from(["", " ;", " ; SELECT * WHERE {}", " # trailing"]))
    return lead + op + tail


# --- the paths ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    eng = Engine(tmp_path_factory.mktemp("fuzz"), rules=[])
    t = eng.create_tenant("acme")
    yield eng, t
    eng.close()


def _refused(fn, text: str) -> type:
    try:
        out = fn(text)
    except (ReadOnlyQuery, InvalidInput) as exc:
        return type(exc)
    raise AssertionError(f"not refused: {text!r} -> {out!r}")


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])


@given(data=st.data())
@SETTINGS
def test_python_path_never_connects_and_refuses(world, listener, data) -> None:
    eng, t = world
    before = t.dump()
    q = data.draw(hidden_service(listener.port) | hidden_update(listener.port))
    _refused(t.sparql, q)
    assert listener.connections == 0, q
    assert t.dump() == before


@given(data=st.data())
@SETTINGS
def test_hidden_service_that_parses_is_read_only_query(world, listener, data) -> None:
    """When the text is valid SPARQL (pyoxigraph accepts it), the refusal is the
    specific ReadOnlyQuery, decided before evaluation."""
    from pyoxigraph import Store

    eng, t = world
    q = data.draw(hidden_service(listener.port))
    # does it parse? ask pyoxigraph in a sandboxed worker (no network there either)
    plan = QueryPlan(text=q, form="SELECT")
    try:
        eng.query_pool.run(t.store, plan)
        parses = True
    except InvalidInput as exc:
        parses = "does not parse" not in str(exc)
    del Store
    kind = _refused(t.sparql, q)
    if parses:
        assert kind is ReadOnlyQuery, q
    assert listener.connections == 0, q


def test_second_wall_worker_cannot_connect_past_the_check(world, listener) -> None:
    eng, t = world
    assert eng.query_pool.sandboxed is not False
    for text in (
        f"SELECT * WHERE {{ SERVICE <http://127.0.0.1:{listener.port}/> {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ SERVICE SILENT <http://127.0.0.1:{listener.port}/> {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ SERVICE <http://localhost:{listener.port}/> {{ ?s ?p ?o }} }}",
    ):
        plan = QueryPlan(text=text, form="SELECT")  # straight to the worker, no check
        try:
            rows = eng.query_pool.run(t.store, plan).to_python()
        except InvalidInput:
            rows = None
        assert rows in (None, [], [{}]), rows  # SILENT: no remote rows
    assert eng.query_pool.sandboxed is True
    assert listener.connections == 0


@pytest.fixture(scope="module")
def http(world):
    from fastapi.testclient import TestClient

    from reckon.server.auth import TokenStore
    from reckon.server.http import create_app

    eng, t = world
    token = TokenStore(eng.data_dir).create("acme", person="ops", role="operator")[1]
    with TestClient(create_app(eng, rate_limit=None, wall_clock=False)) as client:
        yield client, {"Authorization": f"Bearer {token}"}


@given(data=st.data(), how=st.sampled_from(["get", "post", "form"]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
def test_http_paths_never_connect_and_refuse(world, http, listener, data, how) -> None:
    eng, t = world
    client, h = http
    before = t.dump()
    q = data.draw(hidden_service(listener.port) | hidden_update(listener.port))
    if how == "get":
        r = client.get("/tenants/acme/sparql", params={"query": q}, headers=h)
    elif how == "post":
        r = client.post("/tenants/acme/sparql", content=q.encode(),
                        headers={**h, "Content-Type": "application/sparql-query"})
    else:
        r = client.post("/tenants/acme/sparql", data={"query": q}, headers=h)
    assert r.status_code == 400, (q, r.status_code, r.text)
    assert r.json()["error"]["type"] in ("read_only_query", "malformed_query"), r.text
    assert listener.connections == 0, q
    assert t.dump() == before


def test_http_update_parameter_and_body_are_refused(world, http, listener) -> None:
    eng, t = world
    client, h = http
    before = t.dump()
    upd = f"LOAD <http://127.0.0.1:{listener.port}/x>"
    r1 = client.post("/tenants/acme/sparql", data={"update": upd}, headers=h)
    r2 = client.post("/tenants/acme/sparql", content=upd.encode(),
                     headers={**h, "Content-Type": "application/sparql-update"})
    assert (r1.status_code, r2.status_code) == (400, 400)
    assert listener.connections == 0 and t.dump() == before


@given(data=st.data())
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
def test_cli_path_never_connects_and_exits_2(world, listener, data, capsys) -> None:
    from reckon.cli._app import run

    eng, t = world
    before = t.dump()
    q = data.draw(hidden_service(listener.port) | hidden_update(listener.port))
    code = run(["--data-dir", str(eng.data_dir), "sparql", "--tenant", "acme", q])
    err = capsys.readouterr().err
    assert code == 2, (q, err)
    assert listener.connections == 0, q
    assert t.dump() == before


def test_meta_graph_is_never_in_a_dataset(world) -> None:
    """Issue 9 point 6: FROM <urn:reckon:graph:meta> (also escaped or prefixed, with or
    without the union default graph) is refused; GRAPH <meta> sees nothing."""
    eng, t = world
    for q in (
        "SELECT * FROM <urn:reckon:graph:meta> WHERE { ?s ?p ?o }",
        r"SELECT * FROM <urn:reckon:graph:m\u0065ta> WHERE { ?s ?p ?o }",
        "PREFIX g: <urn:reckon:graph:> SELECT * FROM g:meta WHERE { ?s ?p ?o }",
        "SELECT * FROM NAMED <urn:reckon:graph:meta> WHERE { GRAPH ?g { ?s ?p ?o } }",
        "SELECT * FROM <urn:reckon:store> WHERE { ?s ?p ?o }",
        "SELECT * FROM <memories> WHERE { ?s ?p ?o }",
    ):
        with pytest.raises(InvalidInput, match="public graphs"):
            t.sparql(q)
        with pytest.raises(InvalidInput, match="public graphs"):
            t.store.query(q, use_default_graph_as_union=False)
    assert t.sparql("SELECT * WHERE { GRAPH <urn:reckon:graph:meta> { ?s ?p ?o } }") == []
    assert t.store.query("SELECT * WHERE { ?s ?p ?o }", use_default_graph_as_union=False) == []
    rows = t.sparql("SELECT ?p WHERE { GRAPH ?g { <urn:reckon:store> ?p ?o } }")
    assert rows == []
    # a public graph in FROM works and restricts the default graph to it
    n_mem = t.sparql("SELECT (COUNT(*) AS ?n) FROM <urn:reckon:graph:memories> WHERE { ?s ?p ?o }")[0]["n"]
    n_all = t.sparql("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")[0]["n"]
    assert int(n_mem.value) < int(n_all.value)


def test_mcp_exposes_no_query_tool(world) -> None:
    eng, t = world
    names = {d["name"] for d in t.tool_definitions(format="anthropic")}
    assert names == {"remember", "search", "supersede", "get_context"}
