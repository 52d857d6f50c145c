"""REST routes of the keyed shared notes (seed 000 Transit): PUT / GET / DELETE
``/tenants/{id}/notes/{key}``, listing by prefix, namespaces, compare-and-set as 409,
bad input as 422, and no tenant reading another's notes."""

from __future__ import annotations


def test_notes_over_http(world):
    c, h = world.client, world.h
    key = "project/site/planning/outline"
    r = c.put(f"/tenants/acme/notes/{key}", json={"value": {"plan": ["a", "b"]}}, headers=h("acme_sam"))
    assert r.status_code == 200, r.text
    assert r.json()["version"] == 1 and r.json()["author"] == "sam" and r.json()["namespace"] == "planning"
    r = c.get(f"/tenants/acme/notes/{key}", headers=h("acme_ops"))
    assert r.status_code == 200 and r.json()["value"] == {"plan": ["a", "b"]}
    c.put("/tenants/acme/notes/project/site/findings/s1", json={"value": "ok", "ttl": 3600}, headers=h("acme_ops"))
    r = c.get("/tenants/acme/notes", params={"prefix": "project/site/"}, headers=h("acme_sam"))
    assert [n["key"] for n in r.json()] == ["project/site/findings/s1", key]
    assert r.json()[0]["expires_at"] is not None
    r = c.get("/tenants/acme/note-namespaces/site", headers=h("acme_sam"))
    assert r.json() == [{"project": "site", "namespace": "findings", "count": 1},
                        {"project": "site", "namespace": "planning", "count": 1}]

    lost = c.put(f"/tenants/acme/notes/{key}", json={"value": "x", "expected_version": 0}, headers=h("acme_ops"))
    assert lost.status_code == 409 and lost.json()["ok"] is False and lost.json()["version"] == 1
    won = c.put(f"/tenants/acme/notes/{key}", json={"value": "x", "expected_version": 1}, headers=h("acme_ops"))
    assert won.status_code == 200 and won.json()["ok"] is True and won.json()["version"] == 2

    assert c.delete(f"/tenants/acme/notes/{key}", params={"expected_version": 1}, headers=h("acme_sam")).status_code == 404
    assert c.delete(f"/tenants/acme/notes/{key}", headers=h("acme_sam")).status_code == 204
    r = c.get(f"/tenants/acme/notes/{key}", headers=h("acme_sam"))
    assert r.status_code == 404 and r.json()["error"]["type"] == "unknown_note"


def test_bad_notes_requests_are_422_and_tenants_are_apart(world):
    c, h = world.client, world.h
    r = c.put("/tenants/acme/notes/project/site/x", json={"value": 1}, headers=h("acme_sam"))
    assert r.status_code == 422 and r.json()["error"]["field"] == "key"
    r = c.put("/tenants/acme/notes/project/site/x/y", json={"value": 1, "ttl": -1}, headers=h("acme_sam"))
    assert r.status_code == 422
    r = c.put("/tenants/acme/notes/project/site/x/y", json={"value": 1, "extra": 2}, headers=h("acme_sam"))
    assert r.status_code == 422
    c.put("/tenants/acme/notes/project/site/secret/plan", json={"value": "acme"}, headers=h("acme_sam"))
    assert c.get("/tenants/acme/notes/project/site/secret/plan", headers=h("beta_ops")).status_code == 403
    assert c.get("/tenants/beta/notes/project/site/secret/plan", headers=h("beta_ops")).status_code == 404
    assert c.get("/tenants/beta/notes", params={"prefix": "project/"}, headers=h("beta_ops")).json() == []
    assert c.get("/tenants/acme/notes", headers={}).status_code == 401
