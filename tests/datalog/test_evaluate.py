"""Rule-set evaluation (SRL "Rule Set Evaluation", "Evaluation of a Rule"): one test per
construct, each stated as If/then, asserting the exact inference graph."""

from __future__ import annotations

import pytest
from pyoxigraph import BlankNode, Literal, NamedNode, Triple, Variable

from reckon._errors import EvaluationLimitExceeded, RuleSetInvalid
from reckon.datalog._plan import order_elements
from reckon.datalog.evaluate import Delta, Limits, Reasoner, materialize
from reckon.datalog.model import Filter, Rule, RuleSet, TriplePattern
from reckon.datalog.srl import parse_srl

EX = "http://ex/"
P = f"PREFIX : <{EX}>\n"


def n(x: str) -> NamedNode:
    return NamedNode(EX + x)


def t(s: object, p: str, o: object) -> Triple:
    def term(x: object) -> object:
        if isinstance(x, str):
            return n(x)
        if isinstance(x, (int, bool)):
            return Literal(x)
        return x

    return Triple(term(s), n(p), term(o))  # type: ignore[arg-type]


def infer(rules: str, base: list[Triple]) -> set[Triple]:
    return materialize(parse_srl(P + rules), base)


def test_transitive_closure_semi_naive() -> None:
    """If par is a chain of 6 nodes, then anc is its transitive closure (15 pairs)."""
    rules = "RULE { ?x :anc ?y } WHERE { ?x :par ?y } RULE { ?x :anc ?z } WHERE { ?x :par ?y . ?y :anc ?z }"
    base = [t(f"n{i}", "par", f"n{i + 1}") for i in range(5)]
    got = infer(rules, base)
    assert got == {t(f"n{i}", "anc", f"n{j}") for i in range(6) for j in range(i + 1, 6)}


def test_inference_graph_excludes_base_triples() -> None:
    """If a rule derives a triple that is asserted, then it is not in the inference graph."""
    got = infer("RULE { ?x :q ?y } WHERE { ?x :p ?y }", [t("a", "p", "b"), t("a", "q", "b"), t("c", "p", "d")])
    assert got == {t("c", "q", "d")}


def test_negation_stratified() -> None:
    """If ?x has a :p but no derived :q, then ?x :r true (NOT sees the lower stratum)."""
    rules = "RULE { ?x :q true } WHERE { ?x :s ?y } RULE { ?x :r true } WHERE { ?x :p ?y NOT { ?x :q ?z } }"
    got = infer(rules, [t("a", "p", "b"), t("c", "p", "d"), t("c", "s", "e")])
    assert got == {t("c", "q", True), t("a", "r", True)}


def test_not_data_matches_base_only() -> None:
    """If :km is derived but not asserted for :B, NOT DATA still lets the default apply
    (SRL "Matching Ground Data" example)."""
    rules = """RULE { ?x :km ?k } WHERE { ?x :miles ?m . NOT DATA { ?x :km ?k0 } SET(?k := xsd:integer(?m * 1.6)) }"""
    got = materialize(parse_srl(P + "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n" + rules),
                      [t("A", "miles", 5), t("A", "km", 8), t("B", "miles", 10)])
    assert got == {t("B", "km", 16)}


def test_where_data_does_not_see_inferred() -> None:
    """If a WHERE DATA rule reads :q, then :q triples derived by another rule are not matched."""
    rules = "RULE { ?x :q ?y } WHERE { ?x :p ?y } RULE { ?x :r ?y } WHERE DATA { ?x :q ?y }"
    got = infer(rules, [t("a", "p", "b"), t("c", "q", "d")])
    assert got == {t("a", "q", "b"), t("c", "r", "d")}


def test_filter_and_error_drops_solution() -> None:
    """If FILTER compares numbers, an IRI value is an error and the solution is dropped."""
    got = infer("RULE { ?x :big true } WHERE { ?x :v ?v FILTER(?v > 2) }", [t("a", "v", 3), t("b", "v", 1), t("c", "v", "iri")])
    assert got == {t("a", "big", True)}


def test_assignment_error_drops_solution() -> None:
    """If SET's expression errors (IRI + 1), the solution is dropped; else ?n is bound."""
    got = infer("RULE { ?x :n ?n } WHERE { ?x :v ?v SET(?n := ?v + 1) }", [t("a", "v", 1), t("c", "v", "iri")])
    assert got == {t("a", "n", 2)}


def test_head_blank_nodes_fresh_per_solution() -> None:
    """If the head has [ ], then each solution gets its own blank node (CHANGES.md 2026-08-24)."""
    got = infer("RULE { ?x :has [ :val ?v ] } WHERE { ?x :v ?v }", [t("a", "v", 1), t("b", "v", 2)])
    has = [x for x in got if x.predicate == n("has")]
    assert len(has) == 2 and len({x.object for x in has}) == 2
    assert all(isinstance(x.object, BlankNode) for x in has)
    vals = {x.subject: x.object for x in got if x.predicate == n("val")}
    assert {vals[h.object] for h in has} == {Literal(1), Literal(2)}


def test_variable_predicate() -> None:
    """If ?p rdfs:subPropertyOf ?q then ?x ?q ?y for every ?x ?p ?y (variable predicate)."""
    rules = "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\nRULE { ?x ?q ?y } WHERE { ?p rdfs:subPropertyOf ?q . ?x ?p ?y }"
    sub = Triple(n("p"), NamedNode("http://www.w3.org/2000/01/rdf-schema#subPropertyOf"), n("q"))
    got = infer(rules, [sub, t("a", "p", "b"), t("c", "r", "d")])
    assert got == {t("a", "q", "b")}


