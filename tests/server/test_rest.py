"""REST routes: remember, get, update (three-state), supersede, search, bundle, tools,
metrics; errors mapped to HTTP statuses with field and constraint; OpenAPI document."""

from __future__ import annotations

from tests.server.conftest import BUDGET


def _remember(world, who, **fields):
    body = {"kind": "fact", "scope": "user", "importance": 3, **fields}
    r = world.client.post("/tenants/acme/memories", json=body, headers=world.h(who))
    assert r.status_code != 409, r.text  # the test memories are meant to be unrelated
    return r


def test_remember_then_get(world):
    r = _remember(world, "acme_sam", label="Weekly report day", content="The weekly report goes out on Friday.")
    assert r.status_code == 201, r.text
    m = r.json()
    assert m["owner"] == "sam" and m["author"] == "sam" and m["active"] is True and m["source"] == "agent_tool"
    got = world.client.get(f"/tenants/acme/memories/{m['id']}", headers=world.h("acme_sam"))
    assert got.status_code == 200 and got.json() == m
    py = world.engine.tenant("acme").get(m["id"])
    assert py.label == "Weekly report day" and py.content == m["content"]


def test_get_hides_other_peoples_user_memories(world):
    mid = world.ids["sam_pref"]
    assert world.client.get(f"/tenants/acme/memories/{mid}", headers=world.h("acme_sam")).status_code == 200
    assert world.client.get(f"/tenants/acme/memories/{mid}", headers=world.h("acme_ops")).status_code == 200
    r = world.client.get(f"/tenants/acme/memories/{mid}", headers=world.h("acme_analyst"))
    assert r.status_code == 404 and r.json()["error"]["type"] == "unknown_memory"
    assert "bullet points" not in r.text


def test_unknown_memory_is_404(world):
    r = world.client.get(f"/tenants/acme/memories/{'0' * 32}", headers=world.h("acme_ops"))
    assert r.status_code == 404 and r.json()["error"]["type"] == "unknown_memory"


def test_request_validation_is_422_with_field_and_constraint(world):
    r = _remember(world, "acme_sam", label="Bad importance", content="x", importance=9)
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["type"] == "invalid_input" and err["field"] == "importance" and err["constraint"] == "less_than_equal"
    r = _remember(world, "acme_sam", label="Bad field", content="x", colour="red")
    assert r.status_code == 422 and r.json()["error"]["field"] == "colour"


def test_shape_violation_is_422_with_field_and_constraint(world):
    bad = {**BUDGET, "label": "Negative cap", "properties": {**BUDGET["properties"], "platform": "google",
                                                             "amount": -5}}
    before = world.engine.tenant("acme").dump()
    r = world.client.post("/tenants/acme/memories", json=bad, headers=world.h("acme_ops"))
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["type"] in ("shape_violation", "invalid_input")
    assert err["field"] and "amount" in err["field"]
    assert err["constraint"]
    assert world.engine.tenant("acme").dump() == before


def test_not_authorized_is_403(world):
    r = _remember(world, "acme_sam", scope="company", label="Company rule from a member", content="No ads on Sunday")
    assert r.status_code == 403
    err = r.json()["error"]
    assert err["type"] == "not_authorized" and "operator" in err["message"]


def test_conflict_is_409_with_conflict_id_and_candidates(world):
    new = {**BUDGET, "label": "Facebook ceiling", "content": "Cap Facebook at 45k",
           "properties": {**BUDGET["properties"], "amount": 45000}}
    r = world.client.post("/tenants/acme/memories", json=new, headers=world.h("acme_ops"))
    assert r.status_code == 409, r.text
    err = r.json()["error"]
    assert err["type"] == "conflict_pending" and err["candidates"] == [world.ids["budget"]] and err["conflict_id"]
    # confirm keep_both: written, the old one stays active
    r = world.client.post("/tenants/acme/memories", headers=world.h("acme_ops"),
                          json={**new, "conflict_resolution": "keep_both", "conflict_id": err["conflict_id"]})
    assert r.status_code == 201, r.text
    assert world.engine.tenant("acme").get(world.ids["budget"]).active
    assert world.engine.tenant("acme").get(r.json()["id"]).properties["amount"] == 45000


