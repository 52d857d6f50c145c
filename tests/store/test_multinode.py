"""Two ``reckon serve`` nodes, two SPARQL servers (``oxigraph serve`` and Virtuoso),
tenants sharded across them, concurrent writers on one tenant through both nodes, one
node SIGKILLed mid-write: no acknowledged write is lost, no generation is written twice,
and ``reckon tenant validate`` conforms for every tenant (DESIGN.md, "The store")."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO
from tests.store.conftest import _server
from tests.store.servers import Server, free_port

START_TIMEOUT = 120.0
WORDS = "apple river stone cloud ember harbor violet tundra maple quartz falcon meadow copper lantern".split()


def _serve(data_dir: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reckon.cli", "--data-dir", str(data_dir), "serve", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning", "--query-workers", "1", "--rate-limit", "0"],
        env=env, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"reckon serve exited: {proc.stderr.read().decode(errors='replace')[-2000:]}")  # type: ignore[union-attr]
        try:
            if httpx.get(base + "/healthz", timeout=2.0).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("reckon serve did not start")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
    if proc.stderr:
        proc.stderr.close()


def test_two_nodes_two_servers_one_killed(sparql_servers: dict[str, Server], tmp_path_factory: pytest.TempPathFactory,
                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ox = _server(sparql_servers, "oxigraph", tmp_path_factory.getbasetemp() / "servers")
    vt = _server(sparql_servers, "virtuoso", tmp_path_factory.getbasetemp() / "servers")
    prefix = f"urn:reckon:multinode{os.getpid()}:"
    shards = tmp_path / "shards.json"
    shards.write_text(json.dumps({"default": "ox", "endpoints": {
        "ox": ox.endpoint_config(prefix), "vt": vt.endpoint_config(prefix)}}))
    monkeypatch.setenv("RECKON_SHARDS", str(shards))
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")

    from reckon import Engine
    from reckon.server.auth import TokenStore

    n1, n2 = tmp_path / "node1", tmp_path / "node2"
    eng = Engine(n1, jobs=False)
    eng.create_tenant("alpha")  # on oxigraph
    raw = json.loads(shards.read_text())
    raw["default"] = "vt"
    shards.write_text(json.dumps(raw))
    eng.create_tenant("beta")  # on Virtuoso
    assert json.loads(shards.read_text())["tenants"] == {"alpha": "ox", "beta": "vt"}
    # tokens made on node1 open the tenants on node2 too: they live with the tenant's data
    # on its SPARQL server (reckon.store.tokens), node2 has never seen these tenants
    tokens = {t: TokenStore(n1).create(t, person="dana", role="operator")[1] for t in ("alpha", "beta")}
    eng.close()

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "engine"), str(REPO)]),
           "RECKON_SHARDS": str(shards), "RECKON_EMBEDDER": "hashing"}
    p1, base1 = _serve(n1, env)
    p2, base2 = _serve(n2, env)
    acked: list[tuple[str, str]] = []
    refused = {"n": 0}
    lock = threading.Lock()
    stop = threading.Event()

    def writer(name: str, base: str, tenant: str) -> None:
        rng = random.Random(name)
        i = 0
        with httpx.Client(timeout=90.0) as c:
            while not stop.is_set():
                # words of their own per write: the conflict judge sees unrelated memories
                words = " ".join(f"{w}{i}{name}" for w in rng.sample(WORDS, 4))
                label = f"{name} {i} {words}"
                try:
                    r = c.post(f"{base}/tenants/{tenant}/memories", headers={"Authorization": f"Bearer {tokens[tenant]}"},
                               json={"kind": "context", "scope": "company", "importance": 2, "source": "operator",
                                     "label": label, "content": f"{words} {i:x}"})
                    if r.status_code == 201:
                        with lock:
                            acked.append((tenant, label))
                    else:
                        refused["n"] += 1
                except httpx.TransportError:
                    refused["n"] += 1  # the node died: not acknowledged
                    if base == base1:
                        return
                i += 1

    threads = [threading.Thread(target=writer, args=(f"w{k}", base, tenant))
               for k, (base, tenant) in enumerate([(base1, "alpha"), (base2, "alpha"), (base1, "alpha"),
                                                   (base2, "alpha"), (base1, "beta"), (base2, "beta")])]
    try:
        for th in threads:
            th.start()
        deadline = time.monotonic() + 300
        while len(acked) < 24 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(p1.pid, signal.SIGKILL)  # mid-stream: node1 has writes in flight
        p1.wait(timeout=30)
        n_at_kill = len(acked)
        while len(acked) < n_at_kill + 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        for th in threads:
            th.join(timeout=120)
    finally:
        stop.set()
        _stop(p1)
        _stop(p2)
    print(f"multinode: {len(acked)} acknowledged writes, {refused['n']} refused or cut off by the kill")
    assert len(acked) >= 32, (len(acked), refused)
    assert {t for t, _ in acked} == {"alpha", "beta"}

    from tests.cli.conftest import run_cli

    n3 = tmp_path / "node3"  # a fresh node reads what the servers hold
    check = Engine(n3, jobs=False)
    for tenant in ("alpha", "beta"):
        t = check.tenant(tenant)
        labels = {r["l"].value for r in t.sparql(
            "SELECT ?l WHERE { GRAPH <urn:reckon:graph:memories> { ?m rdfs:label ?l } }")}
        lost = [lab for tt, lab in acked if tt == tenant and lab not in labels]
        assert lost == [], f"acknowledged writes lost on {tenant}: {lost}"
        # no generation committed twice: one commit record (one token) per generation
        be: Any = t.store.backend
        rows = be.endpoint.select(
            f"SELECT ?n (COUNT(DISTINCT ?tok) AS ?k) WHERE {{ GRAPH <{be.meta.value}> {{ ?c <urn:reckon:commitGeneration> ?n ; "
            "<urn:reckon:commitToken> ?tok } } GROUP BY ?n HAVING (COUNT(DISTINCT ?tok) > 1)")
        assert rows == []
        gens = [int(r["n"].value) for r in be.endpoint.select(
            f"SELECT ?n WHERE {{ GRAPH <{be.meta.value}> {{ ?c <urn:reckon:commitGeneration> ?n }} }}")]
        assert sorted(gens) == list(range(min(gens), max(gens) + 1)) and max(gens) == t.store.generation()
        t.store.release()
        r = run_cli(n3, "tenant", "validate", tenant)
        assert r.code == 0, r.err + r.out


@pytest.mark.parametrize("kind", ["oxigraph", "virtuoso"])
def test_a_token_made_on_one_node_works_on_the_other(sparql_servers: dict[str, Server], kind: str,
                                                    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 14: API tokens are kept with the tenant (hashed, in its server graphs), not
    in node-local files: created through node1's CLI, used on node2, revoked on node2,
    refused by node1 at its next request; a tenant's token never opens another tenant."""
    from tests.cli.conftest import run_cli

    srv = _server(sparql_servers, kind, tmp_path_factory.getbasetemp() / "servers")
    shards = tmp_path / "shards.json"
    shards.write_text(json.dumps({"default": "s", "endpoints": {
        "s": srv.endpoint_config(f"urn:reckon:tokens{os.getpid()}-{kind}:")}}))
    monkeypatch.setenv("RECKON_SHARDS", str(shards))
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    n1, n2 = tmp_path / "node1", tmp_path / "node2"
    for t in ("alpha", "beta"):
        r = run_cli(n1, "tenant", "create", t)
        assert r.code == 0, r.err + r.out
    r = run_cli(n1, "token", "create", "--tenant", "alpha", "--as", "dana", "--operator")
    assert r.code == 0, r.err + r.out
    token = next(w for w in r.out.split() if w.startswith("rkt_alpha."))
    token_id = token.split(".")[1]
    assert not list(n1.glob("tenants/*/tokens.json"))  # nothing node-local
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "engine"), str(REPO)]),
           "RECKON_SHARDS": str(shards), "RECKON_EMBEDDER": "hashing"}
    p1, base1 = _serve(n1, env)
    p2, base2 = _serve(n2, env)
    try:
        auth = {"Authorization": f"Bearer {token}"}
        body = {"kind": "fact", "scope": "company", "importance": 2, "source": "operator",
                "label": "written through node2", "content": "a token of node1 on node2"}
        r2 = httpx.post(f"{base2}/tenants/alpha/memories", headers=auth, json=body, timeout=60)
        assert r2.status_code == 201, r2.text
        r1 = httpx.get(f"{base1}/tenants/alpha/memories/{r2.json()['id']}", headers=auth, timeout=60)
        assert r1.status_code == 200 and r1.json()["label"] == "written through node2", r1.text
        assert httpx.get(f"{base2}/tenants/beta/memories", headers=auth, timeout=60).status_code == 403
        rl = run_cli(n2, "token", "list", "--tenant", "alpha")
        assert rl.code == 0 and token_id in rl.out, rl.err + rl.out
        rr = run_cli(n2, "token", "revoke", token_id, "--tenant", "alpha")
        assert rr.code == 0, rr.err + rr.out
        for base in (base1, base2):
            assert httpx.get(f"{base}/tenants/alpha/memories", headers=auth, timeout=60).status_code == 401
    finally:
        _stop(p1)
        _stop(p2)
    rd = run_cli(n1, "tenant", "delete", "alpha", "--yes")
    assert rd.code == 0, rd.err + rd.out
    be = srv.endpoint_config(f"urn:reckon:tokens{os.getpid()}-{kind}:")
    from reckon.store.remote import Endpoint

    ep = Endpoint.from_dict("s", be)
    left = ep.select(f"SELECT ?s WHERE {{ GRAPH <urn:reckon:tokens{os.getpid()}-{kind}:alpha:tokens> {{ ?s ?p ?o }} }}")
    ep.close()
    assert left == []  # the records went with the tenant
