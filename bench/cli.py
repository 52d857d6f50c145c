"""CLI and server benchmark: wall time of ``reckon`` commands as fresh processes, and how
soon ``reckon serve`` / ``reckon mcp`` answer their first request, on a tenant of 10k
memories with MiniLM.

Targets (issue "Fast where users touch it"): ``reckon bundle`` / ``search`` /
``remember`` <= 1.5 s each; ``serve`` and ``mcp`` load the model before the first
request (so the first request is as fast as the later ones). A benchmark, not a test.

Usage::

    PYTHONPATH=engine python bench/cli.py                      # 10k memories, MiniLM
    PYTHONPATH=engine python bench/cli.py --n 1000 --repeat 5
    PYTHONPATH=engine python bench/cli.py --data bench-data/n10000  # a tenant bench/bundle.py --data kept

Setup: the tenant is generated as in ``bench/bundle.py`` (initial data, then the recall
index opened and every text embedded through ``tenant.recall.wait()``). Each CLI command
runs ``--repeat`` times as ``python -m reckon.cli ...``; the table gives the median and
the slowest wall time and the median CPU time (user + system of the child: on a machine
shared with other jobs the wall time also counts waiting for a core). The checkout's
modules are byte-compiled first, as ``pip install`` does for an installed package.
Peers (floors): the interpreter starting (``python -c pass``) and ``import
sentence_transformers`` (what every ranking command paid before the torch-free runtime).
The servers: ``serve`` is started and polled on ``/healthz`` (it binds only once the
model is loaded), as it starts by default (the tenants holding an API token, here
``bench``, opened before it binds), with ``--no-auto-warm`` (the tenant opened by its
first request) and with ``--warm bench``; then the first ``POST /memories``, ``GET /search`` and ``GET
/bundle`` are timed, and the fifth of each. ``mcp`` is driven by the ``mcp`` SDK's stdio
client: time to the initialize answer, then the first and fifth ``get_context`` and
``search`` tool calls.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "engine"))
sys.path.insert(0, str(HERE))

from bundle import populate  # noqa: E402

from reckon.api import Engine  # noqa: E402


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(REPO / "engine"), *filter(None, [os.environ.get("PYTHONPATH")])])
    e.setdefault("HF_HUB_OFFLINE", "1")
    return e


def compile_bytecode() -> None:
    """Byte-compile the checkout's modules once, as ``pip install`` does for an installed
    package: with ``PYTHONDONTWRITEBYTECODE`` set, every fresh process would otherwise
    recompile each module from source, which no user pays."""
    import compileall

    compileall.compile_dir(str(REPO / "engine"), quiet=1)


def timed(cmd: list[str], repeat: int) -> tuple[float, float, int, float]:
    """(median wall s, slowest wall s, first non-zero exit code, median CPU s of the child:
    user + system, what the command costs without the machine's other load)."""
    import resource

    xs, cpu, code = [], [], 0
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=600)
        xs.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        code = code or p.returncode
        if p.returncode not in (0,):
            print(f"  ! {' '.join(cmd[3:6])}: exit {p.returncode}: {p.stderr[-300:]}", file=sys.stderr)
    return statistics.median(xs), max(xs), code, statistics.median(cpu)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SERVE_MODES = {"default": [], "no_auto_warm": ["--no-auto-warm"], "warm": ["--warm", "bench"]}
"""``reckon serve`` as it starts by default (the tenants holding an API token opened
before binding: the benchmark's token makes ``bench`` one), with ``--no-auto-warm`` (the
tenant opened by its first request) and with ``--warm bench``."""


def bench_serve(data: Path, mode: str = "default") -> dict[str, float]:
    """``reckon serve`` in ``mode``, one of :data:`SERVE_MODES`: seconds to /healthz,
    then each request's seconds, five rounds (``remember_0`` .. ``bundle_4``)."""
    import httpx

    from reckon.server.auth import TokenStore

    _, token = TokenStore(data).create("bench", person="person0", teams=["team0", "team1"], role="operator")
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "reckon.cli", "--data-dir", str(data), "serve", "--port", str(port),
                             "--log-level", "warning", *SERVE_MODES[mode]],
                            env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    out: dict[str, float] = {}
    try:
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.perf_counter() - t0 > 300:
                raise SystemExit(f"serve did not start: {proc.stderr.read() if proc.stderr else ''}")
            time.sleep(0.05)
        out["ready_s"] = time.perf_counter() - t0
        h = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=h, timeout=120) as c:
            for k in range(5):
                t1 = time.perf_counter()
                r = c.post("/tenants/bench/memories", json={
                    "kind": "preference", "scope": "user", "importance": 3, "source": "agent_tool",
                    "label": f"u{uuid.uuid4().hex}", "content": f"x{uuid.uuid4().hex} y{uuid.uuid4().hex}"})
                assert r.status_code == 201, r.text
                out[f"remember_{k}"] = time.perf_counter() - t1
                t1 = time.perf_counter()
                r = c.get("/tenants/bench/search", params={"q": f"what did we decide about the weekly report {k}"})
                assert r.status_code == 200, r.text
                out[f"search_{k}"] = time.perf_counter() - t1
                t1 = time.perf_counter()
                r = c.get("/tenants/bench/bundle", params={"conversation": f"can we scale the spring campaign {k}"})
                assert r.status_code == 200, r.text
                out[f"bundle_{k}"] = time.perf_counter() - t1
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(30)
    return out


