"""The saved peer index (``<tenant>/peers/index.bin``): a later service (another engine,
another process) lists a (scope, stakeholder) group from the file, brought forward from
the store's change log, and gets exactly what a read from the store gives; a damaged,
foreign or stale file is never served; a process killed between a commit and the
file's write loses nothing."""

from __future__ import annotations

import hashlib
import marshal
import os
import signal
import subprocess
import sys
import textwrap
import time
from array import array
from pathlib import Path

import pytest

from reckon._errors import ConflictPending
from reckon.memory import _peers
from reckon.memory.conflicts import tokens
from reckon.memory.models import normalise_label
from reckon.memory.service import MemoryService
from reckon.store import TenantStore

from .conftest import ANN, BOB, OPS, reasoner_factory

REPO = Path(__file__).resolve().parents[2]

GROUPS = [("user", "ann", []), ("user", "bob", []), ("team", None, ["growth"]), ("company", None, [])]


def pref(**kw):
    d = dict(kind="preference", scope="user", importance=3, source="agent_tool",
             label="Report style", content="Weekly report as bullet lists with totals")
    d.update(kw)
    return d


def fill(svc: MemoryService, tag: str) -> None:
    svc.remember(principal=ANN, **pref(label=f"Ann {tag} one", content=f"alpha {tag} bravo"))
    svc.remember(principal=ANN, **pref(label=f"Ann {tag} two", content=f"charlie {tag}"))
    svc.remember(principal=BOB, **pref(label=f"Bob {tag}", content=f"delta {tag}"))
    svc.remember(principal=OPS, **pref(scope="team", teams=["growth"], source="operator",
                                       label=f"Team {tag}", content=f"echo {tag}"))
    svc.remember(principal=OPS, **pref(scope="company", kind="fact", source="operator",
                                       label=f"Company {tag}", content=f"foxtrot {tag}"))


def listed(svc: MemoryService) -> tuple[dict, dict]:
    """What the peer index lists per group (memory -> label key, tokens, types) and what
    a read from the store gives, inside one (empty) transaction."""
    got, want = {}, {}
    with svc._transaction():
        for scope, owner, teams in GROUPS:
            idx, g = svc.peers.group(scope, owner, teams)
            got[(scope, owner)] = {
                m.value: (idx.entries[m].label_key, idx.entries[m].toks, frozenset(idx.entries[m].a[_peers.R.A]))
                for m in idx.groups.get(g, ())}
            want[(scope, owner)] = {
                m.value: (normalise_label(a[_peers.R.LABEL][0].value),
                          frozenset(tokens(f"{a[_peers.R.LABEL][0].value} "
                                           f"{a[_peers.R.P_CONTENT][0].value if a.get(_peers.R.P_CONTENT) else ''}")),
                          frozenset(a[_peers.R.A]))
                for m, a in svc.peers.read_group(scope, owner, teams).items()}
            # dedup / token maps agree with the entries
            for m in idx.groups.get(g, ()):
                e = idx.entries[m]
                assert m in idx.by_label[g][e.label_key]
                assert all(m in idx.by_token[g][t] for t in e.toks)
    return got, want


def sidecar(store: TenantStore) -> Path:
    return Path(store.path) / _peers.SIDECAR


@pytest.fixture
def saving(monkeypatch):
    monkeypatch.setattr(_peers, "SAVE_EVERY", 0.0)
    monkeypatch.setattr(_peers, "PREFILL", False)  # these tests count the groups read cold


def test_saved_index_equals_a_store_read_in_another_service_and_process(make_store, tmp_path, saving):
    st = make_store("shared")
    a = MemoryService(st)
    fill(a, "first")
    assert a.peers.current is not None
    a.peers.save(a.peers.current)
    assert sidecar(st).exists()
    got, want = listed(a)
    assert got == want and sum(map(len, want.values())) == 5
    st.close()

    # another process writes after the file was saved: a dedup update, a deletion, new memories
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / "engine")!r}); sys.path.insert(0, {str(REPO)!r})
        from tests.memory.conftest import ANN, BOB, OPS, reasoner_factory
        from tests.memory.test_peer_sidecar import fill, pref
        from reckon.memory import _peers
        from reckon.memory.service import MemoryService
        from reckon.store import TenantStore
        _peers.PeerCache.save = lambda self, idx: None  # leave the file as the parent saved it
        st = TenantStore({str(tmp_path / "shared")!r}, reasoner_factory=reasoner_factory(), linger=0)
        svc = MemoryService(st)
        m = svc.remember(principal=ANN, **pref(label="ann FIRST one", content="alpha updated"))
        gone = [x for x in svc.memories() if x.label == "Bob first"][0]
        svc.delete(gone.id, principal=OPS)
        fill(svc, "second")
        st.close()
        print(m.id)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    updated = p.stdout.split()[-1]

    other = TenantStore(tmp_path / "shared", reasoner_factory=reasoner_factory(), linger=0)
    try:
        b = MemoryService(other)
        got, want = listed(b)
        assert got == want
        assert b.peers.current is not None and b.peers.current.cold == 0  # every group from the file
        assert sum(map(len, want.values())) == 9  # 5 + 5 - 1 deleted (the dedup updated in place)
        assert "Bob first" not in {b.get(m).label for m in want[("user", "bob")]}
        # dedup against the other process's update, through the file's group
        again = b.remember(principal=ANN, **pref(label="Ann first ONE", content="alpha once more"))
        assert again.id == updated
        gone = [x for x in b.memories() if x.label == "Ann first two"][0]  # listed from the file
        b.delete(gone.id, principal=OPS)
        got, want = listed(b)
        assert got == want
        # b's own save of groups it listed from the file and changed since (an update, a
        # deletion): a third service lists them from it as the store has them
        b.peers.save(b.peers.current)
        c = MemoryService(other)
        got, want = listed(c)
        assert got == want and c.peers.current.cold == 0
        assert any({"once", "more"} <= v[1] for v in got[("user", "ann")].values())  # the update, as updated
        assert "Ann first two" not in {c.get(m).label for m in want[("user", "ann")]}
    finally:
        other.close()


