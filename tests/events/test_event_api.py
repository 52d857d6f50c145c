"""The event graph through the public API (``Tenant.events``; seed 000 MAGMA, seed 004
Graph Memory): seed 000's WebGPU example, seed 004's impact query, entity deduplication
by label + type, immutable events, the node limit held as a tenant setting, refusals
that leave the store unchanged, Mermaid escaping, and the temporal relation against an
oracle for random times (hypothesis)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from itertools import permutations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon import InvalidInput, UnknownMemory

T0 = datetime(2026, 3, 1, 9, 0, 0, 123456, tzinfo=timezone(timedelta(hours=5, minutes=30)))


@pytest.fixture(scope="module")
def tenant(engine):
    return engine.create_tenant("events")


def test_seed_000_webgpu_example(tenant):
    """Seed 000: "a query about a WebGPU shader bug can surface ... the events that
    preceded it in the same session, the driver version mismatch identified as its cause,
    and every other session in which the same driver entity appeared"."""
    g = tenant.events
    g.record([
        {"id": "wg-s1", "kind": "episode", "label": "research session 1", "at": T0, "timeline": "wg"},
        {"id": "wg-mention", "label": "WebGPU is a graphics API", "at": T0 + timedelta(minutes=1),
         "timeline": "wg", "episode": "wg-s1", "mentions": [("WebGPU", "api")]},
        {"id": "wg-mismatch", "label": "Driver version mismatch", "at": T0 + timedelta(minutes=2),
         "timeline": "wg", "episode": "wg-s1", "mentions": [("Driver v531", "driver")]},
        {"id": "wg-bug", "label": "Shader compilation bug", "at": T0 + timedelta(minutes=3), "timeline": "wg",
         "episode": "wg-s1", "caused_by": ["wg-mismatch"], "mentions": [("WebGPU", "api"), ("driver V531", "driver")]},
        {"id": "wg-s2", "kind": "episode", "label": "research session 2", "at": T0 + timedelta(days=2),
         "timeline": "wg"},
        {"id": "wg-again", "label": "Driver v531 crashes the compositor", "at": T0 + timedelta(days=2, minutes=5),
         "timeline": "wg", "episode": "wg-s2", "mentions": [("Driver  v531", "driver")]},
    ])
    rel = g.related("wg-bug", depth=3)
    by_id = {r.node.id: r for r in rel}
    assert by_id["wg-mismatch"].distance == 1                      # cause (and previous in time)
    assert by_id["driver:driver v531"].edge == "mentions"
    assert by_id["wg-again"].distance == 2 and by_id["wg-again"].via in ("driver:driver v531", "wg-s2")
    assert {"wg-s1", "wg-mention", "wg-s2"} <= set(by_id)
    causal = g.related("wg-bug", edge_types=["causal"])
    assert [(r.edge, r.node.id) for r in causal] == [("causedBy", "wg-mismatch")]
    assert [(r.edge, r.node.id) for r in g.related("wg-mismatch", edge_types="causal")] == [("ledTo", "wg-bug")]
    drivers = g.entities("driver")
    assert [(e.id, e.label) for e in drivers] == [("driver:driver v531", "Driver v531")]  # one node, first label
    temporal = {r.node.id for r in g.related("wg-mention", edge_types=["temporal"])}
    assert temporal == {"wg-s1", "wg-mismatch"}                     # previous and next
    assert [e.id for e in g.timeline("wg")] == ["wg-s1", "wg-mention", "wg-mismatch", "wg-bug", "wg-s2", "wg-again"]
    assert g.get("wg-bug").at == (T0 + timedelta(minutes=3)).astimezone(UTC)


def test_seed_004_impact_of_changing_auth(tenant):
    """Seed 004: "What's affected if we change Auth?" -> the impact graph (transitive)."""
    g = tenant.events
    g.add_dependency(("UserService", "service"), ("Auth", "service"))
    g.add_dependency(("Billing", "service"), ("UserService", "service"))
    g.add_dependency(("Reports", "service"), ("Billing", "service"))
    g.add_dependency(("Search", "service"), ("Index", "service"))
    assert [x.id for x in g.impact(("auth", "service"))] == ["service:billing", "service:reports", "service:userservice"]
    assert [x.id for x in g.impact(("Reports", "service"))] == []
    deps = g.related(("UserService", "service"), edge_types=["dependency"])
    assert {(r.edge, r.node.id) for r in deps} == {("dependsOn", "service:auth"), ("dependedOnBy", "service:billing")}
    with pytest.raises(InvalidInput):
        g.add_dependency(("Auth", "service"), (" auth ", "service"))


