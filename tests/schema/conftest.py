"""Fixtures for the schema tests: a valid BudgetConstraintMemory (the one in
ontology/core.ttl's documentation and /work/notes/memory-layout.md) built from a
dict of Turtle predicate-object pairs, so each test changes exactly one field."""

from __future__ import annotations

import pytest
import rdflib

from reckon.schema import load_schema

PREFIXES = """
@prefix rk:   <https://reckon.dev/ns/core#> .
@prefix mk:   <https://reckon.dev/ns/marketing#> .
@prefix rc:   <https://reckon.dev/ns/recruiting#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd:  <http://www.w3.org/2001/XMLSchema#> .
"""

MEMORY = "urn:reckon:acme:memory:3f2c9a0e6b8d4c51a7e1d2f0b9c8a765"

BUDGET = {
    "a": "mk:BudgetConstraintMemory",
    "rdfs:label": '"Meta monthly spend cap"',
    "rk:content": '"Don\'t let Meta spend go over $40k this month."',
    "rk:kind": "rk:Objective",
    "rk:scope": "rk:CompanyScope",
    "rk:importance": "5",
    "rk:source": "rk:AgentTool",
    "rk:confidence": '"1.0"^^xsd:decimal',
    "rk:createdAt": '"2026-03-02T09:15:00Z"^^xsd:dateTime',
    "rk:updatedAt": '"2026-03-02T09:15:00Z"^^xsd:dateTime',
    "rk:author": "<urn:reckon:acme:person:dana>",
    "rk:owner": "<urn:reckon:acme:person:dana>",
    "mk:platform": "mk:meta",
    "mk:amount": '"40000"^^xsd:decimal',
    "mk:currency": '"USD"',
    "mk:period": "mk:Monthly",
}

NEIGHBOURS = """
<urn:reckon:acme:person:dana> a rk:Person ; rdfs:label "Dana" .
<urn:reckon:acme:team:growth> a rk:Team .
"""


def memory_graph(
    fields: dict[str, str | list[str] | None], *, node: str = MEMORY, extra: str = "", prefixes: str = ""
) -> rdflib.Graph:
    """Turtle for one node from predicate -> object(s); a value of None drops the predicate."""
    parts = []
    for p, o in fields.items():
        if o is None:
            continue
        for v in o if isinstance(o, list) else [o]:
            parts.append(f"    {p} {v}")
    ttl = PREFIXES + prefixes + f"<{node}>\n" + " ;\n".join(parts) + " .\n" + NEIGHBOURS + extra
    g = rdflib.Graph()
    g.parse(data=ttl, format="turtle")
    return g


def budget(**changes: str | list[str] | None) -> rdflib.Graph:
    """The valid budget memory with ``changes`` applied (keys use ``__`` for ``:``)."""
    fields = dict(BUDGET)
    for k, v in changes.items():
        fields[k.replace("__", ":")] = v
    return memory_graph(fields)


@pytest.fixture(scope="session")
def schema():
    return load_schema()