def test_patch_three_state(world):
    m = _remember(world, "acme_sam", label="Home timezone", content="Works from Lisbon, WET.",
                  expires_at="2031-01-01T00:00:00Z").json()
    assert m["expires_at"].startswith("2031-01-01")
    url = f"/tenants/acme/memories/{m['id']}"
    r = world.client.patch(url, json={"importance": 4}, headers=world.h("acme_sam"))  # absent fields untouched
    assert r.status_code == 200, r.text
    assert r.json()["importance"] == 4 and r.json()["expires_at"].startswith("2031-01-01")
    assert r.json()["label"] == "Home timezone" and r.json()["content"] == "Works from Lisbon, WET."
    r = world.client.patch(url, json={"expires_at": None}, headers=world.h("acme_sam"))  # null removes
    assert r.status_code == 200 and r.json()["expires_at"] is None and r.json()["importance"] == 4
    assert world.engine.tenant("acme").get(m["id"]).expires_at is None
    r = world.client.patch(url, json={"label": None}, headers=world.h("acme_sam"))  # required: cannot remove
    assert r.status_code == 422 and r.json()["error"]["field"] == "label"
    # not the owner's: another member's private memory is answered like an absent one (issue 10)
    r = world.client.patch(url, json={"importance": 2}, headers=world.h("acme_analyst"))
    assert r.status_code == 404 and r.json()["error"]["type"] == "unknown_memory"
    assert "sam" not in r.text
    r = world.client.patch(url, json={"scope": "company"}, headers=world.h("acme_sam"))  # immutable
    assert r.status_code == 422 and r.json()["error"]["field"] == "scope"


def test_supersede(world):
    old = _remember(world, "acme_sam", label="Lunch break", content="Lunch at noon, no calls.").json()
    url = f"/tenants/acme/memories/{old['id']}/supersede"
    replacement = {"kind": "fact", "scope": "user", "importance": 3, "label": "Lunch break moved",
                   "content": "Lunch at one o'clock, no calls."}
    r = world.client.post(url, json={"replacement": replacement}, headers=world.h("acme_analyst"))
    assert r.status_code == 404  # only the owner supersedes; to anyone else it is as if absent (issue 10)
    r = world.client.post(url, json={}, headers=world.h("acme_sam"))
    assert r.status_code == 422 and r.json()["error"]["field"] == "replacement"
    r = world.client.post(url, json={"replacement": replacement}, headers=world.h("acme_sam"))
    assert r.status_code == 200, r.text
    new = r.json()
    assert new["supersedes"] == [old["id"]] and new["active"]
    got = world.client.get(f"/tenants/acme/memories/{old['id']}", headers=world.h("acme_sam")).json()
    assert got["superseded_by"] == [new["id"]] and got["active"] is False


def test_search(world):
    # the memories earlier tests wrote are searchable by keyword at once and by vector once
    # embedded: wait for that, so the HTTP and Python searches below rank the same documents
    world.engine.tenant("acme").search("open the index", principal=_principal(world, "acme_sam"))
    assert world.engine.tenant("acme").recall.wait(60)
    r = world.client.get("/tenants/acme/search", params={"q": "small businesses employees"}, headers=world.h("acme_sam"))
    assert r.status_code == 200, r.text
    hits = r.json()["hits"]
    assert hits and hits[0]["memory"]["id"] == world.ids["icp"] and hits[0]["score"] > 0
    py = world.engine.tenant("acme").search("small businesses employees", principal=_principal(world, "acme_sam"))
    assert [h["memory"]["id"] for h in hits] == [h.memory.id for h in py]
    # another person does not find Sam's personal memory
    r = world.client.get("/tenants/acme/search", params={"q": "bullet points short answers"},
                         headers=world.h("acme_analyst"))
    assert world.ids["sam_pref"] not in [h["memory"]["id"] for h in r.json()["hits"]]
    r = world.client.get("/tenants/acme/search", params={"q": "bullet points short answers"},
                         headers=world.h("acme_sam"))
    assert world.ids["sam_pref"] in [h["memory"]["id"] for h in r.json()["hits"]]
    r = world.client.get("/tenants/acme/search", params={"q": "x", "kind": "nonsense"}, headers=world.h("acme_sam"))
    assert r.status_code == 422 and r.json()["error"]["field"] == "kind.0"


def _principal(world, who):
    from reckon.server.auth import TokenStore

    return TokenStore(world.data_dir).verify("acme", world.tokens[who]).principal()


def test_bundle(world):
    r = world.client.get("/tenants/acme/bundle", params={"conversation": "meta spend"}, headers=world.h("acme_sam"))
    assert r.status_code == 200, r.text
    b = r.json()
    assert b["tenant"] == "acme" and b["principal"] == "sam"
    ids = [it["id"] for blk in b["blocks"] for it in blk["items"]]
    assert world.ids["budget"] in ids  # Critical company memory
    assert world.ids["icp"] not in ids  # Medium: search, not bundle
    assert len(b["text"]) <= b["budget_chars"] and "Meta monthly spend cap" in b["text"]
    py = world.engine.tenant("acme").context(_principal(world, "acme_sam"), conversation="meta spend")
    assert ids == py.ids()
    r = world.client.get("/tenants/acme/bundle", params={"budget_chars": 600},
                         headers=world.h("acme_sam", Accept="text/plain"))
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert len(r.text) <= 600 and r.text == world.engine.tenant("acme").context(
        _principal(world, "acme_sam"), budget_chars=600).render()


