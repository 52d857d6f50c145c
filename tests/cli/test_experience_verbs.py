"""`reckon experience record|strategies|similar` (seed 000 Evolving Memory): five
successes of one approach make a strategy card; similar tasks find it."""

from __future__ import annotations

import json

from tests.cli.conftest import run_cli


def test_experience_verbs(acme):
    d, _ = acme
    T = ("--tenant", "acme", "--as", "agent-1")
    for i in range(5):
        r = run_cli(d, "experience", "record", f"Reconcile the Meta invoice {i}", "--outcome", "success",
                    "--strategy", "Export the billing CSV first", "--tool", "sheets", "--tool", "meta-api", *T)
        assert r.code == 0, r.err
    assert json.loads(r.out)["tools"] == ["meta-api", "sheets"]
    r = run_cli(d, "experience", "record", "Reconcile the Google invoice", "--outcome", "failure",
                "--failed", "the API timed out", "--strategy", "Call the API directly", *T)
    assert r.code == 0
    r = run_cli(d, "experience", "strategies", "--promoted", "--json", "--tenant", "acme")
    cards = json.loads(r.out)
    assert [(c["approach"], c["success_count"]) for c in cards] == [("Export the billing CSV first", 5)]
    r = run_cli(d, "experience", "similar", "Reconcile the Meta invoice", "--cards", "--json", "--tenant", "acme")
    assert json.loads(r.out)[0]["approach"] == "Export the billing CSV first"
    r = run_cli(d, "experience", "similar", "Google invoice", "-k", "2", "--json", "--tenant", "acme")
    assert len(json.loads(r.out)) == 2
    r = run_cli(d, "experience", "record", "x", "--outcome", "won", *T)
    assert r.code == 2 and "outcome" in r.err
