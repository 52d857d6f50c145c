"""Text no RDF literal or IRI can hold (outside XML 1.0 ``Char``: a lone surrogate, U+0000,
another C0 control, U+FFFE / U+FFFF) is refused at the public boundary by one check
(``reckon.store.terms.text_fault``) naming the field, the character and its offset, and the
store is unchanged. Before, a SPARQL text with ``\\ud800`` raised the raw ``'utf-8' codec
can't encode`` error, and names / controls went into the store."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon import InvalidInput
from reckon.api import Principal

OPS = Principal(person="ann", teams=["growth"], role="operator")
_N = itertools.count()
BAD = [("\ud800", "lone surrogate U+D800"), ("\x00", "U+0000"), ("\x01", "U+0001"), ("\uffff", "U+FFFF")]


@pytest.mark.parametrize("bad,named", BAD)
def test_sparql_refuses_non_rdf_characters_with_offset(tenant, bad, named):
    q = f"SELECT * WHERE {{ ?s ?p 'a{bad}' }}"
    with pytest.raises(InvalidInput) as e:
        tenant.sparql(q)
    assert named in str(e.value) and f"offset {q.index(bad)}" in str(e.value), str(e.value)
    assert "codec" not in str(e.value)


@pytest.mark.parametrize("bad,named", BAD)
def test_writes_refuse_non_rdf_characters_store_unchanged(tenant, bad, named):
    tenant.add_person("ann", "Ann", teams=["growth"])
    before = tenant.dump()
    calls = {
        "label": lambda: tenant.remember(principal=OPS, kind="fact", scope="company", importance=3,
                                         source="operator", label=f"Q3 budget{bad}", content="x"),
        "content": lambda: tenant.remember(principal=OPS, kind="fact", scope="company", importance=3,
                                           source="operator", label="Q3 budget", content=f"x{bad}"),
        "name": lambda: tenant.add_person("bob", f"Bob{bad}"),
        "person_id": lambda: tenant.add_person(f"bob{bad}", "Bob"),
        "team name": lambda: tenant.add_team("paid", f"Paid{bad}"),
        "project name": lambda: tenant.add_project("q3", f"Q3{bad}"),
    }
    for what, call in calls.items():
        with pytest.raises(InvalidInput) as e:
            call()
        assert named in str(e.value) and "offset" in str(e.value), (what, str(e.value))
        assert tenant.dump() == before, what


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(st.characters(blacklist_categories=()), min_size=1, max_size=40))
def test_remember_arbitrary_text_roundtrips_or_is_refused(engine, text):
    if not text.strip():
        return
    tenant = engine.create_tenant(f"hyp{next(_N)}")
    tenant.add_person("ann", "Ann", teams=["growth"])
    before = tenant.dump()
    try:
        m = tenant.remember(principal=OPS, kind="fact", scope="company", importance=3,
                            source="operator", label="hyp " + text[:5], content=text)
    except InvalidInput as e:
        assert "offset" in str(e) or "label" in str(e) or "content" in str(e), str(e)
        assert tenant.dump() == before
        return
    assert tenant.get(m.id).content == text
