"""Every shipped rule file (``rules/*.srl``) parses and passes ``check_program``
(well-formedness + stratification) with no diagnostics; the RDFS / OWL 2 RL files follow
their documented conventions (rule IRIs, ``# rule:`` comments, one file per rule,
helper triples only in ``urn:reckon:owl2rl:``).
"""

from __future__ import annotations

import re

import pytest
from pyoxigraph import NamedNode, Variable

from tests.reasoning.conftest import RULES_DIR, load_shipped

SHIPPED = sorted(p.name for p in RULES_DIR.glob("*.srl"))
RULE_NS = "urn:reckon:rule:"
HELPER_NS = "urn:reckon:owl2rl:"


def test_rdfs_and_owl2rl_are_shipped() -> None:
    assert {"rdfs.srl", "owl2rl.srl"} <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_rule_file_parses_and_checks(name: str) -> None:
    from reckon.datalog.stratify import check_program
    from reckon.datalog.wellformed import check_wellformed

    ruleset = load_shipped(name)
    assert ruleset.rules, f"{name} has no rules"
    assert check_wellformed(ruleset) == []
    strata = check_program(ruleset)  # raises RuleSetInvalid listing every problem
    assert sum(len(s.once) + len(s.general) for s in strata) == len(ruleset.rules)


def test_rdfs_and_owl2rl_load_together() -> None:
    """`reckon infer --rules rdfs.srl owl2rl.srl`: the union checks, no rule IRI repeats,
    and no rule (head + body) appears in both files."""
    from reckon.datalog.stratify import check_program

    rdfs, owl = load_shipped("rdfs.srl"), load_shipped("owl2rl.srl")
    both = rdfs + owl
    check_program(both)
    ids = [r.id for r in both.rules]
    assert all(isinstance(i, NamedNode) and i.value.startswith(RULE_NS) for i in ids)
    assert len(set(ids)) == len(ids)
    assert not {(r.head, r.body) for r in rdfs.rules} & {(r.head, r.body) for r in owl.rules}


@pytest.mark.parametrize("name", ["rdfs.srl", "owl2rl.srl"])
def test_each_rule_is_documented(name: str) -> None:
    """Each spec rule has a `# rule: <id> — If ... then ...` comment (STYLE.md, OWL-RL)."""
    text = (RULES_DIR / name).read_text(encoding="utf-8")
    for rule in load_shipped(name).rules:
        local = rule.id.value[len(RULE_NS) :]  # type: ignore[union-attr]
        if local.startswith("owl2rl-"):
            continue  # helper rules, checked below
        assert re.search(rf"^# rule: {re.escape(local)} — (If |`)", text, re.M), f"{local} undocumented"


def test_owl2rl_helper_rules_only_write_the_internal_namespace() -> None:
    """List-walking helper rules conclude only `urn:reckon:owl2rl:` predicates, and no
    other rule concludes one (owl2rl.srl header)."""
    for rule in load_shipped("rdfs.srl", "owl2rl.srl").rules:
        local = rule.id.value[len(RULE_NS) :]  # type: ignore[union-attr]
        preds = {t.p for t in rule.head}
        assert not any(isinstance(p, Variable) for p in preds) or not local.startswith("owl2rl-")
        internal = {p for p in preds if isinstance(p, NamedNode) and p.value.startswith(HELPER_NS)}
        if local.startswith("owl2rl-"):
            assert internal == preds, local
        else:
            assert not internal, local


# ------------------------------------------------------------------ OWL 2 RL rule cases
# One small case per owl2rl.srl rule (named by its OWL 2 Profiles table id): premise
# (Turtle), triples that must be inferred, triples that must not be. Loaded with rdfs.srl.

_PREFIXES = """
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix : <http://example.org/> .
"""

