"""What the inspector pages show, computed from a :class:`reckon.api.Tenant` and the
principal looking (no HTTP, no HTML: the routes in :mod:`reckon.server.inspector` render
these with Jinja2 templates, autoescaped).

Every function applies the read policy of the HTTP API (:func:`reckon.memory.authz.can_read`):
operators see every memory of the tenant; members see company memories, their teams'
and their own. A memory the principal may not see is reported exactly like an absent
one (:class:`~reckon._errors.UnknownMemory`, a 404 page), and wherever another memory
shows up inside what is visible (a proof tree, a supersession chain) it is redacted to
"a memory you cannot see", with no label, content or link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import PurePath
from typing import Any

from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple

from reckon import vocab as R
from reckon._errors import ExplainError, InvalidInput, ReadOnlyQuery, UnknownMemory
from reckon.memory.models import IMPORTANCE_NAMES, KINDS, SCOPES, Memory, Principal
from reckon.recall.bundle import block_label
from reckon.store.graphs import INFERRED, MEMORIES
from reckon.vocab import PREFIXES as _VOCAB_PREFIXES

__all__ = [
    "PREFIXES",
    "STATES",
    "Term",
    "bundle_page",
    "business_page",
    "format_term",
    "lanes_page",
    "memory_page",
    "memory_state",
    "overview_page",
    "people",
    "principal_for",
    "settings_page",
    "sparql_page",
    "visible",
]

PREFIXES: dict[str, str] = dict(_VOCAB_PREFIXES)
_NS = sorted(PREFIXES.items(), key=lambda kv: -len(kv[1]))
_LOCAL = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_XSD = PREFIXES["xsd"]
_PLAIN = {_XSD + "string", _XSD + "integer", _XSD + "decimal", _XSD + "double", _XSD + "boolean"}
_MK = PREFIXES["mk"]
_RK = PREFIXES["rk"]

#: Lifecycle states shown in the lanes, in display order.
STATES: tuple[str, ...] = ("active", "superseded", "expired", "inactive")

#: Derived properties that link or rank rather than state a status (shown apart).
_LINKS = ("compared", "liveRank", "rankOf")

#: Largest proof tree rendered (nodes); deeper supports are summarised.
MAX_TREE_NODES = 400
#: Rows of a SPARQL result shown in the console.
MAX_SPARQL_ROWS = 1000


def visible(m: Memory, p: Principal) -> bool:
    """The read policy of every surface (:func:`reckon.memory.authz.can_read`)."""
    from reckon.memory.authz import can_read_memory

    return can_read_memory(p, m)


# ---------------------------------------------------------------------------------------
# terms
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """An RDF term as shown on a page.

    :ivar text: what is printed (a prefixed name, a short memory id, a literal's value).
    :ivar kind: ``iri``, ``literal``, ``bnode``, ``memory`` or ``hidden``.
    :ivar title: the full form (IRI, typed literal) for a tooltip.
    :ivar memory_id: for ``kind == "memory"``: the memory id to link to.
    """

    text: str
    kind: str
    title: str = ""
    memory_id: str | None = None


HIDDEN = Term("a memory you cannot see", "hidden")


class _Formatter:
    """Formats terms for one tenant and principal: memory IRIs become links (when
    visible) or :data:`HIDDEN`, tenant IRIs drop their ``urn:reckon:<tenant>:`` prefix."""

    def __init__(self, tenant: Any, principal: Principal) -> None:
        self.tenant = tenant
        self.principal = principal
        self.memory_prefix = R.memory_prefix(tenant.id)
        self.tenant_prefix = f"urn:reckon:{tenant.id}:"
        self._seen: dict[str, bool] = {}

    def memory_visible(self, hex_id: str) -> bool:
        if hex_id not in self._seen:
            try:
                self._seen[hex_id] = visible(self.tenant.get(hex_id), self.principal)
            except UnknownMemory:  # a dangling reference (deleted memory): nothing to hide
                self._seen[hex_id] = True
        return self._seen[hex_id]

    def hides(self, t: Any) -> bool:
        return isinstance(t, NamedNode) and t.value.startswith(self.memory_prefix) and not self.memory_visible(
            t.value[len(self.memory_prefix):])

    def term(self, t: Any) -> Term:
        return format_term(t, tenant_prefix=self.tenant_prefix, memory_prefix=self.memory_prefix,
                           hide=self.hides)

    def triple(self, t: Triple) -> tuple[Term, Term, Term]:
        if any(self.hides(x) for x in (t.subject, t.object)):
            s = HIDDEN if self.hides(t.subject) else self.term(t.subject)
            o = HIDDEN if self.hides(t.object) else (self.term(t.object) if not isinstance(t.object, Literal)
                                                     else Term("…", "hidden"))
            return s, self.term(t.predicate), o
        return self.term(t.subject), self.term(t.predicate), self.term(t.object)


def format_term(t: Any, *, tenant_prefix: str = "", memory_prefix: str = "",
                hide: Any = None) -> Term:
    """A :class:`Term` for an RDF term: ``rdf:type`` as ``a``, known namespaces as
    prefixed names, memory IRIs as ``memory <8 hex digits>…``, other tenant IRIs without
    the ``urn:reckon:<tenant>:`` prefix, literals by their value (datatype in the title)."""
    if isinstance(t, NamedNode):
        v = t.value
        if hide is not None and hide(t):
            return HIDDEN
        if memory_prefix and v.startswith(memory_prefix):
            hex_id = v[len(memory_prefix):]
            return Term(f"memory {hex_id[:8]}…", "memory", v, hex_id)
        if v == PREFIXES["rdf"] + "type":
            return Term("a", "iri", v)
        for p, ns in _NS:
            if v.startswith(ns) and _LOCAL.fullmatch(v[len(ns):]):
                return Term(f"{p}:{v[len(ns):]}", "iri", v)
        if tenant_prefix and v.startswith(tenant_prefix):
            return Term(v[len(tenant_prefix):], "iri", v)
        return Term(f"<{v}>", "iri", v)
    if isinstance(t, BlankNode):
        return Term(f"_:{t.value}", "bnode")
    if isinstance(t, Literal):
        if t.language:
            return Term(t.value, "literal", f'"{t.value}"@{t.language}')
        dt = t.datatype.value
        short = next((f"{p}:{dt[len(ns):]}" for p, ns in _NS if dt.startswith(ns)), f"<{dt}>")
        return Term(t.value, "literal", t.value if dt in _PLAIN else f'"{t.value}"^^{short}')
    if isinstance(t, Triple):
        return Term(f"<< {t} >>", "literal", str(t))
    return Term(str(t), "literal")


# ---------------------------------------------------------------------------------------
# people, clock, state
# ---------------------------------------------------------------------------------------


def _select(tenant: Any, query: str) -> Any:
    """Run one of this module's constant queries in-process over a committed snapshot
    (the store's own read path; user queries of the console go to a query worker)."""
    with tenant.store.snapshot() as view:
        return view.query(query)

_Q_PEOPLE = """
SELECT ?p ?name ?team WHERE {
  GRAPH """ + str(R.MEMORIES) + """ {
    ?p a rk:Person .
    OPTIONAL { ?p rdfs:label ?name }
    OPTIONAL { ?team rk:member ?p }
  }
}"""


def people(tenant: Any) -> list[dict[str, Any]]:
    """The tenant's people: ``[{"id", "name", "teams"}]`` sorted by id."""
    out: dict[str, dict[str, Any]] = {}
    for row in _select(tenant, _Q_PEOPLE):
        pid = R.slug_of(row["p"].value)
        d = out.setdefault(pid, {"id": pid, "name": None, "teams": set[str]()})
        if "name" in row:
            d["name"] = row["name"].value
        if "team" in row:
            d["teams"].add(R.slug_of(row["team"].value))
    return [{**d, "teams": sorted(d["teams"])} for _, d in sorted(out.items())]


def principal_for(tenant: Any, viewer: Principal, person: str | None) -> Principal:
    """The principal whose bundle is shown: ``viewer`` itself, or (operators only) another
    person of the tenant as a member with the teams the tenant records for them.

    :raises InvalidInput: when a member asks for another person's bundle, or the person
        id is empty.
    """
    if person is None or person == "" or person == viewer.person:
        return viewer
    if viewer.role != "operator":
        raise InvalidInput(f"person: only operators may see another person's bundle (you are {viewer.person!r})",
                           field="person")
    teams: list[str] = next((p["teams"] for p in people(tenant) if p["id"] == person), [])
    return Principal(person=person, teams=list(teams), role="member")


def clock(tenant: Any) -> datetime | None:
    """The in-graph clock ``rk:clock rk:now`` (UTC), or ``None`` when unset."""
    rows = _select(tenant, "SELECT ?now WHERE { rk:clock rk:now ?now }")
    if not rows:
        return None
    v = R.python_value(rows[0]["now"])
    return v.astimezone(UTC) if isinstance(v, datetime) else None


def memory_state(m: Memory, now: datetime | None) -> str:
    """``active`` (``rk:ActiveMemory``), ``superseded``, ``expired`` (expiry at or before
    the in-graph clock) or ``inactive`` (none of those, e.g. not yet reasoned)."""
    if m.active:
        return "active"
    if m.superseded_by:
        return "superseded"
    if m.expires_at is not None and now is not None and m.expires_at <= now:
        return "expired"
    return "inactive"


def _block(tenant: Any, m: Memory) -> tuple[str, str]:
    """``(key, label)`` of the bundle block a memory belongs to."""
    if m.subclass_iri:
        label = tenant.memory.schema.label_of(NamedNode(m.subclass_iri))
        return f"subclass:{m.subclass_iri}", block_label(label, m.subclass or "")
    return m.kind, {"objective": "Objectives", "preference": "Preferences", "fact": "Facts",
                    "context": "Context"}[m.kind]


def _card(tenant: Any, m: Memory, now: datetime | None) -> dict[str, Any]:
    key, label = _block(tenant, m)
    shown = {k: v for k, v in m.status.items() if not k.startswith(_LINKS)}
    return {"m": m, "state": memory_state(m, now), "block": label, "block_key": key,
            "importance_name": IMPORTANCE_NAMES.get(m.importance, str(m.importance)),
            "status": shown}


# ---------------------------------------------------------------------------------------
# pages
# ---------------------------------------------------------------------------------------


def overview_page(tenant: Any, viewer: Principal) -> dict[str, Any]:
    """Counts of the memories the viewer may see by kind and state, the clock, company."""
    now = clock(tenant)
    ms = [m for m in tenant.memories(active_only=False) if visible(m, viewer)]
    counts = {k: {s: 0 for s in STATES} for k in KINDS}
    for m in ms:
        counts[m.kind][memory_state(m, now)] += 1
    rows = _select(tenant, "SELECT ?name WHERE { GRAPH " + str(R.MEMORIES) + " { ?c a rk:Company ; "
                         "rdfs:label ?name } }")
    epoch = datetime.min.replace(tzinfo=UTC)
    return {"clock": now, "counts": counts, "total": len(ms), "states": STATES, "kinds": KINDS,
            "company": rows[0]["name"].value if rows else tenant.id,
            "recent": sorted(ms, key=lambda m: m.updated_at or m.created_at or epoch, reverse=True)[:8]}


def bundle_page(tenant: Any, viewer: Principal, person: str | None, conversation: str,
                budget_chars: int) -> dict[str, Any]:
    """The bundle of ``person`` (default: the viewer) exactly as ``Tenant.context``
    renders it, with the text split into segments so that each ``[memory id]`` becomes a
    link, plus the structured blocks.

    :raises InvalidInput: for a bad budget or a member asking for someone else.
    """
    who = principal_for(tenant, viewer, person)
    b = tenant.context(who, conversation=conversation, budget_chars=budget_chars, record_access=False)
    ids = set(b.ids())
    segments: list[tuple[str, str | None]] = []
    text = b.render()
    pos = 0
    for mt in re.finditer(r"\[([0-9a-f]{32})\]", text):
        if mt.group(1) not in ids:
            continue
        segments.append((text[pos:mt.start() + 1], None))
        segments.append((mt.group(1), mt.group(1)))
        pos = mt.end() - 1
    segments.append((text[pos:], None))
    return {"bundle": b, "who": who, "segments": segments, "conversation": conversation,
            "budget": budget_chars, "text": text}


def lanes_page(tenant: Any, viewer: Principal, *, group: str = "block", state: str = "active",
               kind: str | None = None, scope: str | None = None, importance: int | None = None,
               q: str | None = None) -> dict[str, Any]:
    """Memories the viewer may see in lanes (``group`` = block, kind, scope, importance
    or state), filtered by lifecycle ``state`` (or ``all``), kind, scope and importance;
    with ``q``, the hybrid search's hits over all tiers with their score explanations.

    :raises InvalidInput: for an unknown group, state, kind, scope or importance.
    """
    if group not in ("block", "kind", "scope", "importance", "state"):
        raise InvalidInput(f"group: expected block, kind, scope, importance or state, got {group!r}", field="group")
    if state not in (*STATES, "all"):
        raise InvalidInput(f"state: expected one of {', '.join(STATES)} or all, got {state!r}", field="state")
    if kind is not None and kind not in KINDS:
        raise InvalidInput(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}", field="kind")
    if scope is not None and scope not in SCOPES:
        raise InvalidInput(f"scope: expected one of {', '.join(SCOPES)}, got {scope!r}", field="scope")
    if importance is not None and importance not in IMPORTANCE_NAMES:
        raise InvalidInput(f"importance: expected 1-5, got {importance!r}", field="importance")
    now = clock(tenant)
    cards = []
    for m in tenant.memories(active_only=False):
        if not visible(m, viewer):
            continue
        c = _card(tenant, m, now)
        if state != "all" and c["state"] != state:
            continue
        if (kind and m.kind != kind) or (scope and m.scope != scope) or (importance and m.importance != importance):
            continue
        cards.append(c)
    lanes: dict[str, dict[str, Any]] = {}
    order: dict[str, Any] = {}

    def lane_of(c: dict[str, Any]) -> tuple[str, str, Any]:
        m = c["m"]
        if group == "block":
            return c["block_key"], c["block"], (0 if c["block_key"].startswith("subclass:") else 1,
                                                list(KINDS).index(m.kind) if not m.subclass_iri else 0, c["block"])
        if group == "kind":
            return m.kind, m.kind.capitalize(), list(KINDS).index(m.kind)
        if group == "scope":
            return m.scope, m.scope.capitalize(), list(SCOPES).index(m.scope)
        if group == "importance":
            return str(m.importance), f"{m.importance} {c['importance_name']}", -m.importance
        return c["state"], c["state"].capitalize(), list(STATES).index(c["state"])

    for c in cards:
        key, label, rank = lane_of(c)
        lanes.setdefault(key, {"key": key, "label": label, "cards": []})["cards"].append(c)
        order[key] = rank
    for lane in lanes.values():
        lane["cards"].sort(key=lambda c: (-c["m"].importance, c["m"].label.casefold(), c["m"].id))
    hits = None
    if q:
        opts: dict[str, Any] = {"k": 50, "importance": "all", "explain": True}
        if kind:
            opts["kinds"] = [kind]
        if scope:
            opts["scopes"] = [scope]
        hits = [{"hit": h, "card": _card(tenant, h.memory, now)}
                for h in tenant.search(q, principal=viewer, record_access=False, **opts)
                if visible(h.memory, viewer) and (importance is None or h.memory.importance == importance)]
    return {"lanes": [lanes[k] for k in sorted(lanes, key=lambda k: order[k])], "count": len(cards),
            "group": group, "state": state, "kind": kind, "scope": scope, "importance": importance, "q": q or "",
            "hits": hits, "states": STATES, "kinds": KINDS, "scopes": SCOPES, "importances": IMPORTANCE_NAMES,
            "clock": now}


# -- memory page ---------------------------------------------------------------------------


def _tree(expl: Any, fmt: _Formatter, budget: list[int]) -> dict[str, Any]:
    """An explanation (``reckon.datalog.explain.Explanation``) as nested dicts for the
    template, redacting memories the viewer cannot see and stopping at
    :data:`MAX_TREE_NODES` nodes."""
    budget[0] -= 1
    node: dict[str, Any] = {"triple": fmt.triple(expl.triple), "rule": expl.rule, "where": None,
                            "bindings": [], "supports": [], "conditions": list(expl.conditions),
                            "absent": list(expl.absent), "data": expl.rule == "DATA"}
    if expl.rule != "DATA":
        name = expl.rule[1:-1] if expl.rule.startswith("<") and expl.rule.endswith(">") else expl.rule
        node["rule"] = _rule_name(name)
    if expl.location is not None:
        node["where"] = f"{PurePath(str(expl.location.file)).name}:{expl.location.line}"
    hidden = any(fmt.hides(x) for x in (expl.triple.subject, expl.triple.object))
    node["bindings"] = [(v.value, HIDDEN if fmt.hides(t) or (hidden and isinstance(t, Literal)) else fmt.term(t))
                        for v, t in expl.bindings]
    if hidden:  # conditions and NOT patterns are instantiated with the hidden memory's values
        node["conditions"] = ["(hidden)"] * len(expl.conditions)
        node["absent"] = ["(hidden)"] * len(expl.absent)
    for s in expl.supports:
        child = None
        if s.explanation is not None:
            child = _tree(s.explanation, fmt, budget) if budget[0] > 0 else {"truncated": True}
        node["supports"].append({"triple": fmt.triple(s.triple), "origin": s.origin, "child": child})
    return node


def _rule_name(iri: str) -> str:
    """``rule:budget-status-near-limit`` for a rule IRI ``…/rules#budget-status-near-limit``;
    a ``file:line`` name unchanged."""
    if "://" not in iri and not iri.startswith("urn:"):
        return iri
    local = re.split(r"[#/]", iri)[-1]
    return f"rule:{local}" if local else iri


def _status_key(p: NamedNode, o: Any) -> tuple[int, str]:
    if p.value == PREFIXES["rdf"] + "type":
        return (0 if o == R.ACTIVE else 2, str(o))
    return (1, p.value)


def memory_page(tenant: Any, viewer: Principal, memory_id: str) -> dict[str, Any]:
    """One memory: its properties, lifecycle state, every derived fact about it (statuses
    first) each with its proof tree, its membership in the live context, and its
    lineage (``Tenant.history``) as a timeline.

    :raises UnknownMemory: when there is no such memory or the viewer may not see it
        (indistinguishable on purpose).
    """
    try:
        m = tenant.get(memory_id)
    except UnknownMemory:
        raise UnknownMemory(f"no memory {memory_id!r} visible to {viewer.person!r}") from None
    if not visible(m, viewer):
        raise UnknownMemory(f"no memory {memory_id!r} visible to {viewer.person!r}")
    now = clock(tenant)
    fmt = _Formatter(tenant, viewer)
    s = NamedNode(m.iri)
    facts = _inferred_about(tenant, s)
    facts.sort(key=lambda t: _status_key(t.predicate, t.object))
    live = _inferred_pointing_at(tenant, s)
    reasoner = tenant.store.reasoner()
    derived = []
    budget = [MAX_TREE_NODES]
    for t in facts + live:
        try:
            tree: dict[str, Any] | None = _tree(reasoner.explain(t), fmt, budget)
            error = None
        except ExplainError as exc:
            tree, error = None, str(exc)
        local = R.local_name(t.predicate.value)
        if t.subject != s:
            name, value, is_status = "in live context", Term("yes", "literal"), True
        elif t.object == R.ACTIVE:
            name, value, is_status = "active", Term("yes", "literal"), True
        else:
            name, value = ("type" if t.predicate == R.A else local), fmt.term(t.object)
            is_status = t.predicate != R.A and local in m.status and not local.startswith(_LINKS)
        derived.append({"triple": fmt.triple(t), "tree": tree, "error": error, "status": is_status,
                        "name": name, "value": value})
    entries = []
    for e in tenant.history(m.id):
        try:
            ok = e.id == m.id or visible(tenant.get(e.id), viewer)
        except UnknownMemory:
            ok = False
        entries.append({"e": e, "visible": ok, "current": e.id == m.id})
    asserted = [fmt.triple(Triple(q.subject, q.predicate, q.object)) for q in _asserted_about(tenant, s)]
    return {"m": m, "card": _card(tenant, m, now), "derived": derived, "history": entries, "asserted": asserted,
            "clock": now, "truncated": budget[0] <= 0}


def _quads(tenant: Any, s: Any, p: Any, o: Any, g: Any) -> list[Quad]:
    with tenant.store.snapshot() as view:
        return list(view.quads(s, p, o, g))


def _inferred_about(tenant: Any, s: NamedNode) -> list[Triple]:
    return [Triple(q.subject, q.predicate, q.object) for q in _quads(tenant, s, None, None, INFERRED)]


def _inferred_pointing_at(tenant: Any, o: NamedNode) -> list[Triple]:
    """Derived facts whose object is the memory: ``rk:liveContext rk:liveMember ?m``."""
    return [Triple(q.subject, q.predicate, q.object) for q in _quads(tenant, R.rk("liveContext"), None, o, INFERRED)]


def _asserted_about(tenant: Any, s: NamedNode) -> list[Quad]:
    return sorted(_quads(tenant, s, None, None, MEMORIES), key=lambda q: (q.predicate.value, str(q.object)))


# -- business ------------------------------------------------------------------------------

_Q_KPIS = """
SELECT ?k ?metric ?mlabel ?value ?asOf ?plabel WHERE {
  GRAPH """ + str(R.BUSINESS) + """ { ?c mk:currentKpi ?k . ?k mk:metric ?metric ; mk:value ?value .
    OPTIONAL { ?k mk:asOf ?asOf } }
  OPTIONAL { ?metric rdfs:label ?mlabel }
  OPTIONAL { GRAPH """ + str(R.BUSINESS) + """ { ?k mk:platform ?p } OPTIONAL { ?p rdfs:label ?plabel } }
} ORDER BY ?mlabel ?plabel"""

_Q_SPEND = """
SELECT ?r ?plabel ?perlabel ?amount ?currency ?start WHERE { GRAPH """ + str(R.BUSINESS) + """ {
  ?c mk:currentSpendRecord ?r . ?r mk:platform ?p ; mk:period ?per ; mk:amount ?amount ; mk:currency ?currency .
  OPTIONAL { ?r mk:periodStart ?start } }
  OPTIONAL { ?p rdfs:label ?plabel } OPTIONAL { ?per rdfs:label ?perlabel }
} ORDER BY ?plabel"""

_Q_SERIES = """
SELECT ?plabel ?currency ?amount ?asOf WHERE { GRAPH """ + str(R.BUSINESS) + """ {
  ?o a mk:SpendObservation ; mk:spendRecord ?r ; mk:observedAmount ?amount ; mk:observedAt ?asOf .
  ?r mk:platform ?p ; mk:currency ?currency . }
  OPTIONAL { ?p rdfs:label ?plabel }
} ORDER BY ?asOf"""

_Q_ACCOUNTS = """
SELECT ?a ?plabel ?id ?name WHERE { GRAPH """ + str(R.BUSINESS) + """ {
  ?c mk:connectedAccount ?a . ?a mk:onPlatform ?p ; mk:accountId ?id . OPTIONAL { ?a rdfs:label ?name } }
  OPTIONAL { ?p rdfs:label ?plabel }
} ORDER BY ?plabel ?id"""

_Q_SUBSCRIPTION = """
SELECT ?plan ?status ?seats WHERE { GRAPH """ + str(R.BUSINESS) + """ {
  ?c mk:subscription ?s . ?s mk:plan ?plan ; mk:subscriptionStatus ?st . OPTIONAL { ?s mk:seats ?seats } }
  OPTIONAL { ?st rdfs:label ?status }
}"""


def _v(row: dict[str, Any], key: str) -> Any:
    t = row.get(key)
    return None if t is None else R.python_value(t) if isinstance(t, Literal) else t.value


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float, Decimal)) and not isinstance(x, bool) else 0.0


