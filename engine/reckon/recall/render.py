"""Status and business lines rendered from the modules' own Turtle, not from Python.

An ontology author annotates a derived status property with ``rk:statusTemplate`` and a
live-context property (``rk:liveContext mk:liveKpi ?k``) with ``rk:lineTemplate``; the
bundle renders every module -- marketing, recruiting, an author's -- through them, with
no code change (issue 10; ``ontology/core.ttl`` declares both annotation properties).

A template is a Jinja2 template (https://jinja.palletsprojects.com/en/3.1.x/templates/)
evaluated in Jinja2's sandbox (no attribute access to Python internals, no imports).
Its variables:

* status templates: ``value`` -- the status itself (its label, e.g. ``near_limit``); the
  memory's properties and derived statuses by local name (``amount``, ``currency``,
  ``currentSpend``, ``utilisation`` ...); ``lookup(property, "prefix:predicate")`` -- the
  label of a schema fact about the individual a property names (``lookup("metric",
  "mk:direction")`` = the metric's direction).
* line templates: the live node's business-data properties by local name (IRIs by label
  or local name, literals as Python values), ``label`` for its ``rdfs:label``.

Filters beside Jinja2's own: ``num`` (``2.5``, ``3.0``, ``40,000``), ``percent``
(``0.85`` -> ``85``; one decimal when needed), ``money(currency)`` (``$40,000``,
``1,200 CHF``), ``minute`` (a date-time to ``2026-03-01 09:00``).

Example (``ontology/marketing.ttl``)::

    mk:targetStatus rk:statusTemplate "{{ value }}{% if currentValue is defined %} — {{ metric }}
        {{ currentValue | num }} vs target {{ targetValue | num }}{% endif %}" .

A template that does not compile or fails to render is logged and the status falls
back to ``name: value`` (``reckon check`` reports the template, see
:func:`template_problems`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from decimal import Decimal
from functools import partial
from typing import Any

from pyoxigraph import NamedNode

from reckon import vocab as R
from reckon.memory.models import Memory
from reckon.recall.models import (
    BundleConflict,
    BundleItem,
    BusinessLine,
    ContextBundle,
    ContextLedger,
    LedgerBlock,
)
from reckon.recall.tokens import CHARS, Measure
from reckon.schema.templates import compile_template, money, num, percent, render, template_problems
from reckon.vocab import BUSINESS, INFERRED, MEMORIES

_LIVE_CONTEXT = R.rk("liveContext")
_LIVE_MEMBER = R.rk("liveMember")

__all__ = [
    "COMPACT_ITEM_CHARS",
    "PRIORITY",
    "business_lines",
    "compile_template",
    "fit",
    "money",
    "num",
    "percent",
    "render",
    "status_line",
    "status_text",
    "template_problems",
]

log = logging.getLogger("reckon.recall")


def _as_rendered(v: Any) -> Any:
    """A value as templates see it: an exact ``Decimal`` (xsd:decimal) as the ``float``
    the bundle has always rendered (``40000.0``, ``0.85``; the filters ``num``,
    ``percent``, ``money`` format it), lists item by item."""
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, list):
        return [_as_rendered(x) for x in v]
    return v


def status_line(
    status: Mapping[str, Any],
    properties: Mapping[str, Any],
    templates: Mapping[str, str],
    lookup: Callable[[str, str], str | None],
) -> str | None:
    """The status text of one memory: every derived status that has a template, in name
    order, joined by ``"; "``; without one, ``name: value`` of each derived value (the
    ``compared…`` links left out); ``None`` when nothing is derived."""
    status = {k: _as_rendered(v) for k, v in status.items()}
    properties = {k: _as_rendered(v) for k, v in properties.items()}
    parts: list[str] = []
    for key in sorted(status):
        text = templates.get(key)
        if text is None:
            continue
        ctx: dict[str, Any] = {**properties, **status, "value": status[key], "lookup": lookup}
        line = render(text, ctx)
        if line is not None:
            parts.append(line)
    if parts:
        return "; ".join(parts)
    rest = {k: v for k, v in status.items() if not k.startswith("compared")}
    if not rest:
        return None
    return "; ".join(f"{k}: {num(v) if not isinstance(v, list) else ', '.join(map(str, v))}"
                     for k, v in sorted(rest.items()))


# ---------------------------------------------------------------------------------------
# statuses and business lines of one bundle
# ---------------------------------------------------------------------------------------

def status_text(view: Any, m: Memory, schema: Any) -> str | None:
    """The memory's derived statuses through the modules' ``rk:statusTemplate``
    annotations (:mod:`reckon.recall.render`)."""
    mem = NamedNode(m.iri)
    specs: dict[str, Any] | None = None

    def lookup(prop: str, predicate: str) -> str | None:
        nonlocal specs
        if specs is None:
            specs = {sp.local: sp for sp in schema.properties(NamedNode(m.subclass_iri or R.MEMORY.value)).values()}
        spec = specs.get(prop)
        if spec is None:
            return None
        for o in view.objects(mem, NamedNode(spec.iri), MEMORIES):
            if isinstance(o, NamedNode):
                fact = schema.fact(o, predicate)
                if isinstance(fact, NamedNode):
                    return str(schema.label_of(fact) or R.local_name(fact.value))
                if fact is not None:
                    return str(_as_rendered(R.python_value(fact)))
        return None

    return status_line(m.status, m.properties, schema.templates("statusTemplate"), lookup)


def business_lines(view: Any, templates: dict[str, str]) -> list[BusinessLine]:
    """One line per live business node (``rk:liveContext ?p ?node``): through the
    ``rk:lineTemplate`` of ``?p`` (:mod:`reckon.recall.render`); a property without one
    lists the node's properties."""
    out: list[BusinessLine] = []

    def label(term: Any) -> Any:
        if term is None:
            return ""
        if isinstance(term, NamedNode):
            ls = view.objects(term, R.LABEL, None)
            return ls[0].value if ls else R.local_name(term.value)
        return _as_rendered(R.python_value(term))

    for q in sorted(view.quads(_LIVE_CONTEXT, None, None, INFERRED), key=lambda q: (q.predicate.value, str(q.object))):
        p, o = q.predicate.value, q.object
        if q.predicate == _LIVE_MEMBER or not isinstance(o, NamedNode):
            continue
        local = R.local_name(p)
        facts = [x for x in view.quads(o, None, None, BUSINESS) if x.predicate != R.A]
        text = templates.get(local)
        line = None
        if text is not None:
            ctx: dict[str, Any] = {}
            for x in facts:
                key = "label" if x.predicate == R.LABEL else R.local_name(x.predicate.value)
                ctx.setdefault(key, label(x.object))
            line = render(text, ctx)
        if line is not None:
            kind = local[4].lower() + local[5:] if local.startswith("live") and len(local) > 4 else local
            out.append(BusinessLine(kind=kind, iri=o.value, text=line))
        else:  # a module's own live data without a template: its literal properties
            props = [f"{R.local_name(x.predicate.value)}={label(x.object)}" for x in facts]
            out.append(BusinessLine(kind=local, iri=o.value, text=f"{local}: " + ", ".join(sorted(props))))
    return out


