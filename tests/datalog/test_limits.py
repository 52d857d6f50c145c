"""Runaway rule programs stop with ResourceLimit while the process is healthy (issue 9 item 5).

The two runaways of the ``Limits`` docstring run at the DEFAULT limits in a subprocess —
so that a regression ends as a failed test, not as a killed test runner — and must end
with ``ResourceLimit`` printed and exit code 0, never a signal. The child gets an
address-space limit of 8 GiB as a safety net for the machine running the tests; the
default budget (4 GiB of growth) is below it, so the budget, not the kernel, stops it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from pyoxigraph import NamedNode, Triple

from reckon import EvaluationLimitExceeded, ReckonError, ResourceLimit
from reckon.datalog import Limits, Reasoner, parse_srl
from tests.conftest import REPO

P = "PREFIX : <http://ex/> "
GROW = P + "RULE :grow { ?x :p <<( ?x :p ?y )>> } WHERE { ?x :p ?y }"
CROSS = P + "RULE :cross { ?a :r ?b } WHERE { ?a :p ?x . ?b :q ?y }"


def n(x: str) -> NamedNode:
    return NamedNode("http://ex/" + x)


def _cross_base(k: int) -> list[Triple]:
    return [Triple(n(f"a{i}"), n("p"), n("x")) for i in range(k)] + [Triple(n(f"b{i}"), n("q"), n("y")) for i in range(k)]


_CHILD = """
import resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
from pyoxigraph import NamedNode as N, Triple
from reckon.datalog import Reasoner, parse_srl
from reckon import ResourceLimit
program, base = {program!r}, {base}
r = Reasoner(parse_srl(program))
t0 = time.perf_counter()
try:
    r.load(base)
except ResourceLimit as e:
    print("ResourceLimit", e.limit, e.rule, repr(str(e)))
    # the reasoner kept its (empty) state and still works
    r.load([Triple(N("http://ex/s"), N("http://ex/z"), N("http://ex/o"))])
    print("after", len(r.inferred()), len(r.base()), f"{{time.perf_counter() - t0:.1f}}")
else:
    print("finished", len(r.inferred()))
"""


def _run_child(program: str, base_expr: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "engine") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = textwrap.dedent(_CHILD.format(program=program, base=base_expr))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)


def test_ever_deeper_triple_terms_stop_at_default_limits_in_a_subprocess() -> None:
    """If a head nests triple terms forever (the Limits docstring's runaway), then at the
    default limits the child prints ResourceLimit (max_term_depth, rule :grow) and exits
    0: no SIGABRT, no SIGKILL, and the reasoner is usable afterwards."""
    proc = _run_child(GROW, '[Triple(N("http://ex/a"), N("http://ex/p"), N("http://ex/b"))]')
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    first, after = proc.stdout.splitlines()[:2]
    assert first.startswith("ResourceLimit max_term_depth")
    assert "max_term_depth=256" in first
    assert after.startswith("after 0 1 ")


def test_cross_product_of_nine_million_facts_stops_at_default_limits_in_a_subprocess() -> None:
    """If one rule's round is a 3,000 x 3,000 cross product (9M facts, under the 20M
    max_derived default, ~4.5 GB if completed), then at the default limits the round is
    stopped by the byte budget inside the round: ResourceLimit max_bytes naming the
    rule, exit code 0."""
    base = "[Triple(N(f'http://ex/a{i}'), N('http://ex/p'), N('http://ex/x')) for i in range(3000)]" \
        " + [Triple(N(f'http://ex/b{i}'), N('http://ex/q'), N('http://ex/y')) for i in range(3000)]"
    proc = _run_child(CROSS, base)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    first, after = proc.stdout.splitlines()[:2]
    assert first.startswith("ResourceLimit max_bytes <http://ex/cross>"), first
    assert "one round collected" in first
    assert after.startswith("after 0 1 ")


def test_byte_budget_stops_growth_and_keeps_state() -> None:
    """If the byte budget is small (max_bytes=64 MiB) and triple terms may nest without
    depth limit, then the memory check stops the growing program with limit
    'max_bytes', and the reasoner keeps its previous inference graph."""
    r = Reasoner(parse_srl(GROW + " RULE :ok { ?x :q ?y } WHERE { ?x :s ?y }"),
                 limits=Limits(max_bytes=64 << 20, max_term_depth=10**9))
    r.load([Triple(n("c"), n("s"), n("d"))])
    before = r.inferred()
    with pytest.raises(ResourceLimit) as info:
        r.load([Triple(n("a"), n("p"), n("b"))])
    e = info.value
    assert e.limit == "max_bytes" and e.value == 64 << 20 and e.rule == "<http://ex/grow>"
    assert e.observed > 0
    assert r.inferred() == before == {Triple(n("c"), n("q"), n("d"))}


def test_round_cap_stops_a_cross_product_inside_the_round() -> None:
    """If a round would collect more facts than max_derived allows, then it stops inside
    the round (before the facts are indexed): limit 'max_derived', the rule named."""
    r = Reasoner(parse_srl(CROSS), limits=Limits(max_derived=1000))
    with pytest.raises(ResourceLimit) as info:
        r.load(_cross_base(100))  # 10,000 facts in one round
    assert info.value.limit == "max_derived" and info.value.rule == "<http://ex/cross>"
    assert "one round of rule <http://ex/cross> collected" in str(info.value)
    assert r.inferred() == set()


def test_limit_in_apply_rolls_back_through_the_round_cap() -> None:
    """If an insertion makes the cross product too large during apply(), then the same
    limit stops maintenance and base and inference graph are exactly as before."""
    r = Reasoner(parse_srl(CROSS), limits=Limits(max_derived=1000))
    base = _cross_base(20)
    r.load(base)
    before_inf, before_base = r.inferred(), r.base()
    assert len(before_inf) == 400
    with pytest.raises(ResourceLimit):
        r.apply(insert=[Triple(n(f"a{i}"), n("p"), n("x")) for i in range(20, 200)])
    assert r.inferred() == before_inf and r.base() == before_base


def test_resource_limit_is_an_evaluation_limit_and_a_reckon_error() -> None:
    """ResourceLimit is caught by `except EvaluationLimitExceeded` and `except ReckonError`."""
    assert issubclass(ResourceLimit, EvaluationLimitExceeded) and issubclass(ResourceLimit, ReckonError)
    r = Reasoner(parse_srl(GROW), limits=Limits(max_rounds=5))
    with pytest.raises(EvaluationLimitExceeded) as info:
        r.load([Triple(n("a"), n("p"), n("b"))])
    assert isinstance(info.value, ResourceLimit) and info.value.limit == "max_rounds"
    assert info.value.value == 5 and info.value.observed == 6
