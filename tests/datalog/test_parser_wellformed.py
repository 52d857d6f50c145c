"""Well-formedness (reckon.datalog.wellformed), SRL draft "Well-formedness Conditions".

Each case names the condition it checks and restates it.
"""

from __future__ import annotations

import pytest

from reckon.datalog.srl import parse_srl
from reckon.datalog.wellformed import check_wellformed

P = "PREFIX : <http://example/>\n"


def problems(rule: str) -> list[tuple[str, int, int, str]]:
    rs = parse_srl(P + rule, file="w.srl", check=False)
    return [(d.code, d.line, d.column, d.message) for d in check_wellformed(rs)]


def col(rule: str, fragment: str) -> int:
    return rule.index(fragment) + 1


def test_unsafe_head_variable_names_variable_and_rule() -> None:
    # If a head variable is not bound by the body, then the rule is not well-formed.
    rule = "RULE :r { ?s :p ?o . ?s :q ?w } WHERE { ?s :p ?z }"
    assert problems(rule) == [
        ("SRL003", 2, col(rule, ":p ?o"), "head variable ?o of rule <http://example/r> is not bound in the body"),
        ("SRL003", 2, col(rule, ":q ?w"), "head variable ?w of rule <http://example/r> is not bound in the body"),
    ]


def test_head_variable_bound_by_set_or_negation_only() -> None:
    # SET binds its variable; a variable seen only inside NOT is not bound.
    assert problems("RULE { ?s :p ?o } WHERE { ?s :q 1 SET(?o := 2) }") == []
    rule = "RULE { ?s :p ?o } WHERE { ?s :q 1 NOT { ?s :r ?o } }"
    assert [p[0] for p in problems(rule)] == ["SRL003"]


def test_filter_variable_must_be_bound_before() -> None:
    # If elt_i is a filter, every variable it mentions is in V(i-1).
    rule = "RULE { ?s :p ?o } WHERE { FILTER(?o < 50 && ?s != ?z) ?s :p ?o }"
    assert problems(rule) == [
        ("SRL004", 2, col(rule, "FILTER"), "FILTER in rule w.srl:2 uses variables ?o, ?s, ?z before they are bound")
    ]


def test_set_expression_bound_and_variable_new() -> None:
    # If elt_i is an assignment, its expression's variables are in V(i-1) and its variable is not.
    rule = "RULE { ?s :p ?o } WHERE { ?s :p ?o SET(?o := ?y + 1) }"
    codes = [(p[0], p[2]) for p in problems(rule)]
    assert codes == [("SRL005", col(rule, "SET")), ("SRL006", col(rule, "SET"))]
    msgs = [p[3] for p in problems(rule)]
    assert msgs == [
        "SET(?o := ...) in rule w.srl:2 uses variable ?y before it is bound",
        "SET assigns ?o in rule w.srl:2, but ?o is already bound earlier in the body",
    ]


def test_negation_body_checked_with_outer_variables() -> None:
    # If elt_i is a negation, its body is a well-formed sequence given V(i-1).
    ok = "RULE { ?s :p 1 } WHERE { ?s :p ?o NOT { ?s :q ?z FILTER(?z > ?o) } }"
    assert problems(ok) == []
    bad = "RULE { ?s :p 1 } WHERE { ?s :p ?x NOT { ?s :q ?z FILTER(?z > ?later) } ?s :r ?later }"
    (p,) = problems(bad)
    assert p[:3] == ("SRL007", 2, col(bad, "FILTER(?z"))
    assert p[3] == "FILTER inside NOT in rule w.srl:2 uses variable ?later before it is bound"


def test_aggregate_wellformedness() -> None:
    ok = "RULE { ?x :n ?n } WHERE { ?x :r ?r AGGREGATE(?n := COUNT(?y)) { ?y :r ?r2 FILTER(?r2 > ?r) } }"
    assert problems(ok) == []
    rebind = "RULE { ?x :n ?r } WHERE { ?x :r ?r AGGREGATE(?r := SUM(?v)) { ?x :v ?v } }"
    assert [p[0] for p in problems(rebind)] == ["SRL012"]
    unbound = "RULE { ?x :n ?n } WHERE { ?x :r ?r AGGREGATE(?n := MAX(?w)) { ?x :v ?v } }"
    assert [(p[0], p[3]) for p in problems(unbound)] == [
        ("SRL012", "AGGREGATE(?n := MAX(...)) in rule w.srl:2 uses variable ?w, bound neither before it nor by its patterns")
    ]
    inner_filter = "RULE { ?x :n ?n } WHERE { ?x :r ?r AGGREGATE(?n := COUNT(*)) { ?x :v ?v FILTER(?q > 1) } }"
    assert [p[0] for p in problems(inner_filter)] == ["SRL012"]


@pytest.mark.parametrize(
    "rule",
    [
        "RULE { } WHERE { }",
        "RULE { :a :b :c } WHERE { }",
        "RULE { ?s ?p ?o } WHERE { << ?s ?p ?o >> :q :z }",  # variables inside reified triples bind
        "RULE { ?s :p ?b } WHERE { ?s :p [ :q ?b ] }",
        "RULE { [] :p ?s } WHERE { ?s :p/:q ?o }",
    ],
)
def test_well_formed_rules(rule: str) -> None:
    assert problems(rule) == []


def test_all_rules_are_checked() -> None:
    text = "RULE { ?a :p 1 } WHERE { }\nRULE { ?b :p 1 } WHERE { }\n"
    assert [p[1] for p in problems(text)] == [2, 3]