def _rewrite(path: Path, fn) -> None:
    raw = path.read_bytes()
    body = marshal.loads(raw[len(_peers.MAGIC) + 32:])
    payload = marshal.dumps(fn(body))
    path.write_bytes(_peers.MAGIC + hashlib.sha256(payload).digest() + payload)


def _rewrite_groups(path: Path, fn) -> None:
    """Rewrite every saved group's blob with ``fn(decoded group)`` (checksum made valid)."""
    _rewrite(path, lambda b: (b[0], b[1], b[2], {k: (g, marshal.dumps(fn(marshal.loads(blob))))
                                                 for k, (g, blob) in b[3].items()}))


def _ints(xs) -> bytes:
    return array("i", xs).tobytes()


def _unints(b: bytes) -> list[int]:
    out = array("i")
    out.frombytes(b)
    return out.tolist()


def _lines(s: str) -> list[str]:
    return s.split("\n") if s else []


def _out_of_range(g):
    """A token lists a member the group does not have."""
    keys, off, ix = g[7]
    ix = _unints(ix)
    if ix:
        ix[-1] = g[0]
    return (*g[:7], (keys, off, _ints(ix)))


def _unsorted(g):
    """The token map's keys (with their members) in reverse order."""
    keys, off, ix = g[7]
    keys, off, ix = _lines(keys), _unints(off), _unints(ix)
    spans = [ix[off[i]:off[i + 1]] for i in range(len(keys))][::-1]
    flat = [i for span in spans for i in span]
    offs = [0]
    for span in spans:
        offs.append(offs[-1] + len(span))
    return (*g[:7], ("\n".join(keys[::-1]), _ints(offs), _ints(flat)))


def _key_without_members(g):
    """The token map's first key lists no member (its members moved to the next key)."""
    keys, off, ix = g[7]
    off = _unints(off)
    if len(off) > 2:
        off[1] = 0
    return (*g[:7], (keys, _ints(off), ix))


def _format2(g):
    """Format 2's layout: tuples of tuples and dicts."""
    n, iris, types, type_idx, labels, toks = g[:6]
    return (tuple(_lines(iris)), types, tuple(_unints(type_idx)), tuple(_lines(labels)),
            tuple(tuple(t.split(" ")) if t else () for t in _lines(toks)), {}, {})


GROUP_DAMAGE = {
    # format 3's per-group layout, each with a valid file checksum (a writer's bug, not a torn file);
    # an empty group is left as it was by each but format2
    "group_types": lambda g: (*g[:3], _ints([i + len(g[2]) for i in _unints(g[3])]), *g[4:]),
    "group_short": lambda g: (g[0], "\n".join(_lines(g[1])[:-1]), *g[2:]),  # a member missing from the IRIs
    "group_layout": _format2,
    "group_maps": lambda g: (*g[:7], ("", _ints([0]), b"") if g[0] else g[7]),  # the token map lost
    "group_unsorted": _unsorted,
    "group_offsets": _key_without_members,
    "group_count": lambda g: (g[0] + 1, *g[1:]) if g[0] else g,  # one member more than listed
}


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage", "tenant", "incarnation", "version",
                                    "ahead", "unbridged", "format1", *GROUP_DAMAGE])
def test_damaged_foreign_or_stale_file_is_never_served(make_store, tmp_path, saving, damage, monkeypatch):
    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "x")
    saver = a.peers._saver  # SAVE_EVERY = 0: its idle save may still be writing; once it has
    if saver is not None:  # renamed its file over the damaged one, the test served a good file
        saver.join(30)
        assert not saver.is_alive()
    a.peers.save(a.peers.current)
    path = sidecar(st)
    groups_before = marshal.loads(path.read_bytes()[len(_peers.MAGIC) + 32:])[3]
    if damage == "flip":
        raw = bytearray(path.read_bytes())
        raw[-5] ^= 0xFF
        path.write_bytes(bytes(raw))
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "garbage":
        path.write_bytes(b"\x00" * 64)
    elif damage == "tenant":
        _rewrite(path, lambda b: (b[0], "other", b[2], b[3]))
    elif damage == "incarnation":
        _rewrite(path, lambda b: (b[0], b[1], "0" * 32, b[3]))
    elif damage == "version":
        _rewrite(path, lambda b: (b[0] + 1, b[1], b[2], b[3]))
    elif damage == "ahead":
        _rewrite(path, lambda b: (b[0], b[1], b[2], {k: (g + 1000, blob) for k, (g, blob) in b[3].items()}))
    elif damage == "unbridged":  # the file a commit behind, and the change log does not reach it
        _rewrite(path, lambda b: (b[0], b[1], b[2], {k: (g - 1, blob) for k, (g, blob) in b[3].items()}))
        monkeypatch.setattr(TenantStore, "changes", lambda self, since, until: None)
    elif damage == "format1":  # the previous release's file: its own magic, version and rows
        body = marshal.loads(path.read_bytes()[len(_peers.MAGIC) + 32:])
        payload = marshal.dumps((1, body[1], body[2], {k: (g, marshal.dumps([])) for k, (g, _) in body[3].items()}))
        path.write_bytes(b"RKPEERS\x01" + hashlib.sha256(payload).digest() + payload)
    elif damage in GROUP_DAMAGE:
        _rewrite_groups(path, GROUP_DAMAGE[damage])
    # a saved group without members (no company memory here) has nothing to damage: served as empty
    empty = sum(1 for _, blob in groups_before.values() if not marshal.loads(blob)[0])
    empty = empty if damage in GROUP_DAMAGE and damage != "group_layout" else 0  # a list of rows: refused
    b = MemoryService(st)
    with b._transaction():
        assert (b.peers.load(st.generation()) is None) == (damage not in GROUP_DAMAGE)  # groups: on use
    got, want = listed(b)
    assert got == want and b.peers.current.cold == len(GROUPS) - empty


