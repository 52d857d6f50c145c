"""rules/types.srl: permanent and transient memories by type (seed 004 "Memory Type
Details", seed 001 working memory). Golden cases: premise -> derived membership."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from .conftest import N, assert_same_as_scratch, memory

TY = "https://reckon.dev/ns/types#"
P = "@prefix ty: <https://reckon.dev/ns/types#> .\n"
A = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


def is_a(node: str, cls: str) -> ox.Triple:
    return ox.Triple(N(node), A, ox.NamedNode(TY + cls))


CASES = [
    ("permanent-core", memory("m:c", "ty:CoreMemory"), {is_a("m:c", "PermanentMemory")}, {is_a("m:c", "TransientMemory")}),
    ("permanent-vault", memory("m:v", "ty:VaultMemory"), {is_a("m:v", "PermanentMemory")}, set()),
    ("transient-working", memory("m:w", "ty:WorkingMemory", extra='rk:expiresAt "2026-03-24T00:00:00Z"^^xsd:dateTime'),
     {is_a("m:w", "TransientMemory"), ox.Triple(N("m:w"), A, N("rk:ActiveMemory"))}, {is_a("m:w", "PermanentMemory")}),
    ("transient-resource", memory("m:r", "ty:ResourceMemory"), {is_a("m:r", "TransientMemory")}, set()),
    ("neither/semantic", memory("m:s", "ty:SemanticMemory"), set(),
     {is_a("m:s", "TransientMemory"), is_a("m:s", "PermanentMemory")}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_golden(reason, ruleset, case):
    _, premise, derived, absent = case
    r = reason(P + premise)
    inf = r.inferred()
    assert derived <= inf and not (absent & inf)
    assert_same_as_scratch(r, ruleset)


def test_a_subclass_of_a_type_inherits_its_persistence(tmp_path, schema_triples):
    """If an author's class is a subclass of ty:WorkingMemory, then its instances are
    transient too (memory-class-membership + transient-working), with no rule change."""
    from reckon.datalog.evaluate import Reasoner
    from reckon.datalog.loader import load_rules
    from reckon.schema import load_schema

    from .conftest import COMPANY, ttl

    (tmp_path / "scratch.ttl").write_text(
        "@prefix ex: <https://example.org/x#> . @prefix ty: <https://reckon.dev/ns/types#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\nex:Scratchpad rdfs:subClassOf ty:WorkingMemory .\n")
    schema = load_schema(tmp_path / "scratch.ttl")
    r = Reasoner(load_rules(*schema.rule_files))
    r.load(schema.triples() + ttl(COMPANY + memory("m:x", "<https://example.org/x#Scratchpad>")))
    assert is_a("m:x", "TransientMemory") in r.inferred()
