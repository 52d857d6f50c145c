"""Property test: incremental maintenance of the full OWL 2 RL program equals materialization
from scratch.

``rules/rdfs.srl`` + ``rules/owl2rl.srl`` is the hardest program Reckon ships: generalized
triples, helper facts, WHERE DATA rules maintained from base deltas, run-once SET rules,
owl:sameAs cliques, inconsistency marks. Random small graphs over a vocabulary that
exercises them (sameAs, inverse / functional / transitive / symmetric properties,
subclass / equivalent / disjoint classes, restrictions, lists, literals of several
datatypes, an ill-typed literal, owl:differentFrom and AllDifferent, disjoint and empty
properties) are changed by random insert / delete batches; after each
batch ``Reasoner.apply`` must give exactly ``materialize`` of the new base graph and the
same inconsistencies.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyoxigraph import BlankNode, Literal, NamedNode, Triple

from tests.reasoning.conftest import load_shipped

EX = "http://example.org/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
XSD = "http://www.w3.org/2001/XMLSchema#"

IND = [NamedNode(EX + x) for x in ("a", "b", "c", "d")]
CLS = [NamedNode(EX + x) for x in ("A", "B", "C")]
PROP = [NamedNode(EX + x) for x in ("p", "q", "r")]
LIT = [Literal("1", datatype=NamedNode(XSD + "integer")), Literal("01", datatype=NamedNode(XSD + "int")),
       Literal("2", datatype=NamedNode(XSD + "integer")), Literal("x"), Literal("abc", datatype=NamedNode(XSD + "integer"))]
TYPE, SUBC, SAME, RANGE = NamedNode(RDF + "type"), NamedNode(RDFS + "subClassOf"), NamedNode(OWL + "sameAs"), NamedNode(RDFS + "range")
R1 = BlankNode("r1")

FACTS = (
    [Triple(s, p, o) for s in IND for p in PROP for o in IND[:3]]
    + [Triple(s, p, lit) for s in IND[:2] for p in PROP[:2] for lit in LIT]
    + [Triple(x, TYPE, c) for x in IND for c in CLS]
    + [Triple(x, SAME, y) for x in IND[:3] for y in IND[1:]]
    + [Triple(a, SUBC, b) for a in CLS for b in CLS if a != b]
    + [Triple(a, NamedNode(OWL + k), b) for a in CLS for b in CLS if a != b for k in ("equivalentClass", "disjointWith")]
    + [Triple(p, TYPE, NamedNode(OWL + k)) for p in PROP
       for k in ("FunctionalProperty", "InverseFunctionalProperty", "TransitiveProperty", "SymmetricProperty")]
    + [Triple(PROP[0], NamedNode(OWL + "inverseOf"), PROP[1]), Triple(PROP[1], RANGE, NamedNode(XSD + "integer")),
       Triple(PROP[2], NamedNode(RDFS + "subPropertyOf"), PROP[0]), Triple(PROP[0], RANGE, CLS[2])]
    # a someValuesFrom restriction and an intersection list
    + [Triple(R1, NamedNode(OWL + "someValuesFrom"), CLS[1]), Triple(R1, NamedNode(OWL + "onProperty"), PROP[0]),
       Triple(CLS[0], NamedNode(OWL + "equivalentClass"), R1),
       Triple(CLS[2], NamedNode(OWL + "intersectionOf"), BlankNode("l1")),
       Triple(BlankNode("l1"), NamedNode(RDF + "first"), CLS[0]), Triple(BlankNode("l1"), NamedNode(RDF + "rest"), BlankNode("l2")),
       Triple(BlankNode("l2"), NamedNode(RDF + "first"), CLS[1]), Triple(BlankNode("l2"), NamedNode(RDF + "rest"), NamedNode(RDF + "nil"))]
    # owl:differentFrom, an AllDifferent list, disjoint properties, an empty (bottom) subproperty
    + [Triple(IND[0], NamedNode(OWL + "differentFrom"), IND[1]), Triple(IND[2], NamedNode(OWL + "differentFrom"), IND[3]),
       Triple(BlankNode("ad"), TYPE, NamedNode(OWL + "AllDifferent")),
       Triple(BlankNode("ad"), NamedNode(OWL + "members"), BlankNode("m1")),
       Triple(BlankNode("m1"), NamedNode(RDF + "first"), IND[1]), Triple(BlankNode("m1"), NamedNode(RDF + "rest"), BlankNode("m2")),
       Triple(BlankNode("m2"), NamedNode(RDF + "first"), IND[3]), Triple(BlankNode("m2"), NamedNode(RDF + "rest"), NamedNode(RDF + "nil")),
       Triple(PROP[1], NamedNode(OWL + "propertyDisjointWith"), PROP[2]),
       Triple(PROP[2], NamedNode(RDFS + "subPropertyOf"), NamedNode(OWL + "bottomObjectProperty"))]
)

facts = st.sampled_from(FACTS)


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Triple], list[tuple[list[Triple], list[Triple]]]]:
    base = draw(st.lists(facts, max_size=12, unique=True))
    steps, current = [], set(base)
    for _ in range(draw(st.integers(1, 3))):
        dels = draw(st.lists(st.sampled_from(sorted(current, key=str)), max_size=3)) if current else []
        ins = draw(st.lists(facts, max_size=4))
        steps.append((ins, dels))
        current = (current - set(dels)) | set(ins)
    return base, steps


PROGRAM = load_shipped("rdfs.srl", "owl2rl.srl")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_owl2rl_apply_equals_materialize(history: tuple) -> None:
    from reckon.datalog.evaluate import Reasoner

    base, steps = history
    r = Reasoner(PROGRAM)
    r.load(base)
    current = set(base)
    for ins, dels in steps:
        before = r.inferred()
        d = r.apply(insert=ins, delete=dels)
        current = (current - set(dels)) | set(ins)
        fresh = Reasoner(PROGRAM)
        fresh.load(current)
        after = r.inferred()
        assert after == fresh.inferred()
        assert d.added == after - before and d.removed == before - after
        assert [i.node for i in r.inconsistencies()] == [i.node for i in fresh.inconsistencies()]
