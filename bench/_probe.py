"""A fresh process's first operation on an existing tenant (run by the benchmarks).

usage: python bench/_probe.py DATA_DIR TENANT OP [OP ...]

OP: ``search`` | ``context`` | ``remember`` (a user-scope memory) | ``remember_company``
(a company-scope memory by an operator: its dedup reads the company's peer group, the
tenant's largest) -- through ``Tenant.*``, the public path.
Prints one JSON object: ``import_s`` (``import reckon.api``), ``open_s``
(``Engine(...).tenant(...)``), ``<op>_s`` for each op in order (the first one pays for
loading the mirror, the reasoner, the recall index, the model), each also as this
process's CPU seconds (``import_cpu_s``, ``open_cpu_s``, ``<op>_cpu_s``: comparable
under load, when the wall times are not), ``rss_mb`` (peak resident set size of this
process), ``embedder``. The embedder is ``$RECKON_EMBEDDER``.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))


def compile_bytecode() -> None:
    """Byte-compile the checkout's modules, as ``pip install`` does for an installed
    package: with ``PYTHONDONTWRITEBYTECODE`` set, or after an edit, a fresh probe would
    otherwise pay for compiling every module from source (~0.9 s), which no user pays.
    Called by the benchmarks before they start a probe."""
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "engine"), quiet=1)


def main() -> None:
    data_dir, tenant_id, *ops = sys.argv[1:]
    t0, c0 = time.perf_counter(), time.process_time()
    from reckon.api import Engine, Principal

    out: dict[str, object] = {"import_s": time.perf_counter() - t0, "import_cpu_s": time.process_time() - c0}
    t0, c0 = time.perf_counter(), time.process_time()
    t = Engine(data_dir).tenant(tenant_id)
    out["open_s"] = time.perf_counter() - t0
    out["open_cpu_s"] = time.process_time() - c0
    who = Principal(person="person0", teams=["team0", "team1"])
    for op in ops:
        t0, c0 = time.perf_counter(), time.process_time()
        if op == "search":
            t.search("what did we decide about the weekly report?", principal=who)
        elif op == "context":
            t.context(who, "can we scale the spring campaign?")
        elif op == "remember":
            t.remember(kind="preference", scope="user", importance=3, source="agent_tool", principal=who,
                       label=f"u{uuid.uuid4().hex}", content=f"x{uuid.uuid4().hex} y{uuid.uuid4().hex}")
        elif op == "remember_company":
            t.remember(kind="fact", scope="company", importance=3, source="operator",
                       principal=Principal.operator(person="person1"),
                       label=f"c{uuid.uuid4().hex}", content=f"x{uuid.uuid4().hex} y{uuid.uuid4().hex}")
        else:
            raise SystemExit(f"unknown op {op}")
        key = f"{op}_s" if f"{op}_s" not in out else f"{op}_again_s"
        out[key] = time.perf_counter() - t0
        out[key.replace("_s", "_cpu_s", 1)] = time.process_time() - c0
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if t.recall.loaded:
        out["embedder"] = t.recall.index.embedder_name
    print(json.dumps(out))


if __name__ == "__main__":
    main()
