"""REST routes of the event graph (seed 000 MAGMA, seed 004 Graph Memory): record, read a
timeline, traverse, the impact closure and the Mermaid text; bad input is 422, an
unknown node 404, and another tenant's token sees nothing."""

from __future__ import annotations

EVENTS = [
    {"id": "s1", "kind": "episode", "label": "research session", "at": "2026-03-01T09:00:00Z", "timeline": "wiki"},
    {"id": "mismatch", "label": "driver version mismatch", "at": "2026-03-01T09:05:00Z", "timeline": "wiki",
     "episode": "s1", "mentions": [{"label": "Driver v531", "type": "driver"}]},
    {"id": "bug", "label": "shader compilation bug", "at": "2026-03-01T10:10:00+01:00", "timeline": "wiki",
     "episode": "s1", "caused_by": ["mismatch"], "mentions": ["driver:DRIVER v531", "api:WebGPU"]},
]


def test_event_graph_over_http(world):
    c, h = world.client, world.h
    r = c.post("/tenants/acme/events", json={"events": EVENTS}, headers=h("acme_sam"))
    assert r.status_code == 201, r.text
    assert [e["id"] for e in r.json()["events"]] == ["s1", "mismatch", "bug"]
    assert r.json()["events"][2]["mentions"] == ["driver:driver v531", "api:webgpu"]
    assert c.get("/tenants/acme/events/bug", headers=h("acme_ops")).json()["caused_by"] == ["mismatch"]
    tl = c.get("/tenants/acme/timelines/wiki", headers=h("acme_ops")).json()
    assert [e["id"] for e in tl] == ["s1", "mismatch", "bug"]
    rel = c.get("/tenants/acme/graph/related", params={"entity": "driver:driver v531", "edge_type": "entity"},
                headers=h("acme_sam")).json()
    assert sorted(x["node"]["id"] for x in rel) == ["bug", "mismatch"]
    rel = c.get("/tenants/acme/graph/related", params=[("node", "bug"), ("edge_type", "causal"),
                                                       ("edge_type", "temporal")], headers=h("acme_sam")).json()
    assert {(x["edge"], x["node"]["id"]) for x in rel} == {("causedBy", "mismatch")}  # bug and mismatch
    assert c.get("/tenants/acme/graph/impact", params={"node": "mismatch"}, headers=h("acme_sam")).json()[0]["id"] == "bug"
    r = c.post("/tenants/acme/entities/dependencies", json={"entity": "service:UserService",
                                                            "depends_on": {"label": "Auth", "type": "service"}},
               headers=h("acme_sam"))
    assert r.status_code == 201 and r.json()["id"] == "service:userservice"
    imp = c.get("/tenants/acme/graph/impact", params={"entity": "service:auth"}, headers=h("acme_sam")).json()
    assert [x["id"] for x in imp] == ["service:userservice"]
    m = c.get("/tenants/acme/graph/mermaid", params={"node": "s1", "depth": 2}, headers=h("acme_sam"))
    assert m.status_code == 200 and m.headers["content-type"].startswith("text/vnd.mermaid")
    assert m.text.startswith("flowchart LR\n") and "-->|causedBy|" in m.text


def test_event_graph_errors_and_tenants(world):
    c, h = world.client, world.h
    r = c.post("/tenants/acme/events", json={"events": [{"label": "x", "at": "2026-03-01T09:00:00"}]},
               headers=h("acme_sam"))
    assert r.status_code == 422 and "time zone" in r.json()["error"]["message"]
    r = c.post("/tenants/acme/events", json={"events": [{"label": "x", "at": "2026-03-01T09:00:00Z",
                                                         "caused_by": ["nope"]}]}, headers=h("acme_sam"))
    assert r.status_code == 422 and r.json()["error"]["field"] == "caused_by"
    assert c.get("/tenants/acme/events/nope", headers=h("acme_sam")).status_code == 404
    assert c.get("/tenants/acme/graph/related", headers=h("acme_sam")).status_code == 422
    assert c.get("/tenants/acme/graph/related", params={"node": "bug", "edge_type": "gossip"},
                 headers=h("acme_sam")).status_code == 422
    assert c.get("/tenants/beta/events/bug", headers=h("beta_ops")).status_code == 404
    assert c.get("/tenants/acme/events/bug", headers=h("beta_ops")).status_code == 403
