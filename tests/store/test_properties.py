"""Property-based tests (hypothesis): whatever sequence of transactions runs, the stored
inferred graph equals a recomputation from scratch over the union of the asserted graphs,
and export -> import gives an isomorphic store (STYLE.md, "Tests")."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyoxigraph import BlankNode, NamedNode, Quad, Triple

from reckon.store import BUSINESS, MEMORIES, SCHEMA
from tests.store.toy_reasoner import SUB, TYPE, ToyReasoner, closure

NODES = [NamedNode(f"urn:x:{c}") for c in "abcde"] + [BlankNode("b0")]
GRAPHS = [SCHEMA, MEMORIES, BUSINESS]

quad = st.builds(
    Quad,
    st.sampled_from(NODES),
    st.sampled_from([SUB, TYPE]),
    st.sampled_from(NODES),
    st.sampled_from(GRAPHS),
)
op = st.tuples(st.booleans(), quad)
txn = st.lists(op, min_size=1, max_size=4)
_ids = itertools.count()


def _canonical(triples: set[Triple]) -> set[Quad]:
    """The triples with blank nodes renamed canonically (RDF Dataset Canonicalization)."""
    from pyoxigraph import CanonicalizationAlgorithm, Dataset, DefaultGraph

    ds = Dataset(Quad(t.subject, t.predicate, t.object, DefaultGraph()) for t in triples)
    ds.canonicalize(CanonicalizationAlgorithm.UNSTABLE)
    return set(ds)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(transactions=st.lists(txn, min_size=1, max_size=6))
def test_incremental_equals_from_scratch_and_export_round_trips(
    create_store, transactions: list[list[tuple[bool, Quad]]]  # type: ignore[no-untyped-def]
) -> None:
    """On every backend (tests/store/conftest.py); tenant ids are fresh per example."""
    k = next(_ids)
    store = create_store(f"p{k}", reasoner_factory=ToyReasoner)
    model: set[Quad] = set()
    for ops in transactions:
        with store.transaction() as t:
            for add, q in ops:
                (t.add if add else t.remove)(q)
        for add, q in ops:
            (model.add if add else model.discard)(q)
        assert store.asserted() == model
        base = {Triple(q.subject, q.predicate, q.object) for q in model}
        assert store.inferred() == closure(base)
    exported = store.export_trig()
    copy = create_store(f"c{k}", reasoner_factory=ToyReasoner)
    copy.import_trig(exported)
    assert copy.verify_export(exported)
    assert store.verify_export(copy.export_trig())
    assert _canonical(copy.inferred()) == _canonical(store.inferred())
    store.close()
    copy.close()
