"""The checked rule program of a tenant is cached on disk (``Program.ruleset``, the
"checked programs" of ``reckon.datalog._cache``), so a fresh process that opens a tenant
neither parses nor checks its stored program again (issue "Fast where users touch it").

What is cached must be exactly what a parse gives: checked here on every shipped program
and on every SRL program of the conformance suites that parses and checks. A damaged
entry (a byte changed, truncated, not a rule set) is never used; a program that fails the
check is never cached; the key follows everything the parse reads (order, base IRIs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from reckon._errors import RuleError
from reckon.datalog import _cache
from reckon.schema import program as P
from reckon.schema.program import Module, ModuleFile, Program, default_program
from tests.conftest import REPO, shared_path_or_fail_at_collection

SRL_TESTS = shared_path_or_fail_at_collection("conformance", "srl-tests")
CONFORMANCE = sorted(SRL_TESTS.rglob("*.srl")) if SRL_TESTS is not None else []


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private, empty on-disk cache; the process's in-memory caches emptied."""
    monkeypatch.setenv("RECKON_CACHE_DIR", str(tmp_path / "cache"))
    forget()
    yield tmp_path / "cache"
    forget()


def forget() -> None:
    """Empty this process's caches, as a fresh process starts."""
    P._RULESETS.clear()
    _cache._checked.clear()


def entries(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.checked"))


def from_disk(prog: Program, monkeypatch: pytest.MonkeyPatch) -> object:
    """``prog.ruleset()`` in a process that has only the disk cache (parsing forbidden)."""
    forget()

    def no_parse(self: Program) -> object:
        raise AssertionError("parsed although the checked program is cached")

    with monkeypatch.context() as m:
        m.setattr(Program, "_parse_rules", no_parse)
        return prog.ruleset()


def shipped_programs() -> list[Program]:
    return [default_program(), default_program(rules=[]), default_program(rules=["rdfs.srl", "owl2rl.srl"]),
            default_program(rules=["rdfs.srl"])]


def test_the_cached_shipped_programs_are_the_parsed_ones(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for prog in shipped_programs():
        parsed = prog._parse_rules()
        first = prog.ruleset()  # parsed, checked and written
        assert first == parsed
        if parsed is None:
            assert from_disk(prog, monkeypatch) is None
            continue
        cached = from_disk(prog, monkeypatch)
        assert cached is not first
        assert cached == parsed and repr(cached) == repr(parsed)
        assert len(cached.rules) == len(parsed.rules) > 0  # type: ignore[attr-defined]
    assert len(entries(cache)) == 3  # one entry per program with rules (rules=[] has none)


@pytest.mark.skipif(not CONFORMANCE, reason="conformance suite missing (fails in CI)")
def test_the_cached_conformance_programs_are_the_parsed_ones(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checked = refused = 0
    for path in CONFORMANCE:
        text = path.read_text(encoding="utf-8")
        prog = Program((Module("t", (ModuleFile(path.name, text, path.as_uri()),)),))
        try:
            parsed = prog._parse_rules()
        except RuleError:
            with pytest.raises(RuleError):
                prog.ruleset()
            refused += 1
            continue
        assert prog.ruleset() == parsed
        cached = from_disk(prog, monkeypatch)
        assert cached == parsed and repr(cached) == repr(parsed), path
        checked += 1
    assert checked > 100 and refused > 10, (checked, refused)
    assert len(entries(cache)) == checked  # a refused program is never cached


def test_a_damaged_entry_is_never_used(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prog = default_program()
    parsed = prog._parse_rules()
    prog.ruleset()
    [entry] = entries(cache)
    good = entry.read_bytes()
    parses = []
    real = Program._parse_rules

    def counting(self: Program) -> object:
        parses.append(1)
        return real(self)

    monkeypatch.setattr(Program, "_parse_rules", counting)
    for damaged in (good[:-1] + bytes([good[-1] ^ 1]),  # one bit of the payload
                    good[: len(good) // 2],  # truncated
                    good[:20] + b"X" + good[21:],  # the header
                    b""):
        entry.write_bytes(damaged)
        forget()
        assert prog.ruleset() == parsed
        assert entry.read_bytes() == good  # rebuilt
    assert len(parses) == 4
    # an entry whose checksum is right but that holds no rule set
    name = entry.name
    _cache._write(name, __import__("pickle").dumps({"rules": []}))
    forget()
    assert prog.ruleset() == parsed and len(parses) == 5


def test_the_key_follows_what_the_parse_reads() -> None:
    rule = "PREFIX : <http://example.org/>\nRULE { ?x :q ?y } WHERE { ?x :p ?y }\n"
    other = "PREFIX : <http://example.org/>\nRULE { ?x :r ?y } WHERE { ?x :q ?y }\n"
    a, b = Module("a", (ModuleFile("a.srl", rule, "file:///one/a.srl"),)), Module("b", (ModuleFile("b.srl", other),))
    moved = Module("a", (ModuleFile("a.srl", rule, "file:///two/a.srl"),))
    assert Program((a, b)).digest == Program((b, a)).digest == Program((moved, b)).digest
    keys = {Program((a, b)).ruleset_key(), Program((b, a)).ruleset_key(), Program((moved, b)).ruleset_key()}
    assert len(keys) == 3
    assert Program((a, b)).ruleset().rules != Program((b, a)).ruleset().rules  # rule order follows module order


_OPEN = textwrap.dedent(
    """
    import json, sys
    import reckon.datalog.srl as srl
    calls = []
    real = srl.parse_srl
    srl.parse_srl = lambda *a, **k: calls.append(1) or real(*a, **k)
    from reckon.api import Engine, Principal
    e = Engine(sys.argv[1])
    t = e.create_tenant("acme") if sys.argv[2] == "create" else e.tenant("acme")
    m = t.remember(kind="preference", scope="user", importance=3, source="agent_tool",
                   principal=Principal(person="dana"), label="Headline " + sys.argv[2],
                   content="Keep ad headlines under 40 characters")
    from reckon import vocab
    with t.store.snapshot() as view:
        n = sum(1 for _ in view.quads(None, None, None, vocab.INFERRED))
    print(json.dumps({"parses": len(calls), "inferred": n}))
    """
)


def test_a_fresh_process_opens_a_tenant_without_parsing_its_program(tmp_path: Path) -> None:
    env = dict(os.environ, RECKON_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO / "engine"))
    env.pop("RECKON_EMBEDDER", None)

    def run(mode: str) -> dict[str, int]:
        p = subprocess.run([sys.executable, "-c", _OPEN, str(tmp_path / "data"), mode], capture_output=True,
                           text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    created = run("create")
    assert created["parses"] > 0  # a cold cache: the shipped rule files were parsed
    opened = run("open")
    assert opened["parses"] == 0
    assert opened["inferred"] > created["inferred"] > 0  # the second memory's derivations, by the cached program
