"""Dependency graph and stratification (reckon.datalog.stratify).

Spec: SRL draft ``index.html`` sections "Rule Dependency", "Dependency Graph
Algorithm", "Stratification Algorithm"; CHANGES.md 2026-08-24 (WHERE DATA / NOT DATA
give no dependency). The layering is checked against a line-by-line transcription of
the spec's fixpoint algorithm on generated programs.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reckon._errors import RuleSetInvalid
from reckon.datalog.model import RuleSet
from reckon.datalog.srl import parse_srl
from reckon.datalog.stratify import check_program, dependency_graph, matches, stratify

P = "PREFIX : <http://example/>\n"


def rs(text: str, file: str = "f.srl") -> RuleSet:
    return parse_srl(P + text, file=file, check=False)


def edges(text: str) -> dict[tuple[int, int], str]:
    return {k: d.label for k, d in dependency_graph(rs(text)).edges.items()}


# --- rule: negation-in-cycle; the exact message is part of the contract -------------------


def test_unstratifiable_negation_message_is_exact() -> None:
    text = (
        "RULE { ?x :safe true } WHERE { ?x a :Component . NOT { ?x :status :exposed } }\n"
        "RULE { ?x :status :exposed } WHERE { ?x :safe true . ?x :dependsOn ?y }\n"
    )
    with pytest.raises(RuleSetInvalid) as ei:
        stratify(rs(text))
    (d,) = ei.value.diagnostics
    col = text.splitlines()[0].index(":status") + 1  # located at the negated pattern
    assert (d.code, d.file, d.line, d.column) == ("SRL008", "f.srl", 2, col)
    assert d.message == (
        "negation of :status in rule f.srl:2 is inside a recursive cycle: "
        ":safe -> :status -> :safe (rules f.srl:2 -> f.srl:3 -> f.srl:2); cannot be stratified"
    )


def test_run_once_rule_in_cycle_message() -> None:
    with pytest.raises(RuleSetInvalid) as ei:
        stratify(rs("RULE :mint { [] :q ?o } WHERE { ?s :q ?o }"))
    assert ei.value.diagnostics[0].message == (
        "run-once rule :mint (it has a blank node in its head) depending on :q is inside a "
        "recursive cycle: :q -> :q (rules :mint -> :mint); cannot be stratified"
    )


def test_every_bad_component_is_reported() -> None:
    text = (
        "RULE { ?x :a 1 } WHERE { ?x :k 1 . NOT { ?x :a 1 } }\n"
        "RULE { ?x :b ?n } WHERE { ?x :b ?m . SET(?n := ?m + 1) }\n"
        "RULE { ?x :c 1 } WHERE { ?x :a 1 }\n"
    )
    with pytest.raises(RuleSetInvalid) as ei:
        stratify(rs(text))
    assert sorted(d.line for d in ei.value.diagnostics) == [2, 3]


# --- dependency graph ----------------------------------------------------------------------


def test_open_and_closed_edges() -> None:
    text = (
        "RULE { ?x :exposedTo ?v } WHERE { ?x :dependsOn ?y . ?y :hasVulnerability ?v }\n"  # 0
        "RULE { ?x :dependsOn ?y } WHERE { ?x :callsService ?y }\n"  # 1
        "RULE { ?x :status :safe } WHERE { ?x a :Component . NOT { ?x :status :critical } }\n"  # 2
        "RULE { ?x :status :critical } WHERE { ?x :exposedTo ?v }\n"  # 3
        "RULE { ?x :score ?s } WHERE { ?x :exposedTo ?v . SET(?s := 1) }\n"  # 4
    )
    assert edges(text) == {(0, 1): "open", (2, 3): "closed", (3, 0): "open", (4, 0): "closed"}


def test_where_data_and_not_data_give_no_dependency() -> None:
    text = (
        "RULE { ?x :p 1 } WHERE { ?x :q 1 }\n"
        "RULE { ?x :q 1 } WHERE DATA { ?x :p 1 . NOT { ?x :q 2 } }\n"
        "RULE { ?x :q 2 } WHERE { ?x :r 1 . NOT DATA { ?x :p 1 } }\n"
    )
    assert edges(text) == {(0, 1): "open"}  # only the plain body of rule 0
    strata = stratify(rs(text))
    assert len(strata) == 1 and len(strata[0].general) == 3


def test_aggregate_is_a_closed_dependency() -> None:
    text = (
        "RULE { ?x :rank ?r } WHERE { ?x :score ?r }\n"
        "RULE { ?x :top true } WHERE { ?x :rank ?r AGGREGATE(?n := COUNT(?y)) { ?y :rank ?r2 FILTER(?r2 > ?r) } FILTER(?n < 3) }\n"
    )
    assert edges(text) == {(1, 0): "closed"}
    strata = stratify(rs(text))
    assert [(len(s.once), len(s.general)) for s in strata] == [(0, 1), (1, 0)]


@pytest.mark.parametrize(
    ("pattern", "template", "expected"),
    [
        ("?a :p ?a", ":x :p :y", False),  # a repeated variable takes one value
        ("?a :p ?a", ":x :p ?z", True),
        ("?a :p ?b", "?z :p ?z", True),
        ("?a ?a ?b", ":x :p ?z", False),
        ("?s :p <<( ?a :q ?a )>>", "?x :p <<( :b :q :c )>>", False),  # inside triple terms
        ("?s :p <<( ?a :q ?a )>>", "?x :p <<( :b :q ?y )>>", True),
        ("?s :p <<( ?a :q ?b )>>", "?x :p :notATripleTerm", False),
        ("?s :p ?t", "?x :p <<( ?x :q ?y )>>", True),
        ("?s :p :o", "[] :p :o", True),
        ("?s :p :o", ":s :p []", False),  # a head blank node is fresh: never the IRI :o
        ("?s ?p ?o", "?x ?y ?z", True),
        ("?x :p ?x", "?x :p <<( ?x :q :c )>>", False),  # occurs check
    ],
)
def test_pattern_matches_template(pattern: str, template: str, expected: bool) -> None:
    r = rs(f"RULE {{ {template} }} WHERE {{ {pattern} }}").rules[0]
    tps = [e for e in r.body]
    assert matches(tps[0], r.head[-1]) is expected


# --- layering equals the spec algorithm ---------------------------------------------------


def spec_stratification(ruleset: RuleSet) -> dict[int, int] | None:
    """Transcription of the spec's ``stratification(ruleSet)``; ``None`` on its error."""
    dp = dependency_graph(ruleset).edges
    n = len(ruleset.rules)
    level = {i: 0 for i in range(n)}
    limit = n + 1
    changed = True
    while changed:
        changed = False
        for (p, q), dep in dp.items():
            if dep.label == "open" and level[p] < level[q]:
                level[p] = level[q]
                changed = True
            if dep.label == "closed" and level[p] <= level[q]:
                x = 1 + level[q]
                if x > limit:
                    return None
                level[p] = x
                changed = True
    return level


