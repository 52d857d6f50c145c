"""``reckon sparql`` (formats, read-only), ``reckon load`` (CSV with a mapping, JSON,
Turtle), ``kpi set``, ``spend set``, ``clock tick``, usage errors, ``reckon demo``."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import rdflib

from tests.cli.conftest import REPO, run_cli

T = ("--tenant", "acme")
MK = "https://reckon.dev/ns/marketing#"
Q_STATUS = (
    "PREFIX mk: <https://reckon.dev/ns/marketing#> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
    "SELECT ?label ?status ?u WHERE { ?m mk:budgetStatus ?s ; rdfs:label ?label . ?s rdfs:label ?status . "
    "OPTIONAL { ?m mk:utilisation ?u } } ORDER BY ?label"
)


@pytest.fixture(scope="module")
def spent(acme: tuple[Path, dict[str, str]]) -> Path:
    d, _ = acme
    assert run_cli(d, "spend", "set", "meta", "34000", *T, "--period-start", "2026-03-01").code == 0
    return d


# --------------------------------------------------------------------------- sparql
def test_sparql_select_formats_parse(spent: Path) -> None:
    r = run_cli(spent, "sparql", *T, "--format", "csv", Q_STATUS)
    assert r.code == 0, r.err
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert rows == [{"label": "Meta monthly spend cap", "status": "near_limit", "u": "0.85"}]
    r = run_cli(spent, "sparql", *T, "--format", "json", Q_STATUS)
    data = json.loads(r.out)
    assert data["head"]["vars"] == ["label", "status", "u"]
    (b,) = data["results"]["bindings"]
    assert b["status"] == {"type": "literal", "value": "near_limit"}
    assert b["u"]["datatype"] == "http://www.w3.org/2001/XMLSchema#decimal" and Decimal(b["u"]["value"]) == Decimal("0.85")
    r = run_cli(spent, "sparql", *T, "--format", "tsv", Q_STATUS)
    lines = r.out.splitlines()
    assert lines[0] == "?label\t?status\t?u"
    assert lines[1].split("\t") == ['"Meta monthly spend cap"', '"near_limit"',
                                    '"0.85"^^<http://www.w3.org/2001/XMLSchema#decimal>']
    r = run_cli(spent, "sparql", *T, Q_STATUS)
    assert r.code == 0 and "near_limit" in r.out and "1 row" in r.out


def test_sparql_unbound_variables_keep_their_columns(spent: Path) -> None:
    q = "SELECT ?a ?nothing WHERE { VALUES ?a { 1 2 } }"
    rows = list(csv.reader(io.StringIO(run_cli(spent, "sparql", *T, "-f", "csv", q).out)))
    assert rows == [["a", "nothing"], ["1", ""], ["2", ""]]


def test_sparql_ask_construct_and_inputs(spent: Path, tmp_path: Path) -> None:
    ask = "ASK { ?m <https://reckon.dev/ns/marketing#budgetStatus> ?s }"
    assert json.loads(run_cli(spent, "sparql", *T, "-f", "json", ask).out) == {"head": {}, "boolean": True}
    construct = ("PREFIX mk: <https://reckon.dev/ns/marketing#> "
                 "CONSTRUCT { ?m mk:budgetStatus ?s } WHERE { ?m mk:budgetStatus ?s }")
    f = tmp_path / "q.rq"
    f.write_text(construct)
    ttl = run_cli(spent, "sparql", *T, "-f", "ttl", f"@{f}")
    assert ttl.code == 0, ttl.err
    g = rdflib.Graph().parse(data=ttl.out, format="turtle")
    assert set(g.objects(None, rdflib.URIRef(MK + "budgetStatus"))) == {rdflib.URIRef(MK + "NearLimit")}
    nt = run_cli(spent, "sparql", *T, "-f", "nt", "-", stdin=construct)
    assert len(rdflib.Graph().parse(data=nt.out, format="nt")) == 1
    # formats that do not fit the query form
    assert run_cli(spent, "sparql", *T, "-f", "csv", construct).code == 2
    assert run_cli(spent, "sparql", *T, "-f", "ttl", Q_STATUS).code == 2
    assert run_cli(spent, "sparql", *T, "-f", "rdf", Q_STATUS).code == 2
    # XML: the SPARQL Query Results XML Format for SELECT / ASK, RDF/XML for CONSTRUCT
    xml = run_cli(spent, "sparql", *T, "-f", "xml", Q_STATUS)
    assert xml.code == 0, xml.err
    from pyoxigraph import QueryResultsFormat, QuerySolutions, RdfFormat, parse, parse_query_results

    sols = parse_query_results(xml.out.encode(), QueryResultsFormat.XML)
    assert isinstance(sols, QuerySolutions)
    rows = [{v.value: s[v].value for v in sols.variables if s[v] is not None} for s in sols]
    assert any(r.get("status") == "near_limit" for r in rows), rows
    ask = run_cli(spent, "sparql", *T, "-f", "xml", "ASK { ?m a rk:ActiveMemory }")
    assert bool(parse_query_results(ask.out.encode(), QueryResultsFormat.XML)) is True
    rdfxml = run_cli(spent, "sparql", *T, "-f", "xml", construct)
    assert rdfxml.code == 0 and len(list(parse(input=rdfxml.out.encode(), format=RdfFormat.RDF_XML))) == 1
    assert run_cli(spent, "sparql", *T, f"@{tmp_path / 'missing.rq'}").code == 2


@pytest.mark.parametrize("update", [
    "INSERT DATA { <urn:a> <urn:b> <urn:c> }",
    "DELETE WHERE { ?s ?p ?o }",
    "CLEAR ALL",
    "LOAD <http://example.org/x.ttl>",
    "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }",
])
def test_sparql_update_refused(spent: Path, update: str) -> None:
    before = run_cli(spent, "sparql", *T, "-f", "csv", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").out
    r = run_cli(spent, "sparql", *T, update)
    assert r.code == 2
    assert r.err.startswith("error:")
    assert run_cli(spent, "sparql", *T, "-f", "csv", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").out == before


def test_sparql_syntax_error_is_input_error(spent: Path) -> None:
    r = run_cli(spent, "sparql", *T, "SELECT ?x WHERE { ?x")
    assert r.code == 2 and r.err.startswith("error:")


# --------------------------------------------------------------------------- business data
@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Tenant ``shop`` with a TikTok cap of 1,000 and a TikTok CPA target of 50."""
    from reckon.api import Engine, Principal

    d = tmp_path_factory.mktemp("shop")
    t = Engine(d).create_tenant("shop")
    op = Principal.operator("ops")
    cap = t.remember(kind="objective", scope="company", importance=5, source="operator", label="TikTok cap",
                     content="TikTok under 1000 a month", principal=op, subclass="BudgetConstraintMemory",
                     properties={"platform": "tiktok", "amount": "1000", "currency": "USD", "period": "monthly"})
    cpa = t.remember(kind="objective", scope="company", importance=5, source="operator", label="TikTok CPA",
                     content="TikTok CPA at most 50", principal=op, subclass="PerformanceTargetMemory",
                     properties={"platform": "tiktok", "metric": "CPA", "targetValue": "50"})
    t.store.close()
    return d, cap.id, cpa.id