def _swap_labels(g):
    """The label map's first two keys list each other's members."""
    keys, off, ix = g[6]
    ix = _unints(ix)
    if g[0] >= 2 and _unints(off)[:3] == [0, 1, 2]:
        ix[0], ix[1] = ix[1], ix[0]
    return (*g[:6], (keys, off, _ints(ix)), g[7])


def test_what_a_saved_map_lists_is_checked_when_read(make_store, saving):
    """Damage that only reading a key can see (a valid checksum, counts that add up): a
    label key listing another label's member is never served as a dedup target, and a
    token index beyond the members is left out, never an error or another group's memory."""
    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "x")
    with a._transaction():
        idx, g = a.peers.group("user", "ann", [])
        ann = {idx.entries[m].label_key: m.value.rsplit(":", 1)[-1] for m in idx.groups[g]}
    saver = a.peers._saver
    if saver is not None:
        saver.join(30)
    a.peers.save(a.peers.current)
    _rewrite_groups(sidecar(st), lambda g: _swap_labels(_out_of_range(g)))
    b = MemoryService(st)
    with b._transaction():
        for scope, owner, teams in GROUPS:
            idx, g = b.peers.group(scope, owner, teams)
            members = set(idx.groups.get(g, ()))
            for d in (idx.by_label, idx.by_token):
                for key, listed_ in d.get(g, {}).items():
                    assert listed_ <= members, (scope, key)
            for key, listed_ in idx.by_label.get(g, {}).items():
                assert {idx.entries[m].label_key for m in listed_} == {key}
        assert b.peers.current.cold == 0  # served from the file
    # "Ann x one" again: never an update of "Ann x two", whichever way the label map points
    again = b.remember(principal=ANN, **pref(label="Ann x one", content="alpha x bravo"))
    assert again.id != ann["ann x two"]
    two = b.get(ann["ann x two"], principal=ANN)
    assert (two.label, two.content) == ("Ann x two", "charlie x")


def test_file_behind_a_schema_change_is_not_served(make_store, saving):
    from pyoxigraph import Literal, NamedNode, Quad

    from reckon.store import SCHEMA

    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "x")
    a.peers.save(a.peers.current)
    with st.transaction() as txn:
        txn.add(Quad(NamedNode("https://example.org/x"), NamedNode("http://www.w3.org/2000/01/rdf-schema#comment"),
                     Literal("a schema edit"), SCHEMA))
    b = MemoryService(st)
    with b._transaction():
        assert b.peers.load(st.generation()) is None


@pytest.mark.parametrize("where", ["before_save", "before_rename"])
def test_sigkill_between_commit_and_file_write_loses_nothing(make_store, tmp_path, where):
    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "old")
    a.peers.save(a.peers.current)
    old = sidecar(st).read_bytes()
    st.close()
    hook = ("_peers.PeerCache.save = lambda self, idx: os.kill(os.getpid(), signal.SIGKILL)"
            if where == "before_save" else
            "_peers.os.replace = lambda a, b: os.kill(os.getpid(), signal.SIGKILL)")
    code = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(REPO / "engine")!r}); sys.path.insert(0, {str(REPO)!r})
        from tests.memory.conftest import ANN, BOB, OPS, reasoner_factory
        from tests.memory.test_peer_sidecar import pref
        from reckon.memory import _peers
        from reckon.memory.models import Principal
        from reckon.memory.service import MemoryService
        from reckon.store import TenantStore
        _peers.SAVE_EVERY = _peers.SAVE_AT_MOST = 3600.0  # no idle save: the one at exit
        st = TenantStore({str(tmp_path / "acme")!r}, reasoner_factory=reasoner_factory(), linger=0)
        svc = MemoryService(st)
        m = svc.remember(principal=BOB, **pref(label="Bob killed", content="written then killed"))
        print(m.id, flush=True)
        # a person the file has no group of: read from the store, so the process saves at exit
        svc.remember(principal=Principal(person="carol"), **pref(label="Carol acked", content="cold group"))
        assert svc.peers.due(svc.peers.current)
        {hook}
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == -signal.SIGKILL, p.stderr
    acked = p.stdout.split()[0]
    assert sidecar(st).read_bytes() == old  # the file is as the parent saved it (no torn write)
    other = TenantStore(tmp_path / "acme", reasoner_factory=reasoner_factory(), linger=0)
    try:
        b = MemoryService(other)
        labels = {m.label for m in b.memories()}
        assert {"Bob killed", "Carol acked"} <= labels
        got, want = listed(b)
        assert got == want and acked in {m.rsplit(":", 1)[-1] for m in want[("user", "bob")]}
        assert b.remember(principal=BOB, **pref(label="bob KILLED", content="again")).id == acked  # dedup
    finally:
        other.close()
    leftovers = [x for x in os.listdir(sidecar(st).parent) if x != "index.bin"]
    assert all(x.endswith(".tmp") for x in leftovers)  # a torn temporary is never read


@pytest.fixture
def no_idle_save(monkeypatch):
    monkeypatch.setattr(_peers, "SAVE_EVERY", 3600.0)
    monkeypatch.setattr(_peers, "SAVE_AT_MOST", 3600.0)


