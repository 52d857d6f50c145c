"""Engine: tenant lifecycle, layout on disk, isolation between tenants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyoxigraph import Literal, NamedNode, Quad

from reckon._errors import InvalidInput, ReadOnlyQuery, TenantExists, UnknownTenant
from reckon.api import Engine, Tenant
from reckon.store import MEMORIES
from tests.api.conftest import RDF_TYPE


def test_create_lays_out_a_tenant(engine: Engine, tenant: Tenant) -> None:
    d = engine.data_dir / "tenants" / tenant.id
    assert sorted(p.name for p in d.iterdir() if not p.name.startswith(".")) >= [
        "generation", "lock", "meta.json", "recall", "store"
    ]
    meta = json.loads((d / "meta.json").read_text())
    assert meta["format_version"] == 1 and meta["tenant_id"] == tenant.id
    assert tenant.id in engine.list_tenants()
    assert engine.tenant(tenant.id) is tenant


def test_new_tenant_has_schema_company_and_clock(tenant: Tenant) -> None:
    n_schema = tenant.sparql("SELECT (COUNT(*) AS ?n) WHERE { GRAPH <urn:reckon:graph:schema> { ?s ?p ?o } }")
    assert int(n_schema[0]["n"].value) > 500  # type: ignore[index]
    assert tenant.sparql(
        "ASK { GRAPH <urn:reckon:graph:schema> { <https://reckon.dev/ns/core#settings> "
        "<https://reckon.dev/ns/core#nearLimitThreshold> ?t } }"
    )
    company = tenant.sparql(
        "SELECT ?c ?n WHERE { GRAPH <urn:reckon:graph:memories> { ?c a <https://reckon.dev/ns/core#Company> ; "
        "<http://www.w3.org/2000/01/rdf-schema#label> ?n } }"
    )
    assert company == [{"c": NamedNode(f"urn:reckon:{tenant.id}:company"), "n": Literal("Acme Inc.")}]
    assert tenant.sparql(
        "ASK { GRAPH <urn:reckon:graph:business> { <https://reckon.dev/ns/core#clock> a <https://reckon.dev/ns/core#Clock> } }"
    )


def test_create_twice_is_refused(engine: Engine, tenant: Tenant) -> None:
    with pytest.raises(TenantExists):
        engine.create_tenant(tenant.id)


def test_unknown_tenant(engine: Engine) -> None:
    with pytest.raises(UnknownTenant):
        engine.tenant("nobody-here")
    with pytest.raises(UnknownTenant):
        engine.delete_tenant("nobody-here")


def test_delete_tenant_removes_its_directory(engine: Engine) -> None:
    t = engine.create_tenant("to-delete")
    path = t.store.path
    engine.delete_tenant("to-delete")
    assert not path.exists()
    assert "to-delete" not in engine.list_tenants()
    with pytest.raises(UnknownTenant):
        engine.tenant("to-delete")
    # the id can be reused
    assert engine.create_tenant("to-delete").sparql("ASK { ?s a <https://reckon.dev/ns/core#Company> }") is True


def test_tenant_a_never_sees_tenant_b(engine: Engine) -> None:
    a = engine.create_tenant("iso-a", company_name="Alpha")
    b = engine.create_tenant("iso-b", company_name="Beta")
    secret = NamedNode("urn:reckon:iso-b:memory:secret")
    with b.store.transaction() as txn:  # a node of a class no shape constrains
        txn.add(Quad(secret, RDF_TYPE, NamedNode("urn:example:Secret"), MEMORIES))
    b.set_spend("meta", 123)
    assert b.sparql("ASK { <urn:reckon:iso-b:memory:secret> ?p ?o }") is True
    assert a.sparql("ASK { <urn:reckon:iso-b:memory:secret> ?p ?o }") is False
    assert a.sparql("ASK { GRAPH ?g { ?s ?p \"Beta\" } }") is False
    assert a.sparql("ASK { ?s <https://reckon.dev/ns/marketing#amount> ?o }") is False
    assert b"iso-b" not in a.dump()
    assert b"iso-a" not in b.dump()
    # a SPARQL query on A cannot reach B's store by naming its graphs or files
    assert a.sparql("ASK { GRAPH <urn:reckon:iso-b:memory:secret> { ?s ?p ?o } }") is False
    with pytest.raises(ReadOnlyQuery):
        a.sparql(f"LOAD <file://{b.store.path}/store> INTO GRAPH <urn:x:g>")


def test_two_engines_on_one_data_dir_share_tenants(engine: Engine, tenant: Tenant) -> None:
    other = Engine(engine.data_dir)
    t2 = other.tenant(tenant.id)
    tenant.set_kpi("ROAS", 2.5)
    rows = t2.sparql("SELECT ?v WHERE { ?k <https://reckon.dev/ns/marketing#value> ?v }")
    assert rows == [{"v": Literal("2.5", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#decimal"))}]


def test_engine_rejects_unknown_module_kinds(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    with pytest.raises(InvalidInput):
        Engine(tmp_path / "d", modules=[bad])


def test_engine_without_rules_infers_nothing(tmp_path: Path) -> None:
    e = Engine(tmp_path / "d", rules=[])
    t = e.create_tenant("plain")
    t.set_spend("meta", 10)
    assert t.store.inferred() == set()
