"""The bundle's per-generation parts and the per-turn conversation embedding, through
``Tenant.context``.

``TenantRecall.context`` keeps everything of a bundle but the ranking (items, status
texts, conflicts, business lines, capped counts) per store generation and carries it to
a later generation only when no commit since touched what it was read from. These tests
check that no write -- of this engine, of another ``Engine`` on the same data directory,
of another process -- is ever answered with a stale bundle: each compares the next
bundle with the one a fresh process computes from the store (the oracle), and with the
value the write made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from reckon import ConflictPending
from reckon.api import Engine, Principal
from reckon.recall import HashingEmbedder

CHILD = Path(__file__).with_name("recall_child.py")
OPS = Principal.operator(person="dana", teams=["growth"])
ANN = Principal(person="ann", teams=["growth"])
ENV = dict(os.environ, RECKON_EMBEDDER="hashing")
T0 = datetime(2026, 3, 2, 9, 15, tzinfo=UTC)


def put(tenant, label: str, importance: int, *, scope: str = "company", principal: Principal = OPS,
        content: str | None = None, **kw):  # type: ignore[no-untyped-def]
    fields = dict(kind="fact", scope=scope, importance=importance, principal=principal, label=label,
                  content=content or f"{label} details", source="operator" if principal.is_operator else "agent_tool",
                  **kw)
    try:
        return tenant.remember(**fields)
    except ConflictPending as e:
        return tenant.remember(**fields, conflict_resolution="keep_both", conflict_id=e.conflict_id)


def budget_cap(tenant):  # type: ignore[no-untyped-def]
    return tenant.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                           label="Meta monthly spend cap", content="Keep Meta spend under $40k a month.",
                           subclass="BudgetConstraintMemory",
                           properties={"platform": "meta", "amount": 40000, "currency": "USD", "period": "monthly"})


def child(data_dir: Path, tenant: str, *args: str) -> str:
    p = subprocess.run([sys.executable, str(CHILD), str(data_dir), tenant, *args],
                       capture_output=True, text=True, timeout=180, env=ENV)
    assert p.returncode == 0, p.stderr
    return p.stdout


def shape(bundle) -> dict:  # type: ignore[no-untyped-def]
    """What a bundle says, without its generation time and ranking scores."""
    d = bundle.model_dump(mode="json", exclude={"generated_at"})
    for blk in d["blocks"]:
        for it in blk["items"]:
            it.pop("similarity", None)
    return d


_ORACLE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from reckon.api import Engine, Principal
t = Engine(sys.argv[2], embedder="hashing", jobs=False).tenant(sys.argv[3])
b = t.context(Principal(person="ann", teams=["growth"]), record_access=False)
d = b.model_dump(mode="json", exclude={"generated_at"})
for blk in d["blocks"]:
    for it in blk["items"]:
        it.pop("similarity", None)
print(json.dumps(d))
"""


def oracle(data_dir: Path, tenant: str) -> dict:
    """The bundle of ``ANN`` without a conversation, computed by a fresh process."""
    engine_dir = str(Path(__file__).resolve().parents[2] / "engine")
    p = subprocess.run([sys.executable, "-c", _ORACLE, engine_dir, str(data_dir), tenant],
                       capture_output=True, text=True, timeout=180, env=ENV)
    assert p.returncode == 0, p.stderr
    return dict(json.loads(p.stdout.strip().splitlines()[-1]))


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return Engine(tmp_path, embedder="hashing", jobs=False)


@pytest.fixture
def tenant(engine: Engine):  # type: ignore[no-untyped-def]
    t = engine.create_tenant("acme", company_name="Acme Inc.")
    t.add_team("growth")
    t.add_team("sales")
    t.tick(T0)
    return t