OWL2RL_CASES = {
    "eq-sym": (":a owl:sameAs :b .", ":b owl:sameAs :a .", ""),
    "eq-trans": (":a owl:sameAs :b . :b owl:sameAs :c .", ":a owl:sameAs :c .", ""),
    "eq-rep-s": (":a owl:sameAs :b . :a :p :o .", ":b :p :o .", ""),
    "eq-rep-p": (":p owl:sameAs :q . :a :p :o .", ":a :q :o .", ""),
    "eq-rep-o": (":o owl:sameAs :o2 . :a :p :o .", ":a :p :o2 .", ""),
    # eq-sym + eq-trans then give `:y1 owl:sameAs :y1`; not from prp-fp itself.
    "prp-fp": (":p a owl:FunctionalProperty . :x :p :y1, :y2 .", ":y1 owl:sameAs :y2 .", ":x owl:sameAs :x ."),
    "prp-ifp": (":p a owl:InverseFunctionalProperty . :x1 :p :y . :x2 :p :y .", ":x1 owl:sameAs :x2 .", ""),
    "prp-symp": (":p a owl:SymmetricProperty . :x :p :y .", ":y :p :x .", ""),
    "prp-trp": (":p a owl:TransitiveProperty . :x :p :y . :y :p :z . :z :p :w .", ":x :p :w .", ":w :p :x ."),
    "prp-eqp1": (":p owl:equivalentProperty :q . :x :p :y .", ":x :q :y .", ""),
    "prp-eqp2": (":p owl:equivalentProperty :q . :x :q :y .", ":x :p :y .", ""),
    "prp-inv1": (":p owl:inverseOf :q . :x :p :y .", ":y :q :x .", ""),
    "prp-inv2": (":p owl:inverseOf :q . :x :q :y .", ":y :p :x .", ""),
    "cls-thing": ("", "owl:Thing a owl:Class .", ""),
    "cls-nothing1": ("", "owl:Nothing a owl:Class .", ""),
    "cls-int1": (
        ":C owl:intersectionOf (:A :B :D) . :x a :A, :B, :D . :y a :A, :B .",
        ":x a :C .",
        ":y a :C .",
    ),
    "cls-int2": (":C owl:intersectionOf (:A :B) . :x a :C .", ":x a :A, :B .", ""),
    "cls-uni": (":C owl:unionOf (:A :B) . :x a :B .", ":x a :C .", ":x a :A ."),
    "cls-svf1": (
        ":R owl:someValuesFrom :D ; owl:onProperty :p . :x :p :y . :y a :D . :z :p :w .",
        ":x a :R .",
        ":z a :R .",
    ),
    "cls-svf2": (":R owl:someValuesFrom owl:Thing ; owl:onProperty :p . :x :p :y .", ":x a :R .", ""),
    "cls-avf": (":R owl:allValuesFrom :D ; owl:onProperty :p . :x a :R ; :p :y .", ":y a :D .", ""),
    "cls-hv1": (":R owl:hasValue :v ; owl:onProperty :p . :x a :R .", ":x :p :v .", ""),
    "cls-hv2": (":R owl:hasValue :v ; owl:onProperty :p . :x :p :v .", ":x a :R .", ""),
    "cls-maxc2": (
        ':R owl:maxCardinality "1"^^xsd:nonNegativeInteger ; owl:onProperty :p . :x a :R ; :p :y1, :y2 .',
        ":y1 owl:sameAs :y2 .",
        "",
    ),
    "cls-maxqc3": (
        ':R owl:maxQualifiedCardinality "1"^^xsd:nonNegativeInteger ; owl:onProperty :p ; owl:onClass :D .'
        " :x a :R ; :p :y1, :y2, :y3 . :y1 a :D . :y2 a :D .",
        ":y1 owl:sameAs :y2 .",
        ":y1 owl:sameAs :y3 .",
    ),
    "cls-maxqc4": (
        ':R owl:maxQualifiedCardinality "1"^^xsd:nonNegativeInteger ; owl:onProperty :p ; owl:onClass owl:Thing .'
        " :x a :R ; :p :y1, :y2 .",
        ":y1 owl:sameAs :y2 .",
        "",
    ),
    "cls-oo": (":C owl:oneOf (:a :b) .", ":a a :C . :b a :C .", ""),
    "cax-eqc1": (":A owl:equivalentClass :B . :x a :A .", ":x a :B .", ""),
    "cax-eqc2": (":A owl:equivalentClass :B . :x a :B .", ":x a :A .", ""),
    "scm-cls": (
        ":A a owl:Class .",
        ":A rdfs:subClassOf :A, owl:Thing ; owl:equivalentClass :A . owl:Nothing rdfs:subClassOf :A .",
        "",
    ),
    "scm-op": (":p a owl:ObjectProperty .", ":p rdfs:subPropertyOf :p ; owl:equivalentProperty :p .", ""),
    "scm-dp": (":p a owl:DatatypeProperty .", ":p rdfs:subPropertyOf :p ; owl:equivalentProperty :p .", ""),
    "scm-eqc1": (":A owl:equivalentClass :B .", ":A rdfs:subClassOf :B . :B rdfs:subClassOf :A .", ""),
    "scm-eqc2": (":A rdfs:subClassOf :B . :B rdfs:subClassOf :A .", ":A owl:equivalentClass :B .", ""),
    "scm-eqp1": (":p owl:equivalentProperty :q .", ":p rdfs:subPropertyOf :q . :q rdfs:subPropertyOf :p .", ""),
    "scm-eqp2": (":p rdfs:subPropertyOf :q . :q rdfs:subPropertyOf :p .", ":p owl:equivalentProperty :q .", ""),
    "scm-dom1": (":p rdfs:domain :A . :A rdfs:subClassOf :B .", ":p rdfs:domain :B .", ""),
    "scm-dom2": (":q rdfs:domain :A . :p rdfs:subPropertyOf :q .", ":p rdfs:domain :A .", ""),
    "scm-rng1": (":p rdfs:range :A . :A rdfs:subClassOf :B .", ":p rdfs:range :B .", ""),
    "scm-rng2": (":q rdfs:range :A . :p rdfs:subPropertyOf :q .", ":p rdfs:range :A .", ""),
    "scm-hv": (
        ":R1 owl:hasValue :v ; owl:onProperty :p . :R2 owl:hasValue :v ; owl:onProperty :q . :p rdfs:subPropertyOf :q .",
        ":R1 rdfs:subClassOf :R2 .",
        ":R2 rdfs:subClassOf :R1 .",
    ),
    "scm-svf1": (
        ":R1 owl:someValuesFrom :A ; owl:onProperty :p . :R2 owl:someValuesFrom :B ; owl:onProperty :p . :A rdfs:subClassOf :B .",
        ":R1 rdfs:subClassOf :R2 .",
        ":R2 rdfs:subClassOf :R1 .",
    ),
    "scm-svf2": (
        ":R1 owl:someValuesFrom :A ; owl:onProperty :p . :R2 owl:someValuesFrom :A ; owl:onProperty :q . :p rdfs:subPropertyOf :q .",
        ":R1 rdfs:subClassOf :R2 .",
        ":R2 rdfs:subClassOf :R1 .",
    ),
    "scm-avf1": (
        ":R1 owl:allValuesFrom :A ; owl:onProperty :p . :R2 owl:allValuesFrom :B ; owl:onProperty :p . :A rdfs:subClassOf :B .",
        ":R1 rdfs:subClassOf :R2 .",
        ":R2 rdfs:subClassOf :R1 .",
    ),
    "scm-avf2": (
        ":R1 owl:allValuesFrom :A ; owl:onProperty :p . :R2 owl:allValuesFrom :A ; owl:onProperty :q . :p rdfs:subPropertyOf :q .",
        ":R2 rdfs:subClassOf :R1 .",
        ":R1 rdfs:subClassOf :R2 .",
    ),
    "scm-int": (":C owl:intersectionOf (:A :B) .", ":C rdfs:subClassOf :A, :B .", ""),
    "scm-uni": (":C owl:unionOf (:A :B) .", ":A rdfs:subClassOf :C . :B rdfs:subClassOf :C .", ""),
}


def _ttl(text: str) -> set:
    from pyoxigraph import RdfFormat, parse

    return {q.triple for q in parse((_PREFIXES + text).encode(), format=RdfFormat.TURTLE)}


@pytest.fixture(scope="module")
def rdfs_owl2rl():
    return load_shipped("rdfs.srl", "owl2rl.srl")


def test_every_owl2rl_rule_has_a_case() -> None:
    """Each spec rule of owl2rl.srl (helpers excluded) has a case below, and vice versa."""
    ids = {r.id.value[len(RULE_NS) :] for r in load_shipped("owl2rl.srl").rules}  # type: ignore[union-attr]
    spec_ids = {i for i in ids if not i.startswith("owl2rl-")} | {"cls-thing", "cls-nothing1"}
    assert spec_ids == set(OWL2RL_CASES)


@pytest.mark.parametrize("rule", sorted(OWL2RL_CASES))
def test_owl2rl_rule(rule: str, rdfs_owl2rl) -> None:
    from tests.reasoning.conftest import closure

    premise, expected, unexpected = OWL2RL_CASES[rule]
    graph = closure(rdfs_owl2rl, _ttl(premise))
    assert _ttl(expected) <= graph
    assert not (_ttl(unexpected) & graph)
