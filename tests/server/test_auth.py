"""API tokens: stored hashed (salted scrypt), shown once, revocable; a token of one
tenant never reaches another tenant on any route; missing / invalid tokens get 401."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import sys

import pytest

from reckon.server.auth import TokenError, TokenForbidden, TokenStore, parse_token


def _tenant_routes(app) -> list[tuple[str, str]]:
    """(method, path template) of every route under /tenants/{tenant_id}."""
    out = []
    for r in app.routes:
        path = getattr(r, "path", "")
        if path.startswith("/tenants/{tenant_id}"):
            for m in sorted(getattr(r, "methods", set()) - {"HEAD", "OPTIONS"}):
                out.append((m, path))
    return out


def _call(world, method: str, path: str, headers: dict[str, str]):
    url = path.replace("{tenant_id}", "beta").replace("{memory_id}", world.ids["beta_fact"])
    params = {"q": "zebra campaign", "query": "SELECT * WHERE { ?s ?p ?o }"}
    body = {"kind": "fact", "scope": "company", "importance": 3, "label": "x", "content": "y"}
    if method == "GET":
        return world.client.get(url, params=params, headers=headers)
    if method == "POST" and path.endswith("/sparql"):
        return world.client.post(url, data={"query": params["query"]}, headers=headers)
    if method == "POST" and path.endswith("/supersede"):
        return world.client.post(url, json={"replacement": body}, headers=headers)
    return world.client.request(method, url, json=body if method == "POST" else {"importance": 1}, headers=headers)


def test_every_tenant_route_is_covered(world):
    routes = _tenant_routes(world.client.app)
    paths = {p for _, p in routes}
    for expected in ("/tenants/{tenant_id}/sparql", "/tenants/{tenant_id}/memories",
                     "/tenants/{tenant_id}/memories/{memory_id}", "/tenants/{tenant_id}/memories/{memory_id}/supersede",
                     "/tenants/{tenant_id}/search", "/tenants/{tenant_id}/bundle", "/tenants/{tenant_id}/metrics"):
        assert expected in paths
    assert len(routes) >= 9


@pytest.mark.parametrize("who", ["acme_ops", "acme_sam", "acme_analyst"])
def test_token_of_tenant_a_is_403_on_every_route_of_tenant_b(world, who):
    before = world.engine.tenant("beta").dump()
    routes = _tenant_routes(world.client.app)
    for method, path in routes:
        r = _call(world, method, path, world.h(who))
        assert r.status_code == 403, (method, path, r.status_code, r.text)
        assert r.json()["error"]["type"] == "forbidden"
        assert "zebra" not in r.text and world.ids["beta_fact"] not in r.text
    assert world.engine.tenant("beta").dump() == before
    # the same routes work for beta's own token (so the 403 is about the tenant)
    r = world.client.get(f"/tenants/beta/memories/{world.ids['beta_fact']}", headers=world.h("beta_ops"))
    assert r.status_code == 200 and r.json()["label"] == "Beta secret plan"


def test_token_relabelled_for_another_tenant_is_401(world):
    _, tid, secret = parse_token(world.tokens["acme_ops"])
    forged = f"rkt_beta.{tid}.{secret}"
    r = world.client.get(f"/tenants/beta/memories/{world.ids['beta_fact']}",
                         headers={"Authorization": f"Bearer {forged}"})
    assert r.status_code == 401
    assert "zebra" not in r.text


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer not-a-token", "Basic dXNlcjpwYXNz",
                                    "Bearer rkt_acme.000000000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"])
def test_missing_or_invalid_token_is_401(world, header):
    headers = {} if header is None else {"Authorization": header}
    for method, path in _tenant_routes(world.client.app):
        url = path.replace("{tenant_id}", "acme").replace("{memory_id}", world.ids["icp"])
        r = world.client.request(method, url, params={"q": "x", "query": "ASK {}"}, headers=headers)
        assert r.status_code == 401, (method, path, r.text)
    r = world.client.get("/metrics", headers=headers)
    assert r.status_code == 401
    if header is None:
        assert r.headers["www-authenticate"] == "Bearer"


def test_wrong_secret_is_401(world):
    t, tid, secret = parse_token(world.tokens["acme_ops"])
    bad = f"rkt_{t}.{tid}.{secret[:-1]}{'A' if secret[-1] != 'A' else 'B'}"
    r = world.client.get(f"/tenants/acme/memories/{world.ids['icp']}", headers={"Authorization": f"Bearer {bad}"})
    assert r.status_code == 401


def test_tokens_are_stored_hashed(world):
    path = world.data_dir / "tenants" / "acme" / "tokens.json"
    raw = path.read_bytes()
    data = json.loads(raw)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for name in ("acme_ops", "acme_sam", "acme_analyst"):
        token = world.tokens[name]
        _, tid, secret = parse_token(token)
        assert token.encode() not in raw and secret.encode() not in raw
        rec = data["tokens"][tid]
        assert rec["tenant"] == "acme" and rec["kdf"] == "scrypt"
        expected = hashlib.scrypt(secret.encode(), salt=bytes.fromhex(rec["salt"]), n=rec["n"], r=rec["r"],
                                  p=rec["p"], dklen=32)
        assert bytes.fromhex(rec["hash"]) == expected
    salts = [r["salt"] for r in data["tokens"].values()]
    assert len(set(salts)) == len(salts)  # a salt per token
    # beta's file holds only beta's tokens
    beta = json.loads((world.data_dir / "tenants" / "beta" / "tokens.json").read_text())
    assert {r["tenant"] for r in beta["tokens"].values()} == {"beta"}


def test_verify_and_revoke(world):
    ts = TokenStore(world.data_dir)
    world.engine.tenant("acme").add_team("ops")  # a token's teams are teams of the tenant (else UnknownTeam)
    rec, token = ts.create("acme", person="temp", teams=["growth", "growth", "ops"], label="temporary")
    assert rec.teams == ["growth", "ops"] and rec.role == "member" and rec.sparql is False
    assert ts.verify("acme", token) == rec
    with pytest.raises(TokenForbidden):
        ts.verify("beta", token)
    url = f"/tenants/acme/memories/{world.ids['icp']}"
    assert world.client.get(url, headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert rec.id in [r.id for r in ts.list("acme")]
    # revoked in another TokenStore (another process): the server's cache notices
    TokenStore(world.data_dir).revoke("acme", rec.id)
    assert world.client.get(url, headers={"Authorization": f"Bearer {token}"}).status_code == 401
    with pytest.raises(TokenError):
        ts.verify("acme", token)
    assert rec.id not in [r.id for r in ts.list("acme")]


def test_metrics_route_shows_only_the_tokens_tenant(world):
    r = world.client.get("/metrics", headers=world.h("acme_ops"))
    assert r.status_code == 200
    assert 'tenant="acme"' in r.text and 'tenant="beta"' not in r.text
    r = world.client.get("/metrics", headers=world.h("beta_ops", Accept="application/json"))
    assert r.status_code == 200 and r.json()["tenant"] == "beta"
    assert sum(d["count"] for d in r.json()["memories"]) == len(world.engine.tenant("beta").memories())


def _cli(data_dir, *args):
    from reckon.cli import main

    old_out, old_err = sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = out, err
    try:
        code = main(["--data-dir", str(data_dir), *args])
    finally:
        sys.stdout, sys.stderr = old_out, old_err
    return code, out.getvalue(), err.getvalue()


def test_token_cli_create_list_revoke(world):
    code, out, err = _cli(world.data_dir, "token", "create", "--tenant", "acme", "--as", "cli-user",
                          "--member-of", "growth", "--label", "from the cli")
    assert code == 0, err
    token = out.strip()
    t, tid, _ = parse_token(token)
    assert t == "acme" and tid in err
    r = world.client.get("/tenants/acme/bundle", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and r.json()["principal"] == "cli-user"
    code, out, _ = _cli(world.data_dir, "token", "list", "--tenant", "acme", "--json")
    listed = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and listed[tid]["person"] == "cli-user" and listed[tid]["teams"] == ["growth"]
    assert token not in out
    code, out, _ = _cli(world.data_dir, "token", "revoke", tid, "--tenant", "acme")
    assert code == 0 and tid in out
    assert world.client.get("/tenants/acme/bundle", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    code, _, err = _cli(world.data_dir, "token", "revoke", tid, "--tenant", "acme")
    assert code == 2 and "no token" in err
    code, _, err = _cli(world.data_dir, "token", "create", "--tenant", "nope", "--as", "x")
    assert code == 2


BAD_TENANT_IDS = ["ACME", "acme%2F..%2Fbeta", "%2e%2e", "acme%00", "beta%20", "a" * 80, "acme.beta", "-acme"]


@pytest.mark.parametrize("tid", BAD_TENANT_IDS)
def test_hostile_tenant_ids_in_the_url(world, tid):
    """Never 2xx or 5xx: a token names its tenant, and an invalid id never reaches a path."""
    for method, path in _tenant_routes(world.client.app):
        url = path.replace("{tenant_id}", tid).replace("{memory_id}", world.ids["icp"])
        r = world.client.request(method, url, params={"q": "x", "query": "ASK {}"}, headers=world.h("acme_ops"))
        assert r.status_code in (403, 404, 405), (method, url, r.status_code, r.text)
        r = world.client.request(method, url, params={"q": "x", "query": "ASK {}"})
        assert r.status_code in (401, 404, 405), (method, url, r.status_code, r.text)


def test_token_store_refuses_invalid_tenant_ids(world):
    from reckon._errors import InvalidTenantId, UnknownTenant

    ts = TokenStore(world.data_dir)
    for tid in ("../beta", "ACME", ""):
        with pytest.raises(InvalidTenantId):
            ts.create(tid, person="x")
    with pytest.raises(UnknownTenant):
        ts.create("nope", person="x")
    with pytest.raises(TokenError):
        ts.verify("acme", "rkt_../x.000000000000.AAAAAAAAAAAAAAAAAAAAAAAA")


def test_an_unknown_query_parameter_is_refused_on_every_get_route(world):
    """A query parameter a route does not take (a misspelling such as ``?budget=10`` for
    ``budget_chars``) is refused with 422 naming it and the parameters the route takes
    -- never ignored -- on every GET route of a tenant (the SPARQL routes check their
    protocol's parameters themselves); a foreign token still meets 403 first."""
    routes = [p for m, p in _tenant_routes(world.client.app) if m == "GET" and not p.endswith("/sparql")]
    assert "/tenants/{tenant_id}/bundle" in routes and "/tenants/{tenant_id}/search" in routes
    for path in routes:
        url = (path.replace("{tenant_id}", "acme").replace("{memory_id}", world.ids["icp"])
               .replace("{conversation}", "chat-1"))
        r = world.client.get(url, params={"q": "report", "frob": "1"}, headers=world.h("acme_ops"))
        assert r.status_code == 422, (path, r.status_code, r.text)
        err = r.json()["error"]
        assert (err["field"], err["constraint"]) == ("frob", "unknown_parameter") and "frob" in err["message"]
    r = world.client.get("/tenants/acme/bundle", params={"budget": "600"}, headers=world.h("acme_ops"))
    assert r.status_code == 422 and "budget_chars" in r.json()["error"]["message"]
    ok = world.client.get("/tenants/acme/bundle", params={"budget_chars": "600"}, headers=world.h("acme_ops"))
    assert ok.status_code == 200, ok.text
    r = world.client.get("/tenants/beta/bundle", params={"frob": "1"}, headers=world.h("acme_ops"))
    assert r.status_code == 403
