"""Teams are made by the operator (``Tenant.add_team``, ``add_person(teams=...)``,
onboarding); a memory write or a principal naming a team the tenant does not have is
refused with :class:`reckon.UnknownTeam` naming it and the tenant's teams, and the store
is left exactly as it was (a typo never becomes a new team nobody in the real team reads).
Persons and conversations keep appearing on demand."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon import InvalidInput, Principal, Tenant, UnknownTeam

OPS = Principal.operator("dana")
TEAM_FACT = dict(kind="fact", scope="team", importance=3, source="operator",
                 label="Growth owns the spring campaign",
                 content="The growth team runs the spring campaign on Meta and Google.")


def _ask(t: Tenant, query: str) -> bool:
    return bool(t.sparql(query))


@pytest.fixture()
def org(tenant: Tenant) -> Tenant:
    tenant.add_team("growth", "Growth")
    tenant.add_person("lee", "Lee Park", teams=["brand"])  # creates team brand (operator)
    return tenant


def test_remember_naming_an_unknown_team_is_refused_and_nothing_changes(org: Tenant) -> None:
    before = org.dump()
    with pytest.raises(UnknownTeam) as ei:
        org.remember(principal=OPS, teams=["growht"], **TEAM_FACT)
    e = ei.value
    assert isinstance(e, InvalidInput) and isinstance(e, LookupError)
    assert e.field == "teams" and e.teams == ["growht"] and e.known == ["brand", "growth"]
    assert str(e) == (f"teams: no team 'growht' in tenant {org.id!r} (its teams: 'brand', 'growth'); an operator "
                      "creates a team with Tenant.add_team or `reckon tenant add-team`")
    assert org.dump() == before
    assert org.teams() == ["brand", "growth"]
    assert not _ask(org, f"ASK {{ <urn:reckon:{org.id}:team:growht> ?p ?o }}")


def test_a_case_variant_is_unknown_and_the_error_names_the_team_meant(org: Tenant) -> None:
    before = org.dump()
    with pytest.raises(UnknownTeam) as ei:
        org.remember(principal=OPS, teams=["Growth", "growth", "marketing"], **TEAM_FACT)
    assert ei.value.teams == ["Growth", "marketing"]
    assert "no teams 'Growth' (did you mean 'growth'?), 'marketing' in tenant" in str(ei.value)
    assert org.dump() == before


def test_the_real_team_is_written_and_read_by_its_members(org: Tenant) -> None:
    m = org.remember(principal=OPS, teams=["growth"], **TEAM_FACT)
    assert m.teams == ["growth"]
    hits = org.search("spring campaign", principal=Principal(person="sam", teams=["growth"]), k=5)
    assert [h.memory.id for h in hits] == [m.id]
    assert org.search("spring campaign", principal=Principal(person="lee", teams=["brand"]), k=5) == []


def test_update_and_supersede_naming_an_unknown_team_are_refused(org: Tenant) -> None:
    m = org.remember(principal=OPS, teams=["growth"], **TEAM_FACT)
    before = org.dump()
    with pytest.raises(UnknownTeam) as ei:
        org.update(m.id, teams=["growth", "brnad"], principal=OPS)
    assert ei.value.teams == ["brnad"] and ei.value.field == "teams"
    assert org.dump() == before
    with pytest.raises(UnknownTeam):
        org.supersede(m.id, {**TEAM_FACT, "teams": ["sales"], "content": "Sales runs it now."}, principal=OPS)
    assert org.dump() == before
    assert org.get(m.id).superseded_by == []


def test_remember_many_with_one_unknown_team_writes_nothing(org: Tenant) -> None:
    before = org.dump()
    items = [{**TEAM_FACT, "teams": ["growth"]},
             {**TEAM_FACT, "label": "Brand voice owner", "content": "Brand owns the voice.", "teams": ["Brand "]}]
    with pytest.raises(UnknownTeam) as ei:
        org.remember_many(items, principal=OPS)
    assert ei.value.teams == ["Brand "] and "items[1]" in str(ei.value)
    assert "(did you mean 'brand'?)" in str(ei.value)
    assert org.dump() == before


def test_a_principal_naming_an_unknown_team_is_refused_on_reads_and_writes(org: Tenant) -> None:
    org.remember(principal=OPS, teams=["growth"], **TEAM_FACT)
    before = org.dump()
    typo = Principal(person="sam", teams=["grwoth"])
    for call in (lambda: org.search("spring campaign", principal=typo),
                 lambda: org.context(typo, conversation="who runs the spring campaign?"),
                 lambda: org.remember(principal=Principal.operator("dana", teams=["grwoth"]),
                                      **{k: v for k, v in TEAM_FACT.items()}),
                 lambda: org.remember(principal=typo, kind="preference", scope="user", importance=3,
                                      source="agent_tool", label="Short answers", content="Bullet points.")):
        with pytest.raises(UnknownTeam) as ei:
            call()
        assert ei.value.field == "principal.teams" and ei.value.teams == ["grwoth"]
        assert ei.value.known == ["brand", "growth"]
    assert org.dump() == before


def test_the_remember_tool_returns_a_correctable_unknown_team_error(org: Tenant) -> None:
    before = org.dump()
    r = org.handle_tool_call("remember", {"kind": "fact", "scope": "team", "teams": ["growht"], "importance": 4,
                                          "label": "x", "content": "y"}, OPS)
    assert r["ok"] is False
    err = r["error"]
    assert (err["type"], err["field"], err["constraint"]) == ("unknown_team", "teams", "exists")
    assert err["teams"] == ["growht"] and err["known"] == ["brand", "growth"]
    assert org.dump() == before


def test_add_team_refuses_a_variant_of_an_existing_team(org: Tenant) -> None:
    before = org.dump()
    for variant in ("Growth", "GROWTH", " Growth ", "ｇｒｏｗｔｈ"):
        with pytest.raises(InvalidInput) as ei:
            org.add_team(variant)
        assert ei.value.field == "team_id"
        with pytest.raises(InvalidInput) as ei:
            org.add_person("kim", teams=[variant])
        assert ei.value.field == "teams"
    assert org.dump() == before
    org.add_team("growth", "Growth marketing")  # the same id: a rename
    org.add_team(" growth\t")  # surrounding whitespace is stripped, as for every id given here
    assert org.teams() == ["brand", "growth"]


def test_persons_and_conversations_appear_on_demand(org: Tenant) -> None:
    org.remember(principal=Principal(person="newbie"), kind="preference", scope="user", importance=3,
                 source="agent_tool", label="Dark mode", content="Newbie prefers dark mode.")
    assert _ask(org, f"ASK {{ <urn:reckon:{org.id}:person:newbie> a <https://reckon.dev/ns/core#Person> }}")
    org.remember(principal=OPS, kind="context", scope="conversation", conversation="chat-1", importance=3,
                 source="operator", label="Chat topic", content="This chat plans the spring campaign.")
    assert _ask(org, f"ASK {{ <urn:reckon:{org.id}:conversation:chat-1> a <https://reckon.dev/ns/core#Conversation> }}")
    assert org.teams() == ["brand", "growth"]


# ---------------------------------------------------------------------------------------
# property: writes succeed exactly for the teams the operator added (the oracle)
# ---------------------------------------------------------------------------------------
_NAME = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=12)


def _rdf_text(name: str) -> bool:
    """XML 1.0 ``Char`` (https://www.w3.org/TR/xml/#charsets): what an RDF literal can hold;
    a name outside it is refused as text before any team lookup."""
    return all(c in "\t\n\r" or "\x20" <= c <= "\ud7ff" or "\ue000" <= c <= "\ufffd" or c >= "\U00010000"
               for c in name)


def _variants(name: str) -> list[str]:
    return [name.upper(), name.lower(), name.title(), f" {name}", f"{name}\t", unicodedata.normalize("NFD", name)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(added=st.lists(_NAME.filter(lambda s: s == s.strip()), min_size=0, max_size=4), asked=st.lists(_NAME, min_size=1, max_size=3),
       variant_of=st.integers(0, 5))
def test_remember_accepts_exactly_the_added_teams(engine: object, added: list[str], asked: list[str],
                                                  variant_of: int) -> None:
    from reckon import Engine

    assert isinstance(engine, Engine)
    t = engine.create_tenant(f"hyp{abs(hash((tuple(added), tuple(asked), variant_of))) % 10**12}", exist_ok=True)
    oracle: set[str] = set(t.teams())
    for name in added:
        try:
            t.add_team(name)
        except InvalidInput:
            continue  # blank, or a case / Unicode variant of a team already added: refused
        oracle.add(name)
    assert set(t.teams()) == oracle
    if oracle:  # ask for a case / whitespace variant of a real team too
        asked = [*asked, _variants(sorted(oracle)[0])[variant_of]]
    for name in asked:
        before = t.dump()
        when = datetime(2026, 3, 2, 9, 15, 30, 123456, tzinfo=timezone(timedelta(hours=2)))
        fields = {**TEAM_FACT, "label": f"fact for {name!r}", "expires_at": when.astimezone(UTC) + timedelta(days=30)}
        if not _rdf_text(name):
            with pytest.raises(InvalidInput):
                t.remember(principal=OPS, teams=[name], **fields)
            assert t.dump() == before
        elif name in oracle:
            m = t.remember(principal=OPS, teams=[name], **fields)
            assert m.teams == [name]
        else:
            with pytest.raises(UnknownTeam) as ei:
                t.remember(principal=OPS, teams=[name], **fields)
            assert ei.value.teams == [name] and ei.value.known == sorted(oracle)
            assert repr(name) in str(ei.value)
            assert t.dump() == before
        assert set(t.teams()) == oracle  # no write ever adds a team


def test_onboarding_refuses_a_person_team_not_declared_and_leaves_no_tenant(engine: object) -> None:
    from reckon import Engine, UnknownTenant
    from reckon.onboarding import onboard

    assert isinstance(engine, Engine)
    seeds = {"objective": {"label": "Grow signups", "content": "Double weekly signups by June."},
             "fact": {"label": "Fiscal year", "content": "The fiscal year starts in April."},
             "preference": {"label": "Report format", "content": "Weekly reports by platform."}}
    spec = {"tenant": "onb-typo", "operator": "dana", "teams": [{"id": "growth", "name": "Growth"}],
            "people": [{"id": "dana", "teams": ["growth"]}, {"id": "lee", "teams": ["grwoth"]}], **seeds}
    with pytest.raises(InvalidInput) as ei:
        onboard(engine, spec)
    assert ei.value.field == "people[1].teams"
    assert str(ei.value) == "people[1].teams: 'grwoth' not under teams: (declared: 'growth')"
    with pytest.raises(UnknownTenant):
        engine.tenant("onb-typo")
    spec["people"] = [{"id": "dana", "teams": ["growth"]}, {"id": "lee", "teams": ["growth"]}]
    spec["memories"] = [{"kind": "fact", "scope": "team", "teams": ["brand"], "label": "Brand owns voice",
                         "content": "Brand owns the voice."}]
    with pytest.raises(UnknownTeam) as eu:
        onboard(engine, spec)
    assert eu.value.teams == ["brand"] and eu.value.known == ["growth"]
    with pytest.raises(UnknownTenant):
        engine.tenant("onb-typo")
