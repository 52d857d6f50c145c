"""Injection payloads in every string field of the memory write path (STYLE.md: "Queries
are never strings glued to user input"; seed §5: "every value is escaped so nothing
user-supplied can break out of its slot").

Each payload goes into the label, the content, a subclass's string properties (single
and multi-valued), the acting person's id (author / owner) and team ids. It must come
back verbatim through ``get()`` and through a SPARQL SELECT, and the write must add
exactly the memory's own triples (plus the person / team nodes it links to): nothing
else in any graph. A payload with U+0000 is refused (InvalidInput naming NUL) and writes
nothing: XML 1.0 cannot carry it (issue 9, point 6).
"""

from __future__ import annotations

import pytest
from pyoxigraph import NamedNode

from reckon._errors import InvalidInput, ShapeViolation, UnknownMemory
from reckon.api import Engine, Principal
from reckon.memory import _rdf as R
from reckon.store.terms import text_fault

pytestmark = pytest.mark.slow  # 75 writes through the Tenant API incl. recall indexing

PAYLOADS = [
    '"',
    "'",
    '"""',
    "'''",
    "}",
    "} ; DROP ALL ; INSERT DATA {",
    '" } ; DROP ALL ; INSERT DATA { <urn:x> <urn:y> "z" } #',
    "'} ; CLEAR GRAPH <urn:reckon:graph:memories> ; #",
    "\n",
    "line1\nline2\r\nline3",
    "<urn:reckon:acme:memory:00000000000000000000000000000000>",
    "<script>alert(1)</script>",
    "\\",
    '\\"',
    "\\u0022 \\U0000007D",
    "é 漢字 🙂 \u202e RTL",
    "\x00",
    "a\x00b",
    "\t\x0b\x0c",
    "?m $x # @prefix : <urn:evil#> .",
    '"^^<http://www.w3.org/2001/XMLSchema#integer>',
    '"@en',
    "SELECT * WHERE { ?s ?p ?o }",
    "%00%22%7D",
    ":" * 5,
]
IDS = [f"p{i}" for i in range(len(PAYLOADS))]

MEM = "urn:reckon:graph:memories"
RK = "https://reckon.dev/ns/core#"
BRAND = "https://reckon.dev/ns/marketing#BrandVoiceMemory"


@pytest.fixture(scope="module")
def tenant(tmp_path_factory):
    t = Engine(tmp_path_factory.mktemp("inj")).create_tenant("acme", company_name="Acme")
    t.add_team("t")
    return t


def asserted(tenant):
    return set(tenant.store.asserted())


def new_quads(before, after):
    assert before <= after, f"write removed quads: {before - after}"
    return after - before


def _labels_via_sparql(tenant, iri):
    rows = tenant.sparql(
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> PREFIX rk: <https://reckon.dev/ns/core#> "
        "SELECT ?m ?l ?c ?o ?a WHERE { GRAPH <urn:reckon:graph:memories> { "
        "?m rdfs:label ?l ; rk:content ?c ; rk:author ?a . OPTIONAL { ?m rk:owner ?o } } }"
    )
    return [r for r in rows if r["m"].value == iri]


