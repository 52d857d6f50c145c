"""SRL parser (reckon.datalog.srl): grammar coverage, normalisations and diagnostics.

Grammar: ``../shared/conformance/srl-spec/sparql12-rl/sparql-rl-grammar.bnf``; the
W3C manifest cases run in ``tests/conformance/test_srl_syntax.py``. These tests pin
what the manifests do not: the exact rule model produced, and the error reports.
"""

from __future__ import annotations

import pytest
from pyoxigraph import BaseDirection, BlankNode, Literal, NamedNode, Triple, Variable

from reckon._errors import RuleSetInvalid, RuleSyntaxError
from reckon.datalog.model import (
    Aggregate,
    Assignment,
    Call,
    Filter,
    Negation,
    TriplePattern,
    TripleTermPattern,
)
from reckon.datalog.srl import parse_srl

E = "http://example/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
XSD = "http://www.w3.org/2001/XMLSchema#"
P = "PREFIX : <http://example/>\n"


def n(local: str) -> NamedNode:
    return NamedNode(E + local)


def v(name: str) -> Variable:
    return Variable(name)


def rdf(local: str) -> NamedNode:
    return NamedNode(RDF + local)


def lit(value: str, dt: str) -> Literal:
    return Literal(value, datatype=NamedNode(XSD + dt))


def body(text: str) -> tuple:
    return parse_srl(P + f"RULE {{ }} WHERE {{ {text} }}", check=False).rules[0].body


def head(text: str) -> tuple:
    return parse_srl(P + f"RULE {{ {text} }} WHERE {{ ?a ?b ?c }}", check=False).rules[0].head


def triples(elements: tuple) -> list[tuple]:
    return [(e.s, e.p, e.o) for e in elements if isinstance(e, TriplePattern)]


# --- structure ----------------------------------------------------------------------


def test_rule_parts_loc_and_text() -> None:
    text = P + "\n# a comment\nRULE :r1 { ?x a :B } WHERE { ?x a :A }\nRULE { ?x :q 1 } WHERE DATA { ?x :p ?y }\n"
    rs = parse_srl(text, file="f.srl")
    r1, r2 = rs.rules
    assert r1.id == n("r1")
    assert triples(r1.head) == [(v("x"), rdf("type"), n("B"))]
    assert triples(r1.body) == [(v("x"), rdf("type"), n("A"))]
    assert (r1.loc.file, r1.loc.line, r1.loc.column) == ("f.srl", 4, 1)
    assert r1.text == "RULE :r1 { ?x a :B } WHERE { ?x a :A }"
    assert r1.data is False and r2.data is True
    assert r2.id is None and r2.name == "f.srl:5"
    assert rs.prefixes == {"": E}


def test_interleaved_prologue_base_version_imports() -> None:
    text = (
        'VERSION "1.2"\nBASE <http://example/base/>\nPREFIX : <ns#>\n'
        "RULE { ?x :p <rel> } WHERE { ?x :q ?y }\n"
        "PREFIX : <http://other/>\nIMPORTS <lib.srl>\n"
        "RULE { ?x :p ?y } WHERE { ?x :q ?y }\n"
    )
    rs = parse_srl(text)
    assert rs.rules[0].head[0].p == NamedNode("http://example/base/ns#p")
    assert rs.rules[0].head[0].o == NamedNode("http://example/base/rel")
    assert rs.rules[1].head[0].p == NamedNode("http://other/p")
    assert rs.imports == (NamedNode("http://example/base/lib.srl"),)
    assert rs.base == "http://example/base/"


def test_data_blocks_and_blank_nodes() -> None:
    rs = parse_srl(P + "DATA { :s :p :o , :o2 ; :q _:b . _:b :r [ :t 1 ] }\nDATA { :s :p :o }")
    ts = rs.data
    assert Triple(n("s"), n("p"), n("o")) in ts and Triple(n("s"), n("p"), n("o2")) in ts
    assert len(ts) == 5  # the repeated :s :p :o counted once
    b = next(t.object for t in ts if t.predicate == n("q"))
    assert isinstance(b, BlankNode)
    assert any(t.subject == b and t.predicate == n("r") for t in ts)


