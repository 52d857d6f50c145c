"""The query interface is read-only: updates and SERVICE are refused before anything
runs; the default graph is the union of the public graphs; GRAPH addresses each."""

from __future__ import annotations

import pytest
from pyoxigraph import Literal, NamedNode, Quad, Triple, Variable

from reckon._errors import InvalidInput, ReadOnlyQuery
from reckon.store import BUSINESS, MEMORIES, SCHEMA, TenantStore
from reckon.store.query_guard import tokenize
from tests.store.toy_reasoner import SUB, TYPE, ToyReasoner


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> TenantStore:
    root = tmp_path_factory.mktemp("ro")
    s = TenantStore.create(
        root / "tenants" / "acme",
        "acme",
        initial=[
            Quad(NamedNode("urn:x:A"), SUB, NamedNode("urn:x:B"), SCHEMA),
            Quad(NamedNode("urn:x:m"), TYPE, NamedNode("urn:x:A"), MEMORIES),
            Quad(NamedNode("urn:x:k"), NamedNode("urn:x:value"), Literal("2.5"), BUSINESS),
        ],
        reasoner_factory=ToyReasoner,
    )
    return s


REFUSED_UPDATES = [
    'INSERT DATA { <urn:x:a> <urn:x:b> "c" }',
    "DELETE WHERE { ?s ?p ?o }",
    "DELETE DATA { GRAPH <urn:reckon:graph:memories> { <urn:x:m> <urn:t:type> <urn:x:A> } }",
    "LOAD <http://example.com/data.ttl>",
    "LOAD <file:///etc/passwd> INTO GRAPH <urn:x:g>",
    "CLEAR ALL",
    "CLEAR GRAPH <urn:reckon:graph:memories>",
    "DROP ALL",
    "DROP GRAPH <urn:reckon:graph:schema>",
    "CREATE GRAPH <urn:x:new>",
    "ADD <urn:reckon:graph:schema> TO <urn:reckon:graph:memories>",
    "MOVE DEFAULT TO <urn:x:g>",
    "COPY <urn:reckon:graph:schema> TO <urn:x:g>",
    "WITH <urn:x:g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "PREFIX ex: <urn:x:> INSERT { ex:a ex:b ?o } WHERE { ?s ?p ?o }",
    "SELECT * WHERE { ?s ?p ?o } ; DROP ALL",
]

REFUSED_SERVICE = [
    "SELECT * WHERE { SERVICE <http://example.com/sparql> { ?s ?p ?o } }",
    "SELECT * WHERE { service silent <http://example.com/sparql> { ?s ?p ?o } }",
    "ASK { ?s ?p ?o . SERVICE<http://x/> { ?s ?p ?o } }",
    "SELECT * WHERE { SERVICE ?endpoint { ?s ?p ?o } VALUES ?endpoint { <http://x/> } }",
]


@pytest.mark.parametrize("update", REFUSED_UPDATES)
def test_updates_are_refused_and_change_nothing(store: TenantStore, update: str) -> None:
    before = store.dump()
    with pytest.raises(ReadOnlyQuery):
        store.query(update)
    assert store.dump() == before


@pytest.mark.parametrize("query", REFUSED_SERVICE)
def test_service_is_refused(store: TenantStore, query: str) -> None:
    with pytest.raises(ReadOnlyQuery, match="SERVICE"):
        store.query(query)


@pytest.mark.parametrize(
    "query",
    [
        'SELECT ?s WHERE { ?s ?p "SERVICE <http://x/> { DROP ALL }" }',
        "SELECT ?s WHERE { ?s <urn:x:SERVICE> ?o }",
        "PREFIX ex: <urn:x:> SELECT ?service WHERE { ?service ex:SERVICE ?o }",
        "SELECT ?s WHERE { ?s <urn:x:none> ?o } # SERVICE <http://x/> in a comment",
        "SELECT ?s WHERE { ?s ?p '''INSERT DATA { <a:b> <a:c> <a:d> }''' }",
    ],
)
def test_keywords_inside_strings_iris_comments_and_names_are_not_refused(store: TenantStore, query: str) -> None:
    assert store.query(query) == []


def test_malformed_query_is_invalid_input_not_read_only(store: TenantStore) -> None:
    with pytest.raises(InvalidInput) as e:
        store.query("SELECT WHERE {")
    assert not isinstance(e.value, ReadOnlyQuery)


