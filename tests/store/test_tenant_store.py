"""TenantStore: named graphs, one atomic write per transaction, generation counter,
base-graph counting over several asserted graphs, rollback, blank nodes, reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple

from reckon._errors import InvalidInput, ShapeViolation, StoreError, TenantExists
from reckon.store import BUSINESS, INFERRED, MEMORIES, SCHEMA, TenantStore
from reckon.store.graphs import META
from tests.store.toy_reasoner import SUB, TYPE, ToyReasoner, closure


def n(x: str) -> NamedNode:
    return NamedNode(f"urn:x:{x}")


@pytest.fixture()
def store(create_store) -> TenantStore:  # type: ignore[no-untyped-def]
    """Every test runs on each backend (tests/store/conftest.py: embedded, oxigraph
    serve, Virtuoso)."""
    return create_store(
        "acme",
        initial=[Quad(n("A"), SUB, n("B"), SCHEMA), Quad(n("B"), SUB, n("C"), SCHEMA)],
        reasoner_factory=ToyReasoner,
    )


def test_create_lays_out_the_tenant_directory(store: TenantStore) -> None:
    p = store.path
    assert (p / "recall").is_dir() and (p / "meta.json").is_file()
    # the embedded store lives in the directory; a remote one only on its server
    assert (p / "store").is_dir() == (store.backend.kind == "embedded")
    assert store.tenant_id == "acme"
    assert store.generation() == 1
    # the closure of the initial quads is materialized at creation
    assert store.inferred() == {Triple(n("A"), SUB, n("C"))}


def test_create_refuses_an_existing_tenant(store: TenantStore) -> None:
    with pytest.raises(TenantExists):
        TenantStore.create(store.path, "acme")


def test_transaction_writes_asserted_and_inferred_and_bumps_generation(store: TenantStore) -> None:
    with store.transaction() as txn:
        txn.add(Quad(n("x"), TYPE, n("A"), MEMORIES))
    assert txn.commit is not None and txn.commit.generation == 2
    assert txn.commit.inferred_added == {Triple(n("x"), TYPE, n("B")), Triple(n("x"), TYPE, n("C"))}
    assert store.generation() == 2
    rows = store.query("SELECT ?c WHERE { GRAPH <urn:reckon:graph:inferred> { <urn:x:x> <urn:t:type> ?c } }")
    assert {r["c"] for r in rows} == {n("B"), n("C")}
    # asserted and inferred never mix
    assert not store.query("ASK { GRAPH <urn:reckon:graph:memories> { <urn:x:x> <urn:t:type> <urn:x:C> } }")


def test_empty_transaction_writes_nothing(store: TenantStore) -> None:
    before = store.dump()
    with store.transaction() as txn:
        txn.add(Quad(n("A"), SUB, n("B"), SCHEMA))  # already there
    assert txn.commit is None
    assert store.generation() == 1
    assert store.dump() == before


def test_failed_validation_leaves_the_store_byte_identical(store: TenantStore) -> None:
    before, gen = store.dump(), store.generation()

    def refuse(added, removed, view):  # type: ignore[no-untyped-def]
        assert [q.subject for q in added] == [n("x")]
        assert view.objects(n("A"), SUB, SCHEMA) == [n("B")]
        raise ShapeViolation("refused by test", [{"focus_node": "urn:x:x"}])

    with pytest.raises(ShapeViolation):
        with store.transaction(validate=refuse) as txn:
            txn.add(Quad(n("x"), TYPE, n("A"), MEMORIES))
    assert store.dump() == before
    assert store.generation() == gen


def test_exception_in_block_writes_nothing(store: TenantStore) -> None:
    before = store.dump()
    with pytest.raises(KeyError):
        with store.transaction() as txn:
            txn.add(Quad(n("x"), TYPE, n("A"), MEMORIES))
            raise KeyError("boom")
    assert store.dump() == before


def test_reasoner_failure_writes_nothing_and_the_next_write_is_correct(store: TenantStore) -> None:
    before = store.dump()
    ToyReasoner.fail_next_apply = True
    with pytest.raises(RuntimeError):
        with store.transaction() as txn:
            txn.add(Quad(n("x"), TYPE, n("A"), MEMORIES))
    assert store.dump() == before
    with store.transaction() as txn:
        txn.add(Quad(n("y"), TYPE, n("B"), MEMORIES))
    assert store.inferred() == closure({q_t(q) for q in store.asserted()})


def test_store_update_failure_rolls_back_the_reasoner(store: TenantStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the atomic update fails, the in-memory reasoner is dropped and rebuilt, so the
    next write still produces the from-scratch inferred graph."""
    before = store.dump()
    import reckon.store.tenant_store as ts

    real = ts.quads_to_data_block

    def broken(quads):  # type: ignore[no-untyped-def]
        return real(quads) + " this is not SPARQL"

    monkeypatch.setattr(ts, "quads_to_data_block", broken)
    with pytest.raises(StoreError):
        with store.transaction() as txn:
            txn.add(Quad(n("x"), TYPE, n("A"), MEMORIES))
    monkeypatch.setattr(ts, "quads_to_data_block", real)
    assert store.dump() == before
    with store.transaction() as txn:
        txn.add(Quad(n("z"), TYPE, n("B"), MEMORIES))
    assert store.inferred() == closure({q_t(q) for q in store.asserted()})
    assert Triple(n("x"), TYPE, n("C")) not in store.inferred()


