"""Business data and the clock as triples (``ontology/marketing.ttl`` business classes,
``rk:clock`` and the company, people and teams of ``ontology/core.ttl``).

Every change is one store transaction that REPLACES the previous current value: the
node's old triples (and the company's link to it) are retracted and the new ones
asserted, so the reasoner sees a delete + insert and recomputes only the statuses
that depend on it. Vocabulary individuals (metrics, platforms, periods, subscription
statuses) are looked up in the tenant's SCHEMA graph by label or local name, so an
ontology author who adds a platform needs no code change.

IRIs (minted by :mod:`reckon.vocab` and here): ``urn:reckon:<tenant>:company``, ``...:person:<id>``, ``...:team:<id>``,
``...:kpi:[<platform>:]<metric>``, ``...:spend:<platform>:<period>[:<currency>]``
(currency only when not USD), ``...:account:<platform>-<account id>``,
``...:subscription``. Ids are percent-encoded outside ``A-Z a-z 0-9 - . _ ~``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from urllib.parse import quote

from pyoxigraph import Literal, NamedNode, Quad

from reckon import vocab
from reckon._errors import InvalidInput
from reckon.store import BUSINESS, MEMORIES, SCHEMA, StoreView, Txn
from reckon.store.terms import datetime_literal
from reckon.store.terms import decimal_literal as _decimal_literal

__all__ = [
    "CLOCK",
    "Vocabulary",
    "company_iri",
    "person_iri",
    "team_iri",
]

RK, MK, XSD = vocab.RK, vocab.MK, vocab.XSD
RDF_TYPE = vocab.A
LABEL = vocab.LABEL
X_DECIMAL, X_INTEGER = NamedNode(XSD + "decimal"), NamedNode(XSD + "integer")
X_DATETIME, X_DATE = NamedNode(XSD + "dateTime"), NamedNode(XSD + "date")


def rk(local: str) -> NamedNode:
    return NamedNode(RK + local)


def mk(local: str) -> NamedNode:
    return NamedNode(MK + local)


CLOCK = rk("clock")
_SAFE = "-._~"


def _enc(value: str) -> str:
    return quote(value, safe=_SAFE)


company_iri = vocab.company_iri
person_iri = vocab.person_iri
team_iri = vocab.team_iri






def dt_literal(value: datetime, field: str = "datetime") -> Literal:
    """``xsd:dateTime`` in UTC written with ``Z``, canonical
    (:func:`reckon.store.terms.datetime_literal`).

    :raises InvalidInput: for a naive ``datetime`` (no time zone is ever guessed).
    """
    return datetime_literal(value, field)


def decimal_literal(d: Decimal) -> Literal:
    """Canonical ``xsd:decimal`` text (no exponent, no trailing zeros;
    :func:`reckon.store.terms.decimal_literal`).

    :raises InvalidInput: for a value the store cannot hold exactly.
    """
    try:
        return _decimal_literal(d)
    except ValueError as e:
        raise InvalidInput(f"{d!r} {e}") from None


def _key(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.casefold())


class Vocabulary:
    """Individuals of a class in the SCHEMA graph, found by label or local name
    (case, spaces, ``_`` and ``-`` ignored: ``"conversion_rate"`` -> mk:ConversionRate)."""

    def __init__(self, view: StoreView) -> None:
        self._view = view

    def resolve(self, klass: NamedNode, name: str, field: str) -> NamedNode:
        """The individual of ``klass`` called ``name``.

        :raises InvalidInput: naming the accepted values when none matches.
        """
        want = _key(name)
        choices: list[str] = []
        for s in self._view.subjects(RDF_TYPE, klass, SCHEMA):
            if not isinstance(s, NamedNode):
                continue
            local = re.split(r"[#/:]", s.value)[-1]
            labels = [o.value for o in self._view.objects(s, LABEL, SCHEMA) if isinstance(o, Literal)]
            choices.append(labels[0] if labels else local)
            if want and (want == _key(local) or any(want == _key(lbl) for lbl in labels)):
                return s
        raise InvalidInput(
            f"{field}: unknown value {name!r}; expected one of {sorted(choices)}", field=field
        )


def _company(view: StoreView, tenant: str) -> NamedNode:
    """The tenant's single rk:Company node (found by type: an imported tenant keeps its IRIs)."""
    for s in view.subjects(RDF_TYPE, rk("Company"), MEMORIES):
        if isinstance(s, NamedNode):
            return s
    return company_iri(tenant)


def _replace_node(txn: Txn, node: NamedNode, graph: NamedNode, triples: Iterable[tuple[NamedNode, object]]) -> None:
    txn.remove_pattern(node, None, None, graph)
    for p, o in triples:
        txn.add(Quad(node, p, o, graph))  # type: ignore[arg-type]


