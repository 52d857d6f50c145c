"""The reasoner's state persisted per tenant (``reasoner.state`` beside the store).

A fresh process does not materialize the tenant's rules from scratch before its first
write: it loads the state the last writer saved -- keyed by the stored program's digest,
the engine and state-format versions and the tenant incarnation, with a SHA-256 of the
payload -- and applies the commits since from the journal. Checked here through
``Tenant.*`` with random histories: what the restored reasoner holds, and what the store
derives after more writes, equals a recomputation from scratch; a corrupted, truncated
or mismatched file is ignored and rebuilt; a process SIGKILLed between a commit and the
state write loses nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon import ConflictPending
from reckon.api import Engine, Principal, Tenant
from reckon.api._tenant import Tenant as _Tenant
from reckon.datalog.evaluate import Reasoner
from reckon.store import TenantStore
from reckon.store.tenant_store import STATE_HEADER_FORMAT, state_seal

OPS = Principal(person="dana", role="operator")
CHILD = Path(__file__).with_name("state_child.py")
_ids = iter(range(10**6))


@pytest.fixture()
def loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts ``Reasoner.load`` calls over a non-empty base (materializations from
    scratch; a new reasoner loads the empty base in its constructor)."""
    calls: list[int] = []
    real = Reasoner.load

    def counting(self: Reasoner, base: Any) -> None:
        base = list(base)
        if base:
            calls.append(1)
        real(self, base)

    monkeypatch.setattr(Reasoner, "load", counting)
    yield calls


def fresh(engine: Engine, t: Tenant) -> Tenant:
    """The tenant as a new process sees it: a new store object (no mirror, no reasoner)."""
    t.store.close()
    return _Tenant(engine, TenantStore(t.store.path, program_resolver=engine._resolve))


def recomputed(store: TenantStore) -> set[Any]:
    """The inferred graph of a from-scratch materialization of the store's base graph."""
    r = store._factory()  # noqa: SLF001 - the tenant's own program
    r.load({q.triple for q in store.asserted()})
    return r.inferred()


def cap(t: Tenant, i: int, platform: str, amount: int) -> Any:
    return t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                      subclass="BudgetConstraintMemory", label=f"{platform} cap {i}",
                      content=f"{platform} monthly cap number {i}",
                      properties={"platform": platform, "amount": str(amount), "currency": "USD",
                                  "period": "monthly"})


step = st.one_of(
    st.tuples(st.just("cap"), st.sampled_from(["meta", "google"]), st.integers(1000, 60000)),
    st.tuples(st.just("spend"), st.sampled_from(["meta", "google"]), st.integers(0, 70000)),
    st.tuples(st.just("kpi"), st.sampled_from(["ROAS", "CPA"]), st.integers(0, 9)),
    st.tuples(st.just("pref"), st.integers(1, 5), st.just(0)),
    st.tuples(st.just("supersede"), st.integers(0, 20), st.just(0)),
    st.tuples(st.just("delete"), st.integers(0, 20), st.just(0)),
    st.tuples(st.just("restart"), st.just(""), st.just(0)),
)


WORDS = "amber basil cobalt dune ember fjord garnet harbor indigo jasper kestrel lagoon".split()


def run(engine: Engine, t: Tenant, steps: list[tuple[Any, ...]]) -> Tenant:
    """Apply ``steps`` through ``Tenant.*``; a write the conflict policy holds back
    (``ConflictPending``: it asks first) leaves the history going on."""
    made: list[str] = []
    for i, (kind, a, b) in enumerate(steps):
        w = WORDS[i % len(WORDS)]
        try:
            if kind == "cap":
                made.append(cap(t, i, a, b).id)
            elif kind == "spend":
                t.set_spend(a, b)
            elif kind == "kpi":
                t.set_kpi(a, b / 2)
            elif kind == "pref":
                made.append(t.remember(kind="preference", scope="company", importance=a, source="operator",
                                       principal=OPS, label=f"{w} {i}", content=f"prefer {w} {i * 31}").id)
            elif kind == "supersede" and made:
                old = made.pop(a % len(made))
                made.append(t.supersede(old, {"kind": "fact", "scope": "company", "importance": 4,
                                              "source": "operator", "label": f"{w} replacement {i}",
                                              "content": f"{w} replaces the earlier note {i * 17}"},
                                        principal=OPS).id)
            elif kind == "delete" and made:
                t.delete(made.pop(a % len(made)), principal=OPS)
            elif kind == "restart":
                t = fresh(engine, t)
        except ConflictPending:
            pass
    return t


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(step, min_size=2, max_size=10), more=st.lists(step, min_size=1, max_size=3))
def test_a_fresh_process_restores_the_state_and_derives_what_a_recompute_derives(
        engine: Engine, steps: list[tuple[Any, ...]], more: list[tuple[Any, ...]]) -> None:
    t = engine.create_tenant(f"rs{next(_ids)}", company_name="Acme Inc.")
    cap(t, 0, "meta", 40000)  # the first write materializes and saves the state
    t = run(engine, t, steps)
    t = fresh(engine, t)
    calls: list[int] = []
    real = Reasoner.load

    def counting(self: Reasoner, base: Any) -> None:
        base = list(base)
        if base:
            calls.append(1)
        real(self, base)

    Reasoner.load = counting  # type: ignore[method-assign]
    try:
        r = t.store.reasoner()
        assert calls == []  # restored from the file (+ the journal since), not materialized
        expected = recomputed(t.store)
        assert r.inferred() == expected
        assert t.store.inferred() == expected
        t = run(engine, t, [s for s in more if s[0] != "restart"] + [("spend", "meta", 35000)])
        assert t.store.inferred() == recomputed(t.store)
        assert t.store.rebuild_inferred() is None  # nothing to repair
    finally:
        Reasoner.load = real  # type: ignore[method-assign]
        t.store.close()


