"""``sh:pattern`` is an XPath regular expression (SHACL §4.8.1; XPath F&O 3.1 §5.6.1):
``$`` is the end of the string and ``.`` matches neither ``\\n`` nor ``\\r``, unlike
Python's ``re``. Both validators -- the fast path and pySHACL -- agree with an oracle
written from the XPath rules, over strings with trailing newlines and carriage returns."""

from __future__ import annotations

import pycountry
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyoxigraph import Literal, NamedNode, Triple

from reckon.schema import schema_from_graph, validate
from reckon.schema._fastshacl import FastShapes
from tests.memory.conftest import schema_quads
from tests.schema.test_fastshacl import MK, M, budget

SH = "http://www.w3.org/ns/shacl#"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@pytest.fixture(scope="module")
def shipped():
    triples = [Triple(q.subject, q.predicate, q.object) for q in schema_quads()]
    return FastShapes(triples), schema_from_graph(triples)


def _verdicts(shapes, triples):
    fast, schema = shapes
    slow = not [v for v in validate(triples, [M], schema=schema) if v["severity"] == "Violation"]
    return fast.conforms(M, triples), slow


def three_upper(s: str) -> bool:
    """The oracle of ``^[A-Z]{3}$`` under XPath rules: exactly three upper-case letters."""
    return len(s) == 3 and all(c in UPPER for c in s)


ISO = frozenset(c.alpha_3 for c in pycountry.currencies)
codes = st.text(alphabet=UPPER, min_size=2, max_size=4) | st.sampled_from(sorted(ISO))
tails = st.sampled_from(["", "\n", "\r\n", "\r", "\n\n", " ", "\t"])


@settings(max_examples=60, deadline=None)
@given(code=codes, tail=tails, head=st.sampled_from(["", "\n"]))
def test_shipped_currency_pattern_matches_by_xpath_rules(shipped, code: str, tail: str, head: str) -> None:
    value = head + code + tail
    fast, slow = _verdicts(shipped, budget(currency=Literal(value)))
    assert fast is not None
    # the shipped shape: the pattern and the ISO 4217 list (tests/schema/test_iso4217.py)
    assert fast == slow == (three_upper(value) and value in ISO), repr(value)


def _dot_shapes(flags: str | None):
    """The shipped shapes with the currency pattern replaced by ``^a.b$`` (and ``flags``)."""
    triples = [Triple(q.subject, q.predicate, q.object) for q in schema_quads()]
    pattern, path, flag = NamedNode(SH + "pattern"), NamedNode(SH + "path"), NamedNode(SH + "flags")
    nodes = {t.subject for t in triples if t.predicate == path and t.object == NamedNode(MK + "currency")}
    listed = NamedNode(SH + "in")  # the ISO 4217 list: this test is about the pattern alone
    triples = [t for t in triples if not (t.subject in nodes and t.predicate in (pattern, flag, listed))]
    for n in nodes:
        triples.append(Triple(n, pattern, Literal("^a.b$")))
        if flags is not None:
            triples.append(Triple(n, flag, Literal(flags)))
    return FastShapes(triples), schema_from_graph(triples)


@pytest.mark.parametrize("flags", [None, "s", "m", "i"])
@pytest.mark.parametrize("middle", ["x", "\n", "\r", "B"])
@pytest.mark.parametrize("tail", ["", "\n"])
def test_dot_and_dollar_follow_the_flags(flags: str | None, middle: str, tail: str) -> None:
    shapes = _dot_shapes(flags)
    value = "a" + middle + "b" + tail
    data = budget(currency=Literal(value))
    fl = flags or ""
    dot_ok = middle not in "\n\r" or "s" in fl
    end_ok = tail == "" or "m" in fl  # with m, `$` is the end of a line
    fast, slow = _verdicts(shapes, data)
    assert fast == slow == (dot_ok and end_ok), (flags, repr(value))


def test_the_budget_fixture_conforms_with_a_plain_code(shipped) -> None:
    assert _verdicts(shipped, budget(currency=Literal("EUR"))) == (True, True)
    assert MK  # the marketing namespace the fixture uses
