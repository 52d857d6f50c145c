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
