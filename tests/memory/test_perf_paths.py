"""The write path's peer index (dedup / conflict candidates kept per store generation)
agrees with reading the peers by query, and sees writes it did not make: another
writer in the same process and another ``TenantStore`` on the same directory (as a
second process would open it)."""

from __future__ import annotations

import pytest
from pyoxigraph import Literal, Quad

from reckon._errors import ConflictPending
from reckon.memory import _rdf as R
from reckon.memory.service import MemoryService
from reckon.store import TenantStore

from .conftest import ANN, BOB, OPS, reasoner_factory


class _NoGenerations:
    """The tenant store without ``generation``: the service reads peers by query."""

    def __init__(self, store):
        self._store = store

    def __getattr__(self, name):
        if name in ("generation", "last_commit"):
            raise AttributeError(name)
        return getattr(self._store, name)


def pref(**kw):
    d = dict(kind="preference", scope="user", importance=3, source="agent_tool",
             label="Report style", content="Weekly report as bullet lists with totals")
    d.update(kw)
    return d


SCRIPT = [
    (ANN, pref()),
    (ANN, pref(label="Timezone", content="Lives in Lisbon, schedule after 9am")),
    (BOB, pref(label="Report style", content="Bob wants tables")),           # other owner: no dedup
    (ANN, pref(label="  report STYLE ", content="Weekly report as tables")),  # dedup -> update
    (ANN, pref(label="Report layout", content="Weekly report as numbered lists with totals")),  # conflict
    (OPS, pref(scope="team", teams=["growth"], source="operator", label="Team report",
               content="Growth team weekly digest")),
    (OPS, pref(scope="team", teams=["ads"], source="operator", label="Team report",
               content="Ads team weekly digest")),  # another team set: no dedup
    (OPS, pref(scope="team", teams=["growth"], source="operator", label="Team digest",
               content="Growth team monthly digest")),  # conflict: another value of the same attribute
    (OPS, pref(scope="company", kind="fact", source="operator", label="Fiscal year", content="Starts in April")),
    (OPS, pref(scope="company", kind="fact", source="operator", label="Fiscal year start",
               content="Fiscal year starts in January")),  # conflict
    (OPS, dict(kind="objective", scope="company", importance=5, source="operator", label="Meta cap",
               content="Meta spend under 40k a month", subclass="BudgetConstraintMemory",
               properties={"platform": "meta", "amount": 40000, "currency": "USD", "period": "monthly"})),
    (OPS, dict(kind="objective", scope="company", importance=5, source="operator", label="Facebook ceiling",
               content="zzz", subclass="BudgetConstraintMemory",
               properties={"platform": "meta", "amount": 45000, "currency": "USD", "period": "monthly"})),
]


def _run(svc):
    """Outcome of each SCRIPT write, by labels (ids are random): the memory's label and
    how many active memories share its owner, or the conflicting labels."""
    out = []
    for who, fields in SCRIPT:
        try:
            m = svc.remember(principal=who, **fields)
            out.append(("ok", m.label, m.scope, m.owner, tuple(m.teams)))
        except ConflictPending as e:
            out.append(("conflict", tuple(sorted(svc.get(c).label for c in e.candidates))))
    out.append(sorted((m.label, m.content) for m in svc.memories()))
    return out


def test_index_agrees_with_the_query_path(make_store):
    indexed = _run(MemoryService(make_store("t1")))
    queried = _run(MemoryService(_NoGenerations(make_store("t2"))))
    assert indexed == queried
    kinds = [r[0] for r in indexed[:-1]]
    assert kinds.count("conflict") == 4 and kinds[3] == "ok"
    assert indexed[3][1] == "  report STYLE "  # the dedup updated the label in place
    assert len(indexed[-1]) == 7  # 12 writes - 4 conflicts - 1 dedup


def test_writes_of_another_store_instance_are_seen(make_store, tmp_path):
    st = make_store("shared")
    a = MemoryService(st)
    first = a.remember(principal=ANN, **pref(label="Warm", content="warm the index"))
    other = TenantStore(tmp_path / "shared", reasoner_factory=reasoner_factory(), linger=0)
    try:
        st.release()
        b = MemoryService(other)
        made = b.remember(principal=ANN, **pref())
        other.release()
        # dedup against the other writer's memory
        again = a.remember(principal=ANN, **pref(content="Weekly report as tables"))
        assert again.id == made.id and again.content == "Weekly report as tables"
        st.release()
        # the other writer deletes it: no dedup, no conflict any more
        b.delete(made.id, principal=OPS)
        other.release()
        fresh = a.remember(principal=ANN, **pref())
        assert fresh.id != made.id and fresh.active
        st.release()
        # the other writer adds a memory this one contradicts: a conflict
        b.remember(principal=ANN, **pref(label="Timezone", content="Lives in Lisbon"))
        other.release()
        with pytest.raises(ConflictPending) as ei:
            a.remember(principal=ANN, **pref(label="Time zone", content="No longer lives in Lisbon"))
        assert [a.get(c).label for c in ei.value.candidates] == ["Timezone"]
        assert a.get(first.id).active
    finally:
        other.close()


def test_raw_store_writes_in_the_same_process_are_seen(svc, store):
    m = svc.remember(principal=ANN, **pref())
    # another writer retracts the label and the type by hand: the memory leaves the index
    with store.transaction() as txn:
        txn.remove_pattern(m_iri := R.memory_iri("acme", m.id), R.LABEL, None, R.MEMORIES)
        txn.add(Quad(m_iri, R.LABEL, Literal("Something else entirely"), R.MEMORIES))
    with store.transaction() as txn:  # two commits the service did not make
        txn.add(Quad(m_iri, R.P_CONTENT, Literal("more"), R.MEMORIES))
    again = svc.remember(principal=ANN, **pref(content="Totally unrelated words"))
    assert again.id != m.id
    assert svc.remember(principal=ANN, **pref(label="something ELSE entirely")).id == m.id


def test_index_follows_supersede_and_restore(svc):
    a = svc.remember(principal=ANN, **pref())
    b = svc.remember(principal=ANN, supersedes=[a.id], **pref(label="Report style v2"))
    # the superseded memory no longer dedups: a new one is made
    c = svc.remember(principal=ANN, **pref(content="Totally unrelated words"))
    assert c.id not in (a.id, b.id)
    svc.delete(c.id, principal=OPS)
    svc.delete(b.id, principal=OPS)
    assert svc.restore(a.id, principal=OPS).active
    assert svc.remember(principal=ANN, **pref(content="x y")).id == a.id
