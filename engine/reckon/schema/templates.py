"""The template language of ``rk:statusTemplate`` / ``rk:lineTemplate`` annotations: a
Jinja2 template (https://jinja.palletsprojects.com/en/3.1.x/templates/) evaluated in
Jinja2's sandbox (no attribute access to Python internals, no imports), with the filters
``num``, ``percent``, ``money(currency)`` and ``minute``.

The schema layer owns the language (``reckon check`` compiles every template of a module
set, :func:`template_problems`); ``reckon.recall.render`` renders with it.

Example::

    >>> render("{{ value }} — {{ u | percent }} %", {"value": "near_limit", "u": 0.85})
    'near_limit — 85 %'
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from jinja2 import TemplateError, Undefined
from jinja2.sandbox import SandboxedEnvironment

__all__ = ["compile_template", "money", "num", "percent", "render", "template_problems"]

log = logging.getLogger("reckon.schema")


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


def template_problems(templates: Mapping[str, str]) -> list[str]:
    """One message per template (by property) that does not compile."""
    out = []
    for prop, text in sorted(templates.items()):
        try:
            compile_template(text)
        except TemplateError as exc:
            out.append(f"{prop}: rk:statusTemplate / rk:lineTemplate does not compile: {exc}")
    return out
