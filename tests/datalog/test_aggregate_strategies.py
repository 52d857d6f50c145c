"""AGGREGATE evaluation strategies (reckon.datalog._plan.AGGREGATE_STRATEGY) agree.

The reference ``"nested"`` evaluates the aggregate body once per outer solution with the
outer bindings (model.Aggregate). ``"memo"`` evaluates an uncorrelated inner join once
per plan call and the correlated filters per outer solution; ``"index"`` additionally
answers ``COUNT`` over one order comparison by bisecting the sorted inner values, with
SPARQL comparison semantics (SPARQL 1.1 section 17.3 operator mapping): values of
different kinds, NaN, ill-typed literals, IRIs and language-tagged strings must give
exactly what the reference gives (an error drops the inner solution).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyoxigraph import Literal, NamedNode, Triple

from reckon.datalog import _plan
from reckon.datalog.evaluate import Reasoner
from reckon.datalog.srl import parse_srl

EX = "http://ex/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
PREFIX = "PREFIX : <http://ex/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
STRATEGIES = ("nested", "memo", "index")


def lit(value: str, dt: str) -> Literal:
    return Literal(value, datatype=NamedNode(XSD + dt))


# values of every comparison class the index handles, with ties across lexical forms /
# time zones, plus values it must leave to the general path
INTS = [lit(str(i), "integer") for i in range(-2, 5)] + [lit("03", "integer"), lit("2", "int")]
DECS = [lit(v, "decimal") for v in ("1.0", "2.5", "-0.5", "3.00")]
DOUBLES = [lit(v, "double") for v in ("1.0E0", "2.5E0", "-INF", "INF", "0.0E0", "-0.0E0")]
FLOATS = [lit(v, "float") for v in ("1.5", "2")]
STRINGS = [Literal(v) for v in ("", "a", "ab", "b", "B", "é", "a b")]
DATETIMES = [
    lit(v, "dateTime")
    for v in (
        "2026-03-01T10:00:00Z",
        "2026-03-01T12:00:00+02:00",  # the same instant as the previous one
        "2026-03-01T10:00:00.5Z",
        "2026-03-01T05:00:00-05:00",
        "2026-03-01T10:00:00",  # no time zone: taken as Z
        "2026-02-28T23:59:59.999Z",
    )
]
BOOLS = [lit("true", "boolean"), lit("false", "boolean")]
ODD = [
    lit("NaN", "double"),
    lit("abc", "integer"),  # ill-typed: an error when compared
    lit("2026-03-01", "date"),
    Literal("a", language="en"),
    NamedNode(EX + "iri"),
    lit("P1D", "dayTimeDuration"),
    lit("x", "http://ex/unknown"),
]
HOMOGENEOUS = [INTS + DECS, DOUBLES, FLOATS, STRINGS, DATETIMES, BOOLS]


def load(rules: str, base: list[Triple], strategy: str, monkeypatch: pytest.MonkeyPatch) -> Reasoner:
    monkeypatch.setattr(_plan, "AGGREGATE_STRATEGY", strategy)
    r = Reasoner(parse_srl(PREFIX + rules))
    r.load(base)
    return r


def agree(rules: str, base: list[Triple], monkeypatch: pytest.MonkeyPatch) -> set[Triple]:
    """The inference graph, asserted equal under every strategy."""
    got = {s: load(rules, base, s, monkeypatch).inferred() for s in STRATEGIES}
    assert got["memo"] == got["nested"]
    assert got["index"] == got["nested"]
    return got["nested"]


def base_of(items: list[tuple[int, object]]) -> list[Triple]:
    """``:n<i> :key v`` for each (i, v) (a subject may have several keys) and ``a :C``."""
    out = []
    for i, v in items:
        s = NamedNode(f"{EX}n{i}")
        out.append(Triple(s, NamedNode(EX + "key"), v))  # type: ignore[arg-type]
        out.append(Triple(s, RDF_TYPE, NamedNode(EX + "C")))
    return out


COUNT_RULES = [
    # inner op outer, COUNT(DISTINCT ?o)
    "RULE { ?m :ahead ?n } WHERE { ?m :key ?k . AGGREGATE(?n := COUNT(DISTINCT ?o)) { ?o :key ?k2 . FILTER(?k2 {op} ?k) } }",
    # outer op inner (flipped), COUNT(*)
    "RULE { ?m :ahead ?n } WHERE { ?m :key ?k . AGGREGATE(?n := COUNT(*)) { ?o a :C ; :key ?k2 . FILTER(?k {op} ?k2) } }",
    # COUNT(?o) with an uncorrelated filter before the correlated one
    "RULE { ?m :ahead ?n } WHERE { ?m :key ?k . AGGREGATE(?n := COUNT(?o)) { ?o :key ?k2 . FILTER(!isIRI(?k2)) FILTER(?k2 {op} ?k) } }",
    # expressions on both sides (STR errors on nothing; + errors on non-numerics)
    "RULE { ?m :ahead ?n } WHERE { ?m :key ?k . AGGREGATE(?n := COUNT(DISTINCT ?o)) { ?o :key ?k2 . FILTER(?k2 + 0 {op} ?k + 0) } }",
]
OTHER_RULES = [
    # correlated filters the index does not handle: memo path only
    "RULE { ?m :ahead ?n } WHERE { ?m :key ?k . AGGREGATE(?n := COUNT(DISTINCT ?o)) { ?o :key ?k2 . FILTER(?k2 < ?k || sameTerm(?o, ?m)) } }",
    "RULE { ?m :sum ?n } WHERE { ?m :key ?k . AGGREGATE(?n := SUM(?k2)) { ?o :key ?k2 . FILTER(?k2 <= ?k) } }",
    "RULE { ?m :max ?n } WHERE { ?m :key ?k . AGGREGATE(?n := MAX(?k2)) { ?o :key ?k2 . FILTER(?k2 < ?k) } }",
    "RULE { ?m :avg ?n } WHERE { ?m :key ?k . AGGREGATE(?n := AVG(DISTINCT ?k2)) { ?o :key ?k2 . FILTER(?k > ?k2) } }",
    # correlated through a pattern: nested everywhere
    "RULE { ?m :ahead ?n } WHERE { ?m :key ?k . AGGREGATE(?n := COUNT(?k2)) { ?m :key ?k2 . FILTER(?k2 < ?k) } }",
]
OPS = ["<", "<=", ">", ">="]

values = st.sampled_from(INTS + DECS + DOUBLES + FLOATS + STRINGS + DATETIMES + BOOLS + ODD)


@st.composite
def candidate_sets(draw: st.DrawFn) -> list[tuple[int, object]]:
    """Random keyed candidates: mostly one comparison class (so the index is used),
    sometimes mixed numeric types, a few non-comparable values, repeated subjects."""
    n = draw(st.integers(0, 14))
    pool = draw(st.sampled_from([*HOMOGENEOUS, INTS + DECS + DOUBLES, None]))
    vals = st.sampled_from(pool) if pool is not None else values
    items = [(draw(st.integers(0, 9)), draw(vals)) for _ in range(n)]
    if draw(st.booleans()):
        items += [(draw(st.integers(0, 9)), draw(values)) for _ in range(draw(st.integers(1, 2)))]
    return items


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=candidate_sets(), shape=st.sampled_from(COUNT_RULES), op=st.sampled_from(OPS))
def test_count_over_an_order_comparison_is_the_same_under_every_strategy(monkeypatch, items, shape, op):
    """If COUNT aggregates over one order comparison of an inner and an outer value,
    then nested, memoised and indexed evaluation derive the same counts."""
    agree(shape.replace("{op}", op), base_of(items), monkeypatch)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=candidate_sets(), rule=st.sampled_from(OTHER_RULES))
def test_other_aggregates_are_the_same_under_every_strategy(monkeypatch, items, rule):
    """If an aggregate's correlation is not one order comparison (or goes through a
    pattern), then memoised evaluation still equals the nested reference."""
    agree(rule, base_of(items), monkeypatch)


def test_counts_are_the_ranks_computed_in_python(monkeypatch):
    """If 200 integer keys (with ties) are counted with ``<`` and ``COUNT(DISTINCT)``,
    then each count is the number of distinct subjects with a smaller key."""
    rnd = random.Random(3)
    keys = {i: rnd.randint(0, 40) for i in range(200)}
    base = base_of([(i, lit(str(k), "integer")) for i, k in keys.items()])
    inferred = agree(COUNT_RULES[0].replace("{op}", "<"), base, monkeypatch)
    got = {t.subject.value: int(t.object.value) for t in inferred}
    want = {f"{EX}n{i}": sum(1 for k2 in keys.values() if k2 < k) for i, k in keys.items()}
    assert got == want


def test_the_index_answers_homogeneous_values(monkeypatch):
    """If every compared value is of one class, then the index (not the general path)
    answers every outer solution; a mixed set falls back and still agrees."""
    answered = []
    real = _plan._OrderIndex.count

    def spy(self, outer, row, ctx):
        got = real(self, outer, row, ctx)
        answered.append(got is not None)
        return got

    monkeypatch.setattr(_plan._OrderIndex, "count", spy)
    rule = COUNT_RULES[0].replace("{op}", "<")
    for pool in HOMOGENEOUS:
        answered.clear()
        base = base_of(list(enumerate(pool)))
        load(rule, base, "index", monkeypatch)
        assert answered and all(answered), pool
    answered.clear()
    mixed = base_of(list(enumerate(INTS[:3] + STRINGS[:3])))
    agree(rule, mixed, monkeypatch)
    assert not any(answered)  # the build refused (two classes): the general path ran


def test_order_key_classes():
    """If two literals are in one class of _order_key, then their keys order them as SPARQL
    does; NaN, language-tagged strings, durations and IRIs have no key."""
    k = _plan._order_key
    assert k(lit("03", "integer")) == ("exact", 3)
    assert k(lit("2.50", "decimal"))[0] == "exact"
    assert k(lit("1", "integer"))[1] < k(lit("1.5", "decimal"))[1]
    assert k(lit("1.5", "float"))[0] == "float" and k(lit("1.5", "double"))[0] == "double"
    assert k(DATETIMES[0])[1] == k(DATETIMES[1])[1]  # same instant, two offsets
    assert k(DATETIMES[0])[1] < k(DATETIMES[2])[1]
    assert k(lit("2026-03-01", "date"))[0] != k(DATETIMES[0])[0]
    for odd in (lit("NaN", "double"), Literal("a", language="en"), lit("P1D", "dayTimeDuration"),
                NamedNode(EX + "x"), lit("abc", "integer")):
        assert k(odd) is None


CAP_RULES = """
RULE { ?m :rankKey ?key } WHERE { ?m a :C ; :imp ?i . SET(?key := CONCAT(STR(100 - ?i), " ", STR(?m))) }
RULE { :ctx :member ?m } WHERE {
  ?m :rankKey ?key . :s :cap ?cap .
  AGGREGATE(?ahead := COUNT(DISTINCT ?o)) { ?o :rankKey ?k2 . FILTER(?k2 < ?key) }
  FILTER(?ahead < ?cap)
}
"""


def _cap_fact(i: int) -> Triple:
    return Triple(NamedNode(EX + "s"), NamedNode(EX + "cap"), lit(str(i), "integer"))


def _member_facts(i: int, imp: int) -> list[Triple]:
    s = NamedNode(f"{EX}m{i:02d}")
    return [Triple(s, RDF_TYPE, NamedNode(EX + "C")), Triple(s, NamedNode(EX + "imp"), lit(str(imp), "integer"))]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_incremental_cap_equals_a_fresh_evaluation(monkeypatch, data):
    """If candidates and the cap are inserted and deleted at random, then after every
    apply() the indexed, incrementally maintained capped set equals a fresh evaluation
    under the nested reference."""
    monkeypatch.setattr(_plan, "AGGREGATE_STRATEGY", "index")
    rs = parse_srl(PREFIX + CAP_RULES)
    r = Reasoner(rs)
    universe = {i: data.draw(st.integers(1, 5)) for i in range(20)}
    present = set(data.draw(st.sets(st.sampled_from(sorted(universe)), max_size=12)))
    cap = data.draw(st.integers(0, 6))
    r.load([f for i in present for f in _member_facts(i, universe[i])] + [_cap_fact(cap)])
    for _ in range(data.draw(st.integers(1, 6))):
        ins: list[Triple] = []
        dels: list[Triple] = []
        for i in data.draw(st.sets(st.sampled_from(sorted(universe)), max_size=4)):
            (dels if i in present else ins).extend(_member_facts(i, universe[i]))
            present ^= {i}
        if data.draw(st.booleans()):
            new = data.draw(st.integers(0, 6))
            dels.append(_cap_fact(cap))
            ins.append(_cap_fact(new))
            cap = new
        r.apply(insert=ins, delete=dels)
        monkeypatch.setattr(_plan, "AGGREGATE_STRATEGY", "nested")
        fresh = Reasoner(rs)
        fresh.load(r.base())
        monkeypatch.setattr(_plan, "AGGREGATE_STRATEGY", "index")
        assert r.inferred() == fresh.inferred()
        members = {t.object.value for t in r.inferred() if t.predicate.value == EX + "member"}
        ranked = sorted(present, key=lambda i: (-universe[i], f"{EX}m{i:02d}"))
        assert members == {f"{EX}m{i:02d}" for i in ranked[:cap]}