def q_t(q: Quad) -> Triple:
    return Triple(q.subject, q.predicate, q.object)


def test_a_triple_in_two_asserted_graphs_is_one_base_fact(store: TenantStore) -> None:
    """Retracting it from one graph keeps its consequences; from both removes them."""
    with store.transaction() as txn:
        txn.add(Quad(n("x"), TYPE, n("A"), MEMORIES))
        txn.add(Quad(n("x"), TYPE, n("A"), BUSINESS))
    derived = Triple(n("x"), TYPE, n("C"))
    assert derived in store.inferred()
    with store.transaction() as txn:
        txn.remove(Quad(n("x"), TYPE, n("A"), MEMORIES))
    assert txn.commit is not None and not txn.commit.inferred_removed
    assert derived in store.inferred()
    with store.transaction() as txn:
        txn.remove(Quad(n("x"), TYPE, n("A"), BUSINESS))
    assert txn.commit is not None and derived in txn.commit.inferred_removed
    assert derived not in store.inferred()


def test_asserting_an_inferred_triple_moves_it_out_of_the_inferred_graph(store: TenantStore) -> None:
    t = Triple(n("A"), SUB, n("C"))
    assert t in store.inferred()
    with store.transaction() as txn:
        txn.add(Quad(n("A"), SUB, n("C"), SCHEMA))
    assert t not in store.inferred()
    with store.transaction() as txn:
        txn.remove(Quad(n("A"), SUB, n("C"), SCHEMA))
    assert t in store.inferred()


def test_remove_pattern_and_reads_in_a_transaction(store: TenantStore) -> None:
    with store.transaction() as txn:
        for i in range(3):
            txn.add(Quad(n("s"), n("p"), Literal(str(i)), BUSINESS))
    with store.transaction() as txn:
        assert sorted(o.value for o in txn.objects(n("s"), n("p"), BUSINESS)) == ["0", "1", "2"]
        assert txn.remove_pattern(n("s"), n("p"), None, BUSINESS) == 3
        txn.add(Quad(n("s"), n("p"), Literal("new"), BUSINESS))
        # reads see the committed state, not the pending changes
        assert len(txn.objects(n("s"), n("p"), BUSINESS)) == 3
    assert store.query('SELECT ?o WHERE { <urn:x:s> <urn:x:p> ?o }') == [{"o": Literal("new")}]


@pytest.mark.parametrize("graph", [INFERRED, META, NamedNode("urn:other")])
def test_only_asserted_graphs_accept_writes(store: TenantStore, graph: NamedNode) -> None:
    with pytest.raises(InvalidInput):
        with store.transaction() as txn:
            txn.add(Quad(n("x"), n("p"), n("y"), graph))


def test_blank_nodes_round_trip_and_can_be_removed(store: TenantStore) -> None:
    b = BlankNode("b1")
    term = Quad(n("s"), n("p"), Triple(b, n("q"), Literal("v")), MEMORIES)
    if store.backend.kind != "embedded" and not store.backend.endpoint.triple_terms:  # type: ignore[attr-defined]
        # Virtuoso cannot store RDF 1.2 triple terms: the write is refused whole
        before = store.dump()
        with pytest.raises(StoreError, match="triple terms"):
            with store.transaction() as txn:
                txn.add(Quad(b, TYPE, n("A"), MEMORIES))
                txn.add(term)
        assert store.dump() == before and store.generation() == 1
        term = Quad(n("s"), n("p"), Literal("no triple term here"), MEMORIES)
    with store.transaction() as txn:
        txn.add(Quad(b, TYPE, n("A"), MEMORIES))
        txn.add(term)
    assert Quad(b, TYPE, n("A"), MEMORIES) in store.asserted()
    assert Triple(b, TYPE, n("C")) in store.inferred()
    with store.transaction() as txn:
        txn.remove(Quad(b, TYPE, n("A"), MEMORIES))
    assert Quad(b, TYPE, n("A"), MEMORIES) not in store.asserted()
    assert Triple(b, TYPE, n("C")) not in store.inferred()
    assert term in store.asserted()


