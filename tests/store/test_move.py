"""``reckon tenant move``: export -> import -> verify -> switch -> delete between two
SPARQL servers and the embedded store, with writes running during the move (none
acknowledged is lost) and a second node following the switch through the shard map."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyoxigraph import Literal, NamedNode, Quad

from reckon import Engine, Principal
from reckon._errors import ReckonError
from reckon.store import BUSINESS
from tests.store.conftest import _server
from tests.store.servers import Server, start_oxigraph

OPS = Principal(person="dana", role="operator")


@pytest.fixture()
def two_servers(sparql_servers: dict[str, Server], tmp_path_factory: pytest.TempPathFactory,
                tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    a = _server(sparql_servers, "oxigraph", tmp_path_factory.getbasetemp() / "servers")
    b = start_oxigraph(tmp_path / "second")
    shards = tmp_path / "shared-shards.json"
    prefix = f"urn:reckon:move{id(tmp_path)}:"
    shards.write_text(json.dumps({"default": "a", "endpoints": {
        "a": a.endpoint_config(prefix), "b": b.endpoint_config(prefix)}}))
    monkeypatch.setenv("RECKON_SHARDS", str(shards))
    try:
        yield shards
    finally:
        b.stop()


def test_move_between_servers_and_back_to_embedded(two_servers: Path, tmp_path: Path) -> None:
    node1 = Engine(tmp_path / "n1", embedder="hashing", jobs=False)
    t = node1.create_tenant("acme")
    cap = t.remember(kind="objective", scope="company", importance=5, source="operator",
                     label="Meta monthly spend cap", content="Don't let Meta spend go over $40k this month.",
                     subclass="BudgetConstraintMemory",
                     properties={"platform": "meta", "amount": "40000", "currency": "USD", "period": "monthly"},
                     principal=OPS)
    t.set_spend("meta", 34000)
    node2 = Engine(tmp_path / "n2", embedder="hashing", jobs=False)
    assert node2.tenant("acme").get(cap.id).status["budgetStatus"] == "near_limit"
    old_backend = t.store.backend

    acked: list[int] = []
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            try:
                s = node2.tenant("acme").store
                with s.transaction() as txn:
                    txn.add(Quad(NamedNode(f"urn:x:w{i}"), NamedNode("urn:x:p"), Literal(str(i)), BUSINESS))
                acked.append(i)
            except ReckonError:
                pass  # refused during the switch (or its old copy was gone): not acknowledged
            i += 1

    th = threading.Thread(target=writer)
    th.start()
    try:
        moved = node1.move_tenant("acme", "b")
    finally:
        stop.set()
        th.join(timeout=60)
    assert json.loads(two_servers.read_text())["tenants"]["acme"] == "b"
    assert not old_backend.exists()  # type: ignore[attr-defined]
    assert moved.store.backend.endpoint.name == "b"  # type: ignore[attr-defined]
    assert moved.get(cap.id).status["budgetStatus"] == "near_limit"
    present = {q.subject.value for q in moved.store.asserted() if q.graph_name == BUSINESS}
    assert acked, "no write was acknowledged during the move"
    lost = [i for i in acked if f"urn:x:w{i}" not in present]
    assert lost == []
    # the second node follows the switch through the map
    t2 = node2.tenant("acme")
    assert t2.store.backend.endpoint.name == "b"  # type: ignore[attr-defined]
    t2.set_spend("meta", 41000)
    assert node1.tenant("acme").get(cap.id).status["budgetStatus"] == "over_budget"
    # and with the CLI, back into node1's embedded store
    from tests.cli.conftest import run_cli

    r = run_cli(tmp_path / "n1", "tenant", "move", "acme", "--to", "embedded")
    assert r.code == 0, r.err
    back = Engine(tmp_path / "n1", embedder="hashing", jobs=False).tenant("acme")
    assert back.store.backend.kind == "embedded"
    assert back.get(cap.id).status["budgetStatus"] == "over_budget"
    assert "acme" not in json.loads(two_servers.read_text())["tenants"]
    r = run_cli(tmp_path / "n1", "tenant", "validate", "acme")
    assert r.code == 0, r.err + r.out