def test_empty_and_structural_forms() -> None:
    assert parse_srl("").rules == ()
    rs = parse_srl("DATA {}\nRULE {} WHERE {}")
    assert len(rs.rules) == 1 and rs.rules[0].head == () and rs.rules[0].body == ()


# --- terms ---------------------------------------------------------------------------


def test_literal_forms() -> None:
    text = (
        "?s :p 'a\\tb', \"c\\u00e9\\\"\", '''x\ny''', \"\"\"q\"r\"\"\", \"l\"@en-GB, \"d\"@ar--rtl, "
        '"7"^^:dt, 1, -2, +3.5, .5, 1e3, -1.5E-2, true, FALSE'
    )
    objs = [o for _, _, o in triples(body(text))]
    assert objs == [
        Literal("a\tb"),
        Literal('cé"'),
        Literal("x\ny"),
        Literal('q"r'),
        Literal("l", language="en-gb"),
        Literal("d", language="ar", direction=BaseDirection.RTL),
        Literal("7", datatype=n("dt")),
        lit("1", "integer"),
        lit("-2", "integer"),
        lit("+3.5", "decimal"),
        lit(".5", "decimal"),
        lit("1e3", "double"),
        lit("-1.5E-2", "double"),
        lit("true", "boolean"),
        lit("false", "boolean"),
    ]


def test_triple_terms_ground_and_with_variables() -> None:
    (t1, t2) = triples(body("?s :p <<( :a :b :c )>> . ?s :q <<( ?x :b <<( :a :b 1 )>> )>>"))
    assert t1[2] == Triple(n("a"), n("b"), n("c"))
    assert t2[2] == TripleTermPattern(v("x"), n("b"), Triple(n("a"), n("b"), lit("1", "integer")))


def test_body_blank_nodes_become_variables() -> None:
    ts = triples(body("_:b :p [] . [ :q ?o ] :r _:b . _:a-b.c :s ?o"))
    assert ts == [
        (v("__bn_b"), n("p"), v("__anon_1")),
        (v("__anon_2"), n("q"), v("o")),
        (v("__anon_2"), n("r"), v("__bn_b")),
        (ts[3][0], n("s"), v("o")),
    ]
    assert ts[3][0].value.startswith("__bn_a")  # '-' and '.' are not variable characters


def test_head_blank_nodes_and_collections() -> None:
    hs = head("_:b :p ( 1 ?c ) . _:b :q [ :r ?a ]")
    (p_triple,) = [t for t in hs if t.p == n("p")]
    (q_triple,) = [t for t in hs if t.p == n("q")]
    b = p_triple.s
    assert isinstance(b, BlankNode) and q_triple.s == b  # same label, same node in one rule
    cells = [(t.s, t.p, t.o) for t in hs if t.p in (rdf("first"), rdf("rest"))]
    c1, c2 = p_triple.o, cells[2][0]
    assert cells == [
        (c1, rdf("first"), lit("1", "integer")),
        (c1, rdf("rest"), c2),
        (c2, rdf("first"), v("c")),
        (c2, rdf("rest"), rdf("nil")),
    ]
    assert isinstance(c1, BlankNode) and isinstance(c2, BlankNode) and c1 != c2
    assert head("() :q :x")[0].s == rdf("nil")
    other = parse_srl(P + "RULE { _:b :p 1 } WHERE { ?a ?b ?c }").rules[0].head[0].s
    assert other != b  # labels are scoped per rule


