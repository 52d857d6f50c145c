"""``search(..., expand="graph")``: the direct hits, then their depth-1 neighbours over
the links between memories (a chunk's document, supersession lineage, memories
extracted from the same turn), each marked with the hit and the edge that brought it,
read-checked exactly like the hits, never displacing one. Through Tenant, REST
(``GET /search?expand=graph``), MCP (the search tool's ``expand``) and the CLI."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from reckon import InvalidInput, Principal

OPS = Principal.operator("dana", teams=["growth"])
SAM = Principal(person="sam", teams=["growth"])
LEE = Principal(person="lee", teams=["sales"])
FACT = {"kind": "fact", "scope": "company", "importance": 3, "source": "operator"}
DOC = "\n\n".join(
    [f"Section {i}. " + " ".join(f"filler{i}x{j} words about nothing in particular" for j in range(40))
     for i in range(4)]
    + ["Section 9. The zeppelin hangar lease renews every October at 4,250.00 EUR."])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from fastapi.testclient import TestClient

    from reckon.api import Engine
    from reckon.server.auth import TokenStore
    from reckon.server.http import create_app

    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"
    d = tmp_path_factory.mktemp("expand")
    eng = Engine(d)
    t = eng.create_tenant("acme", company_name="Acme")
    for who, teams in (("dana", ["growth"]), ("sam", ["growth"]), ("lee", ["sales"])):
        t.add_person(who, who.title(), teams=teams)
    ids: dict[str, Any] = {}
    doc = t.index_document(DOC, principal=OPS, location="https://example.org/lease.txt", title="Lease terms",
                           scope="company")
    ids["doc"] = doc.document.id
    ids["chunks"] = [c.id for c in doc.chunks]
    old_m = t.remember(principal=OPS, **FACT, label="Office plant", content="The office plant is a ficus.")
    ids["old"] = old_m.id
    ids["new"] = t.supersede(old_m.id, {**FACT, "label": "Office plant", "content": "The office plant is a monstera."},
                             principal=OPS).id
    turn = t.record_turn("standup", "Sam: quokka sightings are up; Lee: and I am leaving in June.", principal=OPS)
    ids["sam_turn"] = t.remember(principal=SAM, kind="fact", scope="user", importance=3, source="extraction",
                                 label="Quokkas", content="Quokka sightings are up this week.",
                                 derived_from=[turn.iri]).id
    ids["lee_turn"] = t.remember(principal=LEE, kind="fact", scope="user", importance=3, source="extraction",
                                 label="Lee leaving", content="Lee is leaving the company in June.",
                                 derived_from=[turn.iri]).id
    ids["team_turn"] = t.remember(principal=OPS, kind="fact", scope="team", teams=["growth"], importance=3,
                                  source="extraction", label="Standup cadence", content="Growth standups are daily.",
                                  derived_from=[turn.iri]).id
    token = TokenStore(d).create("acme", person="sam", teams=["growth"])[1]
    t.recall.index.wait()
    with TestClient(create_app(eng, rate_limit=None)) as client:
        yield {"engine": eng, "tenant": t, "client": client, "h": {"Authorization": f"Bearer {token}"}, "ids": ids}
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old


def _shape(hits: list[Any]) -> list[tuple[str, str | None, str | None]]:
    return [(h.memory.id, h.expanded_from, h.via) for h in hits]


def test_a_chunk_hit_brings_its_document(world):
    t, ids = world["tenant"], world["ids"]
    plain = t.search("zeppelin hangar lease October", principal=OPS, k=1, importance="all")
    hits = t.search("zeppelin hangar lease October", principal=OPS, k=1, importance="all", expand="graph")
    assert [h.memory.id for h in plain] == [hits[0].memory.id] and hits[0].expanded_from is None
    chunk = hits[0].memory
    assert chunk.subclass == "ChunkMemory" and "zeppelin" in chunk.content
    assert _shape(hits[1:]) == [(ids["doc"], chunk.id, "partOf")]
    assert hits[1].score == 0.0 and hits[1].memory.subclass == "DocumentMemory"


def test_a_document_hit_brings_its_chunks(world):
    t, ids = world["tenant"], world["ids"]
    doc = t.get(ids["doc"], principal=OPS)
    hits = t.search(doc.label, principal=OPS, k=1, importance="all", subclasses=["DocumentMemory"], expand="graph")
    assert hits[0].memory.id == ids["doc"]
    rest = hits[1:]
    assert rest and all(h.expanded_from == ids["doc"] and h.via == "hasPart" for h in rest)
    assert all(h.memory.subclass == "ChunkMemory" and h.memory.status.get("partOf") == ids["doc"] for h in rest)
    assert len(ids["chunks"]) >= 3
    assert [h.memory.id for h in rest] == ids["chunks"][:5]                 # document order, at most 5


def test_supersession_lineage_is_expanded(world):
    t, ids = world["tenant"], world["ids"]
    hits = t.search("office plant monstera", principal=OPS, k=1, expand="graph")
    assert _shape(hits) == [(ids["new"], None, None), (ids["old"], ids["new"], "supersedes")]
    assert hits[1].memory.active is False and hits[1].memory.content == "The office plant is a ficus."


def test_memories_of_the_same_turn_but_only_those_the_principal_may_read(world):
    t, ids = world["tenant"], world["ids"]
    sam = t.search("quokka sightings", principal=SAM, k=1, expand="graph")
    assert _shape(sam) == [(ids["sam_turn"], None, None), (ids["team_turn"], ids["sam_turn"], "derivedFrom")]
    assert ids["lee_turn"] not in {h.memory.id for h in sam}                     # Lee's own memory: absent
    assert all("leaving" not in h.memory.content for h in sam)
    lee = t.search("Lee leaving June", principal=LEE, k=1, expand="graph")
    assert _shape(lee) == [(ids["lee_turn"], None, None)]                       # sam's and growth's: absent
    ops = t.search("standup cadence daily", principal=OPS, k=1, scopes=["team"], expand="graph")
    assert ops[0].memory.id == ids["team_turn"] and all(h.memory.scope == "team" for h in ops)


def test_expansions_never_displace_a_direct_hit(world):
    t = world["tenant"]
    for q in ("office plant", "quokka", "zeppelin lease", "section filler words"):
        for k in (1, 3, 10):
            plain = t.search(q, principal=OPS, k=k, importance="all", record_access=False)
            grown = t.search(q, principal=OPS, k=k, importance="all", record_access=False, expand="graph")
            direct = [h for h in grown if h.expanded_from is None]
            assert [h.memory.id for h in direct] == [h.memory.id for h in plain]
            assert grown[:len(direct)] == direct                             # expansions come after
            ids = [h.memory.id for h in grown]
            assert len(ids) == len(set(ids))


def test_bad_expand_is_refused(world):
    with pytest.raises(InvalidInput, match="expand"):
        world["tenant"].search("plant", principal=OPS, expand="graph+")


def test_rest_search_expand_graph(world):
    c, h, ids = world["client"], world["h"], world["ids"]
    r = c.get("/tenants/acme/search", params={"q": "quokka sightings", "k": 1, "expand": "graph"}, headers=h)
    assert r.status_code == 200, r.text
    hits = r.json()["hits"]
    assert [(x["memory"]["id"], x["expanded_from"], x["via"]) for x in hits] == [
        (ids["sam_turn"], None, None), (ids["team_turn"], ids["sam_turn"], "derivedFrom")]
    assert "leaving" not in r.text and ids["lee_turn"] not in r.text
    plain = c.get("/tenants/acme/search", params={"q": "quokka sightings", "k": 1}, headers=h).json()["hits"]
    assert [x["memory"]["id"] for x in plain] == [ids["sam_turn"]]
    assert c.get("/tenants/acme/search", params={"q": "quokka", "expand": "tree"}, headers=h).status_code == 422


def test_tool_call_and_mcp_search_expand(world):
    from mcp import Client

    from reckon.server.mcp import build_server

    t, ids = world["tenant"], world["ids"]
    got = t.handle_tool_call("search", {"query": "office plant monstera", "k": 1, "expand": "graph"}, OPS)
    assert [(x["id"], x.get("expanded_from"), x.get("via")) for x in got["hits"]] == [
        (ids["new"], None, None), (ids["old"], ids["new"], "supersedes")]
    bad = t.handle_tool_call("search", {"query": "plant", "expand": "all"}, OPS)
    assert bad["ok"] is False
    out: dict[str, Any] = {}

    async def session() -> None:
        with anyio.fail_after(120):
            async with Client(build_server(t, SAM)) as c:
                out["r"] = await c.call_tool("search", {"query": "quokka sightings", "k": 1, "expand": "graph"})

    anyio.run(session)
    hits = out["r"].structured_content["hits"]
    assert [(x["id"], x.get("expanded_from"), x.get("via")) for x in hits] == [
        (ids["sam_turn"], None, None), (ids["team_turn"], ids["sam_turn"], "derivedFrom")]


def test_cli_search_expand_graph(world):
    from tests.cli.conftest import run_cli

    ids = world["ids"]
    r = run_cli(world["engine"].data_dir, "search", "office plant monstera", "--tenant", "acme", "-k", "1",
                "--operator", "--as", "dana", "--expand", "graph")
    assert r.code == 0, r.err
    lines = r.out.strip().splitlines()
    assert ids["new"] in lines[0] and lines[1].lstrip().startswith("+") and ids["old"] in lines[1]
    assert f"via supersedes of {ids['new']}" in lines[1]
    bad = run_cli(world["engine"].data_dir, "search", "plant", "--tenant", "acme", "--as", "dana", "--expand", "x")
    assert bad.code != 0 and "expand" in bad.err
