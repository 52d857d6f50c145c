"""CLI and Python give the same derived statuses on a tenant with a custom module
(issue "Derived state is always true", Must show 3).

Before, a tenant created in Python with ``modules=[my.ttl, my_shapes.ttl, my.srl]`` kept
the ontology and shapes, but the next ``reckon remember`` from the CLI ran without
``my.srl`` and retracted every status it derived. Here Python and separate ``reckon``
processes (no module options: they cannot name modules, and need not) take turns
writing; after each turn both report the same statuses, and ``reckon tenant modules``
migrates the program for every opener."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from reckon.api import Engine, Principal
from reckon.vocab import decimal_text
from tests.api.test_program import ONTO, RULES, SHAPES
from tests.conftest import REPO

OPS = Principal(person="dana", role="operator")


def cli(d: Path, *args: str) -> Any:
    env = dict(os.environ, RECKON_EMBEDDER="hashing", PYTHONPATH=str(REPO / "engine"))
    r = subprocess.run([sys.executable, "-m", "reckon.cli", "--data-dir", str(d), *args],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return json.loads(r.stdout) if "--json" in args else r.stdout


def _statuses(m: Any) -> dict[str, Any]:
    """The statuses compared, a decimal as its exact text (Python gives a ``Decimal``,
    ``--json`` the lexical string)."""
    keys = ("headlineStatus", "budgetStatus", "utilisation", "currentSpend")
    return {k: decimal_text(v) if isinstance(v, Decimal) else v for k, v in m.items() if k in keys}


def test_cli_and_python_agree_on_a_tenant_with_a_custom_module(tmp_path: Path) -> None:
    mod = tmp_path / "mod"
    mod.mkdir()
    files = [mod / "creative.ttl", mod / "creative_shapes.ttl", mod / "creative.srl"]
    for f, text in zip(files, (ONTO, SHAPES, RULES), strict=True):
        f.write_text(text)
    d = tmp_path / "data"
    t = Engine(d, modules=files).create_tenant("shop")
    head = t.remember(kind="preference", scope="company", importance=4, source="operator", principal=OPS,
                      label="Headline length", content="At most 14 words", subclass="HeadlineRuleMemory",
                      properties={"max_words": 14})
    cap = t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                     label="Meta cap", content="Meta under 40k", subclass="BudgetConstraintMemory",
                     properties={"platform": "meta", "amount": "40000.00", "currency": "USD", "period": "monthly"})
    t.set_spend("meta", "30000.10")
    t.store.release()

    def same() -> dict[str, Any]:
        py = {m.id: _statuses(m.status) for m in (t.get(head.id), t.get(cap.id))}
        t.store.release()
        via_cli = {mid: _statuses(cli(d, "get", mid, "--tenant", "shop", "--json")["status"])
                   for mid in (head.id, cap.id)}
        assert via_cli == py
        return py

    assert same()[head.id] == {"headlineStatus": "long"}
    # a CLI process writes (no module options): the module's statuses stay derived
    cli(d, "remember", "--tenant", "shop", "--as", "dana", "--operator", "--kind", "fact", "--scope", "company",
        "--label", "Office", "--content", "HQ is in Porto")
    cli(d, "update", head.id, "--tenant", "shop", "--as", "dana", "--operator", "--prop", "max_words=6")
    cli(d, "spend", "set", "meta", "34000.10", "--tenant", "shop")
    now = same()
    assert now[head.id] == {"headlineStatus": "short"}
    assert now[cap.id]["budgetStatus"] == "near_limit"
    # settings from the CLI, seen by Python
    cli(d, "tenant", "settings", "set", "shop", "near_limit_threshold", "0.900")
    assert same()[cap.id]["budgetStatus"] == "within_budget"
    assert cli(d, "tenant", "settings", "get", "shop", "near_limit_threshold", "--json") == {
        "near_limit_threshold": "0.9"}
    # a migration from the CLI is followed by the Python process
    listed = cli(d, "tenant", "modules", "list", "shop", "--json")
    assert [m["name"] for m in listed["modules"]] == ["core", "marketing", "recruiting", "agent", "notes", "events", "experience", "types", "creative",
                                                        "creative_shapes"]
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "creative.srl").write_text(RULES.replace("> 10", "> 5").replace("<= 10", "<= 5"))
    report = cli(d, "tenant", "modules", "add", "shop", str(files[0]), str(v2 / "creative.srl"), "--name",
                 "creative", "--upgrade", "--json")
    assert report["action"] == "upgrade"
    assert report["status_changes"] == [{"memory": head.id, "property": "headlineStatus",
                                         "before": ["short"], "after": ["long"]}]
    assert same()[head.id] == {"headlineStatus": "long"}
    back = cli(d, "tenant", "modules", "add", "shop", str(files[0]), str(files[2]), "--name", "creative",
               "--upgrade", "--json")
    assert back["program_after"] == listed["program"]
    assert same()[head.id] == {"headlineStatus": "short"}
    out = cli(d, "tenant", "validate", "shop")
    assert "conforms" in out
