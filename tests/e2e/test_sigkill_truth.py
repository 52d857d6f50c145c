"""A SIGKILL between any two writes loses nothing acknowledged and needs no repair
(issue "Derived state is always true", Must show 2: spend refresh, module migration,
import; the recall index under ``remember`` is the recall suite's).

Each round starts a child process that writes in a loop and acknowledges every call
that returned, kills it with SIGKILL at a random moment, then reopens the data with a
fresh Engine and checks: every acknowledged write is there (the one in flight is
entirely there or entirely absent), ``tenant validate`` conforms (shapes, program,
inferred graph equal to recomputation), and the tenant is usable -- a remember, a
search and a context bundle work -- with no manual step."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest

from reckon import ConflictPending
from reckon.api import Engine, Principal, Tenant
from reckon.cli._tenant import validate_tenant

CHILD = Path(__file__).with_name("kill_child.py")
OPS = Principal(person="dana", role="operator")
ROUNDS = int(os.environ.get("RECKON_KILL_ROUNDS", "3"))

WATCH = """PREFIX mk: <https://reckon.dev/ns/marketing#>
PREFIX ex: <https://example.org/ns/watch#>
RULE { ?m ex:watch "%s" } WHERE { ?m mk:budgetStatus mk:%s }
"""


def _kill_after(data_dir: Path, tenant: str, mode: str, *args: str, min_acks: int = 2) -> list[str]:
    env = dict(os.environ, RECKON_EMBEDDER="hashing")
    p = subprocess.Popen([sys.executable, str(CHILD), str(data_dir), tenant, mode, *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert p.stdout is not None
    acks: list[str] = []
    deadline = time.monotonic() + 300
    want = min_acks + random.randint(0, 3)
    while len(acks) < want and time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            raise AssertionError(f"child exited: {p.stderr.read() if p.stderr else ''}")
        acks.append(line.split()[1])
    time.sleep(random.uniform(0, 0.08))  # somewhere inside the next write
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    acks += [line.split()[1] for line in p.stdout.read().splitlines() if len(line.split()) == 2]
    return acks


def _usable(t: Tenant) -> None:
    report = validate_tenant(t)
    assert report["conforms"], report
    fields = dict(kind="fact", scope="company", importance=4, source="operator", principal=OPS,
                  label=f"after kill {random.random()}", content="Board meets on Thursdays in Porto")
    try:
        m = t.remember(**fields)
    except ConflictPending as c:  # the previous round's note: keep both
        m = t.remember(**fields, conflict_resolution="keep_both", conflict_id=c.conflict_id)
    hits = t.search("when does the board meet", principal=OPS, importance=(2, 5))
    assert m.id in [h.memory.id for h in hits]
    assert "Board meets on Thursdays" in t.context(OPS, conversation="board meeting").render()
    t.store.release()


@pytest.fixture()
def tenant_dir(tmp_path: Path) -> Path:
    e = Engine(tmp_path / "d")
    t = e.create_tenant("acme")
    t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
               label="Meta cap", content="Meta under 40k", subclass="BudgetConstraintMemory",
               properties={"platform": "meta", "amount": "40000.00", "currency": "USD", "period": "monthly"})
    t.store.close()
    return tmp_path / "d"


def test_sigkill_during_spend_refresh(tenant_dir: Path) -> None:
    for _ in range(ROUNDS):
        acks = _kill_after(tenant_dir, "acme", "spend")
        t = Engine(tenant_dir).tenant("acme")
        (spend,) = [r["a"].value for r in t.sparql(  # type: ignore[union-attr, index]
            "SELECT ?a WHERE { ?c mk:currentSpendRecord ?r . ?r mk:amount ?a }")]
        last = Decimal(acks[-1])
        assert Decimal(spend) in (last, last + 1)  # the acknowledged one, or the one in flight
        (cap,) = t.memories(subclass="BudgetConstraintMemory")
        assert cap.status["currentSpend"] == Decimal(spend)
        _usable(t)
        t.store.close()


def test_sigkill_during_module_migration(tenant_dir: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "watch.srl", tmp_path / "b" / "watch.srl"
    for f, text in ((a, WATCH % ("within", "WithinBudget")), (b, WATCH % ("near", "NearLimit"))):
        f.parent.mkdir()
        f.write_text(text)
    t = Engine(tenant_dir).tenant("acme")
    t.set_spend("meta", "35000")  # near_limit: the "b" program derives ex:watch, "a" does not
    t.install_module(b, name="watch")
    t.store.close()
    for _ in range(ROUNDS):
        acks = _kill_after(tenant_dir, "acme", "migrate", str(a), str(b))
        t = Engine(tenant_dir).tenant("acme")
        # the stored program is one of the two (the last acknowledged or the one in flight,
        # never a mix): its module text and the statuses derived under it agree
        assert t.program().digest in set(acks)
        watch = t.program().module("watch")
        assert watch is not None
        (cap,) = t.memories(subclass="BudgetConstraintMemory")
        near = "NearLimit" in watch.files[0].text
        assert cap.status.get("watch") == ("near" if near else None)
        _usable(t)
        t.store.close()


def test_sigkill_during_import(tenant_dir: Path, tmp_path: Path) -> None:
    t = Engine(tenant_dir).tenant("acme")
    t.set_spend("meta", "36000.50")
    export = tmp_path / "acme.trig"
    t.export(export)
    t.store.close()
    seen: set[str] = set()
    for _ in range(ROUNDS):
        acks = _kill_after(tenant_dir, "acme", "import", str(export), min_acks=1)
        e = Engine(tenant_dir)
        ids = set(e.list_tenants())
        assert set(acks) <= ids  # every acknowledged import is there
        for tid in sorted(ids - {"acme"} - seen):  # and every tenant there is whole
            imp = e.tenant(tid)
            (cap,) = imp.memories(subclass="BudgetConstraintMemory")
            assert cap.status["budgetStatus"] == "near_limit" and cap.status["currentSpend"] == 36000.5
            assert validate_tenant(imp)["conforms"]
            imp.store.release()
            seen.add(tid)
        for tid in sorted(ids - {"acme"}):  # the child restarts its numbering: drop them
            e.delete_tenant(tid)
        seen.clear()
    _usable(Engine(tenant_dir).tenant("acme"))
