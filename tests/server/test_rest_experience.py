"""REST routes of experience records and strategy cards (seed 000 Evolving Memory)."""

from __future__ import annotations


def test_experience_over_http(world):
    c, h = world.client, world.h
    for i in range(5):
        r = c.post("/tenants/acme/experiences", json={
            "task": f"Pause the campaign that overspent {i}", "outcome": "success", "tools": ["meta-api"],
            "strategy": "Check the cap before pausing", "worked": "the cap was clear"}, headers=h("acme_sam"))
        assert r.status_code == 201, r.text
        assert r.json()["author"] == "sam"
    c.post("/tenants/acme/experiences", json={"task": "Pause TikTok", "outcome": "failure",
                                              "strategy": "Pause everything"}, headers=h("acme_sam"))
    cards = c.get("/tenants/acme/strategies", params={"promoted": "true"}, headers=h("acme_ops")).json()
    assert [(s["approach"], s["success_count"], s["promoted"]) for s in cards] == [
        ("Check the cap before pausing", 5, True)]
    all_ = c.get("/tenants/acme/strategies", headers=h("acme_ops")).json()
    assert sorted(s["success_count"] for s in all_) == [0, 5]
    rec = c.get("/tenants/acme/strategies/recommend", params={"task": "the campaign overspent"},
                headers=h("acme_sam")).json()
    assert rec[0]["approach"] == "Check the cap before pausing" and rec[0]["score"] > 0
    sim = c.get("/tenants/acme/experiences/similar", params={"task": "pause tiktok", "k": 1},
                headers=h("acme_sam")).json()
    assert len(sim) == 1 and sim[0]["task"] == "Pause TikTok"
    bad = c.post("/tenants/acme/experiences", json={"task": "x", "outcome": "won"}, headers=h("acme_sam"))
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "outcome"
    assert c.get("/tenants/beta/strategies", headers=h("beta_ops")).json() == []
