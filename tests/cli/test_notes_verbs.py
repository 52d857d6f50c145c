"""`reckon notes ...`: keyed shared notes from the command line (seed 000 Transit), with
the documented exit codes (0 ok, 1 compare-and-set lost, 2 bad input / no such note)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.cli.conftest import run_cli


def test_put_get_list_namespaces_cas_delete(acme):
    d, _ = acme
    key = "project/launch/planning/outline"
    r = run_cli(d, "notes", "put", key, '{"steps": ["brief", "draft"]}', "--tenant", "acme", "--as", "lee")
    assert r.code == 0, r.err
    assert json.loads(r.out)["version"] == 1 and json.loads(r.out)["author"] == "lee"
    r = run_cli(d, "notes", "get", key, "--tenant", "acme", "--value")
    assert r.code == 0 and json.loads(r.out) == {"steps": ["brief", "draft"]}
    r = run_cli(d, "notes", "put", "project/launch/findings/s1", "-", "--string", "--tenant", "acme", "--as", "sam",
                stdin="Spend is 85 % of the cap.")
    assert r.code == 0 and json.loads(r.out)["value"] == "Spend is 85 % of the cap."
    r = run_cli(d, "notes", "list", "project/launch/", "--tenant", "acme", "--json")
    assert [n["key"] for n in json.loads(r.out)] == ["project/launch/findings/s1", key]
    r = run_cli(d, "notes", "namespaces", "launch", "--tenant", "acme", "--json")
    assert json.loads(r.out) == [{"project": "launch", "namespace": "findings", "count": 1},
                                 {"project": "launch", "namespace": "planning", "count": 1}]
    r = run_cli(d, "notes", "cas", key, '"mine"', "--expected", "0", "--tenant", "acme", "--as", "sam")
    assert r.code == 1 and json.loads(r.out) == {**json.loads(r.out), "ok": False, "version": 1}
    r = run_cli(d, "notes", "cas", key, '"mine"', "--expected", "1", "--tenant", "acme", "--as", "sam")
    assert r.code == 0 and json.loads(r.out)["version"] == 2
    assert run_cli(d, "notes", "delete", key, "--tenant", "acme", "--as", "sam").code == 0
    r = run_cli(d, "notes", "get", key, "--tenant", "acme")
    assert r.code == 2 and "no live note" in r.err
    assert run_cli(d, "notes", "delete", key, "--tenant", "acme", "--as", "sam").code == 2


def test_ttl_and_purge_follow_the_in_graph_clock(acme):
    d, _ = acme
    now = datetime(2026, 4, 1, 12, 0, 0, 500000, tzinfo=UTC)
    assert run_cli(d, "clock", "tick", "--tenant", "acme", now.isoformat()).code == 0
    key = "project/launch/claims/job-1"
    assert run_cli(d, "notes", "put", key, '{"worker": 3}', "--ttl", "30", "--tenant", "acme", "--as", "w3").code == 0
    assert run_cli(d, "notes", "get", key, "--tenant", "acme").code == 0
    assert run_cli(d, "clock", "tick", "--tenant", "acme", (now + timedelta(seconds=30)).isoformat()).code == 0
    assert run_cli(d, "notes", "get", key, "--tenant", "acme").code == 2
    r = run_cli(d, "notes", "purge", "--tenant", "acme")
    assert r.code == 0 and r.out.split() == [key]


def test_bad_input_exits_2(acme):
    d, _ = acme
    r = run_cli(d, "notes", "put", "project/launch/x", "1", "--tenant", "acme", "--as", "lee")
    assert r.code == 2 and "project/<project-id>/<namespace>/<name>" in r.err
    r = run_cli(d, "notes", "put", "project/launch/x/y", "{not json", "--tenant", "acme", "--as", "lee")
    assert r.code == 2 and "--string" in r.err
    r = run_cli(d, "notes", "put", "project/launch/x/y", "1", "--ttl", "-5", "--tenant", "acme", "--as", "lee")
    assert r.code == 2 and "ttl" in r.err
