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

import functools
import logging
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from jinja2 import TemplateError, Undefined
from jinja2.sandbox import SandboxedEnvironment

__all__ = ["compile_template", "money", "num", "percent", "render", "template_problems"]

log = logging.getLogger("reckon.recall")


def num(v: Any) -> str:
    """A number for a sentence: ``2.5``, ``3.0``, ``40,000``; other values as text."""
    if isinstance(v, Undefined) or v is None:
        return ""
    if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
        f = float(v)
        return f"{f:g}" if f != int(f) else f"{f:.1f}" if abs(f) < 100 else f"{f:,.0f}"
    return str(v)


def percent(v: Any) -> str:
    """A fraction as a percentage number: ``0.85`` -> ``85``, ``0.8534`` -> ``85.3``."""
    try:
        pct = float(v) * 100
    except (TypeError, ValueError):
        return str(v)
    return f"{pct:.0f}" if abs(pct - round(pct)) < 0.05 else f"{pct:.1f}"


def money(amount: Any, currency: Any = None) -> str:
    """An amount with its currency: ``$40,000``, ``€12.50``, ``1,200 CHF``."""
    cur = None if isinstance(currency, Undefined) else currency
    try:
        v = float(amount)
    except (TypeError, ValueError):
        return str(amount)
    text = f"{v:,.0f}" if v == int(v) else f"{v:,.2f}"
    symbol = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}.get(str(cur or ""))
    return f"{symbol}{text}" if symbol else f"{text} {cur or ''}".strip()


def _minute(v: Any) -> str:
    return str(v)[:16].replace("T", " ")


_ENV = SandboxedEnvironment(autoescape=False, undefined=Undefined, trim_blocks=True, lstrip_blocks=True)
_ENV.filters.update(num=num, percent=percent, money=money, minute=_minute)
_SPACE = re.compile(r"\s+")


@functools.lru_cache(maxsize=512)
def compile_template(text: str) -> Any:
    """The compiled (sandboxed) template of ``text``.

    :raises jinja2.TemplateError: when ``text`` is not a valid template.
    """
    return _ENV.from_string(text)


def render(text: str, context: Mapping[str, Any]) -> str | None:
    """Render template ``text`` with ``context`` on one line (every run of whitespace
    becomes one space); ``None`` when the template does not compile or fails."""
    try:
        out = compile_template(text).render(**context)
    except (TemplateError, TypeError, ValueError, ArithmeticError) as exc:
        log.warning("status template %r failed: %s", text[:80], exc)
        return None
    return _SPACE.sub(" ", out).strip() or None


def status_line(
    status: Mapping[str, Any],
    properties: Mapping[str, Any],
    templates: Mapping[str, str],
    lookup: Callable[[str, str], str | None],
) -> str | None:
    """The status text of one memory: every derived status that has a template, in name
    order, joined by ``"; "``; without one, ``name: value`` of each derived value (the
    ``compared…`` links left out); ``None`` when nothing is derived."""
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


def template_problems(templates: Mapping[str, str]) -> list[str]:
    """One message per template (by property) that does not compile."""
    out = []
    for prop, text in sorted(templates.items()):
        try:
            compile_template(text)
        except TemplateError as exc:
            out.append(f"{prop}: rk:statusTemplate / rk:lineTemplate does not compile: {exc}")
    return out
