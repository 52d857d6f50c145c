"""Tenants through the public API on every backend: the write path, derived statuses,
SPARQL and a second node (another data directory sharing the shard map) seeing and
extending the same tenant; and the engine's tenant cache bounding open files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from reckon import Engine, Principal

OPS = Principal(person="dana", role="operator")


def _cap(t):  # type: ignore[no-untyped-def]
    return t.remember(
        kind="objective", scope="company", importance=5, source="operator",
        label="Meta monthly spend cap", content="Don't let Meta spend go over $40k this month.",
        subclass="BudgetConstraintMemory",
        properties={"platform": "meta", "amount": "40000.00", "currency": "USD", "period": "monthly"},
        principal=OPS,
    )


def test_two_nodes_share_a_tenant(backend: str, tmp_path: Path) -> None:
    node1 = Engine(tmp_path, embedder="hashing", jobs=False)
    t1 = node1.create_tenant("acme")
    cap = _cap(t1)
    t1.set_spend("meta", 34000)
    assert t1.get(cap.id).status["budgetStatus"] == "near_limit"
    rows = t1.sparql("SELECT ?s WHERE { GRAPH <urn:reckon:graph:memories> { ?s a mk:BudgetConstraintMemory } }")
    assert [r["s"].value for r in rows] == [cap.iri]
    if backend == "embedded":
        return  # an embedded tenant lives in one data directory only
    shards = json.loads((tmp_path / "shards.json").read_text())
    assert shards["tenants"] == {"acme": "t"}
    other = tmp_path / "node2"
    other.mkdir()
    shutil.copy(tmp_path / "shards.json", other / "shards.json")
    node2 = Engine(other, embedder="hashing", jobs=False)
    assert node2.list_tenants() == ["acme"]
    t2 = node2.tenant("acme")
    assert t2.get(cap.id).status["budgetStatus"] == "near_limit"
    t2.set_spend("meta", 41000)
    assert t1.get(cap.id).status["budgetStatus"] == "over_budget"
    assert t1.store.generation() == t2.store.generation()
    d1, d2 = t1.store.dump().splitlines(), t2.store.dump().splitlines()
    assert sorted(set(d1) ^ set(d2)) == [], "\n".join(x.decode() for x in sorted(set(d1) ^ set(d2)))
    node1.delete_tenant("acme")
    assert node1.list_tenants() == []
    assert not t1.store.backend.exists()  # type: ignore[attr-defined]


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_tenant_cache_bounds_open_files(tmp_path: Path) -> None:
    engine = Engine(tmp_path, rules=[], embedder="hashing", jobs=False)
    engine.max_open_tenants = 4
    for i in range(12):
        engine.create_tenant(f"t{i}")
    for t in [engine.tenant(f"t{i}") for i in range(12)]:
        t.store.release()
    before = _fds()
    held = []
    for i in range(12):  # as a server does: look the tenant up, use it
        t = engine.tenant(f"t{i}")
        assert t.store.generation() == 1
        t.store.release()
        held.append(t)
    assert len(engine._tenants) == 4  # noqa: SLF001
    assert _fds() - before <= 4 * 2 + 2  # two lock files per cached tenant at most
    # an evicted tenant still works (it reopens on demand) and sees every write
    with held[0].store.transaction() as txn:
        from pyoxigraph import Literal, NamedNode, Quad

        from reckon.store import BUSINESS

        txn.add(Quad(NamedNode("urn:x:s"), NamedNode("urn:x:p"), Literal("v"), BUSINESS))
    assert engine.tenant("t0").store.generation() == 2


def test_notes_and_the_event_graph_on_every_backend(backend: str, tmp_path: Path) -> None:
    """The asserted graphs of issue 15 (notes, events, experience) live on the backend
    like the memories: a compare-and-set and a derived temporal edge seen by a second node."""
    node1 = Engine(tmp_path, embedder="hashing", jobs=False)
    t1 = node1.create_tenant("acme")
    assert t1.notes.cas("project/p/locks/job", {"owner": "a"}, expected_version=0, principal=OPS).ok
    t1.events.record([{"id": "a", "label": "first", "at": "2026-03-01T09:00:00Z"},
                      {"id": "b", "label": "second", "at": "2026-03-01T10:00:00.5+01:00", "caused_by": ["a"]}])
    t1.experience.record("fix the build", "success", principal=OPS, strategy="bisect")
    assert [r.node.id for r in t1.events.related("a", edge_types=["temporal"])] == ["b"]
    if backend == "embedded":
        return
    other = tmp_path / "node2"
    other.mkdir()
    shutil.copy(tmp_path / "shards.json", other / "shards.json")
    t2 = Engine(other, embedder="hashing", jobs=False).tenant("acme")
    assert not t2.notes.cas("project/p/locks/job", {"owner": "b"}, expected_version=0, principal=OPS).ok
    assert t2.notes.get("project/p/locks/job").value == {"owner": "a"}
    assert [x.id for x in t2.events.impact("a")] == ["b"]
    assert t2.experience.strategies()[0].success_count == 1
    assert sorted(set(t1.store.dump().splitlines()) ^ set(t2.store.dump().splitlines())) == []
