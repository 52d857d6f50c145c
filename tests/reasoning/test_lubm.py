"""LUBM(1) materialized with ``rules/rdfs.srl`` + ``rules/owl2rl.srl``: each of the 14 LUBM
queries returns exactly the official reference answers.

Data, IRI mapping, queries and answers: ``bench/lubm.py`` (``../shared/data/lubm``). The
queries run with pyoxigraph over base + inferred triples in an in-memory Store; answers
are compared as sets of tuples (IRIs as strings, literals as lexical forms).

What each query needs from the rules (LUBM paper, query comments):
Q1 none; Q2 none; Q3 none; Q4 cax-sco (Professor); Q5 scm-spo/prp-spo1 (worksFor ⊑
memberOf) + cax-sco (Person); Q6 cls-int1 + cls-svf1 (Student = Person ⊓ ∃takesCourse.Course);
Q7 cls-int1; Q8 subOrganizationOf + Student; Q9 Student, Faculty, Course; Q10 Student;
Q11 prp-trp (subOrganizationOf); Q12 cls-int1 + cls-svf1 (Chair = Person ⊓ ∃headOf.Department);
Q13 prp-inv1/2 + prp-spo1 (hasAlumnus = degreeFrom⁻); Q14 none.
"""

from __future__ import annotations

import pytest
from bench.lubm import QUERY_NUMBERS, base_triples, run_query, store_of  # tests/reasoning/conftest.py puts the repo root on sys.path

from tests.reasoning.conftest import load_shipped


@pytest.fixture(scope="module")
def materialized(lubm_dir):
    """(Reasoner, Store of base + inferred) for LUBM(1) under rdfs.srl + owl2rl.srl."""
    from reckon.datalog.evaluate import Reasoner

    reasoner = Reasoner(load_shipped("rdfs.srl", "owl2rl.srl"))
    reasoner.load(base_triples(lubm_dir))
    return reasoner, store_of(reasoner.base(), reasoner.inferred())


@pytest.mark.parametrize("n", QUERY_NUMBERS, ids=[f"q{n}" for n in QUERY_NUMBERS])
def test_lubm_query_matches_reference(n: int, materialized, lubm_dir) -> None:
    _, store = materialized
    actual, expected = run_query(store, lubm_dir, n)
    assert len(actual) == len(expected)
    assert actual == expected, (sorted(expected - actual)[:5], sorted(actual - expected)[:5])


def test_lubm_queries_need_inference(lubm_dir) -> None:
    """The base graph alone misses answers (so the per-query tests exercise the rules):
    Q6 (Student) has none without cls-int1/cls-svf1, Q13 (hasAlumnus) none without prp-inv."""
    store = store_of(base_triples(lubm_dir))
    for n in (6, 12, 13):
        actual, expected = run_query(store, lubm_dir, n)
        assert expected and not actual, n


def test_lubm_inferred_graph_shape(materialized) -> None:
    """The inferred graph is disjoint from the base graph, has only RDF/RDFS/OWL and
    univ-bench predicates (the owl2rl.srl helper facts, urn:reckon:internal:, stay in the
    evaluation graph), and LUBM(1) is consistent: nothing is in owl:Nothing."""
    reasoner, _ = materialized
    base, inferred = reasoner.base(), reasoner.inferred()
    assert not base & inferred
    preds = {t.predicate.value for t in inferred}
    known = ("http://www.w3.org/1999/02/22-rdf-syntax-ns#", "http://www.w3.org/2000/01/rdf-schema#",
             "http://www.w3.org/2002/07/owl#", "http://www.lehigh.edu/~zhp2/2004/0401/univ-bench.owl#")
    assert {p for p in preds if not p.startswith(known)} == set()
    assert not any("urn:reckon:internal:" in str(t) for t in inferred)
    assert reasoner.inconsistencies() == []


def test_lubm_incremental_delete_and_reinsert_equal_recompute(materialized, lubm_dir) -> None:
    """DRed / semi-naive maintenance on LUBM(1): deleting every `headOf` fact and a
    `subOrganizationOf` fact (Chair, Q12, the transitive prp-trp chain) gives the inferred
    graph of a from-scratch run on the smaller base; re-inserting them gives the original."""
    from pyoxigraph import NamedNode

    from reckon.datalog.evaluate import Reasoner

    original, _ = materialized
    base = base_triples(lubm_dir)
    head_of = NamedNode("http://www.lehigh.edu/~zhp2/2004/0401/univ-bench.owl#headOf")
    sub_org = NamedNode("http://www.lehigh.edu/~zhp2/2004/0401/univ-bench.owl#subOrganizationOf")
    changed = [t for t in base if t.predicate == head_of] + [next(t for t in base if t.predicate == sub_org)]
    assert len(changed) == 16
    smaller = [t for t in base if t not in set(changed)]

    r = Reasoner(load_shipped("rdfs.srl", "owl2rl.srl"))
    r.load(base)
    delta = r.apply(delete=changed)
    fresh = Reasoner(load_shipped("rdfs.srl", "owl2rl.srl"))
    fresh.load(smaller)
    assert r.inferred() == fresh.inferred()
    assert delta.removed == original.inferred() - fresh.inferred()
    assert delta.added == fresh.inferred() - original.inferred()
    actual, expected = run_query(store_of(r.base(), r.inferred()), lubm_dir, 12)
    assert expected and not actual

    r.apply(insert=changed)
    assert r.inferred() == original.inferred()


def test_lubm_incremental_delete_of_a_random_sample_equals_recompute(materialized, lubm_dir) -> None:
    """Deleting 100 asserted instance facts drawn at random (seeded; rdf:type facts among
    them, the wide fan-out DRed over-deletes through) and re-inserting them: each step's
    inferred graph equals a from-scratch run on that base graph (bench/reasoning.py times
    the same operation on LUBM(10))."""
    import random

    from bench.lubm import UB
    from pyoxigraph import NamedNode

    from reckon.datalog.evaluate import Reasoner

    original, _ = materialized
    base = list(base_triples(lubm_dir))
    instance = [t for t in base if isinstance(t.subject, NamedNode) and not t.subject.value.startswith(UB)]
    sample = random.Random(13).sample(instance, 100)
    assert any(t.predicate.value.endswith("#type") for t in sample)
    program = load_shipped("rdfs.srl", "owl2rl.srl")
    r = Reasoner(program)
    r.load(base)
    r.apply(delete=sample)
    fresh = Reasoner(program)
    fresh.load([t for t in base if t not in set(sample)])
    assert r.inferred() == fresh.inferred()
    r.apply(insert=sample)
    assert r.inferred() == original.inferred()