def write_kpi(txn: Txn, tenant: str, *, metric: str, value: Decimal, platform: str | None,
              period: str | None, as_of: datetime) -> NamedNode:
    voc = Vocabulary(txn.view)
    m = voc.resolve(mk("Metric"), metric, "metric")
    plat = voc.resolve(mk("Platform"), platform, "platform") if platform is not None else None
    per = voc.resolve(mk("Period"), period, "period") if period is not None else None
    local = m.value.rsplit("#", 1)[-1].lower()
    node = NamedNode(
        f"urn:reckon:{tenant}:kpi:" + (f"{plat.value.rsplit('#', 1)[-1]}:" if plat else "") + _enc(local)
    )
    triples: list[tuple[NamedNode, object]] = [
        (RDF_TYPE, mk("KpiValue")),
        (mk("metric"), m),
        (mk("value"), decimal_literal(value)),
        (mk("asOf"), dt_literal(as_of)),
    ]
    if plat is not None:
        triples.append((mk("platform"), plat))
    if per is not None:
        triples.append((mk("period"), per))
    company = _company(txn.view, tenant)
    # at most one current KPI per (metric, platform-or-none): unlink any other current one
    for q in txn.quads(company, mk("currentKpi"), None, BUSINESS):
        other = q.object
        if other == node:
            continue
        if txn.view.objects(other, mk("metric"), BUSINESS) == [m] and (
            txn.view.objects(other, mk("platform"), BUSINESS) == ([plat] if plat else [])
        ):
            txn.remove(q)
    _replace_node(txn, node, BUSINESS, triples)
    txn.add(Quad(company, mk("currentKpi"), node, BUSINESS))
    return node


def write_spend(txn: Txn, tenant: str, *, platform: str, amount: Decimal, period: str,
                period_start: date | None, currency: str, as_of: datetime | None = None) -> NamedNode:
    """Replace the current spend record of (platform, period, currency) and record the
    value in the spend history: one ``mk:SpendObservation`` per record and UTC day of
    ``as_of`` (default: the in-graph clock, else now), replaced by a later refresh of the
    same day. Rules join only the current record; the history is what a chart of spend
    over time reads."""
    voc = Vocabulary(txn.view)
    plat = voc.resolve(mk("Platform"), platform, "platform")
    per = voc.resolve(mk("Period"), period, "period")
    plat_local = plat.value.rsplit("#", 1)[-1]
    per_local = per.value.rsplit("#", 1)[-1].lower()
    suffix = "" if currency == "USD" else f":{currency.lower()}"
    node = NamedNode(f"urn:reckon:{tenant}:spend:{_enc(plat_local)}:{_enc(per_local)}{suffix}")
    triples: list[tuple[NamedNode, object]] = [
        (RDF_TYPE, mk("SpendRecord")),
        (mk("platform"), plat),
        (mk("period"), per),
        (mk("amount"), decimal_literal(amount)),
        (mk("currency"), Literal(currency)),
    ]
    if period_start is not None:
        triples.append((mk("periodStart"), Literal(period_start.isoformat(), datatype=X_DATE)))
    when = as_of if as_of is not None else _clock_now(txn.view)
    when = (when.replace(tzinfo=UTC) if when.tzinfo is None else when).astimezone(UTC)
    # the instant the record's period ends (rules/marketing.srl rule:spend-period-elapsed: once
    # the clock reaches it, the amount is a past period's spend and no cap is compared with it)
    end = period_end(per_local, period_start if period_start is not None else when.date(),
                     anchored=period_start is not None)
    triples.append((mk("validUntil"), dt_literal(datetime(end.year, end.month, end.day, tzinfo=UTC))))
    company = _company(txn.view, tenant)
    _replace_node(txn, node, BUSINESS, triples)
    txn.add(Quad(company, mk("currentSpendRecord"), node, BUSINESS))
    obs = NamedNode(f"{node.value}:{when.date().isoformat()}")
    # own properties only (not mk:amount / mk:platform): a query for spend records or amounts
    # does not meet the history
    _replace_node(txn, obs, BUSINESS, [
        (RDF_TYPE, mk("SpendObservation")), (mk("spendRecord"), node),
        (mk("observedAmount"), decimal_literal(amount)), (mk("observedAt"), dt_literal(when)),
    ])
    return node


def _add_months(d: date, months: int) -> date:
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    last = (date(year + (month == 12), month % 12 + 1, 1) - timedelta(days=1)).day
    return date(year, month, min(d.day, last))


