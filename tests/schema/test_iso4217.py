"""mk:currency takes the real ISO 4217 codes (``sh:in mk:ISO4217Codes``, shapes/marketing.ttl),
not any three upper-case letters; the list in the shapes is pycountry's (the maintained
ISO 4217 list), and both validators refuse a three-letter non-code."""

from __future__ import annotations

import string

import pycountry
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyoxigraph import Literal, NamedNode, Triple

from reckon.schema import schema_from_graph
from tests.memory.conftest import schema_quads
from tests.schema.test_fastshacl import MK, budget
from tests.schema.test_pattern_xpath import _verdicts

ISO = sorted(c.alpha_3 for c in pycountry.currencies)
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"


@pytest.fixture(scope="module")
def shipped():
    from reckon.schema._fastshacl import FastShapes

    triples = [Triple(q.subject, q.predicate, q.object) for q in schema_quads()]
    return FastShapes(triples), schema_from_graph(triples)


def _shipped_list() -> list[str]:
    triples = {(t.subject, t.predicate): t.object for t in (Triple(q.subject, q.predicate, q.object)
                                                            for q in schema_quads())}
    out, node = [], NamedNode(MK + "ISO4217Codes")
    while node != NamedNode(RDF + "nil"):
        out.append(triples[(node, NamedNode(RDF + "first"))].value)
        node = triples[(node, NamedNode(RDF + "rest"))]
    return out


def test_the_shapes_hold_pycountrys_iso4217_list() -> None:
    shipped = _shipped_list()
    paste = " ".join(f'"{c}"' for c in ISO)
    assert shipped == ISO, f"regenerate mk:ISO4217Codes in shapes/marketing.ttl from pycountry: {paste}"


@settings(max_examples=40, deadline=None)
@given(code=st.text(alphabet=string.ascii_uppercase, min_size=3, max_size=3) | st.sampled_from(ISO))
def test_a_currency_conforms_exactly_when_it_is_an_iso4217_code(shipped, code: str) -> None:
    fast, slow = _verdicts(shipped, budget(currency=Literal(code)))
    assert fast == slow == (code in ISO), code