def _status(d: Path, mid: str) -> dict:
    r = run_cli(d, "get", mid, "--tenant", "shop", "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)["status"]


def test_load_raw_csv_with_mapping_aggregates_per_day(shop: tuple[Path, str, str], tmp_path: Path) -> None:
    d, cap, cpa = shop
    f = tmp_path / "raw.csv"
    f.write_text(
        "day,channel,cost,conv,ad\n"
        "2026-04-01,TikTok Ads,300,2,a\n2026-04-01,TikTok Ads,200,3,b\n"   # day 1: 500 spend, 5 conv
        "2026-04-02,TikTok Ads,250,0,a\n2026-04-02,TikTok Ads,100,1,b\n"   # day 2: 850 MTD (85 %), 6 conv
        "2026-04-03,TikTok Ads,200,0,a\n"                                   # day 3: 1050 MTD (over), 6 conv
    )
    r = run_cli(d, "load", "--tenant", "shop", str(f), "--map", "date=day,platform=channel,amount=cost,conversions=conv",
                "--kind", "spend", "--aggregate", "daily")
    assert r.code == 0, r.err
    assert "5 rows -> 3 daily totals for tiktok" in r.out
    st = _status(d, cap)
    assert st["budgetStatus"] == "over_budget" and Decimal(st["currentSpend"]) == 1050
    t = _status(d, cpa)
    assert t["targetStatus"] == "below" and Decimal(t["currentValue"]) == Decimal(1050) / 6  # 1050 / 6
    clock = run_cli(d, "sparql", "--tenant", "shop", "-f", "csv",
                    "SELECT ?now WHERE { <https://reckon.dev/ns/core#clock> <https://reckon.dev/ns/core#now> ?now }")
    assert "2026-04-03T23:59:59Z" in clock.out


def test_load_json_records_and_errors(shop: tuple[Path, str, str], tmp_path: Path) -> None:
    d, cap, cpa = shop
    f = tmp_path / "may.json"
    f.write_text(json.dumps([
        {"date": "2026-05-01", "platform": "tiktok", "spend": 400, "conversions": 10},
        {"date": "2026-05-02", "platform": "tiktok", "spend": 420.5, "conversions": 10},
    ]))
    r = run_cli(d, "load", "--tenant", "shop", str(f))
    assert r.code == 0, r.err
    st = _status(d, cap)
    assert st["budgetStatus"] == "near_limit" and Decimal(st["currentSpend"]) == Decimal("820.5")
    assert _status(d, cpa)["targetStatus"] == "met"  # 820.5 / 20 = 41.025 <= 50
    # main errors: a mapped column that does not exist; a bad number (file:line named); unknown platform
    r = run_cli(d, "load", "--tenant", "shop", str(f), "--map", "amount=price")
    assert r.code == 2 and "price" in r.err
    bad = tmp_path / "bad.csv"
    bad.write_text("date,platform,spend\n2026-05-03,tiktok,12x\n")
    r = run_cli(d, "load", "--tenant", "shop", str(bad))
    assert r.code == 2 and "bad.csv:2" in r.err and "spend" in r.err
    alien = tmp_path / "alien.csv"
    alien.write_text("date,platform,spend\n2026-05-03,myspace,12\n")
    r = run_cli(d, "load", "--tenant", "shop", str(alien))
    assert r.code == 2 and "platform" in r.err


def test_load_turtle_validated_into_business_graph(shop: tuple[Path, str, str], tmp_path: Path) -> None:
    d, _, _ = shop
    good = tmp_path / "acct.ttl"
    good.write_text(
        "@prefix mk: <https://reckon.dev/ns/marketing#> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        "<urn:reckon:shop:account:bing-77> a mk:AdAccount ; mk:onPlatform mk:bing ; mk:accountId \"77\" ;\n"
        "  rdfs:label \"Shop Bing\" .\n"
        "<urn:reckon:shop:company> mk:connectedAccount <urn:reckon:shop:account:bing-77> .\n")
    r = run_cli(d, "load", "--tenant", "shop", str(good))
    assert r.code == 0, r.err
    q = ("SELECT ?a WHERE { GRAPH <urn:reckon:graph:inferred> { "
         "<https://reckon.dev/ns/core#liveContext> <https://reckon.dev/ns/marketing#liveAccount> ?a } }")
    assert "urn:reckon:shop:account:bing-77" in run_cli(d, "sparql", "--tenant", "shop", "-f", "csv", q).out
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix mk: <https://reckon.dev/ns/marketing#> .\n"
                   "<urn:reckon:shop:kpi:x> a mk:KpiValue ; mk:metric mk:ROAS .\n")  # no mk:value
    r = run_cli(d, "load", "--tenant", "shop", str(bad))
    assert r.code == 1 and "value" in r.err
    ask = "ASK { <urn:reckon:shop:kpi:x> ?p ?o }"
    assert json.loads(run_cli(d, "sparql", "--tenant", "shop", "-f", "json", ask).out)["boolean"] is False
    syntax = tmp_path / "syntax.ttl"
    syntax.write_text("<urn:a> <urn:b> .\n")
    assert run_cli(d, "load", "--tenant", "shop", str(syntax)).code == 2


