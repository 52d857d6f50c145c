"""``reckon remember|update|supersede|restore|forget|history|get|memories|bundle|search|explain``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import run_cli

T = ("--tenant", "acme")
OP = ("--as", "dana", "--operator", "--member-of", "growth")


def _json(r):  # type: ignore[no-untyped-def]
    assert r.code == 0, r.err
    return json.loads(r.out)


@pytest.fixture(scope="module")
def budget(acme: tuple[Path, dict[str, str]]) -> tuple[Path, str]:
    """A Google budget cap remembered through the CLI, with spend set through the CLI."""
    d, _ = acme
    m = _json(run_cli(d, "remember", *T, *OP, "--kind", "objective", "--scope", "company", "--importance", "5",
                      "--label", "Google monthly cap", "--content", "Keep Google under $10,000 a month.",
                      "--subclass", "BudgetConstraintMemory", "--prop", "platform=google", "--prop", "amount=10000",
                      "--prop", "currency=USD", "--prop", "period=monthly", "--json"))
    assert run_cli(d, "spend", "set", "google", "8500", *T, "--period-start", "2026-03-01").code == 0
    return d, m["id"]


def test_remember_with_subclass_properties_derives_status(budget: tuple[Path, str]) -> None:
    d, mid = budget
    m = _json(run_cli(d, "get", mid, *T, "--json"))
    assert m["subclass"] == "BudgetConstraintMemory"
    assert m["properties"]["platform"] == "google" and m["properties"]["amount"] == "10000"
    assert m["source"] == "operator" and m["author"] == "dana"
    assert m["status"]["budgetStatus"] == "near_limit"
    assert m["status"]["utilisation"] == "0.85"  # a decimal: its exact text
    # the human view prints the same exact text, not a float's repr
    r = run_cli(d, "get", mid, *T)
    assert r.code == 0, r.err
    assert "amount=10000," in r.out and "10000.0" not in r.out and "0.85" in r.out


def test_remember_list_valued_property(acme: tuple[Path, dict[str, str]]) -> None:
    d, _ = acme
    m = _json(run_cli(d, "remember", *T, *OP, "--kind", "preference", "--scope", "team", "--team", "growth",
                      "--label", "Growth ad voice", "--subclass", "BrandVoiceMemory",
                      "--prop", "avoidTerm=cheap", "--prop", "avoidTerm=free", "--json"))
    assert sorted(m["properties"]["avoidTerm"]) == ["cheap", "free"]
    assert m["scope"] == "team" and m["teams"] == ["growth"]


def test_remember_errors(acme: tuple[Path, dict[str, str]]) -> None:
    d, _ = acme
    # an importance that is not an integer as written is refused, never rounded
    for bad in ("5.0", "4.5", "high", "5 "):
        r = run_cli(d, "remember", *T, "--as", "lee", "--kind", "fact", "--label", f"imp {bad}", "--importance", bad)
        assert r.code == 2 and "an integer is required" in r.err, (bad, r)
    # a member may not write a company memory (operator-gated): input error
    r = run_cli(d, "remember", *T, "--as", "lee", "--kind", "fact", "--scope", "company", "--label", "x fact")
    assert r.code == 2 and "operator" in r.err
    # a property value the shapes refuse: not conformant
    r = run_cli(d, "remember", *T, *OP, "--kind", "objective", "--scope", "company", "--label", "Bad cap",
                "--subclass", "BudgetConstraintMemory", "--prop", "platform=meta", "--prop", "amount=-5",
                "--prop", "currency=USD", "--prop", "period=monthly")
    assert r.code == 1 and "amount" in r.err
    # an unknown kind is a bad option value (exit 2, as for every verb: `reckon --help`); a
    # malformed --prop is a usage error naming the option
    r = run_cli(d, "remember", *T, *OP, "--kind", "wish", "--label", "y")
    assert r.code == 2 and "Invalid value for '--kind' / '-k': 'wish' is not one of" in r.err
    r = run_cli(d, "remember", *T, *OP, "--kind", "fact", "--label", "y", "--subclass", "BudgetConstraintMemory",
                "--prop", "amount")
    assert r.code == 2 and "KEY=VALUE" in r.err


def test_member_remembers_own_memory_and_updates_it_three_state(acme: tuple[Path, dict[str, str]]) -> None:
    d, _ = acme
    m = _json(run_cli(d, "remember", *T, "--as", "lee", "--kind", "preference", "--label", "Lee likes tables",
                      "--content", "Show numbers as tables.", "--importance", "3", "--expires", "2030-01-01", "--json"))
    assert m["owner"] == "lee" and m["scope"] == "user" and m["source"] == "agent_tool"
    assert m["expires_at"].startswith("2030-01-01")
    u = _json(run_cli(d, "update", m["id"], *T, "--as", "lee", "--importance", "4", "--json"))
    assert u["importance"] == 4 and u["content"] == "Show numbers as tables." and u["expires_at"] is not None
    u = _json(run_cli(d, "update", m["id"], *T, "--as", "lee", "--unset", "expires_at", "--json"))
    assert u["expires_at"] is None and u["importance"] == 4
    # someone else may not edit it; nothing to update is a usage error; unknown id
    assert run_cli(d, "update", m["id"], *T, "--as", "dana", "--importance", "2").code == 2
    assert run_cli(d, "update", m["id"], *T, "--as", "lee").code == 2
    r = run_cli(d, "update", "0" * 32, *T, "--as", "lee", "--importance", "2")
    assert r.code == 2 and "no memory" in r.err


def test_supersede_history_restore_forget(budget: tuple[Path, str]) -> None:
    d, old = budget
    new = _json(run_cli(d, "supersede", old, *T, *OP, "--prop", "amount=8000", "--label", "Google monthly cap (cut)",
                        "--json"))
    assert new["properties"]["amount"] == "8000" and new["properties"]["platform"] == "google"
    assert new["supersedes"] == [old]
    assert new["status"]["budgetStatus"] == "over_budget"  # 8,500 of 8,000
    assert _json(run_cli(d, "get", old, *T, "--json"))["active"] is False
    hist = _json(run_cli(d, "history", new["id"], *T, "--json"))
    assert [h["id"] for h in hist] == [old, new["id"]]
    assert hist[0]["event"] == "superseded" and hist[0]["superseded_by"] == [new["id"]]
    # restore: members may not; refused while the newer memory is active; fine once it is gone
    assert run_cli(d, "restore", old, *T, "--as", "lee").code == 2
    r = run_cli(d, "restore", old, *T, "--as", "dana", "--operator")
    assert r.code == 2 and "still active" in r.err
    assert run_cli(d, "forget", new["id"], *T, "--as", "dana", "--operator").code == 0
    back = _json(run_cli(d, "restore", old, *T, "--as", "dana", "--operator", "--json"))
    assert back["active"] is True and back["status"]["budgetStatus"] == "near_limit"


def test_memories_lists_active_ones(acme: tuple[Path, dict[str, str]]) -> None:
    d, ids = acme
    ms = _json(run_cli(d, "memories", *T, "--kind", "fact", "--json"))
    assert ids["fact"] in [m["id"] for m in ms]
    assert all(m["kind"] == "fact" and m["active"] for m in ms)
    r = run_cli(d, "memories", *T)
    assert r.code == 0 and "Spring collection launch" in r.out


def test_bundle_prints_rendered_bundle_with_statuses(acme: tuple[Path, dict[str, str]]) -> None:
    d, ids = acme
    assert run_cli(d, "spend", "set", "meta", "36000", *T, "--period-start", "2026-03-01").code == 0
    r = run_cli(d, "bundle", *T, "--as", "dana", "--member-of", "growth", "--conversation", "meta budget?")
    assert r.code == 0, r.err
    assert "# Memory context for dana" in r.out
    line = next(ln for ln in r.out.splitlines() if ids["objective"] in ln)
    assert "near_limit" in line and "90 %" in line
    b = _json(run_cli(d, "bundle", *T, "--as", "dana", "--json", "--budget", "2000"))
    assert len(b["text"]) <= 2000 and b["budget_chars"] == 2000
    assert run_cli(d, "bundle", *T, "--budget", "5").code == 2


def test_search_finds_long_tail_memory(acme: tuple[Path, dict[str, str]]) -> None:
    d, _ = acme
    m = _json(run_cli(d, "remember", *T, *OP, "--kind", "fact", "--scope", "company", "--importance", "3",
                      "--label", "Warehouse in Denver", "--content", "Orders ship from the Denver warehouse.", "--json"))
    hits = _json(run_cli(d, "search", "Denver warehouse shipping", *T, "--as", "dana", "--json"))
    assert hits and hits[0]["memory"]["id"] == m["id"]
    r = run_cli(d, "search", "Denver", *T, "--as", "dana", "--importance", "high")
    assert r.code == 2 and "--importance" in r.err


def test_explain_a_tenant_status(acme: tuple[Path, dict[str, str]]) -> None:
    d, ids = acme
    assert run_cli(d, "spend", "set", "meta", "20000", *T, "--period-start", "2026-03-01").code == 0
    r = run_cli(d, "explain", *T, "--memory", ids["objective"], "--property", "mk:budgetStatus")
    assert r.code == 0, r.err
    assert "mk:budgetStatus mk:WithinBudget" in r.out and "budget-status-within" in r.out
    assert "mk:amount 20000" in r.out  # the spend record, down to asserted facts
    iri = f"urn:reckon:acme:memory:{ids['objective']}"
    r = run_cli(d, "explain", *T, f"<{iri}> mk:budgetStatus mk:WithinBudget")
    assert r.code == 0 and "budget-status-within" in r.out
    # a triple that is not inferred
    r = run_cli(d, "explain", *T, f"<{iri}> mk:budgetStatus mk:OverBudget")
    assert r.code == 2
    r = run_cli(d, "explain", *T, "--memory", ids["fact"], "--property", "mk:budgetStatus")
    assert r.code == 2 and "no inferred" in r.err


def test_supersede_and_history_of_unknown_memory(acme: tuple[Path, dict[str, str]]) -> None:
    d, ids = acme
    r = run_cli(d, "supersede", "f" * 32, *T, *OP, "--label", "x")
    assert r.code == 2 and "no memory" in r.err
    assert run_cli(d, "history", "not-an-id", *T).code == 2
    # --by combined with field options is a usage error
    r = run_cli(d, "supersede", ids["fact"], *T, *OP, "--by", ids["preference"], "--label", "x")
    assert r.code == 2 and "--by" in r.err


def test_remember_with_an_unknown_team_is_refused_and_changes_nothing(acme: tuple[Path, dict[str, str]]) -> None:
    """`reckon remember --team` naming a team acme does not have: exit 2, the error names it
    and lists acme's teams (examples/acme.yaml: brand, growth), the store is unchanged;
    `reckon tenant add-team` makes the team, then the write goes through."""
    from reckon.api import Engine

    d, _ = acme
    args = ("remember", *T, *OP, "--kind", "fact", "--scope", "team", "--label", "Sales standup",
            "--content", "Sales meets at 09:30 on Mondays.")
    before = Engine(d).tenant("acme").dump()
    r = run_cli(d, *args, "--team", "sales")
    assert r.code == 2, r
    assert ("unknown team: teams: no team 'sales' in tenant 'acme' (its teams: 'brand', 'growth')"
            in " ".join(r.err.split()))
    r = run_cli(d, *args, "--team", "Growth")
    assert r.code == 2 and "(did you mean 'growth'?)" in " ".join(r.err.split()), r
    assert Engine(d).tenant("acme").dump() == before
    r = run_cli(d, "tenant", "teams", "acme", "--json")
    assert r.code == 0 and json.loads(r.out) == ["brand", "growth"]
    r = run_cli(d, "tenant", "add-team", "acme", "Growth")
    assert r.code == 2 and "differs from the tenant's team 'growth' only in case" in " ".join(r.err.split()), r
    assert run_cli(d, "tenant", "add-team", "acme", "sales", "--name", "Sales").code == 0
    r = run_cli(d, *args, "--team", "sales", "--json")
    assert r.code == 0 and json.loads(r.out)["teams"] == ["sales"], r
    # a token naming an unknown team is refused when it is made
    r = run_cli(d, "token", "create", *T, "--as", "lee", "--member-of", "brnad")
    assert r.code == 2 and "no team 'brnad'" in " ".join(r.err.split()), r