def test_dump_is_sorted_and_excludes_the_private_graph(store: TenantStore) -> None:
    lines = store.dump().splitlines()
    assert lines == sorted(lines)
    assert not any(b"urn:reckon:graph:meta" in line for line in lines)
    assert any(b"urn:reckon:graph:inferred" in line for line in lines)


def test_rebuild_inferred_is_a_no_op_when_consistent(store: TenantStore) -> None:
    with store.transaction() as txn:
        txn.add(Quad(n("x"), TYPE, n("A"), MEMORIES))
    before = store.dump()
    assert store.rebuild_inferred() is None
    assert store.dump() == before


def test_two_store_objects_see_each_others_writes(store: TenantStore) -> None:
    """Two TenantStore objects on one path behave like two processes: the generation
    counter makes the second reload before reading or writing."""
    other = TenantStore(store.path, reasoner_factory=ToyReasoner)
    assert other.inferred() == store.inferred()
    with store.transaction() as txn:
        txn.add(Quad(n("x"), TYPE, n("A"), MEMORIES))
    assert other.generation() == 2
    assert Triple(n("x"), TYPE, n("C")) in other.inferred()
    with other.transaction() as txn:
        txn.add(Quad(n("C"), SUB, n("D"), SCHEMA))
    assert txn.commit is not None and txn.commit.generation == 3
    assert Triple(n("x"), TYPE, n("D")) in txn.commit.inferred_added
    with store.transaction() as txn:
        txn.remove(Quad(n("x"), TYPE, n("A"), MEMORIES))
    expected = closure({q_t(q) for q in store.asserted()})
    assert store.inferred() == expected == other.inferred()


def test_exclusive_batches_several_transactions(store: TenantStore) -> None:
    with store.exclusive():
        for i in range(5):
            with store.transaction() as txn:
                txn.add(Quad(n(f"i{i}"), TYPE, n("A"), MEMORIES))
        # reads inside the exclusive block see the committed writes
        assert len(store.query("SELECT ?s WHERE { GRAPH <urn:reckon:graph:memories> { ?s ?p ?o } }")) == 5  # type: ignore[arg-type]
    assert store.generation() == 6


def test_snapshot_cannot_be_upgraded_to_a_write(store: TenantStore) -> None:
    with store.snapshot():
        with pytest.raises(StoreError):
            with store.transaction():
                pass


def test_opening_a_missing_directory_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        TenantStore(tmp_path / "nope")


@pytest.fixture()
def embedded_store(tmp_path: Path) -> TenantStore:
    return TenantStore.create(
        tmp_path / "tenants" / "acme",
        "acme",
        initial=[Quad(n("A"), SUB, n("B"), SCHEMA), Quad(n("B"), SUB, n("C"), SCHEMA)],
        reasoner_factory=ToyReasoner,
    )


@pytest.mark.parametrize("damage", ["delete", "truncate-mid-record", "garbage"])
def test_a_damaged_journal_falls_back_to_a_full_reload(embedded_store: TenantStore, damage: str) -> None:
    store = embedded_store
    other = TenantStore(store.path, reasoner_factory=ToyReasoner)
    assert other.generation() == 1
    other.release()
    for i in range(3):
        with store.transaction() as txn:
            txn.add(Quad(n(f"j{i}"), TYPE, n("A"), MEMORIES))
    store.release()
    journal = store.path / "journal"
    assert journal.stat().st_size > 0
    if damage == "delete":
        journal.unlink()
    elif damage == "truncate-mid-record":
        journal.write_bytes(journal.read_bytes()[:-7])
    else:
        journal.write_bytes(b"not a journal")
    assert other.generation() == 4
    assert other.asserted() == store.asserted()
    assert other.inferred() == store.inferred()
    # the next writer starts a clean journal that readers can replay again
    with other.transaction() as txn:
        txn.add(Quad(n("k"), TYPE, n("B"), MEMORIES))
    other.release()
    assert store.generation() == 5
    assert Triple(n("k"), TYPE, n("C")) in store.inferred()


def test_readers_catch_up_from_the_journal(store: TenantStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Embedded: the reader reads the on-disk store itself (a read-only open, constant in
    tenant size), never a full copy; remote: the commit records in the server's META
    graph (another node's commits are replayed, not reloaded)."""
    other = TenantStore(store.path, reasoner_factory=ToyReasoner)
    assert other.generation() == 1
    other.release()
    for i in range(3):
        with store.transaction() as txn:
            txn.add(Quad(n(f"j{i}"), TYPE, n("A"), MEMORIES))
    store.release()
    import reckon.store.tenant_store as ts

    def no_open(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("the reader should not need to open the store")

    if other.backend.kind != "embedded":
        monkeypatch.setattr(ts.Store, "read_only", no_open)
    monkeypatch.setattr(type(other.backend), "load", no_open)
    assert other.generation() == 4
    assert other.asserted() == store.asserted()
    assert other.inferred() == store.inferred()