def test_a_write_never_saves_the_file_close_does(make_store, no_idle_save):
    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "x")
    assert a.peers.current is not None and a.peers.current.cold == len(GROUPS)
    assert not sidecar(st).exists()  # five writes, four cold groups: no save inside a write
    a.peers.close()
    assert sidecar(st).exists()
    b = MemoryService(st)
    got, want = listed(b)
    assert got == want and sum(map(len, want.values())) == 5
    assert b.peers.current.cold == 0  # every group from the file


def test_a_failed_batch_is_never_saved(make_store, no_idle_save):
    import threading

    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "x")
    saver: list[threading.Thread] = []

    def boom(txn) -> None:
        # another thread saves as soon as this transaction lets go of the index
        saver.append(threading.Thread(target=a.peers.flush))
        saver[0].start()
        raise RuntimeError("the batch fails after its items were listed")

    forget = a.peers.invalidate

    def late_invalidate() -> None:  # the saver runs in the window before the index is forgotten
        saver[0].join()
        forget()

    a.peers.invalidate = late_invalidate  # type: ignore[method-assign]
    items = [pref(label="Ann batch only", content="never committed"), pref(label="Ann x one", content="golf")]
    with pytest.raises(RuntimeError):
        a.remember_many(items, principal=ANN, within=boom)
    saver[0].join()
    assert "Ann batch only" not in {m.label for m in a.memories()}
    if sidecar(st).exists():
        assert b"Ann batch only" not in sidecar(st).read_bytes() and b"ann batch only" not in sidecar(st).read_bytes()
    a.peers.close()
    b = MemoryService(st)
    got, want = listed(b)
    assert got == want and sum(map(len, want.values())) == 5


def test_a_single_write_process_leaves_a_usable_file(make_store, tmp_path):
    st = make_store("acme")
    fill(MemoryService(st), "x")
    st.close()
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / "engine")!r}); sys.path.insert(0, {str(REPO)!r})
        from tests.memory.conftest import ANN, reasoner_factory
        from tests.memory.test_peer_sidecar import pref
        from reckon.memory.service import MemoryService
        from reckon.store import TenantStore
        st = TenantStore({str(tmp_path / "acme")!r}, reasoner_factory=reasoner_factory(), linger=0)
        m = MemoryService(st).remember(principal=ANN, **pref(label="Ann single", content="one write then exit"))
        print(m.id)
    """)  # exits without closing anything, as `reckon remember` does
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert sidecar(st).exists()
    other = TenantStore(tmp_path / "acme", reasoner_factory=reasoner_factory(), linger=0)
    try:
        b = MemoryService(other)
        again = b.remember(principal=ANN, **pref(label="ann SINGLE", content="deduplicated"))
        assert again.id == p.stdout.split()[-1]
        assert b.peers.current is not None and b.peers.current.cold == 0  # the group from the file
        got, want = listed(b)
        assert got == want
    finally:
        other.close()


def test_prefill_lists_what_a_store_read_gives_while_another_service_writes(make_store, no_idle_save):
    from reckon.memory.models import Principal

    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "x")
    carol = Principal(person="carol")
    a.remember(principal=carol, **pref(label="Carol one", content="hotel"))
    b = MemoryService(st)
    b.remember(principal=ANN, **pref(label="Ann fresh", content="india"))  # one group read cold
    assert b.peers.current.cold == 1
    fill(a, "y")  # another service's commits after b's index: brought forward by the prefill
    assert b.peers.prefill() == 4  # bob, carol, the operator, company (ann's was listed)
    idx = b.peers.current
    assert idx.cold == 5 and {g[1].value.rsplit(":", 1)[-1] for g in idx.built if len(g) == 2 and not isinstance(g[1], frozenset)} == {"ann", "bob", "carol", "olga"}
    assert b.peers.prefill() == 0
    a.remember(principal=BOB, **pref(label="Bob z", content="juliett"))
    got, want = listed(b)
    assert got == want and b.peers.current.cold == 6  # only the team group (not prefilled) read cold
    assert b.remember(principal=carol, **pref(label="carol ONE", content="again")).label == "carol ONE"
    assert len([m for m in b.memories() if m.owner == "carol"]) == 1  # dedup through the prefilled group


@pytest.mark.parametrize("how", ["deleted", "deleted_while_saving"])
def test_exit_after_the_tenant_directory_was_deleted_says_nothing(make_store, tmp_path, how):
    """The exit hook of a process whose tenant directory is gone (deleted by another
    process or by ``Engine.delete_tenant``) saves nothing and logs nothing: no "peer
    index ... not saved: [Errno 2]" warning, no directory created again."""
    st = make_store("acme")
    fill(MemoryService(st), "x")
    st.close()
    gone = ("_real = _peers.os.replace\n"
            "def _replace(a, b):\n"
            "    shutil.rmtree(tenant)\n"
            "    return _real(a, b)\n"
            "_peers.os.replace = _replace\n") if how == "deleted_while_saving" else "shutil.rmtree(tenant)\n"
    code = textwrap.dedent(f"""
        import logging, shutil, sys
        sys.path.insert(0, {str(REPO / "engine")!r}); sys.path.insert(0, {str(REPO)!r})
        from tests.memory.conftest import ANN, reasoner_factory
        from tests.memory.test_peer_sidecar import pref
        from reckon.memory import _peers
        from reckon.memory.models import Principal
        from reckon.memory.service import MemoryService
        from reckon.store import TenantStore
        logging.basicConfig(level=logging.WARNING)
        _peers.SAVE_EVERY = _peers.SAVE_AT_MOST = 3600.0  # no idle save: the one at exit
        tenant = {str(tmp_path / "acme")!r}
        st = TenantStore(tenant, reasoner_factory=reasoner_factory(), linger=0)
        svc = MemoryService(st)
        svc.remember(principal=Principal(person="dora"), **pref(label="Dora", content="a cold group"))
        assert svc.peers.due(svc.peers.current)
        st.close()
    """) + textwrap.indent(gone, "") + "print('exiting', flush=True)\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["exiting"]
    assert "not saved" not in p.stderr and "peer index" not in p.stderr, p.stderr
    assert not (tmp_path / "acme").exists()  # not re-created by the save


