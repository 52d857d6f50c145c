"""``reckon.loaders``: column mappings, platform names, per-day aggregation of raw exports,
JSON records, and the replay's handling of undefined KPIs at a month boundary."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from reckon import loaders
from reckon._errors import InvalidInput
from tests.conftest import shared_path


def test_parse_mapping() -> None:
    assert loaders.parse_mapping("date=date,platform=channel,amount=spend") == {
        "date": "date", "platform": "channel", "spend": "spend"}
    assert loaders.parse_mapping(" conv = Conversions , ") == {"conversions": "Conversions"}
    assert loaders.parse_mapping(None) == {}
    with pytest.raises(InvalidInput, match="FIELD=COLUMN"):
        loaders.parse_mapping("date")
    with pytest.raises(InvalidInput, match="unknown field 'colour'"):
        loaders.parse_mapping("colour=red")


@pytest.mark.parametrize(("raw", "want"), [
    ("TikTok Ads", "tiktok"), ("Facebook", "meta"), ("Twitter", "twitter"), ("Bing", "bing"),
    ("Google Ads", "google"), ("meta", "meta"), ("LinkedIn", "linkedin"),
])
def test_normalise_platform(raw: str, want: str) -> None:
    assert loaders.normalise_platform(raw) == want


def test_aggregate_sums_rows_per_date_and_platform(tmp_path: Path) -> None:
    f = tmp_path / "x.csv"
    f.write_text("date,channel,spend,conv,imps\n"
                 "2023-01-02,Bing,1.5,1,10\n2023-01-01,Bing,2,0,5\n2023-01-02,Bing,3.25,2,7\n"
                 "2023-01-02,Twitter,4,,1\n")
    daily = loaders.aggregate_daily(loaders.read_csv(f))
    assert [(d.day, d.platform, d.spend, d.conversions, d.impressions, d.rows) for d in daily] == [
        (date(2023, 1, 1), "bing", Decimal("2"), Decimal("0"), Decimal("5"), 1),
        (date(2023, 1, 2), "bing", Decimal("4.75"), Decimal("3"), Decimal("17"), 2),
        (date(2023, 1, 2), "twitter", Decimal("4"), Decimal("0"), Decimal("1"), 1),
    ]


def test_raw_facebook_export_with_duplicate_columns() -> None:
    """The Facebook export repeats column names (clicks, purchase ...): the first wins;
    purchase_value is the revenue."""
    import csv

    path = shared_path("data", "ads", "improvado_mcdm", "src_ads_creative_facebook_all_data.csv")
    daily = loaders.aggregate_daily(loaders.read_csv(path))
    assert {d.platform for d in daily} == {"meta"}
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        i_spend, i_rev, i_date = header.index("spend"), header.index("purchase_value"), header.index("date")
        spend: dict[str, Decimal] = {}
        rev: dict[str, Decimal] = {}
        for row in reader:
            spend[row[i_date]] = spend.get(row[i_date], Decimal(0)) + Decimal(row[i_spend] or "0")
            rev[row[i_date]] = rev.get(row[i_date], Decimal(0)) + Decimal(row[i_rev] or "0")
    assert {d.day.isoformat(): d.spend for d in daily} == spend
    assert {d.day.isoformat(): d.revenue for d in daily} == rev


def test_read_json_and_errors(tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"records": [{"day": "2023-03-01", "cost": 5.5, "platform": "Facebook"}]}))
    (r,) = loaders.read_json(f, {"date": "day", "spend": "cost"})
    assert (r.day, r.platform, r.spend) == (date(2023, 3, 1), "meta", Decimal("5.5"))
    f.write_text("{not json")
    with pytest.raises(InvalidInput, match="not JSON"):
        loaders.read_json(f)
    f.write_text(json.dumps([{"date": "March 1st", "platform": "meta"}]))
    with pytest.raises(InvalidInput, match="ISO date"):
        loaders.read_json(f)
    g = tmp_path / "nodate.csv"
    g.write_text("platform,spend\nmeta,1\n")
    with pytest.raises(InvalidInput, match="no date column"):
        loaders.read_csv(g)
    with pytest.raises(InvalidInput, match=r"\.csv or \.json"):
        loaders.read_records(tmp_path / "x.xlsx")


def test_replay_unlinks_an_undefined_kpi_at_a_new_month(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Month to date, CPA is undefined while conversions are 0: on 1 February (no
    conversions yet) January's CPA must not linger as the current value."""
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    from reckon.api import Engine, Principal

    t = Engine(tmp_path).create_tenant("m")
    target = t.remember(kind="objective", scope="company", importance=5, source="operator", label="CPA target",
                        content="CPA at most 20", principal=Principal.operator(), subclass="PerformanceTargetMemory",
                        properties={"platform": "meta", "metric": "CPA", "targetValue": "20"})
    daily = [
        loaders.DailyTotals(day=date(2023, 1, 31), platform="meta", spend=Decimal(100), conversions=Decimal(4)),
        loaders.DailyTotals(day=date(2023, 2, 1), platform="meta", spend=Decimal(30), conversions=Decimal(0)),
        loaders.DailyTotals(day=date(2023, 2, 2), platform="meta", spend=Decimal(30), conversions=Decimal(6)),
    ]
    seen = []
    states = loaders.replay_daily(t, daily, kpis=["CPA"],
                                  on_day=lambda s: seen.append(dict(t.get(target.id).status)))
    assert [s.kpis[("CPA", "meta")] for s in states] == [Decimal("25"), None, Decimal("10")]
    assert seen[0]["targetStatus"] == "below" and seen[0]["currentValue"] == 25
    assert "targetStatus" not in seen[1] and "currentValue" not in seen[1]
    assert seen[2]["targetStatus"] == "met" and seen[2]["currentValue"] == 10
    rows = t.sparql("PREFIX mk: <https://reckon.dev/ns/marketing#> SELECT ?v WHERE { ?c mk:currentKpi ?k . "
                    "?k mk:metric mk:CPA ; mk:value ?v }")
    assert [r["v"].value for r in rows] == ["10"]
    with pytest.raises(InvalidInput, match="kpis"):
        loaders.replay_daily(t, daily, kpis=["CTR"])


def test_replay_writes_a_day_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A day with an unknown platform is refused whole: the other platform's spend and the
    clock stay at the previous day."""
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    from reckon.api import Engine

    t = Engine(tmp_path).create_tenant("a")
    daily = [
        loaders.DailyTotals(day=date(2023, 1, 1), platform="meta", spend=Decimal(10)),
        loaders.DailyTotals(day=date(2023, 1, 2), platform="meta", spend=Decimal(20)),
        loaders.DailyTotals(day=date(2023, 1, 2), platform="myspace", spend=Decimal(5)),
    ]
    gen = t.store.generation()
    with pytest.raises(InvalidInput, match="platform"):
        loaders.replay_daily(t, daily)
    assert t.store.generation() == gen + 1  # day 1 only: one transaction
    rows = t.sparql("PREFIX mk: <https://reckon.dev/ns/marketing#> PREFIX rk: <https://reckon.dev/ns/core#> "
                    "SELECT ?a ?now WHERE { ?c mk:currentSpendRecord ?r . ?r mk:amount ?a . rk:clock rk:now ?now }")
    assert [(r["a"].value, r["now"].value) for r in rows] == [("10", "2023-01-01T23:59:59Z")]
