"""`reckon events ...` and `reckon graph` (seed 000 MAGMA, seed 004 Graph Memory): record
events, load a file, traverse, the impact closure and the Mermaid rendering."""

from __future__ import annotations

import json

from tests.cli.conftest import run_cli


def test_events_and_graph_verbs(acme, tmp_path):
    d, _ = acme
    T = ("--tenant", "acme")
    r = run_cli(d, "events", "add", "research session", "--at", "2026-03-01T09:00:00+01:00", "--timeline", "wiki",
                "--id", "s1", "--episode-node", *T)
    assert r.code == 0, r.err
    assert json.loads(r.out)["kind"] == "episode" and json.loads(r.out)["at"].startswith("2026-03-01T08:00:00")
    f = tmp_path / "events.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in [
        {"id": "mismatch", "label": "Driver version mismatch found", "at": "2026-03-01T09:05:00.000001+01:00",
         "timeline": "wiki", "episode": "s1", "mentions": [{"label": "Driver v531", "type": "driver"}]},
        {"id": "bug", "label": "Shader compilation bug", "at": "2026-03-01T09:10:00+01:00", "timeline": "wiki",
         "episode": "s1", "caused_by": ["mismatch"], "mentions": ["driver:driver  V531", "api:WebGPU"]},
    ]) + "\n")
    r = run_cli(d, "events", "load", str(f), *T)
    assert r.code == 0 and "recorded 2 events" in r.out
    r = run_cli(d, "events", "timeline", "wiki", "--json", *T)
    assert [e["id"] for e in json.loads(r.out)] == ["s1", "mismatch", "bug"]
    r = run_cli(d, "graph", "bug", "--json", "--edge-type", "causal", *T)
    assert [(x["edge"], x["node"]["id"]) for x in json.loads(r.out)] == [("causedBy", "mismatch")]
    r = run_cli(d, "graph", "--entity", "driver:Driver v531", "--json", "--edge-type", "entity", *T)
    assert sorted(x["node"]["id"] for x in json.loads(r.out)) == ["bug", "mismatch"]  # one entity node
    r = run_cli(d, "graph", "mismatch", "--impact", "--json", *T)
    assert [x["id"] for x in json.loads(r.out)] == ["bug"]
    assert run_cli(d, "events", "depend", "service:UserService", "service:Auth", *T).code == 0
    assert run_cli(d, "events", "depend", "service:Billing", "service:UserService", *T).code == 0
    r = run_cli(d, "graph", "--entity", "service:auth", "--impact", "--json", *T)
    assert [x["id"] for x in json.loads(r.out)] == ["service:billing", "service:userservice"]
    r = run_cli(d, "graph", "s1", "--mermaid", "--depth", "2", *T)
    assert r.code == 0 and r.out.startswith("flowchart LR\n")
    assert '[["research session"]]' in r.out and '(("Driver v531 (driver)"))' in r.out
    assert "-->|causedBy|" in r.out and "-->|next|" in r.out and "-->|episode|" in r.out


def test_graph_bad_input_exits_2(acme):
    d, _ = acme
    T = ("--tenant", "acme")
    r = run_cli(d, "events", "add", "x", "--at", "2026-03-01T09:00:00", *T)
    assert r.code == 2 and "time zone" in r.err
    r = run_cli(d, "events", "add", "x", "--at", "2026-03-01T09:00:00Z", "--caused-by", "nope", *T)
    assert r.code == 2 and "record it first" in r.err
    r = run_cli(d, "graph", "no-such-event", *T)
    assert r.code == 2
    r = run_cli(d, "graph", "--entity", "Caroline", *T)
    assert r.code == 2 and "TYPE:LABEL" in r.err
    r = run_cli(d, "graph", "s1", "--edge-type", "gossip", *T)
    assert r.code == 2 and "temporal" in r.err
