"""Issue 9, point 6: each small item with its error or documented behaviour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reckon._errors import InvalidInput
from reckon.api import Engine, Principal

OPS = Principal.operator("dana")


@pytest.fixture()
def tenant(tmp_path, monkeypatch):
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    return Engine(tmp_path).create_tenant("acme")


def _fact(t, label, **kw):
    return t.remember(principal=OPS, kind="fact", scope="company", importance=3, source="operator", label=label,
                      content=f"{label} content {label[::-1]}", **kw)


def test_supersede_into_an_already_superseded_memory_is_refused(tenant) -> None:
    a, b, c = _fact(tenant, "alpha one"), _fact(tenant, "bravo two"), _fact(tenant, "charlie three")
    tenant.supersede(b.id, c.id, principal=OPS)  # b is no longer live
    before = tenant.dump()
    with pytest.raises(InvalidInput, match="itself superseded"):
        tenant.supersede(a.id, b.id, principal=OPS)
    assert tenant.dump() == before
    assert tenant.get(a.id).active  # a stays live


def test_servers_judge_expiry_against_the_wall_clock(tenant) -> None:
    """A tenant whose clock was never ticked: through the Python API a memory with an
    expiry is not active (documented: no clock value, no expiring memory is active); the
    HTTP and MCP servers move the clock to the present first."""
    soon = datetime.now(UTC) + timedelta(days=30)
    m = _fact(tenant, "delta four", expires_at=soon)
    assert tenant.clock() is None and not tenant.get(m.id).active
    assert tenant.advance_clock() is True
    assert tenant.get(m.id).active
    assert tenant.advance_clock() is False  # less than a minute behind: no write
    past = _fact(tenant, "echo five", expires_at=datetime.now(UTC) - timedelta(days=1))
    assert not tenant.get(past.id).active
    # never backwards
    tenant.tick(datetime.now(UTC) + timedelta(days=60))
    assert tenant.advance_clock() is False and not tenant.get(m.id).active


def test_http_server_ticks_a_never_ticked_tenant(tmp_path, monkeypatch) -> None:
    from fastapi.testclient import TestClient

    from reckon.server.auth import TokenStore
    from reckon.server.http import create_app

    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    eng = Engine(tmp_path)
    t = eng.create_tenant("acme")
    m = _fact(t, "foxtrot six", expires_at=datetime.now(UTC) + timedelta(days=3))
    tok = TokenStore(tmp_path).create("acme", person="dana", role="operator")[1]
    with TestClient(create_app(eng, rate_limit=None)) as client:
        r = client.get(f"/tenants/acme/memories/{m.id}", headers={"Authorization": f"Bearer {tok}"})
    assert r.status_code == 200 and r.json()["active"] is True


@pytest.mark.parametrize("bad", ["a\x00b", "\x00", "\ud800", "x\udfff"])
def test_nul_and_lone_surrogates_are_refused_everywhere(tenant, bad) -> None:
    before = tenant.dump()
    with pytest.raises(InvalidInput):
        Principal(person=f"p{bad}")
    with pytest.raises(InvalidInput):
        Principal(person="p", teams=[bad])
    for field in ("label", "content"):
        fields = {"label": "golf seven", "content": "golf content"}
        fields[field] = f"g{bad}"
        with pytest.raises(InvalidInput):
            tenant.remember(principal=OPS, kind="fact", scope="company", importance=3, source="operator", **fields)
    m = _fact(tenant, "hotel eight")
    before = tenant.dump()
    with pytest.raises(InvalidInput):
        tenant.update(m.id, principal=OPS, content=f"h{bad}")
    assert tenant.dump() == before


def test_principal_errors_are_reckon_errors() -> None:
    for kw in ({"person": ""}, {"person": "x", "role": "boss"}, {"person": "x", "teams": [1]}):
        with pytest.raises(InvalidInput):
            Principal(**kw)


@pytest.mark.parametrize("amount", ["1e400", 10**400, "1e15", -(10**16)])
def test_huge_amounts_are_refused(tenant, amount) -> None:
    before = tenant.dump()
    # exponent text ("1e400") is refused before its size: it is not an xsd:decimal
    why = "no exponent" if isinstance(amount, str) else "below 1e15"
    with pytest.raises(InvalidInput, match=why):
        tenant.set_spend("meta", amount)
    with pytest.raises(InvalidInput, match=why):
        tenant.set_kpi("ROAS", amount)
    assert tenant.dump() == before