def spend_chart(series: list[dict[str, Any]], caps: list[dict[str, Any]], *, width: int = 640,
                height: int = 220) -> dict[str, Any] | None:
    """An SVG line chart (coordinates computed here, drawn by the template) of spend
    observations over time, one line per platform and currency, with the budget caps of
    the same platform as dashed lines. ``None`` when there are no observations.

    :param series: ``[{"platform", "currency", "amount", "as_of"}]``.
    :param caps: ``[{"platform", "currency", "amount", "label"}]``.
    """
    if not series:
        return None
    pad_l, pad_r, pad_t, pad_b = 64, 16, 12, 28
    times: list[float] = [float(s["as_of"].timestamp()) for s in series]
    t0, t1 = min(times), max(times)
    if t1 == t0:
        t1 = t0 + 86400.0
    plats = sorted({(s["platform"], s["currency"]) for s in series})
    relevant = [c for c in caps if (c["platform"], c["currency"]) in plats]
    ymax = max([_num(s["amount"]) for s in series] + [_num(c["amount"]) for c in relevant] + [1.0]) * 1.08

    def x(t: float) -> float:
        return round(pad_l + (t - t0) / (t1 - t0) * (width - pad_l - pad_r), 1)

    def y(v: float) -> float:
        return round(height - pad_b - v / ymax * (height - pad_t - pad_b), 1)

    lines = []
    for i, (plat, cur) in enumerate(plats):
        pts = [(x(s["as_of"].timestamp()), y(_num(s["amount"]))) for s in series
               if (s["platform"], s["currency"]) == (plat, cur)]
        last = [s for s in series if (s["platform"], s["currency"]) == (plat, cur)][-1]
        lines.append({"label": f"{plat} ({cur})", "points": " ".join(f"{a},{b}" for a, b in pts),
                      "n": len(pts), "class": f"series-{i % 6}", "last": pts[-1],
                      "last_amount": _money(last["amount"], cur)})
    cap_lines = [{"y": y(_num(c["amount"])), "label": f"{c['label']}: {_money(c['amount'], c['currency'])}",
                  "class": f"series-{plats.index((c['platform'], c['currency'])) % 6}"} for c in relevant]
    ticks = []
    currencies = {cur for _, cur in plats}
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        v = ymax / 1.08 * frac
        ticks.append({"y": y(v), "label": _money(v, currencies.pop() if len(currencies) == 1 else "")
                      if frac else "0"})
        currencies = {cur for _, cur in plats}
    days = [datetime.fromtimestamp(t0, UTC), datetime.fromtimestamp(t1, UTC)]
    return {"width": width, "height": height, "lines": lines, "caps": cap_lines, "ticks": ticks,
            "x0": pad_l, "x1": width - pad_r, "ybase": height - pad_b,
            "dates": [{"x": x(d.timestamp()), "label": d.strftime("%Y-%m-%d"), "anchor": a}
                      for d, a in zip(days, ("start", "end"))]}