# ---------------------------------------------------------------------------------------
# rendering under the budget
# ---------------------------------------------------------------------------------------

#: Priorities of the ledger's blocks (seed 001 "context ledger": the system prompt is
#: mandatory, memory comes next, low-priority blocks are dropped first under pressure).
#: The header and the footer are never dropped, only shortened.
PRIORITY: dict[str, int] = {"header": 100, "footer": 95, "critical": 90, "conflicts": 80, "business": 75,
                            "high": 70, "lower": 60}
#: Content length of a Critical item kept in compact form (characters), the last step
#: before a Critical item is dropped.
COMPACT_ITEM_CHARS = 80

_HEADER = (
    "# Memory context for {person} (tenant {tenant}{clock})\n"
    "Preloaded below: {claim} you may use (company, your teams, projects and conversations, yours), "
    "with live statuses derived from current data. Treat them as binding; cite an item by its [id] "
    "to update or supersede it.\n"
    "Not preloaded: Medium and Low memories. Look them up with the `search` tool when the task may "
    "depend on a preference, fact or detail not shown here.\n"
    "Precedence: personal over conversation over project over team over company."
)
_CLAIM_ALL = "every active Critical and High memory"
_CLAIM_SOME = "the active Critical and High memories that fit (the last line says what was left out)"
_HEADER_SHORT = (
    "# Memory context for {person}\nCritical/High memories below; search for Medium/Low. "
    "Personal > conversation > project > team > company."
)
_HEADER_MINIMAL = "# Memory context for {person}"


