"""Business data and the clock (memory-layout.md "Business data", "Clock"): each call is
one transaction that replaces the previous current value, and the statuses the rules
derive from it follow incrementally (seed 003 §7 worked example: $34k of a $40k cap is
near_limit at 85 %)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from pyoxigraph import Literal, NamedNode

from reckon._errors import InvalidInput
from reckon.api import Tenant
from tests.api.conftest import mk, rk, write_budget_memory

XSD = "http://www.w3.org/2001/XMLSchema#"
PFX = (
    "PREFIX rk: <https://reckon.dev/ns/core#> PREFIX mk: <https://reckon.dev/ns/marketing#> "
    "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
)


def one(tenant: Tenant, query: str) -> list[dict]:  # type: ignore[type-arg]
    return tenant.sparql(PFX + query)  # type: ignore[return-value]


def test_set_kpi_replaces_the_current_value(tenant: Tenant) -> None:
    tenant.set_kpi("ROAS", 2.5, as_of=datetime(2026, 3, 23, 5, tzinfo=UTC))
    tenant.set_kpi("roas", "3.10")
    tenant.set_kpi("ROAS", 4, platform="meta")
    rows = one(tenant, "SELECT ?k ?v ?p WHERE { ?c mk:currentKpi ?k . ?k mk:metric mk:ROAS ; mk:value ?v "
                       "OPTIONAL { ?k mk:platform ?p } } ORDER BY ?k")
    assert [(r["k"].value, r["v"].value, r.get("p")) for r in rows] == [
        (f"urn:reckon:{tenant.id}:kpi:meta:roas", "4", mk("meta")),
        (f"urn:reckon:{tenant.id}:kpi:roas", "3.1", None),
    ]
    assert all(r["v"].datatype == NamedNode(XSD + "decimal") for r in rows)


def test_kpi_names_resolve_by_label_or_local_name(tenant: Tenant) -> None:
    tenant.set_kpi("conversion_rate", 0.031)
    tenant.set_kpi("Conversion Rate", 0.04)
    rows = one(tenant, "SELECT ?v WHERE { ?k mk:metric mk:ConversionRate ; mk:value ?v }")
    assert rows == [{"v": Literal("0.04", datatype=NamedNode(XSD + "decimal"))}]


def test_set_spend_and_the_budget_status_follow_incrementally(tenant: Tenant) -> None:
    m = write_budget_memory(tenant, "cap", amount="40000")
    status = f"SELECT ?s ?u WHERE {{ <{m.value}> mk:budgetStatus ?s ; mk:utilisation ?u }}"
    assert one(tenant, status) == []
    tenant.set_spend("meta", 34000, period_start=date(2026, 3, 1))
    rows = one(tenant, status)
    assert [(r["s"], float(r["u"].value)) for r in rows] == [(mk("NearLimit"), 0.85)]
    tenant.set_spend("meta", 10000)
    assert [r["s"] for r in one(tenant, status)] == [mk("WithinBudget")]
    tenant.set_spend("meta", 41000.5)
    assert [r["s"] for r in one(tenant, status)] == [mk("OverBudget")]
    # exactly one current record for (meta, monthly, USD)
    recs = one(tenant, "SELECT ?r ?a WHERE { ?c mk:currentSpendRecord ?r . ?r mk:amount ?a }")
    assert [(r["r"].value, r["a"].value) for r in recs] == [(f"urn:reckon:{tenant.id}:spend:meta:monthly", "41000.5")]
    # incremental maintenance equals recomputation from scratch
    assert tenant.store.rebuild_inferred() is None


def test_spend_in_another_currency_is_a_separate_record(tenant: Tenant) -> None:
    tenant.set_spend("google", 5, currency="EUR")
    tenant.set_spend("google", 7)
    recs = one(tenant, "SELECT ?r ?cur WHERE { ?c mk:currentSpendRecord ?r . ?r mk:currency ?cur } ORDER BY ?r")
    assert [(r["r"].value, r["cur"].value) for r in recs] == [
        (f"urn:reckon:{tenant.id}:spend:google:monthly", "USD"),
        (f"urn:reckon:{tenant.id}:spend:google:monthly:eur", "EUR"),
    ]


def test_connect_account_and_subscription(tenant: Tenant) -> None:
    tenant.connect_account("meta", "1234", "Acme Meta")
    tenant.connect_account("meta", "1234", "Renamed")
    tenant.set_subscription("growth", seats=10)
    tenant.set_subscription("scale", status="past_due")
    accts = one(tenant, "SELECT ?a ?id ?n WHERE { ?c mk:connectedAccount ?a . ?a mk:accountId ?id ; rdfs:label ?n }")
    assert [(r["id"].value, r["n"].value) for r in accts] == [("1234", "Renamed")]
    subs = one(tenant, "SELECT ?s ?plan ?st ?seats WHERE { ?c mk:subscription ?s . ?s mk:plan ?plan ; "
                       "mk:subscriptionStatus ?st OPTIONAL { ?s mk:seats ?seats } }")
    assert [(r["plan"].value, r["st"], r.get("seats")) for r in subs] == [("scale", mk("PastDue"), None)]
    # the live context carries the subscription and the account (rules/marketing.srl)
    assert one(tenant, "ASK { rk:liveContext mk:liveSubscription ?s ; mk:liveAccount ?a }") is True


def test_tick_keeps_exactly_one_now_and_drives_expiry(tenant: Tenant) -> None:
    m = write_budget_memory(tenant, "exp", amount="100")
    with tenant.store.transaction() as txn:
        from pyoxigraph import Quad

        from reckon.store import MEMORIES

        txn.add(Quad(m, rk("expiresAt"), Literal("2026-04-01T00:00:00Z", datatype=NamedNode(XSD + "dateTime")), MEMORIES))
    active = f"ASK {{ GRAPH <urn:reckon:graph:inferred> {{ <{m.value}> a rk:ActiveMemory }} }}"
    assert one(tenant, active) is False  # no clock value yet: an expiring memory is not active
    tenant.tick(datetime(2026, 3, 23, 6, tzinfo=UTC))
    assert one(tenant, active) is True
    with pytest.raises(InvalidInput, match="no time zone"):  # naive: refused, never guessed
        tenant.tick(datetime(2026, 4, 2))
    tenant.tick(datetime(2026, 4, 2, tzinfo=UTC))
    assert one(tenant, active) is False
    nows = one(tenant, "SELECT ?n WHERE { rk:clock rk:now ?n }")
    assert nows == [{"n": Literal("2026-04-02T00:00:00Z", datatype=NamedNode(XSD + "dateTime"))}]
    back = datetime(2026, 3, 31, 23, tzinfo=timezone(timedelta(hours=-2)))  # 2026-04-01T01:00Z
    with pytest.raises(InvalidInput, match="backwards"):
        tenant.tick(back)
    tenant.tick(back, allow_backwards=True)
    assert one(tenant, "SELECT ?n WHERE { rk:clock rk:now ?n }")[0]["n"].value == "2026-04-01T01:00:00Z"
    assert one(tenant, active) is False
    assert tenant.store.rebuild_inferred() is None


def test_people_and_teams(tenant: Tenant) -> None:
    dana = tenant.add_person("dana", "Dana", teams=["growth"])
    assert dana == NamedNode(f"urn:reckon:{tenant.id}:person:dana")
    tenant.add_team("growth", "Growth")
    tenant.add_person("dana", "Dana S.")
    rows = one(tenant, "SELECT ?t ?tn ?pn WHERE { ?t a rk:Team ; rdfs:label ?tn ; rk:member ?p . ?p rdfs:label ?pn }")
    assert [(r["t"].value, r["tn"].value, r["pn"].value) for r in rows] == [
        (f"urn:reckon:{tenant.id}:team:growth", "Growth", "Dana S.")
    ]
    # the memory layer mints the same IRIs
    from reckon.memory import _rdf

    assert _rdf.person_iri(tenant.id, "a b/\"c") == tenant.add_person("a b/\"c")
    assert _rdf.team_iri(tenant.id, "x y") == tenant.add_team("x y")


BAD_CALLS = [
    lambda t: t.set_kpi("NOPE", 1),
    lambda t: t.set_kpi("ROAS", "abc"),
    lambda t: t.set_kpi("ROAS", float("nan")),
    lambda t: t.set_kpi("ROAS", True),
    lambda t: t.set_kpi("ROAS", 1, platform="myspace"),
    lambda t: t.set_spend("meta", -1),
    lambda t: t.set_spend("meta", 1, currency="usd"),
    lambda t: t.set_spend("meta", 1, period="fortnightly"),
    lambda t: t.connect_account("meta", ""),
    lambda t: t.set_subscription("growth", status="paused"),
    lambda t: t.set_subscription("growth", seats=-1),
    lambda t: t.tick("2026-03-01"),
    lambda t: t.add_person(""),
]


def test_bad_input_is_refused_and_leaves_the_store_byte_identical(tenant: Tenant) -> None:
    tenant.set_spend("meta", 5)
    before = tenant.dump()
    gen = tenant.store.generation()
    for i, call in enumerate(BAD_CALLS):
        with pytest.raises(InvalidInput):
            call(tenant)
        assert tenant.dump() == before, f"bad call #{i} changed the store"
        assert tenant.store.generation() == gen
