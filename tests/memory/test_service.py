"""The memory write path end to end over a real TenantStore (seed §3–§5, §9)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pyoxigraph import Literal, NamedNode, Quad

from reckon._errors import (
    ConflictPending,
    InvalidInput,
    NotAuthorized,
    RestoreRefused,
    ShapeViolation,
    UnknownMemory,
)
from reckon.memory import _rdf as R
from reckon.memory.models import Principal
from reckon.store import BUSINESS, MEMORIES

from .conftest import ANN, BOB, OPS

MK = "https://reckon.dev/ns/marketing#"


def pref(**kw):
    base = dict(kind="preference", scope="user", importance=3, source="agent_tool",
                label="Answer format", content="Prefers answers as bullet lists")
    base.update(kw)
    return base


def budget(**kw):
    base = dict(kind="objective", scope="company", importance=5, source="operator",
                label="Meta monthly spend cap", content="Don't let Meta spend go over $40k this month.",
                subclass="BudgetConstraintMemory",
                properties={"platform": "meta", "amount": 40000, "currency": "USD", "period": "monthly"})
    base.update(kw)
    return base


def memory_quads(store, iri):
    return sorted(str(q) for q in store.asserted() if q.subject == NamedNode(iri) and q.graph_name == MEMORIES)


def set_clock(store, when: datetime):
    with store.transaction() as txn:
        txn.remove_pattern(NamedNode(R.RK + "clock"), NamedNode(R.RK + "now"), None, BUSINESS)
        txn.add(Quad(NamedNode(R.RK + "clock"), NamedNode(R.RK + "now"), R.dt_literal(when), BUSINESS))


# --- remember: the exact triples ---------------------------------------------------------

def test_remember_writes_the_layout_triples(svc, store):
    m = svc.remember(principal=OPS, **budget())
    s = NamedNode(m.iri)
    assert m.iri == f"urn:reckon:acme:memory:{m.id}" and len(m.id) == 32
    got = {(q.predicate.value, q.object) for q in store.asserted() if q.subject == s}
    p = lambda local: R.RK + local  # noqa: E731
    person = NamedNode("urn:reckon:acme:person:olga")
    expected = {
        (R.RDF + "type", NamedNode(MK + "BudgetConstraintMemory")),
        (R.RDFS + "label", Literal("Meta monthly spend cap")),
        (p("content"), Literal("Don't let Meta spend go over $40k this month.")),
        (p("kind"), NamedNode(p("Objective"))),
        (p("scope"), NamedNode(p("CompanyScope"))),
        (p("importance"), Literal("5", datatype=R.X_INTEGER)),
        (p("source"), NamedNode(p("Operator"))),
        (p("confidence"), Literal("1", datatype=R.X_DECIMAL)),
        (p("author"), person),
        (MK + "platform", NamedNode(MK + "meta")),
        (MK + "amount", Literal("40000", datatype=R.X_DECIMAL)),
        (MK + "currency", Literal("USD")),
        (MK + "period", NamedNode(MK + "Monthly")),
    }
    times = {(pr, o) for pr, o in got if pr in (p("createdAt"), p("updatedAt"))}
    assert got - times == expected
    assert len(times) == 2 and all(o.datatype == R.X_DATETIME and o.value.endswith("Z") for _, o in times)
    # the author became a person node; nothing else about the memory was asserted elsewhere
    assert Quad(person, R.A, R.PERSON, MEMORIES) in store.asserted()
    assert m.properties == {"platform": "meta", "amount": 40000.0, "currency": "USD", "period": "Monthly"}
    assert m.active and m.subclass == "BudgetConstraintMemory" and m.owner is None


def test_user_scope_owner_defaults_to_principal(svc):
    m = svc.remember(principal=ANN, **pref())
    assert (m.owner, m.author, m.teams, m.confidence) == ("ann", "ann", [], 0.9)
    assert svc.get(m.id) == m
    assert svc.get(m.iri) == m


def test_team_scope_defaults_to_principal_teams(svc):
    op = Principal.operator(person="olga", teams=["growth", "brand"])
    m = svc.remember(principal=op, **pref(scope="team", source="operator"))
    assert m.teams == ["brand", "growth"] and m.owner is None and m.confidence == 1.0
    with pytest.raises(InvalidInput) as ei:
        svc.remember(principal=OPS, **pref(scope="team", source="operator", label="x"))
    assert ei.value.field == "teams"


def test_field_errors_name_the_field(svc, store):
    before = store.dump()
    cases = [
        (pref(importance=7), "importance"),
        (pref(kind="whim"), "kind"),
        (budget(subclass="NoSuchMemory"), "subclass"),
        (budget(properties={"platform": "meta", "amount": 1, "currency": "USD", "period": "monthly", "colour": 1}),
         "properties.colour"),
        (budget(properties={"platform": "myspace", "amount": 1, "currency": "USD", "period": "monthly"}),
         "properties.platform"),
        (budget(properties={"platform": "meta", "amount": "lots", "currency": "USD", "period": "monthly"}),
         "properties.amount"),
        (pref(properties={"amount": 3}), "properties"),
    ]
    for data, field in cases:
        with pytest.raises(InvalidInput) as ei:
            svc.remember(principal=OPS if data["scope"] != "user" else ANN, **data)
        assert ei.value.field == field, data
    assert store.dump() == before


@pytest.mark.parametrize(
    ("props", "path", "constraint"),
    [
        ({"platform": "meta", "amount": 40000, "currency": "usd", "period": "monthly"},
         MK + "currency", "sh:InConstraintComponent"),
        ({"platform": "meta", "amount": -5, "currency": "USD", "period": "monthly"},
         MK + "amount", "sh:MinInclusiveConstraintComponent"),
        ({"platform": "meta", "currency": "USD", "period": "monthly"},
         MK + "amount", "sh:MinCountConstraintComponent"),
        ({"amount": 1, "currency": "USD", "period": "monthly"},
         MK + "platform", "sh:MinCountConstraintComponent"),
    ],
)
def test_shape_violation_names_field_and_constraint_and_writes_nothing(svc, store, props, path, constraint):
    before = store.dump()
    with pytest.raises(ShapeViolation) as ei:
        svc.remember(principal=OPS, **budget(properties=props))
    v = [x for x in ei.value.violations if x["path"] == path]
    assert v and v[0]["constraint"] == constraint
    assert path.rsplit("#", 1)[-1] in str(ei.value) and constraint in str(ei.value)
    assert v[0]["focus_node"].startswith("urn:reckon:acme:memory:")
    assert store.dump() == before


# --- authorization --------------------------------------------------------------------

def test_members_cannot_write_shared_memories(svc, store):
    before = store.dump()
    with pytest.raises(NotAuthorized, match="operator-gated"):
        svc.remember(principal=ANN, **budget(source="agent_tool"))
    with pytest.raises(NotAuthorized, match="operator-only"):
        svc.remember(principal=ANN, **pref(source="onboarding"))
    with pytest.raises(NotAuthorized, match="'bob'"):
        svc.remember(principal=ANN, **pref(owner="bob"))
    assert store.dump() == before


def test_update_authorization(svc):
    mine = svc.remember(principal=ANN, **pref())
    # not Bob's to read: reported exactly as an absent memory (no owner leaks; issue 10)
    with pytest.raises(UnknownMemory, match=f"^no memory '{mine.id}' in tenant"):
        svc.update(mine.id, principal=BOB, importance=4)
    company = svc.remember(principal=OPS, **budget())
    with pytest.raises(NotAuthorized, match="company-scope"):
        svc.update(company.id, principal=ANN, importance=4)
    assert svc.update(mine.id, principal=OPS, importance=4).importance == 4


# --- dedup ----------------------------------------------------------------------------

def test_same_label_same_stakeholder_updates_instead_of_duplicating(svc):
    a = svc.remember(principal=ANN, **pref())
    b = svc.remember(principal=ANN, **pref(label="  answer   FORMAT ", content="Prefers numbered lists", importance=4))
    assert b.id == a.id
    assert (b.label, b.content, b.importance) == ("  answer   FORMAT ", "Prefers numbered lists", 4)
    assert b.updated_at > b.created_at
    assert len(svc.memories()) == 1
    assert [e.event for e in svc.history(a.id)] == ["updated"]


def test_dedup_is_per_stakeholder(svc):
    a = svc.remember(principal=ANN, **pref())
    b = svc.remember(principal=BOB, **pref())
    assert a.id != b.id and {m.owner for m in svc.memories()} == {"ann", "bob"}


def test_dedup_ignores_superseded_memories(svc):
    a = svc.remember(principal=ANN, **pref())
    b = svc.remember(principal=ANN, **pref(label="Reply style", content="Short replies"), supersedes=[a.id])
    c = svc.remember(principal=ANN, **pref(content="Numbered lists"))
    assert c.id not in (a.id, b.id)


# --- conflicts ------------------------------------------------------------------------

def test_similar_memory_asks_before_overwrite(svc, store):
    a = svc.remember(principal=ANN, **pref(label="Report style", content="Weekly report as bullet lists with totals"))
    before = store.dump()
    new = pref(label="Report layout", content="Weekly report as numbered lists with totals")
    with pytest.raises(ConflictPending) as ei:
        svc.remember(principal=ANN, **new)
    assert ei.value.candidates == [a.id]
    assert a.id in str(ei.value) and "Report style" in str(ei.value)
    assert store.dump() == before
    # a wrong id is not a confirmation
    with pytest.raises(ConflictPending):
        svc.remember(principal=ANN, conflict_resolution="replace", conflict_id="0" * 24, **new)
    assert store.dump() == before
    b = svc.remember(principal=ANN, conflict_resolution="replace", conflict_id=ei.value.conflict_id, **new)
    old = svc.get(a.id)
    assert old.superseded_by == [b.id] and not old.active
    assert b.supersedes == [a.id] and b.active


def test_keep_both(svc):
    a = svc.remember(principal=ANN, **pref(label="Report style", content="Weekly report as bullet lists with totals"))
    new = pref(label="Report layout", content="Weekly report as numbered lists with totals")
    with pytest.raises(ConflictPending) as ei:
        svc.remember(principal=ANN, **new)
    b = svc.remember(principal=ANN, conflict_resolution="keep_both", conflict_id=ei.value.conflict_id, **new)
    assert {m.id for m in svc.memories()} == {a.id, b.id}


def test_auto_captured_context_supersedes_silently(svc):
    a = svc.remember(principal=ANN, **pref(kind="context", source="extraction",
                                           label="Current project", content="Working on the spring campaign launch"))
    b = svc.remember(principal=ANN, **pref(kind="context", source="extraction",
                                           label="Project now", content="Working on the summer campaign launch"))
    assert svc.get(a.id).superseded_by == [b.id]
    assert [m.id for m in svc.memories()] == [b.id]


def test_auto_captured_context_never_supersedes_on_similarity_alone(svc):
    # same words, no changed value: related context, both stay (issue 11)
    a = svc.remember(principal=ANN, **pref(kind="context", source="extraction",
                                           label="Current project", content="Working on the spring campaign launch"))
    b = svc.remember(principal=ANN, **pref(kind="context", source="extraction",
                                           label="Project detail", content="Working on the spring campaign launch video"))
    assert svc.get(a.id).superseded_by == []
    assert {m.id for m in svc.memories()} == {a.id, b.id}


def test_auto_captured_context_never_supersedes_a_humans_memory(svc, store):
    a = svc.remember(principal=ANN, **pref(kind="context", source="agent_tool",
                                           label="Current project", content="Working on the spring campaign launch"))
    before = store.dump()
    with pytest.raises(ConflictPending) as ei:
        svc.remember(principal=ANN, **pref(kind="context", source="extraction",
                                           label="Project now", content="Working on the summer campaign launch"))
    assert ei.value.candidates == [a.id]
    assert store.dump() == before
    assert svc.get(a.id).active


def test_unrelated_memories_do_not_conflict(svc):
    svc.remember(principal=ANN, **pref(label="Report style", content="Weekly report as bullet lists"))
    svc.remember(principal=ANN, **pref(label="Timezone", content="Lives in Lisbon, schedule after 9am WET"))
    assert len(svc.memories()) == 2


def test_same_subclass_same_platform_conflicts_regardless_of_text(svc):
    a = svc.remember(principal=OPS, **budget())
    new = budget(label="Facebook ceiling", content="zzz", properties={"platform": "meta", "amount": 45000,
                                                                          "currency": "USD", "period": "monthly"})
    with pytest.raises(ConflictPending) as ei:
        svc.remember(principal=OPS, **new)
    assert ei.value.candidates == [a.id]
    # another platform with the same words is not a conflict
    g = svc.remember(principal=OPS, **budget(label="Google monthly spend cap", content=a.content,
                                             properties={"platform": "google", "amount": 40000,
                                                         "currency": "USD", "period": "monthly"}))
    assert g.active and svc.get(a.id).active


def test_explicit_supersedes_skips_detection(svc):
    a = svc.remember(principal=OPS, **budget())
    b = svc.remember(principal=OPS, supersedes=[a.id], **budget(label="Meta cap v2", properties={
        "platform": "meta", "amount": 45000, "currency": "USD", "period": "monthly"}))
    assert svc.get(a.id).superseded_by == [b.id] and b.supersedes == [a.id]
    with pytest.raises(UnknownMemory):
        svc.remember(principal=OPS, supersedes=["f" * 32], **budget(label="v3"))


# --- supersede / restore / delete ------------------------------------------------------

def test_supersede_by_id_and_ownership(svc):
    a = svc.remember(principal=ANN, **pref())
    b = svc.remember(principal=ANN, **pref(label="Tone", content="Casual tone in chat"))
    with pytest.raises(UnknownMemory, match="^no memory"):  # not Bob's to read: as if absent
        svc.supersede(a.id, b.id, principal=BOB)
    with pytest.raises(NotAuthorized, match="do not own"):  # an operator reads it but does not own it
        svc.supersede(a.id, b.id, principal=OPS)
    nb = svc.supersede(a.id, b.id, principal=ANN)
    assert nb.id == b.id and nb.supersedes == [a.id]
    with pytest.raises(InvalidInput, match="already superseded"):
        svc.supersede(a.id, b.id, principal=ANN)
    with pytest.raises(InvalidInput, match="cycle"):
        svc.supersede(b.id, a.id, principal=ANN)
    with pytest.raises(InvalidInput, match="itself"):
        svc.supersede(b.id, b.id, principal=ANN)


def test_supersede_with_new_fields(svc):
    a = svc.remember(principal=OPS, **budget())
    b = svc.supersede(a.id, budget(label="Meta cap Q2", properties={"platform": "meta", "amount": 50000,
                                                                   "currency": "USD", "period": "monthly"}),
                      principal=OPS)
    assert b.properties["amount"] == 50000.0 and svc.get(a.id).superseded_by == [b.id]
    with pytest.raises(NotAuthorized, match="operator-gated"):
        svc.supersede(b.id, pref(), principal=ANN)


def test_restore_refused_while_superseder_active_then_allowed_after_delete(svc, store):
    a = svc.remember(principal=OPS, **budget())
    b = svc.remember(principal=OPS, supersedes=[a.id], **budget(label="Meta cap v2"))
    with pytest.raises(NotAuthorized, match="operator-only"):
        svc.restore(a.id, principal=ANN)
    before = store.dump()
    with pytest.raises(RestoreRefused, match=b.id):
        svc.restore(a.id, principal=OPS)
    assert store.dump() == before
    with pytest.raises(NotAuthorized, match="operator-only"):
        svc.delete(b.id, principal=ANN)
    svc.delete(b.id, principal=OPS)
    with pytest.raises(UnknownMemory):
        svc.get(b.id)
    # seed §9: the pointer persists on the old node; the derived forward pointer is gone
    old = svc.get(a.id)
    assert old.superseded_by == [b.id] and not old.active
    # the deleted memory leaves only its tombstone (no label, content or properties)
    left = {q.predicate.value.rsplit("#", 1)[-1]: q.object for q in store.asserted() if q.subject == NamedNode(b.iri)}
    assert set(left) == {"type", "deletedAt", "deletedBy"}
    assert left["type"] == NamedNode("https://reckon.dev/ns/core#DeletedMemory")
    assert [e.event for e in svc.history(b.id)] == ["superseded", "deleted"]
    restored = svc.restore(a.id, principal=OPS)
    assert restored.active and restored.superseded_by == [] and restored.author == "olga"


def test_restore_refused_when_a_live_memory_conflicts(svc):
    a = svc.remember(principal=ANN, **pref(label="Report style", content="Weekly report as bullet lists"))
    b = svc.remember(principal=ANN, **pref(label="Other", content="Unrelated gardening note"), supersedes=[a.id])
    svc.delete(b.id, principal=OPS)
    c = svc.remember(principal=ANN, **pref(label="Report style", content="Weekly report as numbered lists"))
    with pytest.raises(RestoreRefused, match=c.id):
        svc.restore(a.id, principal=OPS)


def test_delete_old_memory_keeps_newer_authoritative(svc):
    a = svc.remember(principal=OPS, **budget())
    b = svc.remember(principal=OPS, supersedes=[a.id], **budget(label="Meta cap v2"))
    svc.delete(a.id, principal=OPS)
    nb = svc.get(b.id)
    # the newer memory stays active; the lineage keeps the deleted one as a tombstone
    assert nb.active and nb.supersedes == [a.id]
    assert [(e.id, e.event, e.label) for e in svc.history(b.id)] == [(b.id, "current", "Meta cap v2"),
                                                                    (a.id, "deleted", None)]


# --- update (three-state) ----------------------------------------------------------------

def test_update_three_state(svc):
    exp = datetime(2027, 1, 1, tzinfo=UTC)
    m = svc.remember(principal=OPS, **budget(expires_at=exp))
    u = svc.update(m.id, principal=Principal.operator(person="pat"), content="New text")
    assert (u.content, u.label, u.importance, u.expires_at) == ("New text", m.label, 5, exp)  # absent untouched
    assert u.author == "pat" and u.updated_at >= m.updated_at
    u = svc.update(m.id, principal=OPS, expires_at=None)  # None removes
    assert u.expires_at is None and u.content == "New text"
    u = svc.update(m.id, principal=OPS, properties={"amount": 45000})  # per key
    assert u.properties == {"platform": "meta", "amount": 45000.0, "currency": "USD", "period": "Monthly"}


def test_update_refusals_leave_store_identical(svc, store):
    m = svc.remember(principal=OPS, **budget())
    before = store.dump()
    with pytest.raises(InvalidInput) as ei:
        svc.update(m.id, principal=OPS, label=None)
    assert ei.value.field == "label"
    with pytest.raises(ShapeViolation) as ei2:
        svc.update(m.id, principal=OPS, properties={"amount": None})
    assert ei2.value.violations[0]["constraint"] == "sh:MinCountConstraintComponent"
    with pytest.raises(InvalidInput) as ei:
        svc.update(m.id, principal=OPS, scope="user")
    assert ei.value.field == "scope"
    with pytest.raises(UnknownMemory):
        svc.update("0" * 32, principal=OPS, label="x")
    with pytest.raises(UnknownMemory):
        svc.get("not-an-id")
    assert store.dump() == before


# --- reads ----------------------------------------------------------------------------

def test_memories_filters(svc):
    a = svc.remember(principal=ANN, **pref())
    b = svc.remember(principal=OPS, **budget())
    assert [m.id for m in svc.memories(kind="objective")] == [b.id]
    assert [m.id for m in svc.memories(scope="user")] == [a.id]
    assert [m.id for m in svc.memories(subclass="BudgetConstraintMemory")] == [b.id]
    assert [m.id for m in svc.memories(subclass=MK + "BudgetConstraintMemory")] == [b.id]
    with pytest.raises(InvalidInput):
        svc.memories(kind="nope")


def test_expiry_against_in_graph_clock(svc, store):
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    set_clock(store, t0)
    m = svc.remember(principal=ANN, **pref(expires_at=t0 + timedelta(days=1)))
    assert svc.get(m.id).active
    set_clock(store, t0 + timedelta(days=2))
    assert not svc.get(m.id).active
    assert svc.memories() == [] and [x.id for x in svc.memories(active_only=False)] == [m.id]


def test_history_walks_both_directions_oldest_first(svc):
    a = svc.remember(principal=OPS, **budget())
    b = svc.remember(principal=OPS, supersedes=[a.id], **budget(label="v2"))
    c = svc.remember(principal=OPS, supersedes=[b.id], **budget(label="v3"))
    for start in (a.id, b.id, c.id):
        h = svc.history(start)
        assert [e.id for e in h] == [a.id, b.id, c.id]
        assert [e.event for e in h] == ["superseded", "superseded", "current"]
        assert h[1].supersedes == [a.id] and h[1].superseded_by == [c.id]
        assert all(e.source == "operator" and e.author == "olga" for e in h)


def test_judge_is_pluggable(store):
    from reckon.memory import MemoryService, Subject

    seen = {}

    class EveryOther:
        def judge(self, new: Subject, candidates):
            seen["new"], seen["cands"] = new.label, sorted(c.label for c in candidates)
            return [c.id for c in candidates if c.label == "Keep me?" and new.label == "Newcomer"]

    svc = MemoryService(store, judge=EveryOther())
    a = svc.remember(principal=ANN, **pref(label="Keep me?", content="alpha"))
    svc.remember(principal=ANN, **pref(label="Unrelated", content="beta"))
    with pytest.raises(ConflictPending) as ei:
        svc.remember(principal=ANN, **pref(label="Newcomer", content="gamma"))
    assert ei.value.candidates == [a.id]
    assert seen == {"new": "Newcomer", "cands": ["Keep me?", "Unrelated"]}


def test_public_exports():
    import reckon.memory as mem

    assert mem.__all__ == sorted(mem.__all__)
    assert {"MemoryService", "Principal", "Memory", "HistoryEntry", "Conflict", "ConflictJudge"} <= set(mem.__all__)
    from reckon.api import Principal as ApiPrincipal

    assert ApiPrincipal is mem.Principal
