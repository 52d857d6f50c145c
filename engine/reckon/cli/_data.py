"""Business-data verbs: `reckon load`, `reckon kpi set`, `reckon spend set`,
`reckon clock tick` (the data pipeline of DESIGN.md "Who uses it").

`load` reads Turtle (`.ttl`: straight into the BUSINESS graph, SHACL-validated),
CSV or JSON (records with a column mapping, `--map date=date,platform=channel,amount=spend`;
unmapped fields are found under their usual names). `--kind spend` (default) sums the
records per day and platform (`--aggregate daily`, the default, is what raw ad-platform
exports with several rows per ad per day need) and replays them day by day: month-to-date
spend per platform, CPA / ROAS month to date, clock at the end of each day (see
`reckon.loaders.replay_daily`). `--kind kpi` sets one KPI per row (`metric`,
`value`, optional `platform`, `date` = as of).

Exit codes: 0 ok; 1 Turtle data does not conform to the shapes; 2 input error (file,
mapping, unknown platform / metric, bad number or date); 3 internal error.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from pathlib import Path

import typer

from reckon.cli._app import app, err_console, fail, one_of
from reckon.cli._tenant import TENANT_OPT, open_tenant, say

kpi_app = typer.Typer(help="Set current KPI values.", no_args_is_help=True)
spend_app = typer.Typer(help="Set current spend records.", no_args_is_help=True)
clock_app = typer.Typer(help="Advance the in-graph clock.", no_args_is_help=True)
app.add_typer(kpi_app, name="kpi")
app.add_typer(spend_app, name="spend")
app.add_typer(clock_app, name="clock")


def _stored(value: str) -> str:
    """The canonical ``xsd:decimal`` text the store holds for an accepted ``value``
    (``40000.500`` -> ``40000.5``), so the echo says what a query reads back."""
    from reckon.store.terms import decimal_literal

    return decimal_literal(value).value


def _when(text: str | None, option: str) -> datetime | None:
    from reckon.cli._memory import parse_when

    return parse_when(text, option)


@kpi_app.command("set")
def kpi_set(
    metric: str = typer.Argument(..., help="ROAS, CPA, CTR, CPC, CPM, conversion_rate, revenue, conversions."),
    value: str = typer.Argument(..., help="Value in the metric's unit (decimal)."),
    tenant: str = TENANT_OPT,
    platform: str = typer.Option(None, "--platform", help="meta, google, tiktok ... (default: company-wide)."),
    period: str = typer.Option(None, "--period", help="daily, weekly, monthly, quarterly, yearly."),
    as_of: str = typer.Option(None, "--as-of", help="Observation time, ISO 8601 (default: now)."),
) -> None:
    """Set the current value of a KPI (replaces the previous one of the same metric and platform)."""
    t = open_tenant(tenant)
    t.set_kpi(metric, value, platform=platform, period=period, as_of=_when(as_of, "--as-of"))
    say(f"KPI {metric}{' on ' + platform if platform else ''} = {_stored(value)}")


@spend_app.command("set")
def spend_set(
    platform: str = typer.Argument(..., help="meta, google, tiktok, twitter, bing, linkedin."),
    amount: str = typer.Argument(..., help="Spend so far in the period (decimal, >= 0)."),
    tenant: str = TENANT_OPT,
    period: str = typer.Option("monthly", "--period"),
    period_start: str = typer.Option(None, "--period-start", help="First day of the period, YYYY-MM-DD."),
    currency: str = typer.Option("USD", "--currency"),
    as_of: str = typer.Option(None, "--as-of", help="Observation time, ISO 8601 (default: the in-graph clock, else now)."),
) -> None:
    """Set the current spend of a platform for a period (replaces the previous record;
    the value is also kept in the spend history, one point per day)."""
    start = None
    if period_start is not None:
        try:
            start = date.fromisoformat(period_start)
        except ValueError:
            raise fail(f"--period-start: not a date YYYY-MM-DD: {period_start!r}") from None
    t = open_tenant(tenant)
    t.set_spend(platform, amount, period=period, period_start=start, currency=currency,
                as_of=_when(as_of, "--as-of"))
    say(f"spend {platform} {period} = {_stored(amount)} {currency}")


@clock_app.command("tick")
def clock_tick(
    when: str = typer.Argument(None, help="New clock value: ISO 8601 date (midnight UTC) or date-time with an "
                               "offset (Z, +02:00); default: now."),
    tenant: str = TENANT_OPT,
    allow_backwards: bool = typer.Option(False, "--allow-backwards", help="Allow a time earlier than the clock."),
) -> None:
    """Set the in-graph clock; expiry and clock-dependent statuses are re-derived. A time
    earlier than the current clock is refused unless --allow-backwards."""
    now = _when(when, "WHEN") or datetime.now(UTC)
    open_tenant(tenant).tick(now, allow_backwards=allow_backwards)
    say(f"clock = {now.isoformat()}")


@app.command("load")
def load(
    file: Path = typer.Argument(..., help="Turtle (.ttl), CSV (.csv) or JSON (.json)."),
    tenant: str = TENANT_OPT,
    mapping: str = typer.Option(None, "--map", "-m", help="FIELD=COLUMN,... (fields: date, platform, amount/spend, "
                                "conversions, revenue, clicks, impressions; metric, value for --kind kpi)."),
    kind: str = typer.Option("spend", "--kind", parser=one_of("spend", "kpi"),
                             help="spend (daily ad-platform data) | kpi (one KPI per row)."),
    aggregate: str = typer.Option("daily", "--aggregate", help="daily: sum rows per date and platform."),
    platform: str = typer.Option(None, "--platform", help="Platform of every row (file without a platform column)."),
    kpis: str = typer.Option("CPA,ROAS", "--kpis", help="KPIs to derive month to date (CPA, ROAS; '' for none)."),
    company_kpis: bool = typer.Option(False, "--company-kpis", help="Also derive company-wide KPIs over all platforms."),
    tick: bool = typer.Option(True, "--tick/--no-tick", help="Advance the clock to the end of each day."),
    allow_backwards: bool = typer.Option(False, "--allow-backwards",
                                         help="With --tick: allow days earlier than the tenant's clock."),
) -> None:
    """Load business data (see the module help for formats and the daily replay)."""
    from reckon import loaders

    if not file.exists():
        raise fail(f"no such file: {file}")
    t = open_tenant(tenant)
    if file.suffix.lower() in (".ttl", ".turtle"):
        if mapping:
            raise fail("--map applies to CSV and JSON, not Turtle")
        n = loaders.load_turtle(t, file)
        say(f"loaded {n} triples into the business graph of {t.id}")
        return
    if aggregate != "daily":
        raise fail(f"--aggregate: only 'daily' is supported, got {aggregate!r}")
    records = loaders.read_records(file, loaders.parse_mapping(mapping), platform=platform)
    if kind == "kpi":
        n = 0
        for r in records:
            if r.metric is None or r.value is None:
                raise fail(f"{file}: --kind kpi needs metric and value columns (map them with --map)")
            t.set_kpi(r.metric, r.value, platform=r.platform or None,
                      as_of=datetime.combine(r.day, time(23, 59, 59), tzinfo=UTC))
            n += 1
        say(f"set {n} KPI values")
        return
    if kind != "spend":
        raise fail(f"--kind: expected spend or kpi, got {kind!r}")
    daily = loaders.aggregate_daily(records)
    if not daily:
        raise fail(f"{file}: no records")
    want = [k.strip() for k in kpis.split(",") if k.strip()]
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    days = sorted({d.day for d in daily})
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as progress:
        task = progress.add_task(f"replaying {len(days)} days", total=len(days))
        states = loaders.replay_daily(t, daily, kpis=want, company_kpis=company_kpis, tick=tick,
                                      on_day=lambda s: progress.advance(task), allow_backwards=allow_backwards)
    platforms = sorted({d.platform for d in daily})
    say(f"loaded {len(records)} rows -> {len(daily)} daily totals for {', '.join(platforms)}; "
                  f"replayed {len(states)} days ({days[0]} .. {days[-1]})")
    last = states[-1]
    for plat, amount in sorted(last.spend.items()):
        say(f"  {plat}: month-to-date spend {amount} (period from {last.period_start})")
