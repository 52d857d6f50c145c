"""Limits of the HTTP server (issue 9, point 3 and 6): each has its status in the error
envelope. Query limits are set small here so that each is reached with a small input."""

from __future__ import annotations

import pytest

from reckon.api import Engine
from reckon.store import QueryLimits


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from fastapi.testclient import TestClient

    from reckon.server.auth import TokenStore
    from reckon.server.http import create_app

    d = tmp_path_factory.mktemp("limits")
    eng = Engine(d, rules=[], query_limits=QueryLimits(max_query_bytes=2000, max_depth=50, timeout=1.0,
                                                       max_rows=100, max_result_bytes=20_000))
    eng.create_tenant("acme")
    ts = TokenStore(d)
    tok = ts.create("acme", person="ops", role="operator")[1]
    other = ts.create("acme", person="ann", role="operator")[1]
    with TestClient(create_app(eng, rate_limit=5.0, rate_burst=5, max_body_bytes=10_000)) as client:
        yield client, tok, other, eng
    eng.close()


def _q(client, tok, query, method="post"):
    h = {"Authorization": f"Bearer {tok}"}
    if method == "get":
        return client.get("/tenants/acme/sparql", params={"query": query}, headers=h)
    return client.post("/tenants/acme/sparql", content=query.encode(),
                       headers={**h, "Content-Type": "application/sparql-query"})


def _err(r):
    e = r.json()["error"]
    assert {"type", "message", "field", "constraint"} <= set(e)
    return e


def test_each_query_limit_has_its_status(app) -> None:
    import time

    client, tok, _, eng = app
    cases = [
        ('SELECT * WHERE { FILTER("' + "x" * 3000 + '") }', 413, "query_bytes"),
        ("SELECT * WHERE { FILTER(" + "(" * 60 + "1" + ")" * 60 + ") }", 400, "depth"),
        ("SELECT ?s WHERE { ?s ?p ?o }", 413, "rows"),
        ('SELECT ?x WHERE { ?s ?p ?o BIND(CONCAT("' + "x" * 500 + '", STR(?s)) AS ?x) } LIMIT 99', 413,
         "result_bytes"),
        ("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }", 503, "deadline"),
    ]
    for query, status, limit in cases:
        time.sleep(1.1)  # stay under the rate limit of this app (5/s)
        r = _q(client, tok, query)
        assert r.status_code == status, (limit, r.text[:300])
        e = _err(r)
        assert (e["type"], e["constraint"]) == ("query_limit", limit), e
        assert e["limit"] == getattr(eng.query_limits, {"query_bytes": "max_query_bytes", "depth": "max_depth",
                                                         "rows": "max_rows", "result_bytes": "max_result_bytes",
                                                         "deadline": "timeout"}[limit])
    time.sleep(1.1)
    assert _q(client, tok, "SELECT * WHERE { ?s ?p ?o } LIMIT 3").status_code == 200


def test_rate_limit_is_per_token_and_says_when_to_retry(app) -> None:
    import time

    client, tok, other, _ = app
    time.sleep(1.5)
    codes = [_q(client, tok, "ASK {}", "get").status_code for _ in range(8)]
    assert codes[:5] == [200] * 5 and 429 in codes[5:], codes
    r = _q(client, tok, "ASK {}", "get")
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert _err(r)["constraint"] == "rate_limit"
    assert _q(client, other, "ASK {}", "get").status_code == 200  # another token is not slowed


def test_wrong_secrets_of_a_known_token_id_are_throttled(app) -> None:
    import time

    client, tok, _, _ = app
    time.sleep(1.5)
    prefix, _, secret = tok.rpartition(".")
    codes = []
    for i in range(4):
        bad = f"{prefix}.{'A' * 30}{i:013d}"
        codes.append(_q(client, bad, "ASK {}", "get").status_code)
    # the first wrong secret costs a scrypt and 10 units of the token id's bucket: the
    # next guesses are refused before any scrypt runs
    assert codes[0] == 401 and set(codes[1:]) == {429}, codes


def test_request_body_over_the_limit_is_413(app) -> None:
    client, tok, _, _ = app
    r = client.post("/tenants/acme/sparql", content=b"x" * 20_000,
                    headers={"Authorization": f"Bearer {tok}", "Content-Type": "application/sparql-query"})
    assert r.status_code == 413
    assert _err(r)["type"] == "request_too_large"


def test_search_text_has_a_length_limit(app) -> None:
    import time

    client, tok, _, eng = app
    time.sleep(1.5)
    r = client.get("/tenants/acme/search", params={"q": "x" * 2001}, headers={"Authorization": f"Bearer {tok}"})
    assert r.status_code == 422 and _err(r)["field"] == "q"
    from reckon._errors import InvalidInput
    from reckon.api import Principal

    with pytest.raises(InvalidInput, match="at most 2000"):
        eng.tenant("acme").search("x" * 2001, principal=Principal.operator())
    defs = {d["name"]: d for d in eng.tenant("acme").tool_definitions(format="anthropic")}
    assert defs["search"]["input_schema"]["properties"]["query"]["maxLength"] == 2000
