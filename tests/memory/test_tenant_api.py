"""Seed §7 worked examples end to end through the Tenant API (Engine -> Tenant ->
MemoryService -> TenantStore -> incremental reasoning), the ontology-author path (a
Turtle-only module adding a subclass three levels below rk:Memory), and the rule that a
refused write names field and constraint and leaves the tenant's dump byte-identical."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from reckon._errors import InvalidInput, ShapeViolation
from reckon.api import Engine, Principal

OPS = Principal.operator(person="dana")
MK = "https://reckon.dev/ns/marketing#"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    return Engine(tmp_path_factory.mktemp("engine"))


_n = iter(range(10_000))


@pytest.fixture
def tenant(engine):
    return engine.create_tenant(f"t{next(_n)}", company_name="Acme Inc.")


def target(metric="ROAS", value=3.0, **kw):
    d = dict(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
             label=f"{metric} target", content=f"Keep {metric} at {value}",
             subclass="PerformanceTargetMemory", properties={"metric": metric, "targetValue": value})
    d.update(kw)
    return d


def cap(amount=40000, **kw):
    d = dict(kind="objective", scope="company", importance=5, source="agent_tool", principal=OPS,
             label="Meta monthly spend cap", content="Don't let Meta spend go over $40k this month.",
             subclass="BudgetConstraintMemory",
             properties={"platform": "meta", "amount": amount, "currency": "USD", "period": "monthly"})
    d.update(kw)
    return d


def test_roas_target_below_then_met(tenant):
    m = tenant.remember(**target())
    tenant.set_kpi("ROAS", 2.5)
    got = tenant.get(m.id)
    assert got.status["targetStatus"] == "below" and got.status["currentValue"] == Decimal("2.5")
    tenant.set_kpi("ROAS", 3.2)
    got = tenant.get(m.id)
    assert got.status["targetStatus"] == "met" and got.status["currentValue"] == Decimal("3.2")


def test_cpa_target_flips_the_comparison(tenant):
    m = tenant.remember(**target(metric="CPA", value=20))
    tenant.set_kpi("CPA", 25)
    assert tenant.get(m.id).status["targetStatus"] == "below"
    tenant.set_kpi("CPA", 18)
    assert tenant.get(m.id).status["targetStatus"] == "met"


@pytest.mark.parametrize(
    ("spend", "status", "utilisation"),
    [(34000, "near_limit", 0.85), (41000, "over_budget", 1.025), (20000, "within_budget", 0.5)],
)
def test_meta_budget_cap(tenant, spend, status, utilisation):
    m = tenant.remember(**cap())
    tenant.set_spend("meta", spend)
    got = tenant.get(m.id)
    assert got.status["budgetStatus"] == status
    assert float(got.status["utilisation"]) == pytest.approx(utilisation)  # a Decimal
    assert got.status["currentSpend"] == spend


def test_budget_status_follows_spend_refreshes(tenant):
    m = tenant.remember(**cap())
    seen = []
    for spend in (20000, 34000, 41000, 10000):
        tenant.set_spend("meta", spend)
        seen.append(tenant.get(m.id).status["budgetStatus"])
    assert seen == ["within_budget", "near_limit", "over_budget", "within_budget"]


def test_expired_memory_leaves_active_set_on_the_tick_past_expiry(tenant):
    t0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
    tenant.tick(t0)
    m = tenant.remember(**cap(expires_at=t0 + timedelta(days=30)))
    tenant.tick(t0 + timedelta(days=29))
    assert tenant.get(m.id).active
    tenant.tick(t0 + timedelta(days=31))
    got = tenant.get(m.id)
    assert not got.active and "budgetStatus" not in got.status
    assert [x.id for x in tenant.memories()] == []


def test_superseded_memory_leaves_active_set_but_keeps_lineage(tenant):
    old = tenant.remember(**target())
    new = tenant.supersede(old.id, {k: v for k, v in target(value=2.5, label="ROAS target v2").items()
                                    if k != "principal"}, principal=OPS)
    assert [m.id for m in tenant.memories()] == [new.id]
    assert {m.id for m in tenant.memories(active_only=False)} == {old.id, new.id}
    rows = tenant.sparql(
        "PREFIX rk: <https://reckon.dev/ns/core#> SELECT ?old ?new WHERE { ?new rk:supersedes ?old }"
    )
    assert [(r["old"].value, r["new"].value) for r in rows] == [(old.iri, new.iri)]
    assert [e.id for e in tenant.history(new.id)] == [old.id, new.id]


# --- the ontology author's path: Turtle only --------------------------------------------

MODULE = """
@prefix rk:   <https://reckon.dev/ns/core#> .
@prefix mk:   <https://reckon.dev/ns/marketing#> .
@prefix ex:   <https://example.org/ns/deep#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl:  <http://www.w3.org/2002/07/owl#> .
@prefix sh:   <http://www.w3.org/ns/shacl#> .
@prefix xsd:  <http://www.w3.org/2001/XMLSchema#> .