def _money(v: Any, currency: str | None) -> str:
    amount = _num(v)
    text = f"{amount:,.0f}" if abs(amount) >= 100 else f"{amount:,.2f}"
    return f"${text}" if currency == "USD" else f"{text} {currency}".strip()


def business_page(tenant: Any, viewer: Principal) -> dict[str, Any]:
    """Current KPIs, spend records, spend over time (a chart of ``mk:SpendObservation``s
    with the visible budget caps), connected accounts, subscription and the clock."""
    kpis = [{"metric": _v(r, "mlabel") or R.local_name(r["metric"].value), "value": _v(r, "value"),
             "platform": _v(r, "plabel") or "company-wide", "as_of": _v(r, "asOf")}
            for r in _select(tenant, _Q_KPIS)]
    spend = [{"platform": _v(r, "plabel"), "period": _v(r, "perlabel"), "amount": _v(r, "amount"),
              "currency": _v(r, "currency"), "start": _v(r, "start"), "iri": r["r"].value}
             for r in _select(tenant, _Q_SPEND)]
    series = [{"platform": _v(r, "plabel"), "currency": _v(r, "currency"), "amount": _v(r, "amount"),
               "as_of": _v(r, "asOf")} for r in _select(tenant, _Q_SERIES)]
    series = [s for s in series if isinstance(s["as_of"], datetime)]
    caps = []
    for m in tenant.memories(active_only=True, subclass="BudgetConstraintMemory"):
        if not visible(m, viewer):
            continue
        plat = m.properties.get("platform")
        plat_label = tenant.memory.schema.label_of(NamedNode(plat)) if isinstance(plat, str) and ":" in plat else plat
        caps.append({"platform": plat_label or plat, "currency": m.properties.get("currency"),
                     "amount": m.properties.get("amount"), "label": m.label, "id": m.id, "status": m.status})
    accounts = [{"platform": _v(r, "plabel"), "id": _v(r, "id"), "name": _v(r, "name")}
                for r in _select(tenant, _Q_ACCOUNTS)]
    sub = _select(tenant, _Q_SUBSCRIPTION)
    subscription = ({"plan": _v(sub[0], "plan"), "status": _v(sub[0], "status"), "seats": _v(sub[0], "seats")}
                    if sub else None)
    return {"kpis": kpis, "spend": spend, "chart": spend_chart(series, caps), "caps": caps,
            "accounts": accounts, "subscription": subscription, "clock": clock(tenant),
            "observations": len(series)}


