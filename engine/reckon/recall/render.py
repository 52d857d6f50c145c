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
from typing import Any

from pyoxigraph import NamedNode

from reckon import vocab as R
from reckon.memory.models import Memory
from reckon.recall.models import BundleConflict, BundleItem, BusinessLine, ContextBundle
from reckon.schema.templates import compile_template, money, num, percent, render, template_problems
from reckon.vocab import BUSINESS, INFERRED, MEMORIES

_LIVE_CONTEXT = R.rk("liveContext")
_LIVE_MEMBER = R.rk("liveMember")

__all__ = [
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

_HEADER = (
    "# Memory context for {person} (tenant {tenant}{clock})\n"
    "Preloaded below: every active Critical and High memory you may use (company, your teams, yours), "
    "with live statuses derived from current data. Treat them as binding; cite an item by its [id] "
    "to update or supersede it.\n"
    "Not preloaded: Medium and Low memories. Look them up with the `search` tool when the task may "
    "depend on a preference, fact or detail not shown here.\n"
    "Precedence: personal over team over company."
)
_HEADER_SHORT = (
    "# Memory context for {person}\nCritical/High memories below; search for Medium/Low. "
    "Personal > team > company."
)


def _render_lines(b: ContextBundle, kept: dict[str, list[BundleItem]], business: list[BusinessLine],
                  conflicts: list[BundleConflict], omitted: dict[str, int], header: str,
                  lines_of: dict[str, str]) -> list[str]:
    out = [header]
    for blk in b.blocks:
        its = kept.get(blk.key, [])
        if not its:
            continue
        out.append("")
        out.append(f"## {blk.label}")
        out.extend(lines_of[i.id] for i in its)
    if business:
        out.append("")
        out.append("## Live business data")
        out.extend(f"- {x.text}" for x in business)
    if conflicts:
        out.append("")
        out.append("## Scope conflicts (the more specific memory applies)")
        out.extend(c.line() for c in conflicts)
    total = sum(omitted.values())
    if total:
        parts = ", ".join(f"{k} {v}" for k, v in omitted.items() if v)
        out.append("")
        out.append(f"({total} item(s) omitted to fit the context budget: {parts}; use `search` with "
                   f"importance 'all' to retrieve them.)")
    return out


def fit(b: ContextBundle, max_item_chars: int) -> None:
    """Drop items until the rendered text fits ``b.budget_chars``; fill ``text`` and
    the omitted counts (drop order in the module docstring)."""
    clock = f", clock {b.clock.strftime('%Y-%m-%d %H:%M')} UTC" if b.clock else ""
    header = _HEADER.format(person=b.principal, tenant=b.tenant, clock=clock)
    lines_of = {it.id: it.line(max_item_chars) for blk in b.blocks for it in blk.items}
    kept: dict[str, list[BundleItem]] = {blk.key: list(blk.items) for blk in b.blocks}
    label_of = {blk.key: blk.label for blk in b.blocks}
    business = list(b.business)
    conflicts = list(b.conflicts)
    omitted: dict[str, int] = {}

    # drop sequence: High items, least important block first, lowest ranked first;
    # then business lines; then Critical items in the same order.
    seq: list[tuple[str, Any]] = []
    for blk in reversed(b.blocks):  # tiers below High (only if a tenant lowered the floor)
        seq += [(blk.key, it) for it in reversed(blk.items) if it.importance < 4]
    for blk in reversed(b.blocks):
        seq += [(blk.key, it) for it in reversed(blk.items) if it.importance == 4]
    seq += [("business", x) for x in reversed(business)]
    seq += [("conflicts", c) for c in reversed(conflicts)]
    for blk in reversed(b.blocks):
        seq += [(blk.key, it) for it in reversed(blk.items) if it.importance >= 5]
    dropped: set[str] = set()

    # running length of the rendered text without the footer: sum of line lengths and
    # the number of lines (joined by "\n"); sections cost 2 lines ("" and the title).
    sizes = {"__header__": [len(header), 1]}
    for blk in b.blocks:
        if blk.items:
            sizes[blk.key] = [len(f"## {blk.label}") + sum(len(lines_of[i.id]) for i in blk.items),
                              2 + len(blk.items)]
    if business:
        sizes["business"] = [len("## Live business data") + sum(len(f"- {x.text}") for x in business),
                             2 + len(business)]
    conflict_title = "## Scope conflicts (the more specific memory applies)"
    if conflicts:
        sizes["conflicts"] = [len(conflict_title) + sum(len(c.line()) for c in conflicts), 2 + len(conflicts)]

    def shrink(section: str, chars: int) -> None:
        sz = sizes[section]
        sz[0] -= chars
        sz[1] -= 1
        if sz[1] == 2:  # only the section title left: drop the section
            del sizes[section]

    def length() -> int:
        chars = sum(v[0] for v in sizes.values())
        lines = sum(v[1] for v in sizes.values())
        total = sum(omitted.values())
        if total:
            parts = ", ".join(f"{k} {v}" for k, v in omitted.items() if v)
            chars += len(f"({total} item(s) omitted to fit the context budget: {parts}; use `search` with "
                         f"importance 'all' to retrieve them.)")
            lines += 2
        return chars + lines - 1

    pos = 0
    while length() > b.budget_chars and pos < len(seq):
        where, what = seq[pos]
        pos += 1
        if where == "conflicts" and not any(c is what for c in conflicts):
            continue
        if where == "business":
            business = [x for x in business if x is not what]
            shrink("business", len(f"- {what.text}"))
            omitted["business"] = omitted.get("business", 0) + 1
        elif where == "conflicts":
            conflicts = [c for c in conflicts if c is not what]
            shrink("conflicts", len(what.line()))
            omitted["conflicts"] = omitted.get("conflicts", 0) + 1
        else:
            kept[where] = [x for x in kept[where] if x is not what]
            shrink(where, len(lines_of[what.id]))
            lab = label_of[where]
            omitted[lab] = omitted.get(lab, 0) + 1
            dropped.add(what.id)
            gone = [c for c in conflicts if c.authoritative in dropped and c.overridden in dropped]
            if gone:  # both sides gone: the flag has nothing left to qualify
                conflicts = [c for c in conflicts if not any(c is g for g in gone)]
                for c in gone:
                    shrink("conflicts", len(c.line()))
    text = "\n".join(_render_lines(b, kept, business, conflicts, omitted, header, lines_of))
    if len(text) > b.budget_chars:
        header = _HEADER_SHORT.format(person=b.principal)
    text = "\n".join(_render_lines(b, kept, business, conflicts, omitted, header, lines_of))
    if len(text) > b.budget_chars:  # only with absurdly small budgets and long names
        text = text[: b.budget_chars - 1] + "…"
    for blk in b.blocks:
        blk.omitted = len(blk.items) - len(kept[blk.key])
        blk.items = kept[blk.key]
    b.blocks = [blk for blk in b.blocks if blk.items or blk.omitted]
    b.business = business
    b.omitted = omitted
    b.omitted_total = sum(omitted.values())
    b.text = text