PREDS = [":a", ":b", ":c", ":d", ":e", ":f"]
atom = st.tuples(st.sampled_from(["?x", ":k"]), st.sampled_from(PREDS * 5 + ["?p"]), st.sampled_from(["?y", "1"]))


@st.composite
def programs(draw: st.DrawFn) -> str:
    out = []
    for _ in range(draw(st.integers(1, 6))):
        h = draw(st.sampled_from(PREDS))
        pos = draw(st.lists(atom, min_size=1, max_size=2))
        neg = draw(st.lists(atom, max_size=1)) if draw(st.booleans()) else []
        body = " . ".join(f"{s} {p} {o}" for s, p, o in pos)
        for s, p, o in neg:
            body += f" NOT {{ {s} {p} {o} }}"
        if draw(st.integers(0, 5)) == 0:
            body += " SET(?z := 1)"
        out.append(f"RULE {{ ?x {h} ?y }} WHERE {{ {body} }}")
    return "\n".join(out)


@settings(max_examples=150, deadline=None)
@given(programs())
def test_layering_equals_spec_fixpoint(text: str) -> None:
    ruleset = rs(text)
    expected = spec_stratification(ruleset)
    if expected is None:
        with pytest.raises(RuleSetInvalid):
            stratify(ruleset)
        return
    strata = stratify(ruleset)
    got: dict[int, int] = {}
    for k, s in enumerate(strata):
        for r in (*s.once, *s.general):
            got[next(i for i, x in enumerate(ruleset.rules) if x is r)] = k
    # the spec numbers layers without gaps from 0, as we do
    assert got == expected


def test_strata_split_once_and_general_in_source_order() -> None:
    text = (
        "RULE :g1 { ?x :b 1 } WHERE { ?x :a 1 }\n"
        "RULE :o1 { ?x :c ?n } WHERE { ?x :b 1 . SET(?n := 2) }\n"
        "RULE :g2 { ?x :d 1 } WHERE { ?x :c ?n . NOT { ?x :e 1 } }\n"
        "RULE :o2 { [] :e ?x } WHERE { ?x :a 1 }\n"
        "RULE :g3 { ?x :f 1 } WHERE { ?x :a 1 }\n"
    )
    strata = stratify(rs(text))
    names = [([r.id.value[-2:] for r in s.once], [r.id.value[-2:] for r in s.general]) for s in strata]
    # o2 depends on nothing; o1 closed on g1; g2 open on o1 and closed on o2
    assert names == [(["o2"], ["g1", "g3"]), (["o1"], ["g2"])]


def test_check_program_reports_wellformedness_and_stratification_together() -> None:
    text = "RULE { ?x :p ?z } WHERE { ?x :q ?y }\nRULE { ?x :a 1 } WHERE { ?x :k 1 . NOT { ?x :a 1 } }\n"
    with pytest.raises(RuleSetInvalid) as ei:
        check_program(rs(text))
    assert [(d.code, d.line) for d in ei.value.diagnostics] == [("SRL003", 2), ("SRL008", 3)]


def test_large_program_stratifies() -> None:
    lines = [P]
    n = 1500
    for i in range(n):
        lines.append(f"RULE {{ ?x a :C{i + 1} }} WHERE {{ ?x a :C{i} . ?x :p{i % 40} ?y }}")
    for i in range(0, n, 10):
        lines.append(f"RULE {{ ?x :q{i} ?y }} WHERE {{ ?x a :C{i} . NOT {{ ?x a :C{i + 5} }} ?x :p1 ?y }}")
    ruleset = parse_srl("\n".join(lines))
    g = dependency_graph(ruleset)
    # chain i -> i-1; each negation rule: open on the chain rule deriving C{i} (none for
    # C0), closed on the one deriving C{i+5}
    assert len(g.edges) == (n - 1) + 2 * (n // 10) - 1
    assert sum(d.label == "closed" for d in g.edges.values()) == n // 10
    strata = stratify(ruleset)
    assert [len(s.general) for s in strata] == [n, n // 10]


def test_aggregate_in_cycle_message() -> None:
    text = "RULE :top { ?x :rank ?n } WHERE { ?x :k 1 AGGREGATE(?n := COUNT(?y)) { ?y :rank ?r } }"
    with pytest.raises(RuleSetInvalid) as ei:
        stratify(rs(text))
    assert ei.value.diagnostics[0].message == (
        "aggregate over :rank in rule :top is inside a recursive cycle: :rank -> :rank (rules :top -> :top); "
        "cannot be stratified"
    )
