"""REST transcript routes (issue 11): POST /turns (one or a batch, all or nothing),
GET /conversations, GET /conversations/{id}/turns, GET /turns/search; a token records
user turns only as its own person and reads only conversations it took part in."""

from __future__ import annotations


def test_record_list_and_search_turns(world):
    h = world.h("acme_sam")
    r = world.client.post("/tenants/acme/turns", json={"conversation": "rest-1", "text": "Keep ROAS above 3 on Meta.",
                                                       "at": "2026-03-01T09:15:00.5-05:00"}, headers=h)
    assert r.status_code == 201, r.text
    [turn] = r.json()["turns"]
    assert (turn["id"], turn["speaker"], turn["role"]) == ("rest-1/0", "sam", "user")
    assert turn["at"].startswith("2026-03-01T14:15:00.5")
    r = world.client.post("/tenants/acme/turns", json={"turns": [
        {"conversation": "rest-1", "text": "Noted.", "role": "assistant"},
        {"conversation": "rest-1", "text": "search result: ROAS 2.1", "role": "tool"}]}, headers=h)
    assert r.status_code == 201 and [t["id"] for t in r.json()["turns"]] == ["rest-1/1", "rest-1/2"]
    convs = world.client.get("/tenants/acme/conversations", headers=h).json()
    assert [(c["id"], c["turns"]) for c in convs] == [("rest-1", 3)]
    turns = world.client.get("/tenants/acme/conversations/rest-1/turns?after=0", headers=h).json()
    assert [t["role"] for t in turns] == ["assistant", "tool"]
    hits = world.client.get("/tenants/acme/turns/search", params={"q": "ROAS Meta"}, headers=h).json()["hits"]
    assert hits and hits[0]["turn"]["conversation"] == "rest-1"
    # another member neither lists nor reads nor finds it
    other = world.h("acme_analyst")
    assert world.client.get("/tenants/acme/conversations", headers=other).json() == []
    r = world.client.get("/tenants/acme/conversations/rest-1/turns", headers=other)
    assert r.status_code == 404
    assert world.client.get("/tenants/acme/turns/search", params={"q": "ROAS"}, headers=other).json()["hits"] == []


def test_refused_turns_write_nothing(world):
    before = world.engine.tenant("acme").dump()
    h = world.h("acme_sam")
    r = world.client.post("/tenants/acme/turns", json={"turns": [
        {"conversation": "rest-2", "text": "fine"}, {"conversation": "rest-2", "text": "x", "role": "robot"}]},
        headers=h)
    assert r.status_code == 422 and r.json()["error"]["field"] == "turns[1].role"
    r = world.client.post("/tenants/acme/turns", json={"conversation": "rest-2", "text": "I'm Dana",
                                                       "speaker": "dana"}, headers=h)
    assert r.status_code == 403
    assert world.engine.tenant("acme").dump() == before