def test_entities_are_one_per_label_and_type(tenant):
    g = tenant.events
    g.record([{"label": "Trip", "at": T0, "timeline": "dd", "mentions": [("Paris", "place"), ("Paris", "person"),
                                                                          ("ＰＡＲＩＳ", "place")]}])
    assert sorted(e.id for e in g.entities() if e.id.endswith(":paris")) == ["person:paris", "place:paris"]
    assert g.entity("paris", "place").label == "Paris" and g.entity("Lyon", "place") is None


def test_recording_again_is_idempotent_but_events_are_immutable(tenant):
    g = tenant.events
    first = g.record_event("kick-off", at=T0, timeline="imm", id="imm-1")
    assert g.wait(30)                                               # the semantic edges are a later commit
    gen = tenant.store.generation()
    assert g.record_event("kick-off", at=T0.astimezone(UTC), timeline="imm", id="imm-1") == first
    assert tenant.store.generation() == gen                         # nothing new: nothing written
    more = g.record_event("kick-off", at=T0, timeline="imm", id="imm-1", mentions=[("Dana", "person")])
    assert more.mentions == ("person:dana",) and g.get("imm-1").mentions == ("person:dana",)
    assert g.wait(30)
    dump = tenant.dump()
    for change in ({"label": "other"}, {"at": T0 + timedelta(seconds=1)}, {"timeline": "imm2"}, {"kind": "episode"}):
        with pytest.raises(InvalidInput) as e:
            g.record([{"id": "imm-1", "label": "kick-off", "at": T0, "timeline": "imm", **change}])
        assert e.value.field == "id" and "immutable" in str(e.value)
    assert tenant.dump() == dump


def test_the_node_limit_is_a_setting(engine):
    t = engine.create_tenant("events-limit")
    assert t.settings()["event_graph_max_nodes"] == 10000         # seed 004 graph.maxNodes
    t.set_setting("event_graph_max_nodes", 3)
    g = t.events
    g.record([{"label": "a", "at": T0, "mentions": [("X", "thing")]}])  # 2 nodes
    assert g.wait(30)
    dump = t.dump()
    with pytest.raises(InvalidInput) as e:
        g.record([{"label": "b", "at": T0, "mentions": [("Y", "thing")]}])  # would be 4
    assert "event_graph_max_nodes is 3" in str(e.value) and t.dump() == dump
    g.record([{"label": "c", "at": T0, "mentions": [("x", "thing")]}])  # 3: the entity exists
    t.set_setting("event_graph_max_nodes", 10)
    g.record([{"label": "b", "at": T0, "mentions": [("Y", "thing")]}])
    assert len(g.timeline()) == 3


BAD = [
    ({"label": "", "at": T0}, "label"),
    ({"label": "x"}, "at"),
    ({"label": "x", "at": datetime(2026, 3, 1)}, "at"),
    ({"label": "x", "at": "yesterday"}, "at"),
    ({"label": "x", "at": T0, "timeline": "a b"}, "timeline"),
    ({"label": "x", "at": T0, "id": "../x"}, "id"),
    ({"label": "x", "at": T0, "kind": "meeting"}, "kind"),
    ({"label": "x", "at": T0, "episode": "wg-mention"}, "episode"),   # an event, not an episode
    ({"label": "x", "at": T0, "caused_by": ["no-such"]}, "caused_by"),
    ({"label": "x", "at": T0, "caused_by": "wg-bug"}, "caused_by"),
    ({"label": "x", "at": T0, "mentions": [("Dana", "Person")]}, "mentions[0]"),
    ({"label": "x", "at": T0, "mentions": [("   ", "person")]}, "mentions[0]"),
    ({"label": "x", "at": T0, "mentions": ["Dana"]}, "mentions[0]"),
    ({"label": "x", "at": T0, "mentions": [{"label": "Dana", "type": "person", "x": 1}]}, "mentions[0]"),
    ({"label": "x\x00", "at": T0}, "label"),
    ({"label": "x", "at": T0, "colour": "red"}, "colour"),
]


@pytest.mark.parametrize("item,field", BAD, ids=[b[1] + str(i) for i, b in enumerate(BAD)])
def test_bad_events_are_refused_and_change_nothing(tenant, item, field):
    assert tenant.events.wait(30)                                  # earlier tests' semantic edges written
    dump = tenant.dump()
    with pytest.raises(InvalidInput) as e:
        tenant.events.record([{"label": "fine", "at": T0}, item])  # all or nothing
    assert e.value.field.startswith(f"events[1].{field}"), e.value.field
    assert tenant.dump() == dump