def _tier(importance: int) -> str:
    return "critical" if importance >= 5 else "high" if importance == 4 else "lower"


def _footer(omitted: dict[str, int], capped: dict[str, int], capped_imp: dict[str, int], cap: int | None,
            form: str) -> str | None:
    total, n_capped = sum(omitted.values()), sum(capped.values())
    if not total and not n_capped:
        return None
    if form == "short":
        bits = [f"{total} item(s) omitted"] if total else []
        if n_capped:
            bits.append(f"{n_capped} capped" + (f" ({capped_imp['Critical']} Critical)"
                                                 if capped_imp.get("Critical") else ""))
        return "(" + "; ".join(bits) + "; `search` importance 'all')"
    bits = []
    if total:
        parts = ", ".join(f"{k} {v}" for k, v in omitted.items() if v)
        bits.append(f"{total} item(s) omitted to fit the context budget: {parts}")
    if n_capped:
        by_imp = ", ".join(f"{k} {v}" for k, v in capped_imp.items() if v)
        by_scope = ", ".join(f"{k} {v}" for k, v in capped.items() if v)
        bits.append(f"{n_capped} {'more ' if total else ''}item(s) left out by the live-context cap of "
                    f"{cap} per scope ({by_scope}" + (f"; {by_imp}" if by_imp else "") + ")")
    return "(" + "; ".join(bits) + "; use `search` with importance 'all' to retrieve them.)"


def _refill(b: ContextBundle, kept: dict[str, list[BundleItem]], omitted: dict[str, int],
            tier_omitted: dict[str, int], dropped: set[str], tier_of: dict[str, str],
            label_of: dict[str, str], fits: Callable[[], bool]) -> None:
    """After the drops: put back dropped items that fit in the room left (a small item
    dropped before a large one that had to go), highest priority and best ranked first;
    once an item of a tier stays out, no item of a lower tier comes back, so nothing
    below a dropped block is shown."""
    for tier in ("high", "lower"):
        left_out = False
        for blk in b.blocks:
            for it in blk.items:
                if it.id not in dropped or tier_of[it.id] != tier:
                    continue
                before = kept[blk.key]
                kept[blk.key] = [x for x in blk.items if x is it or any(x is y for y in before)]
                lab = label_of[blk.key]
                omitted[lab] -= 1
                tier_omitted[tier] -= 1
                if fits():
                    dropped.discard(it.id)
                    for counts, key in ((omitted, lab), (tier_omitted, tier)):
                        if not counts[key]:
                            del counts[key]
                else:
                    kept[blk.key] = before
                    omitted[lab] += 1
                    tier_omitted[tier] += 1
                    left_out = True
        if left_out:
            return


