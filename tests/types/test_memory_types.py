"""The memory types of seed 004 (core, episodic, semantic, procedural, resource, vault,
belief) and seed 001's working memory, through ``Tenant.remember``: memory subclasses of
the shipped ``types`` module whose persistence is held by their shapes (working and
resource memories must expire, core and vault never do, a belief is never certain) and
derived by rules (permanent / transient); they reach the agent's tool schema and the
REST API with no code."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reckon import Principal, ShapeViolation

T0 = datetime(2026, 3, 1, 9, 0, 0, 250000, tzinfo=timezone(timedelta(hours=1)))
LEE = Principal(person="lee")
BASE = {"kind": "context", "scope": "user", "importance": 3, "source": "agent_tool", "principal": LEE}
TYPES = ["CoreMemory", "EpisodicMemory", "SemanticMemory", "ProceduralMemory", "ResourceMemory", "VaultMemory",
         "BeliefMemory", "WorkingMemory"]


@pytest.fixture(scope="module")
def tenant(engine):
    t = engine.create_tenant("types")
    t.tick(T0)
    return t


def _types_of(tenant, m) -> set[str]:
    rows = tenant.sparql(f"SELECT ?c WHERE {{ <{tenant.memory.iri(m.id).value}> a ?c }}")
    return {r["c"].value.rsplit("#", 1)[-1] for r in rows if r["c"].value.startswith("https://reckon.dev/ns/types#")}


def test_working_memory_expires_against_the_clock(tenant):
    w = tenant.remember(label="Current file", content="Editing engine/reckon/notes/service.py",
                        subclass="WorkingMemory", expires_at=T0 + timedelta(minutes=30), **BASE)
    assert _types_of(tenant, w) == {"WorkingMemory", "TransientMemory"}
    assert tenant.get(w.id).active is True
    tenant.tick(T0 + timedelta(minutes=30))
    assert tenant.get(w.id).active is False                 # core's expiry rule, no code of ours
    dump = tenant.dump()
    with pytest.raises(ShapeViolation) as e:
        tenant.remember(label="No ttl", content="forgot the ttl", subclass="WorkingMemory", **BASE)
    assert "expires_at is required" in str(e.value) and tenant.dump() == dump


def test_core_and_vault_are_permanent(tenant):
    c = tenant.remember(label="Agent role", content="You are the growth team's analyst.", subclass="CoreMemory",
                        **BASE)
    v = tenant.remember(label="Learning", content="Meta reports spend a day late.", subclass="VaultMemory", **BASE)
    assert _types_of(tenant, c) == {"CoreMemory", "PermanentMemory"}
    assert _types_of(tenant, v) == {"VaultMemory", "PermanentMemory"}
    for cls in ("CoreMemory", "VaultMemory"):
        with pytest.raises(ShapeViolation) as e:
            tenant.remember(label=f"{cls} expiring", content="x", subclass=cls,
                            expires_at=T0 + timedelta(days=400), **BASE)
        assert "permanent" in str(e.value)


def test_type_properties(tenant):
    r = tenant.remember(label="API docs", content="Meta Marketing API reference", subclass="ResourceMemory",
                        properties={"uri": "https://developers.facebook.com/docs/marketing-api"},
                        expires_at=T0 + timedelta(days=7), **BASE)
    assert r.properties == {"uri": "https://developers.facebook.com/docs/marketing-api"}
    with pytest.raises(ShapeViolation):
        tenant.remember(label="No uri", content="x", subclass="ResourceMemory", expires_at=T0 + timedelta(days=7),
                        **BASE)
    e = tenant.remember(label="Run 7", content="Bisecting found the flaky commit.", subclass="EpisodicMemory",
                        properties={"session": "run-7"}, **BASE)
    assert e.properties == {"session": "run-7"}
    with pytest.raises(ShapeViolation):
        tenant.remember(label="Run 8", content="x", subclass="EpisodicMemory", **BASE)
    p = tenant.remember(label="Deploy", content="How we deploy", subclass="ProceduralMemory",
                        properties={"steps": ["build the wheel", "run the smoke test", "tag"]}, **BASE)
    assert sorted(next(iter(p.properties.values()))) == ["build the wheel", "run the smoke test", "tag"]
    b = tenant.remember(label="Belief", content="The CPA spike is seasonal.", subclass="BeliefMemory",
                        confidence=0.7, **BASE)
    assert b.subclass == "BeliefMemory"
    with pytest.raises(ShapeViolation) as err:
        tenant.remember(label="Certain belief", content="x", subclass="BeliefMemory", confidence=1, **BASE)
    assert "below 1" in str(err.value)
    s = tenant.remember(label="Pattern", content="Weekends convert better for us.", subclass="SemanticMemory", **BASE)
    assert _types_of(tenant, s) == {"SemanticMemory"}


def test_the_types_reach_the_tool_schema(tenant):
    [remember] = [d for d in tenant.tool_definitions(format="anthropic") if d["name"] == "remember"]
    titles = {v["title"] for v in remember["input_schema"]["properties"]["subclass"]["oneOf"]}
    assert set(TYPES) <= titles
    out = tenant.handle_tool_call("remember", {"label": "Scratch", "content": "tmp", "kind": "context",
                                               "scope": "user", "importance": 2,
                                               "subclass": {"name": "WorkingMemory", "properties": {}}}, LEE)
    assert out["ok"] is False and out["error"]["field"] == "expires_at"
