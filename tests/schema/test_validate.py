"""reckon.schema.validate: each kind of SHACL constraint violation is reported with its
focus node, path, field, constraint component, value and message
(https://www.w3.org/TR/shacl/#core-components)."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
import rdflib

from reckon._errors import InvalidInput, ShapeViolation
from reckon.schema import check, load_schema, validate

from .conftest import MEMORY, PREFIXES, budget, memory_graph

MK = "https://reckon.dev/ns/marketing#"
RK = "https://reckon.dev/ns/core#"


def one(violations, constraint):
    """The single violation with this constraint component."""
    found = [v for v in violations if v["constraint"] == constraint]
    assert len(found) == 1, violations
    return found[0]


def test_the_documented_budget_memory_conforms(schema):
    assert validate(budget(), [MEMORY], schema=schema) == []


def test_base_shape_applies_to_a_subclass_instance_through_the_hierarchy(schema):
    # rk:MemoryShape targets rk:Memory; the data holds only "a mk:BudgetConstraintMemory".
    v = one(validate(budget(rk__source=None), [MEMORY], schema=schema), "sh:MinCountConstraintComponent")
    assert v["focus_node"] == MEMORY
    assert v["path"] == RK + "source"
    assert v["field"] == "source"
    assert v["severity"] == "Violation"
    assert "source is required" in v["message"]


def test_max_count(schema):
    v = one(validate(budget(rdfs__label=['"a"', '"b"']), [MEMORY], schema=schema), "sh:MaxCountConstraintComponent")
    assert v["field"] == "label"


@pytest.mark.parametrize(
    ("field", "turtle", "constraint", "path", "value"),
    [
        ("rk__importance", "7", "sh:MaxInclusiveConstraintComponent", RK + "importance", "7"),
        ("rk__importance", "0", "sh:MinInclusiveConstraintComponent", RK + "importance", "0"),
        ("rk__confidence", '"1.5"^^xsd:decimal', "sh:MaxInclusiveConstraintComponent", RK + "confidence", "1.5"),
        ("mk__amount", '"-5"^^xsd:decimal', "sh:MinInclusiveConstraintComponent", MK + "amount", "-5"),
    ],
)
def test_numeric_bounds(schema, field, turtle, constraint, path, value):
    v = one(validate(budget(**{field: turtle}), [MEMORY], schema=schema), constraint)
    assert (v["path"], v["value"]) == (path, value)


def test_datatype(schema):
    # "5" is a string, 40000 (no ^^) is an xsd:integer: sh:datatype is exact.
    vs = validate(budget(rk__importance='"5"', mk__amount="40000"), [MEMORY], schema=schema)
    fields = sorted(v["field"] for v in vs if v["constraint"] == "sh:DatatypeConstraintComponent")
    assert fields == ["amount", "importance"]


def test_value_set_sh_in(schema):
    v = one(validate(budget(rk__kind="rk:Banana"), [MEMORY], schema=schema), "sh:InConstraintComponent")
    assert (v["field"], v["value"]) == ("kind", RK + "Banana")
    assert "preference, fact, objective, context" in v["message"]


def test_pattern_currency(schema):
    v = one(validate(budget(mk__currency='"usd"'), [MEMORY], schema=schema), "sh:PatternConstraintComponent")
    assert (v["field"], v["value"]) == ("currency", "usd")


def test_pattern_date_time_needs_a_time_zone(schema):
    vs = validate(budget(rk__createdAt='"2026-03-02T09:15:00"^^xsd:dateTime'), [MEMORY], schema=schema)
    v = one(vs, "sh:PatternConstraintComponent")
    assert v["field"] == "created_at"


def test_class_range(schema):
    # mk:myspace is not an mk:Platform individual
    v = one(validate(budget(mk__platform="mk:myspace"), [MEMORY], schema=schema), "sh:ClassConstraintComponent")
    assert (v["field"], v["value"]) == ("platform", MK + "myspace")


def test_node_kind(schema):
    vs = validate(budget(rk__author='"Dana"'), [MEMORY], schema=schema)
    assert one(vs, "sh:NodeKindConstraintComponent")["field"] == "author"


def test_user_scope_requires_exactly_one_owner(schema):
    ok = validate(budget(rk__scope="rk:UserScope"), [MEMORY], schema=schema)
    assert ok == []
    v = one(validate(budget(rk__scope="rk:UserScope", rk__owner=None), [MEMORY], schema=schema), "sh:OrConstraintComponent")
    assert (v["path"], v["field"], v["value"]) == (RK + "owner", "owner", None)
    assert "owner is required for scope user" in v["message"]


def test_team_scope_requires_a_team(schema):
    v = one(validate(budget(rk__scope="rk:TeamScope"), [MEMORY], schema=schema), "sh:OrConstraintComponent")
    assert (v["path"], v["field"]) == (RK + "team", "teams")
    assert validate(budget(rk__scope="rk:TeamScope", rk__team="<urn:reckon:acme:team:growth>"), [MEMORY], schema=schema) == []


def test_superseded_by_must_point_to_a_memory(schema):
    newer = "<urn:reckon:acme:memory:new>"
    extra = f"{newer} a mk:PerformanceTargetMemory .\n"
    g = memory_graph({**_budget_fields(), "rk:supersededBy": newer}, extra=extra)
    assert validate(g, [MEMORY], schema=schema) == []
    g = memory_graph({**_budget_fields(), "rk:supersededBy": newer})  # newer untyped
    assert one(validate(g, [MEMORY], schema=schema), "sh:ClassConstraintComponent")["field"] == "superseded_by"


def test_unknown_class_is_reported_not_silently_accepted(schema):
    v = one(validate(budget(a="mk:BudgetConstraintMemoryy"), [MEMORY], schema=schema), "rk:KnownClassConstraint")
    assert v["value"] == MK + "BudgetConstraintMemoryy"


def test_only_focus_nodes_are_validated(schema):
    g = budget(rk__source=None)
    assert validate(g, ["urn:reckon:acme:person:dana"], schema=schema) == []
    assert validate(g, [], schema=schema) == []


def test_check_raises_shape_violation_naming_field_and_constraint(schema):
    with pytest.raises(ShapeViolation) as e:
        check(budget(mk__amount='"-5"^^xsd:decimal', rk__kind="rk:Banana"), [MEMORY], schema=schema)
    msg = str(e.value)
    assert msg.startswith("2 shape violations")
    assert "field 'amount' (mk:amount) violates sh:MinInclusiveConstraintComponent with value -5" in msg
    assert "field 'kind' (rk:kind) violates sh:InConstraintComponent" in msg
    assert sorted(v["field"] for v in e.value.violations) == ["amount", "kind"]
    assert isinstance(e.value, ValueError)


def test_check_passes_silently_on_a_valid_memory(schema):
    assert check(budget(), [MEMORY], schema=schema) is None


def test_pyoxigraph_input_with_xsd_string_literals(schema):
    # Oxigraph types plain strings xsd:string; sh:in / sh:datatype must not misfire.
    triples = [
        ox.Triple(ox.NamedNode(str(s)), ox.NamedNode(str(p)), _ox(o)) for s, p, o in budget()
    ]
    assert any(isinstance(t.object, ox.Literal) and t.object.datatype.value.endswith("#string") for t in triples)
    assert validate(triples, [ox.NamedNode(MEMORY)], schema=schema) == []


def test_blank_focus_node_is_refused(schema):
    with pytest.raises(InvalidInput):
        validate(budget(), [rdflib.BNode()], schema=schema)


def test_shipped_ontology_nodes_conform(schema):
    # the rk:settings defaults and the metric individuals live in the ontology itself
    focus = [RK + "settings"] + [str(s) for s in schema.ontology.subjects(rdflib.RDF.type, rdflib.URIRef(MK + "Metric"))]
    assert len(focus) == 9
    assert validate(schema.ontology, focus, schema=schema) == []


def test_settings_out_of_range_is_reported(schema):
    g = rdflib.Graph()
    g.parse(
        data=PREFIXES + 'rk:settings a rk:Settings ; rk:nearLimitThreshold "1.2"^^xsd:decimal ; '
        'rk:liveContextCap 50 ; rk:confidenceFloor "0.5"^^xsd:decimal ; rk:liveImportanceFloor 4 .',
        format="turtle",
    )
    v = one(validate(g, [RK + "settings"], schema=schema), "sh:MaxInclusiveConstraintComponent")
    assert v["field"] == "near_limit_threshold"


def test_default_schema_is_the_shipped_one():
    assert validate(budget(), [MEMORY]) == []
    assert load_schema() is load_schema()


def _budget_fields():
    from .conftest import BUDGET

    return dict(BUDGET)


def _ox(o):
    if isinstance(o, rdflib.URIRef):
        return ox.NamedNode(str(o))
    if isinstance(o, rdflib.BNode):
        return ox.BlankNode(str(o))
    if o.datatype is None and not o.language:
        return ox.Literal(str(o), datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#string"))
    if o.language:
        return ox.Literal(str(o), language=o.language)
    return ox.Literal(str(o), datatype=ox.NamedNode(str(o.datatype)))


def test_business_data_of_the_layout_note_conforms(schema):
    g = rdflib.Graph()
    g.parse(
        data=PREFIXES
        + """
