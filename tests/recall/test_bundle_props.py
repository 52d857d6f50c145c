"""Property: for random tenants and random conversation text, the bundle holds exactly
the company memories the live-context rule admits (seed 003 §8) — every active company
memory with importance >= 4 and confidence >= the floor, up to the cap, ranked by
importance, then newest, then IRI — and nothing superseded, expired, Disabled or below
High; the rendered text stays within the budget with correct omitted counts.

The expectation is computed here in Python from what the test wrote, independently of
the rules."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyoxigraph import Literal, NamedNode, Quad

from reckon.api import Engine, Principal
from reckon.store import SCHEMA

OPS = Principal.operator(person="dana")
READER = Principal(person="ann", teams=["growth"])
NOW = datetime(2026, 3, 23, 6, tzinfo=UTC)
RK = "https://reckon.dev/ns/core#"
XSD_INT = NamedNode("http://www.w3.org/2001/XMLSchema#integer")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"
    yield Engine(tmp_path_factory.mktemp("bundle-props"))
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old


memory_spec = st.fixed_dictionaries({
    "importance": st.integers(1, 5),
    "confidence": st.sampled_from([0.3, 0.5, 0.9, 1.0]),
    "expiry": st.sampled_from([None, None, -3, 5]),  # days from the clock
    "superseded": st.booleans(),
    "kind": st.sampled_from(["fact", "objective", "preference", "context"]),
    "successor_importance": st.integers(1, 5),
})

_words = st.sampled_from("budget campaign spring scale meta roas target brand voice hiring "
                         "lorem ipsum report weekly cap spend".split())


def _set_cap(tenant, cap: int) -> None:
    settings_node, p = NamedNode(RK + "settings"), NamedNode(RK + "liveContextCap")
    with tenant.store.transaction() as txn:
        txn.remove_pattern(settings_node, p, None, SCHEMA)
        txn.add(Quad(settings_node, p, Literal(str(cap), datatype=XSD_INT), SCHEMA))


def _label() -> str:
    # unique tokens: the lexical conflict judge never pairs two of them
    return f"{uuid.uuid4().hex[:12]} {uuid.uuid4().hex[:12]}"


_n = iter(range(100_000))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(specs=st.lists(memory_spec, min_size=1, max_size=7), cap=st.sampled_from([2, 3, 50]),
       conversation=st.lists(_words, max_size=12).map(" ".join), budget=st.sampled_from([100_000, 2_000, 900]))
def test_bundle_holds_exactly_the_capped_live_company_memories(engine, specs, cap, conversation, budget):
    t = engine.create_tenant(f"p{next(_n)}")
    t.add_team("growth")
    t.tick(NOW)
    if cap != 50:
        _set_cap(t, cap)
    written = []  # (memory, eligible?)
    for s in specs:
        exp = NOW + timedelta(days=s["expiry"]) if s["expiry"] is not None else None
        m = t.remember(kind=s["kind"], scope="company", importance=s["importance"], source="operator",
                       principal=OPS, label=_label(), content=_label(), confidence=s["confidence"], expires_at=exp)
        if s["superseded"]:
            succ = t.supersede(m.id, dict(kind="fact", scope="company", importance=s["successor_importance"],
                                          source="operator", label=_label(), content=_label()), principal=OPS)
            written.append((succ, succ.importance >= 4))
            written.append((m, False))
        else:
            alive = exp is None or exp > NOW
            written.append((m, alive and m.importance >= 4 and m.confidence >= 0.5))
    eligible = [m for m, ok in written if ok]
    eligible.sort(key=lambda m: (-m.importance, -m.created_at.timestamp(), m.iri))
    expected = {m.id for m in eligible[:cap]}

    b = t.context(READER, conversation=conversation, budget_chars=budget)
    text = b.render()
    assert len(text) <= budget
    shown = set(b.ids())
    never = {m.id for m, ok in written if not ok}
    assert not shown & never
    assert shown <= expected
    assert b.omitted_total == len(expected) - len(shown) + b.omitted.get("business", 0) + b.omitted.get(
        "conflicts", 0)
    assert sum(blk.omitted for blk in b.blocks) == len(expected) - len(shown)
    if budget == 100_000:
        assert shown == expected
    if shown != expected:  # something was dropped: High ones go first
        dropped = expected - shown
        crit_dropped = {m.id for m in eligible if m.id in dropped and m.importance == 5}
        if crit_dropped:
            assert not {m.id for m in eligible if m.id in shown and m.importance == 4}
    # the Disabled tier never appears anywhere
    disabled = {m.id for m, _ in written if m.importance == 1}
    assert not disabled & shown
    for m, _ in written:
        if m.importance == 1:
            assert not disabled & {h.memory.id for h in t.search(m.label, principal=READER, importance="all")}
    t.engine.delete_tenant(t.id)
