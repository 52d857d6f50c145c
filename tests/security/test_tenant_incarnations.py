"""A deleted tenant does not come back (issue 9, point 4).

Process S holds tenant ``acme`` (read, written, its lock lingering or released) while
this process deletes it and creates a new ``acme`` (by ``create_tenant`` or by
``import_tenant``) with three new memories. Then, through the Tenant object S still
has: 0 reads of deleted data (every read raises ``TenantGone``) and 0 writes into the
new incarnation (every write raises ``TenantGone``; the new tenant's dump is unchanged).
Through ``engine.tenant("acme")`` S reaches the new incarnation and sees exactly its
three memories.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reckon._errors import TenantGone, UnknownTenant
from reckon.api import Engine, Principal

pytestmark = pytest.mark.slow

CHILD = Path(__file__).with_name("holder_child.py")
OPS = Principal.operator("dana")


def _remember(t, label: str) -> None:
    t.remember(principal=OPS, kind="fact", scope="company", importance=3, source="operator", label=label,
               content=f"{label}: distinct content {label[::-1]}")


class Holder:
    def __init__(self, data_dir: Path) -> None:
        env = {**os.environ, "RECKON_EMBEDDER": "hashing"}
        self.p = subprocess.Popen([sys.executable, str(CHILD), str(data_dir)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, cmd: str) -> str:
        assert self.p.stdin is not None and self.p.stdout is not None
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def close(self) -> None:
        try:
            self.ask("quit")
        finally:
            self.p.wait(timeout=30)


@pytest.mark.parametrize("how", ["create", "import"])
@pytest.mark.parametrize("hold", ["lingering", "released"])
def test_process_holding_a_deleted_tenant_never_reads_or_writes_it(tmp_path, monkeypatch, how, hold) -> None:
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    eng = Engine(tmp_path)
    t = eng.create_tenant("acme", company_name="Acme")
    for label in ("old-1", "old-2"):
        _remember(t, label)
    source = None
    if how == "import":
        donor = eng.create_tenant("donor", company_name="Donor")
        for label in ("new-1", "new-2", "new-3"):
            _remember(donor, label)
        source = tmp_path / "donor.trig"
        donor.export(source)
    t.store.release()

    s = Holder(tmp_path)
    try:
        assert s.ask("open") == "ok old-1,old-2"
        assert s.ask("kpi") == "ok"  # S now holds (lingers on) the write lock
        if hold == "released":
            assert s.ask("release") == "ok"

        eng.delete_tenant("acme")
        with pytest.raises(UnknownTenant):
            t.sparql("ASK {}")  # this process's own old object is dead too
        if how == "create":
            new = eng.create_tenant("acme", company_name="Acme again")
            for label in ("new-1", "new-2", "new-3"):
                _remember(new, label)
        else:
            new = eng.import_tenant("acme", source)
        new.store.release()
        before = new.dump()

        for cmd in ("labels", "sparql", "write", "kpi", "labels", "sparql"):
            answer = s.ask(cmd)
            assert answer.startswith("error TenantGone"), (cmd, answer)
            assert "old-" not in answer
        assert new.dump() == before  # 0 writes into the new incarnation
        assert s.ask("reopen-labels") == "ok new-1,new-2,new-3"
        assert s.ask("reopen-sparql") == "ok new-1,new-2,new-3"
    finally:
        s.close()
    assert new.dump() == before
    assert sorted(m.label for m in eng.tenant("acme").memories()) == ["new-1", "new-2", "new-3"]


def test_engine_cache_never_serves_a_dead_tenant(tmp_path) -> None:
    a = Engine(tmp_path, rules=[])
    b = Engine(tmp_path, rules=[])
    ta = a.create_tenant("acme")
    inc = ta.store.incarnation
    tb = b.tenant("acme")
    tb.add_team("old-team")
    tb.store.release()
    a.delete_tenant("acme")
    a.create_tenant("acme")
    fresh = b.tenant("acme")
    assert fresh is not tb and fresh.store.incarnation != inc
    with pytest.raises(TenantGone):
        tb.add_team("ghost")
    assert "old-team" not in fresh.dump().decode() and "ghost" not in fresh.dump().decode()


def test_symlinked_tenant_dir_does_not_open_the_target(tmp_path) -> None:
    eng = Engine(tmp_path, rules=[])
    eng.create_tenant("victim")
    (tmp_path / "tenants" / "evil").symlink_to(tmp_path / "tenants" / "victim")
    with pytest.raises(UnknownTenant, match="symbolic link"):
        eng.tenant("evil")
    assert eng.list_tenants() == ["victim"]
    from reckon.server.auth import TokenStore

    with pytest.raises(UnknownTenant):
        TokenStore(tmp_path).create("evil", person="x")
    # a copy of a tenant directory under another name is not that tenant either
    import shutil

    shutil.copytree(tmp_path / "tenants" / "victim", tmp_path / "tenants" / "copy")
    with pytest.raises(UnknownTenant, match="holds tenant 'victim'"):
        eng.tenant("copy")


def test_killed_creates_leave_nothing_behind(tmp_path) -> None:
    tenants = tmp_path / "tenants"
    tenants.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    stale = tenants / f".creating-acme-{pid}-1234"
    (stale / "store").mkdir(parents=True)
    grave = tenants / ".deleting-acme-0123456789abcdef"
    grave.mkdir()
    live = tenants / f".creating-beta-{os.getpid()}-1"
    live.mkdir()
    Engine(tmp_path, rules=[])
    assert not stale.exists() and not grave.exists()
    assert live.exists()  # a create of a running process (this one) is left alone