def test_tools(world):
    r = world.client.get("/tenants/acme/tools", params={"format": "anthropic"}, headers=world.h("acme_sam"))
    assert r.status_code == 200
    assert r.json() == world.engine.tenant("acme").tool_definitions(format="anthropic")


def test_tenant_metrics(world):
    r = world.client.get("/tenants/acme/metrics", headers=world.h("acme_ops", Accept="application/json"))
    assert r.status_code == 200, r.text
    m = r.json()
    mems = world.engine.tenant("acme").memories(active_only=False)
    counts: dict[tuple[str, str, bool], int] = {}
    for x in mems:
        counts[(x.kind, x.scope, x.active)] = counts.get((x.kind, x.scope, x.active), 0) + 1
    assert {(d["kind"], d["scope"], d["active"]): d["count"] for d in m["memories"]} == counts
    assert m["generation"] == world.engine.tenant("acme").store.generation()
    assert m["reasoner"]["last_derivation_seconds"] >= 0 and m["reasoner"]["strata"] > 0
    text = world.client.get("/tenants/acme/metrics", headers=world.h("acme_ops")).text
    for (kind, scope, active), n in counts.items():
        assert f'reckon_memories{{tenant="acme",kind="{kind}",scope="{scope}",active="{str(active).lower()}"}} {n}' in text
    assert 'reckon_reasoner_last_derivation_seconds{tenant="acme"}' in text


def test_openapi_lists_the_routes(world):
    doc = world.client.get("/openapi.json").json()
    paths = doc["paths"]
    expected = {
        "/tenants/{tenant_id}/sparql": {"get", "post"},
        "/tenants/{tenant_id}/memories": {"post"},
        "/tenants/{tenant_id}/memories/{memory_id}": {"get", "patch"},
        "/tenants/{tenant_id}/memories/{memory_id}/supersede": {"post"},
        "/tenants/{tenant_id}/search": {"get"},
        "/tenants/{tenant_id}/bundle": {"get"},
        "/tenants/{tenant_id}/metrics": {"get"},
        "/metrics": {"get"},
    }
    for path, methods in expected.items():
        assert methods <= set(paths[path]), path
        for m in methods:
            assert paths[path][m]["summary"]
    schemas = doc["components"]["schemas"]
    assert {"Memory", "ContextBundle", "SearchOut", "RememberBody", "PatchBody", "ErrorBody"} <= set(schemas)
    ok = paths["/tenants/{tenant_id}/memories"]["post"]["responses"]["201"]["content"]["application/json"]["schema"]
    assert ok["$ref"].endswith("/Memory")
    assert "HTTPBearer" in doc["components"]["securitySchemes"]
    sparql_types = set(paths["/tenants/{tenant_id}/sparql"]["get"]["responses"]["200"]["content"])
    assert {"application/sparql-results+json", "application/sparql-results+xml", "text/csv",
            "text/tab-separated-values", "text/turtle"} <= sparql_types


def test_list_memories_shows_only_visible_ones(world):
    r = world.client.get("/tenants/acme/memories", headers=world.h("acme_analyst"))
    assert r.status_code == 200
    ids = {m["id"] for m in r.json()}
    tenant = world.engine.tenant("acme")
    company = {m.id for m in tenant.memories() if m.scope == "company"}
    assert company <= ids and world.ids["sam_pref"] not in ids
    assert all(m["scope"] == "company" for m in r.json())  # ana has no memories and no teams
    r = world.client.get("/tenants/acme/memories", params={"scope": "user"}, headers=world.h("acme_sam"))
    assert world.ids["sam_pref"] in {m["id"] for m in r.json()} and {m["owner"] for m in r.json()} == {"sam"}
    r = world.client.get("/tenants/acme/memories", params={"subclass": "BudgetConstraintMemory"},
                         headers=world.h("acme_ops"))
    assert world.ids["budget"] in {m["id"] for m in r.json()}
    assert {m["subclass"] for m in r.json()} == {"BudgetConstraintMemory"}


