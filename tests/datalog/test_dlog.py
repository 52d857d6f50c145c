"""RDFox Datalog subset (reckon.datalog.dlog): same rule model as SRL."""

from __future__ import annotations

import pytest
from pyoxigraph import BlankNode, Literal, NamedNode, Triple, Variable

from reckon._errors import RuleSetInvalid, RuleSyntaxError
from reckon.datalog.dlog import parse_dlog
from reckon.datalog.model import Assignment, Negation, TriplePattern
from reckon.datalog.srl import parse_srl

E = "http://example/"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


def n(local: str) -> NamedNode:
    return NamedNode(E + local)


PAIRS = [
    (
        "subclass",
        "[?x, rdf:type, :B] :- [?x, rdf:type, :A] .",
        "RULE { ?x rdf:type :B } WHERE { ?x rdf:type :A }",
    ),
    (
        "class-and-property-atoms",
        ":Active[?m] :- :Memory[?m], :owner[?m, ?o], NOT :supersededBy[?m, ?n] .",
        "RULE { ?m a :Active } WHERE { ?m a :Memory . ?m :owner ?o . NOT { ?m :supersededBy ?n } }",
    ),
    (
        "filter-bind-multi-head",
        "[?x, :q, ?z], :B[?x] :- :A[?x], [?x, :p, ?y], FILTER(?y > -3 && ?y IN (1, 2)), BIND(?y + 1 AS ?z) .",
        "RULE { ?x :q ?z . ?x a :B } WHERE { ?x a :A . ?x :p ?y FILTER(?y > -3 && ?y IN (1, 2)) SET(?z := ?y + 1) }",
    ),
    (
        "negation-conjunction",
        ":Ok[?x] :- :Item[?x], NOT EXISTS ?w IN (:D[?w], [?x, :s, ?w]), NOT ([?x, :t, 1], [?x, :u, 'a']) .",
        "RULE { ?x a :Ok } WHERE { ?x a :Item NOT { ?w a :D . ?x :s ?w } NOT { ?x :t 1 . ?x :u 'a' } }",
    ),
]
PROLOGUE_DLOG = "@prefix : <http://example/> .\nPREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"
PROLOGUE_SRL = "PREFIX : <http://example/>\nPREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"


@pytest.mark.parametrize(("name", "dlog", "srl"), PAIRS, ids=[p[0] for p in PAIRS])
def test_same_program_in_both_syntaxes_gives_equal_rules(name: str, dlog: str, srl: str) -> None:
    a = parse_dlog(PROLOGUE_DLOG + dlog, file="a.dlog")
    b = parse_srl(PROLOGUE_SRL + srl, file="b.srl")
    assert a.rules == b.rules  # equality ignores loc and text
    assert a.rules[0].loc.file == "a.dlog" and a.rules[0].loc.line == 3
    assert a.rules[0].text == dlog


def test_facts_are_data() -> None:
    rs = parse_dlog(PROLOGUE_DLOG + "[:a, :p, :b] .\n:C[:a] .\n:q[:a, 1] .\n[:a, :r, _:x] . [_:x, :r, :a] .")
    assert rs.rules == ()
    assert rs.data[:3] == (
        Triple(n("a"), n("p"), n("b")),
        Triple(n("a"), RDF_TYPE, n("C")),
        Triple(n("a"), n("q"), Literal("1", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#integer"))),
    )
    b1, b2 = rs.data[3].object, rs.data[4].subject
    assert isinstance(b1, BlankNode) and b1 == b2  # one label, one node per file


def test_body_element_kinds() -> None:
    r = parse_dlog(PROLOGUE_DLOG + ":B[?x] :- :A[?x], NOT [?x, :p, ?y], BIND(STR(?x) AS ?s) .", check=False).rules[0]
    assert isinstance(r.body[0], TriplePattern)
    assert isinstance(r.body[1], Negation) and r.body[1].elements[0].p == n("p")
    assert isinstance(r.body[2], Assignment) and r.body[2].var == Variable("s")


def test_errors_are_collected_and_located() -> None:
    text = PROLOGUE_DLOG + "[?x, :p] :- :A[?x] .\n:B[?x] :- :A[?x], .\n[?x, :p, ?y] .\n:C[?x] :- :A[?x] .\n"
    with pytest.raises(RuleSyntaxError) as ei:
        parse_dlog(text, file="e.dlog")
    got = [(d.line, d.code) for d in ei.value.diagnostics]
    assert got == [(3, "SRL001"), (4, "SRL001"), (5, "SRL010")]
    assert ei.value.diagnostics[0].message == "expected ',', found ']'"


def test_unknown_prefix_and_unsafe_variable() -> None:
    with pytest.raises(RuleSetInvalid) as ei:
        parse_dlog(":B[?x] :- :A[?x] .")
    assert {d.code for d in ei.value.diagnostics} == {"SRL002"}
    with pytest.raises(RuleSetInvalid) as ei:
        parse_dlog(PROLOGUE_DLOG + "[?x, :p, ?y] :- :A[?x] .")
    assert ei.value.diagnostics[0].code == "SRL003"