# -- settings and modules ------------------------------------------------------------------

_Q_SETTINGS = """
SELECT ?p ?o ?label ?comment WHERE { rk:settings ?p ?o . FILTER(?p NOT IN (rdf:type, rdfs:label, rdfs:comment))
  OPTIONAL { ?p rdfs:label ?label } OPTIONAL { ?p rdfs:comment ?comment } } ORDER BY ?p"""

_Q_ONTOLOGIES = """
SELECT ?o ?label ?comment ?version WHERE { GRAPH """ + str(R.SCHEMA) + """ { ?o a owl:Ontology .
  OPTIONAL { ?o rdfs:label ?label } OPTIONAL { ?o rdfs:comment ?comment } OPTIONAL { ?o owl:versionInfo ?version } } }
ORDER BY ?o"""

_Q_CLASSES = """
SELECT DISTINCT ?c ?label ?comment WHERE { GRAPH """ + str(R.SCHEMA) + """ { ?c rdfs:subClassOf+ rk:Memory .
  OPTIONAL { ?c rdfs:label ?label } OPTIONAL { ?c rdfs:comment ?comment } } } ORDER BY ?c"""


def settings_page(tenant: Any) -> dict[str, Any]:
    """The tenant's settings (``rk:settings``), the ontology modules of its schema graph,
    its memory classes, and the rule program it is reasoned with (files and rule counts)."""
    settings = [{"name": format_term(r["p"]).text, "value": format_term(r["o"]).text,
                 "label": _v(r, "label"), "comment": _v(r, "comment")} for r in _select(tenant, _Q_SETTINGS)]
    ontologies = [{"iri": r["o"].value, "label": _v(r, "label"), "comment": _v(r, "comment"),
                   "version": _v(r, "version")} for r in _select(tenant, _Q_ONTOLOGIES)]
    classes = [{"name": format_term(r["c"]).text, "label": _v(r, "label"), "comment": _v(r, "comment")}
               for r in _select(tenant, _Q_CLASSES)]
    program = tenant.program()
    rules: dict[str, int] = {}
    ruleset = program.ruleset()
    for rule in (ruleset.rules if ruleset is not None else []):
        loc = getattr(rule, "loc", None)
        # rule files are named ``<module>:<path>`` in the stored program; show ``module: file``
        raw = str(loc.file) if loc is not None and getattr(loc, "file", None) else "(inline)"
        module, _, path = raw.rpartition(":")
        name = f"{module}: {PurePath(path).name}" if module else PurePath(raw).name
        rules[name] = rules.get(name, 0) + 1
    modules = [{"name": m.name, "digest": m.digest.removeprefix("sha256:")[:12], "files": ", ".join(m.files),
                "kinds": ", ".join(m.kinds)} for m in tenant.modules()]
    return {"settings": settings, "ontologies": ontologies, "classes": classes,
            "rule_files": sorted(rules.items()), "modules": modules,
            "program_digest": (program.digest or "").removeprefix("sha256:")[:12]}


