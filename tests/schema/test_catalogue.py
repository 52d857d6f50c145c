"""reckon.schema catalogue: every class under rk:Memory with its shape-declared properties."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from reckon._errors import InvalidInput

MK = "https://reckon.dev/ns/marketing#"
RK = "https://reckon.dev/ns/core#"
XSD = "http://www.w3.org/2001/XMLSchema#"


def test_lists_every_shipped_memory_subclass(schema):
    assert schema.catalogue().names() == [
        "mk:BrandVoiceMemory",
        "mk:BudgetConstraintMemory",
        "mk:PerformanceTargetMemory",
        "rc:CandidateAssessmentMemory",
        "rc:HiringCriteriaMemory",
        "rc:SourcingPreferenceMemory",
        "ty:BeliefMemory",  # module types (seed 004 seven types, seed 001 working memory)
        "ty:ChunkMemory",  # knowledge indexing (seed 002): a document and its chunks
        "ty:CoreMemory",
        "ty:DocumentMemory",
        "ty:EpisodicMemory",
        "ty:ProceduralMemory",
        "ty:ResourceMemory",
        "ty:SemanticMemory",
        "ty:VaultMemory",
        "ty:WorkingMemory",
    ]


def test_derived_classes_are_not_offered_to_writers(schema):
    names = schema.catalogue().names()
    assert "rk:ActiveMemory" not in names and "rk:LiveCandidate" not in names
    assert "ty:PermanentMemory" not in names and "ty:TransientMemory" not in names


def test_budget_constraint_properties(schema):
    b = schema.catalogue().get("mk:BudgetConstraintMemory")
    assert b.label == "budget constraint memory"
    assert "spend cap" in b.comment
    assert b.parents == (RK + "Memory",) and b.depth == 1
    assert [p.name for p in b.properties] == ["platform", "amount", "currency", "period"]
    amount = b.property("amount")
    assert (amount.path, amount.datatype, amount.min_count, amount.max_count) == (MK + "amount", XSD + "decimal", 1, 1)
    assert amount.min_inclusive == Decimal(0) and amount.max_inclusive is None
    assert amount.required and not amount.multiple
    assert b.property("mk:currency").pattern == "^[A-Z]{3}$"
    platform = b.property(MK + "platform")
    assert platform.range_class == MK + "Platform" and not platform.closed
    assert sorted(platform.allowed_labels.values()) == ["bing", "google", "linkedin", "meta", "tiktok", "twitter"]
    assert b.property("period").allowed_labels[MK + "Monthly"] == "monthly"


def test_performance_target_platform_is_optional(schema):
    t = schema.catalogue().get("PerformanceTargetMemory")
    assert [p.name for p in t.properties] == ["metric", "target_value", "platform"]
    assert t.property("platform").min_count == 0
    metric = t.property("metric")
    assert metric.allowed_labels[MK + "ROAS"] == "ROAS" and metric.allowed_labels[MK + "CPA"] == "CPA"


def test_base_properties_every_memory_carries(schema):
    base = schema.catalogue().base
    assert base.curie == "rk:Memory" and base.depth == 0
    names = [p.name for p in base.properties]
    assert names[:4] == ["label", "content", "kind", "scope"]
    assert {"importance", "source", "confidence", "expires_at", "superseded_by"} <= set(names)
    kind = base.property("kind")
    assert kind.closed and kind.allowed == tuple(RK + k for k in ("Preference", "Fact", "Objective", "Context"))
    assert kind.allowed_labels[RK + "Objective"] == "objective"
    imp = base.property("importance")
    assert (imp.datatype, imp.min_inclusive, imp.max_inclusive) == (XSD + "integer", 1, 5)
    conf = base.property("confidence")
    assert (conf.min_inclusive, conf.max_inclusive) == (0, 1)
    assert base.property("source").allowed_labels[RK + "AgentTool"] == "agent_tool"
    assert {c["path"] for c in base.conditions} == {RK + "owner", RK + "team", RK + "project", RK + "conversation"}


def test_subclass_inherits_base_properties_and_conditions(schema):
    b = schema.catalogue().get("mk:BudgetConstraintMemory")
    assert b.ancestors == (RK + "Memory",)
    assert [p.name for p in b.all_properties][:3] == ["label", "content", "kind"]
    assert [p.name for p in b.all_properties][-4:] == ["platform", "amount", "currency", "period"]
    assert b.property("importance").max_inclusive == 5
    assert any("owner is required" in (c["message"] or "") for c in b.conditions)


def test_lookup_by_iri_and_unknown_class(schema):
    cat = schema.catalogue()
    assert cat.get(MK + "BrandVoiceMemory").name == "BrandVoiceMemory"
    assert cat.get("Memory") is cat.base
    with pytest.raises(InvalidInput) as e:
        cat.get("mk:BudgetMemory")
    assert e.value.field == "subclass"
    assert "mk:BudgetConstraintMemory" in str(e.value)
    with pytest.raises(InvalidInput):
        cat.get("mk:BudgetConstraintMemory").property("colour")


def test_catalogue_is_json_serialisable(schema):
    d = schema.catalogue().to_dict()
    text = json.dumps(d)
    back = json.loads(text)
    budget = next(c for c in back["classes"] if c["name"] == "BudgetConstraintMemory")
    amount = next(p for p in budget["properties"] if p["name"] == "amount")
    assert amount["min_inclusive"] == 0.0 and amount["required"] is True
    assert back["base"]["name"] == "Memory"


def test_catalogue_is_computed_once_per_schema(schema):
    assert schema.catalogue() is schema.catalogue()


def test_recruiting_classes(schema):
    cat = schema.catalogue()
    h = cat.get("rc:HiringCriteriaMemory")
    assert h.property("target_days_to_fill").min_inclusive == 1
    a = cat.get("rc:CandidateAssessmentMemory")
    assert a.property("candidate").required
    assert (a.property("rating").min_inclusive, a.property("rating").max_inclusive) == (1, 5)
    s = cat.get("rc:SourcingPreferenceMemory")
    assert s.property("preferred_channels").multiple


def test_every_memory_class_and_property_is_documented(schema):
    from rdflib.namespace import OWL, RDF, RDFS

    undocumented = []
    for kind in (OWL.Class, OWL.ObjectProperty, OWL.DatatypeProperty):
        for s in schema.ontology.subjects(RDF.type, kind):
            if schema.ontology.value(s, RDFS.label) is None or schema.ontology.value(s, RDFS.comment) is None:
                undocumented.append(str(s))
    assert undocumented == []
