"""Bulk writes (issue 11): MemoryService.remember_many / Tenant.remember_many validate
per item, commit in one transaction, and are all or nothing."""

from __future__ import annotations

import pytest

from reckon import ConflictPending, InvalidInput, NotAuthorized, Principal, ShapeViolation
from reckon.api import Engine

ANN = Principal(person="ann")


@pytest.fixture()
def tenant(tmp_path, monkeypatch):
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    return Engine(tmp_path / "d", jobs=False).create_tenant("acme")


def item(label, content, **kw):
    return {**dict(kind="preference", scope="user", importance=3, source="agent_tool", label=label,
                   content=content), **kw}


def test_one_commit_for_the_batch(tenant):
    gen = tenant.store.generation()
    words = ["apple", "bridge", "cactus", "dolphin", "ember", "falcon", "glacier", "harbor", "igloo", "jungle",
             "kettle", "lantern", "meadow", "nectar", "orchid", "pebble", "quartz", "raven", "saffron", "tundra"]
    ms = tenant.remember_many([item(f"Note {w}", f"a remark about the {w}") for w in words], principal=ANN)
    assert len({m.id for m in ms}) == 20 and all(m.active for m in ms)
    assert tenant.store.generation() == gen + 1  # one transaction, one reasoning pass
    assert {m.label for m in tenant.memories()} == {f"Note {w}" for w in words}
    hits = tenant.search("remark about the orchid", principal=ANN)
    assert hits and hits[0].memory.label == "Note orchid"  # indexed in one batch


def test_a_bad_item_writes_nothing_and_is_named(tenant):
    tenant.remember(principal=ANN, **item("Existing", "keep this"))
    before = tenant.dump()
    cases = [
        ([item("A", "a"), item("B", "b", kind="nope")], InvalidInput, "items[1].kind"),
        ([item("A", "a"), item("B", "b", scope="company")], NotAuthorized, None),
        ([item("A", "a"), dict(item("C", "c"), subclass="BudgetConstraintMemory",
                               properties={"platform": "meta", "amount": -1, "currency": "USD",
                                           "period": "monthly"})], ShapeViolation, None),
        ([item("A", "a"), "not a dict"], InvalidInput, "items[1].item"),
    ]
    for batch, exc, field in cases:
        with pytest.raises(exc) as ei:
            tenant.remember_many(batch, principal=ANN)
        assert "items[1]" in str(ei.value) and getattr(ei.value, "index", None) == 1
        if field:
            assert ei.value.field == field
        assert tenant.dump() == before


def test_items_see_the_items_before_them(tenant):
    ms = tenant.remember_many([item("Same", "first text"), item("Same", "second text")], principal=ANN)
    assert ms[0].id == ms[1].id and ms[1].content == "second text"  # restated in the same batch
    with pytest.raises(ConflictPending) as ei:
        tenant.remember_many([item("Email length", "Keep emails short"),
                              item("Long emails", "Write long, detailed emails")], principal=ANN)
    assert ei.value.index == 1 and len(ei.value.candidates) == 1  # type: ignore[attr-defined]
    assert [m.label for m in tenant.memories()] == ["Same"]
    kept = tenant.remember_many([item("Email length", "Keep emails short"),
                                 item("Long emails", "Write long, detailed emails")], principal=ANN,
                                conflicts="keep_both")
    assert all(m.active for m in kept)
    tenant.remember(principal=ANN, **item("Report day", "Send the report on Friday"))
    before = len(tenant.memories())
    skipped = tenant.remember_many([item("Report day now", "Send the report on Monday"),
                                    item("Tone", "Friendly and warm")], principal=ANN, conflicts="skip")
    assert skipped[0] is None and skipped[1] is not None and skipped[1].label == "Tone"
    assert len(tenant.memories()) == before + 1
    with pytest.raises(InvalidInput):
        tenant.remember_many([item("x", "y")], principal=ANN, conflicts="overwrite")


def test_auto_captured_context_replaces_auto_captured_context_in_a_batch(tenant):
    ex = dict(kind="context", scope="user", importance=3, source="extraction")
    a, b = tenant.remember_many([dict(ex, label="Project", content="Working on the spring launch"),
                                 dict(ex, label="Project now", content="Working on the summer launch")],
                                principal=ANN)
    assert tenant.get(a.id).superseded_by == [b.id] and [m.id for m in tenant.memories()] == [b.id]
