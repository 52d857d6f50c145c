"""Property: whatever sequence of memory writes, business-data refreshes and clock ticks
a tenant sees, the INFERRED graph the store maintains incrementally equals the
materialization of the rule program from scratch over the asserted graphs
(DESIGN.md "Rules": "The result must equal materialization from scratch, always") --
with the tenant in the embedded store, on ``oxigraph serve`` and on Virtuoso."""

from __future__ import annotations

import itertools
import json
import os
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyoxigraph import Triple

from reckon._errors import ConflictPending, InvalidInput, RestoreRefused, UnknownMemory
from reckon.api import Engine, Principal
from reckon.datalog.evaluate import Reasoner

pytestmark = pytest.mark.slow  # hypothesis sequences over fresh tenants

OPS = Principal.operator(person="ops")
ANN = Principal(person="ann")
T0 = datetime(2026, 3, 1, tzinfo=UTC)

metric = st.sampled_from(["ROAS", "CPA"])
platform = st.sampled_from(["meta", "google"])
money = st.integers(min_value=0, max_value=60).map(lambda k: k * 1000)
idx = st.integers(min_value=0, max_value=7)

steps = st.one_of(
    st.tuples(st.just("target"), metric, st.integers(1, 5), st.booleans()),
    st.tuples(st.just("cap"), platform, money, st.booleans()),
    st.tuples(st.just("pref"), st.integers(0, 3), st.sampled_from([None, 1, 5, 20])),
    st.tuples(st.just("update"), idx, st.integers(1, 5)),
    st.tuples(st.just("supersede"), idx, idx),
    st.tuples(st.just("restore"), idx),
    st.tuples(st.just("delete"), idx),
    st.tuples(st.just("kpi"), metric, st.integers(0, 60).map(lambda k: k / 10)),
    st.tuples(st.just("spend"), platform, money),
    st.tuples(st.just("tick"), st.integers(0, 15)),
)

_n = itertools.count()


@pytest.fixture(scope="module", params=["embedded", "oxigraph", "virtuoso"])
def engine(request, sparql_servers, tmp_path_factory):
    """An engine whose tenants live in the embedded store, on ``oxigraph serve`` or on
    Virtuoso (issue 14: the API-level suites run on every backend)."""
    d = tmp_path_factory.mktemp("prop")
    if request.param != "embedded":
        from tests.store.servers import server_for

        s = server_for(sparql_servers, request.param, tmp_path_factory.getbasetemp() / "servers")
        cfg = s.endpoint_config(prefix=f"urn:reckon:incr{os.getpid()}-{next(_n)}:")
        (d / "shards.json").write_text(json.dumps({"default": "s", "endpoints": {"s": cfg}}))
    return Engine(d)


def _from_scratch(tenant) -> set[Triple]:
    r = Reasoner(tenant.engine.ruleset)
    r.load({Triple(q.subject, q.predicate, q.object) for q in tenant.store.asserted()})
    return r.inferred()


def _run(tenant, step, ids, clock):
    kind = step[0]
    try:
        if kind == "target":
            _, m, v, replace = step
            fields = dict(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                          label=f"{m} target {v}", content=f"keep {m} at {v}",
                          subclass="PerformanceTargetMemory", properties={"metric": m, "targetValue": v})
            ids.append(_remember(tenant, fields, replace).id)
        elif kind == "cap":
            _, p, a, replace = step
            fields = dict(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                          label=f"{p} cap {a}", content=f"cap {p} spend at {a}",
                          subclass="BudgetConstraintMemory",
                          properties={"platform": p, "amount": a, "currency": "USD", "period": "monthly"})
            ids.append(_remember(tenant, fields, replace).id)
        elif kind == "pref":
            _, i, days = step
            exp = clock[0] + timedelta(days=days) if days is not None else None
            ids.append(tenant.remember(kind="preference", scope="user", importance=4, source="agent_tool",
                                       principal=ANN, label=f"pref {i}", content=f"preference number {i}",
                                       expires_at=exp).id)
        elif kind == "update" and ids:
            tenant.update(ids[step[1] % len(ids)], principal=OPS, importance=step[2])
        elif kind == "supersede" and ids:
            old, new = ids[step[1] % len(ids)], ids[step[2] % len(ids)]
            who = ANN if tenant.get(old).scope == "user" else OPS
            tenant.supersede(old, new, principal=who)
        elif kind == "restore" and ids:
            tenant.restore(ids[step[1] % len(ids)], principal=OPS)
        elif kind == "delete" and ids:
            tenant.delete(ids.pop(step[1] % len(ids)), principal=OPS)
        elif kind == "kpi":
            tenant.set_kpi(step[1], step[2])
        elif kind == "spend":
            tenant.set_spend(step[1], step[2])
        elif kind == "tick":
            clock[0] = clock[0] + timedelta(days=step[1])
            tenant.tick(clock[0])
    except (ConflictPending, InvalidInput, RestoreRefused, UnknownMemory) as e:
        # refused operations (already superseded, cycle, restore against a live
        # superseder, a preference the contradiction judge holds for a replacement that
        # needs confirming ...) are part of the sequence; they must not change the store
        return type(e).__name__
    except Exception as e:  # pragma: no cover - reported with the failing example
        if type(e).__name__ == "NotAuthorized":
            return "NotAuthorized"
        raise
    return None


def _remember(tenant, fields, replace):
    try:
        return tenant.remember(**fields)
    except ConflictPending as c:
        return tenant.remember(**fields, conflict_resolution="replace" if replace else "keep_both",
                               conflict_id=c.conflict_id)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(seq=st.lists(steps, min_size=3, max_size=8))
def test_incremental_inferred_graph_equals_recomputation(engine, seq):
    tenant = engine.create_tenant(f"p{next(_n)}", company_name="Acme")
    clock = [T0]
    tenant.tick(T0)
    ids: list[str] = []
    for step in seq:
        before = tenant.dump()
        refused = _run(tenant, step, ids, clock)
        if refused:
            assert tenant.dump() == before, (step, refused)
        assert tenant.store.inferred() == _from_scratch(tenant), step
    active = {m.id for m in tenant.memories()}
    for mid in ids:
        m = tenant.get(mid)
        assert m.active == (mid in active)
        if m.superseded_by:
            assert not m.active