def bench_mcp(data: Path) -> dict[str, float]:
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "reckon.cli", "--data-dir", str(data), "mcp", "--tenant", "bench", "--as", "person0",
        "--member-of", "team0", "--member-of", "team1"], env=env(), cwd=str(REPO))
    out: dict[str, float] = {}

    async def session() -> None:
        t0 = time.perf_counter()
        async with Client(params, read_timeout_seconds=300) as c:
            out["ready_s"] = time.perf_counter() - t0
            for k in range(5):
                t1 = time.perf_counter()
                await c.call_tool("get_context", {"conversation": f"can we scale the spring campaign {k}"})
                out[f"get_context_{k}"] = time.perf_counter() - t1
                t1 = time.perf_counter()
                await c.call_tool("search", {"query": f"what did we decide about the weekly report {k}"})
                out[f"search_{k}"] = time.perf_counter() - t1

    anyio.run(session)
    return out


def prepare(data: Path, n: int) -> tuple[int, str]:
    """Tenant 'bench' of ``n`` memories in ``data`` (generated as in bench/bundle.py unless
    it exists), its recall index caught up; returns (active memories, one memory id)."""
    eng = Engine(data)
    if "bench" not in eng.list_tenants():
        t, load_s, _ = populate(eng, "bench", n)
        print(f"{n} memories loaded in {load_s:.1f} s", flush=True)
    t = eng.tenant("bench")
    t0 = time.perf_counter()
    t.recall.wait(timeout=None)
    mems = t.memories()
    print(f"recall index ready in {time.perf_counter() - t0:.1f} s ({len(mems)} active memories)", flush=True)
    t.recall.index.close()
    t.store.close()
    return len(mems), mems[0].id


def command_rows(data: Path, mid: str) -> list[tuple[str, list[str], str]]:
    """(name, argv, target) of the timed commands; LABEL / CONTENT are replaced per run."""
    cli = [sys.executable, "-m", "reckon.cli", "--data-dir", str(data)]
    return [
        ("python -c pass (peer)", [sys.executable, "-c", "pass"], ""),
        ("import sentence_transformers (peer)", [sys.executable, "-c", "import sentence_transformers"], ""),
        ("reckon remember", cli + ["remember", "--tenant", "bench", "--as", "person0", "--kind", "preference",
                                   "--scope", "user", "--importance", "3", "--label", "LABEL", "--content", "CONTENT"],
         "<= 1.5"),
        ("reckon search", cli + ["search", "--tenant", "bench", "--as", "person0", "--member-of", "team0",
                                 "what did we decide about the weekly report?"], "<= 1.5"),
        ("reckon bundle", cli + ["bundle", "--tenant", "bench", "--as", "person0", "--member-of", "team0",
                                 "--conversation", "can we scale the spring campaign?"], "<= 1.5"),
        ("reckon sparql (COUNT)", cli + ["sparql", "--tenant", "bench",
                                         "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"], ""),
        ("reckon get", cli + ["get", "--tenant", "bench", mid], ""),
    ]


def time_commands(rows: list[tuple[str, list[str], str]], repeat: int) -> list[dict[str, object]]:
    """Each command ``repeat`` times as a fresh process: median and slowest wall seconds,
    median CPU seconds, exit code."""
    compile_bytecode()
    out: list[dict[str, object]] = []
    for name, cmd, tgt in rows:
        reps = []
        for _ in range(repeat):
            c = [x.replace("LABEL", f"u{uuid.uuid4().hex}").replace("CONTENT", f"x{uuid.uuid4().hex}") for x in cmd]
            reps.append(timed(c, 1))
        out.append({"name": name, "target": tgt, "median_s": statistics.median(r[0] for r in reps),
                    "max_s": max(r[1] for r in reps), "cpu_s": statistics.median(r[3] for r in reps),
                    "code": next((r[2] for r in reps if r[2]), 0)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--data", type=Path, default=None, help="an existing data dir holding tenant 'bench'")
    args = ap.parse_args()
    os.environ["RECKON_EMBEDDER"] = args.embedder
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    data = args.data or Path(tempfile.mkdtemp(prefix="reckon-bench-cli-"))
    n, mid = prepare(data, args.n)
    load0 = os.getloadavg()[0]
    print()
    print(f"{'command (fresh process, ' + str(n) + ' memories)':<46} {'median s':>9} {'max s':>7} {'CPU s':>6} "
          f"{'target':>8}")
    for r in time_commands(command_rows(data, mid), args.repeat):
        print(f"{r['name']:<46} {r['median_s']:>9.2f} {r['max_s']:>7.2f} {r['cpu_s']:>6.2f} {r['target']:>8}"
              + (f"  (exit {r['code']})" if r["code"] else ""), flush=True)
    print("CPU s: user + system time of the command's process (what it costs without the machine's other load)")
    for mode, flags in SERVE_MODES.items():
        s = bench_serve(data, mode)
        print()
        opened = {"default": ", and the tenants holding an API token opened", "warm": ", and the tenant opened",
                  "no_auto_warm": "; the tenant opens on its first request"}[mode]
        print(f"reckon serve {' '.join(flags)}: /healthz answered {s['ready_s']:.1f} s after launch "
              f"(the model is loaded before it binds{opened})")
        print(f"{'request':<28} {'first ms':>9} {'fifth ms':>9}")
        for op in ("remember", "search", "bundle"):
            print(f"{op:<28} {s[op + '_0'] * 1e3:>9.0f} {s[op + '_4'] * 1e3:>9.0f}")
    m = bench_mcp(data)
    print()
    print(f"reckon mcp: initialize answered {m['ready_s']:.1f} s after launch (index open, model loaded)")
    print(f"{'tool call':<28} {'first ms':>9} {'fifth ms':>9}")
    for op in ("get_context", "search"):
        print(f"{op:<28} {m[op + '_0'] * 1e3:>9.0f} {m[op + '_4'] * 1e3:>9.0f}")
    print(f"\n1-min load average {load0:.1f} before the commands, {os.getloadavg()[0]:.1f} after, "
          f"on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
