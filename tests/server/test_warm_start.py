"""``reckon serve --warm TENANT`` and ``reckon mcp`` open a tenant before the first
request (issue "Fast where users touch it": the first request as fast as the later
ones): the recall index and model, the reasoner, the clock's first move and one bundle
built, with no access recorded and nothing else written."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

from reckon.api import Engine, Principal
from reckon.cli._serve import _warm_tenant
from tests.conftest import REPO

DANA = Principal.operator("dana")
LEE = Principal(person="lee", teams=["growth"])


def _tenant(tmp_path):
    t = Engine(tmp_path).create_tenant("acme", company_name="Acme")
    t.add_team("growth")
    t.tick(datetime(2026, 3, 2, 9, 30, 0, 123456, tzinfo=UTC))
    ids = [t.remember(principal=DANA, kind="fact", scope="company", importance=5, source="operator",
                      label="Ideal customer profile", content="Small businesses in retail.").id,
           t.remember(principal=LEE, kind="preference", scope="user", importance=4, source="agent_tool",
                      label="Report format", content="Weekly report as a table, not prose.").id]
    t.recall.wait(timeout=60)
    return t, ids


def test_warm_opens_the_index_moves_the_clock_and_records_no_access(tmp_path):
    t, ids = _tenant(tmp_path)
    t.recall.index.close()
    t.store.close()
    t = Engine(tmp_path).tenant("acme")  # a fresh open, as a server process has
    assert not t.recall.loaded
    gen = t.store.generation()
    before = datetime.now(UTC)
    _warm_tenant(t, LEE, wall_clock=True)
    assert t.recall.loaded
    clock = t.clock()
    assert clock is not None and before - timedelta(seconds=1) <= clock <= datetime.now(UTC)
    assert t.store.generation() == gen + 1  # the clock's move, the only write
    assert {m: t.recall.usage.get(m).access for m in ids} == {ids[0]: 0, ids[1]: 0}
    b = t.context(LEE, "how should the weekly report look?")  # the first real request: counted
    assert set(ids) <= set(b.ids())
    assert {m: t.recall.usage.get(m).access for m in ids} == {ids[0]: 1, ids[1]: 1}


def test_warm_without_wall_clock_leaves_the_clock(tmp_path):
    t, _ = _tenant(tmp_path)
    gen = t.store.generation()
    _warm_tenant(t, None, wall_clock=False)  # serve --warm --no-wall-clock: an operator's bundle, no write
    assert t.clock() == datetime(2026, 3, 2, 9, 30, 0, 123456, tzinfo=UTC)
    assert t.store.generation() == gen


def test_serve_warm_names_an_unknown_tenant(tmp_path):
    Engine(tmp_path).create_tenant("acme", company_name="Acme")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "engine"),
                                                        *filter(None, [os.environ.get("PYTHONPATH")])]),
           "RECKON_EMBEDDER": "hashing"}
    p = subprocess.run([sys.executable, "-m", "reckon.cli", "--data-dir", str(tmp_path), "serve", "--port", "0",
                        "--warm", "acme", "--warm", "nosuch"], env=env, cwd=str(REPO), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "nosuch" in p.stderr


def _quads(t):
    """Every quad of every graph (asserted and inferred)."""
    with t.store.snapshot() as view:
        return sorted(str(q) for q in view.quads(None, None, None, None))


def test_warm_for_callers_writes_nothing_and_their_first_write_and_bundle_work(tmp_path):
    """serve --warm --no-wall-clock for the tenant's token principals: the peer groups
    are read in an abandoned transaction and a bundle with a conversation is built for
    each caller -- the store's generation and every quad are as before, no access is
    counted; then the callers' real first write and bundle are what an engine that
    warmed nothing gives."""
    t, ids = _tenant(tmp_path)
    t.recall.index.close()
    t.store.close()
    t = Engine(tmp_path).tenant("acme")
    gen, quads = t.store.generation(), _quads(t)
    _warm_tenant(t, None, wall_clock=False, callers=[LEE, DANA])
    assert t.store.generation() == gen
    assert _quads(t) == quads
    assert {m: t.recall.usage.get(m).access for m in ids} == {ids[0]: 0, ids[1]: 0}
    m = t.remember(principal=LEE, kind="preference", scope="user", importance=3, source="agent_tool",
                   label="Report format", content="Weekly report as a table, with a chart.")
    assert m.id == ids[1]  # the warmed peer group still dedups the same label in place
    assert t.store.generation() == gen + 1
    b = t.context(LEE, "how should the weekly report look?", record_access=False)
    fresh = Engine(tmp_path).tenant("acme")  # an oracle: another engine, nothing warmed, the same store
    assert b.ids() == fresh.context(LEE, "how should the weekly report look?", record_access=False).ids()
    assert b.render() == fresh.context(LEE, "how should the weekly report look?", record_access=False).render()
    assert ids[0] in b.ids()  # the company profile (importance 5) is preloaded


def test_warm_all_opens_every_tenant_once_named_ones_first(tmp_path):
    from reckon.cli._serve import tenants_to_warm

    eng = Engine(tmp_path)
    for tid in ("zeta", "acme", "beta"):
        eng.create_tenant(tid, company_name=tid.title())
    assert tenants_to_warm(eng, ["beta", "beta"], warm_all=False) == ["beta"]
    assert tenants_to_warm(eng, ["beta"], warm_all=True) == ["beta", "acme", "zeta"]
    assert tenants_to_warm(eng, [], warm_all=True) == ["acme", "beta", "zeta"]
    assert tenants_to_warm(eng, [], warm_all=False) == []


def test_serve_opens_the_tenants_holding_api_tokens_by_default(tmp_path):
    """With neither --warm nor --warm-all, the tenants a request can reach (a live API
    token) open before binding, newest token first, at most AUTO_WARM; --no-auto-warm and
    a --warm list turn it off; a revoked token no longer counts."""
    from reckon.cli._serve import AUTO_WARM, tenants_to_warm
    from reckon.server.auth import TokenStore

    eng = Engine(tmp_path)
    names = [f"t{i:02d}" for i in range(AUTO_WARM + 2)]
    for tid in [*names, "quiet"]:
        eng.create_tenant(tid, company_name=tid.title())
    tokens = TokenStore(tmp_path)
    made = {tid: tokens.create(tid, person="lee")[0] for tid in names}  # created in this order
    assert tenants_to_warm(eng, [], warm_all=False, auto=False) == []
    assert tenants_to_warm(eng, [], warm_all=False, auto=True) == names[::-1][:AUTO_WARM]
    assert tenants_to_warm(eng, ["quiet"], warm_all=False, auto=True) == ["quiet"]
    for tid in names[2:]:
        tokens.revoke(tid, made[tid].id)
    assert tenants_to_warm(eng, [], warm_all=False, auto=True) == [names[1], names[0]]
