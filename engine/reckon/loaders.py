"""Business-data loaders: CSV with a column mapping, JSON records, Turtle, and the daily
replay that turns per-day ad-platform totals into the tenant's current spend records,
KPIs and clock (DESIGN.md "Who uses it": data pipeline; the business-data classes of
``ontology/marketing.ttl``).

Pipeline::

    read_csv(path, mapping) / read_json(path, mapping)   -> list[Record]   (one per row)
    aggregate_daily(records)                              -> list[DailyTotals]
                                                             (sum per date and platform)
    replay_daily(tenant, daily)                           -> list[DayState]
                                                             (per day: month-to-date spend,
                                                              CPA / ROAS, clock tick)
    load_turtle(tenant, path)                             -> number of triples
                                                             (straight into BUSINESS, validated)

Raw ad-platform exports (e.g. the Improvado MCDM files: several rows per ad per day)
are read with the default column names (``date``, ``channel``, ``spend``,
``conversions`` / ``conv``, ``clicks``, ``impressions`` / ``imps``, ``revenue``) and
aggregated by (date, platform) with a plain sum. Platform names of the exports
("TikTok Ads", "Facebook", "Twitter", "Bing") map to the ontology's platforms
(``tiktok``, ``meta``, ``twitter``, ``bing``).

KPI formulas (the hints of the MCDM challenge README, month to date):
``CPA = spend / conversions`` (undefined while conversions are 0), ``ROAS = revenue /
spend`` (undefined while spend is 0); values are rounded half-even to
:data:`KPI_PLACES`. An undefined KPI has no current value: the replay unlinks it, so
the target memory has no status rather than a stale one.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from reckon._errors import InvalidInput
from reckon.store.terms import DECIMAL_LEXICAL, XSD_WHITESPACE, check_text, text_fault

__all__ = [
    "DEFAULT_COLUMNS",
    "FIELDS",
    "KPI_PLACES",
    "DailyTotals",
    "DayState",
    "Record",
    "aggregate_daily",
    "clear_kpi",
    "load_turtle",
    "normalise_platform",
    "parse_mapping",
    "read_csv",
    "read_json",
    "read_records",
    "replay_daily",
]

FIELDS: tuple[str, ...] = ("date", "platform", "spend", "conversions", "revenue", "clicks", "impressions")
"""Canonical record fields. ``amount`` is accepted as a synonym of ``spend``."""

_SYNONYMS = {"amount": "spend", "cost": "spend", "conv": "conversions", "imps": "impressions", "channel": "platform"}

DEFAULT_COLUMNS: dict[str, tuple[str, ...]] = {
    "date": ("date", "day"),
    "platform": ("platform", "channel"),
    "spend": ("spend", "amount", "cost"),
    "conversions": ("conversions", "conv"),
    "revenue": ("revenue", "purchase_value"),
    "clicks": ("clicks",),
    "impressions": ("impressions", "imps"),
}
"""Column names tried, in order, for each field when no mapping names it."""

_PLATFORMS = {
    "meta": "meta", "facebook": "meta", "facebookads": "meta", "instagram": "meta", "fb": "meta",
    "google": "google", "googleads": "google", "adwords": "google",
    "tiktok": "tiktok", "tiktokads": "tiktok",
    "twitter": "twitter", "x": "twitter", "twitterads": "twitter", "promotedtweets": "twitter",
    "bing": "bing", "bingads": "bing", "microsoftads": "bing", "microsoft": "bing",
    "linkedin": "linkedin", "linkedinads": "linkedin",
}

KPI_PLACES = Decimal("0.000001")
"""KPIs written by the replay are rounded half-even to 6 decimal places."""

_NUMERIC = ("spend", "conversions", "revenue", "clicks", "impressions")


def normalise_platform(name: str) -> str:
    """An export's platform / channel name -> the ontology's platform local name
    (``"TikTok Ads"`` -> ``"tiktok"``, ``"Facebook"`` -> ``"meta"``). Unknown names are
    returned lower-cased with spaces removed (the tenant's vocabulary then decides)."""
    key = "".join(ch for ch in name.casefold() if ch.isalnum())
    return _PLATFORMS.get(key, key)


def parse_mapping(text: str | None) -> dict[str, str]:
    """``"date=date,platform=channel,amount=spend"`` -> ``{field: column}``.

    Keys are record fields (:data:`FIELDS`; ``amount`` means ``spend``), values are
    column names of the file (JSON keys for JSON).

    :raises InvalidInput: for a malformed pair or an unknown field.
    """
    out: dict[str, str] = {}
    if not text:
        return out
    for pair in text.split(","):
        pair = pair.strip()
        if not pair:
            continue
        if "=" not in pair:
            raise InvalidInput(f"--map: expected FIELD=COLUMN, got {pair!r}", field="map")
        key, col = (x.strip() for x in pair.split("=", 1))
        key = _SYNONYMS.get(key.lower(), key.lower())
        if key not in FIELDS and key not in ("metric", "value"):
            raise InvalidInput(
                f"--map: unknown field {key!r}; fields are {', '.join(FIELDS + ('metric', 'value'))}",
                field="map",
            )
        if not col:
            raise InvalidInput(f"--map: empty column name for {key!r}", field="map")
        out[key] = col
    return out


@dataclass(frozen=True)
class Record:
    """One input row with canonical fields (``None`` = the column is absent).

    :ivar day: the row's date; ``platform``: ontology platform local name;
        ``spend`` / ``revenue`` in the account currency; counts as ``Decimal``.
    """

    day: date
    platform: str
    spend: Decimal = Decimal(0)
    conversions: Decimal | None = None
    revenue: Decimal | None = None
    clicks: Decimal | None = None
    impressions: Decimal | None = None
    metric: str | None = None
    value: Decimal | None = None


def _date(value: Any, where: str) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    text = str(value).strip()
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        raise InvalidInput(f"{where}: date: not an ISO date (YYYY-MM-DD): {text!r}", field="date") from None


def _number(value: Any, name: str, where: str) -> Decimal:
    if value is None or (isinstance(value, str) and not value.strip()):
        return Decimal(0)
    if isinstance(value, bool):
        raise InvalidInput(f"{where}: {name}: a boolean is not a number", field=name)
    if isinstance(value, str):
        text = value.strip(XSD_WHITESPACE)
        if _GROUPED.fullmatch(text):
            text = text.replace(",", "")  # thousands separators, in groups of three only
        if not DECIMAL_LEXICAL.fullmatch(text):
            hint = (" (',' only separates thousands, 1,234.5; the decimal point is '.')" if "," in text
                    else " (ASCII digits with an optional sign and point, no exponent)")
            raise InvalidInput(f"{where}: {name}: not a decimal number: {value!r}{hint}", field=name)
        value = text
    try:
        d = Decimal(repr(value)) if isinstance(value, float) else Decimal(str(value))
    except InvalidOperation:
        raise InvalidInput(f"{where}: {name}: not a number: {value!r}", field=name) from None
    if not d.is_finite() or abs(d) >= _MAX_MAGNITUDE:
        raise InvalidInput(f"{where}: {name}: not a finite number below 1e15: {value!r}", field=name)
    if d < 0 and name in _NON_NEGATIVE:
        raise InvalidInput(f"{where}: {name}: must be >= 0, got {value!r}", field=name)
    return d


_GROUPED = re.compile(r"[+-]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?")
"""A number written with thousands separators (``1,234,567.89``): its commas are dropped.
Any other comma is refused, never dropped: ``1,5`` (a decimal comma) would otherwise
read as 15 and ``1.234,56`` as 1.23456."""
_MAX_MAGNITUDE = Decimal("1e15")
"""Amounts and counts at or above this are refused (they overflow binary floats' exact
range and are never real ad-platform values)."""
_NON_NEGATIVE = frozenset(_NUMERIC)
"""Spend, conversions, revenue, clicks and impressions cannot be negative (the same rule
``Tenant.set_spend`` / ``set_kpi`` apply)."""


def _resolve_columns(header: Sequence[str], mapping: Mapping[str, str], where: str) -> dict[str, int]:
    """Field -> column index (first occurrence of a duplicated column name)."""
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        index.setdefault(name.strip(), i)
    cols: dict[str, int] = {}
    for fld, col in mapping.items():
        if col not in index:
            raise InvalidInput(f"{where}: --map {fld}={col}: no column {col!r} (columns: {', '.join(header)})",
                               field="map")
        cols[fld] = index[col]
    for fld, candidates in DEFAULT_COLUMNS.items():
        if fld in cols:
            continue
        for c in candidates:
            if c in index:
                cols[fld] = index[c]
                break
    for fld in ("metric", "value"):
        if fld not in cols and fld in index:
            cols[fld] = index[fld]
    return cols


def _record(get: Callable[[str], Any], has: Callable[[str], bool], platform: str | None, where: str) -> Record:
    if not has("date"):
        raise InvalidInput(f"{where}: no date column (map one with --map date=COLUMN)", field="date")
    if platform is not None:
        plat = normalise_platform(platform)
    elif has("platform"):
        raw = get("platform")
        if raw is None or not str(raw).strip():
            raise InvalidInput(f"{where}: platform is empty", field="platform")
        plat = normalise_platform(str(raw))
    else:
        plat = ""
    vals: dict[str, Any] = {}
    for name in _NUMERIC:
        if has(name):
            vals[name] = _number(get(name), name, where)
    if "spend" not in vals:
        vals["spend"] = Decimal(0)
    metric = str(get("metric")).strip() if has("metric") and get("metric") is not None else None
    value = _number(get("value"), "value", where) if has("value") else None
    return Record(day=_date(get("date"), where), platform=plat, metric=metric, value=value, **vals)


def read_csv(path: str | Path, mapping: Mapping[str, str] | None = None, *, platform: str | None = None) -> list[Record]:
    """Rows of a CSV file (UTF-8, header row) as :class:`Record` objects.

    :param mapping: field -> column name (see :func:`parse_mapping`); fields not mapped
        are looked up under :data:`DEFAULT_COLUMNS`.
    :param platform: the platform of every row (when the file has no platform column).
    :raises InvalidInput: when the file cannot be read, a mapped column is missing, or a
        cell is not a date / number (the message names file, line and column).
    """
    p = Path(path)
    try:
        fh = p.open(newline="", encoding="utf-8-sig")
    except OSError as e:
        raise InvalidInput(f"cannot read {p}: {e.strerror or e}", field="path") from e
    with fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise InvalidInput(f"{p}: empty file (a header row is required)", field="path") from None
        _check_row(header, header, f"{p}:1")
        cols = _resolve_columns(header, dict(mapping or {}), str(p))
        out = []
        for n, row in enumerate(reader, start=2):
            if not any(cell.strip() for cell in row):
                continue
            where = f"{p}:{n}"
            _check_row(row, header, where)
            if len(row) < len(header):
                raise InvalidInput(
                    f"{where}: {len(row)} cells, the header has {len(header)} (a short row is not read as zeros)",
                    field="path",
                )

            def get(f: str, row: list[str] = row) -> Any:
                i = cols[f]
                return row[i] if i < len(row) else ""

            out.append(_record(get, cols.__contains__, platform, where))
    return out


def _check_row(row: Sequence[str], header: Sequence[str], where: str) -> None:
    """Refuse a cell no RDF text can hold (:func:`reckon.store.terms.text_fault`), naming
    ``file:line``, the column and the character's offset in the cell."""
    for j, cell in enumerate(row):
        fault = text_fault(cell)
        if fault is not None:
            col = header[j].strip() if j < len(header) and text_fault(header[j]) is None else f"#{j + 1}"
            raise InvalidInput(f"{where}: column {col!r}: {fault}", field="path")


def read_json(path: str | Path, mapping: Mapping[str, str] | None = None, *, platform: str | None = None) -> list[Record]:
    """Records of a JSON file: a list of objects (or ``{"records": [...]}``) with the
    same keys as the CSV columns.

    :raises InvalidInput: when the file is not such JSON or a value is bad.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise InvalidInput(f"cannot read {p}: {e.strerror or e}", field="path") from e
    except json.JSONDecodeError as e:
        raise InvalidInput(f"{p}: not JSON: {e}", field="path") from e
    if isinstance(data, dict) and isinstance(data.get("records"), list):
        data = data["records"]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InvalidInput(f"{p}: expected a list of objects (or {{\"records\": [...]}})", field="path")
    out = []
    for n, obj in enumerate(data):
        try:
            check_text(obj, f"{p}[{n}]")
        except InvalidInput as e:
            raise InvalidInput(str(e), field="path") from None
        keys = list(obj)
        cols_idx = _resolve_columns(keys, dict(mapping or {}), f"{p}[{n}]")
        def get(f: str, o: Any = obj, c: dict[str, int] = cols_idx, k: list[str] = keys) -> Any:
            return o[k[c[f]]]

        out.append(_record(get, cols_idx.__contains__, platform, f"{p}[{n}]"))
    return out


def read_records(path: str | Path, mapping: Mapping[str, str] | None = None, *, platform: str | None = None) -> list[Record]:
    """:func:`read_csv` or :func:`read_json` by the file's extension (``.csv`` / ``.json``).

    :raises InvalidInput: for another extension."""
    suffix = Path(path).suffix.lower()
    if suffix in (".csv", ".tsv", ".txt"):
        return read_csv(path, mapping, platform=platform)
    if suffix == ".json":
        return read_json(path, mapping, platform=platform)
    raise InvalidInput(f"{path}: expected a .csv or .json file", field="path")


@dataclass(frozen=True)
class DailyTotals:
    """Sums of one (date, platform). ``conversions`` / ``revenue`` are ``None`` when the
    input has no such column (unknown, not zero)."""

    day: date
    platform: str
    spend: Decimal
    conversions: Decimal | None = None
    revenue: Decimal | None = None
    clicks: Decimal | None = None
    impressions: Decimal | None = None
    rows: int = 0


def aggregate_daily(records: Iterable[Record]) -> list[DailyTotals]:
    """Sum records by (date, platform); sorted by date, then platform.

    :raises InvalidInput: when a record has no platform.
    """
    acc: dict[tuple[date, str], dict[str, Any]] = {}
    for r in records:
        if not r.platform:
            raise InvalidInput("a record has no platform (map a platform column or give --platform)", field="platform")
        a = acc.setdefault((r.day, r.platform), {"spend": Decimal(0), "rows": 0})
        a["rows"] += 1
        for name in _NUMERIC:
            v = getattr(r, name)
            if v is not None:
                a[name] = a.get(name, Decimal(0)) + v
    return [
        DailyTotals(day=d, platform=p, spend=a["spend"], conversions=a.get("conversions"), revenue=a.get("revenue"),
                    clicks=a.get("clicks"), impressions=a.get("impressions"), rows=a["rows"])
        for (d, p), a in sorted(acc.items())
    ]


@dataclass
class DayState:
    """What the replay wrote for one day.

    :ivar spend: month-to-date spend per platform (USD).
    :ivar kpis: ``(metric, platform-or-None) -> value`` (``None`` = undefined, unlinked).
    :ivar clock: the clock value set (end of the day, UTC).
    """

    day: date
    period_start: date
    spend: dict[str, Decimal] = field(default_factory=dict)
    kpis: dict[tuple[str, str | None], Decimal | None] = field(default_factory=dict)
    clock: datetime | None = None


def _kpi(num: Decimal | None, den: Decimal | None) -> Decimal | None:
    if num is None or den is None or den == 0:
        return None
    return (num / den).quantize(KPI_PLACES, rounding=ROUND_HALF_EVEN)


def replay_daily(
    tenant: Any,
    daily: Sequence[DailyTotals],
    *,
    kpis: Iterable[str] = ("CPA", "ROAS"),
    company_kpis: bool = False,
    tick: bool = True,
    currency: str = "USD",
    on_day: Callable[[DayState], None] | None = None,
    allow_backwards: bool = False,
) -> list[DayState]:
    """Replay daily totals into ``tenant`` one day at a time, in date order.

    For each date: every platform seen so far gets its month-to-date spend as the current
    monthly spend record (``period_start`` = first of the month; 0 on a platform's days
    without rows); per platform, CPA (when the data has conversions) and ROAS (when it has
    revenue) month to date are set as current KPIs (as of the end of the day), or unlinked while undefined; with
    ``company_kpis`` the same over all platforms as company-wide KPIs; then the clock is
    set to 23:59:59 UTC of that date. Spend records are written when they change.
    Each day is ONE store transaction (readers see a whole day or none of it).
    ``on_day(state)`` is called after each day (statuses are derived by then).

    :param kpis: which of ``"CPA"``, ``"ROAS"`` to derive.
    :param allow_backwards: with ``tick``, allow days earlier than the tenant's clock
        (otherwise such a day is refused, like ``Tenant.tick``).
    :returns: one :class:`DayState` per date.
    :raises InvalidInput: for an unknown platform or metric or a bad currency, or a day
        before the tenant's clock (nothing of that day is written; earlier days stay).
    """
    want = {k.upper() for k in kpis}
    bad = want - {"CPA", "ROAS"}
    if bad:
        raise InvalidInput(f"kpis: unknown {sorted(bad)}; the replay derives CPA and ROAS", field="kpis")
    by_day: dict[date, list[DailyTotals]] = defaultdict(list)
    for d in daily:
        by_day[d.day].append(d)
    # platforms whose data has a conversions / revenue column (others: KPI unknown)
    conv_platforms = {d.platform for d in daily if d.conversions is not None}
    rev_platforms = {d.platform for d in daily if d.revenue is not None}

    from reckon.business import SpendInput, parse_model
    from reckon.business import writers as B

    parse_model(SpendInput, platform="any", amount=0, currency=currency)  # refuse a bad currency up front
    written_spend: dict[str, tuple[date, Decimal]] = {}
    written_kpi: dict[tuple[str, str | None], Decimal | None] = {}
    mtd: dict[str, dict[str, Decimal | None]] = {}
    month: tuple[int, int] | None = None
    states = []
    for day in sorted(by_day):
        if month != (day.year, day.month):
            month = (day.year, day.month)
            mtd = {p: {"spend": Decimal(0), "conversions": None, "revenue": None} for p in mtd}
        start = day.replace(day=1)
        for d in by_day[day]:
            m = mtd.setdefault(d.platform, {"spend": Decimal(0), "conversions": None, "revenue": None})
            m["spend"] = (m["spend"] or Decimal(0)) + d.spend
            for name in ("conversions", "revenue"):
                v = getattr(d, name)
                if v is not None:
                    m[name] = (m[name] or Decimal(0)) + v
        state = DayState(day=day, period_start=start)
        as_of = datetime.combine(day, time(23, 59, 59), tzinfo=UTC)
        ops: list[Callable[[Any], Any]] = []
        spend_done: dict[str, tuple[date, Decimal]] = {}
        for plat in sorted(mtd):
            amount = mtd[plat]["spend"] or Decimal(0)
            state.spend[plat] = amount
            if written_spend.get(plat) != (start, amount):
                ops.append(functools.partial(B.write_spend, tenant=tenant.id, platform=plat, amount=amount,
                                             period="monthly", period_start=start, currency=currency, as_of=as_of))
                spend_done[plat] = (start, amount)
        targets: list[tuple[str | None, Decimal, Decimal | None, Decimal | None]] = []
        for plat in sorted(mtd):
            m = mtd[plat]
            conv = (m["conversions"] or Decimal(0)) if plat in conv_platforms else None
            rev = (m["revenue"] or Decimal(0)) if plat in rev_platforms else None
            targets.append((plat, m["spend"] or Decimal(0), conv, rev))
        if company_kpis and mtd:
            tot_spend = sum(((m["spend"] or Decimal(0)) for m in mtd.values()), Decimal(0))
            tot_conv = (sum(((m["conversions"] or Decimal(0)) for m in mtd.values()), Decimal(0))
                        if conv_platforms else None)
            tot_rev = (sum(((m["revenue"] or Decimal(0)) for m in mtd.values()), Decimal(0))
                       if rev_platforms else None)
            targets.append((None, tot_spend, tot_conv, tot_rev))
        for kplat, spend, conv, rev in targets:
            values: dict[str, Decimal | None] = {}
            if "CPA" in want and conv is not None:
                values["CPA"] = _kpi(spend, conv)
            if "ROAS" in want and rev is not None:
                values["ROAS"] = _kpi(rev, spend)
            for metric, value in values.items():
                key = (metric, kplat)
                state.kpis[key] = value
                if value is None:
                    if written_kpi.get(key) is not None:  # was defined: unlink it
                        ops.append(functools.partial(_clear_kpi, tenant_id=tenant.id, metric=metric, platform=kplat))
                else:
                    ops.append(functools.partial(B.write_kpi, tenant=tenant.id, metric=metric, value=value,
                                                 platform=kplat, period=None, as_of=as_of))
        if tick:
            ops.append(functools.partial(B.write_clock, now=as_of, allow_backwards=allow_backwards))
            state.clock = as_of
        if ops:
            with tenant.store.transaction() as txn:  # the whole day, or nothing of it
                for op in ops:
                    op(txn)
        written_spend.update(spend_done)
        written_kpi.update(state.kpis)
        states.append(state)
        if on_day is not None:
            on_day(state)
    return states


def clear_kpi(tenant: Any, metric: str, platform: str | None = None) -> int:
    """Unlink the company's current KPI of ``metric`` (on ``platform``, or the company-wide
    one) and drop its value node: the KPI is undefined. One transaction. Returns how many
    were unlinked.

    :raises InvalidInput: for an unknown metric or platform.
    """
    with tenant.store.transaction() as txn:
        return _clear_kpi(txn, tenant.id, metric, platform)


def _clear_kpi(txn: Any, tenant_id: str, metric: str, platform: str | None) -> int:
    from pyoxigraph import NamedNode, Quad

    from reckon.business.writers import RDF_TYPE, Vocabulary, mk, rk
    from reckon.store import BUSINESS, MEMORIES

    voc = Vocabulary(txn.view)
    m = voc.resolve(mk("Metric"), metric, "metric")
    plat = voc.resolve(mk("Platform"), platform, "platform") if platform is not None else None
    n = 0
    companies = [s for s in txn.view.subjects(RDF_TYPE, rk("Company"), MEMORIES) if isinstance(s, NamedNode)]
    for company in companies:
        for q in txn.quads(company, mk("currentKpi"), None, BUSINESS):
            k = q.object
            if txn.view.objects(k, mk("metric"), BUSINESS) != [m]:
                continue
            if txn.view.objects(k, mk("platform"), BUSINESS) != ([plat] if plat else []):
                continue
            txn.remove(Quad(company, mk("currentKpi"), k, BUSINESS))
            txn.remove_pattern(k, None, None, BUSINESS)
            n += 1
    return n


def load_turtle(tenant: Any, path: str | Path) -> int:
    """Add the triples of a Turtle file to the tenant's BUSINESS graph, after SHACL
    validation of every typed subject in the file against the tenant's shapes (KPI
    values, spend records, accounts, subscription ...). One transaction.

    :returns: the number of triples added.
    :raises InvalidInput: when the file cannot be read or does not parse.
    :raises ShapeViolation: when a node does not conform (nothing is written).
    """
    from pyoxigraph import NamedNode, Quad, RdfFormat, parse

    from reckon.schema import check, schema_from_graph
    from reckon.store import BUSINESS, MEMORIES, SCHEMA
    from reckon.store.terms import canonical_triple, check_file_text, check_triples_text

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InvalidInput(f"cannot read {p}: {e.strerror or e}", field="path") from e
    check_file_text(data.decode("utf-8", "replace"), str(p))  # raw characters, with line and column
    try:
        # validated as the store will hold them (canonical literals: reckon.store.terms)
        triples = [canonical_triple(q.triple)
                   for q in parse(data, format=RdfFormat.TURTLE, base_iri=p.resolve().as_uri())]
    except SyntaxError as e:
        raise InvalidInput(f"{p}: Turtle syntax error: {e}", field="path") from e
    check_triples_text(triples, str(p))  # escapes (\u0001) the parser decoded
    from reckon.vocab import A as rdf_type
    focus = sorted({t.subject for t in triples if t.predicate == rdf_type and isinstance(t.subject, NamedNode)},
                   key=str)
    with tenant.store.transaction() as txn:
        if focus:
            schema_triples = [q.triple for q in txn.view.quads(None, None, None, SCHEMA)]
            context = [q.triple for q in txn.view.quads(None, rdf_type, None, MEMORIES)]
            context += [q.triple for q in txn.view.quads(None, None, None, BUSINESS)]
            check(context + triples, focus, schema=schema_from_graph(schema_triples))
        for t in triples:
            txn.add(Quad(t.subject, t.predicate, t.object, BUSINESS))
    return len(triples)