DAMAGE = ["flip-payload-byte", "truncate", "garbage", "other-program", "other-engine", "ahead", "other-incarnation",
          "empty", "other-int-layout", "index-columns-disagree", "generation-edited", "generation-infinite",
          "generation-text", "deep-json", "sealed-payload-only"]


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_corrupted_or_mismatched_state_file_is_rebuilt(engine: Engine, loads: list[int], damage: str) -> None:
    t = engine.create_tenant(f"rc{next(_ids)}", company_name="Acme Inc.")
    m = cap(t, 0, "meta", 40000)
    t.set_spend("meta", 36000)
    t.store.close()
    path = t.store.path / TenantStore.STATE_FILE
    data = path.read_bytes()
    head, _, payload = data.partition(b"\n")
    meta = json.loads(head)
    if damage == "flip-payload-byte":
        k = len(payload) // 2
        data = head + b"\n" + payload[:k] + bytes([payload[k] ^ 0x40]) + payload[k + 1:]
    elif damage == "truncate":
        data = data[: len(data) - 100]
    elif damage == "garbage":
        data = b"\x00not a state\n" + payload[:50]
    elif damage == "empty":
        data = b""
    elif damage in ("other-int-layout", "index-columns-disagree"):  # well-formed and signed, but foreign inside
        import marshal

        state = list(marshal.loads(payload))
        assert state[0] == 6  # (version, kinds, terms, triple terms, helper ids, full, base, ...)
        full = list(state[5])
        if damage == "other-int-layout":  # written by a machine of another byte order or int width
            full[0] = "big-i4-q8-Q8" if full[0] != "big-i4-q8-Q8" else "little-i4-q8-Q8"
        else:  # the fact columns one key short of what their ends say
            preds, ends, keys = full[1]
            full[1] = (preds, ends, keys[:-8])
        state[5] = tuple(full)
        payload = marshal.dumps(tuple(state))
        meta["bytes"] = len(payload)
        meta["sha256"] = state_seal(meta, payload)  # sealed as a writer would: only the inside is foreign
        data = json.dumps(meta, sort_keys=True).encode() + b"\n" + payload
    elif damage == "generation-edited":  # the header's generation changed by hand, not sealed again
        meta["generation"] = meta["generation"] - 1
        data = json.dumps(meta, sort_keys=True).encode() + b"\n" + payload
    elif damage in ("generation-infinite", "generation-text"):  # well-formed JSON, not a generation
        line = json.dumps(meta, sort_keys=True).replace(f'"generation": {meta["generation"]}',
                                                        '"generation": 1e400' if damage == "generation-infinite"
                                                        else '"generation": "7"')
        data = line.encode() + b"\n" + payload
    elif damage == "deep-json":  # a header no JSON parser should follow to the end
        data = b"[" * 100_000 + b"\n" + payload
    elif damage == "sealed-payload-only":  # format 2 claimed, the payload alone checksummed (format 1's way)
        meta["sha256"] = __import__("hashlib").sha256(payload).hexdigest()
        data = json.dumps(meta, sort_keys=True).encode() + b"\n" + payload
    else:
        field, value = {"other-program": ("program", "0" * 64), "other-engine": ("engine", "0.0.0-other"),
                        "ahead": ("generation", meta["generation"] + 5),
                        "other-incarnation": ("incarnation", "f" * 32)}[damage]
        meta[field] = value
        meta["sha256"] = state_seal(meta, payload)  # sealed: the key check refuses it, not the checksum
        data = json.dumps(meta, sort_keys=True).encode() + b"\n" + payload
    path.write_bytes(data)
    loads.clear()
    t2 = fresh(engine, t)
    assert t2.get(m.id).status  # reads need no reasoner
    t2.set_spend("meta", 41000)  # the first write recomputes ...
    assert loads == [1]
    assert t2.store.inferred() == recomputed(t2.store)
    assert t2.get(m.id).status["budgetStatus"] == "over_budget"
    gen = t2.store.generation()
    t2.store.close()
    # ... and writes a good state again: the next fresh process restores it
    assert json.loads(path.read_bytes().partition(b"\n")[0])["generation"] == gen
    loads.clear()
    t3 = fresh(engine, t2)
    t3.set_spend("meta", 1000)
    assert loads == []
    assert t3.store.inferred() == recomputed(t3.store)
    assert t3.get(m.id).status["budgetStatus"] == "within_budget"
    t3.store.close()


