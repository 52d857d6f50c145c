"""Injection payloads through every write path of the store and the business API
round-trip verbatim: SPARQL update text is built only from pyoxigraph term
serialisation (STYLE.md, "Queries are never strings glued to user input")."""

from __future__ import annotations

import pytest
from pyoxigraph import Literal, NamedNode, Quad

from reckon._errors import InvalidInput
from reckon.api import Engine
from reckon.store import MEMORIES, TenantStore

PAYLOADS = [
    'quote " inside',
    "single ' quote",
    'triple """ quotes """',
    "'''",
    "closing } brace } }",
    "} } ; DROP ALL ; INSERT DATA { <urn:evil> <urn:evil> <urn:evil> }",
    '" } ; CLEAR ALL ; #',
    "new\nline\r\nand\ttab",
    "<urn:not-an-iri> <http://x/>",
    "back\\slash \\\" \\u0022",
    "SERVICE <http://evil/> { ?s ?p ?o }",
    "SELECT * WHERE { ?s ?p ?o }",
    "unicode ☃ 𝄞 é",
    "nul \x00 byte",
    "# comment",
    "@prefix ex: <http://x/> .",
    "_:b0",
    "?var $var",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> TenantStore:
    return TenantStore.create(tmp_path_factory.mktemp("p") / "tenants" / "acme", "acme")


@pytest.mark.parametrize("payload", PAYLOADS)
def test_literal_payloads_round_trip_through_a_transaction(store: TenantStore, payload: str) -> None:
    s, p = NamedNode("urn:x:s"), NamedNode("urn:x:p")
    with store.transaction() as txn:
        txn.remove_pattern(s, p, None, MEMORIES)
        txn.add(Quad(s, p, Literal(payload), MEMORIES))
        txn.add(Quad(s, p, Literal(payload, language="en"), MEMORIES))
    got = store.query("SELECT ?o WHERE { <urn:x:s> <urn:x:p> ?o }")
    assert sorted((r["o"].value, r["o"].language or "") for r in got) == [(payload, ""), (payload, "en")]
    # nothing else appeared
    assert store.query("ASK { <urn:evil> ?p ?o }") is False
    assert store.query("ASK { GRAPH <urn:reckon:graph:schema> { ?s ?p ?o } }") is False
    # and removal by value works with the same payload
    with store.transaction() as txn:
        txn.remove(Quad(s, p, Literal(payload), MEMORIES))
    assert store.query("SELECT ?o WHERE { <urn:x:s> <urn:x:p> ?o }") == [{"o": Literal(payload, language="en")}]


@pytest.mark.parametrize("payload", ["a>b", "a b", 'a"b', "a{b}", "a\nb", "a\\b", "a^b", "a|b", "a`b"])
def test_iris_with_forbidden_characters_are_refused_by_the_term_constructor(payload: str) -> None:
    with pytest.raises(ValueError):
        NamedNode(f"urn:x:{payload}")


@pytest.fixture(scope="module")
def tenant(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    engine = Engine(tmp_path_factory.mktemp("e"), rules=[])
    return engine.create_tenant("acme", company_name='Acme "}; DROP ALL')


@pytest.mark.parametrize("payload", PAYLOADS)
def test_business_api_payloads_round_trip(tenant, payload: str) -> None:  # type: ignore[no-untyped-def]
    if "\x00" in payload:  # not an XML 1.0 Char: no RDF literal holds it, refused with the store unchanged
        before = tenant.dump()
        for write in (lambda: tenant.connect_account("meta", payload, name=payload),
                      lambda: tenant.set_subscription(payload, status="trial", seats=3),
                      lambda: tenant.add_person(payload, name=payload, teams=[payload])):
            with pytest.raises(InvalidInput, match="U\\+0000"):
                write()
        assert tenant.dump() == before
        return
    tenant.connect_account("meta", payload, name=payload)
    tenant.set_subscription(payload, status="trial", seats=3)
    tenant.add_person(payload, name=payload, teams=[payload])
    rows = tenant.sparql(
        "PREFIX mk: <https://reckon.dev/ns/marketing#> "
        "SELECT ?id ?name WHERE { ?a mk:accountId ?id ; <http://www.w3.org/2000/01/rdf-schema#label> ?name }"
    )
    assert {"id": Literal(payload), "name": Literal(payload)} in rows
    plans = tenant.sparql("PREFIX mk: <https://reckon.dev/ns/marketing#> SELECT ?p WHERE { ?s mk:plan ?p }")
    assert plans == [{"p": Literal(payload)}]
    people = tenant.sparql(
        "PREFIX rk: <https://reckon.dev/ns/core#> SELECT ?n WHERE { ?t rk:member ?p . ?p a rk:Person ; "
        "<http://www.w3.org/2000/01/rdf-schema#label> ?n }"
    )
    assert {"n": Literal(payload)} in people
    assert tenant.sparql("ASK { <urn:evil> ?p ?o }") is False
    company = tenant.sparql(
        "SELECT ?n WHERE { ?c a <https://reckon.dev/ns/core#Company> ; <http://www.w3.org/2000/01/rdf-schema#label> ?n }"
    )
    assert company == [{"n": Literal('Acme "}; DROP ALL')}]


@pytest.mark.parametrize("metric", ['ROAS" } ; DROP ALL #', "<urn:x>", "ROAS X", ""])
def test_vocabulary_lookups_refuse_unknown_names(tenant, metric: str) -> None:  # type: ignore[no-untyped-def]
    before = tenant.dump()
    with pytest.raises(InvalidInput):
        tenant.set_kpi(metric, 1)
    assert tenant.dump() == before