def test_kpi_spend_clock_verbs(shop: tuple[Path, str, str]) -> None:
    d, cap, cpa = shop
    S = ("--tenant", "shop")
    assert run_cli(d, "spend", "set", "tiktok", "100", *S, "--period-start", "2026-06-01").code == 0
    assert _status(d, cap)["budgetStatus"] == "within_budget"
    assert run_cli(d, "kpi", "set", "CPA", "49.5", *S, "--platform", "tiktok", "--as-of", "2026-06-01T12:00:00Z").code == 0
    assert _status(d, cpa)["targetStatus"] == "met"
    assert run_cli(d, "kpi", "set", "cpa", "50.01", *S, "--platform", "tiktok").code == 0
    assert _status(d, cpa)["targetStatus"] == "below"
    assert run_cli(d, "clock", "tick", "2026-06-02T08:00:00Z", *S).code == 0
    # main errors
    r = run_cli(d, "spend", "set", "myspace", "1", *S)
    assert r.code == 2 and "platform" in r.err
    r = run_cli(d, "spend", "set", "tiktok", "-3", *S)  # -3 is a value (no -- needed), refused by the shapes: 1
    assert r.code == 1 and "amount -3 is negative" in r.err
    assert run_cli(d, "kpi", "set", "happiness", "1", *S).code == 2
    assert run_cli(d, "clock", "tick", "yesterday", *S).code == 2


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "tenant", "list", "--bogus").code == 2
    assert run_cli(tmp_path, "no-such-verb").code == 2
    assert run_cli(tmp_path, "remember", "--tenant", "x").code == 2  # missing required options


