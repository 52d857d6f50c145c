"""The ``refuse_inconsistent`` tenant setting (issue 13: "the write that caused it is
refused (store unchanged) when the tenant says so").

A tenant's rules may derive ``?x rdf:type owl:Nothing`` (here a custom clash rule in the
style of OWL 2 RL cax-dw). With the setting off (the default, ``ontology/core.ttl``) the
clashing write is stored and the inconsistency reported; with ``refuse_inconsistent`` set
to true (``Tenant.set_setting``, ``reckon tenant settings set``) the same write raises
``InconsistentGraph`` through the API and fails through the CLI, and the store is exactly
as it was (byte-identical dump, same generation).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import Literal, NamedNode, Quad

from reckon._errors import InconsistentGraph
from reckon.api import Engine
from reckon.api._engine import DEFAULT_RULES
from reckon.store.graphs import BUSINESS
from tests.cli.conftest import run_cli

EX = "http://example.org/"
X, STATE = NamedNode(EX + "x"), NamedNode(EX + "state")
OPEN, CLOSED = Literal("open"), Literal("closed")

CLASH = """PREFIX ex: <http://example.org/>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX owl: <http://www.w3.org/2002/07/owl#>
# a thing is not both open and closed (a clash in the style of cax-dw / prp-pdw)
RULE ex:clash { ?x rdf:type owl:Nothing } WHERE { ?x ex:state "open" . ?x ex:state "closed" }
"""


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "clash.srl").write_text(CLASH, encoding="utf-8")
    engine = Engine(tmp_path / "data", rules=[*DEFAULT_RULES, str(tmp_path / "clash.srl")])
    t = engine.create_tenant("acme")
    with t.store.transaction() as txn:
        txn.add(Quad(X, STATE, OPEN, BUSINESS))
    return tmp_path / "data"


def _write_clash(tenant) -> None:  # noqa: ANN001
    with tenant.store.transaction() as txn:
        txn.add(Quad(X, STATE, CLOSED, BUSINESS))


def test_off_by_default_the_clash_is_stored_and_reported(data_dir: Path) -> None:
    t = Engine(data_dir).tenant("acme")
    assert t.settings()["refuse_inconsistent"] is False
    _write_clash(t)
    assert Quad(X, STATE, CLOSED, BUSINESS) in t.store.asserted()
    assert [i.node for i in t.store.reasoner().inconsistencies()] == [X]


def test_set_on_the_clashing_write_is_refused_and_the_store_unchanged(data_dir: Path) -> None:
    t = Engine(data_dir).tenant("acme")
    change = t.set_setting("refuse_inconsistent", True)
    assert change["after"] is True and t.settings()["refuse_inconsistent"] is True
    before, gen = t.store.dump(), t.store.generation()
    with pytest.raises(InconsistentGraph) as exc:
        _write_clash(t)
    assert [i.node for i in exc.value.inconsistencies] == [X]
    assert t.store.dump() == before and t.store.generation() == gen
    assert Quad(X, STATE, CLOSED, BUSINESS) not in t.store.asserted()
    assert t.store.reasoner().inconsistencies() == []
    # a consistent write still goes through; set off again, the clash is stored
    with t.store.transaction() as txn:
        txn.add(Quad(NamedNode(EX + "y"), STATE, CLOSED, BUSINESS))
    assert t.store.generation() == gen + 1
    t.set_setting("refuse_inconsistent", False)
    _write_clash(t)
    assert [i.node for i in t.store.reasoner().inconsistencies()] == [X]


def test_cli_settings_set_then_a_clashing_load_fails_and_leaves_the_store(data_dir: Path, tmp_path: Path) -> None:
    ttl = tmp_path / "clash.ttl"
    ttl.write_text('<http://example.org/x> <http://example.org/state> "closed" .\n', encoding="utf-8")
    r = run_cli(data_dir, "tenant", "settings", "set", "acme", "refuse_inconsistent", "true")
    assert r.code == 0, r.err
    assert "refuse_inconsistent" in r.out and "True" in r.out
    t = Engine(data_dir).tenant("acme")
    before, gen = t.store.dump(), t.store.generation()
    r = run_cli(data_dir, "load", str(ttl), "--tenant", "acme")
    assert r.code != 0
    assert "inconsistent" in (r.err + r.out).lower()
    t = Engine(data_dir).tenant("acme")
    assert t.store.dump() == before and t.store.generation() == gen
    r = run_cli(data_dir, "tenant", "settings", "set", "acme", "refuse_inconsistent", "false")
    assert r.code == 0, r.err
    r = run_cli(data_dir, "load", str(ttl), "--tenant", "acme")
    assert r.code == 0, r.err
    t = Engine(data_dir).tenant("acme")
    assert Quad(X, STATE, CLOSED, BUSINESS) in t.store.asserted()
