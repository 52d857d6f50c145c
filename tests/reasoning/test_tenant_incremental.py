"""Property test through a Tenant: the stored inference graph after any history of
business-data writes equals a fresh materialization of what is asserted.

A tenant whose program is the shipped OWL 2 RL program (``rules/rdfs.srl`` +
``rules/owl2rl.srl``) plus a custom rule module (a join over the OWL RL closure and a
``WHERE DATA`` rule, maintained from base-graph deltas; a negation over any predicate
cannot be stratified with OWL RL's variable-predicate rules) takes random batches
of inserts and deletes in its business-data graph, each one store transaction
(``TenantStore.transaction``: the tenant's write path, its reasoner maintained by
``Reasoner.apply``). After every batch the tenant's stored inferred graph
(``TenantStore.inferred``) must equal the inferred graph of a new reasoner of the
tenant's own program (``Program.reasoner_factory``) loaded with every asserted triple,
and the inconsistencies must agree. Hub facts (wide ``rdf:type`` fan-out through
subclasses, domains and ranges, an owl:sameAs clique) are in the vocabulary so that
over-deletion has something to over-delete.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyoxigraph import NamedNode, Quad, Triple

from reckon.api import Engine
from reckon.store.graphs import BUSINESS
from tests.reasoning.conftest import RULES_DIR

EX = "http://example.org/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
TYPE, SUBC = NamedNode(RDF + "type"), NamedNode(RDFS + "subClassOf")

IND = [NamedNode(EX + x) for x in ("a", "b", "c", "d")]
CLS = [NamedNode(EX + x) for x in ("A", "B", "C", "D")]
PROP = [NamedNode(EX + x) for x in ("p", "q")]

CUSTOM = """PREFIX ex: <http://example.org/>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
# a join over the OWL RL closure (p after q)
RULE ex:chain { ?x ex:pq ?z } WHERE { ?x ex:p ?y . ?y ex:q ?z }
# an asserted p-edge makes its subject a source (WHERE DATA: the base graph only)
RULE ex:source { ?x rdf:type ex:Source } WHERE DATA { ?x ex:p ?y }
"""

FACTS = (
    [Triple(s, p, o) for s in IND for p in PROP for o in IND]
    + [Triple(x, TYPE, c) for x in IND for c in CLS]
    + [Triple(a, SUBC, b) for a in CLS for b in CLS if a != b]
    + [Triple(x, NamedNode(OWL + "sameAs"), y) for x in IND[:2] for y in IND[2:]]
    + [Triple(PROP[0], NamedNode(RDFS + "domain"), CLS[0]), Triple(PROP[1], NamedNode(RDFS + "range"), CLS[1]),
       Triple(PROP[0], NamedNode(OWL + "inverseOf"), PROP[1]),
       Triple(PROP[1], TYPE, NamedNode(OWL + "TransitiveProperty")),
       Triple(PROP[0], TYPE, NamedNode(OWL + "SymmetricProperty")),
       Triple(CLS[2], NamedNode(OWL + "disjointWith"), CLS[3])]
)

batch = st.tuples(st.lists(st.sampled_from(FACTS), max_size=6), st.lists(st.sampled_from(FACTS), max_size=6))


def _closure_of(tenant) -> tuple[set[Triple], int]:  # noqa: ANN001
    """(inferred graph, number of inconsistent nodes) of a fresh reasoner of the tenant's
    program over everything the tenant asserts."""
    r = tenant.program().reasoner_factory()()
    r.load({q.triple for q in tenant.store.asserted()})
    return r.inferred(), len(r.inconsistencies())


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(history=st.lists(batch, min_size=1, max_size=5))
def test_tenant_writes_keep_the_inferred_graph_equal_to_a_fresh_materialization(
        tmp_path_factory, history: list[tuple[list[Triple], list[Triple]]]) -> None:
    d: Path = tmp_path_factory.mktemp("tenant")
    (d / "custom.srl").write_text(CUSTOM, encoding="utf-8")
    engine = Engine(d / "data", rules=[str(RULES_DIR / "rdfs.srl"), str(RULES_DIR / "owl2rl.srl"),
                                       str(d / "custom.srl")])
    tenant = engine.create_tenant("acme")
    for inserts, deletes in history:
        with tenant.store.transaction() as txn:
            for t in deletes:
                txn.remove(Quad(t.subject, t.predicate, t.object, BUSINESS))
            for t in inserts:
                txn.add(Quad(t.subject, t.predicate, t.object, BUSINESS))
        want, bad = _closure_of(tenant)
        got = tenant.store.inferred()
        assert got == want, (sorted(map(str, got - want))[:5], sorted(map(str, want - got))[:5])
        assert len(tenant.store.reasoner().inconsistencies()) == bad
    # the history reached the derived vocabulary (the test is not vacuous)
    assert any(t.predicate == TYPE for t in tenant.store.inferred())