def test_blank_nodes_are_named_by_the_document_so_a_parse_is_reproducible() -> None:
    text = P + "DATA { _:d :p [ :q 1 ] . _:d :r _:e }\nRULE { _:b :p ?c . [] :q ?c } WHERE { ?c :p ?x }\n"
    one, again = parse_srl(text, file="a.srl"), parse_srl(text, file="a.srl")
    assert one == again  # the same document: the same rule set, blank nodes included
    bnodes = {t for tr in one.data for t in (tr.subject, tr.object) if isinstance(t, BlankNode)}
    bnodes |= {t for tp in one.rules[0].head for t in (tp.s, tp.o) if isinstance(t, BlankNode)}
    assert len(bnodes) == 5  # _:d, [ ... ], _:e in DATA; _:b, [] in the head: all distinct
    for other in (parse_srl(text, file="b.srl"), parse_srl(text, file="a.srl", base="http://example/base/"),
                  parse_srl(text + "# edited\n", file="a.srl")):
        theirs = {t for tr in other.data for t in (tr.subject, tr.object) if isinstance(t, BlankNode)}
        assert theirs and not theirs & bnodes  # another document never shares one


# --- paths, reification ----------------------------------------------------------------


def test_property_paths_expand_with_fresh_variables() -> None:
    ts = triples(body("?x :p1/^:p2/(:p3/a) ?o"))
    assert ts == [
        (v("x"), n("p1"), v("__path_1")),
        (v("__path_2"), n("p2"), v("__path_1")),
        (v("__path_2"), n("p3"), v("__path_3")),
        (v("__path_3"), rdf("type"), v("o")),
    ]
    assert triples(body("?x ^:p ?o")) == [(v("o"), n("p"), v("x"))]
    assert triples(body("?x ^(:a/:b) ?o")) == [(v("o"), n("a"), v("__path_1")), (v("__path_1"), n("b"), v("x"))]


def test_path_in_head_is_a_syntax_error() -> None:
    with pytest.raises(RuleSyntaxError) as ei:
        parse_srl(P + "RULE { :s :p1/:p2 :o } WHERE { ?a ?b ?c }")
    assert "found '/'" in ei.value.diagnostics[0].message


def test_annotation_asserts_triple_and_reifies() -> None:
    ts = triples(body(":s :p ?o ~:r {| :q :z |} {| :w 1 |}"))
    tt = TripleTermPattern(n("s"), n("p"), v("o"))
    assert ts == [
        (n("s"), n("p"), v("o")),
        (n("r"), rdf("reifies"), tt),
        (n("r"), n("q"), n("z")),
        (v("__anon_1"), rdf("reifies"), tt),
        (v("__anon_1"), n("w"), lit("1", "integer")),
    ]


def test_reified_triple_term_is_not_asserted() -> None:
    ts = triples(body("<< :a :b ?c >> :q :z . ?s :p << :a :b :c ~?r >>"))
    assert ts == [
        (v("__anon_1"), rdf("reifies"), TripleTermPattern(n("a"), n("b"), v("c"))),
        (v("__anon_1"), n("q"), n("z")),
        (v("r"), rdf("reifies"), Triple(n("a"), n("b"), n("c"))),
        (v("s"), n("p"), v("r")),
    ]


def test_head_reifier_is_a_blank_node_template() -> None:
    hs = head(":s :p ?a {| :q ?b |}")
    assert (hs[0].s, hs[0].p, hs[0].o) == (n("s"), n("p"), v("a"))
    assert isinstance(hs[1].s, BlankNode) and hs[1].p == rdf("reifies") and hs[2].s == hs[1].s
    assert parse_srl(P + "RULE { ?a :p ?b ~ {| :q 1 |} } WHERE { ?a :p ?b }").rules[0].run_once


# --- rule elements and expressions ----------------------------------------------------


