"""`reckon index FILE` (issue 15 item 7): chunks a file into searchable memories; again
is a no-op; a missing file is exit 2."""

from __future__ import annotations

import json

from reckon.api import Engine
from tests.cli.conftest import run_cli


def test_index_a_markdown_file(tmp_path):
    d = tmp_path / "cli"
    Engine(d, jobs=False).create_tenant("kc")
    f = tmp_path / "guide.md"
    f.write_text("# Guide\n\nStep one: connect the account.\n\nStep two: set the budget cap.\n", encoding="utf-8")
    r = run_cli(d, "index", str(f), "--tenant", "kc", "--as", "ann", "--json")
    assert r.code == 0, r.err
    j = json.loads(r.out)
    assert j["written"] and j["location"] == "guide.md" and j["chunks"][0]["start"] == 0
    r = run_cli(d, "index", str(f), "--tenant", "kc", "--as", "ann")
    assert r.code == 0 and "already indexed guide.md" in r.out
    assert run_cli(d, "index", str(tmp_path / "missing.md"), "--tenant", "kc", "--as", "ann").code == 2
