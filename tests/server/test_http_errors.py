"""Every HTTP error is in the error envelope ``{"error": {"type", "message", "field",
"constraint"}}``: routing errors (404 no route, 405 with ``Allow``), 415 for a body that
is not JSON, and request validation (422) with a field name on every error, for every
route of the application (read from the app itself, so a new route is covered)."""

from __future__ import annotations

from typing import Any

import pytest

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _envelope(r: Any, status: int) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert {"type", "message", "field", "constraint"} <= set(err), err
    assert isinstance(err["type"], str) and err["type"] and isinstance(err["message"], str) and err["message"]
    return err


def _routes(app: Any) -> list[tuple[str, set[str]]]:
    from fastapi.routing import APIRoute

    out: dict[str, set[str]] = {}
    for r in app.routes:
        if isinstance(r, APIRoute):
            out.setdefault(r.path, set()).update(r.methods)
    return sorted(out.items())


def _concrete(path: str, world: Any) -> str:
    return (path.replace("{tenant_id}", "acme").replace("{memory_id}", world.ids["icp"])
            .replace("{name}", "remember"))


def test_405_for_every_route_and_method_it_does_not_serve(world):
    routes = _routes(world.client.app)
    assert len(routes) > 15
    checked = 0
    for path, methods in routes:
        allowed = methods | ({"HEAD"} if "GET" in methods else set())
        for m in METHODS:
            if m in allowed:
                continue
            r = world.client.request(m, _concrete(path, world), headers=world.h("acme_ops"))
            err = _envelope(r, 405)
            assert err["type"] == "method_not_allowed" and err["field"] == "method"
            assert set(x.strip() for x in r.headers["allow"].split(",")) >= methods - {"HEAD"}
            checked += 1
    assert checked > 40


@pytest.mark.parametrize("path", ["/nope", "/tenants", "/tenants/acme/nothing-here", "/ui/static/missing.css",
                                  "/tenants/acme/memories/abc/def/ghi", "/%3Cscript%3E"])
def test_404_for_unknown_paths(world, path):
    err = _envelope(world.client.get(path, headers=world.h("acme_ops")), 404)
    assert err["type"] in ("not_found",) and err["field"] == "path"
    assert "<script>" not in err["message"] or path == "/%3Cscript%3E"


def _json_routes(world: Any) -> list[tuple[str, str]]:
    from fastapi.routing import APIRoute

    out = []
    for r in world.client.app.routes:
        if not isinstance(r, APIRoute) or not r.body_field or "/sparql" in r.path:
            continue
        for m in sorted(r.methods & {"POST", "PATCH", "PUT"}):
            out.append((m, _concrete(r.path, world)))
    assert len(out) >= 4, out
    return out


def test_415_for_a_body_that_is_not_json_on_every_json_route(world):
    for method, path in _json_routes(world):
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "application/xml"):
            r = world.client.request(method, path, content=b"kind=fact",
                                     headers=world.h("acme_ops", **{"content-type": ctype}))
            err = _envelope(r, 415)
            assert err["type"] == "unsupported_media_type" and err["field"] == "content-type", (method, path)


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"null", b'"text"', b"42", b"{}"])
def test_422_names_a_field_on_every_json_route(world, body):
    for method, path in _json_routes(world):
        if path.endswith("/tools/remember") and body == b"{}":
            continue  # the tool-call route answers 200 with the tool's own error object
        r = world.client.request(method, path, content=body,
                                 headers=world.h("acme_ops", **{"content-type": "application/json"}))
        if r.status_code in (200, 201):  # an all-optional body (PATCH {}) may be valid
            continue
        err = _envelope(r, 422)
        assert isinstance(err["field"], str) and err["field"], (method, path, body, err)
        assert err["constraint"], err
        for e in err.get("errors", []):
            assert isinstance(e["field"], str) and e["field"] and e["constraint"] and e["message"]