def test_select_returns_dicts_of_terms_over_the_union(store: TenantStore) -> None:
    rows = store.query("SELECT ?c WHERE { <urn:x:m> <urn:t:type> ?c } ORDER BY ?c")
    assert rows == [{"c": NamedNode("urn:x:A")}, {"c": NamedNode("urn:x:B")}]  # asserted + inferred


def test_graph_addresses_each_named_graph(store: TenantStore) -> None:
    rows = store.query("SELECT ?g WHERE { GRAPH ?g { <urn:x:m> <urn:t:type> ?c } } ORDER BY ?g")
    assert [r["g"].value for r in rows] == ["urn:reckon:graph:inferred", "urn:reckon:graph:memories"]
    assert store.query("ASK { GRAPH <urn:reckon:graph:business> { <urn:x:k> ?p ?o } }") is True
    assert store.query("ASK { GRAPH <urn:reckon:graph:schema> { <urn:x:k> ?p ?o } }") is False


def test_private_meta_graph_is_invisible(store: TenantStore) -> None:
    assert store.query("ASK { <urn:reckon:store> ?p ?o }") is False
    assert store.query("ASK { GRAPH <urn:reckon:graph:meta> { ?s ?p ?o } }") is False


def test_union_can_be_turned_off(store: TenantStore) -> None:
    assert store.query("ASK { ?s ?p ?o }", use_default_graph_as_union=False) is False


def test_construct_returns_triples(store: TenantStore) -> None:
    out = store.query("CONSTRUCT { ?s <urn:x:seen> ?c } WHERE { GRAPH <urn:reckon:graph:inferred> { ?s <urn:t:type> ?c } }")
    assert out == [Triple(NamedNode("urn:x:m"), NamedNode("urn:x:seen"), NamedNode("urn:x:B"))]


def test_substitutions_bind_typed_terms(store: TenantStore) -> None:
    rows = store.query("SELECT ?s ?p WHERE { ?s ?p ?o }", substitutions={"s": NamedNode("urn:x:k")})
    assert rows == [{"s": NamedNode("urn:x:k"), "p": NamedNode("urn:x:value")}]
    rows = store.query("SELECT ?s ?o WHERE { ?s ?p ?o }", substitutions={Variable("o"): Literal("2.5")})
    assert rows == [{"s": NamedNode("urn:x:k"), "o": Literal("2.5")}]
    with pytest.raises(InvalidInput):  # pyoxigraph: a substituted variable must be projected
        store.query("SELECT ?p WHERE { ?s ?p ?o }", substitutions={"s": NamedNode("urn:x:k")})


def test_tokenizer_sees_keywords_only_outside_literals() -> None:
    toks = tokenize('SELECT ?x WHERE { ?x <urn:DROP> "LOAD" ; ex:CLEAR 1 } # INSERT')
    words = [t.upper() for kind, t, _ in toks if kind == "word"]
    assert words == ["SELECT", "WHERE"]
    assert not {"DROP", "LOAD", "CLEAR", "INSERT"} & set(words)


@pytest.mark.parametrize("text", [
    "PREFIX ex: <http://127.0.0.1:9/> SELECT * WHERE { SERVICEex:svc {} }",
    "PREFIX : <http://127.0.0.1:9/> SELECT * WHERE { service:svc {} }",
    "SELECT * WHERE { SERVICESILENT<http://127.0.0.1:9/> {} }",
    "SELECT * WHERE { ?s ?p trueSERVICE<http://127.0.0.1:9/> {} }",
    "SELECT * WHERE { ?s ?p ?o FILTER(?a<?b)SERVICE?x>{} }",
    "SELECT * WHERE { ?s ex:a\\#b ?o SERVICE <http://127.0.0.1:9/> {} }",
])
def test_keywords_glued_to_words_are_seen(store: TenantStore, text: str) -> None:
    """pyoxigraph's PEG parser matches a keyword without a word boundary after it."""
    with pytest.raises(ReadOnlyQuery, match="SERVICE"):
        store.query(text)


def test_a_prefix_named_service_is_refused_with_a_hint(store: TenantStore) -> None:
    with pytest.raises(ReadOnlyQuery, match="rename such a prefix"):
        store.query("PREFIX service: <urn:x#> SELECT * WHERE { service:a service:p ?o }")
    # in a local name it is an ordinary IRI
    assert store.query("PREFIX ex: <urn:x#> SELECT * WHERE { ex:customerService ex:p ?o }") == []
