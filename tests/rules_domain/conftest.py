"""Fixtures for the domain-rule tests: the shipped module rules (core, marketing,
recruiting) run by reckon.datalog's Reasoner over the shipped ontology + shapes plus
Turtle written in each test (the layout of /work/notes/memory-layout.md)."""

from __future__ import annotations

from decimal import Decimal

import pyoxigraph as ox
import pytest

from reckon.datalog.evaluate import Reasoner
from reckon.datalog.loader import load_rules
from reckon.schema import load_schema

RK = "https://reckon.dev/ns/core#"
MK = "https://reckon.dev/ns/marketing#"
RC = "https://reckon.dev/ns/recruiting#"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")

PREFIXES = """
@prefix rk:   <https://reckon.dev/ns/core#> .
@prefix mk:   <https://reckon.dev/ns/marketing#> .
@prefix rc:   <https://reckon.dev/ns/recruiting#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd:  <http://www.w3.org/2001/XMLSchema#> .
@prefix m:    <urn:reckon:acme:memory:> .
@prefix acme: <urn:reckon:acme:> .
"""

COMPANY = """
acme:company a rk:Company ; rdfs:label "Acme Inc." .
acme:person-dana a rk:Person ; rdfs:label "Dana" .
rk:clock rk:now "2026-03-23T06:00:00Z"^^xsd:dateTime .
"""


def memory(node: str, cls: str, *, scope: str = "rk:CompanyScope", importance: int = 5,
           confidence: str = "1.0", created: str = "2026-03-02T09:15:00Z", extra: str = "") -> str:
    """Turtle for one memory with every base property (memory-layout.md)."""
    return f"""
{node} a {cls} ;
    rdfs:label "{node}" ; rk:kind rk:Objective ; rk:scope {scope} ;
    rk:importance {importance} ; rk:source rk:AgentTool ;
    rk:confidence "{confidence}"^^xsd:decimal ;
    rk:createdAt "{created}"^^xsd:dateTime ;
    rk:author acme:person-dana ; rk:owner acme:person-dana {';' if extra else ''} {extra} .
"""


def ttl(text: str) -> list[ox.Triple]:
    """Triples of a Turtle snippet (with the common prefixes)."""
    return [q.triple for q in ox.parse(PREFIXES + text, format=ox.RdfFormat.TURTLE)]


def N(curie: str) -> ox.NamedNode:
    """A NamedNode from ``rk:`` / ``mk:`` / ``rc:`` / ``m:`` CURIEs or a full IRI."""
    for prefix, ns in (("rk:", RK), ("mk:", MK), ("rc:", RC), ("m:", "urn:reckon:acme:memory:")):
        if curie.startswith(prefix):
            return ox.NamedNode(ns + curie[len(prefix):])
    return ox.NamedNode(curie)


def T(s: str, p: str, o: str | ox.Literal) -> ox.Triple:
    """A triple from CURIEs (``"a"`` is rdf:type); a Literal object is used as is."""
    pred = RDF_TYPE if p == "a" else N(p)
    return ox.Triple(N(s), pred, o if isinstance(o, ox.Literal) else N(o))


def dec(v: str) -> ox.Literal:
    return ox.Literal(v, datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#decimal"))


def dt(v: str) -> ox.Literal:
    return ox.Literal(v, datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#dateTime"))


def objects(triples: set[ox.Triple], s: str, p: str) -> set:
    """Objects of (s, p, ?) among ``triples``."""
    sn, pn = N(s), (RDF_TYPE if p == "a" else N(p))
    return {t.object for t in triples if t.subject == sn and t.predicate == pn}


def decimals(triples: set[ox.Triple], s: str, p: str) -> set[Decimal]:
    return {Decimal(o.value) for o in objects(triples, s, p)}


@pytest.fixture(scope="session")
def schema_triples() -> list[ox.Triple]:
    return load_schema().triples()


@pytest.fixture(scope="session")
def ruleset():
    return load_rules(*load_schema().rule_files)


@pytest.fixture
def reason(ruleset, schema_triples):
    """reason(turtle) -> Reasoner loaded with schema + company + turtle."""

    def make(text: str, *, company: bool = True) -> Reasoner:
        r = Reasoner(ruleset)
        r.load(schema_triples + ttl((COMPANY if company else "") + text))
        return r

    return make


def assert_same_as_scratch(r: Reasoner, ruleset) -> None:
    """Incremental maintenance left the same inference graph as a fresh evaluation."""
    fresh = Reasoner(ruleset)
    fresh.load(r.base())
    assert r.inferred() == fresh.inferred()
