"""Keyed shared notes through the public API (``Tenant.notes``; seed 000 Transit):
put / get / list by prefix / delete, compare-and-set (atomic across processes), expiry
by the in-graph clock, namespace listing, refusals that leave the store unchanged, and a
property-based history checked against an independent dictionary model."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon import InvalidInput, Principal

HERE = Path(__file__).resolve().parent
LEE, SAM = Principal(person="lee"), Principal(person="sam")
T0 = datetime(2026, 3, 1, 9, 15, 0, 123456, tzinfo=timezone(timedelta(hours=2)))


@pytest.fixture(scope="module")
def tenant(engine):
    t = engine.create_tenant("notes")
    t.tick(T0)
    return t


def test_the_seed_coordination_sequence(tenant):
    """Seed 000's sequence: an orchestrator writes the plan, two specialists read it and
    write findings under their sections, a writer lists and reads them and writes a draft."""
    n = tenant.notes
    plan = {"title": "WebGPU wiki", "sections": ["section_1", "section_2"]}
    first = n.put("project/webgpu-wiki/planning/outline", plan, principal=Principal(person="orchestrator"))
    assert (first.version, first.project, first.namespace, first.name) == (1, "webgpu-wiki", "planning", "outline")
    for who, section in (("spec-a", "section_1"), ("spec-b", "section_2")):
        got = n.get("project/webgpu-wiki/planning/outline")
        assert got is not None and got.value == plan and got.author == "orchestrator"
        n.put(f"project/webgpu-wiki/findings/{section}", {"section": section, "by": who}, principal=Principal(person=who))
    found = n.list("project/webgpu-wiki/findings/")
    assert [x.key for x in found] == ["project/webgpu-wiki/findings/section_1", "project/webgpu-wiki/findings/section_2"]
    assert [x.author for x in found] == ["spec-a", "spec-b"]
    n.put("project/webgpu-wiki/output/draft", "# WebGPU\n\nDraft…", principal=Principal(person="writer"))
    assert [(s.namespace, s.count) for s in n.namespaces("webgpu-wiki")] == [
        ("findings", 2), ("output", 1), ("planning", 1)]
    assert n.get("project/webgpu-wiki/output/draft").value == "# WebGPU\n\nDraft…"
    assert n.list("project/webgpu-wiki/find") == found  # any leading part of a key
    assert n.list("project/other/") == []


def test_latest_write_wins_and_versions_grow(tenant):
    n = tenant.notes
    key = "project/p1/status/build"
    assert [n.put(key, v, principal=LEE).version for v in ("queued", "running", {"done": True})] == [1, 2, 3]
    got = n.get(key)
    assert got.value == {"done": True} and got.version == 3 and n.version(key) == 3
    assert got.updated_at == T0.astimezone(UTC)  # the in-graph clock, in UTC, microseconds kept


def test_compare_and_set(tenant):
    n = tenant.notes
    key = "project/p1/locks/deploy"
    claim = n.cas(key, {"owner": "lee"}, expected_version=0, principal=LEE)
    assert claim.ok and claim.version == 1 and claim.note.value == {"owner": "lee"}
    gen = tenant.store.generation()
    dump = tenant.dump()
    lost = n.cas(key, {"owner": "sam"}, expected_version=0, principal=SAM)
    assert not lost.ok and lost.version == 1 and lost.note.value == {"owner": "lee"}
    stale = n.cas(key, {"owner": "sam"}, expected_version=7, principal=SAM)
    assert not stale.ok and stale.version == 1
    assert tenant.store.generation() == gen and tenant.dump() == dump  # a failed CAS writes nothing
    moved = n.cas(key, {"owner": "sam"}, expected_version=1, principal=SAM)
    assert moved.ok and moved.version == 2 and n.get(key).author == "sam"


def test_delete_keeps_a_tombstone_so_versions_are_never_reused(tenant):
    """A delete and re-create must not let a holder of the old version win (ABA)."""
    n = tenant.notes
    key = "project/p1/locks/aba"
    n.put(key, "a", principal=LEE)                       # v1
    assert n.delete(key, principal=LEE, expected_version=2) is False  # wrong version: kept
    assert n.get(key).value == "a"
    assert n.delete(key, principal=LEE) is True          # v2 (tombstone)
    assert n.get(key) is None and n.version(key) == 0 and n.delete(key, principal=LEE) is False
    again = n.cas(key, "b", expected_version=0, principal=SAM)
    assert again.ok and again.version == 3               # not 1
    assert not n.cas(key, "stale", expected_version=1, principal=LEE).ok
    rows = tenant.sparql('SELECT ?v WHERE { GRAPH <urn:reckon:graph:notes> { ?n '
                         '<https://reckon.dev/ns/notes#key> "project/p1/locks/aba" ; '
                         '<https://reckon.dev/ns/notes#value> ?v } }')
    assert [r["v"].value for r in rows] == ['"b"']      # analysts read notes with SPARQL


def test_ttl_expires_against_the_in_graph_clock(engine):
    t = engine.create_tenant("notes-ttl")
    start = datetime(2026, 3, 23, 8, 0, 0, 250000, tzinfo=timezone(timedelta(hours=-5)))
    t.tick(start)
    n = t.notes
    key = "project/p2/findings/s1"
    note = n.put(key, "soon gone", principal=LEE, ttl=60)
    assert note.expires_at == (start + timedelta(seconds=60)).astimezone(UTC)
    n.put("project/p2/findings/keep", "stays", principal=LEE)
    t.tick(start + timedelta(seconds=59, microseconds=999999))
    assert n.get(key).value == "soon gone"                # one microsecond before expiry: live
    assert [s.count for s in n.namespaces("p2")] == [2]
    t.tick((start + timedelta(seconds=60)).astimezone(timezone(timedelta(hours=9))))  # same instant, +09:00
    assert n.get(key) is None and n.version(key) == 0     # expired by rule: nt:ExpiredNote
    assert [x.key for x in n.list("project/p2/")] == ["project/p2/findings/keep"]
    assert [s.count for s in n.namespaces("p2")] == [1]
    assert n.purge_expired() == [key] and n.purge_expired() == []
    assert n.cas(key, "back", expected_version=0, principal=SAM).version == 2
    t.tick(start + timedelta(days=3650))
    assert n.get("project/p2/findings/keep").value == "stays"  # no ttl: never expires


def test_a_ttl_starts_an_unset_clock(engine):
    t = engine.create_tenant("notes-noclock")
    assert t.clock() is None
    before = datetime.now(UTC)
    n = t.notes.put("project/p3/x/y", 1, principal=LEE, ttl=3600)
    assert t.clock() is not None and before - timedelta(seconds=1) <= t.clock() <= datetime.now(UTC)
    assert n.expires_at == t.clock() + timedelta(seconds=3600)
    assert t.notes.get("project/p3/x/y").value == 1


@pytest.mark.parametrize("key", [
    "project/a/b", "proj/a/b/c", "project/a//c", "project/-a/b/c", "project/a/b/c/", "/project/a/b/c",
    "project/a/b/ü", "project/a/b/c d", "project/a/b/" + "c" * 129, "project/a/b/" + "/".join(["c" * 100] * 6),
    "project/a/b/c\x00", "", None, 42, "project/a/b/c\n",
])
def test_bad_keys_are_refused_and_change_nothing(tenant, key):
    dump = tenant.dump()
    with pytest.raises(InvalidInput) as e:
        tenant.notes.put(key, "v", principal=LEE)
    assert e.value.field == "key" and "project/<project-id>/<namespace>/<name>" in str(e.value)
    assert tenant.dump() == dump


@pytest.mark.parametrize("value,field", [
    (float("nan"), "value"), ({1, 2}, "value"), (b"bytes", "value"), ("x" * 262_143, "value"),
])
def test_bad_values_are_refused(tenant, value, field):
    dump = tenant.dump()
    with pytest.raises(InvalidInput) as e:
        tenant.notes.put("project/p1/bad/value", value, principal=LEE)
    assert e.value.field == field and tenant.dump() == dump


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), float("inf"), True, "10", 315_576_001, timedelta(0)])
def test_bad_ttls_are_refused(tenant, ttl):
    dump = tenant.dump()
    with pytest.raises(InvalidInput) as e:
        tenant.notes.put("project/p1/bad/ttl", "v", principal=LEE, ttl=ttl)
    assert e.value.field == "ttl" and tenant.dump() == dump


def test_other_bad_arguments(tenant):
    n = tenant.notes
    with pytest.raises(InvalidInput) as e:
        n.cas("project/p1/x/y", 1, expected_version=-1, principal=LEE)
    assert e.value.field == "expected_version"
    with pytest.raises(InvalidInput) as e:
        n.put("project/p1/x/y", 1, principal="lee")
    assert e.value.field == "principal"
    with pytest.raises(InvalidInput) as e:
        n.list("project/p1/'} UNION {")
    assert e.value.field == "prefix"
    with pytest.raises(InvalidInput) as e:
        n.namespaces("../etc")
    assert e.value.field == "project"


def test_values_round_trip(tenant):
    value = {"text": "Caroline: I went to a LGBTQ support group yesterday 🌈 — it was powerful.",
             "nested": [1, 2.5, None, True, {"k": "\"quoted\" \\ back"}], "empty": {}, "big": 10 ** 30}
    tenant.notes.put("project/p1/values/all", value, principal=LEE)
    assert tenant.notes.get("project/p1/values/all").value == value


def test_tenants_do_not_share_notes(engine, tenant):
    other = engine.create_tenant("notes-other")
    tenant.notes.put("project/shared/ns/secret", "acme only", principal=LEE)
    assert other.notes.get("project/shared/ns/secret") is None
    assert other.notes.list("project/") == [] and other.notes.namespaces("shared") == []


def test_processes_racing_compare_and_set_one_winner_per_version(engine):
    """Four processes increment a counter note by read + compare-and-set, 24 versions in
    all: every version is won by exactly one process, no increment is lost."""
    t = engine.create_tenant("notes-race")
    key, rounds, workers = "project/race/counter/n", 24, 4
    start = Path(engine.data_dir) / "race-start"
    t.store.release()
    procs = [subprocess.Popen([sys.executable, str(HERE / "notes_child.py"), str(engine.data_dir), t.id,
                               f"w{i}", key, str(rounds), str(start)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(workers)]
    time.sleep(0.5)
    start.touch()
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    wins = Counter()
    per_worker = []
    for out, _ in outs:
        lines = out.split()
        won = [int(v) for a, v in zip(lines[::2], lines[1::2]) if a == "win"]
        wins.update(won)
        per_worker.append(len(won))
    assert sorted(wins) == list(range(1, rounds + 1)) and set(wins.values()) == {1}
    final = t.notes.get(key)
    assert final.version == rounds and final.value["count"] == rounds  # no lost update
    assert sum(per_worker) == rounds


# -- property-based: any history of puts, CAS, deletes and ticks vs a dictionary model --------

KEYS = ["a/x", "a/y", "b/x"]
OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(KEYS), st.integers(0, 9), st.one_of(st.none(), st.integers(1, 120))),
    st.tuples(st.just("cas"), st.sampled_from(KEYS), st.integers(0, 9), st.integers(0, 4)),
    st.tuples(st.just("delete"), st.sampled_from(KEYS), st.none(), st.none()),
    st.tuples(st.just("tick"), st.none(), st.none(), st.integers(1, 90)),
), min_size=1, max_size=12)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_histories_match_a_dictionary_model(tenant, ops):
    t = tenant
    test_histories_match_a_dictionary_model.n = getattr(test_histories_match_a_dictionary_model, "n", 0) + 1
    project = f"h{test_histories_match_a_dictionary_model.n}-{time.monotonic_ns()}"
    now = (t.clock() or T0) + timedelta(seconds=1)
    t.tick(now)
    model: dict[str, dict] = {}  # key -> {"value", "version" (stored counter), "expires", "deleted"}

    def live(k: str) -> dict | None:
        m = model.get(k)
        if m is None or m["deleted"] or (m["expires"] is not None and m["expires"] <= now):
            return None
        return m

    for op, k, v, arg in ops:
        key = f"project/{project}/{k}" if k else None
        if op == "tick":
            now = now + timedelta(seconds=arg, microseconds=7)
            t.tick(now)
        elif op == "put":
            t.notes.put(key, v, principal=LEE, ttl=arg)
            prev = model.get(key, {"version": 0})["version"]
            model[key] = {"value": v, "version": prev + 1, "deleted": False,
                          "expires": now + timedelta(seconds=arg) if arg else None}
        elif op == "cas":
            cur = live(key)
            expect_ok = (cur["version"] if cur else 0) == arg
            res = t.notes.cas(key, v, expected_version=arg, principal=LEE)
            assert res.ok == expect_ok
            if expect_ok:
                prev = model.get(key, {"version": 0})["version"]
                model[key] = {"value": v, "version": prev + 1, "deleted": False, "expires": None}
        else:
            cur = live(key)
            assert t.notes.delete(key, principal=LEE) == (cur is not None)
            if cur is not None:
                cur["version"] += 1
                cur["deleted"] = True
        for kk in KEYS:
            full = f"project/{project}/{kk}"
            got, want = t.notes.get(full), live(full)
            assert (got.value, got.version) == (want["value"], want["version"]) if want else got is None
    listed = {x.key: x.value for x in t.notes.list(f"project/{project}/")}
    assert listed == {k: m["value"] for k in model if (m := live(k))}