# --------------------------------------------------------------------------- demo
def test_demo_shows_every_status_transition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Also: the demo works without sentence-transformers (the recall layer falls back to
    the lexical embedder), simulated by making the model extra look absent."""
    import reckon.recall.embed as embed

    monkeypatch.delenv("RECKON_EMBEDDER", raising=False)
    monkeypatch.setattr(embed, "minilm_available", lambda: False)
    r = run_cli(tmp_path, "demo")
    assert r.code == 0, r.err
    out = r.out
    for word in ("within_budget", "near_limit", "over_budget", "met", "below"):
        assert word in out, word
    assert "within_budget -> near_limit" in out and "near_limit -> over_budget" in out and "met -> below" in out
    # bundles only on the first and last day and on the three days a status changes
    assert out.count("# Memory context for dana") == 4
    assert "budget-status-over" in out  # the explanation of the final budget status
    # the data dir given was used (and kept); a second run there refuses to overwrite it
    assert "acme" in json.loads(run_cli(tmp_path, "tenant", "list", "--json").out)
    again = run_cli(tmp_path, "demo")
    assert again.code == 2 and "already exists" in again.err
    # refused before anything is printed, and with no hint of an option demo does not have
    assert again.out == "" and "--existing" not in again.err


def test_demo_refuses_a_small_budget_naming_the_option_and_takes_its_own_data_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    r = run_cli(tmp_path, "demo", "--budget", "100")
    assert r.code == 2 and "--budget" in r.err and r.out == ""
    from reckon.cli import main

    old_out, old_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    target = tmp_path / "here"
    try:
        code = main(["demo", "--data-dir", str(target), "--tenant", "demo1"])
        out = sys.stdout.getvalue()
    finally:
        sys.stdout, sys.stderr = old_out, old_err
    assert code == 0 and f"data in {target}" in out
    assert (target / "tenants" / "demo1").is_dir()
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    r = run_cli(a_file, "demo")  # a data directory that cannot be made: refused before anything is printed
    assert r.code == 3 and "cannot create the data directory" in r.err and r.out == ""


def test_console_script_process_exit_codes(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "engine"), "RECKON_EMBEDDER": "hashing"}
    code = "import sys; from reckon.cli import main; sys.exit(main())"
    p = subprocess.run([sys.executable, "-c", code, "--data-dir", str(tmp_path), "tenant", "create", "p1"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([sys.executable, "-c", code, "--data-dir", str(tmp_path), "sparql", "--tenant", "p1",
                        "CLEAR ALL"], capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "error:" in p.stderr


def test_load_kpi_rows(shop: tuple[Path, str, str], tmp_path: Path) -> None:
    d, _, cpa = shop
    f = tmp_path / "kpis.csv"
    f.write_text("date,metric,value,platform\n2026-07-01,CPA,60,tiktok\n2026-07-02,CPA,45,tiktok\n")
    r = run_cli(d, "load", "--tenant", "shop", str(f), "--kind", "kpi")
    assert r.code == 0, r.err
    assert "set 2 KPI values" in r.out
    st = _status(d, cpa)
    assert st["targetStatus"] == "met" and Decimal(st["currentValue"]) == 45
    nometric = tmp_path / "nometric.csv"
    nometric.write_text("date,platform,spend\n2026-07-01,tiktok,1\n")
    r = run_cli(d, "load", "--tenant", "shop", str(nometric), "--kind", "kpi")
    assert r.code == 2 and "metric and value" in r.err


def test_delete_asks_for_confirmation(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "tenant", "create", "keepme").code == 0
    r = run_cli(tmp_path, "tenant", "delete", "keepme", stdin="n\n")
    assert r.code == 2 and "not deleted" in r.err
    assert json.loads(run_cli(tmp_path, "tenant", "list", "--json").out) == ["keepme"]
    assert run_cli(tmp_path, "tenant", "delete", "keepme", stdin="y\n").code == 0
    assert json.loads(run_cli(tmp_path, "tenant", "list", "--json").out) == []


def test_an_unexpected_exception_is_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reckon.api import Engine

    def boom(self: Engine) -> list[str]:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Engine, "list_tenants", boom)
    monkeypatch.delenv("RECKON_DEBUG", raising=False)
    r = run_cli(tmp_path, "tenant", "list")
    assert r.code == 3 and "internal error" in r.err and "disk on fire" in r.err