def test_body_elements_in_order() -> None:
    els = body(
        "?x :p ?y FILTER(?y > 1) NOT { ?x :q ?z FILTER(?z != ?y) } . "
        "NOT DATA { ?x :r 1 } SET(?w := ?y * 2) ?x :s ?w FILTER isIRI(?x) FILTER :fn(?x)"
    )
    kinds = [type(e).__name__ for e in els]
    assert kinds == ["TriplePattern", "Filter", "Negation", "Negation", "Assignment", "TriplePattern", "Filter", "Filter"]
    assert els[1].expr == Call(">", (v("y"), lit("1", "integer")))
    assert isinstance(els[2], Negation) and not els[2].data and isinstance(els[2].elements[1], Filter)
    assert els[3].data is True
    assert els[4] == Assignment(v("w"), Call("*", (v("y"), lit("2", "integer"))))
    assert els[6].expr == Call("ISIRI", (v("x"),))
    assert els[7].expr == Call(n("fn"), (v("x"),))


def expr(text: str) -> object:
    f = body(f"?x :p ?y FILTER({text})")[1]
    assert isinstance(f, Filter)
    return f.expr


def test_expression_precedence_and_operators() -> None:
    one, two, three = (lit(str(i), "integer") for i in (1, 2, 3))
    assert expr("1 + 2 * 3") == Call("+", (one, Call("*", (two, three))))
    assert expr("?x || ?y && !?x") == Call("||", (v("x"), Call("&&", (v("y"), Call("!", (v("x"),))))))
    assert expr("?y -1") == Call("-", (v("y"), one))
    assert expr("- ?y < -1") == Call("<", (Call("UMINUS", (v("y"),)), lit("-1", "integer")))
    assert expr("?y IN (1, 2)") == Call("IN", (v("y"), one, two))
    assert expr("?y not in ()") == Call("NOT IN", (v("y"),))
    assert expr("<http://www.w3.org/2001/XMLSchema#integer>(?y) >= 2") == Call(
        ">=", (Call(NamedNode(XSD + "integer"), (v("y"),)), two)
    )
    assert expr("sameTerm(?x, uri(str(?y)))") == Call("SAMETERM", (v("x"), Call("IRI", (Call("STR", (v("y"),)),))))
    assert expr("concat() = regex(?y, 'a', 'i')") == Call("=", (Call("CONCAT", ()), Call("REGEX", (v("y"), Literal("a"), Literal("i")))))
    assert expr("NOW() != bnode()") == Call("!=", (Call("NOW", ()), Call("BNODE", ())))
    assert expr("isTRIPLE(<<( ?x :p ?y )>>)") == Call("ISTRIPLE", (TripleTermPattern(v("x"), n("p"), v("y")),))


def test_builtin_arity_and_unknown_function_are_errors() -> None:
    with pytest.raises(RuleSyntaxError) as ei:
        parse_srl(P + "RULE {} WHERE { ?x :p ?y FILTER(STRLEN(?x, ?y)) }\nRULE {} WHERE { ?x :p ?y FILTER(BOUND(?x)) }")
    msgs = [d.message for d in ei.value.diagnostics]
    assert msgs == ["STRLEN takes 1 argument(s), found 2", msgs[1]]
    assert "unknown function 'BOUND'" in msgs[1]


def test_aggregate_extension() -> None:
    els = body("?x :rank ?r AGGREGATE(?n := COUNT(DISTINCT ?o)) { ?o a :C ; :rank ?r2 . FILTER(?r2 < ?r) } FILTER(?n < 3)")
    agg = els[1]
    assert isinstance(agg, Aggregate)
    assert (agg.var, agg.function, agg.expr, agg.distinct) == (v("n"), "COUNT", v("o"), True)
    assert triples(agg.elements) == [(v("o"), rdf("type"), n("C")), (v("o"), n("rank"), v("r2"))]
    star = body("?x :p ?y AGGREGATE(?n := count(*)) { ?x :q ?z }")[1]
    assert star.expr is None and star.function == "COUNT" and star.distinct is False
    with pytest.raises(RuleSyntaxError, match=r"SUM\(\*\) is not allowed"):
        body("?x :p ?y AGGREGATE(?n := SUM(*)) { ?x :q ?z }")


