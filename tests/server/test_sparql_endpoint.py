"""SPARQL 1.1 Protocol query endpoint (https://www.w3.org/TR/sparql11-protocol/):
results in every format parse with rdflib / csv / json / pyoxigraph and agree with the
Python API; every kind of update and SERVICE is refused, by every way of sending it."""

from __future__ import annotations

import csv
import io
import json

import pytest
import rdflib
from pyoxigraph import QueryResultsFormat, parse_query_results
from rdflib.query import Result

RK = "https://reckon.dev/ns/core#"
MK = "https://reckon.dev/ns/marketing#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
PREFIXES = f"PREFIX rk: <{RK}>\nPREFIX mk: <{MK}>\nPREFIX rdfs: <{RDFS}>\n"
LABELS = PREFIXES + "SELECT ?m ?label WHERE { ?m a rk:Memory ; rdfs:label ?label } ORDER BY ?label"


def _expected_labels(world) -> list[tuple[str, str]]:
    rows = world.engine.tenant("acme").sparql(LABELS)
    return [(r["m"].value, r["label"].value) for r in rows]


def _get(world, query, accept=None, who="acme_ops"):
    headers = world.h(who) if accept is None else world.h(who, Accept=accept)
    return world.client.get("/tenants/acme/sparql", params={"query": query}, headers=headers)


def test_select_json_matches_python_api(world):
    r = _get(world, LABELS, "application/sparql-results+json")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/sparql-results+json")
    doc = json.loads(r.content)
    assert doc["head"]["vars"] == ["m", "label"]
    got = [(b["m"]["value"], b["label"]["value"]) for b in doc["results"]["bindings"]]
    expected = _expected_labels(world)
    assert got == expected
    assert {label for _, label in got} == {m.label for m in world.engine.tenant("acme").memories()}
    # rdflib reads the same document
    res = Result.parse(io.BytesIO(r.content), format="json")
    assert [(str(row.m), str(row.label)) for row in res] == expected


def test_select_default_format_is_json(world):
    r = _get(world, LABELS)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/sparql-results+json")


def test_select_xml_parses_with_rdflib(world):
    r = _get(world, LABELS, "application/sparql-results+xml")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/sparql-results+xml")
    res = Result.parse(io.BytesIO(r.content), format="xml")
    assert [str(v) for v in res.vars] == ["m", "label"]
    assert [(str(row.m), str(row.label)) for row in res] == _expected_labels(world)


def test_select_csv_parses_with_csv(world):
    r = _get(world, LABELS, "text/csv")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0] == ["m", "label"]
    assert [tuple(x) for x in rows[1:]] == _expected_labels(world)


def test_select_tsv_parses_with_pyoxigraph(world):
    r = _get(world, LABELS, "text/tab-separated-values")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/tab-separated-values")
    sols = parse_query_results(r.content, QueryResultsFormat.TSV)
    assert [(s["m"].value, s["label"].value) for s in sols] == _expected_labels(world)


def test_typed_literal_and_unbound_variable(world):
    iri = f"urn:reckon:acme:memory:{world.ids['budget']}"
    q = PREFIXES + f"SELECT ?amount ?expires WHERE {{ <{iri}> mk:amount ?amount . OPTIONAL {{ <{iri}> rk:expiresAt ?expires }} }}"
    doc = _get(world, q, "application/sparql-results+json").json()
    assert doc["head"]["vars"] == ["amount", "expires"]  # the unbound variable is still declared
    (b,) = doc["results"]["bindings"]
    assert "expires" not in b
    assert b["amount"]["datatype"] == "http://www.w3.org/2001/XMLSchema#decimal"
    assert float(b["amount"]["value"]) == world.engine.tenant("acme").get(world.ids["budget"]).properties["amount"]
    xml = _get(world, q, "application/sparql-results+xml")
    (row,) = list(Result.parse(io.BytesIO(xml.content), format="xml"))
    assert row.amount.datatype == rdflib.XSD.decimal and row.expires is None


@pytest.mark.parametrize("accept,fmt", [("application/sparql-results+json", "json"),
                                        ("application/sparql-results+xml", "xml")])