def period_end(period: str, day: date, *, anchored: bool) -> date:
    """The first day after the period (``daily`` / ``weekly`` / ``monthly`` /
    ``quarterly`` / ``yearly``) that covers ``day``.

    :param anchored: ``day`` is the period's first day as the caller stated it
        (``period_start``): the period is one length from it (2026-03-15 monthly ends
        2026-04-15). Otherwise the calendar period containing ``day`` (ISO week from
        Monday, calendar month / quarter / year).
    :raises InvalidInput: an unknown period.
    """
    if period == "daily":
        return day + timedelta(days=1)
    if period == "weekly":
        return day + timedelta(days=7) if anchored else day + timedelta(days=7 - day.weekday())
    months = {"monthly": 1, "quarterly": 3, "yearly": 12}.get(period)
    if months is None:
        raise InvalidInput(f"unknown period {period!r}", field="period")
    if anchored:
        return _add_months(day, months)
    first_month = day.month if months == 1 else (1 if months == 12 else (day.month - 1) // 3 * 3 + 1)
    return _add_months(date(day.year, first_month, 1), months)


def _clock_now(view: StoreView) -> datetime:
    """The in-graph clock (``rk:clock rk:now``), else the wall clock (UTC)."""
    for o in view.objects(CLOCK, rk("now"), BUSINESS):
        if isinstance(o, Literal):
            try:
                return datetime.fromisoformat(o.value.replace("Z", "+00:00"))
            except ValueError:
                break
    return datetime.now(UTC)


def write_account(txn: Txn, tenant: str, *, platform: str, account_id: str, name: str | None) -> NamedNode:
    voc = Vocabulary(txn.view)
    plat = voc.resolve(mk("Platform"), platform, "platform")
    plat_local = plat.value.rsplit("#", 1)[-1]
    node = NamedNode(f"urn:reckon:{tenant}:account:{_enc(plat_local)}-{_enc(account_id)}")
    triples: list[tuple[NamedNode, object]] = [
        (RDF_TYPE, mk("AdAccount")),
        (mk("onPlatform"), plat),
        (mk("accountId"), Literal(account_id)),
    ]
    if name is not None:
        triples.append((LABEL, Literal(name)))
    company = _company(txn.view, tenant)
    _replace_node(txn, node, BUSINESS, triples)
    txn.add(Quad(company, mk("connectedAccount"), node, BUSINESS))
    return node


def write_subscription(txn: Txn, tenant: str, *, plan: str, status: str, seats: int | None) -> NamedNode:
    voc = Vocabulary(txn.view)
    st = voc.resolve(mk("SubscriptionStatus"), status, "status")
    node = NamedNode(f"urn:reckon:{tenant}:subscription")
    triples: list[tuple[NamedNode, object]] = [
        (RDF_TYPE, mk("Subscription")),
        (mk("plan"), Literal(plan)),
        (mk("subscriptionStatus"), st),
    ]
    if seats is not None:
        triples.append((mk("seats"), Literal(str(seats), datatype=X_INTEGER)))
    company = _company(txn.view, tenant)
    for q in txn.quads(company, mk("subscription"), None, BUSINESS):
        txn.remove(q)
    _replace_node(txn, node, BUSINESS, triples)
    txn.add(Quad(company, mk("subscription"), node, BUSINESS))
    return node


def write_clock(txn: Txn, now: datetime, *, allow_backwards: bool = False) -> None:
    """Replace ``rk:clock rk:now`` (exactly one value).

    :raises InvalidInput: for a naive ``now``, or when ``now`` is earlier than the
        current clock value and ``allow_backwards`` is false (a clock that moves back
        silently revives expired memories).
    """
    lit = dt_literal(now, "now")
    if not allow_backwards:
        for cur in txn.objects(CLOCK, rk("now"), BUSINESS):
            before = _clock_value(cur)
            if before is not None and now < before:
                raise InvalidInput(
                    f"now: the clock would move backwards from {getattr(cur, 'value', cur)} to {lit.value}; "
                    f"pass allow_backwards=True (CLI: --allow-backwards) to set an earlier time",
                    field="now",
                )
    txn.remove_pattern(CLOCK, rk("now"), None, BUSINESS)
    txn.add(Quad(CLOCK, RDF_TYPE, rk("Clock"), BUSINESS))
    txn.add(Quad(CLOCK, rk("now"), lit, BUSINESS))


def _clock_value(term: object) -> datetime | None:
    if not isinstance(term, Literal):
        return None
    try:
        v = datetime.fromisoformat(term.value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return v if v.tzinfo is not None else None


def _ensure_team(txn: Txn, tenant: str, team_id: str, field: str) -> NamedNode:
    """The team's node, added when new. A new id that differs from a team of the tenant
    only in case, Unicode form or whitespace (same :func:`reckon.vocab.team_key`) is
    refused: ``Growth`` beside ``growth`` would be a second team whose memories the
    first one's members never read. (The business models strip surrounding whitespace
    from ids before they get here.)

    :raises InvalidInput: (field ``field``) for such an id, naming the existing team.
    """
    node = team_iri(tenant, team_id)
    if txn.view.contains(Quad(node, RDF_TYPE, rk("Team"), MEMORIES)):
        return node
    prefix = team_iri(tenant, "").value
    key = vocab.team_key(team_id)
    for q in txn.view.quads(None, RDF_TYPE, rk("Team"), MEMORIES):
        s = q.subject
        if isinstance(s, NamedNode) and s.value.startswith(prefix) and vocab.team_key(vocab.slug_of(s.value)) == key:
            raise InvalidInput(
                f"{field}: team {team_id!r} differs from the tenant's team {vocab.slug_of(s.value)!r} only in "
                "case, Unicode form or whitespace; use that id (team ids are exact)", field=field)
    txn.add(Quad(node, RDF_TYPE, rk("Team"), MEMORIES))
    return node


def write_team(txn: Txn, tenant: str, team_id: str, name: str | None) -> NamedNode:
    """Add (or rename) team ``team_id``.

    :raises InvalidInput: for a new id :func:`_ensure_team` refuses.
    """
    node = _ensure_team(txn, tenant, team_id, "team_id")
    if name is not None:
        txn.remove_pattern(node, LABEL, None, MEMORIES)
        txn.add(Quad(node, LABEL, Literal(name), MEMORIES))
    return node


def write_person(txn: Txn, tenant: str, person_id: str, name: str | None, teams: Iterable[str]) -> NamedNode:
    """Add (or rename) person ``person_id`` and make them a member of ``teams``
    (``team rk:member person``), creating those teams when new.

    :raises InvalidInput: for a new team id :func:`_ensure_team` refuses.
    """
    node = person_iri(tenant, person_id)
    txn.add(Quad(node, RDF_TYPE, rk("Person"), MEMORIES))
    if name is not None:
        txn.remove_pattern(node, LABEL, None, MEMORIES)
        txn.add(Quad(node, LABEL, Literal(name), MEMORIES))
    for t in teams:  # an explicit org-structure write by the operator: new teams are created
        team = _ensure_team(txn, tenant, t, "teams")
        txn.add(Quad(team, rk("member"), node, MEMORIES))
    return node


def _ensure_person(txn: Txn, node: NamedNode) -> None:
    if not txn.view.contains(Quad(node, RDF_TYPE, rk("Person"), MEMORIES)):
        txn.add(Quad(node, RDF_TYPE, rk("Person"), MEMORIES))


def write_project(txn: Txn, tenant: str, project_id: str, name: str | None, members: Iterable[str]) -> NamedNode:
    """``<project> a rk:Project`` (renamed when ``name`` is given) with ``rk:member`` each
    of ``members`` (created as rk:Person when new); members are added, never removed."""
    node = vocab.project_iri(tenant, project_id)
    txn.add(Quad(node, RDF_TYPE, rk("Project"), MEMORIES))
    if name is not None:
        txn.remove_pattern(node, LABEL, None, MEMORIES)
        txn.add(Quad(node, LABEL, Literal(name), MEMORIES))
    for p in members:
        person = person_iri(tenant, p)
        _ensure_person(txn, person)
        txn.add(Quad(node, rk("member"), person, MEMORIES))
    return node


def remove_project_member(txn: Txn, tenant: str, project_id: str, person_id: str) -> NamedNode:
    node = vocab.project_iri(tenant, project_id)
    txn.remove(Quad(node, rk("member"), person_iri(tenant, person_id), MEMORIES))
    return node


def write_participant(txn: Txn, tenant: str, conversation: str, person_id: str) -> NamedNode:
    """``<conversation> a rk:Conversation ; rk:participant <person>`` (the person created
    as rk:Person when new)."""
    node = vocab.conversation_iri(tenant, conversation)
    txn.add(Quad(node, RDF_TYPE, rk("Conversation"), MEMORIES))
    person = person_iri(tenant, person_id)
    _ensure_person(txn, person)
    txn.add(Quad(node, rk("participant"), person, MEMORIES))
    return node


def initial_quads(tenant: str, company_name: str | None) -> list[Quad]:
    """The company node (MEMORIES) and the clock node (BUSINESS) of a new tenant."""
    company = company_iri(tenant)
    return [
        Quad(company, RDF_TYPE, rk("Company"), MEMORIES),
        Quad(company, LABEL, Literal(company_name if company_name is not None else tenant), MEMORIES),
        Quad(CLOCK, RDF_TYPE, rk("Clock"), BUSINESS),
    ]