# --------------------------------------------------------------------------- differential property

_WHO = ["ann", "bob", None]  # None: company scope, written by the operator
_LABELS = ["Report style", "report  STYLE", "Budget note", "Launch plan"]
_WORDS = ["weekly", "report", "bullet", "lists", "tables", "never", "always", "totals"]



def _outcome(svc: MemoryService, who: str | None, label: str, content: str, ids: dict[str, int], k: int):
    """What the write path decided for op ``k``: a new memory, a dedup update of op j's
    memory, or a conflict naming ops' memories (ids mapped to the op that made them)."""
    from reckon._errors import ConflictPending
    from reckon.memory.models import Principal

    kw = (dict(scope="company", kind="fact", source="operator") if who is None else {})
    principal = OPS if who is None else Principal(person=who)
    try:
        m = svc.remember(principal=principal, **pref(label=label, content=content, **kw))
    except ConflictPending as e:
        return ("conflict", tuple(sorted(ids[c.rsplit(":", 1)[-1]] for c in e.candidates)))
    mid = m.id.rsplit(":", 1)[-1]
    if mid in ids:
        return ("dedup", ids[mid])
    ids[mid] = k
    return ("new",)


def test_decisions_through_the_saved_index_equal_the_cold_path(make_store):
    """Property (hypothesis): for any sequence of writes -- by one service, by a fresh
    service that lists its groups from the saved file (format 2), by another service whose
    commits the first brings forward from the change log -- every dedup and conflict
    decision equals the one a service that reads every group cold from the store makes
    (the oracle: a new service per write, no file)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as hst

    from reckon.memory.models import Principal  # noqa: F401 - used by _outcome

    names = iter(range(10_000))
    op = hst.tuples(hst.sampled_from(_WHO), hst.sampled_from(_LABELS),
                    hst.lists(hst.sampled_from(_WORDS), min_size=1, max_size=4),
                    hst.sampled_from(["same", "same", "fresh", "other"]))

    @settings(max_examples=10, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(ops=hst.lists(op, min_size=1, max_size=10))
    def run(ops) -> None:
        n = next(names)
        warm_st, cold_st = make_store(f"warm{n}"), make_store(f"cold{n}")
        services = {"same": MemoryService(warm_st)}
        warm_ids: dict[str, int] = {}
        cold_ids: dict[str, int] = {}
        for k, (who, label, words, where) in enumerate(ops):
            content = " ".join(words)
            if where == "fresh":  # a new service: its groups from the file
                services["same"].peers.close()  # saves the file (a write never does)
                services["same"] = MemoryService(warm_st)
            svc = services["same"] if where != "other" else services.setdefault("other", MemoryService(warm_st))
            got = _outcome(svc, who, label, content, warm_ids, k)
            cold = MemoryService(cold_st)
            cold.peers.sidecar = lambda: None  # type: ignore[method-assign] - no file: every group read cold
            want = _outcome(cold, who, label, content, cold_ids, k)
            assert got == want, (k, ops[: k + 1])
            got_l, want_l = listed(services["same"])
            assert got_l == want_l

    run()


def test_prefill_reads_a_few_members_per_snapshot_never_under_the_write_lock(make_store, no_idle_save, monkeypatch):
    """A write of this process never waits behind the prefill for more than a chunk's
    reads: the prefill reads :data:`PREFILL_CHUNK` members per store snapshot, and never
    while it holds the index's guard (the lock the write path takes inside its
    transaction); what it lists equals a read from the store."""
    from contextlib import contextmanager

    from reckon.memory.models import Principal

    monkeypatch.setattr(_peers, "PREFILL_CHUNK", 2, raising=False)
    st = make_store("acme")
    a = MemoryService(st)
    dora = Principal(person="dora")
    for i in range(7):
        a.remember(principal=dora, **pref(label=f"Dora {i}", content=f"kilo{i} lima"))
    b = MemoryService(st)
    b.remember(principal=ANN, **pref(label="Ann fresh", content="india"))  # b's index, one group cold
    with st.snapshot() as v, b.peers.guard:  # bring b's index past its own commit (reads under the guard)
        b._tl.txn = _peers._ViewOnly(v)
        try:
            b.peers.index()
        finally:
            b._tl.txn = None
    reads: list[tuple[int, bool]] = []  # per snapshot of the prefill: members read, guard held
    real = TenantStore.snapshot

    @contextmanager
    def counting(self):
        with real(self) as view:
            seen = [0, False]

            class Counted:
                def __getattr__(self, name):
                    return getattr(view, name)

                def contains(self, q):
                    if q.predicate == _peers.R.A and q.object == _peers.R.ACTIVE:
                        seen[0] += 1
                        seen[1] = seen[1] or b.peers.guard._is_owned()
                    return view.contains(q)

            yield Counted()
            reads.append((seen[0], seen[1]))

    monkeypatch.setattr(TenantStore, "snapshot", counting)
    assert b.peers.prefill() >= 1
    monkeypatch.setattr(TenantStore, "snapshot", real)
    assert sum(n for n, _ in reads) >= 7  # dora's seven memories were read ...
    assert max(n for n, _ in reads) <= 2  # ... two per snapshot at most
    assert not any(held for _, held in reads)  # never under the write path's lock
    idx = b.peers.current
    g = (_peers.R.SCOPE_IRI["user"], b._person("dora"))
    assert g in idx.built
    want = b.peers.read_group("user", "dora", [], lean=True)
    assert set(idx.groups[g]) == set(want) and len(want) == 7
    assert {k: set(v) for k, v in idx.by_label[g].items()} == {
        normalise_label(x[_peers.R.LABEL][0].value): {m} for m, x in want.items()}
    assert b.remember(principal=dora, **pref(label="dora 3", content="again")).label == "dora 3"
    assert len([m for m in b.memories() if m.owner == "dora"]) == 7  # dedup through the prefilled group


def test_the_write_paths_use_ends_when_its_transaction_ends(make_store, no_idle_save):
    """The idle saver's prefill waits for SAVE_EVERY seconds after the write path's
    last use; a slow write (the first one of a process loads the model and the
    reasoner: over a second) counts as in use until its transaction ends, or the prefill
    started while it still ran and gave up on the next write."""
    import time as _time

    st = make_store("acme")
    svc = MemoryService(st)
    inner: list[float] = []
    validator = st.validator

    def slow_check(*a, **kw):  # the write's validation, inside its transaction
        _time.sleep(0.05)
        inner.append(_time.perf_counter())
        return validator(*a, **kw) if validator is not None else None

    st.validator = slow_check
    svc.remember(principal=ANN, **pref(label="Ann slow", content="a slow first write"))
    assert inner, "the write never validated inside its transaction"
    assert svc.peers.last_use >= inner[-1]


def test_the_idle_saver_says_nothing_when_the_store_closed_under_it(make_store, monkeypatch, caplog):
    """Tenant.close closes the store while the idle saver's prefill may be between two
    chunks: its next snapshot raises TenantClosed, which is no failure to report (a
    warning with a traceback was logged at every such close)."""
    import logging

    from reckon._errors import TenantClosed

    monkeypatch.setattr(_peers, "SAVE_EVERY", 0.0)
    st = make_store("acme")
    svc = MemoryService(st)
    svc.remember(principal=ANN, **pref(label="Ann one", content="alpha"))

    def closed() -> int:
        raise TenantClosed("tenant 'acme' is closed")

    monkeypatch.setattr(svc.peers, "prefill", closed)
    with caplog.at_level(logging.WARNING, logger="reckon"):
        svc.peers._idle_save()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []

    def broken() -> int:
        raise OSError("disk full")

    monkeypatch.setattr(svc.peers, "prefill", broken)
    with caplog.at_level(logging.WARNING, logger="reckon"):
        svc.peers._idle_save()
    assert "saving the peer index failed" in caplog.text  # a real failure is still reported


def _turns(st: TenantStore, n: int) -> None:
    """``n`` commits that touch no memory (as recording transcript turns does)."""
    from pyoxigraph import Literal, NamedNode, Quad

    from reckon.store import TRANSCRIPTS

    for i in range(n):
        with st.transaction() as txn:
            txn.add(Quad(NamedNode(f"https://example.org/turn/{i}"), NamedNode("https://example.org/text"),
                         Literal(f"turn {i}"), TRANSCRIPTS))


def _file_gens(st: TenantStore) -> set[int]:
    return {g for g, _ in marshal.loads(sidecar(st).read_bytes()[len(_peers.MAGIC) + 32:])[3].values()}


@pytest.mark.parametrize("who", ["same_service", "another_writer"])
def test_many_commits_without_a_memory_write_do_not_age_the_file_out(make_store, no_idle_save, who):
    """A process that records 100 turns after its last memory write leaves a file at the
    newest generation (its close brings the index forward), and a file that many commits
    behind (another writer, no save) is still served; a fresh service's prefill restamps
    the saved groups, so the next process has them at the newest generation too."""
    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "x")
    a.peers.save(a.peers.current)
    saved_at = st.generation()
    _turns(st, 100)
    assert st.generation() - saved_at == 100 > 64  # beyond the bound an earlier release had
    if who == "same_service":
        a.peers.close()
        assert _file_gens(st) == {st.generation()}
    b = MemoryService(st)
    got, want = listed(b)
    assert got == want and sum(map(len, want.values())) == 5
    assert b.peers.current.cold == 0  # every group from the file
    if who == "another_writer":
        c = MemoryService(st)
        c.peers.prefill()
        c.peers.close()
        assert _file_gens(st) == {st.generation()}
        d = MemoryService(st)
        got, want = listed(d)
        assert got == want and d.peers.current.cold == 0


def test_a_file_beyond_save_behind_is_read_from_the_store(make_store, no_idle_save, monkeypatch):
    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "x")
    a.peers.save(a.peers.current)
    monkeypatch.setattr(_peers, "SAVE_BEHIND", 16)
    _turns(st, 17)
    b = MemoryService(st)
    got, want = listed(b)
    assert got == want and b.peers.current.cold == len(GROUPS)


def test_saves_and_prefills_beside_writes_never_deadlock(make_store, no_idle_save):
    """The saver takes the store's lock before the index's guard, as a write does: a
    thread saving and prefilling in a loop beside writes of another thread (and a
    snapshot reader) finishes. The earlier order (guard, then the store's lock inside a
    save) hung here within a few writes."""
    import threading

    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "x")
    stop = threading.Event()
    errors: list[BaseException] = []

    def saver() -> None:
        try:
            while not stop.is_set():
                a.peers.flush()
                a.peers.prefill()
        except BaseException as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)

    t = threading.Thread(target=saver, daemon=True)
    w = threading.Thread(target=lambda: [fill(a, f"w{i}") for i in range(8)], daemon=True)
    t.start()
    w.start()
    w.join(120)
    stop.set()
    t.join(120)
    assert not w.is_alive() and not t.is_alive(), "a write and the saver wait on each other"
    assert not errors
    got, want = listed(a)
    assert got == want and sum(map(len, want.values())) == 5 * 9


def test_a_write_does_not_wait_while_the_saver_encodes(make_store, saving, monkeypatch):
    """The saver takes what the file needs under the write path's guard, then encodes the
    changed groups and writes the file without it (a 40k-member company group took
    ~0.5 s to encode at 100k memories, and every write arriving meanwhile waited): a
    write completes while an encode is held up, and the file written then lists the
    groups exactly as of the generation taken, the write brought forward from the
    store by the next service."""
    import threading

    monkeypatch.setattr(_peers, "SAVE_EVERY", 3600.0)  # no idle save in between: this test saves
    monkeypatch.setattr(_peers, "SAVE_AT_MOST", 3600.0)
    st = make_store("encoding")
    a = MemoryService(st)
    fill(a, "first")  # every group listed and changed since any encoding
    started, release = threading.Event(), threading.Event()
    real = _peers._enc_rows

    def slow(rows):  # type: ignore[no-untyped-def]
        started.set()
        assert release.wait(60)
        return real(rows)

    def save() -> None:
        with a.peers.guard:  # as flush() calls it
            a.peers.save(a.peers.current)

    monkeypatch.setattr(_peers, "_enc_rows", slow)
    saver = threading.Thread(target=save)
    saver.start()
    assert started.wait(60)
    writer = threading.Thread(target=lambda: fill(a, "second"))
    writer.start()
    writer.join(60)
    written = not writer.is_alive()
    release.set()
    saver.join(60)
    assert written, "a write waited for the saver's encoding"
    assert not saver.is_alive() and sidecar(st).exists()
    monkeypatch.setattr(_peers, "_enc_rows", real)
    b = MemoryService(st)
    got, want = listed(b)  # the file's groups (as of the first fill) brought forward over the second
    assert got == want
    assert all(len(v) == (4 if k == ("user", "ann") else 2) for k, v in want.items()), want


def test_a_saved_map_reads_as_the_dict_it_encodes():
    """``_enc_map`` then ``_SortedMap``: ``in``, ``get``, ``pop`` (once), ``len`` and
    iteration answer as the dict did, for keys present, absent and popped."""
    from hypothesis import given, settings
    from hypothesis import strategies as hs

    keys = hs.text(hs.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), min_size=1, max_size=6)

    @settings(max_examples=200, deadline=None)
    @given(hs.dictionaries(keys, hs.lists(hs.integers(0, 49), min_size=1, max_size=5, unique=True).map(sorted),
                           max_size=30),
           hs.lists(keys, max_size=20))
    def check(d, probes):
        m = _peers._SortedMap(_peers._enc_map(d), 50, True)
        oracle = {k: tuple(v) for k, v in d.items()}
        assert m.pairs() == sum(map(len, d.values()))
        for k in probes + sorted(d)[:3]:
            assert (k in m) == (k in oracle)
            assert m.get(k) == oracle.get(k)
            assert m.pop(k, None) == oracle.pop(k, None)
            assert k not in m and m.get(k) is None
            assert len(m) == len(oracle) and sorted(m) == sorted(oracle)

    check()


def test_a_saved_map_refuses_unsorted_keys_and_indices_beyond_the_group():
    d = {"alpha": [0, 2], "bravo": [1]}
    keys, off, ix = _peers._enc_map(d)
    with pytest.raises(ValueError):
        _peers._SortedMap(("bravo\nalpha", off, ix), 3, True)
    with pytest.raises(ValueError):
        _peers._SortedMap((keys, off, ix), 2, True)  # index 2 of a 2-member group
    lenient = _peers._SortedMap((keys, off, ix), 2, False)  # the token map: checked as read
    assert lenient.get("alpha") == (0,) and lenient.get("bravo") == (1,)


def test_a_group_encodes_and_decodes_to_its_rows():

    rows = [("urn:x:b", ("urn:t:M",), "beta", "beta two"), ("urn:x:a", ("urn:t:M", "urn:t:F"), "alpha", ""),
            ("urn:x:c", ("urn:t:M",), "beta", "beta")]
    blob = _peers._enc_rows([(r[0], r) for r in rows])
    iris, types, type_idx, labels, toks, labelmap, tokmap = _peers._dec_group(blob)
    assert iris == ["urn:x:a", "urn:x:b", "urn:x:c"]
    assert [types[i] for i in type_idx] == [("urn:t:M", "urn:t:F"), ("urn:t:M",), ("urn:t:M",)]
    assert labels == ["alpha", "beta", "beta"] and toks == ["", "beta two", "beta"]
    assert labelmap.get("beta") == (1, 2) and labelmap.get("alpha") == (0,)
    assert tokmap.get("beta") == (1, 2) and tokmap.get("two") == (1,) and "alpha" not in tokmap
    with pytest.raises(TypeError):  # a separator in a field: the group is not saved
        _peers._enc_rows([("urn:x:a", ("urn:x:a", ("urn:t:M",), "a", "x\ny"))])


def test_a_listed_groups_members_behave_as_the_set_they_stand_for():
    """``_Members`` (a group listed from the file: its saved IRIs, those that left, those
    that joined) answers ``in``, ``len`` and iteration as a set of terms under any order of
    joins and departures, before and after it was first iterated."""
    from hypothesis import given, settings
    from hypothesis import strategies as hs
    from pyoxigraph import NamedNode

    iris = [f"urn:m:{i}" for i in range(8)]
    ops = hs.lists(hs.tuples(hs.sampled_from(["add", "discard", "iter", "update"]), hs.integers(0, 11)), max_size=25)

    @settings(max_examples=300, deadline=None)
    @given(hs.sets(hs.integers(0, 7)), hs.sets(hs.integers(0, 7)), ops)
    def check(saved, stale, ops):
        index = {iris[i]: n for n, i in enumerate(sorted(saved))}
        members = _peers._Members(index, {iris[i] for i in stale & saved}, ())
        oracle = {NamedNode(iris[i]) for i in saved - stale}
        for op, i in ops:
            m = NamedNode(f"urn:m:{i}")
            if op == "add":
                members.add(m)
                oracle.add(m)
            elif op == "discard":
                members.discard(m)
                oracle.discard(m)
            elif op == "update":
                members.update([m])
                oracle.add(m)
            else:
                assert set(members) == oracle
            assert len(members) == len(oracle) and (m in members) == (m in oracle)
            assert bool(members) == bool(oracle)
        assert set(members) == oracle

    check()


def test_a_save_taken_while_another_writes_never_stamps_a_stale_blob(make_store, no_idle_save, monkeypatch):
    """Two saves overlapping (the idle saver's, then close()'s): the second is taken while
    the first still encodes and writes, and must not reuse the group's blob cached before
    the changes the first save took (it was stamped with the new generation, and the next
    process updated a memory of another label through it)."""
    import threading

    st = make_store("race")
    a = MemoryService(st)
    m = a.remember(principal=OPS, **pref(scope="company", kind="fact", source="operator",
                                         label="alpha plan", content="alpha notes"))
    a.remember(principal=OPS, **pref(scope="company", kind="fact", source="operator",
                                     label="other plan", content="other notes"))
    a.peers.flush()  # caches the company group's blob: 'alpha plan' -> m
    assert a.peers.current.encoded
    a.update(m.id, principal=OPS, label="gamma plan", content="gamma notes")
    a.remember(principal=OPS, **pref(scope="company", kind="fact", source="operator",
                                     label="filler", content="filler notes"))
    real = _peers.PeerCache._write_file
    writing, done = threading.Event(), threading.Event()

    def slow_first(path, payload):  # type: ignore[no-untyped-def]
        if threading.current_thread().name == "first":
            writing.set()
            assert done.wait(60)
        real(path, payload)

    monkeypatch.setattr(_peers.PeerCache, "_write_file", staticmethod(slow_first))
    monkeypatch.setattr(_peers.PeerCache, "due", lambda self, idx: True)
    first = threading.Thread(target=a.peers.flush, name="first")
    first.start()
    assert writing.wait(60)
    second = threading.Thread(target=a.peers.flush, name="second")  # takes its job now, writes after the first
    second.start()
    time.sleep(0.2)
    done.set()
    first.join(60)
    second.join(60)
    monkeypatch.setattr(_peers.PeerCache, "_write_file", staticmethod(real))
    b = MemoryService(st)
    got, want = listed(b)
    assert got == want and b.peers.current.cold == len(GROUPS) - 1  # the company group from the file
    again = b.remember(principal=OPS, **pref(scope="company", kind="fact", source="operator",
                                             label="alpha plan", content="alpha notes"))
    assert again.id != m.id and b.get(m.id).label == "gamma plan"


@pytest.mark.parametrize("through", ["dedup", "candidate"])
def test_an_index_that_disagrees_with_the_store_is_dropped_never_served(make_store, saving, through):
    """A file with a valid checksum that lists what the store does not (a memory of another
    group, a deleted one; as a copied tenant directory's file or a foreign writer leaves):
    a dedup hit or a conflict candidate is confirmed against the store first; one that is
    not drops the index and removes the file, and the write reads the group from the store.
    Never an update of another memory, never an error."""
    st = make_store("acme")
    a = MemoryService(st)
    team = a.remember(principal=OPS, **pref(scope="team", teams=["growth"], source="operator",
                                            label="zeta plan", content="zeta notes"))
    a.remember(principal=OPS, **pref(scope="company", kind="fact", source="operator",
                                     label="company plan", content="company notes"))
    saver = a.peers._saver
    if saver is not None:
        saver.join(30)
    a.peers.save(a.peers.current)
    path = sidecar(st)
    body = marshal.loads(path.read_bytes()[len(_peers.MAGIC) + 32:])
    blobs = {k: v for k, v in body[3].items()}
    company = next(k for k in blobs if "CompanyScope" in k[0])
    team_key = next(k for k in blobs if "TeamScope" in k[0])
    # the company group's blob replaced by the team group's: 'zeta plan' listed as a company memory
    forged = dict(blobs)
    forged[company] = (blobs[company][0], blobs[team_key][1])
    _rewrite(path, lambda b: (b[0], b[1], b[2], forged))
    b = MemoryService(st)
    label = "zeta plan" if through == "dedup" else "zeta plan revised"  # a dedup hit / a candidate by token
    try:
        again = b.remember(principal=OPS, **pref(scope="company", kind="fact", source="operator",
                                                 label=label, content="zeta notes"))
    except ConflictPending as e:  # a conflict names company memories only
        assert team.id not in e.conflict.candidates
    else:
        assert again.id != team.id and b.get(again.id).label == label
    assert b.get(team.id).label == "zeta plan" and b.get(team.id).content == "zeta notes"
    assert not path.exists()  # dropped with its file: the next process reads the group from the store
    got, want = listed(b)
    assert got == want


@pytest.mark.parametrize("how", ["infinite", "huge", "not_bytes"])
def test_a_generation_or_blob_of_another_type_is_ignored(make_store, saving, how):
    """A checksummed file whose group generation is not an int (``inf``, a float) or whose
    blob is not bytes: ignored, never an exception out of a write."""
    st = make_store("acme")
    a = MemoryService(st)
    fill(a, "x")
    saver = a.peers._saver
    if saver is not None:
        saver.join(30)
    a.peers.save(a.peers.current)
    bad = {"infinite": lambda g, blob: (float("inf"), blob), "huge": lambda g, blob: (g, 2**70),
           "not_bytes": lambda g, blob: (g, "text")}[how]
    _rewrite(sidecar(st), lambda b: (b[0], b[1], b[2], {k: bad(*v) for k, v in b[3].items()}))
    b = MemoryService(st)
    b.remember(principal=ANN, **pref(label="Ann y", content="after the damage"))
    got, want = listed(b)
    assert got == want
