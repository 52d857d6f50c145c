"""The tenant owns its program (issue "Derived state is always true", item 2).

Modules (ontology, shapes, rules) and their digests are stored in the tenant; every
opener reasons with exactly that program; installing, upgrading or removing a module is
an explicit atomic migration that reports what changed; an explicit different program is
refused; tenants created before programs were stored are adopted or refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import Quad

from reckon import InvalidInput, ProgramMismatch, RuleError, ShapeViolation
from reckon.api import Engine, Principal, Tenant
from reckon.business.writers import initial_quads
from reckon.cli._tenant import validate_tenant
from reckon.schema import load_schema
from reckon.store import SCHEMA, TenantStore, tenant_dir

OPS = Principal(person="dana", role="operator")

ONTO = """
@prefix rk: <https://reckon.dev/ns/core#> . @prefix ex: <https://example.org/ns/creative#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . @prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:HeadlineRuleMemory a owl:Class ; rdfs:subClassOf rk:Memory ;
    rdfs:label "headline rule memory" ; rdfs:comment "A rule for ad headlines." .
ex:maxWords a owl:DatatypeProperty , owl:FunctionalProperty ; rdfs:label "max words" ;
    rdfs:domain ex:HeadlineRuleMemory ; rdfs:range xsd:integer .
ex:headlineStatus a owl:DatatypeProperty ; rdfs:label "headline status" ;
    rdfs:domain ex:HeadlineRuleMemory ; rdfs:range xsd:string .
"""
SHAPES = """
@prefix ex: <https://example.org/ns/creative#> . @prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:HeadlineRuleShape a sh:NodeShape ; sh:targetClass ex:HeadlineRuleMemory ;
    sh:property [ sh:path ex:maxWords ; sh:name "max_words" ; sh:minCount 1 ; sh:maxCount 1 ;
                  sh:datatype xsd:integer ; sh:minInclusive 1 ; sh:message "max_words: one integer >= 1" ] .