def test_history_restore_delete(world):
    ops = world.h("acme_ops")
    a = world.client.post("/tenants/acme/memories", headers=ops, json={
        "kind": "fact", "scope": "company", "importance": 3, "source": "operator",
        "label": "Office address", "content": "The office is at 1 Harbour Street."}).json()
    b = world.client.post(f"/tenants/acme/memories/{a['id']}/supersede", headers=ops, json={"replacement": {
        "kind": "fact", "scope": "company", "importance": 3, "source": "operator",
        "label": "Office address (moved)", "content": "The office moved to 9 Mill Lane."}}).json()
    h = world.client.get(f"/tenants/acme/memories/{b['id']}/history", headers=ops)
    assert h.status_code == 200
    assert [e["id"] for e in h.json()] == [e.id for e in world.engine.tenant("acme").history(b["id"])]
    assert {a["id"], b["id"]} <= {e["id"] for e in h.json()}
    r = world.client.post(f"/tenants/acme/memories/{a['id']}/restore", headers=world.h("acme_sam"))
    assert r.status_code == 403  # operators only
    r = world.client.post(f"/tenants/acme/memories/{a['id']}/restore", headers=ops)
    assert r.status_code == 409 and r.json()["error"]["type"] == "restore_refused"  # b is live
    assert world.client.delete(f"/tenants/acme/memories/{b['id']}", headers=world.h("acme_sam")).status_code == 403
    assert world.client.delete(f"/tenants/acme/memories/{b['id']}", headers=ops).status_code == 204
    assert world.client.get(f"/tenants/acme/memories/{b['id']}", headers=ops).status_code == 404
    r = world.client.post(f"/tenants/acme/memories/{a['id']}/restore", headers=ops)
    assert r.status_code == 200, r.text
    assert r.json()["active"] is True and world.engine.tenant("acme").get(a["id"]).active


def test_write_metrics_count_the_writes_served(world):
    before = world.client.get("/tenants/acme/metrics", headers=world.h("acme_ops", Accept="application/json"))
    w0 = before.json()["writes"].get("remember", {"count": 0, "derivations": 0})
    n0 = w0["count"]
    _remember(world, "acme_sam", label="Preferred chart type", content="Bar charts over pie charts.")
    _remember(world, "acme_sam", label="Refused", content="x", importance=0)  # refused: counted, not derived
    after = world.client.get("/tenants/acme/metrics", headers=world.h("acme_ops", Accept="application/json")).json()
    w = after["writes"]["remember"]
    assert w["count"] == n0 + 1 and w["seconds_sum"] > 0  # the 422 is refused before the route runs
    assert w["derivations"] == w0["derivations"] + 1
    assert 0 <= w["derivation_seconds_sum"] <= w["seconds_sum"]
    text = world.client.get("/tenants/acme/metrics", headers=world.h("acme_ops")).text
    assert f'reckon_write_seconds_count{{tenant="acme",route="remember"}} {n0 + 1}' in text
    assert 'reckon_derivation_seconds_sum{tenant="acme",route="remember"}' in text


def test_concurrent_writes_and_reads(world):
    """Requests run in the server's thread pool: concurrent writes to one tenant are
    serialized by the store, reads in between see committed states only."""
    from concurrent.futures import ThreadPoolExecutor

    topics = ["apple orchard harvest", "violin concert tickets", "rocket engine thrust", "glacier hiking boots",
              "quantum lattice spin", "saffron rice recipe", "marathon training plan", "oak furniture polish"]

    def write(topic: str):
        return world.client.post("/tenants/acme/memories", headers=world.h("acme_sam"), json={
            "kind": "context", "scope": "user", "importance": 2, "label": topic.title(), "content": topic})

    def read(_: int):
        return world.client.get("/tenants/acme/sparql", headers=world.h("acme_ops"), params={
            "query": "SELECT (COUNT(*) AS ?n) WHERE { ?m a <https://reckon.dev/ns/core#Memory> }"})

    with ThreadPoolExecutor(max_workers=6) as pool:
        wf = [pool.submit(write, t) for t in topics]
        rf = [pool.submit(read, i) for i in range(6)]
        writes = [f.result(timeout=120) for f in wf]
        reads = [f.result(timeout=120) for f in rf]
    assert [r.status_code for r in writes] == [201] * len(topics), [r.text for r in writes if r.status_code != 201]
    assert all(r.status_code == 200 for r in reads)
    ids = {r.json()["id"] for r in writes}
    tenant = world.engine.tenant("acme")
    assert ids <= {m.id for m in tenant.memories(scope="user")}
    assert {tenant.get(i).content for i in ids} == set(topics)


def test_tool_call_route(world):
    r = world.client.post("/tenants/acme/tools/search", json={"query": "small businesses employees"},
                          headers=world.h("acme_sam"))
    assert r.status_code == 200 and r.json()["ok"] is True
    assert r.json()["hits"][0]["id"] == world.ids["icp"]
    r = world.client.post("/tenants/acme/tools/remember", json={"label": "x", "content": "y", "kind": "fact",
                                                                "scope": "company", "importance": 4},
                          headers=world.h("acme_sam"))
    assert r.status_code == 200 and r.json()["ok"] is False and r.json()["error"]["type"] == "not_authorized"
    r = world.client.post("/tenants/acme/tools/get_context", json={}, headers=world.h("acme_sam"))
    assert r.status_code == 200 and world.ids["budget"] in r.json()["ids"]
