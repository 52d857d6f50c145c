"""SPARQL servers on loopback for the remote-backend tests: ``oxigraph serve`` (the
``oxigraph`` package) and Virtuoso Open Source (Debian ``virtuoso-opensource``), each
started on a free 127.0.0.1 port with its data in a temporary folder and stopped by pid
(SIGTERM, then SIGKILL)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

VIRTUOSO_INI = """\
[Database]
DatabaseFile = {d}/virtuoso.db
ErrorLogFile = {d}/virtuoso.log
LockFile = {d}/virtuoso.lck
TransactionFile = {d}/virtuoso.trx
xa_persistent_file = {d}/virtuoso.pxa
[TempDatabase]
DatabaseFile = {d}/virtuoso-temp.db
TransactionFile = {d}/virtuoso-temp.trx
[Parameters]
ServerPort = 127.0.0.1:{sql}
DisableUnixSocket = 1
CheckpointInterval = 60
NumberOfBuffers = 20000
MaxDirtyBuffers = 12000
DirsAllowed = ., {d}
[HTTPServer]
ServerPort = 127.0.0.1:{http}
ServerRoot = {d}
ServerThreads = 10
MaxClientConnections = 10
[SPARQL]
ResultSetMaxRows = 10000000
MaxQueryExecutionTime = 120
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    kind: str
    url: str
    proc: subprocess.Popen[bytes]
    folder: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def endpoint_config(self, prefix: str = "urn:reckon:tenant:") -> dict[str, object]:
        cfg: dict[str, object] = {"url": self.url, "server": self.kind, "graph_prefix": prefix, "timeout": 60}
        if self.kind == "virtuoso":
            cfg["auth"] = {"digest": ["dba", "dba"]}
        return cfg

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
        shutil.rmtree(self.folder, ignore_errors=True)


def _wait(url: str, proc: subprocess.Popen[bytes], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            r = httpx.post(url, data={"query": "SELECT * WHERE { ?s ?p ?o } LIMIT 1"},
                           headers={"Accept": "application/sparql-results+json"}, timeout=2, trust_env=False)
            if r.status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not answer within {timeout} s")


def oxigraph_binary() -> str:
    exe = Path(sys.executable).with_name("oxigraph")
    return str(exe) if exe.exists() else (shutil.which("oxigraph") or "oxigraph")


def start_oxigraph(folder: Path) -> Server:
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = subprocess.Popen([oxigraph_binary(), "serve", "--location", str(folder / "data"),
                             "--bind", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url + "/query", proc, "oxigraph serve", 30)
    except BaseException:
        proc.kill()
        raise
    return Server("oxigraph", url, proc, folder)


def virtuoso_binary() -> str | None:
    return shutil.which("virtuoso-t")


def start_virtuoso(folder: Path) -> Server:
    exe = virtuoso_binary()
    if exe is None:
        raise RuntimeError("virtuoso-t is not installed (apt-get install virtuoso-opensource)")
    folder.mkdir(parents=True, exist_ok=True)
    sql, http = free_port(), free_port()
    ini = folder / "virtuoso.ini"
    ini.write_text(VIRTUOSO_INI.format(d=folder, sql=sql, http=http))
    proc = subprocess.Popen([exe, "-f", "-c", str(ini)], cwd=folder, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{http}"
    try:
        _wait(url + "/sparql", proc, "virtuoso-t", 120)
    except BaseException:
        proc.kill()
        raise
    return Server("virtuoso", url, proc, folder)


def server_for(servers: dict[str, Server], kind: str, tmp: Path) -> Server:
    """The running server of ``kind`` in the session's ``servers`` (started in ``tmp``
    when there is none). Virtuoso missing fails under ``CI=true`` and skips elsewhere."""
    s = servers.get(kind)
    if s is not None and s.proc.poll() is None:
        return s
    if kind == "virtuoso" and virtuoso_binary() is None:
        msg = "virtuoso-t missing: apt-get install virtuoso-opensource"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    s = start_oxigraph(tmp / "oxigraph") if kind == "oxigraph" else start_virtuoso(tmp / "virtuoso")
    servers[kind] = s
    return s