"""
RULES = """
PREFIX rk: <https://reckon.dev/ns/core#>
PREFIX ex: <https://example.org/ns/creative#>
# rule: headline-long -- an active headline rule allowing more than 10 words is "long"
RULE { ?m ex:headlineStatus "long" } WHERE { ?m a ex:HeadlineRuleMemory , rk:ActiveMemory ; ex:maxWords ?n FILTER(?n > 10) }
# rule: headline-short -- one allowing at most 10 words is "short"
RULE { ?m ex:headlineStatus "short" } WHERE { ?m a ex:HeadlineRuleMemory , rk:ActiveMemory ; ex:maxWords ?n FILTER(?n <= 10) }
"""


def _module(tmp: Path) -> list[Path]:
    tmp.mkdir(parents=True, exist_ok=True)
    files = [tmp / "creative.ttl", tmp / "creative_shapes.ttl", tmp / "creative.srl"]
    for f, text in zip(files, (ONTO, SHAPES, RULES), strict=True):
        f.write_text(text)
    return files


def _headline(t: Tenant, n: int = 8):  # type: ignore[no-untyped-def]
    return t.remember(kind="preference", scope="company", importance=4, source="operator", principal=OPS,
                      label=f"Headlines of {n} words", content=f"At most {n} words per headline",
                      subclass="HeadlineRuleMemory", properties={"max_words": n})


def test_every_opener_reasons_with_the_program_the_tenant_stores(tmp_path: Path) -> None:
    files = _module(tmp_path / "mod")
    t = Engine(tmp_path / "d", modules=files).create_tenant("acme")
    assert [m.name for m in t.modules()] == ["core", "marketing", "recruiting", "agent", "notes", "events", "experience", "types", "creative", "creative_shapes"]
    m = _headline(t, 8)
    assert t.get(m.id).status["headlineStatus"] == "short"
    # a default opener (the CLI, serve, mcp) writes: the module's statuses stay derived
    plain = Engine(tmp_path / "d").tenant("acme")
    assert plain.program().digest == t.program().digest
    plain.set_spend("meta", 100)
    plain.update(m.id, principal=OPS, properties={"max_words": 12})
    assert plain.get(m.id).status["headlineStatus"] == "long"
    assert t.get(m.id).status["headlineStatus"] == "long"
    assert validate_tenant(plain)["conforms"]
    assert plain.store.rebuild_inferred() is None


def test_an_explicit_different_program_is_refused(tmp_path: Path) -> None:
    files = _module(tmp_path / "mod")
    Engine(tmp_path / "d", modules=files).create_tenant("acme")
    with pytest.raises(ProgramMismatch, match="creative") as ei:
        Engine(tmp_path / "d", rules=[]).tenant("acme")
    assert any("only in the tenant's program" in d for d in ei.value.differences)
    with pytest.raises(ProgramMismatch):
        Engine(tmp_path / "d", modules=files[:2]).tenant("acme")
    assert Engine(tmp_path / "d", modules=files).tenant("acme").id == "acme"  # the same program: fine


def test_install_upgrade_remove_are_atomic_migrations_that_report_changes(tmp_path: Path) -> None:
    files = _module(tmp_path / "mod")
    e = Engine(tmp_path / "d")
    t = e.create_tenant("acme")
    other = Engine(tmp_path / "d").tenant("acme")  # another opener, same process
    schema_mod = t.install_module(files[:2], name="creative-schema")
    assert schema_mod.action == "install" and schema_mod.schema_added > 0
    m = _headline(t, 14)
    assert "headlineStatus" not in t.get(m.id).status
    r = t.install_module(files[2], name="creative-rules")
    assert r.action == "install" and r.program_before == schema_mod.program_after
    assert r.status_changes == [{"memory": m.id, "property": "headlineStatus", "before": [], "after": ["long"]}]
    assert other.get(m.id).status["headlineStatus"] == "long"  # the other opener follows the stored program
    assert t.install_module(files[2], name="creative-rules").action == "unchanged"
    # upgrading needs to be explicit
    v2 = tmp_path / "v2" / "creative.srl"
    v2.parent.mkdir()
    v2.write_text(RULES.replace("> 10", "> 20").replace("<= 10", "<= 20"))
    before = t.dump()
    with pytest.raises(InvalidInput, match="upgrade"):
        t.install_module(v2, name="creative-rules")
    assert t.dump() == before
    up = t.install_module(v2, name="creative-rules", upgrade=True)
    assert up.action == "upgrade"
    assert up.status_changes == [{"memory": m.id, "property": "headlineStatus", "before": ["long"], "after": ["short"]}]
    # removal: core never; a module whose class memories use, not while they do
    before = t.dump()
    with pytest.raises(InvalidInput, match="core"):
        t.remove_module("core")
    with pytest.raises(InvalidInput, match="HeadlineRuleMemory"):
        t.remove_module("creative-schema")
    assert t.dump() == before
    gone = t.remove_module("creative-rules")
    assert gone.status_changes[0]["before"] == ["short"] and gone.status_changes[0]["after"] == []
    assert "headlineStatus" not in other.get(m.id).status
    assert validate_tenant(other)["conforms"]
    assert [x.name for x in other.modules()] == ["core", "marketing", "recruiting", "agent", "notes", "events", "experience", "types", "creative-schema"]


def test_bad_modules_are_refused_and_leave_the_store_as_it_was(tmp_path: Path) -> None:
    t = Engine(tmp_path / "d").create_tenant("acme")
    cap = t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                     label="Meta cap", content="Meta under 40k", subclass="BudgetConstraintMemory",
                     properties={"platform": "meta", "amount": "40000", "currency": "USD", "period": "monthly"})
    before = t.dump()
    prog = t.program().digest
    bad_rules = tmp_path / "bad.srl"
    bad_rules.write_text("PREFIX ex: <urn:ex#> RULE { ?x ex:p ?y } WHERE { ?x ex:q ")
    with pytest.raises(RuleError):
        t.install_module(bad_rules)
    strict = tmp_path / "strict.ttl"  # a shape every existing budget cap violates
    strict.write_text(
        "@prefix mk: <https://reckon.dev/ns/marketing#> . @prefix sh: <http://www.w3.org/ns/shacl#> .\n"
        "<urn:ex:StrictCap> a sh:NodeShape ; sh:targetClass mk:BudgetConstraintMemory ;\n"
        "  sh:property [ sh:path mk:amount ; sh:maxInclusive 1000 ; sh:message \"caps up to 1000\" ] .\n")
    with pytest.raises(ShapeViolation, match="caps up to 1000"):
        t.install_module(strict)
    second = tmp_path / "threshold.ttl"  # a second value of a setting
    second.write_text("@prefix rk: <https://reckon.dev/ns/core#> . @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
                      "rk:settings rk:nearLimitThreshold \"0.6\"^^xsd:decimal .\n")
    with pytest.raises(InvalidInput, match="nearLimitThreshold = 0.6.*0.8"):
        t.install_module(second)
    subtype = tmp_path / "subtype.ttl"  # a datatype the store never keeps
    subtype.write_text(SHAPES.replace("xsd:integer", "xsd:positiveInteger"))
    with pytest.raises(InvalidInput, match="positiveInteger.*xsd:integer"):
        t.install_module(subtype)
    assert t.dump() == before and t.program().digest == prog
    assert t.get(cap.id).active


def test_a_module_may_add_its_own_setting_with_a_default(tmp_path: Path) -> None:
    mod = tmp_path / "stale.ttl"
    mod.write_text(
        "@prefix rk: <https://reckon.dev/ns/core#> . @prefix ex: <urn:ex#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . @prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> . @prefix sh: <http://www.w3.org/ns/shacl#> .\n"
        "ex:staleDays a owl:DatatypeProperty ; rdfs:label \"stale days\" ; rdfs:domain rk:Settings ; rdfs:range xsd:integer .\n"
        "ex:StaleShape a sh:NodeShape ; sh:targetClass rk:Settings ; sh:property [ sh:path ex:staleDays ;\n"
        "  sh:name \"stale_days\" ; sh:maxCount 1 ; sh:datatype xsd:integer ; sh:minInclusive 1 ; sh:message \"m\" ] .\n"
        "rk:settings ex:staleDays 30 .\n")
    t = Engine(tmp_path / "d").create_tenant("acme")
    r = t.install_module(mod)
    assert r.settings == {"stale_days": [None, "30"]}  # the sh:name, as t.settings() names it
    assert t.settings()["stale_days"] == 30
    t.set_setting("stale_days", 45)
    assert t.settings()["stale_days"] == 45
    assert validate_tenant(t)["conforms"]
    gone = t.remove_module("stale")
    assert gone.settings == {"stale_days": ["45", None]} and "stale_days" not in t.settings()


def test_shipped_module_by_name_and_reinstall_is_unchanged(tmp_path: Path) -> None:
    t = Engine(tmp_path / "d").create_tenant("acme")
    assert t.install_module("core", upgrade=True).action == "unchanged"
    with pytest.raises(InvalidInput, match="not installed"):
        t.install_module(_module(tmp_path / "m")[0], upgrade=True)


def _legacy(d: Path, tid: str, *extra: Path) -> None:
    """A tenant as Reckon wrote it before programs were stored (schema via rdflib, no
    program graph)."""
    e = Engine(d)
    quads = [Quad(t.subject, t.predicate, t.object, SCHEMA) for t in load_schema(*extra).triples()]
    TenantStore.create(tenant_dir(d, tid), tid, initial=quads + initial_quads(tid, None),
                       reasoner_factory=e.reasoner_factory())


def test_tenants_created_before_programs_were_stored(tmp_path: Path) -> None:
    from reckon.api._program import adopt

    d = tmp_path / "d"
    _legacy(d, "plain")
    t = Engine(d).tenant("plain")  # matches the shipped program: adopted on open
    assert [m.name for m in t.modules()] == ["core", "marketing", "recruiting", "agent", "notes", "events", "experience", "types"]
    assert validate_tenant(t)["conforms"]
    files = _module(tmp_path / "mod")
    _legacy(d, "custom", *files)
    with pytest.raises(ProgramMismatch, match="modules adopt custom"):
        Engine(d).tenant("custom")
    t2 = Engine(d, modules=files).tenant("custom")  # opened with its modules: adopted
    assert t2.program().digest == Engine(d, modules=files).program.digest
    m = _headline(t2, 3)
    assert t2.get(m.id).status["headlineStatus"] == "short"
    _legacy(d, "kept", *files[:2])
    plain = Engine(d)
    from reckon.api._tenant import Tenant as T

    raw = T(plain, TenantStore(tenant_dir(d, "kept"), program_resolver=plain._resolve))
    with pytest.raises(ProgramMismatch):
        adopt(raw, plain.program)
    report = adopt(raw, plain.program, keep_unknown_schema=True)
    assert report.action == "adopt"
    kept = Engine(d).tenant("kept")
    assert "legacy-schema" in [m.name for m in kept.modules()]
    assert validate_tenant(kept)["conforms"]


def test_export_carries_the_program(tmp_path: Path) -> None:
    files = _module(tmp_path / "mod")
    t = Engine(tmp_path / "d", modules=files).create_tenant("acme")
    m = _headline(t, 30)
    t.set_setting("near_limit_threshold", "0.650")
    t.export(tmp_path / "x.trig")
    assert t.verify_export(tmp_path / "x.trig")
    copy = Engine(tmp_path / "d2").import_tenant("copy", tmp_path / "x.trig")  # a default engine
    assert copy.program().digest == t.program().digest
    assert copy.get(m.id).status["headlineStatus"] == "long"
    assert copy.settings()["near_limit_threshold"] == t.settings()["near_limit_threshold"]
    assert validate_tenant(copy)["conforms"]
    with pytest.raises(ProgramMismatch):
        Engine(tmp_path / "d3", rules=[]).import_tenant("other", tmp_path / "x.trig")


def test_a_tenant_of_an_earlier_reckon_is_adopted_with_the_current_shipped_modules(tmp_path: Path) -> None:
    """Its schema graph lacks what the shipped modules gained since (here: the tombstone
    classes) and holds what they dropped (a made-up rk: triple): only Reckon's own
    vocabularies differ, so it is adopted and upgraded."""
    from pyoxigraph import Literal, NamedNode

    d = tmp_path / "d"
    e = Engine(d)
    rk = "https://reckon.dev/ns/core#"
    from pyoxigraph import BlankNode

    triples = load_schema().triples()
    drop = {t.subject for t in triples if "MemoryRecord" in str(t.subject) or "DeletedMemory" in str(t.subject)}
    todo = list(drop)
    while todo:  # with the property shapes (blank nodes) they reach
        n = todo.pop()
        for t in triples:
            if t.subject == n and isinstance(t.object, BlankNode) and t.object not in drop:
                drop.add(t.object)
                todo.append(t.object)
    quads = [Quad(t.subject, t.predicate, t.object, SCHEMA) for t in triples
             if t.subject not in drop and "MemoryRecord" not in str(t.object) and "DeletedMemory" not in str(t.object)]
    quads.append(Quad(NamedNode(rk + "OldThing"), NamedNode("http://www.w3.org/2000/01/rdf-schema#label"),
                      Literal("old thing"), SCHEMA))
    TenantStore.create(tenant_dir(d, "older"), "older", initial=quads + initial_quads("older", None),
                       reasoner_factory=e.reasoner_factory())
    t = Engine(d).tenant("older")
    assert t.program().digest == Engine(d).program.digest
    assert t.sparql(f"ASK {{ <{rk}OldThing> ?p ?o }}") is False
    assert t.sparql(f"ASK {{ <{rk}DeletedMemory> a owl:Class }}") is True
    assert validate_tenant(t)["conforms"]


def test_a_version_1_export_is_imported_and_adopted(tmp_path: Path) -> None:
    t = Engine(tmp_path / "d").create_tenant("acme")
    t.set_spend("meta", "100.50")
    text = t.store.export_trig().decode()
    body = text.split("\n", 1)[1]
    # drop the program graph: what Reckon wrote before exports carried programs
    import re

    body = re.sub(r"<urn:reckon:graph:program> \{.*?\n\}\n", "", body, flags=re.S)
    assert "urn:reckon:graph:program" not in body
    v1 = tmp_path / "v1.trig"
    v1.write_text("# reckon-export-version: 1\n" + body)
    copy = Engine(tmp_path / "d2").import_tenant("copy", v1)
    assert copy.program().digest == t.program().digest
    assert validate_tenant(copy)["conforms"]