<urn:reckon:acme:company> a rk:Company ; rdfs:label "Acme Inc." ;
    mk:connectedAccount <urn:reckon:acme:account:meta-1234> ; mk:subscription <urn:reckon:acme:subscription> ;
    mk:currentKpi <urn:reckon:acme:kpi:roas> ; mk:currentSpendRecord <urn:reckon:acme:spend:meta:monthly> .
<urn:reckon:acme:kpi:roas> a mk:KpiValue ; mk:metric mk:ROAS ; mk:value "2.5"^^xsd:decimal ;
    mk:asOf "2026-03-23T05:00:00Z"^^xsd:dateTime .
<urn:reckon:acme:spend:meta:monthly> a mk:SpendRecord ; mk:platform mk:meta ; mk:period mk:Monthly ;
    mk:amount "34000"^^xsd:decimal ; mk:currency "USD" ; mk:periodStart "2026-03-01"^^xsd:date .
<urn:reckon:acme:account:meta-1234> a mk:AdAccount ; mk:onPlatform mk:meta ; mk:accountId "1234" ; rdfs:label "Acme Meta" .
<urn:reckon:acme:subscription> a mk:Subscription ; mk:plan "growth" ; mk:seats 10 ; mk:subscriptionStatus mk:Active .
rk:clock a rk:Clock ; rk:now "2026-03-23T06:00:00Z"^^xsd:dateTime .
<urn:reckon:acme:team:growth> a rk:Team ; rdfs:label "Growth" ; rk:member <urn:reckon:acme:person:dana> .
<urn:reckon:acme:person:dana> a rk:Person ; rdfs:label "Dana" .
<urn:reckon:acme:role:sre> a rc:Role ; rdfs:label "SRE" ; rc:daysOpen 35 ; rc:roleStatus rc:Open .
<urn:reckon:acme:candidate:x> a rc:Candidate ; rdfs:label "Ada" ; rc:appliedTo <urn:reckon:acme:role:sre> .
""",
        format="turtle",
    )
    focus = sorted({str(s) for s in g.subjects(rdflib.RDF.type, None)})
    assert len(focus) == 10
    assert validate(g, focus, schema=schema) == []
    g.add((rdflib.URIRef("urn:reckon:acme:spend:meta:monthly"), rdflib.URIRef(MK + "currency"), rdflib.Literal("EUR")))
    v = one(validate(g, focus, schema=schema), "sh:MaxCountConstraintComponent")
    assert v["focus_node"] == "urn:reckon:acme:spend:meta:monthly" and v["field"] == "currency"