# -- SPARQL console --------------------------------------------------------------------------

DEFAULT_QUERY = """SELECT ?label ?status ?utilisation WHERE {
  ?m a rk:ActiveMemory ; rdfs:label ?label ; mk:budgetStatus ?s ; mk:utilisation ?utilisation .
  ?s rdfs:label ?status
}"""


def sparql_page(tenant: Any, viewer: Principal, query: str | None, *, allowed: bool) -> dict[str, Any]:
    """Run a read-only query for the console: ``{"form": select|ask|graph, "columns",
    "rows" (lists of :class:`Term` or ``None``), "boolean", "error"}``. Queries go through
    ``Tenant.sparql`` (the store's read-only guard: updates and SERVICE are refused)."""
    out: dict[str, Any] = {"query": query if query is not None else DEFAULT_QUERY, "allowed": allowed,
                           "form": None, "columns": [], "rows": [], "boolean": None, "error": None,
                           "truncated": False, "count": 0}
    if query is None or not allowed:
        return out
    if not query.strip():
        out["error"] = "the query is empty"
        return out
    from reckon._errors import QueryLimitExceeded

    try:
        outcome = tenant.sparql_outcome(query)  # the read-only guard, then a sandboxed worker under the limits
        result, form, names = outcome.to_python(), outcome.form, list(outcome.variables)
    except ReadOnlyQuery as exc:
        out["error"] = f"refused: {exc}"
        return out
    except QueryLimitExceeded as exc:
        out["error"] = f"over a query limit: {exc}"
        return out
    except (InvalidInput, SyntaxError, ValueError) as exc:
        out["error"] = str(exc)
        return out
    tp, mp = f"urn:reckon:{tenant.id}:", R.memory_prefix(tenant.id)
    if form == "ask":
        out.update(form="ask", boolean=bool(result))
        return out
    if form == "graph":
        out["form"] = "graph"
        out["columns"] = ["subject", "predicate", "object"]
        rows: list[list[Term | None]] = [
            [format_term(x, tenant_prefix=tp, memory_prefix=mp) for x in (t.subject, t.predicate, t.object)]
            for t in result]
    else:
        out["form"] = "select"
        out["columns"] = names
        rows = [[format_term(r[n], tenant_prefix=tp, memory_prefix=mp) if n in r else None for n in names]
                for r in result]
    out["count"] = len(rows)
    out["truncated"] = len(rows) > MAX_SPARQL_ROWS
    out["rows"] = rows[:MAX_SPARQL_ROWS]
    return out