def test_ask(world, accept, fmt):
    mine = PREFIXES + f"ASK {{ <urn:reckon:acme:memory:{world.ids['budget']}> a mk:BudgetConstraintMemory }}"
    theirs = PREFIXES + f"ASK {{ <urn:reckon:beta:memory:{world.ids['beta_fact']}> ?p ?o }}"
    for q, expected in ((mine, True), (theirs, False)):
        r = _get(world, q, accept)
        assert r.status_code == 200
        assert Result.parse(io.BytesIO(r.content), format=fmt).askAnswer is expected


@pytest.mark.parametrize("accept,fmt", [("text/turtle", "turtle"), ("application/n-triples", "nt"), (None, "turtle")])
def test_construct_parses_with_rdflib(world, accept, fmt):
    q = PREFIXES + "CONSTRUCT { ?m rdfs:label ?l } WHERE { ?m a rk:Memory ; rdfs:label ?l }"
    r = _get(world, q, accept)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith(accept or "text/turtle")
    g = rdflib.Graph().parse(data=r.content, format=fmt)
    got = {(str(s), str(o)) for s, _, o in g}
    assert got == set(_expected_labels(world))


def test_describe(world):
    iri = f"urn:reckon:acme:memory:{world.ids['icp']}"
    r = _get(world, f"DESCRIBE <{iri}>", "application/n-triples")
    assert r.status_code == 200
    g = rdflib.Graph().parse(data=r.content, format="nt")
    assert (rdflib.URIRef(iri), rdflib.RDFS.label, rdflib.Literal("Ideal customer profile")) in g


def test_post_query_body_and_form(world):
    expected = _expected_labels(world)
    r = world.client.post("/tenants/acme/sparql", content=LABELS.encode(),
                          headers=world.h("acme_ops", **{"Content-Type": "application/sparql-query",
                                                         "Accept": "text/csv"}))
    assert r.status_code == 200, r.text
    assert [tuple(x) for x in list(csv.reader(io.StringIO(r.text)))[1:]] == expected
    r = world.client.post("/tenants/acme/sparql", data={"query": LABELS},
                          headers=world.h("acme_ops", Accept="application/sparql-results+json"))
    assert r.status_code == 200, r.text
    assert [(b["m"]["value"], b["label"]["value"]) for b in r.json()["results"]["bindings"]] == expected


def test_content_negotiation_q_values(world):
    r = _get(world, LABELS, "text/csv;q=0.5, application/sparql-results+xml;q=0.9, */*;q=0.1")
    assert r.headers["content-type"].startswith("application/sparql-results+xml")
    r = _get(world, LABELS, "image/png")
    assert r.status_code == 406 and r.json()["error"]["type"] == "not_acceptable"


def test_malformed_query_is_400(world):
    r = _get(world, "SELEKT ?x WHERE { ?x ?y }")
    assert r.status_code == 400
    assert r.json()["error"]["type"] == "malformed_query" and r.json()["error"]["field"] == "query"


def test_missing_query_is_400(world):
    r = world.client.get("/tenants/acme/sparql", headers=world.h("acme_ops"))
    assert r.status_code == 400 and r.json()["error"]["field"] == "query"


def test_dataset_parameters_refused(world):
    r = world.client.get("/tenants/acme/sparql", params={"query": LABELS, "default-graph-uri": "urn:x"},
                         headers=world.h("acme_ops"))
    assert r.status_code == 400 and r.json()["error"]["field"] == "default-graph-uri"


def test_sparql_needs_the_grant(world):
    r = _get(world, LABELS, who="acme_sam")
    assert r.status_code == 403 and "SPARQL grant" in r.json()["error"]["message"]
    r = _get(world, LABELS, who="acme_analyst")  # a member token created with --sparql
    assert r.status_code == 200 and len(r.json()["results"]["bindings"]) == len(_expected_labels(world))


# ---------------------------------------------------------------------------------------
# refusals
# ---------------------------------------------------------------------------------------

