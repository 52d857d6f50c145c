"""Commands that do not rank import no model: `reckon remember`, `sparql`, `get`,
`memories`, `history`, `tenant list` start without torch, sentence-transformers or the
MiniLM weights, without the server stack (fastapi, uvicorn, mcp), the job queue (huey), rdflib,
pySHACL, owlrl or the recall layer; `tenant validate` needs pySHACL and nothing of the
rest; `search` / `bundle` load the torch-free MiniLM runtime, not torch, and no server
stack (issue "Fast where users touch it": the CLI under 1.5 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reckon.recall import minilm_available

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sentence_transformers", "transformers", "tokenizers", "safetensors", "reckon.recall._minilm")
# what only the servers, the job worker, pySHACL validation or the recall layer need
SERVING = ("fastapi", "starlette", "uvicorn", "mcp", "huey", "owlrl", "pyshacl")
RECALL = ("numpy", "jinja2", "reckon.recall")
# what only loading Turtle, pySHACL validation and the author's check need (rdflib ~0.1 s)
RDFLIB = ("rdflib", "reckon.schema.loader")
WATCHED = HEAVY + SERVING + RECALL + RDFLIB

_RUN = """
import json, sys
from reckon.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
heavy = sorted(m for m in sys.modules if m in {heavy!r} or m.split(".")[0] in {heavy!r})
print("\\nMODULES " + json.dumps(heavy), file=sys.stderr)
sys.exit(code or 0)
"""


def cli(data_dir: Path, *args: str) -> tuple[int, str, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "RECKON_EMBEDDER"}  # the default: MiniLM if installed
    env["PYTHONPATH"] = str(REPO / "engine")
    p = subprocess.run([sys.executable, "-c", _RUN.format(heavy=WATCHED), "--data-dir", str(data_dir), *args],
                       capture_output=True, text=True, env=env, timeout=300)
    mods = json.loads(p.stderr.rsplit("MODULES ", 1)[1].splitlines()[0])
    return p.returncode, p.stdout, mods


def test_commands_that_do_not_rank_import_no_model(tmp_path: Path) -> None:
    assert cli(tmp_path, "tenant", "create", "acme")[0] == 0
    code, out, mods = cli(tmp_path, "remember", "--tenant", "acme", "--as", "dana", "--operator", "--kind",
                          "preference", "--scope", "company", "--importance", "3", "--label", "Headline length",
                          "--content", "Keep ad headlines under 40 characters", "--json")
    assert code == 0, out
    assert mods == []  # no model, no server stack, no pySHACL, no rdflib, no recall index (nor numpy) for one write
    mid = json.loads(out)["id"]
    for args in (("sparql", "--tenant", "acme", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"),
                 ("get", "--tenant", "acme", mid), ("memories", "--tenant", "acme"),
                 ("history", "--tenant", "acme", mid), ("tenant", "list")):
        code, out, mods = cli(tmp_path, *args)
        assert code == 0, out
        assert mods == [], args
    code, out, mods = cli(tmp_path, "tenant", "validate", "acme")  # SHACL over every memory, the index checked
    assert code == 0, out
    assert [m for m in mods if m in HEAVY or m.split(".")[0] in HEAVY] == []
    assert "pyshacl" in mods and not {"fastapi", "uvicorn", "mcp", "huey"} & set(mods), mods


def test_ranking_commands_load_the_torch_free_runtime(tmp_path: Path) -> None:
    if not minilm_available():
        pytest.skip("the embeddings extra is not installed")
    assert cli(tmp_path, "tenant", "create", "acme")[0] == 0
    code, out, _ = cli(tmp_path, "remember", "--tenant", "acme", "--as", "dana", "--operator", "--kind", "fact",
                       "--scope", "company", "--importance", "3", "--label", "Warehouse hours",
                       "--content", "the warehouse closes at six")
    assert code == 0, out
    code, out, mods = cli(tmp_path, "search", "--tenant", "acme", "--as", "dana", "when does the warehouse close")
    assert code == 0 and "Warehouse hours" in out, out
    assert "reckon.recall._minilm" in mods and "torch" not in mods and "sentence_transformers" not in mods
    assert not set(SERVING) & {m.split(".")[0] for m in mods}, mods  # ranking needs no server stack
    assert not set(RDFLIB) & set(mods) and "rdflib" not in {m.split(".")[0] for m in mods}, mods  # nor rdflib
    code, out, mods = cli(tmp_path, "bundle", "--tenant", "acme", "--as", "dana", "--conversation", "closing time")
    assert code == 0 and out.startswith("# Memory context for dana (tenant acme)"), out  # importance 3: not preloaded
    assert not set(SERVING) & {m.split(".")[0] for m in mods} and "torch" not in mods, mods
    assert "rdflib" not in {m.split(".")[0] for m in mods}, mods


_API = """
import json, sys
from reckon.api import Engine, Principal
import reckon.memory.models as mm
from reckon.store import query_guard
e = Engine(sys.argv[1])
who = Principal(person="dana")
if sys.argv[2] == "create":
    e.create_tenant("acme")
else:
    t = e.tenant("acme")
    {{"remember": lambda: t.remember(kind="preference", scope="user", importance=3, source="agent_tool", principal=who,
                                    label="Headline length", content="Keep ad headlines under 40 characters"),
     "search": lambda: t.search("headline length", principal=who),
     "context": lambda: t.context(who, "how long may a headline be?")}}[sys.argv[2]]()
lexer = sys.modules.get("reckon.datalog._lexer")
print(json.dumps({{
    "modules": sorted(m for m in {lazy!r} if m in sys.modules),
    "built": sorted(n for n in {deferred!r} if getattr(mm, n).__pydantic_complete__),
    "patterns": sorted(query_guard._RX),
    "lexer": lexer is not None and lexer._MASTER_RE is not None,
}}))
"""
# what a fresh process's first remember / search / context never needs
LAZY = ("reckon.business.models", "reckon.schema.loader", "rdflib", "pyshacl", "regex")
DEFERRED = ("MemoryPatch", "Revision", "HistoryEntry", "Conflict")  # pydantic models built on first use


def test_a_fresh_process_first_call_builds_only_what_it_needs(tmp_path: Path) -> None:
    """``import reckon.api`` and the first ``remember`` / ``search`` / ``context`` of a
    fresh process import no business-data model, build no pydantic model they do not
    validate with, compile no SPARQL token pattern for prefixed names and parse no rule
    file (the tenant's checked program comes from the cache the creating process wrote)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "engine"), "RECKON_EMBEDDER": "hashing",
           "RECKON_CACHE_DIR": str(tmp_path / "cache")}
    code = _API.format(lazy=LAZY, deferred=DEFERRED)

    def run(op: str) -> dict[str, object]:
        p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "data"), op], capture_output=True, text=True,
                           env=env, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    created = run("create")
    assert created["lexer"] is True  # a cold cache: the shipped rule files were parsed
    for op in ("remember", "search", "context"):
        got = run(op)
        # the `regex` module (XPath regular expressions) only when a rule evaluates one
        assert got["modules"] == (["regex"] if op == "remember" else []) and got["built"] == [], (op, got)
        assert got["lexer"] is False, op
        assert "pname" not in got["patterns"], (op, got)  # no query with a prefixed name was checked
    # what was made lazy is still there when asked for
    p = subprocess.run([sys.executable, "-c", "from reckon.api import KpiInput, SpendInput; "
                        "from reckon.business import parse_model; print(KpiInput.__name__, parse_model.__name__)"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.stdout.split() == ["KpiInput", "parse_model"], p.stderr[-2000:]
