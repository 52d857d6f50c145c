"""Regressions from a fresh-user run (seed 003 §4 and §9).

1. A member could "supersede" their own memory with someone else's private memory (or a
   company memory): the call succeeded, echoed the other memory back, and gave it a
   derived ``supersedes`` pointer. Nobody may use a memory they could not supersede.
2. Re-using a label overwrote a human's company memory in place with another person's
   text (no ConflictPending, history lost). A same-label write by someone else, or from
   another source, now asks before overwriting; ``replace`` supersedes (lineage kept).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reckon import ConflictPending, NotAuthorized, Principal, UnknownMemory


@pytest.fixture()
def tenant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    from reckon import Engine

    return Engine(tmp_path).create_tenant("acme")


LEE, KIM = Principal(person="lee"), Principal(person="kim")
DANA, SAM = Principal(person="dana", role="operator"), Principal(person="sam", role="operator")


def _mine(t, who, label, content):  # type: ignore[no-untyped-def]
    return t.remember(source="agent_tool", kind="fact", scope="user", importance=4,
                      label=label, content=content, principal=who)


def test_member_cannot_supersede_with_someone_elses_private_memory(tenant) -> None:  # type: ignore[no-untyped-def]
    lee = _mine(tenant, LEE, "Lee note", "Lee likes tables")
    kim = _mine(tenant, KIM, "Kim secret", "Kim's salary is 90k")
    before = tenant.dump()
    # Kim's private memory is not Lee's to read: it is reported as absent (issue 10)
    with pytest.raises(UnknownMemory, match="no memory"):
        tenant.supersede(lee.id, kim.id, principal=LEE)
    assert tenant.dump() == before
    assert tenant.get(kim.id).supersedes == []


def test_member_cannot_supersede_with_a_company_memory(tenant) -> None:  # type: ignore[no-untyped-def]
    lee = _mine(tenant, LEE, "Lee note", "Lee likes tables")
    co = tenant.remember(source="operator", kind="fact", scope="company", importance=4,
                         label="Office", content="HQ is in Denver", principal=DANA)
    with pytest.raises(NotAuthorized):
        tenant.supersede(lee.id, co.id, principal=LEE)
    assert tenant.get(co.id).supersedes == []


def test_own_replacement_still_works(tenant) -> None:  # type: ignore[no-untyped-def]
    a = _mine(tenant, LEE, "Lee note", "Lee likes tables")
    b = _mine(tenant, LEE, "Answer length", "Short answers please")
    assert tenant.supersede(a.id, b.id, principal=LEE).id == b.id
    assert not tenant.get(a.id).active


def test_same_label_from_another_person_asks_before_overwriting(tenant) -> None:  # type: ignore[no-untyped-def]
    a = tenant.remember(source="operator", kind="fact", scope="company", importance=4,
                        label="Office", content="HQ is in Denver", principal=DANA)
    before = tenant.dump()
    with pytest.raises(ConflictPending) as ei:
        tenant.remember(source="operator", kind="fact", scope="company", importance=4,
                        label="Office", content="HQ moved to Austin", principal=SAM)
    assert a.id in ei.value.candidates
    assert tenant.dump() == before
    assert tenant.get(a.id).content == "HQ is in Denver"
    new = tenant.remember(source="operator", kind="fact", scope="company", importance=4,
                          label="Office", content="HQ moved to Austin", principal=SAM,
                          conflict_resolution="replace", conflict_id=ei.value.conflict_id)
    assert new.id != a.id and new.content == "HQ moved to Austin"
    old = tenant.get(a.id)
    assert old.content == "HQ is in Denver" and not old.active  # lineage kept, not clobbered
    assert [h.id for h in tenant.history(new.id)][:2] == [a.id, new.id]


def test_restating_your_own_memory_still_updates_in_place(tenant) -> None:  # type: ignore[no-untyped-def]
    a = tenant.remember(source="operator", kind="fact", scope="company", importance=4,
                        label="Office", content="HQ is in Denver", principal=DANA)
    b = tenant.remember(source="operator", kind="fact", scope="company", importance=5,
                        label="office ", content="HQ is in Denver, Colorado", principal=DANA)
    assert b.id == a.id and b.importance == 5
    c = tenant.remember(source="operator", kind="fact", scope="company", importance=5,
                        label="Office", content="hq is in  denver, colorado", principal=SAM)
    assert c.id == a.id  # same text from someone else: a restatement, nothing to ask
