"""Property: dedup through ``Tenant.remember`` is the same whether a (scope, stakeholder)
group comes from the saved peer index (``<tenant>/peers/index.bin``, read by a fresh
engine), from the store, or was brought forward from another engine's commits -- checked
against an independent oracle: a write dedups exactly when an active memory of the same
scope and owner has the same label up to case and runs of white space."""

from __future__ import annotations

import uuid
from itertools import count

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reckon.api import Engine, Principal
from reckon.memory import _peers

LABELS = ["alpha plan", "ALPHA   plan", " Alpha Plan ", "bravo note", "Bravo  NOTE", "charlie item"]
PEOPLE = ["p0", "p1", "p2", None]  # None: company scope, written by an operator
_ids = count()

op = st.tuples(st.sampled_from(PEOPLE), st.sampled_from(LABELS), st.sampled_from(["same", "fresh", "other"]))


def _key(label: str) -> str:  # the oracle's own normalisation (ASCII labels: case + white space)
    return " ".join(label.lower().split())


@pytest.fixture
def saving(monkeypatch):
    monkeypatch.setattr(_peers, "SAVE_EVERY", 0.0)


@settings(max_examples=12, deadline=None, database=None, phases=[Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op, min_size=1, max_size=14))
def test_dedup_matches_the_oracle_across_engines_and_the_saved_index(engine: Engine, saving, ops) -> None:
    tid = f"peerprop{next(_ids)}"
    engine.create_tenant(tid, company_name="Acme Inc.")
    tenants = {"same": engine.tenant(tid)}
    oracle: dict[tuple[str | None, str], str] = {}
    ops_principal = Principal.operator(person="ops")
    for person, label, where in ops:
        if where == "fresh":  # a new engine: its first write for a group reads the saved index
            tenants["same"].close()  # saves the file (a write never does)
            tenants["same"] = Engine(engine.data_dir).tenant(tid)
        t = tenants["same"] if where != "other" else tenants.setdefault("other", Engine(engine.data_dir).tenant(tid))
        content = f"w{uuid.uuid4().hex}"  # no word shared with any other memory: no conflict
        if person is None:
            m = t.remember(kind="fact", scope="company", importance=3, source="operator", principal=ops_principal,
                           label=label, content=content)
        else:
            m = t.remember(kind="preference", scope="user", importance=3, source="agent_tool",
                           principal=Principal(person=person), label=label, content=content)
        k = (person, _key(label))
        if k in oracle:
            assert m.id == oracle[k], (person, label)
        else:
            assert m.id not in oracle.values()
            oracle[k] = m.id
        assert m.label == label and m.content == content  # the dedup updated in place
    final = {(m.owner if m.scope == "user" else None, _key(m.label)): m.id
             for m in Engine(engine.data_dir).tenant(tid).memories()}
    assert final == oracle
