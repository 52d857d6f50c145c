"""Inconsistency as a first-class result (issue 13, item 2).

A rule whose head is ``false`` in OWL 2 RL derives ``?x rdf:type owl:Nothing`` (RDFox
convention). ``Reasoner.inconsistencies()`` lists each with rule, clashing facts and
explanation; ``reckon infer`` prints them and exits 1; with ``refuse_inconsistent`` a
change that makes the graph inconsistent is refused and nothing changes — in the reasoner
and in the tenant store that asked for the write.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import NamedNode, Quad, RdfFormat, Triple, parse

from reckon import InconsistentGraph
from tests.cli.conftest import run_cli
from tests.reasoning.conftest import load_shipped

EX = "http://example.org/"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
NOTHING = NamedNode("http://www.w3.org/2002/07/owl#Nothing")
DISJOINT = NamedNode("http://www.w3.org/2002/07/owl#disjointWith")


def n(x: str) -> NamedNode:
    return NamedNode(EX + x)


def ttl(text: str) -> list[Triple]:
    head = "@prefix : <http://example.org/> . @prefix owl: <http://www.w3.org/2002/07/owl#> . " \
           "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . "
    return [q.triple for q in parse((head + text).encode(), format=RdfFormat.TURTLE)]


@pytest.fixture(scope="module")
def owl():
    return load_shipped("rdfs.srl", "owl2rl.srl")


def test_inconsistency_names_rule_facts_and_explanation(owl) -> None:
    """If :x is in two disjoint classes, then inconsistencies() reports :x with rule
    cax-dw, the three clashing facts, and an explanation tree that renders them."""
    from reckon.datalog import Reasoner

    r = Reasoner(owl)
    r.load(ttl(":A owl:disjointWith :B . :x a :A, :B . :y a :A ."))
    (inc,) = r.inconsistencies()
    assert inc.node == n("x") and inc.rule == "<urn:reckon:rule:cax-dw>"
    assert set(inc.facts) == {Triple(n("A"), DISJOINT, n("B")), Triple(n("x"), RDF_TYPE, n("A")), Triple(n("x"), RDF_TYPE, n("B"))}
    assert inc.triple == Triple(n("x"), RDF_TYPE, NOTHING) and inc.triple in r.inferred()
    text = inc.render()
    assert "by rule rr:cax-dw" in text and "owl:disjointWith" in text and "[asserted]" in text


def test_asserted_nothing_is_reported_and_consistent_graph_has_none(owl) -> None:
    from reckon.datalog import Reasoner

    r = Reasoner(owl)
    r.load(ttl(":x a owl:Nothing ."))
    (inc,) = r.inconsistencies()
    assert inc.rule == "asserted" and inc.explanation is None and "asserted" in inc.render()
    r.load(ttl(":A owl:disjointWith :B . :x a :A . :y a :B . :C rdfs:subClassOf owl:Nothing ."))
    assert r.inconsistencies() == []


def test_refuse_inconsistent_rolls_back_the_change(owl) -> None:
    """If the reasoner refuses inconsistency, then an apply() that would put a node in
    owl:Nothing raises InconsistentGraph naming it, and base and inference graph are
    exactly as before; a consistent change after it is applied normally."""
    from reckon.datalog import Reasoner

    r = Reasoner(owl, refuse_inconsistent=True)
    r.load(ttl(":A owl:disjointWith :B . :x a :A ."))
    before_inf, before_base = r.inferred(), r.base()
    with pytest.raises(InconsistentGraph) as info:
        r.apply(insert=[Triple(n("x"), RDF_TYPE, n("B"))])
    assert [i.node for i in info.value.inconsistencies] == [n("x")]
    assert "cax-dw" in str(info.value)
    assert r.inferred() == before_inf and r.base() == before_base
    d = r.apply(insert=[Triple(n("y"), RDF_TYPE, n("B"))])
    assert Triple(n("y"), RDF_TYPE, n("B")) not in d.added and r.inconsistencies() == []


def test_refusal_is_off_by_default_and_load_never_refuses(owl) -> None:
    from reckon.datalog import Reasoner

    r = Reasoner(owl)
    r.load(ttl(":A owl:disjointWith :B . :x a :A ."))
    r.apply(insert=[Triple(n("x"), RDF_TYPE, n("B"))])
    assert [i.node for i in r.inconsistencies()] == [n("x")]
    strict = Reasoner(owl, refuse_inconsistent=True)
    strict.load(ttl(":A owl:disjointWith :B . :x a :A, :B ."))  # reported, not refused
    assert len(strict.inconsistencies()) == 1


def test_store_write_that_makes_the_tenant_inconsistent_is_refused(tmp_path: Path) -> None:
    """If a tenant store's reasoners refuse inconsistency (Engine.reasoner_factory(
    refuse_inconsistent=True)), then a write whose consequence is a node in owl:Nothing
    raises InconsistentGraph and the store is unchanged: its N-Quads dump byte for byte
    and its generation (no commit); a consistent write commits."""
    from reckon.api import Engine
    from reckon.store import BUSINESS, TenantStore

    engine = Engine(tmp_path / "data", rules=["rdfs.srl", "owl2rl.srl"])
    factory = engine.reasoner_factory(refuse_inconsistent=True)
    store = TenantStore.create(
        tmp_path / "t", "t",
        initial=[Quad(n("A"), DISJOINT, n("B"), BUSINESS), Quad(n("x"), RDF_TYPE, n("A"), BUSINESS)],
        reasoner_factory=factory,
    )
    asserted, inferred = store.asserted(), store.inferred()
    dump, generation = store.dump(), store.generation()
    with pytest.raises(InconsistentGraph):
        with store.transaction() as txn:
            txn.add(Quad(n("x"), RDF_TYPE, n("B"), BUSINESS))
    assert store.asserted() == asserted and store.inferred() == inferred
    assert store.dump() == dump and store.generation() == generation  # byte for byte, no commit
    with store.transaction() as txn:
        txn.add(Quad(n("y"), RDF_TYPE, n("B"), BUSINESS))
    assert Quad(n("y"), RDF_TYPE, n("B"), BUSINESS) in store.asserted()
    store.close()


def test_reckon_infer_prints_inconsistencies_and_exits_1(tmp_path: Path) -> None:
    """`reckon infer` writes the inferred graph, then prints each inconsistency (node,
    rule, clashing facts, explanation) on stderr and exits 1; a consistent input exits 0."""
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix : <http://example.org/> . @prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
                   ":p a owl:IrreflexiveProperty . :x :p :x .\n")
    out = tmp_path / "out.nt"
    r = run_cli(tmp_path, "infer", "--rules", "rdfs.srl", "--rules", "owl2rl.srl", str(bad), "-o", str(out))
    assert r.code == 1
    assert "inconsistent: 1 node in owl:Nothing" in r.err and "prp-irp" in r.err
    assert "clashing fact: <http://example.org/x> <http://example.org/p> <http://example.org/x>" in r.err
    assert "<http://example.org/x> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://www.w3.org/2002/07/owl#Nothing>" in out.read_text()
    good = tmp_path / "good.ttl"
    good.write_text("@prefix : <http://example.org/> .\n:x :p :y .\n")
    r = run_cli(tmp_path, "infer", "--rules", "rdfs.srl", "--rules", "owl2rl.srl", str(good), "-o", str(out))
    assert r.code == 0 and "inconsistent" not in r.err


def test_reckon_infer_axiomatic_adds_the_axiomatic_triples(tmp_path: Path) -> None:
    """`--axiomatic` loads rdfs-axioms.srl: an empty-ish graph entails `rdf:type rdf:type
    rdf:Property` and `rdfs:Datatype rdfs:subClassOf rdfs:Class`; without it, not."""
    data = tmp_path / "d.ttl"
    data.write_text('@prefix : <http://example.org/> .\n:x :p "5"^^<http://www.w3.org/2001/XMLSchema#integer> .\n')
    out = tmp_path / "o.nt"
    assert run_cli(tmp_path, "infer", "--rules", "rdfs.srl", "--axiomatic", str(data), "-o", str(out)).code == 0
    text = out.read_text()
    assert "<http://www.w3.org/2000/01/rdf-schema#Datatype> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <http://www.w3.org/2000/01/rdf-schema#Class>" in text
    assert "_:" in text and "<http://www.w3.org/2001/XMLSchema#integer> ." in text  # rdfD1: `:x :p _:n . _:n a xsd:integer`
    assert run_cli(tmp_path, "infer", "--rules", "rdfs.srl", str(data), "-o", str(out)).code == 0
    assert "rdf-schema#Class>" not in out.read_text()


def test_tenant_validate_reports_the_inconsistency(tmp_path: Path) -> None:
    """A tenant whose rules (rdfs.srl + owl2rl.srl) derive an inconsistency from its
    business data is not conformant: `tenant validate`'s report lists the node, the rule
    and the explanation. The shipped ontology and shapes alone are consistent."""
    from reckon.api import Engine
    from reckon.cli._tenant import validate_tenant
    from reckon.store import BUSINESS

    engine = Engine(tmp_path / "data", rules=["rdfs.srl", "owl2rl.srl"])
    t = engine.create_tenant("acme")
    report = validate_tenant(t)
    assert report["conforms"] is True and report["inconsistencies"] == []
    with t.store.transaction() as txn:
        for s, p, o in ((n("A"), DISJOINT, n("B")), (n("x"), RDF_TYPE, n("A")), (n("x"), RDF_TYPE, n("B"))):
            txn.add(Quad(s, p, o, BUSINESS))
    report = validate_tenant(t)
    assert report["conforms"] is False
    (inc,) = report["inconsistencies"]
    assert inc["node"] == "<http://example.org/x>" and inc["rule"] == "<urn:reckon:rule:cax-dw>"
    assert "owl:disjointWith" in inc["explanation"]


def test_engine_that_refuses_inconsistency_refuses_the_tenant_write(tmp_path: Path) -> None:
    """If the Engine says refuse_inconsistent=True, then a tenant's write whose consequence
    is a node in owl:Nothing raises InconsistentGraph and the tenant's dump is unchanged
    byte for byte; the tenant reopened by a second engine (another process's view) refuses
    too; a consistent write commits. Without the option the same write commits and
    `tenant validate` reports it."""
    from reckon.api import Engine
    from reckon.cli._tenant import validate_tenant
    from reckon.store import BUSINESS

    clash = [(n("A"), DISJOINT, n("B")), (n("x"), RDF_TYPE, n("A")), (n("x"), RDF_TYPE, n("B"))]
    engine = Engine(tmp_path / "data", rules=["rdfs.srl", "owl2rl.srl"], refuse_inconsistent=True)
    t = engine.create_tenant("acme")
    before = t.dump()
    with pytest.raises(InconsistentGraph) as info:
        with t.store.transaction() as txn:
            for s, p, o in clash:
                txn.add(Quad(s, p, o, BUSINESS))
    assert "cax-dw" in str(info.value) and t.dump() == before
    again = Engine(tmp_path / "data", rules=["rdfs.srl", "owl2rl.srl"], refuse_inconsistent=True).tenant("acme")
    with pytest.raises(InconsistentGraph):
        with again.store.transaction() as txn:
            for s, p, o in clash:
                txn.add(Quad(s, p, o, BUSINESS))
    assert again.dump() == before
    with t.store.transaction() as txn:
        txn.add(Quad(n("y"), RDF_TYPE, n("B"), BUSINESS))
    assert t.dump() != before

    lax = Engine(tmp_path / "lax", rules=["rdfs.srl", "owl2rl.srl"]).create_tenant("acme")
    with lax.store.transaction() as txn:
        for s, p, o in clash:
            txn.add(Quad(s, p, o, BUSINESS))
    assert [i["node"] for i in validate_tenant(lax)["inconsistencies"]] == ["<http://example.org/x>"]
