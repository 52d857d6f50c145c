"""Export (TriG of the asserted graphs, versioned header) -> import into a new tenant
re-derives the inferred graph; verify_export compares isomorphically."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple

from reckon._errors import InvalidInput, TenantExists
from reckon.api import Engine, Tenant
from reckon.store import BUSINESS, INFERRED, MEMORIES
from tests.api.conftest import mk, write_budget_memory


def _populated(tenant: Tenant) -> NamedNode:
    m = write_budget_memory(tenant, "cap", amount="40000")
    tenant.set_spend("meta", 34000)
    tenant.set_kpi("ROAS", 2.5)
    tenant.add_person("dana", "Dana", teams=["growth"])
    with tenant.store.transaction() as txn:  # a blank node and a payload literal survive too
        b = BlankNode("note1")
        txn.add(Quad(b, NamedNode("urn:x:says"), Literal('he said "hi" }\n'), BUSINESS))
        txn.add(Quad(m, NamedNode("urn:x:note"), b, MEMORIES))
    return m


def test_export_has_a_versioned_header_and_only_asserted_graphs(tenant: Tenant, tmp_path: Path) -> None:
    _populated(tenant)
    path = tenant.export(tmp_path / "t.trig")
    text = path.read_text()
    lines = text.splitlines()
    assert lines[0] == "# reckon-export-version: 2"
    assert lines[1] == f"# tenant: {tenant.id}"
    assert lines[2].startswith("# generation: ") and lines[3].startswith("# exported-at: ")
    assert str(INFERRED.value) not in text and "urn:reckon:graph:meta" not in text
    assert tenant.verify_export(path) is True


def test_import_into_a_new_tenant_rederives_the_inferred_graph(engine: Engine, tenant: Tenant, tmp_path: Path) -> None:
    m = _populated(tenant)
    path = tenant.export(tmp_path / "t.trig")
    new_id = f"{tenant.id}-copy"
    copy = engine.import_tenant(new_id, path)
    # tenant IRIs are renamed; everything else is identical
    old_prefix, new_prefix = f"urn:reckon:{tenant.id}:", f"urn:reckon:{new_id}:"
    renamed = copy.store.export_trig().replace(new_prefix.encode(), old_prefix.encode())
    assert tenant.store.verify_export(renamed) is True
    # the inferred graph was derived, and equals the original's (modulo the renaming)
    m2 = NamedNode(m.value.replace(old_prefix, new_prefix))
    rows = copy.sparql(
        f"SELECT ?s WHERE {{ GRAPH <urn:reckon:graph:inferred> {{ <{m2.value}> <{mk('budgetStatus').value}> ?s }} }}"
    )
    assert rows == [{"s": mk("NearLimit")}]
    def norm(ts: set[Triple], prefix: str) -> set[str]:
        return {str(t).replace(prefix, "T:") for t in ts}
    assert norm(copy.store.inferred(), new_prefix) == norm(tenant.store.inferred(), old_prefix)
    assert copy.store.rebuild_inferred() is None
    # the business API works on the imported tenant (company found by type)
    copy.set_spend("meta", 45000)
    assert copy.sparql(
        f"ASK {{ <{m2.value}> <{mk('budgetStatus').value}> <{mk('OverBudget').value}> }}"
    ) is True
    with pytest.raises(TenantExists):
        engine.import_tenant(new_id, path)


def test_verify_export_detects_a_difference(tenant: Tenant, tmp_path: Path) -> None:
    _populated(tenant)
    path = tenant.export(tmp_path / "t.trig")
    tenant.set_kpi("ROAS", 9)
    assert tenant.verify_export(path) is False
    tampered = path.read_text().replace('"34000"', '"34001"')
    (tmp_path / "x.trig").write_text(tampered)
    assert tenant.verify_export(tmp_path / "x.trig") is False


@pytest.mark.parametrize(
    "content",
    [
        b"<urn:a> <urn:b> <urn:c> .",
        b"# reckon-export-version: 3\n",
        b"# reckon-export-version: 1\n<urn:reckon:graph:inferred> { <urn:a> <urn:b> <urn:c> . }",
        b"# reckon-export-version: 1\n{ <urn:a> <urn:b> <urn:c> . }",
        b"# reckon-export-version: 1\n<urn:reckon:graph:memories> { <urn:a> <urn:b> ",
    ],
)
def test_bad_exports_are_refused(engine: Engine, tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "bad.trig"
    p.write_bytes(content)
    before = set(engine.list_tenants())
    with pytest.raises(InvalidInput):
        engine.import_tenant("bad-import", p)
    assert set(engine.list_tenants()) == before
