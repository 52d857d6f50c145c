"""``reckon serve`` as a real process on 127.0.0.1 and a free port: one SPARQL query
over real HTTP (httpx), then the server is stopped by its pid."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from tests.conftest import REPO

START_TIMEOUT = 90.0  # seconds for the process to import and bind
STOP_TIMEOUT = 20.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def served(tmp_path, _hashing_embedder):
    from reckon.api import Engine, Principal
    from reckon.server.auth import TokenStore

    eng = Engine(tmp_path)
    t = eng.create_tenant("acme", company_name="Acme")
    m = t.remember(principal=Principal.operator("dana"), kind="fact", scope="company", importance=3,
                   source="operator", label="Ideal customer profile", content="Small businesses.")
    t.store.release()  # let the server process in now rather than after the linger
    _, token = TokenStore(tmp_path).create("acme", person="dana", role="operator")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "engine"),
                                                        *filter(None, [os.environ.get("PYTHONPATH")])]),
           "RECKON_EMBEDDER": "hashing"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "reckon.cli", "--data-dir", str(tmp_path), "serve", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning"],
        env=env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                out, err = proc.communicate(timeout=STOP_TIMEOUT)
                pytest.fail(f"reckon serve exited with {proc.returncode}: {err.decode(errors='replace')[-2000:]}")
            try:
                if httpx.get(base + "/healthz", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"reckon serve did not answer within {START_TIMEOUT} s")
            time.sleep(0.2)
        yield base, token, m, proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=STOP_TIMEOUT)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


def test_serve_answers_a_sparql_query_over_http(served):
    base, token, m, proc = served
    q = ("SELECT ?label WHERE { ?m <http://www.w3.org/2000/01/rdf-schema#label> ?label ; "
         "<https://reckon.dev/ns/core#content> ?c }")
    r = httpx.get(f"{base}/tenants/acme/sparql", params={"query": q},
                  headers={"Authorization": f"Bearer {token}", "Accept": "application/sparql-results+json"},
                  timeout=30.0)
    assert r.status_code == 200, r.text
    assert [b["label"]["value"] for b in r.json()["results"]["bindings"]] == [m.label]
    r = httpx.get(f"{base}/tenants/acme/sparql", params={"query": "CLEAR ALL"},
                  headers={"Authorization": f"Bearer {token}"}, timeout=30.0)
    assert r.status_code == 400
    assert httpx.get(f"{base}/tenants/acme/sparql", params={"query": q}, timeout=30.0).status_code == 401
    # stop it by pid
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=STOP_TIMEOUT) is not None