def test_an_older_state_relabelled_with_a_later_generation_is_not_served(engine: Engine, loads: list[int]) -> None:
    """An older state file whose header was edited to claim a later generation (found by a
    fresh-venv user test: one bit of the header's generation flipped) would skip the
    commits in between and keep wrong statuses forever; the header is sealed with the
    payload (header format 2), so the file is refused and the first write recomputes:
    the budget status follows the spend and the inferred graph equals a recompute."""
    t = engine.create_tenant(f"rl{next(_ids)}", company_name="Acme Inc.")
    m = cap(t, 0, "meta", 40000)
    t.set_spend("meta", 41000)
    t = fresh(engine, t)
    path = t.store.path / TenantStore.STATE_FILE
    old = path.read_bytes()
    t.set_spend("meta", 10000)  # one commit past the old file
    t = fresh(engine, t)
    head, _, payload = old.partition(b"\n")
    meta = json.loads(head)
    meta["generation"] = t.store.generation()  # claims the commit it does not hold
    path.write_bytes(json.dumps(meta, sort_keys=True).encode() + b"\n" + payload)
    loads.clear()
    t.set_spend("meta", 45000)
    assert loads == [1]  # refused: recomputed
    assert t.get(m.id).status["budgetStatus"] == "over_budget"
    assert t.store.inferred() == recomputed(t.store)
    t.store.close()


@pytest.mark.parametrize("state_before", [False, True])
def test_sigkill_between_commit_and_state_write_loses_nothing(engine: Engine, loads: list[int],
                                                               state_before: bool) -> None:
    """The child's first write recomputes, commits, and is killed where it would write
    the state (``state_before``: an older state exists, so it restores that instead and
    is killed at its close). Every acknowledged write is in the store; the next process
    derives exactly what a recompute derives."""
    t = engine.create_tenant(f"rk{next(_ids)}", company_name="Acme Inc.")
    if state_before:
        t.remember(kind="preference", scope="company", importance=4, source="operator", principal=OPS,
                   label="tone", content="write short sentences")
    t = fresh(engine, t)
    state = t.store.path / TenantStore.STATE_FILE
    old = state.read_bytes() if state.exists() else None
    before = fresh(engine, t).store.generation()
    p = subprocess.run([sys.executable, str(CHILD), str(engine.data_dir), t.id, "3", "kill-before-state"],
                       capture_output=True, text=True, timeout=600)
    # no state: killed right after its first commit; an older state: it restores that
    # and would rewrite it only when it lingers long enough to release (or at close)
    assert p.returncode == -9 or (state_before and p.returncode == 0), p.stderr
    done = [line.split() for line in p.stdout.splitlines() if line.startswith("done")]
    assert (state.read_bytes() if state.exists() else None) == old  # the state write never happened
    t2 = fresh(engine, t)
    gen = t2.store.generation()
    assert gen > before  # the commit the kill followed is on disk
    if done:
        assert gen >= int(done[-1][2])
    labels = {m.label for m in t2.memories()}
    assert {f"child cap {i}" for i, _ in enumerate(done) if i % 2 == 0} <= labels
    loads.clear()
    t2.set_spend("meta", 12345)
    assert loads == ([] if state_before else [1])
    assert t2.store.inferred() == recomputed(t2.store)
    assert t2.store.rebuild_inferred() is None
    t2.store.close()


