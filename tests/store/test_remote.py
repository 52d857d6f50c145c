"""The remote backend (reckon.store.remote) against real servers: tenant isolation on a
shared server (crafted ids and graph names, every request recorded), user SPARQL checked
and evaluated on the mirror, idempotent retried commits, the write lease and the
generation compare-and-set between two nodes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyoxigraph import Literal, NamedNode, Quad

from reckon._errors import InvalidInput, InvalidTenantId, ReadOnlyQuery, StoreError
from reckon.store import MEMORIES, SCHEMA, QueryLimits, QueryPool, TenantStore, inspect_query
from reckon.store.backends import WriteConflict
from reckon.store.graphs import META
from reckon.store.remote import Endpoint, RemoteBackend
from reckon.store.tenant_store import PUBLIC_IRIS
from tests.store.toy_reasoner import SUB, TYPE, ToyReasoner

REMOTE = ["oxigraph", "virtuoso"]


def n(x: str) -> NamedNode:
    return NamedNode(f"urn:x:{x}")


pytestmark = pytest.mark.parametrize("backend", REMOTE, indirect=True)


@pytest.fixture()
def two(create_store) -> tuple[TenantStore, TenantStore]:  # type: ignore[no-untyped-def]
    a = create_store("a", initial=[Quad(n("A"), SUB, n("B"), SCHEMA), Quad(n("a-secret"), TYPE, n("A"), MEMORIES)],
                     reasoner_factory=ToyReasoner)
    b = create_store("b", initial=[Quad(n("b-secret"), TYPE, n("A"), MEMORIES)], reasoner_factory=ToyReasoner)
    return a, b


def _record(ep: Endpoint) -> list[str]:
    seen: list[str] = []

    def hook(req: httpx.Request) -> None:
        seen.append(req.content.decode() if req.content else "")

    ep.client().event_hooks["request"] = [hook]
    return seen


TENANT_GRAPH = re.compile(r"urn(?:%3A|:)reckon(?:%3A|:)test[0-9-]+(?:%3A|:)([a-z0-9_-]+)(?:%3A|:)")


def test_every_request_of_a_tenant_names_only_its_graphs(two: tuple[TenantStore, TenantStore]) -> None:
    a, b = two
    ep = a.backend.endpoint  # type: ignore[attr-defined]
    seen = _record(ep)
    for i in range(3):
        with a.transaction() as txn:
            txn.add(Quad(n(f"m{i}"), TYPE, n("A"), MEMORIES))
        txn.remove(Quad(n("a-secret"), TYPE, n("A"), MEMORIES))
    a.release()
    fresh = TenantStore(a.path, reasoner_factory=ToyReasoner)
    assert fresh.generation() == a.generation()
    fresh.export_trig()
    assert seen, "no request recorded"
    for body in seen:
        for tenant in TENANT_GRAPH.findall(body):
            assert tenant == "a", f"tenant a's request named tenant {tenant}'s graphs: {body[:200]}"
    # and b's data is b's alone
    assert n("b-secret") not in {q.subject for q in a.asserted()}
    assert n("a-secret") not in {q.subject for q in b.asserted()}


@pytest.mark.parametrize("bad", ["a:graph", "A", "a b", "a>", "../b", "", "a\n", "-a", "a" * 64, "b:x", "é"])
def test_crafted_tenant_ids_never_build_graph_iris(two: tuple[TenantStore, TenantStore], bad: str) -> None:
    ep = two[0].backend.endpoint  # type: ignore[attr-defined]
    with pytest.raises(InvalidTenantId):
        RemoteBackend(ep, bad, "x")


@pytest.mark.parametrize("graph", ["urn:reckon:graph:other", "urn:reckon:tenant:b:graph:memories", "urn:x:g"])
def test_only_the_seven_logical_graphs_are_mapped(two: tuple[TenantStore, TenantStore], graph: str) -> None:
    with pytest.raises(StoreError):
        two[0].backend.graph(NamedNode(graph))  # type: ignore[attr-defined]


@pytest.mark.parametrize("prefix", ["urn:x> <urn:y", "urn:x", "urn:x:{"])
def test_crafted_graph_prefixes_are_refused(backend: str, prefix: str) -> None:
    with pytest.raises(StoreError):
        Endpoint(name="e", url="http://127.0.0.1:1", server="oxigraph", graph_prefix=prefix)


def test_user_sparql_is_guarded_and_scoped_to_the_tenant(two: tuple[TenantStore, TenantStore]) -> None:
    a, b = two
    pool = QueryPool(QueryLimits(workers=1, timeout=30))
    try:
        def run(text: str) -> Any:
            return pool.run(a, inspect_query(text, None, public_graphs=PUBLIC_IRIS)).to_python()

        rows = run("SELECT DISTINCT ?g ?s WHERE { GRAPH ?g { ?s ?p ?o } }")
        graphs = {r["g"].value for r in rows}
        assert graphs <= set(PUBLIC_IRIS) and "urn:reckon:graph:memories" in graphs
        subjects = {r["s"] for r in rows}
        assert n("a-secret") in subjects and n("b-secret") not in subjects
        with a.transaction() as txn:
            txn.add(Quad(n("later"), TYPE, n("A"), MEMORIES))
        assert {r["s"] for r in run("SELECT ?s WHERE { ?s <urn:t:type> <urn:x:B> }")} == {n("a-secret"), n("later")}
        for bad in ("SELECT * WHERE { SERVICE <http://127.0.0.1:1/> { ?s ?p ?o } }",
                    "INSERT DATA { <urn:x:a> <urn:x:b> <urn:x:c> }"):
            with pytest.raises(ReadOnlyQuery):
                run(bad)
        for bad in ("SELECT * FROM <urn:reckon:graph:meta> WHERE { ?s ?p ?o }",
                    f"SELECT * FROM <{b.backend.graph(MEMORIES).value}> WHERE {{ ?s ?p ?o }}"):  # type: ignore[attr-defined]
            with pytest.raises(InvalidInput):
                run(bad)
        # the server's own graph names mean nothing to a query: it runs on the mirror
        other = b.backend.graph(MEMORIES).value  # type: ignore[attr-defined]
        assert run(f"SELECT * WHERE {{ GRAPH <{other}> {{ ?s ?p ?o }} }}") == []
    finally:
        pool.close()


def test_a_retried_commit_applies_once(two: tuple[TenantStore, TenantStore], monkeypatch: pytest.MonkeyPatch) -> None:
    a, _ = two
    ep = a.backend.endpoint  # type: ignore[attr-defined]
    real = Endpoint.update
    calls = {"n": 0}

    def lossy(self: Endpoint, text: str, *, retry: bool = True) -> None:
        if not retry:  # a commit: the first lands but its answer is lost, the second never leaves
            calls["n"] += 1
            if calls["n"] == 1:
                real(self, text, retry=retry)
                raise httpx.ReadTimeout("answer lost")
            if calls["n"] == 2:
                raise httpx.ConnectError("connection refused")
        real(self, text, retry=retry)

    monkeypatch.setattr(Endpoint, "update", lossy)
    with a.transaction() as txn:
        txn.add(Quad(n("once"), TYPE, n("A"), MEMORIES))
    assert txn.commit is not None and txn.commit.generation == 2
    assert calls["n"] == 1  # the token showed the first attempt had landed: nothing resent
    calls["n"] = 10
    with a.transaction() as txn:
        txn.add(Quad(n("twice"), TYPE, n("A"), MEMORIES))
    monkeypatch.setattr(Endpoint, "update", real)
    fresh = TenantStore(a.path, reasoner_factory=ToyReasoner)
    assert fresh.generation() == 3
    assert {Quad(n("once"), TYPE, n("A"), MEMORIES), Quad(n("twice"), TYPE, n("A"), MEMORIES)} <= fresh.asserted()
    assert ep.name == "t"


def test_commit_not_arriving_is_resent_once(two: tuple[TenantStore, TenantStore], monkeypatch: pytest.MonkeyPatch) -> None:
    a, _ = two
    real = Endpoint.update
    calls = {"n": 0}

    def refused_first(self: Endpoint, text: str, *, retry: bool = True) -> None:
        if not retry:
            calls["n"] += 1
            if calls["n"] == 1:
                raise httpx.ConnectError("connection refused")
        real(self, text, retry=retry)

    monkeypatch.setattr(Endpoint, "update", refused_first)
    with a.transaction() as txn:
        txn.add(Quad(n("resent"), TYPE, n("A"), MEMORIES))
    assert calls["n"] == 2 and txn.commit is not None and txn.commit.generation == 2
    monkeypatch.setattr(Endpoint, "update", real)
    assert TenantStore(a.path, reasoner_factory=ToyReasoner).generation() == 2


def test_a_write_is_four_requests_and_gives_the_lease_back(two: tuple[TenantStore, TenantStore]) -> None:
    """Take the lease, read it back with the generation, commit + release in one request,
    check the commit token: four requests, and the next node finds the lease free."""
    a, _ = two
    ep = a.backend.endpoint  # type: ignore[attr-defined]
    with a.transaction() as txn:  # warm: the mirror is loaded
        txn.add(Quad(n("warm"), TYPE, n("A"), MEMORIES))
    seen = _record(ep)
    for i in range(3):
        with a.transaction() as txn:
            txn.add(Quad(n(f"w{i}"), TYPE, n("A"), MEMORIES))
    assert len(seen) == 12, seen
    other = RemoteBackend(ep, "a", a.incarnation)
    other.lease_wait = 0.0
    assert other.open_writer()  # no wait: the commit's request released the lease
    assert other.head(writer=True)[0] == a.generation() == 5
    other.close_writer()
    ep.client().event_hooks["request"] = []


def test_the_lease_admits_one_node_and_expires(two: tuple[TenantStore, TenantStore], tmp_path: Path) -> None:
    a, _ = two
    ep = a.backend.endpoint  # type: ignore[attr-defined]
    node1 = RemoteBackend(ep, "a", a.incarnation)
    node2 = RemoteBackend(ep, "a", a.incarnation)
    node2.lease_wait = 0.3
    assert node1.open_writer()
    with pytest.raises(StoreError, match="write lease"):
        node2.open_writer()
    node1.close_writer()
    assert node2.open_writer()
    node2.close_writer()
    # a node that dies holding the lease blocks others for lease_ttl at most
    short = Endpoint.from_dict("t", {**_cfg(ep), "lease_ttl": 0.5})
    dead, live = RemoteBackend(short, "a", a.incarnation), RemoteBackend(short, "a", a.incarnation)
    assert dead.open_writer()
    live.lease_wait = 5
    assert live.open_writer()  # after the dead node's lease expired
    # the dead node wakes up and tries to commit on its stale state: fenced, nothing written
    gen = live.head(writer=True)[0]
    q = Quad(n("zombie"), TYPE, n("A"), MEMORIES)
    with pytest.raises(WriteConflict):
        dead.commit(gen, gen + 1, [_gen(gen)], [q, _gen(gen + 1)], "", __import__("reckon.store.sparql", fromlist=["x"]).quads_to_data_block)
    assert live.head(writer=True)[0] == gen
    live.close_writer()
    assert q not in a.asserted()


def test_a_stale_generation_is_refused(two: tuple[TenantStore, TenantStore]) -> None:
    a, _ = two
    ep = a.backend.endpoint  # type: ignore[attr-defined]
    node = RemoteBackend(ep, "a", a.incarnation)
    assert node.open_writer()
    gen = node.head(writer=True)[0]
    from reckon.store.sparql import quads_to_data_block

    with pytest.raises(WriteConflict):
        node.commit(gen - 1, gen, [_gen(gen - 1)], [_gen(gen)], "", quads_to_data_block)
    node.close_writer()
    assert a.generation() == gen


def _gen(g: int) -> Quad:
    from reckon.store.tenant_store import _gen_quad

    return _gen_quad(g)


def _cfg(ep: Endpoint) -> dict[str, Any]:
    return {"url": ep.url, "server": ep.server, "graph_prefix": ep.graph_prefix, "auth": ep.auth, "timeout": ep.timeout}


def test_a_large_commit_is_one_atomic_write(create_store) -> None:  # type: ignore[no-untyped-def]
    """Above Virtuoso's update size the change is staged and applied by one operation."""
    s = create_store("big", reasoner_factory=ToyReasoner)
    with s.transaction() as txn:
        for i in range(1500):
            txn.add(Quad(n(f"big{i}"), TYPE, n("A"), MEMORIES))
            txn.add(Quad(n(f"big{i}"), n("label"), Literal(f"label {i} \"quoted\"\n"), MEMORIES))
    s.release()
    fresh = TenantStore(s.path, reasoner_factory=ToyReasoner)
    assert len(fresh.asserted()) == 3000 and fresh.generation() == 2
    rows = s.backend.endpoint.select(  # type: ignore[attr-defined]
        "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } FILTER(CONTAINS(STR(?g), ':stage:')) }")
    assert rows == []  # the staging graphs are gone
    assert META  # the private graph is never in a dump
    assert b"urn:reckon:graph:meta" not in fresh.dump()
