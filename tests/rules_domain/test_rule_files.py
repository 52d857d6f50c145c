"""The shipped module rule files: parse, stratify, and document every rule."""

from __future__ import annotations

import re

import pytest

from reckon._resources import resource_path
from reckon.datalog.loader import load_rules
from reckon.datalog.model import Aggregate, Assignment, Negation
from reckon.datalog.stratify import stratify

FILES = ["core.srl", "marketing.srl", "recruiting.srl", "agent.srl", "notes.srl", "events.srl", "experience.srl", "types.srl"]


@pytest.mark.parametrize("name", FILES)
def test_every_rule_has_an_iri_and_an_if_then_comment(name):
    text = resource_path("rules", name).read_text()
    rs = load_rules(resource_path("rules", name), check=False)
    comments = set(re.findall(r"^# rule: ([a-z0-9-]+) — If ", text, flags=re.M))
    ids = {r.id.value.rsplit("#", 1)[-1] for r in rs.rules}
    assert all(r.id is not None for r in rs.rules)
    assert ids == comments
    assert len(ids) == len(rs.rules)


def test_module_rules_stratify_with_closed_rules_on_top(ruleset):
    """Stratum 0: every monotone rule, the spend-period clock test and the experience count;
    stratum 1: the live rank keys, company and per stakeholder (run once), the budget rules (budget-spend-record negates
    the stratum-0 mk:periodElapsed) and the event-next negation over ev:before; stratum 2:
    the run-once utilisation SET over stratum 1's current spend, and the live-context caps
    (company and per stakeholder), whose aggregates read the keys."""
    strata = stratify(ruleset)
    assert len(strata) == 3
    names = [{r.id.value.rsplit("#", 1)[-1] for r in s.once} for s in strata]
    assert names[1] == {"live-rank-key", "stakeholder-rank-key"}
    assert names[2] == {"live-context-cap", "stakeholder-live-cap", "budget-utilisation"}
    # stratum 0's one run-once rule: the experience count (an aggregate over asserted
    # predicates only), read by the monotone strategy-promoted of the same stratum
    assert {r.id.value.rsplit("#", 1)[-1] for r in strata[0].once} == {"strategy-success-count"}
    assert "strategy-promoted" in {r.id.value.rsplit("#", 1)[-1] for r in strata[0].general}
    assert not strata[2].general
    # the negations of derived predicates: rules/events.srl event-next reads the stratum-0
    # ev:before (event-previous reads event-next); rules/marketing.srl budget-spend-record
    # reads the stratum-0 mk:periodElapsed (the budget rules read budget-spend-record)
    assert {r.id.value.rsplit("#", 1)[-1] for r in strata[1].general} == {
        "event-next", "event-previous", "budget-spend-record", "budget-current-spend",
        "budget-status-within", "budget-status-near-limit", "budget-status-over"}
    assert "spend-period-elapsed" in {r.id.value.rsplit("#", 1)[-1] for r in strata[0].general}


def test_negations_and_aggregates_read_only_asserted_or_lower_predicates(ruleset):
    """No rule with NOT or AGGREGATE derives rdf:type (which every membership rule reads)."""
    rdf_type = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
    for r in ruleset.rules:
        closed = any(isinstance(e, (Negation, Aggregate, Assignment)) for e in r.body)
        negated_preds = {
            t.p.value for e in r.body if isinstance(e, Negation) for t in e.elements if hasattr(t, "p")
        }
        assert negated_preds <= {
            "https://reckon.dev/ns/core#supersededBy",
            "https://reckon.dev/ns/core#expiresAt",
            "https://reckon.dev/ns/marketing#platform",
            "https://reckon.dev/ns/notes#expiresAt",
            "https://reckon.dev/ns/notes#deletedAt",
            "https://reckon.dev/ns/events#before",  # derived in a lower stratum (rule event-before)
            "https://reckon.dev/ns/marketing#periodElapsed",  # lower stratum (rule spend-period-elapsed)
        }, r.name
        if closed and any(isinstance(e, (Aggregate, Assignment)) for e in r.body):
            assert all(getattr(h.p, "value", None) != rdf_type for h in r.head), r.name


@pytest.mark.parametrize("generic", ["rdfs.srl", "owl2rl.srl"])
def test_module_rules_do_not_combine_with_generic_entailment_rules(generic):
    """Documented limitation (rules/core.srl header): rules whose head has a variable
    predicate (rdfs7, eq-rep-s ...) match every pattern, which puts the run-once and
    negated rules of the memory modules on a cycle; the loader refuses with SRL008."""
    from reckon._errors import RuleSetInvalid

    with pytest.raises(RuleSetInvalid) as e:
        load_rules("core.srl", "marketing.srl", generic)
    assert "SRL008" in str(e.value)