def fit(b: ContextBundle, max_item_chars: int, measure: Measure = CHARS, *,
        item_lines: Callable[[int], Mapping[str, str]] | None = None, costs: dict[str, int] | None = None) -> None:
    """Drop and shorten until the rendered text fits the budget (``b.budget_chars``, or
    ``b.budget_tokens`` counted by ``measure``); fill ``text``, the omitted counts and
    the :class:`~reckon.recall.models.ContextLedger`.

    Order, lowest :data:`PRIORITY` first (seed 001 "context ledger"): items
    below High, then High items (least important block first, lowest ranked first), then
    business lines, then conflict lines; then the boilerplate: the header to its short
    form, the footer to its short form, the header to one line; then Critical items'
    content to :data:`COMPACT_ITEM_CHARS`, one at a time, lowest ranked first; only then
    Critical items, the same order. A
    Critical memory is therefore never dropped while lower-priority text or boilerplate
    remains. A conflict line whose two memories were both dropped goes with them.

    Linear in the number of items: each step's size is the sum of per-section sums kept
    up to date as items go (never a re-render of the whole text), and every distinct
    line is measured once.

    :param item_lines: ``n -> {item id: it.line(n)}`` already rendered (the bundle's
        per-generation cache), asked for ``max_item_chars`` and the compact length;
        missing ones are rendered here.
    :param costs: ``line -> cost in the measure's unit``, shared across calls with the
        same ``measure`` (filled here).
    """
    tokens = measure.unit == "tokens"
    budget = int(b.budget_tokens if tokens and b.budget_tokens is not None else b.budget_chars or 0)
    clock = f", clock {b.clock.strftime('%Y-%m-%d %H:%M')} UTC" if b.clock else ""
    compact_chars = min(max_item_chars, COMPACT_ITEM_CHARS)
    given = item_lines(max_item_chars) if item_lines is not None else {}
    lines_of = {it.id: given.get(it.id) or it.line(max_item_chars) for blk in b.blocks for it in blk.items}
    item_of = {it.id: it for blk in b.blocks for it in blk.items}

    class _Compact(dict[str, str]):
        def __missing__(self, key: str) -> str:
            v = self[key] = item_of[key].line(compact_chars)
            return v

    compact_of = _Compact()
    if item_lines is not None and any(it.importance >= 5 for it in item_of.values()):
        compact_of.update((k, v) for k, v in item_lines(compact_chars).items() if k in item_of)
    tier_of = {it.id: _tier(it.importance) for blk in b.blocks for it in blk.items}
    kept: dict[str, list[BundleItem]] = {blk.key: list(blk.items) for blk in b.blocks}
    label_of = {blk.key: blk.label for blk in b.blocks}
    business = list(b.business)
    conflicts = list(b.conflicts)
    omitted: dict[str, int] = {}
    tier_omitted: dict[str, int] = {}
    dropped: set[str] = set()
    compacted: set[str] = set()
    form = {"header": "full", "footer": "full"}
    capped, capped_imp, cap = dict(b.capped), dict(b.capped_importance), b.cap

    def header() -> str:
        if form["header"] == "minimal":
            return _HEADER_MINIMAL.format(person=b.principal)
        if form["header"] == "short":
            return _HEADER_SHORT.format(person=b.principal)
        claim = _CLAIM_SOME if (omitted or capped) else _CLAIM_ALL
        return _HEADER.format(person=b.principal, tenant=b.tenant, clock=clock, claim=claim)

    def lines() -> list[str]:
        out = [header()]
        for blk in b.blocks:
            its = kept.get(blk.key, [])
            if its:
                out += ["", f"## {blk.label}"]
                out += [compact_of[i.id] if i.id in compacted else lines_of[i.id] for i in its]
        if business:
            out += ["", "## Live business data"]
            out += [f"- {x.text}" for x in business]
        if conflicts:
            out += ["", "## Scope conflicts (the more specific memory applies)"]
            out += [c.line() for c in conflicts]
        foot = _footer(omitted, capped, capped_imp, cap, form["footer"])
        if foot:
            out += ["", foot]
        return out

    cost_cache: dict[str, int] = costs if costs is not None else {}

    def cost(line: str) -> int:
        c = cost_cache.get(line)
        if c is None:
            c = cost_cache[line] = measure.count(line)
        return c

    newline = measure.count("a\nb") - measure.count("a") - measure.count("b") if tokens else 1
    # size(lines()) by sections: per block the summed cost of its kept lines, recomputed
    # only when the block's kept list (or the compacted set) changed
    block_sums: dict[str, tuple[list[BundleItem], int]] = {}  # key -> (the kept list summed, its sum)
    block_of = {it.id: blk.key for blk in b.blocks for it in blk.items}
    section = {blk.key: cost("") + cost(f"## {blk.label}") for blk in b.blocks}
    business_head = cost("") + cost("## Live business data")
    conflicts_head = cost("") + cost("## Scope conflicts (the more specific memory applies)")
    conflict_line: dict[int, str] = {}

    def block_sum(key: str) -> int:
        its = kept[key]
        got = block_sums.get(key)
        if got is not None and got[0] is its:
            return got[1]
        total = sum(cost(compact_of[i.id] if i.id in compacted else lines_of[i.id]) for i in its)
        block_sums[key] = (its, total)
        return total

    def item_cost(it: BundleItem) -> int:
        return cost(compact_of[it.id] if it.id in compacted else lines_of[it.id])

    def c_line(c: BundleConflict) -> str:
        got = conflict_line.get(id(c))
        if got is None:
            got = conflict_line[id(c)] = c.line()
        return got

    def estimate() -> int:
        """``sum(cost(line)) + newline * (lines - 1)`` of :func:`lines`, without rendering."""
        total, n = cost(header()), 1
        for blk in b.blocks:
            its = kept.get(blk.key)
            if its:
                total += section[blk.key] + block_sum(blk.key)
                n += 2 + len(its)
        if business:
            total += business_head + sum(cost(f"- {x.text}") for x in business)
            n += 2 + len(business)
        if conflicts:
            total += conflicts_head + sum(cost(c_line(c)) for c in conflicts)
            n += 2 + len(conflicts)
        foot = _footer(omitted, capped, capped_imp, cap, form["footer"])
        if foot:
            total += cost("") + cost(foot)
            n += 2
        return total + newline * (n - 1)

    def fits() -> bool:
        if estimate() > budget:
            return False
        return not tokens or measure.count("\n".join(lines())) <= budget  # exact, once the estimate fits

    def drop_item(where: str, what: BundleItem) -> None:
        nonlocal conflicts
        if what.id in dropped:
            return
        before = kept[where]
        # drops go lowest ranked first: the item is usually the block's last one
        kept[where] = before[:-1] if before and before[-1] is what else [x for x in before if x is not what]
        got = block_sums.get(where)
        if got is not None and got[0] is before:  # keep the block's sum without re-summing
            block_sums[where] = (kept[where], got[1] - item_cost(what))
        lab = label_of[where]
        omitted[lab] = omitted.get(lab, 0) + 1
        tier_omitted[tier_of[what.id]] = tier_omitted.get(tier_of[what.id], 0) + 1
        dropped.add(what.id)
        # both sides gone: the flag has nothing left to qualify
        conflicts = [c for c in conflicts if not (c.authoritative in dropped and c.overridden in dropped)]

    def drop_business(what: BusinessLine) -> None:
        nonlocal business
        business = [x for x in business if x is not what]
        omitted["business"] = omitted.get("business", 0) + 1

    def drop_conflict(what: BundleConflict) -> None:
        nonlocal conflicts
        if any(c is what for c in conflicts):
            conflicts = [c for c in conflicts if c is not what]
            omitted["conflicts"] = omitted.get("conflicts", 0) + 1

    def set_form(part: str, value: str) -> Callable[[], None]:
        return lambda: form.__setitem__(part, value)

    def compact(item_id: str) -> None:
        key = block_of[item_id]
        got = block_sums.get(key)
        if got is not None and got[0] is kept[key] and item_id not in dropped:
            block_sums[key] = (got[0], got[1] - cost(lines_of[item_id]) + cost(compact_of[item_id]))
        elif got is not None:
            del block_sums[key]
        compacted.add(item_id)

    involved: dict[str, list[BundleConflict]] = {}
    for c in conflicts:
        involved.setdefault(c.authoritative, []).append(c)
        involved.setdefault(c.overridden, []).append(c)

    def drop_gain(where: str, what: BundleItem) -> int:
        """At most what dropping ``what`` takes off :func:`estimate`: its line, its
        block's title, the conflict lines that may go with it and their title (the
        header's claim and the footer only grow when an item goes)."""
        return (item_cost(what) + section[where] + conflicts_head + 4 * newline
                + sum(cost(c_line(c)) + newline for c in involved.get(what.id, ())))

    def compact_gain(item_id: str) -> int:
        return max(0, cost(lines_of[item_id]) - cost(compact_of[item_id]))

    # each step with a bound of what it can take off the size (None: unknown)
    steps: list[tuple[Callable[[], None], Callable[[], int] | None]] = []
    for tier in ("lower", "high"):
        for blk in reversed(b.blocks):
            steps += [(partial(drop_item, blk.key, it), partial(drop_gain, blk.key, it))
                      for it in reversed(blk.items) if tier_of[it.id] == tier]
    steps += [(partial(drop_business, x), None) for x in reversed(business)]
    steps += [(partial(drop_conflict, c), None) for c in reversed(conflicts)]
    steps += [(set_form("header", "short"), None), (set_form("footer", "short"), None),
              (set_form("header", "minimal"), None)]
    for blk in reversed(b.blocks):  # Critical content shortened, lowest ranked first
        steps += [(partial(compact, it.id), partial(compact_gain, it.id))
                  for it in reversed(blk.items) if tier_of[it.id] == "critical"]
    for blk in reversed(b.blocks):
        steps += [(partial(drop_item, blk.key, it), partial(drop_gain, blk.key, it))
                  for it in reversed(blk.items) if tier_of[it.id] == "critical"]
    # apply steps until the text fits, checking only when the steps since the last
    # check could have taken off the excess then measured (the same steps as checking
    # before every one: a check skipped could only have said "does not fit")
    excess = 0
    for step, gain in steps:
        if excess <= 0:
            over = estimate() - budget
            if over <= 0 and fits():
                break
            excess = over
        if gain is None:
            excess = 0
        else:
            excess -= gain()
        step()
    if not compacted and form == {"header": "full", "footer": "full"} and not (
            omitted.get("business") or omitted.get("conflicts")):
        _refill(b, kept, omitted, tier_omitted, dropped, tier_of, label_of, fits)
    text = "\n".join(lines())
    if measure.count(text) > budget:  # only with absurdly small budgets and long names
        lo, hi = 0, len(text)
        while lo < hi:  # the longest prefix that fits with the ellipsis
            mid = (lo + hi + 1) // 2
            if measure.count(text[:mid] + "…") <= budget:
                lo = mid
            else:
                hi = mid - 1
        text = text[:lo] + "…"
    for blk in b.blocks:
        blk.omitted = len(blk.items) - len(kept[blk.key])
        blk.items = kept[blk.key]
    b.blocks = [blk for blk in b.blocks if blk.items or blk.omitted]
    b.business = business
    b.conflicts = conflicts
    b.omitted = omitted
    b.omitted_total = sum(omitted.values())
    b.text = text

    shown = [i for its in kept.values() for i in its]
    ledger_blocks = [LedgerBlock(key="header", priority=PRIORITY["header"], shown=1, size=cost(header()),
                                 form=form["header"])]
    foot = _footer(omitted, capped, capped_imp, cap, form["footer"])
    if foot:
        ledger_blocks.append(LedgerBlock(key="footer", priority=PRIORITY["footer"], shown=1, size=cost(foot),
                                         form=form["footer"]))
    for tier in ("critical", "high", "lower"):
        mine = [i for i in shown if tier_of[i.id] == tier]
        if mine or tier_omitted.get(tier):
            ledger_blocks.append(LedgerBlock(
                key=tier, priority=PRIORITY[tier], shown=len(mine), omitted=tier_omitted.get(tier, 0),
                size=sum(cost(compact_of[i.id] if i.id in compacted else lines_of[i.id]) for i in mine),
                form="compact" if any(i.id in compacted for i in mine) else None))
    if business or omitted.get("business"):
        ledger_blocks.append(LedgerBlock(key="business", priority=PRIORITY["business"], shown=len(business),
                                         omitted=omitted.get("business", 0),
                                         size=sum(cost(f"- {x.text}") for x in business)))
    if conflicts or omitted.get("conflicts"):
        ledger_blocks.append(LedgerBlock(key="conflicts", priority=PRIORITY["conflicts"], shown=len(conflicts),
                                         omitted=omitted.get("conflicts", 0),
                                         size=sum(cost(c.line()) for c in conflicts)))
    b.ledger = ContextLedger(unit=measure.unit, measure=measure.name, budget=budget, used=measure.count(text),
                             blocks=ledger_blocks, omitted=dict(omitted), capped=capped,
                             capped_importance=capped_imp, cap=cap)
