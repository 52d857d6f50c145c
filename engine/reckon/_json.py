"""Strict JSON for user input (RFC 8259), one rule for every door: HTTP bodies, MCP tool
arguments, the CLI's ``--json`` values and files.

Python's :func:`json.loads` accepts more than RFC 8259 and fails opaquely on some of what
it refuses; :func:`loads` refuses each case with :class:`reckon.InvalidInput` naming it:

* bytes that are not UTF-8 (RFC 8259 §8.1), with the byte offset;
* text that does not parse, with the line, column and character offset;
* nesting deeper than :data:`MAX_DEPTH` arrays/objects (Python's parser raises a bare
  ``RecursionError`` past ~1000 levels);
* ``NaN``, ``Infinity``, ``-Infinity`` (not JSON, RFC 8259 §6), and a number whose value
  is not finite as a float (``1e999999``) or, with ``exact``, whose decimal exponent is
  beyond ±:data:`MAX_INT_DIGITS`;
* an integer of more than :data:`MAX_INT_DIGITS` digits (Python refuses to convert past
  ``sys.get_int_max_str_digits()`` with a bare ``ValueError``);
* a duplicate key in one object (RFC 8259 §4 leaves the result unpredictable);
* a string with a lone surrogate escape (``"\\ud800"``: not a Unicode scalar value, RFC 8259
  §8.2, and not storable as UTF-8), with its path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from reckon._errors import InvalidInput

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "InvalidJSON", "check", "loads", "surrogate_at"]

#: Deepest nesting of arrays and objects accepted (levels; ``[[1]]`` is 2).
MAX_DEPTH = 64
#: Most digits in one JSON integer.
MAX_INT_DIGITS = 4000


class InvalidJSON(InvalidInput):
    """JSON input refused by :func:`loads`; ``constraint`` names the rule broken
    (``utf8``, ``json_invalid``, ``max_depth``, ``finite_number``, ``max_int_digits``,
    ``unique_keys``, ``unicode_scalar``)."""

    def __init__(self, message: str, field: str | None, constraint: str) -> None:
        self.constraint = constraint
        super().__init__(message, field=field)


def surrogate_at(text: str) -> int | None:
    """The index (characters) of the first surrogate code point (U+D800..U+DFFF) in ``text``,
    or ``None``. Such a code point is not a Unicode scalar value and has no UTF-8 encoding."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _int(s: str) -> int:
    digits = len(s.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})", "max_int_digits")
    return int(s)


def _decimal(s: str) -> Decimal:
    d = Decimal(s)
    if abs(d.adjusted()) > MAX_INT_DIGITS:
        raise _Refused(f"the number {s[:20]}{'...' if len(s) > 20 else ''} has a decimal exponent beyond "
                       f"±{MAX_INT_DIGITS}", "finite_number")
    return d


def _float(s: str) -> float:
    f = float(s)
    if not math.isfinite(f):
        raise _Refused(f"the number {s[:20]}{'...' if len(s) > 20 else ''} is too large for a binary "
                       "floating-point number (not finite)", "finite_number")
    return f


def _constant(s: str) -> Any:
    raise _Refused(f"{s} is not a JSON number (RFC 8259 §6)", "finite_number")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Refused(f"duplicate key {k!r} in one object", "unique_keys")
        out[k] = v
    return out


class _Refused(ValueError):
    def __init__(self, message: str, constraint: str) -> None:
        self.constraint = constraint
        super().__init__(message)


def check(value: Any, what: str = "arguments") -> None:
    """Check an already-parsed JSON value (a dict an SDK decoded) as :func:`loads` checks
    text: depth at most :data:`MAX_DEPTH`, no non-finite number, no lone surrogate.

    :raises InvalidJSON: naming the case and the path inside ``value``.
    """
    _walk(value, what)


def _walk(value: Any, what: str) -> None:
    """Depth, finiteness and surrogate checks, iteratively (no recursion limit)."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        v, path, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth + 1 > MAX_DEPTH:
                raise InvalidJSON(f"{what}: nested more than {MAX_DEPTH} levels deep; the limit is {MAX_DEPTH} "
                                  "arrays/objects", what, "max_depth")
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for k, x in items:
                if isinstance(k, str) and (i := surrogate_at(k)) is not None:
                    raise InvalidJSON(f"{what}: key {path + '.' if path else ''}{k!r} has a lone surrogate "
                                      f"U+{ord(k[i]):04X} at character {i} (not a Unicode character)", what,
                                      "unicode_scalar")
                stack.append((x, f"{path}.{k}" if path else str(k), depth + 1))
        elif isinstance(v, str):
            if (i := surrogate_at(v)) is not None:
                raise InvalidJSON(f"{what}: {path or 'the value'} has a lone surrogate U+{ord(v[i]):04X} at "
                                  f"character {i} (not a Unicode character)", f"{what}.{path}" if path else what,
                                  "unicode_scalar")
        elif isinstance(v, float) and not math.isfinite(v) or isinstance(v, Decimal) and not v.is_finite():
            raise InvalidJSON(f"{what}: {path or 'the value'} is a number too large to represent (not finite)",
                              f"{what}.{path}" if path else what, "finite_number")


def loads(data: str | bytes, *, what: str = "body", exact: bool = False) -> Any:
    """``data`` parsed as strict JSON.

    :param data: JSON text, or its UTF-8 bytes.
    :param what: the name of the input, for messages and ``InvalidInput.field``.
    :param exact: numbers with a fraction or exponent as :class:`decimal.Decimal`
        (every digit kept) instead of ``float``.
    :raises InvalidJSON: (an :class:`reckon.InvalidInput`) on each case of the module docstring; the message names the case,
        the position or path, and the limit.
    """
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidJSON(f"{what}: not UTF-8 (byte {exc.start}: {exc.reason})", what, "utf8") from None
    else:
        text = data
    parse_float: Callable[[str], Any] = _decimal if exact else _float
    try:
        value = json.loads(text, parse_int=_int, parse_float=parse_float, parse_constant=_constant,
                           object_pairs_hook=_pairs)
    except _Refused as exc:
        raise InvalidJSON(f"{what}: {exc}", what, exc.constraint) from None
    except json.JSONDecodeError as exc:
        raise InvalidJSON(f"{what}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno} "
                          f"(character {exc.pos})", what, "json_invalid") from None
    except RecursionError:
        raise InvalidJSON(f"{what}: nested more than {MAX_DEPTH} levels deep; the limit is {MAX_DEPTH} "
                          "arrays/objects", what, "max_depth") from None
    _walk(value, what)
    return value