ex:CreativeMemory a owl:Class ; rdfs:subClassOf rk:Memory ; rdfs:label "creative memory" .
ex:AdCopyMemory a owl:Class ; rdfs:subClassOf ex:CreativeMemory ; rdfs:label "ad copy memory" .
ex:HeadlineRuleMemory a owl:Class ; rdfs:subClassOf ex:AdCopyMemory ; rdfs:label "headline rule memory" .
ex:maxWords a owl:DatatypeProperty ; rdfs:domain ex:HeadlineRuleMemory ; rdfs:range xsd:integer .

ex:HeadlineRuleMemoryShape a sh:NodeShape ;
    sh:targetClass ex:HeadlineRuleMemory ;
    sh:property [ sh:path ex:maxWords ; sh:name "max_words" ; sh:minCount 1 ; sh:maxCount 1 ;
                  sh:datatype xsd:integer ; sh:minInclusive 1 ;
                  sh:message "max_words is required: one integer >= 1" ] .
"""


def test_ontology_author_subclass_three_levels_deep(tmp_path):
    mod = tmp_path / "deep.ttl"
    mod.write_text(MODULE)
    eng = Engine(tmp_path / "data", modules=[mod])
    t = eng.create_tenant("deep")
    rule = dict(kind="preference", scope="company", importance=4, source="operator", principal=OPS,
                label="Short headlines", content="Headlines have at most 8 words",
                subclass="HeadlineRuleMemory", properties={"max_words": 8})
    m = t.remember(**rule)
    assert m.subclass == "HeadlineRuleMemory" and m.properties == {"maxWords": 8} and m.active
    # counts as a Memory (and as each class in between), appears among active memories
    rows = t.sparql(
        "PREFIX rk: <https://reckon.dev/ns/core#> PREFIX ex: <https://example.org/ns/deep#> "
        "SELECT ?m WHERE { ?m a rk:Memory , rk:ActiveMemory , ex:CreativeMemory , ex:AdCopyMemory }"
    )
    assert [r["m"].value for r in rows] == [m.iri]
    assert [x.id for x in t.memories(subclass="CreativeMemory")] == [m.id]
    # validated by its own shape
    before = t.dump()
    with pytest.raises(ShapeViolation) as ei:
        t.remember(**{**rule, "label": "Zero", "properties": {"max_words": 0}})
    assert ei.value.violations[0]["constraint"] == "sh:MinInclusiveConstraintComponent"
    assert t.dump() == before
    # can be superseded
    new = t.supersede(m.id, {**{k: v for k, v in rule.items() if k != "principal"},
                             "label": "Shorter headlines", "properties": {"max_words": 6}}, principal=OPS)
    assert t.get(m.id).superseded_by == [new.id] and not t.get(m.id).active
    assert new.supersedes == [m.id]


# --- every refused write names field and constraint; the dump is byte-identical -----------

GOOD = cap()
BAD = [
    ({"importance": 0}, InvalidInput, "importance", None),
    ({"importance": "high"}, InvalidInput, "importance", None),
    ({"confidence": 2}, InvalidInput, "confidence", None),
    ({"kind": "vibe"}, InvalidInput, "kind", None),
    ({"source": None}, InvalidInput, "source", None),
    ({"label": ""}, InvalidInput, "label", None),
    ({"subclass": "NotAClass"}, InvalidInput, "subclass", None),
    ({"properties": {"platform": "meta", "amount": 1, "currency": "USD", "period": "fortnightly"}},
     InvalidInput, "properties.period", None),
    ({"properties": {"platform": "meta", "amount": 1, "currency": "dollars", "period": "monthly"}},
     ShapeViolation, MK + "currency", "sh:InConstraintComponent"),
    ({"properties": {"platform": "meta", "amount": -1, "currency": "USD", "period": "monthly"}},
     ShapeViolation, MK + "amount", "sh:MinInclusiveConstraintComponent"),
    ({"properties": {"platform": "meta", "currency": "USD", "period": "monthly"}},
     ShapeViolation, MK + "amount", "sh:MinCountConstraintComponent"),
    ({"properties": {"amount": 5, "currency": "USD", "period": "monthly"}},
     ShapeViolation, MK + "platform", "sh:MinCountConstraintComponent"),
]


@pytest.mark.parametrize(("change", "exc", "field", "constraint"), BAD, ids=[str(b[0])[:60] for b in BAD])
def test_refused_write_names_field_and_constraint_and_leaves_dump_identical(tenant, change, exc, field, constraint):
    tenant.remember(**target())  # a tenant with some content
    before = tenant.dump()
    with pytest.raises(exc) as ei:
        tenant.remember(**{**GOOD, **change})
    if exc is InvalidInput:
        assert ei.value.field == field and field in str(ei.value)
    else:
        v = [x for x in ei.value.violations if x["path"] == field]
        assert v and v[0]["constraint"] == constraint
        assert constraint in str(ei.value) and field.rsplit("#", 1)[-1] in str(ei.value)
    assert tenant.dump() == before
