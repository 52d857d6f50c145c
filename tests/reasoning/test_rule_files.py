"""Every shipped rule file (``rules/*.srl``) parses and passes ``check_program``
(well-formedness + stratification) with no diagnostics; the RDFS / OWL 2 RL files follow
their documented conventions (rule IRIs, ``# rule:`` comments, one file per rule,
helper facts only in ``urn:reckon:internal:``). The per-rule OWL 2 RL cases are the golden
folders of ``tests/rules_owl2rl/``.
"""

from __future__ import annotations

import re

import pytest
from pyoxigraph import NamedNode, Variable

from tests.reasoning.conftest import RULES_DIR, load_shipped

SHIPPED = sorted(p.name for p in RULES_DIR.glob("*.srl"))
RULE_NS = "urn:reckon:rule:"
HELPER_NS = "urn:reckon:internal:"


def test_rdfs_and_owl2rl_are_shipped() -> None:
    assert {"rdfs.srl", "owl2rl.srl"} <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_rule_file_parses_and_checks(name: str) -> None:
    from reckon.datalog.stratify import check_program
    from reckon.datalog.wellformed import check_wellformed

    ruleset = load_shipped(name)
    assert ruleset.rules, f"{name} has no rules"
    assert check_wellformed(ruleset) == []
    strata = check_program(ruleset)  # raises RuleSetInvalid listing every problem
    assert sum(len(s.once) + len(s.general) for s in strata) == len(ruleset.rules)


def test_rdfs_and_owl2rl_load_together() -> None:
    """`reckon infer --rules rdfs.srl owl2rl.srl`: the union checks, no rule IRI repeats,
    and no rule (head + body) appears in both files."""
    from reckon.datalog.stratify import check_program

    rdfs, owl = load_shipped("rdfs.srl"), load_shipped("owl2rl.srl")
    both = rdfs + owl
    check_program(both)
    ids = [r.id for r in both.rules]
    assert all(isinstance(i, NamedNode) and i.value.startswith(RULE_NS) for i in ids)
    assert len(set(ids)) == len(ids)
    assert not {(r.head, r.body) for r in rdfs.rules} & {(r.head, r.body) for r in owl.rules}


@pytest.mark.parametrize("name", ["rdfs.srl", "owl2rl.srl", "rdfs-axioms.srl"])
def test_each_rule_is_documented(name: str) -> None:
    """Each rule has a `# rule: <id> — If ... then ...` comment (STYLE.md, OWL-RL), or is a
    helper rule introduced by a `# helper:` comment."""
    text = (RULES_DIR / name).read_text(encoding="utf-8")
    for rule in load_shipped(name).rules:
        local = rule.id.value[len(RULE_NS) :]  # type: ignore[union-attr]
        if _is_helper(rule):
            continue
        stem = re.sub(r"-(last|step|p|s|o|data)$", "", local)
        assert re.search(rf"^# rule: ({re.escape(local)}|{re.escape(stem)}) — ", text, re.M), f"{local} undocumented"


def _is_helper(rule) -> bool:  # type: ignore[no-untyped-def]
    preds = {t.p for t in rule.head}
    return all(isinstance(p, NamedNode) and p.value.startswith(HELPER_NS) for p in preds)


def test_helper_rules_only_write_the_internal_namespace() -> None:
    """Rules that conclude helper vocabulary (urn:reckon:internal:, hidden from the
    inference graph) conclude nothing else, and never through a variable predicate."""
    for rule in load_shipped("rdfs.srl", "owl2rl.srl").rules:
        preds = {t.p for t in rule.head}
        internal = {p for p in preds if isinstance(p, NamedNode) and p.value.startswith(HELPER_NS)}
        assert not internal or internal == preds, rule.name
        assert not (internal and any(isinstance(p, Variable) for p in preds)), rule.name