REFUSED = {
    "insert-data": "INSERT DATA { <urn:x:s> <urn:x:p> <urn:x:o> }",
    "insert-data-graph": "INSERT DATA { GRAPH <urn:reckon:graph:memories> { <urn:x:s> <urn:x:p> 'o' } }",
    "delete-data": "DELETE DATA { GRAPH <urn:reckon:graph:memories> { <urn:x:s> <urn:x:p> <urn:x:o> } }",
    "delete-where": "DELETE WHERE { ?s ?p ?o }",
    "delete-insert": PREFIXES + "DELETE { ?m rk:importance ?i } INSERT { ?m rk:importance 1 } "
                                "WHERE { ?m rk:importance ?i }",
    "with-delete": "WITH <urn:reckon:graph:memories> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "load": "LOAD <http://example.org/data.ttl>",
    "load-into": "LOAD SILENT <http://example.org/data.ttl> INTO GRAPH <urn:reckon:graph:memories>",
    "clear-all": "CLEAR ALL",
    "clear-graph": "CLEAR GRAPH <urn:reckon:graph:memories>",
    "drop-all": "DROP ALL",
    "drop-graph": "DROP SILENT GRAPH <urn:reckon:graph:inferred>",
    "create": "CREATE GRAPH <urn:x:g>",
    "add": "ADD DEFAULT TO <urn:x:g>",
    "move": "MOVE <urn:reckon:graph:memories> TO <urn:x:g>",
    "copy": "COPY <urn:reckon:graph:memories> TO DEFAULT",
    "service": "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }",
    "service-silent": "SELECT * WHERE { ?s ?p ?o . SERVICE SILENT <http://example.org/sparql> { ?s ?q ?z } }",
    "query-then-update": "SELECT * WHERE { ?s ?p ?o } ; INSERT DATA { <urn:x:s> <urn:x:p> <urn:x:o> }",
}


def _send(world, how: str, text: str):
    h = world.h("acme_ops")
    if how == "get":
        return world.client.get("/tenants/acme/sparql", params={"query": text}, headers=h)
    if how == "post-body":
        return world.client.post("/tenants/acme/sparql", content=text.encode(),
                                 headers={**h, "Content-Type": "application/sparql-query"})
    if how == "post-form":
        return world.client.post("/tenants/acme/sparql", data={"query": text}, headers=h)
    if how == "post-update-form":
        return world.client.post("/tenants/acme/sparql", data={"update": text}, headers=h)
    if how == "post-update-body":
        return world.client.post("/tenants/acme/sparql", content=text.encode(),
                                 headers={**h, "Content-Type": "application/sparql-update"})
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["get", "post-body", "post-form", "post-update-form", "post-update-body"])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_updates_and_service_are_refused(world, name, how):
    before = world.engine.tenant("acme").dump()
    r = _send(world, how, REFUSED[name])
    assert r.status_code == 400, (name, how, r.text)
    err = r.json()["error"]
    assert err["type"] == "read_only_query", err
    assert "read-only" in err["message"] or "not allowed" in err["message"]
    assert world.engine.tenant("acme").dump() == before


def test_update_param_refused_even_next_to_a_query(world):
    r = world.client.get("/tenants/acme/sparql", params={"query": LABELS, "update": "CLEAR ALL"},
                         headers=world.h("acme_ops"))
    assert r.status_code == 400 and r.json()["error"]["field"] == "update"


def test_post_body_not_utf8_and_wrong_media_type(world):
    h = world.h("acme_ops")
    r = world.client.post("/tenants/acme/sparql", content=b"SELECT * WHERE { ?s ?p '\xff' }",
                          headers={**h, "Content-Type": "application/sparql-query"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "body"
    r = world.client.post("/tenants/acme/sparql", json={"query": LABELS}, headers=h)
    assert r.status_code == 415 and r.json()["error"]["type"] == "unsupported_media_type"


def test_predeclared_prefixes_work_over_http_like_in_python(world):
    """Regression: the endpoint parsed the query a second time without the predeclared
    prefixes (rk:, rdfs: ...) and answered 500 to README's own example queries."""
    q = "SELECT ?m ?label WHERE { ?m a rk:ActiveMemory ; rdfs:label ?label } ORDER BY ?m"
    r = _get(world, q, "application/sparql-results+json")
    assert r.status_code == 200, r.text
    got = [(b["m"]["value"], b["label"]["value"]) for b in json.loads(r.content)["results"]["bindings"]]
    rows = world.engine.tenant("acme").sparql(q)
    assert got == [(row["m"].value, row["label"].value) for row in rows]
    assert got  # the fixture tenant has active memories