def test_triple_terms_in_body_and_head() -> None:
    """If ?r :about <<( ?s ?p ?o )>>, then ?s :mentionedBy ?r; and a head can build a triple term."""
    rules = """RULE { ?s :mentionedBy ?r } WHERE { ?r :about <<( ?s ?p ?o )>> }
RULE { ?x :said <<( ?x :likes ?y )>> } WHERE { ?x :likes ?y }"""
    tt = Triple(n("a"), n("knows"), n("b"))
    got = infer(rules, [Triple(n("r1"), n("about"), tt), t("c", "likes", "d")])
    assert got == {t("a", "mentionedBy", "r1"), Triple(n("c"), n("said"), Triple(n("c"), n("likes"), n("d")))}


def test_aggregate_count_per_solution() -> None:
    """If AGGREGATE counts distinct :tag values per ?x, then ?x :ntags is that count (0 included)."""
    rules = "RULE { ?x :ntags ?c } WHERE { ?x a :Item . AGGREGATE(?c := COUNT(DISTINCT ?g)) { ?x :tag ?g } }"
    rdf_type = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    base = [Triple(n("a"), rdf_type, n("Item")), Triple(n("b"), rdf_type, n("Item")),
            t("a", "tag", "x"), t("a", "tag", "y")]
    assert infer(rules, base) == {t("a", "ntags", 2), t("b", "ntags", 0)}


def test_data_block_is_inferred_and_used() -> None:
    """If DATA asserts :a :p :b, it is in the inference graph and feeds rules."""
    got = infer("DATA { :a :p :b } RULE { ?x :q ?y } WHERE { ?x :p ?y }", [])
    assert got == {t("a", "p", "b"), t("a", "q", "b")}


def test_literal_subject_is_not_emitted() -> None:
    """If a head would put a literal in subject position, that triple is not produced."""
    assert infer("RULE { ?v :of ?x } WHERE { ?x :v ?v }", [t("a", "v", 1), t("a", "v", "b")]) == {t("b", "of", "a")}


def test_limit_stops_runaway_and_keeps_state() -> None:
    """If a rule nests triple terms forever, then EvaluationLimitExceeded names the rule and
    the limit, and the reasoner keeps its previous inference graph."""
    rs = parse_srl(P + "RULE :grow { ?x :p <<( ?x :p ?y )>> } WHERE { ?x :p ?y }")
    r = Reasoner(rs, limits=Limits(max_derived=50))
    with pytest.raises(EvaluationLimitExceeded, match=r"max_derived=50.*grow"):
        r.load([t("a", "p", "b")])
    assert r.inferred() == set() and r.base() == set()
    r2 = Reasoner(rs, limits=Limits(max_rounds=5))
    with pytest.raises(EvaluationLimitExceeded, match="max_rounds=5"):
        r2.load([t("a", "p", "b")])


def test_limit_in_apply_rolls_back() -> None:
    """If apply() hits a limit, then base and inference graph are exactly as before."""
    rs = parse_srl(P + "RULE :grow { ?x :p <<( ?x :p ?y )>> } WHERE { ?x :p ?y . ?x a :Grow }")
    r = Reasoner(rs, limits=Limits(max_derived=30))
    r.load([t("a", "p", "b")])
    before_inf, before_base = r.inferred(), r.base()
    rdf_type = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    with pytest.raises(EvaluationLimitExceeded):
        r.apply(insert=[Triple(n("a"), rdf_type, n("Grow"))], delete=[t("a", "p", "b")] * 0)
    assert r.inferred() == before_inf and r.base() == before_base
    assert r.apply(insert=[t("c", "p", "d")]) == Delta()


def test_unstratifiable_program_is_refused() -> None:
    """If a rule negates its own head predicate, the Reasoner refuses the rule set (SRL008)."""
    with pytest.raises(RuleSetInvalid, match="SRL008"):
        Reasoner(parse_srl(P + "RULE { ?x :p true } WHERE { ?x :q ?y NOT { ?x :p true } }"))


def test_stats_report_strata_and_rounds() -> None:
    """stats gives facts, rounds and seconds per stratum after load()."""
    rules = "RULE { ?x :q true } WHERE { ?x :s ?y } RULE { ?x :r true } WHERE { ?x :p ?y NOT { ?x :q ?z } }"
    r = Reasoner(parse_srl(P + rules))
    r.load([t("a", "p", "b"), t("c", "s", "e")])
    assert r.stats["strata"] == 2
    assert r.stats["facts_per_stratum"] == [1, 1]
    assert r.stats["derived"] == 2
    assert all(s >= 0.0 for s in r.stats["seconds_per_stratum"])
    assert r.stats["rounds"] == sum(r.stats["rounds_per_stratum"]) >= 2


def test_model_built_rules_without_parser() -> None:
    """Rules built from the model directly are evaluated the same way."""
    x, y = Variable("x"), Variable("y")
    rule = Rule(head=(TriplePattern(y, n("inv"), x),), body=(TriplePattern(x, n("p"), y), Filter(Literal(True))))
    assert materialize(RuleSet(rules=(rule,)), [t("a", "p", "b")]) == {t("b", "inv", "a")}


def test_join_order_respects_sequential_semantics() -> None:
    """A NOT is never moved past a pattern that binds one of its variables: the
    variables it sees bound are exactly those bound before it in source order."""
    x, y, z = Variable("x"), Variable("y"), Variable("z")
    from reckon.datalog.model import Negation

    body = (TriplePattern(x, n("p"), y), Negation((TriplePattern(x, n("q"), z),)), TriplePattern(z, n("r"), x))
    order = order_elements(body, set(), lambda tp, bound: 1.0 if tp.s == z else 100.0)
    assert order.index(1) < order.index(2)
    assert order[0] == 0