def _refused_nul(tenant, payload, write) -> bool:
    """U+0000, and every other character no RDF text can hold (C0 controls but tab /
    newline / return), is refused in every text field (InvalidInput naming it and its
    offset), nothing written."""
    if text_fault(payload) is None:
        return False
    before = tenant.dump()
    with pytest.raises(InvalidInput, match="NUL" if "\x00" in payload else "control character U\\+000B at character offset"):
        write()
    assert tenant.dump() == before
    return True


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_user_memory_fields_and_person_id_round_trip(tenant, payload):
    if _refused_nul(tenant, payload, lambda: tenant.remember(
            kind="preference", scope="user", importance=3, source="agent_tool", principal=Principal(person="nul"),
            label=f"L{payload}L", content="C")):
        with pytest.raises(InvalidInput, match="NUL|U\\+000B"):
            Principal(person=f"u{payload}")
        return
    who = Principal(person=f"u{PAYLOADS.index(payload)}{payload}")
    before = asserted(tenant)
    m = tenant.remember(kind="preference", scope="user", importance=3, source="agent_tool", principal=who,
                        label=f"L{payload}L", content=f"C{payload}C")
    got = tenant.get(m.id)
    assert (got.label, got.content, got.owner, got.author) == (f"L{payload}L", f"C{payload}C", who.person, who.person)
    rows = _labels_via_sparql(tenant, m.iri)
    assert len(rows) == 1
    assert rows[0]["l"].value == f"L{payload}L" and rows[0]["c"].value == f"C{payload}C"
    assert R.slug_of(rows[0]["o"].value) == who.person and R.slug_of(rows[0]["a"].value) == who.person
    added = new_quads(before, asserted(tenant))
    person = R.person_iri(tenant.id, who.person)
    subjects = {q.subject for q in added}
    assert subjects == {NamedNode(m.iri), person}
    assert {str(q.graph_name) for q in added} == {f"<{MEM}>"}
    assert len([q for q in added if q.subject == person]) == 1  # <person> a rk:Person
    assert len([q for q in added if q.subject == NamedNode(m.iri)]) == 12


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_subclass_strings_and_team_ids_round_trip(tenant, payload):
    i = PAYLOADS.index(payload)
    if _refused_nul(tenant, payload, lambda: tenant.remember(
            kind="preference", scope="team", importance=4, source="operator",
            principal=Principal.operator(person="op", teams=["t"]), label=f"voice{i}", content="c",
            subclass="BrandVoiceMemory", properties={"tone": f"tone{payload}"})):
        return
    team = f"t{i}{payload}".rstrip()  # add_team strips surrounding whitespace from ids
    tenant.add_team(team)  # teams are made by the operator; a write never creates one
    op = Principal.operator(person=f"op{i}{payload}", teams=[team])
    before = asserted(tenant)
    props = {"tone": f"tone{payload}", "avoid_terms": [f"a{payload}", f"b{payload}"], "audience": payload or "x"}
    m = tenant.remember(kind="preference", scope="team", importance=4, source="operator", principal=op,
                        label=f"voice{i} {payload}", content=f"brandvoice{i} {payload}",
                        subclass="BrandVoiceMemory", properties=props)
    got = tenant.get(m.id)
    assert got.teams == [team] and got.author == op.person
    assert got.properties["tone"] == f"tone{payload}"
    assert sorted(got.properties["avoidTerm"]) == sorted([f"a{payload}", f"b{payload}"])
    assert got.properties["audience"] == payload
    rows = tenant.sparql(
        "PREFIX mk: <https://reckon.dev/ns/marketing#> PREFIX rk: <https://reckon.dev/ns/core#> "
        "SELECT ?m ?t ?team WHERE { ?m mk:tone ?t ; rk:team ?team }"
    )
    mine = [r for r in rows if r["m"].value == m.iri]
    assert [(r["t"].value, R.slug_of(r["team"].value)) for r in mine] == [(f"tone{payload}", team)]
    added = new_quads(before, asserted(tenant))
    assert {q.subject for q in added} == {NamedNode(m.iri), R.person_iri(tenant.id, op.person)}


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_update_and_lookups_with_payloads(tenant, payload):
    who = Principal(person="updater")
    m = tenant.remember(kind="fact", scope="user", importance=2, source="agent_tool", principal=who,
                        label=f"upd{PAYLOADS.index(payload)}", content="zz")
    if _refused_nul(tenant, payload, lambda: tenant.update(m.id, principal=who, content=f"new{payload}")):
        return
    before = asserted(tenant)
    u = tenant.update(m.id, principal=who, content=f"new{payload}", label=f"upd{PAYLOADS.index(payload)}{payload}")
    assert (u.content, u.label) == (f"new{payload}", f"upd{PAYLOADS.index(payload)}{payload}")
    changed = asserted(tenant) ^ before
    # the memory itself, and the revision that keeps its overwritten label and content
    revs = {q.subject for q in changed if q.predicate == NamedNode(RK + "revisionOf")}
    assert {q.subject for q in changed} == {NamedNode(m.iri)} | revs and len(revs) == 1
    kept = {q.predicate.value.rsplit("#", 1)[-1]: q.object.value for q in changed if q.subject in revs}
    assert (kept["label"], kept["content"]) == (f"upd{PAYLOADS.index(payload)}", "zz")
    # ids, subclass names and filters never reach query text
    dump = tenant.dump()
    with pytest.raises(UnknownMemory):
        tenant.get(payload)
    with pytest.raises(InvalidInput):
        tenant.memories(subclass=payload or "x")
    with pytest.raises((InvalidInput, ShapeViolation)):
        tenant.remember(kind="objective", scope="company", importance=5, source="operator",
                        principal=Principal.operator(), label="cap", content="cap",
                        subclass="BudgetConstraintMemory",
                        properties={"platform": "meta", "amount": 1, "currency": payload, "period": "monthly"})
    assert tenant.dump() == dump


def test_store_holds_nothing_but_written_memories(tenant):
    """After every payload test ran: no stray graph, no triple outside the four graphs,
    and every memory node has exactly the base properties (plus its subclass's)."""
    graphs = {str(q.graph_name) for q in tenant.store.asserted()}
    assert graphs <= {"<urn:reckon:graph:schema>", f"<{MEM}>", "<urn:reckon:graph:business>"}
    rows = tenant.sparql("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
    assert {r["g"].value for r in rows} <= {"urn:reckon:graph:schema", MEM, "urn:reckon:graph:business",
                                            "urn:reckon:graph:inferred"}
    assert not tenant.sparql("ASK { ?s ?p <urn:y> }") and not tenant.sparql("ASK { <urn:x> ?p ?o }")
