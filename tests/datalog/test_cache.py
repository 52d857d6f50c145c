"""The compiled-program cache (``reckon.datalog._cache``): a rule program is parsed,
stratified and compiled once per program digest and engine fingerprint, reused by later
reasoners and processes; safe under concurrent processes; a corrupted entry is rebuilt.

Each case runs child processes with their own ``RECKON_CACHE_DIR``; a child counts the
``compile()`` calls of generated plans (file name ``<plan ...>``) and of parsing, and
prints the inferred graph's size, so a warm start is checked to compile nothing and to
give the same result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import REPO

_CHILD = textwrap.dedent(
    """
    import builtins, json, sys
    calls = {"plans": 0}
    real = builtins.compile
    def counting(src, filename, *a, **k):
        if str(filename).startswith("<plan "):
            calls["plans"] += 1
        return real(src, filename, *a, **k)
    builtins.compile = counting
    from pyoxigraph import NamedNode as N, Triple
    from reckon.datalog import _cache
    from reckon.datalog.loader import load_rules
    from reckon.datalog.evaluate import Reasoner
    parsed = {"n": 0}
    import reckon.datalog.loader as loader
    real_parse = loader.parse_rules
    def counting_parse(*a, **k):
        parsed["n"] += 1
        return real_parse(*a, **k)
    loader.parse_rules = counting_parse
    rs = load_rules("rdfs.srl", "owl2rl.srl")
    r = Reasoner(rs)
    ex = "http://example.org/"
    r.load([Triple(N(ex + "p"), N("http://www.w3.org/2002/07/owl#inverseOf"), N(ex + "q")),
            Triple(N(ex + "a"), N(ex + "p"), N(ex + "b"))])
    r2 = Reasoner(rs)  # a second reasoner of the same program in the same process
    r2.load([Triple(N(ex + "a"), N(ex + "p"), N(ex + "b"))])
    print(json.dumps({"plans": calls["plans"], "parsed": parsed["n"], "inferred": len(r.inferred()),
                      "inverse": Triple(N(ex + "b"), N(ex + "q"), N(ex + "a")) in r.inferred(),
                      "dir": str(_cache.cache_dir())}))
    """
)


def _child(cache: str) -> dict[str, object]:
    env = dict(os.environ, RECKON_CACHE_DIR=cache, PYTHONPATH=str(REPO / "engine"))
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_second_process_compiles_nothing_and_gets_the_same_result(tmp_path: Path) -> None:
    """If a process has compiled rdfs.srl + owl2rl.srl, then a second process parses no
    rule file and compiles no plan, and infers the same graph; the second reasoner of the
    first process compiled nothing either (in-memory reuse)."""
    cache = str(tmp_path / "cache")
    cold = _child(cache)
    assert cold["plans"] > 20 and cold["parsed"] == 2 and cold["inverse"] is True
    files = sorted(p.name for p in Path(str(cold["dir"])).iterdir())
    assert sum(f.endswith(".parsed") for f in files) == 2 and sum(f.endswith(".program") for f in files) == 1
    warm = _child(cache)
    assert warm["plans"] == 0 and warm["parsed"] == 0
    assert warm["inferred"] == cold["inferred"] and warm["inverse"] is True


def test_corrupted_entries_are_rebuilt(tmp_path: Path) -> None:
    """If every cache file is overwritten with garbage (or truncated), then the next
    process ignores it, compiles afresh, gets the same result, and rewrites valid entries."""
    cache = str(tmp_path / "cache")
    cold = _child(cache)
    d = Path(str(cold["dir"]))
    for i, f in enumerate(sorted(d.iterdir())):
        data = f.read_bytes()
        f.write_bytes(b"garbage" if i % 2 else data[: len(data) // 2])
    rebuilt = _child(cache)
    assert rebuilt["plans"] > 0 and rebuilt["inferred"] == cold["inferred"]
    warm = _child(cache)
    assert warm["plans"] == 0 and warm["parsed"] == 0 and warm["inferred"] == cold["inferred"]


def test_concurrent_processes_share_one_cache_safely(tmp_path: Path) -> None:
    """If four processes start at once on an empty cache, then all succeed with the same
    result, no temporary file is left behind, and a fifth process compiles nothing."""
    cache = str(tmp_path / "cache")
    env = dict(os.environ, RECKON_CACHE_DIR=cache, PYTHONPATH=str(REPO / "engine"))
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(4)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    assert len({o["inferred"] for o in outs}) == 1
    d = Path(str(outs[0]["dir"]))
    assert not [f for f in d.iterdir() if f.name.endswith(".tmp")]
    assert _child(cache)["plans"] == 0


def test_disabled_cache_writes_nothing(tmp_path: Path) -> None:
    """RECKON_CACHE_DIR=off: no cache directory, every process compiles."""
    env_dir = tmp_path / "none"
    first = _child("off")
    assert first["dir"] == "None" and first["plans"] > 0
    assert not env_dir.exists()
    assert _child("off")["plans"] > 0


def test_program_digest_tells_programs_apart() -> None:
    """Two programs that differ in one rule, or only in a rule's location, have different
    digests; the same text parsed twice has one."""
    from reckon.datalog import _cache
    from reckon.datalog.srl import parse_srl

    a = parse_srl("PREFIX : <http://ex/> RULE { ?x :q ?y } WHERE { ?x :p ?y }", file="a.srl")
    a2 = parse_srl("PREFIX : <http://ex/> RULE { ?x :q ?y } WHERE { ?x :p ?y }", file="a.srl")
    b = parse_srl("PREFIX : <http://ex/> RULE { ?x :r ?y } WHERE { ?x :p ?y }", file="a.srl")
    c = parse_srl("PREFIX : <http://ex/> RULE { ?x :q ?y } WHERE { ?x :p ?y }", file="c.srl")
    assert _cache.program_digest(a) == _cache.program_digest(a2)
    assert len({_cache.program_digest(x) for x in (a, b, c)}) == 3


def test_a_flipped_byte_is_detected_and_the_entry_rebuilt(tmp_path: Path) -> None:
    """If one byte in the middle of each entry's payload is changed (a corruption that may
    still unpickle or unmarshal into something), then the entry's SHA-256 no longer
    matches: the next process compiles afresh, gets the same result and rewrites it."""
    cache = str(tmp_path / "cache")
    cold = _child(cache)
    d = Path(str(cold["dir"]))
    for f in sorted(d.iterdir()):
        data = bytearray(f.read_bytes())
        data[len(data) * 3 // 4] ^= 0x01
        f.write_bytes(bytes(data))
    rebuilt = _child(cache)
    assert rebuilt["plans"] > 0 and rebuilt["parsed"] == 2 and rebuilt["inferred"] == cold["inferred"]
    warm = _child(cache)
    assert warm["plans"] == 0 and warm["parsed"] == 0 and warm["inferred"] == cold["inferred"]


def test_default_cache_directory_is_the_users_cache_never_the_package(tmp_path: Path, monkeypatch) -> None:
    """Without RECKON_CACHE_DIR the cache is $XDG_CACHE_HOME/reckon (else ~/.cache/reckon),
    one subdirectory per engine fingerprint; never inside the installed package."""
    import reckon
    from reckon.datalog import _cache

    monkeypatch.delenv("RECKON_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    d = _cache.cache_dir()
    assert d is not None and d.parent == tmp_path / "xdg" / "reckon"
    assert d.name == f"programs-{_cache.fingerprint()[:16]}"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    d = _cache.cache_dir()
    assert d is not None and d.parent == tmp_path / "home" / ".cache" / "reckon"
    assert Path(reckon.__file__).resolve().parent not in d.resolve().parents