def test_every_kind_of_write_in_this_process_shows_in_the_next_bundle(tenant, tmp_path: Path) -> None:
    cap = budget_cap(tenant)
    tenant.set_spend("meta", 20000)
    a = put(tenant, "Invoices go out on the first Monday", 5)
    first = tenant.context(ANN)
    assert a.id in first.ids() and first.item(cap.id).status_text.startswith("within_budget — 50 %")
    again = tenant.context(ANN)
    assert shape(again) == shape(first)  # the same generation: the same bundle
    again.blocks[0].items[0].overrides.append("mutated by the caller")
    assert shape(tenant.context(ANN)) == shape(first)  # a caller's edit never reaches the next bundle

    medium = put(tenant, "The office plants are watered on Fridays", 3)  # not eligible: the parts carry over
    b = tenant.context(ANN)
    assert medium.id not in b.ids() and shape(b) == shape(first)

    tenant.set_spend("meta", 41000)  # business data: the derived status moves
    assert tenant.context(ANN).item(cap.id).status_text.startswith("over_budget — 102.5 %")

    new = put(tenant, "Every launch needs a legal review", 5)  # a new live member
    assert new.id in tenant.context(ANN).ids()

    tenant.update(a.id, principal=OPS, content="Invoices go out on the second Monday")  # an edit
    assert tenant.context(ANN).item(a.id).content == "Invoices go out on the second Monday"

    tenant.update(medium.id, principal=OPS, importance=5)  # a non-member becomes live
    assert medium.id in tenant.context(ANN).ids()

    tenant.update(new.id, principal=OPS, importance=2)  # a live member leaves
    assert new.id not in tenant.context(ANN).ids()

    mine = put(tenant, "I review every launch myself", 4, scope="user", principal=ANN)
    assert mine.id in tenant.context(ANN).ids()

    weekly = put(tenant, "Weekly report day", 5, content="The weekly report goes out on Monday")
    assert not tenant.context(ANN).conflicts
    own = put(tenant, "Weekly report day", 4, scope="user", principal=ANN, content="The weekly report goes out on Friday")
    got = tenant.context(ANN)  # a new pair for the conflict judge
    assert [(c.authoritative, c.overridden) for c in got.conflicts] == [(own.id, weekly.id)]
    assert got.item(weekly.id).overridden_by == own.id
    put(tenant, "Weekly report owner", 4, content="Lee owns the weekly report")
    assert [(c.authoritative, c.overridden) for c in tenant.context(ANN).conflicts] == [(own.id, weekly.id)]

    tenant.tick(datetime(2026, 3, 20, 9, tzinfo=UTC))  # the clock
    assert tenant.context(ANN).clock == datetime(2026, 3, 20, 9, tzinfo=UTC)

    assert shape(tenant.context(ANN, record_access=False)) == oracle(tmp_path, "acme")


def test_a_write_through_another_engine_on_the_same_data_dir(tenant, tmp_path: Path) -> None:
    a = put(tenant, "Invoices go out on the first Monday", 5)
    before = tenant.context(ANN)
    assert a.id in before.ids()
    other = Engine(tmp_path, embedder="hashing", jobs=False).tenant("acme")
    b = put(other, "Every launch needs a legal review", 5)
    other.update(a.id, principal=OPS, content="Invoices go out on the last Friday")
    after = tenant.context(ANN)
    assert b.id in after.ids()
    assert after.item(a.id).content == "Invoices go out on the last Friday"
    m = put(other, "Plants are watered on Fridays", 3)
    assert m.id not in tenant.context(ANN).ids()
    other.update(m.id, principal=OPS, importance=5)
    assert m.id in tenant.context(ANN).ids()
    assert shape(tenant.context(ANN, record_access=False)) == oracle(tmp_path, "acme")


