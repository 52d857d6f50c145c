"""``Reasoner.explain``: derivation trees down to asserted facts (DESIGN.md "Rules":
"explain(triple) returns why an inferred triple holds: the rule and the supporting
facts, recursively")."""

from __future__ import annotations

import pytest
from pyoxigraph import Literal, NamedNode, Triple, Variable

from reckon._errors import ExplainError
from reckon.datalog.evaluate import Reasoner
from reckon.datalog.explain import Explanation
from reckon.datalog.srl import parse_srl

EX = "http://ex/"
RULES = f"""PREFIX : <{EX}>
RULE :tc1 {{ ?x :anc ?y }} WHERE {{ ?x :par ?y }}
RULE :tc2 {{ ?x :anc ?z }} WHERE {{ ?x :anc ?y . ?y :anc ?z }}
RULE :root {{ ?x :root true }} WHERE {{ ?x :par ?y NOT {{ ?z :par ?x }} }}
RULE {{ ?x :next ?n }} WHERE {{ ?x :age ?a SET(?n := ?a + 1) }}
DATA {{ :z :par :a }}
"""


def t(s: str, p: str, o: object) -> Triple:
    return Triple(NamedNode(EX + s), NamedNode(EX + p), NamedNode(EX + o) if isinstance(o, str) else Literal(o))


@pytest.fixture()
def reasoner() -> Reasoner:
    r = Reasoner(parse_srl(RULES, file="fam.srl"))
    r.load([t("a", "par", "b"), t("b", "par", "c"), t("c", "par", "a"), t("a", "age", 3)])
    return r


def _leaves(e: Explanation) -> list[tuple[str, str]]:
    out = []
    for s in e.supports:
        if s.explanation is None:
            out.append((str(s.triple), s.origin))
        else:
            out.extend(_leaves(s.explanation))
    return out


def test_recursive_explanation_is_well_founded_on_a_cycle(reasoner: Reasoner) -> None:
    """If a->b->c->a (a cycle) then a anc a is explained through anc facts that are not
    a anc a itself, ending in asserted par facts."""
    e = reasoner.explain(t("a", "anc", "a"))
    assert e.rule == f"<{EX}tc2>"
    assert e.binding("x") == NamedNode(EX + "a") and e.binding("z") == NamedNode(EX + "a")

    def walk(x: Explanation, seen: tuple[str, ...]) -> None:
        assert str(x.triple) not in seen
        for s in x.supports:
            if s.explanation is not None:
                walk(s.explanation, (*seen, str(x.triple)))

    walk(e, ())
    leaves = _leaves(e)
    assert leaves and all(origin in ("asserted", "data") for _, origin in leaves)
    assert {tr for tr, _ in leaves} <= {str(t("a", "par", "b")), str(t("b", "par", "c")), str(t("c", "par", "a")), str(t("z", "par", "a"))}


def test_negation_is_reported_absent_and_render_uses_prefixes() -> None:
    """If :b has a parent but no one is :b's parent, then b root true is explained by
    rule :root with the NOT element instantiated and checked absent."""
    r = Reasoner(parse_srl(RULES, file="fam.srl"))
    r.load([t("b", "par", "c")])
    e = r.explain(t("b", "root", True))
    assert e.absent == ("?z :par :b",)
    text = e.render()
    assert text.splitlines()[0] == ":b :root true"
    assert "by rule :root (fam.srl:4)" in text
    assert "- :b :par :c  [asserted]" in text
    assert "NOT { ?z :par :b }  [no match]" in text


def test_assignment_and_bindings(reasoner: Reasoner) -> None:
    """If ?x :age 3 then ?x :next 4, explained with ?n bound to 4 and the SET shown."""
    e = reasoner.explain(t("a", "next", 4))
    assert dict(e.bindings) == {Variable("a"): Literal(3), Variable("n"): Literal(4), Variable("x"): NamedNode(EX + "a")}
    assert e.supports[0].origin == "asserted"
    assert e.conditions == ("SET(?n := 3 + 1)",)


def test_data_block_triple_and_support(reasoner: Reasoner) -> None:
    """A DATA triple is explained as such; used as a support it is a leaf of origin data."""
    assert reasoner.explain(t("z", "par", "a")).rule == "DATA"
    e = reasoner.explain(t("z", "anc", "a"))
    assert e.supports[0].origin == "data"


def test_not_inferred_raises(reasoner: Reasoner) -> None:
    """Asserted or unknown triples are not explained: ExplainError (a LookupError)."""
    with pytest.raises(ExplainError, match="asserted"):
        reasoner.explain(t("a", "par", "b"))
    with pytest.raises(LookupError, match="not in the evaluation graph"):
        reasoner.explain(t("q", "anc", "q"))


def test_explain_after_incremental_update(reasoner: Reasoner) -> None:
    """After deleting c par a, a anc a is gone and b anc a... is explained anew."""
    reasoner.apply(delete=[t("c", "par", "a")], insert=[t("c", "par", "d")])
    with pytest.raises(ExplainError):
        reasoner.explain(t("a", "anc", "a"))
    e = reasoner.explain(t("a", "anc", "d"))
    assert {tr for tr, _ in _leaves(e)} == {str(t("a", "par", "b")), str(t("b", "par", "c")), str(t("c", "par", "d"))}


def test_explainable_after_lower_fact_is_rederived_with_larger_rank() -> None:
    """If a lower-stratum fact loses its first derivation but keeps a later one (it is
    over-deleted and rederived with a larger rank), then the higher-stratum fact built
    on it is still explained, through the surviving derivation (regression)."""
    rules = f"""PREFIX : <{EX}>
RULE {{ ?x :q ?y }} WHERE {{ ?x :p ?y }}
RULE {{ ?x :s2 ?y }} WHERE {{ ?x :s ?y }}
RULE {{ ?x :q2 ?y }} WHERE {{ ?x :s2 ?y }}
RULE {{ ?x :q ?y }} WHERE {{ ?x :q2 ?y }}
RULE {{ ?x :blocked true }} WHERE {{ ?x :q :zzz }}
RULE {{ ?x :r ?y }} WHERE {{ ?x :q ?y NOT {{ ?x :blocked true }} }}
"""
    r = Reasoner(parse_srl(rules))
    r.load([t("a", "p", "b"), t("a", "s", "b")])
    assert r.stats["strata"] == 2
    r.apply(delete=[t("a", "p", "b")])
    e = r.explain(t("a", "r", "b"))
    assert {tr for tr, _ in _leaves(e)} == {str(t("a", "s", "b"))}