def test_422_fields_point_inside_the_body_and_query(world):
    r = world.client.post("/tenants/acme/memories", json={"kind": "fact", "scope": "company", "importance": 3,
                                                          "label": "x", "content": "y", "teams": [1, 2]},
                          headers=world.h("acme_ops"))
    err = _envelope(r, 422)
    assert [e["field"] for e in err["errors"]] == ["teams.0", "teams.1"]
    err = _envelope(world.client.get("/tenants/acme/search", params={"q": "x", "k": "many"},
                                     headers=world.h("acme_ops")), 422)
    assert err["field"] == "k" and err["constraint"] == "int_parsing"
    err = _envelope(world.client.post("/tenants/acme/memories", content=b"{oops",
                                      headers=world.h("acme_ops", **{"content-type": "application/json"})), 422)
    assert err["field"] == "body" and err["constraint"] == "json_invalid" and "character" in err["message"]


def test_reckon_errors_always_name_a_field(world):
    r = world.client.post(f"/tenants/acme/memories/{world.ids['icp']}/supersede", json={},
                          headers=world.h("acme_ops"))
    err = _envelope(r, 422)
    assert err["field"] == "replacement"


#: Bodies Python's json module mishandles (a bare RecursionError / ValueError became FastAPI's
#: bare ``400 bad request``; NaN, a duplicate key and a lone surrogate were accepted) ->
#: the constraint each must be refused with.
HOSTILE_BODIES = [
    (b"[" * 100_000 + b"]" * 100_000, "max_depth", "64"),
    (b'{"a":' * 65 + b"1" + b"}" * 65, "max_depth", "64"),
    (b'{"label": 1e999999}', "finite_number", "1e999999"),
    (b'{"label": ' + b"9" * 100_000 + b"}", "max_int_digits", "100000 digits"),
    (b'{"label": NaN}', "finite_number", "NaN"),
    (b'{"label": -Infinity}', "finite_number", "Infinity"),
    (b'{"label": "a", "label": "b"}', "unique_keys", "'label'"),
    (b'{"label": "caf\xe9"}', "utf8", "byte 14"),
    (b'{"label": "x\\ud800y"}', "unicode_scalar", "U+D800 at character 1"),
]


@pytest.mark.parametrize("body,constraint,named", HOSTILE_BODIES, ids=[c for _, c, _ in HOSTILE_BODIES])
def test_hostile_json_bodies_are_refused_by_name_on_every_json_route(world, body, constraint, named):
    before = world.client.get("/tenants/acme/memories", headers=world.h("acme_ops")).json()
    for method, path in _json_routes(world):
        r = world.client.request(method, path, content=body,
                                 headers=world.h("acme_ops", **{"content-type": "application/json"}))
        err = _envelope(r, 422)
        assert err["type"] == "invalid_input" and err["constraint"] == constraint, (method, path, err)
        assert named in err["message"], (method, path, err)
        assert err["field"].startswith("body"), err
    assert world.client.get("/tenants/acme/memories", headers=world.h("acme_ops")).json() == before


def test_expires_at_with_a_seventh_fraction_digit_is_refused_over_rest(world):
    """The REST body model parsed ``expires_at`` with pydantic, which cut a seventh digit
    (``.1234567`` stored as ``.123456``) before the memory model could refuse it."""
    body = {"kind": "fact", "scope": "company", "importance": 3, "label": "exp", "content": "expiry digits",
            "source": "operator"}
    before = world.client.get("/tenants/acme/memories", headers=world.h("acme_ops")).json()
    r = world.client.post("/tenants/acme/memories", json={**body, "expires_at": "2031-06-30T23:59:59.1234567+05:30"},
                          headers=world.h("acme_ops"))
    err = _envelope(r, 422)
    assert err["field"] == "expires_at" and "fractional-second digits" in err["message"], err
    assert world.client.get("/tenants/acme/memories", headers=world.h("acme_ops")).json() == before
    r = world.client.post("/tenants/acme/memories", json={**body, "expires_at": "2031-06-30T23:59:59.1234560-00:00"},
                          headers=world.h("acme_ops"))
    assert r.status_code == 201, r.text
    assert r.json()["expires_at"].startswith("2031-06-30T23:59:59.123456")