def test_a_write_by_another_process(tenant, tmp_path: Path) -> None:
    a = put(tenant, "Invoices go out on the first Monday", 3)
    b = put(tenant, "Every launch needs a legal review", 5)
    first = tenant.context(ANN)
    assert a.id not in first.ids() and b.id in first.ids()
    child(tmp_path, "acme", "update", a.id, "5")  # another process makes a live
    assert a.id in tenant.context(ANN).ids()
    child(tmp_path, "acme", "update", b.id, "1")  # and b not
    assert b.id not in tenant.context(ANN).ids()
    new_id = child(tmp_path, "acme", "remember", "Coffee beans ordered weekly", "from the local roaster").strip()
    got = tenant.context(ANN)
    assert new_id not in got.ids() and a.id in got.ids()  # Medium: not preloaded
    assert shape(tenant.context(ANN, record_access=False)) == oracle(tmp_path, "acme")


def test_the_parts_are_per_principal_and_per_project(tenant) -> None:
    mine = put(tenant, "I review every launch myself", 4, scope="user", principal=ANN)
    lee = Principal(person="lee", teams=["sales"])
    assert mine.id in tenant.context(ANN).ids()
    assert mine.id not in tenant.context(lee).ids()
    assert mine.id in tenant.context(ANN).ids()


class CountingHashing(HashingEmbedder):
    """The hashing embedder, recording the texts of every encode call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    @property
    def queries(self) -> list[str]:
        return [t for c in self.calls for t in c]

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return super().encode(texts)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def test_a_new_turn_costs_one_encode_of_that_turn_and_ranks_by_the_recency_weighted_mean(tmp_path: Path) -> None:
    emb = CountingHashing()
    t = Engine(tmp_path, embedder=emb, jobs=False).create_tenant("acme", company_name="Acme Inc.")
    t.add_team("growth")
    t.tick(T0)
    ids = [put(t, label, 5).id for label in ("Spring campaign budget is fixed", "Newsletter tone is friendly",
                                             "Retargeting on TikTok is paused", "Weekly report goes out Monday")]
    t.recall.wait(timeout=60)
    turns = ["user: can we scale the spring campaign budget?", "assistant: the budget is fixed until April",
             "user: then what about the newsletter tone?"]
    emb.calls.clear()
    t.context(ANN, turns[:2])
    assert sorted(emb.queries) == sorted(turns[:2]) and len(emb.calls) == 1  # the turns, in one batch
    emb.calls.clear()
    b = t.context(ANN, turns)
    assert emb.calls == [[turns[2]]]  # the earlier turns come from the query cache
    # the ranking: cosine of each item's vector to the normalized sum of the turns' unit
    # vectors weighted 0.25 ** age (the newest turn age 0)
    ref = HashingEmbedder()
    q = _unit(sum(0.25 ** (len(turns) - 1 - i) * _unit(ref.encode([x])[0]) for i, x in enumerate(turns)))
    ix = t.recall.index.index
    for i in ids:
        v = ix.embedding(i)
        assert v is not None
        assert b.item(i).similarity == pytest.approx(float(v @ q), abs=1e-5)
    emb.calls.clear()
    t.context(ANN, "one string: " + " ".join(turns))  # a string is one text
    assert emb.calls == [["one string: " + " ".join(turns)]]
    emb.calls.clear()
    t.context(ANN, [*turns, "assistant: it stays friendly", "user: and the weekly report?"])
    assert emb.calls == [["user: and the weekly report?", "assistant: it stays friendly"]]  # two new: one batch


def test_the_turn_window(tmp_path: Path) -> None:
    from reckon.recall.bundle import _conversation_turns

    assert _conversation_turns([]) == [] and _conversation_turns("  ") == [] and _conversation_turns(None) == []
    many = [f"turn {i}" for i in range(10)]
    assert _conversation_turns(many) == many[-6:]  # the last 6
    assert _conversation_turns(["a", " ", "b"]) == ["a", "b"]  # blank turns skipped
    long = ["x" * 1500, "y" * 800, "z" * 900]
    assert _conversation_turns(long) == ["y" * 800, "z" * 900]  # whole turns within 2,000 characters
    assert _conversation_turns(["w" * 5000]) == ["w" * 2000]  # the newest always, its last 2,000
    assert _conversation_turns("s" * 3000) == ["s" * 2000]