# --- diagnostics -------------------------------------------------------------------------


def test_error_position_and_expected_token() -> None:
    with pytest.raises(RuleSyntaxError) as ei:
        parse_srl(P + "RULE { ?x :p ?y }\n  WHERE { ?x :q }", file="bad.srl")
    (d,) = ei.value.diagnostics
    assert (d.code, d.file, d.line, d.column) == ("SRL001", "bad.srl", 3, 17)
    assert d.message == "expected an RDF term or variable, found '}'"
    assert str(ei.value) == "bad.srl:3:17: SRL001 expected an RDF term or variable, found '}'"
    assert isinstance(ei.value, SyntaxError)


def test_all_syntax_errors_of_a_file_are_reported_together() -> None:
    text = (
        P
        + "RULE { ?x :p } WHERE { ?x :q ?y }\n"  # line 2: missing object
        + "RULE { ?x :p ?y } WHERE { ?x :q ?y }\n"  # line 3: fine
        + "RULE { ?x :p ?y } WHERE { ?x :q ?y FILTER(?y >) }\n"  # line 4: bad expression
        + "DATA { :s :p ?v }\n"  # line 5: variable in DATA
        + "RULE { ?x :p ?y } WHERE { ?x :q ?y } garbage\n"  # line 6: stray token
    )
    with pytest.raises(RuleSyntaxError) as ei:
        parse_srl(text, file="many.srl")
    got = [(d.line, d.code) for d in ei.value.diagnostics]
    assert got == [(2, "SRL001"), (4, "SRL001"), (5, "SRL010"), (6, "SRL001")]
    assert "found 'garbage'" in ei.value.diagnostics[-1].message


def test_unknown_prefix_is_reported_with_location() -> None:
    with pytest.raises(RuleSetInvalid) as ei:
        parse_srl("PREFIX ex: <http://e/>\nRULE { ?x ex:p ?y } WHERE { ?x foo:q ?y . ?y foo:r ?x }", file="p.srl")
    line2 = "RULE { ?x ex:p ?y } WHERE { ?x foo:q ?y . ?y foo:r ?x }"
    first, second = line2.index("foo:q") + 1, line2.index("foo:r") + 1
    assert [(d.code, d.line, d.column) for d in ei.value.diagnostics] == [("SRL002", 2, first), ("SRL002", 2, second)]
    assert ei.value.diagnostics[0].message == "unknown prefix 'foo:' (no PREFIX declaration before it)"


def test_unknown_prefix_with_syntax_error_raises_syntax_error_listing_both() -> None:
    with pytest.raises(RuleSyntaxError) as ei:
        parse_srl("RULE { ?x :p ?y } WHERE { ?x :q }")
    assert {d.code for d in ei.value.diagnostics} == {"SRL001", "SRL002"}


def test_invalid_literal_and_iri() -> None:
    with pytest.raises(RuleSyntaxError) as ei:
        parse_srl(P + "RULE { } WHERE { ?x :p 'bad \\q escape' . ?x :p <relative> . ?x :p 'x'@en--LTR }")
    codes = [(d.code, d.message.split(" ")[0]) for d in ei.value.diagnostics]
    assert codes == [("SRL013", "invalid"), ("SRL013", "relative"), ("SRL001", "invalid")]


def test_not_inside_not_is_rejected() -> None:
    with pytest.raises(RuleSyntaxError, match="NOT is not allowed inside NOT"):
        parse_srl(P + "RULE { } WHERE { ?x :p ?y NOT { ?x :q ?y NOT { ?y :r ?x } } }")


def test_wellformedness_checked_by_default() -> None:
    text = P + "RULE { ?x :p ?z } WHERE { ?x :q ?y }"
    with pytest.raises(RuleSetInvalid) as ei:
        parse_srl(text)
    assert ei.value.diagnostics[0].code == "SRL003"
    assert len(parse_srl(text, check=False).rules) == 1
