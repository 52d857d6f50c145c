"""``rkf:satisfiesFacet`` (``reckon.datalog._datatypes.satisfies_facet``): the constraining
facets of XML Schema 1.1 Part 2 §4.3 used by OWL 2 datatype restrictions (OWL 2
Structural Specification §7.5), decided on data values, and undecided (``None``, an
evaluation error in a FILTER) where the spec gives no answer."""

from __future__ import annotations

import pytest
from pyoxigraph import Literal, NamedNode

from reckon.datalog._datatypes import satisfies_facet

XSD = "http://www.w3.org/2001/XMLSchema#"


def lit(v: str, dt: str = "string") -> Literal:
    return Literal(v, datatype=NamedNode(XSD + dt))


CASES = [
    # value, facet, bound, expected
    (lit("18", "integer"), "minInclusive", lit("18", "integer"), True),
    (lit("17", "integer"), "minInclusive", lit("18", "integer"), False),
    (lit("018", "int"), "minExclusive", lit("17.5", "decimal"), True),  # integers and decimals share owl:real
    (lit("65.0", "decimal"), "maxInclusive", lit("65", "integer"), True),
    (lit("65.000001", "decimal"), "maxInclusive", lit("65", "integer"), False),
    (lit("150", "integer"), "maxExclusive", lit("150", "integer"), False),
    (lit("1.5", "double"), "maxExclusive", lit("2", "double"), True),
    (lit("NaN", "double"), "maxExclusive", lit("2", "double"), None),
    (lit("1.5", "float"), "maxExclusive", lit("2", "integer"), None),  # float and real spaces are disjoint
    (lit("2026-03-01T10:00:00Z", "dateTime"), "minInclusive", lit("2026-03-01T11:00:00+02:00", "dateTime"), True),
    (lit("2026-03-01T10:00:00", "dateTime"), "minInclusive", lit("2026-03-01T11:00:00Z", "dateTime"), None),
    (lit("ABCD"), "maxLength", lit("3", "nonNegativeInteger"), False),
    (lit("ABC"), "length", lit("3", "nonNegativeInteger"), True),
    (Literal("chat", language="fr"), "minLength", lit("4", "integer"), True),
    (lit("0FB8", "hexBinary"), "length", lit("2", "integer"), True),  # octets
    (lit("AB"), "pattern", lit("[A-Z]+"), True),
    (lit("AB1"), "pattern", lit("[A-Z]+"), False),  # the whole lexical form
    (lit("x"), "pattern", lit("[unclosed"), None),
    (lit("abc", "integer"), "minInclusive", lit("1", "integer"), None),  # ill-typed: no value
    (lit("5", "integer"), "totalDigits", lit("1", "integer"), None),  # a facet not evaluated
]


@pytest.mark.parametrize(("value", "facet", "bound", "expected"), CASES)
def test_satisfies_facet(value: Literal, facet: str, bound: Literal, expected: bool | None) -> None:
    assert satisfies_facet(value, XSD + facet, bound) is expected