@pytest.mark.parametrize("how", ["kill-before-rename", "torn-state"])
def test_sigkill_while_the_state_file_is_written_loses_nothing(engine: Engine, loads: list[int], how: str) -> None:
    """The child finds no state file, recomputes, makes three writes and is SIGKILLed while it writes the state file at exit: before
    the rename (a complete temporary file is left beside the old state) or after a torn
    file was renamed into place. Every acknowledged write is in the store, the torn or
    temporary file is never used (the next process recomputes once) and is deleted when
    the tenant is next opened (its writer is dead), and what it derives equals a
    recompute; the file it then writes is restored by the process after it."""
    t = engine.create_tenant(f"rt{next(_ids)}", company_name="Acme Inc.")
    state = t.store.path / TenantStore.STATE_FILE
    t = fresh(engine, t)
    state.unlink(missing_ok=True)
    p = subprocess.run([sys.executable, str(CHILD), str(engine.data_dir), t.id, "3", how],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == -9, (p.returncode, p.stdout, p.stderr)
    assert "dying" in p.stdout
    done = [line.split() for line in p.stdout.splitlines() if line.startswith("done")]
    assert len(done) == 3
    if how == "torn-state":
        head, _, payload = state.read_bytes().partition(b"\n")
        assert len(payload) < json.loads(head)["bytes"]  # a torn file is in place
    else:
        assert not state.exists()
        assert list(t.store.path.glob(".reasoner.state.*"))  # the complete temporary file, never renamed
    live = t.store.path / f".{TenantStore.STATE_FILE}.{os.getpid()}.1"  # a writer still alive: kept
    live.write_bytes(b"in progress")
    t2 = fresh(engine, t)
    # opening the tenant removed the dead child's temporary file, not the live one's
    assert sorted(t2.store.path.glob(".reasoner.state.*")) == [live]
    live.unlink()
    assert t2.store.generation() == int(done[-1][2])
    labels = {m.label for m in t2.memories()}
    assert {"child cap 0", "child cap 2"} <= labels
    loads.clear()
    t2.set_spend("meta", 23456)
    assert loads == [1]  # the torn / temporary file was not used: recomputed
    assert t2.store.inferred() == recomputed(t2.store)
    assert t2.store.rebuild_inferred() is None
    t3 = fresh(engine, t2)  # closing t2 wrote a good state
    loads.clear()
    t3.set_spend("meta", 34567)
    assert loads == []
    assert t3.store.inferred() == recomputed(t3.store)
    t3.store.close()


@pytest.mark.parametrize("moved", [True, False])
@pytest.mark.parametrize("version", [1, 3, 5])
def test_an_older_format_state_file_is_restored_then_rewritten(engine: Engine, loads: list[int], version: int,
                                                               moved: bool) -> None:
    """A tenant whose state file an older engine wrote (format 1, 3 or 5) costs its first
    write under this engine a restore, not a recompute; the file is rewritten in the
    current format when the process lets the tenant go -- also when nothing was
    committed since (``moved`` False: only the reasoner was read) -- and the next
    process restores that."""
    from tests.datalog.test_incremental import _dump_version_1, _dump_version_3, _dump_version_5

    t = engine.create_tenant(f"rv{next(_ids)}", company_name="Acme Inc.")
    m = cap(t, 0, "meta", 40000)
    t.set_spend("meta", 30000)
    r = t.store.reasoner()
    path = t.store.path / TenantStore.STATE_FILE
    t = fresh(engine, t)
    meta = json.loads(path.read_bytes().partition(b"\n")[0])
    payload = {1: _dump_version_1, 3: _dump_version_3, 5: _dump_version_5}[version](r)  # type: ignore[operator]
    meta.update(state_version=version, bytes=len(payload))
    if version == 5:  # the engine before this header format: the payload alone checksummed (header format 1)
        meta.update(format=1, sha256=__import__("hashlib").sha256(payload).hexdigest())
    else:
        meta["sha256"] = state_seal(meta, payload)
    path.write_bytes(json.dumps(meta, sort_keys=True).encode() + b"\n" + payload)
    loads.clear()
    if moved:
        t.set_spend("meta", 45000)  # one commit past the file: restored, then the commit applied
    else:
        t.store.reasoner()  # restored, nothing committed
    assert loads == []
    assert t.store.inferred() == recomputed(t.store)
    assert t.get(m.id).status["budgetStatus"] == ("over_budget" if moved else "within_budget")
    t = fresh(engine, t)
    head = json.loads(path.read_bytes().partition(b"\n")[0])
    assert head["state_version"] == Reasoner.STATE_VERSION and head["generation"] == t.store.generation()
    assert head["format"] == STATE_HEADER_FORMAT and head["sha256"] == state_seal(head, path.read_bytes().partition(b"\n")[2])
    loads.clear()
    t.set_spend("meta", 1000)
    assert loads == []
    assert t.store.inferred() == recomputed(t.store)
    assert t.get(m.id).status["budgetStatus"] == "within_budget"
    t.store.close()