def test_reads_refuse_unknown_nodes_and_bad_options(tenant):
    g = tenant.events
    with pytest.raises(UnknownMemory):
        g.related("no-such-event")
    with pytest.raises(UnknownMemory):
        g.impact(("Nobody", "person"))
    with pytest.raises(InvalidInput):
        g.related("wg-bug", depth=0)
    with pytest.raises(InvalidInput):
        g.related("wg-bug", edge_types=["vibes"])


def test_mermaid_escapes_labels(tenant):
    g = tenant.events
    g.record([{"id": "mm-1", "label": 'x"] --> evil["<b>#1</b> | [done]\nnext line', "at": T0, "timeline": "mm",
               "mentions": [('Q"uote', "thing")]}])
    text = g.mermaid("mm-1")
    node_lines = [ln for ln in text.splitlines()[1:] if "-->" not in ln]
    assert node_lines == ['    n0["x#quot;#93; --#gt; evil#91;#quot;#lt;b#gt;#35;1#lt;/b#gt; #124; #91;done#93; next line"]',
                          '    n1(("Q#quot;uote (thing)"))']
    assert text.splitlines()[-1] == "    n0 -->|mentions| n1"


def test_tenants_do_not_share_the_graph(engine, tenant):
    other = engine.create_tenant("events-other")
    assert other.events.timeline("wg") == [] and other.events.entities() == []
    with pytest.raises(UnknownMemory):
        other.events.get("wg-bug")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(offsets=st.lists(st.integers(-10**6, 10**6), min_size=2, max_size=7),
       zones=st.lists(st.integers(-14 * 60, 14 * 60), min_size=7, max_size=7))
def test_temporal_edges_match_an_oracle(tenant, offsets, zones):
    """For random instants (microseconds, any offset), ev:before holds exactly for the
    strictly ordered pairs and ev:next exactly for each node and the nodes of the next
    later instant."""
    test_temporal_edges_match_an_oracle.n = getattr(test_temporal_edges_match_an_oracle, "n", 0) + 1
    tl = f"prop-{test_temporal_edges_match_an_oracle.n}"
    instants = [T0 + timedelta(microseconds=o * 997) for o in offsets]
    items = [{"id": f"{tl}-{i}", "label": f"e{i}", "timeline": tl,
              "at": t.astimezone(timezone(timedelta(minutes=zones[i])))} for i, t in enumerate(instants)]
    g = tenant.events
    g.record(items)
    ids = [it["id"] for it in items]
    for i, a in enumerate(ids):
        nxt = {r.node.id for r in g.related(a, edge_types=["temporal"]) if r.edge == "next"}
        later = sorted({t for t in instants if t > instants[i]})
        assert nxt == {ids[j] for j, t in enumerate(instants) if later and t == later[0]}
    rows = tenant.sparql("SELECT ?a ?b WHERE { GRAPH <urn:reckon:graph:inferred> { ?a "
                         "<https://reckon.dev/ns/events#before> ?b } }")
    got = {(r["a"].value.rsplit(":", 1)[-1], r["b"].value.rsplit(":", 1)[-1]) for r in rows}
    got = {p for p in got if p[0].startswith(tl + "-") and p[1].startswith(tl + "-")}
    want = {(ids[i], ids[j]) for i, j in permutations(range(len(ids)), 2) if instants[i] < instants[j]}
    assert got == want


def test_export_then_import_keeps_notes_events_and_experience(engine, tmp_path):
    """The three asserted graphs of issue 15 travel with a tenant: export, import under a
    new id, and the notes, the event graph (with its derived edges) and the strategy
    counts are the same."""
    from reckon import Principal

    src = engine.create_tenant("events-export")
    p = Principal(person="lee")
    src.notes.put("project/x/plan/outline", {"steps": [1, 2]}, principal=p)
    src.events.record([{"id": "a", "label": "a", "at": T0, "mentions": [("Dana", "person")]},
                       {"id": "b", "label": "b", "at": T0 + timedelta(hours=1), "caused_by": ["a"]}])
    for _ in range(2):
        src.experience.record("fix it", "success", principal=p, strategy="bisect")
    path = src.export(tmp_path / "x.trig")
    copy = engine.import_tenant("events-import", path)
    assert copy.notes.get("project/x/plan/outline").value == {"steps": [1, 2]}
    assert [x.id for x in copy.events.impact("a")] == ["b"]
    assert {r.node.id for r in copy.events.related("a")} == {"b", "person:dana"}
    assert copy.experience.strategies()[0].success_count == 2
    assert src.verify_export(path)  # (the copy holds the same data under its own tenant id)
