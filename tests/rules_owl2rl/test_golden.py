"""Golden cases for every OWL 2 RL/RDF rule (OWL 2 Profiles §4.3, Tables 4–9).

Spec: https://www.w3.org/TR/owl2-profiles/#Reasoning_in_OWL_2_RL_and_RDF_Graphs_using_Rules
Folder layout and file meanings: ``tests/rules_owl2rl/README.md``. One test per folder
under ``cases/``; the program is ``rules/rdfs.srl`` + ``rules/owl2rl.srl``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyoxigraph import NamedNode, RdfFormat, Triple, parse

from tests.conftest import REPO

CASES = Path(__file__).parent / "cases"
RULES = REPO / "rules"
RULE_NS = "urn:reckon:rule:"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
NOTHING = NamedNode("http://www.w3.org/2002/07/owl#Nothing")

# The rule tables of OWL 2 Profiles §4.3, in order.
SPEC_RULES: dict[str, tuple[str, ...]] = {
    "Table 4 (equality)": (
        "eq-ref", "eq-sym", "eq-trans", "eq-rep-s", "eq-rep-p", "eq-rep-o", "eq-diff1", "eq-diff2", "eq-diff3",
    ),
    "Table 5 (properties)": (
        "prp-ap", "prp-dom", "prp-rng", "prp-fp", "prp-ifp", "prp-irp", "prp-symp", "prp-asyp", "prp-trp",
        "prp-spo1", "prp-spo2", "prp-eqp1", "prp-eqp2", "prp-pdw", "prp-adp", "prp-inv1", "prp-inv2", "prp-key",
        "prp-npa1", "prp-npa2",
    ),
    "Table 6 (classes)": (
        "cls-thing", "cls-nothing1", "cls-nothing2", "cls-int1", "cls-int2", "cls-uni", "cls-com", "cls-svf1",
        "cls-svf2", "cls-avf", "cls-hv1", "cls-hv2", "cls-maxc1", "cls-maxc2", "cls-maxqc1", "cls-maxqc2",
        "cls-maxqc3", "cls-maxqc4", "cls-oo",
    ),
    "Table 7 (class axioms)": ("cax-sco", "cax-eqc1", "cax-eqc2", "cax-dw", "cax-adc"),
    "Table 8 (datatypes)": ("dt-type1", "dt-type2", "dt-eq", "dt-diff", "dt-not-type"),
    "Table 9 (schema vocabulary)": (
        "scm-cls", "scm-sco", "scm-eqc1", "scm-eqc2", "scm-op", "scm-dp", "scm-spo", "scm-eqp1", "scm-eqp2",
        "scm-dom1", "scm-dom2", "scm-rng1", "scm-rng2", "scm-hv", "scm-svf1", "scm-svf2", "scm-avf1", "scm-avf2",
        "scm-int", "scm-uni",
    ),
}
ALL_SPEC = [r for rules in SPEC_RULES.values() for r in rules]

# Spec rules that are not a rule of owl2rl.srl under their own name, and what they are.
ELSEWHERE = {
    "prp-dom": ("rdfs.srl", "rdfs2"),
    "prp-rng": ("rdfs.srl", "rdfs3"),
    "prp-spo1": ("rdfs.srl", "rdfs7"),
    "cax-sco": ("rdfs.srl", "rdfs9"),
    "scm-spo": ("rdfs.srl", "rdfs5"),
    "scm-sco": ("rdfs.srl", "rdfs11"),
    "dt-type2": ("rdfs.srl", "rdfD1"),
    "dt-not-type": ("rdfs.srl", "rdfD-ill-typed"),
    "dt-diff": ("owl2rl.srl", "eq-diff1-values"),
    "cls-nothing2": ("owl2rl.srl", None),  # the owl:Nothing convention itself
    "prp-ap": ("owl2rl.srl", None),  # DATA block
    "cls-thing": ("owl2rl.srl", None),
    "cls-nothing1": ("owl2rl.srl", None),
    "dt-type1": ("owl2rl.srl", None),
}

FOLDERS = sorted(p.name for p in CASES.iterdir() if p.is_dir()) if CASES.is_dir() else []


def _ttl(path: Path) -> set[Triple]:
    if not path.exists():
        return set()
    with path.open("rb") as fh:
        return {q.triple for q in parse(fh, format=RdfFormat.TURTLE, base_iri="http://example.org/")}


def _program():  # -> RuleSet
    from reckon.datalog.loader import load_rules

    return load_rules(RULES / "rdfs.srl", RULES / "owl2rl.srl")


@pytest.fixture(scope="module")
def program():
    return _program()


def _rule_ids(name: str) -> set[str]:
    from reckon.datalog.loader import load_rules

    return {r.id.value[len(RULE_NS):] for r in load_rules(RULES / name).rules}  # type: ignore[union-attr]


def test_every_spec_rule_is_implemented_or_placed() -> None:
    """Each of the 78 rules of Tables 4–9 is a rule of owl2rl.srl under its W3C name, or
    is listed in ELSEWHERE (and then named in owl2rl.srl's header or as the rule it is)."""
    assert len(ALL_SPEC) == 78 and len(set(ALL_SPEC)) == 78
    owl, rdfs = _rule_ids("owl2rl.srl"), _rule_ids("rdfs.srl")
    text = (RULES / "owl2rl.srl").read_text(encoding="utf-8")
    for rule in ALL_SPEC:
        assert re.search(rf"^# rule: {re.escape(rule)} — ", text, re.M), f"{rule}: no `# rule:` line in owl2rl.srl"
        if rule in ELSEWHERE:
            where, as_rule = ELSEWHERE[rule]
            if as_rule is not None:
                assert as_rule in (rdfs if where == "rdfs.srl" else owl), rule
        else:
            assert rule in owl, f"{rule} is not a rule of owl2rl.srl"


def test_every_spec_rule_has_a_golden_case() -> None:
    assert set(ALL_SPEC) <= set(FOLDERS)
    for name in FOLDERS:
        base = name.split(".")[0]
        assert base in ALL_SPEC or base in _rule_ids("owl2rl.srl"), f"case {name}: no rule {base}"
        assert (CASES / name / "premise.ttl").exists()
        assert any((CASES / name / f).exists() for f in ("expected.ttl", "absent.ttl", "inconsistent.ttl")), name


def _closure(reasoner, premise: set[Triple]) -> set[Triple]:
    return set(premise) | reasoner.inferred()


@pytest.mark.parametrize("name", FOLDERS)
def test_golden_case(name: str, program) -> None:
    """If the premise is materialized with rdfs.srl + owl2rl.srl, then every expected
    triple is in the closure, no absent triple is, and the graph is inconsistent exactly
    when the case says so (the listed owl:Nothing facts, reported by inconsistencies())."""
    from reckon.datalog.evaluate import Reasoner

    folder = CASES / name
    premise = _ttl(folder / "premise.ttl")
    r = Reasoner(program)
    r.load(premise)
    closure = _closure(r, premise)
    expected, absent, marks = _ttl(folder / "expected.ttl"), _ttl(folder / "absent.ttl"), _ttl(folder / "inconsistent.ttl")
    assert expected <= closure, sorted(map(str, expected - closure))
    assert not (absent & closure), sorted(map(str, absent & closure))
    nothing = {t for t in closure if t.predicate == RDF_TYPE and t.object == NOTHING}
    found = r.inconsistencies()
    if marks:
        assert marks <= nothing, sorted(map(str, marks - nothing))
        assert {t.subject for t in marks} <= {i.node for i in found}
        for i in found:
            assert i.rule and i.facts and i.render()
    else:
        assert nothing == set() and found == [], sorted(map(str, nothing))


@pytest.mark.parametrize("name", FOLDERS)
def test_golden_case_incrementally(name: str, program) -> None:
    """If the premise is inserted into an empty reasoner (apply) and then deleted, the
    inference graph equals materialization from scratch at each step."""
    from reckon.datalog.evaluate import Reasoner, materialize

    premise = _ttl(CASES / name / "premise.ttl")
    r = Reasoner(program)
    r.load([])
    empty = r.inferred()
    r.apply(insert=premise)
    assert r.inferred() == materialize(program, premise)
    half = sorted(premise, key=str)[: len(premise) // 2]
    r.apply(delete=half)
    assert r.inferred() == materialize(program, premise - set(half))
    r.apply(delete=premise)
    assert r.inferred() == empty


def test_eq_ref_covers_the_program_vocabulary() -> None:
    """eq-ref runs over the base graph (WHERE DATA); the terms that only rdfs.srl /
    owl2rl.srl introduce (head constants, DATA blocks) get their reflexive owl:sameAs
    from owl2rl.srl's last DATA block, which must list every one of them."""
    from pyoxigraph import Triple as T

    from reckon.datalog.loader import load_rules
    from reckon.datalog.model import INTERNAL, TripleTermPattern

    program = load_rules(RULES / "rdfs.srl", RULES / "owl2rl.srl")
    same = NamedNode("http://www.w3.org/2002/07/owl#sameAs")
    terms: set[NamedNode] = set()

    def add(t: object) -> None:
        if isinstance(t, NamedNode) and not t.value.startswith(INTERNAL):
            terms.add(t)
        elif isinstance(t, TripleTermPattern):
            add(t.s), add(t.p), add(t.o)

    for rule in program.rules:
        for tp in rule.head:
            add(tp.s), add(tp.p), add(tp.o)
    for t in program.data:
        if not any(isinstance(x, NamedNode) and x.value.startswith(INTERNAL) for x in (t.subject, t.predicate, t.object)):
            add(t.subject), add(t.predicate), add(t.object)
    missing = {x for x in terms if T(x, same, x) not in set(program.data)}
    assert not missing, sorted(map(str, missing))
