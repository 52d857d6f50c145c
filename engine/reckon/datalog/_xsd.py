"""XSD value spaces used by SPARQL expressions: parsing lexical forms and printing canonical forms.

Sources: XML Schema 1.1 Part 2 (Datatypes) sections 3.3 (primitive types) and 3.4
(derived integer types); XPath/XQuery Functions and Operators 3.1 section 10
(date/time values). Canonical forms follow what Oxigraph prints, so that values
computed by rules and values computed by SPARQL queries over the same store agree:
integers and decimals without exponent or trailing zeros (``"3"``, ``"2.5"``),
floats/doubles as the shortest round-tripping positional form (``"2"``, ``"0.1"``,
``"INF"``, ``"NaN"``).

Every parser raises ``ValueError`` on an invalid lexical form; callers turn that
into an expression error.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Final

XSD: Final = "http://www.w3.org/2001/XMLSchema#"
RDF: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"

STRING: Final = XSD + "string"
BOOLEAN: Final = XSD + "boolean"
INTEGER: Final = XSD + "integer"
DECIMAL: Final = XSD + "decimal"
FLOAT: Final = XSD + "float"
DOUBLE: Final = XSD + "double"
DATETIME: Final = XSD + "dateTime"
DATETIMESTAMP: Final = XSD + "dateTimeStamp"
DATE: Final = XSD + "date"
TIME: Final = XSD + "time"
DURATION: Final = XSD + "duration"
DAYTIMEDURATION: Final = XSD + "dayTimeDuration"
YEARMONTHDURATION: Final = XSD + "yearMonthDuration"
LANGSTRING: Final = RDF + "langString"
DIRLANGSTRING: Final = RDF + "dirLangString"

# numeric ranks: the SPARQL type promotion order integer < decimal < float < double
R_INTEGER, R_DECIMAL, R_FLOAT, R_DOUBLE = 0, 1, 2, 3
RANK_DATATYPE: Final = (INTEGER, DECIMAL, FLOAT, DOUBLE)

# XSD 1.1 Part 2, 3.4.x: integer types derived by restriction, with their bounds
INTEGER_TYPES: Final[dict[str, tuple[int | None, int | None]]] = {
    INTEGER: (None, None),
    XSD + "nonPositiveInteger": (None, 0),
    XSD + "negativeInteger": (None, -1),
    XSD + "long": (-(2**63), 2**63 - 1),
    XSD + "int": (-(2**31), 2**31 - 1),
    XSD + "short": (-(2**15), 2**15 - 1),
    XSD + "byte": (-(2**7), 2**7 - 1),
    XSD + "nonNegativeInteger": (0, None),
    XSD + "unsignedLong": (0, 2**64 - 1),
    XSD + "unsignedInt": (0, 2**32 - 1),
    XSD + "unsignedShort": (0, 2**16 - 1),
    XSD + "unsignedByte": (0, 2**8 - 1),
    XSD + "positiveInteger": (1, None),
}

NUMERIC_RANK: Final[dict[str, int]] = {
    **{dt: R_INTEGER for dt in INTEGER_TYPES},
    DECIMAL: R_DECIMAL,
    FLOAT: R_FLOAT,
    DOUBLE: R_DOUBLE,
}

_INTEGER_RE = re.compile(r"[+-]?[0-9]+")
_DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_DOUBLE_RE = re.compile(r"(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?INF|NaN)")


def parse_integer(lex: str, datatype: str = INTEGER) -> int:
    """Value of an ``xsd:integer`` (or derived integer type) lexical form.

    :raises ValueError: when the lexical form is invalid or out of the type's range.
    """
    if not _INTEGER_RE.fullmatch(lex):
        raise ValueError(f"invalid integer lexical form {lex!r}")
    v = int(lex)
    lo, hi = INTEGER_TYPES.get(datatype, (None, None))
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"{lex} is out of range for {datatype}")
    return v


def parse_decimal(lex: str) -> Decimal:
    """Value of an ``xsd:decimal`` lexical form (no exponent allowed).

    :raises ValueError: when the lexical form is invalid.
    """
    if not _DECIMAL_RE.fullmatch(lex):
        raise ValueError(f"invalid decimal lexical form {lex!r}")
    return Decimal(lex)


def parse_double(lex: str) -> float:
    """Value of an ``xsd:double`` lexical form (``INF``, ``-INF``, ``NaN`` included).

    :raises ValueError: when the lexical form is invalid.
    """
    if not _DOUBLE_RE.fullmatch(lex):
        raise ValueError(f"invalid double lexical form {lex!r}")
    return float(lex)


def to_f32(x: float) -> float:
    """Round a Python float to the nearest IEEE single-precision value (overflow -> ±INF)."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]  # type: ignore[no-any-return]
    except OverflowError:
        return math.copysign(math.inf, x)


def parse_float(lex: str) -> float:
    """Value of an ``xsd:float`` lexical form, rounded to single precision.

    :raises ValueError: when the lexical form is invalid.
    """
    return to_f32(parse_double(lex))


def parse_boolean(lex: str) -> bool:
    """Value of an ``xsd:boolean`` lexical form (``true``, ``false``, ``1``, ``0``).

    :raises ValueError: when the lexical form is invalid.
    """
    if lex in ("true", "1"):
        return True
    if lex in ("false", "0"):
        return False
    raise ValueError(f"invalid boolean lexical form {lex!r}")


def parse_numeric(lex: str, datatype: str) -> tuple[int, int | Decimal | float]:
    """(rank, value) of a numeric literal; rank is R_INTEGER .. R_DOUBLE.

    :raises ValueError: when the datatype is not numeric or the lexical form is invalid.
    """
    rank = NUMERIC_RANK.get(datatype)
    if rank is None:
        raise ValueError(f"{datatype} is not a numeric datatype")
    if rank == R_INTEGER:
        return rank, parse_integer(lex, datatype)
    if rank == R_DECIMAL:
        return rank, parse_decimal(lex)
    if rank == R_FLOAT:
        return rank, parse_float(lex)
    return rank, parse_double(lex)


_FMT_CTX = Context(prec=100_000, Emax=999_999, Emin=-999_999)  # exact: formatting never rounds


def format_decimal(d: Decimal) -> str:
    """Canonical ``xsd:decimal`` form (XSD 1.1): no exponent, no trailing zeros, ``"3"`` for 3.0."""
    if d.is_zero():
        return "0"
    return format(d.normalize(context=_FMT_CTX), "f")


def _shortest(x: float, single: bool) -> str:
    import numpy as np  # lazily: importing numpy costs ~0.1 s of every CLI start

    s: str = np.format_float_positional(np.float32(x) if single else x, unique=True, trim="-")
    # numpy breaks a tie between two equally short round-tripping digit strings
    # half-even; Rust (Oxigraph) rounds the last digit half-up: 131072.625f32 -> "131072.63"
    exact = Decimal(x)  # the binary value, exactly
    digits = exact.as_tuple().digits
    sig = sum(c.isdigit() for c in s.lstrip("-0.").replace(".", "")) if s.strip("-0.") else 0
    if sig and len(digits) == sig + 1 and digits[-1] == 5:
        shift = exact.adjusted() - sig + 1
        up = exact.scaleb(-shift).to_integral_value(rounding=ROUND_HALF_UP).scaleb(shift)
        candidate = format(up, "f")
        if "." in candidate:
            candidate = candidate.rstrip("0").rstrip(".")
        back = to_f32(float(candidate)) if single else float(candidate)
        if back == x:
            return candidate
    return s


def format_double(x: float) -> str:
    """Shortest round-tripping positional form of a double, as Oxigraph prints it."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "INF" if x > 0 else "-INF"
    return _shortest(x, False)


def format_float(x: float) -> str:
    """Shortest round-tripping positional form of a single-precision float, as Oxigraph prints it."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "INF" if x > 0 else "-INF"
    return _shortest(x, True)


def format_numeric(rank: int, v: int | Decimal | float) -> str:
    """Canonical lexical form of a numeric value of the given rank."""
    if rank == R_INTEGER:
        return str(v)
    if rank == R_DECIMAL:
        return format_decimal(v)  # type: ignore[arg-type]
    if rank == R_FLOAT:
        return format_float(v)  # type: ignore[arg-type]
    return format_double(v)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# date / time / duration

_DT_RE = re.compile(
    r"(-?[0-9]{4,})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2}(?:\.[0-9]+)?)"
    r"(Z|[+-][0-9]{2}:[0-9]{2})?"
)
_DATE_RE = re.compile(r"(-?[0-9]{4,})-([0-9]{2})-([0-9]{2})(Z|[+-][0-9]{2}:[0-9]{2})?")
_TIME_RE = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2}(?:\.[0-9]+)?)(Z|[+-][0-9]{2}:[0-9]{2})?")
_DURATION_RE = re.compile(
    r"(-)?P(?:([0-9]+)Y)?(?:([0-9]+)M)?(?:([0-9]+)D)?"
    r"(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]+)?)S)?)?"
)


@dataclass(frozen=True)
class DateTimeValue:
    """A point of ``xsd:dateTime`` / ``xsd:date`` / ``xsd:time`` (XSD 1.1 seven-property model).

    ``tz`` is the timezone offset in minutes, ``None`` when absent. For ``xsd:date``
    the time fields are zero; for ``xsd:time`` the date is 1972-12-31 (XSD reference).
    """

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: Decimal
    tz: int | None

    def timeline(self) -> Decimal:
        """Seconds since 0000-03-01T00:00:00Z (proleptic Gregorian); a missing timezone is taken as Z (implicit timezone)."""
        days = _days_from_civil(self.year, self.month, self.day)
        secs = Decimal(days * 86400 + self.hour * 3600 + self.minute * 60) + self.second
        if self.tz is not None:
            secs -= self.tz * 60
        return secs


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe


def _days_in_month(y: int, m: int) -> int:
    if m == 2:
        leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
        return 29 if leap else 28
    return 30 if m in (4, 6, 9, 11) else 31


def _parse_tz(s: str | None) -> int | None:
    if s is None:
        return None
    if s == "Z":
        return 0
    h, m = int(s[1:3]), int(s[4:6])
    if h > 14 or m > 59 or (h == 14 and m != 0):
        raise ValueError(f"invalid timezone {s!r}")
    return (h * 60 + m) * (-1 if s[0] == "-" else 1)


def _check_date(y: int, mo: int, d: int) -> None:
    if not 1 <= mo <= 12 or not 1 <= d <= _days_in_month(y, mo):
        raise ValueError("invalid date")


def _check_time(h: int, mi: int, s: Decimal) -> None:
    if h == 24 and mi == 0 and s == 0:
        return
    if h > 23 or mi > 59 or s >= 60:
        raise ValueError("invalid time")


def parse_datetime(lex: str) -> DateTimeValue:
    """Value of an ``xsd:dateTime`` lexical form.

    :raises ValueError: when the lexical form is invalid.
    """
    m = _DT_RE.fullmatch(lex)
    if not m:
        raise ValueError(f"invalid dateTime lexical form {lex!r}")
    y, mo, d, h, mi = (int(m.group(i)) for i in range(1, 6))
    s = Decimal(m.group(6))
    _check_date(y, mo, d)
    _check_time(h, mi, s)
    tz = _parse_tz(m.group(7))
    if h == 24:  # 24:00:00 is the first instant of the next day
        return _normalize_midnight(y, mo, d, tz)
    return DateTimeValue(y, mo, d, h, mi, s, tz)


def _normalize_midnight(y: int, mo: int, d: int, tz: int | None) -> DateTimeValue:
    d += 1
    if d > _days_in_month(y, mo):
        d, mo = 1, mo + 1
        if mo > 12:
            mo, y = 1, y + 1
    return DateTimeValue(y, mo, d, 0, 0, Decimal(0), tz)


def parse_date(lex: str) -> DateTimeValue:
    """Value of an ``xsd:date`` lexical form (time fields zero).

    :raises ValueError: when the lexical form is invalid.
    """
    m = _DATE_RE.fullmatch(lex)
    if not m:
        raise ValueError(f"invalid date lexical form {lex!r}")
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    _check_date(y, mo, d)
    return DateTimeValue(y, mo, d, 0, 0, Decimal(0), _parse_tz(m.group(4)))


def parse_time(lex: str) -> DateTimeValue:
    """Value of an ``xsd:time`` lexical form (date fields 1972-12-31).

    :raises ValueError: when the lexical form is invalid.
    """
    m = _TIME_RE.fullmatch(lex)
    if not m:
        raise ValueError(f"invalid time lexical form {lex!r}")
    h, mi, s = int(m.group(1)), int(m.group(2)), Decimal(m.group(3))
    _check_time(h, mi, s)
    if h == 24:
        h = 0
    return DateTimeValue(1972, 12, 31, h, mi, s, _parse_tz(m.group(4)))


def format_tz(tz: int | None) -> str:
    """Timezone suffix: ``""``, ``"Z"`` or ``"+hh:mm"`` / ``"-hh:mm"``."""
    if tz is None:
        return ""
    if tz == 0:
        return "Z"
    sign = "-" if tz < 0 else "+"
    a = abs(tz)
    return f"{sign}{a // 60:02d}:{a % 60:02d}"


def _format_seconds(s: Decimal) -> str:
    whole = int(s)
    frac = s - whole
    out = f"{whole:02d}"
    if frac:
        out += format_decimal(frac)[1:]  # ".5"
    return out


def _format_year(y: int) -> str:
    return f"-{-y:04d}" if y < 0 else f"{y:04d}"


def format_datetime(v: DateTimeValue) -> str:
    """Canonical ``xsd:dateTime`` lexical form (timezone kept as given)."""
    return (
        f"{_format_year(v.year)}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:"
        f"{_format_seconds(v.second)}{format_tz(v.tz)}"
    )


def format_date(v: DateTimeValue) -> str:
    """Canonical ``xsd:date`` lexical form."""
    return f"{_format_year(v.year)}-{v.month:02d}-{v.day:02d}{format_tz(v.tz)}"


def format_time(v: DateTimeValue) -> str:
    """Canonical ``xsd:time`` lexical form."""
    return f"{v.hour:02d}:{v.minute:02d}:{_format_seconds(v.second)}{format_tz(v.tz)}"


@dataclass(frozen=True)
class DurationValue:
    """An ``xsd:duration`` value: signed months and signed seconds (XSD 1.1 3.3.6)."""

    months: int
    seconds: Decimal


def parse_duration(lex: str, datatype: str = DURATION) -> DurationValue:
    """Value of an ``xsd:duration`` / ``dayTimeDuration`` / ``yearMonthDuration`` lexical form.

    :raises ValueError: when the lexical form is invalid for the datatype.
    """
    m = _DURATION_RE.fullmatch(lex)
    if not m or lex.endswith("T") or lex in ("P", "-P") or not any(m.group(i) for i in range(2, 8)):
        raise ValueError(f"invalid duration lexical form {lex!r}")
    y, mo, d, h, mi = (int(m.group(i) or 0) for i in range(2, 7))
    s = Decimal(m.group(7) or 0)
    if datatype == DAYTIMEDURATION and (m.group(2) or m.group(3)):
        raise ValueError("dayTimeDuration with year/month")
    if datatype == YEARMONTHDURATION and any(m.group(i) for i in range(4, 8)):
        raise ValueError("yearMonthDuration with day/time")
    sign = -1 if m.group(1) else 1
    return DurationValue(sign * (y * 12 + mo), sign * (Decimal(d * 86400 + h * 3600 + mi * 60) + s))


def format_daytime_duration(seconds: Decimal) -> str:
    """Canonical ``xsd:dayTimeDuration`` lexical form (``PT1H``, ``-PT5H30M``, ``PT0S``)."""
    if seconds == 0:
        return "PT0S"
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    out = sign + "P"
    if days:
        out += f"{int(days)}D"
    if hours or minutes or secs:
        out += "T"
        if hours:
            out += f"{int(hours)}H"
        if minutes:
            out += f"{int(minutes)}M"
        if secs:
            out += format_decimal(Decimal(secs)) + "S"
    return out


def decimal_from_float(x: float) -> Decimal:
    """The ``xsd:decimal`` for a finite double/float: its shortest round-tripping decimal.

    :raises ValueError: when ``x`` is NaN or infinite.
    """
    if math.isnan(x) or math.isinf(x):
        raise ValueError("NaN/INF cannot be cast to a decimal")
    try:
        return Decimal(repr(x))
    except InvalidOperation as e:  # pragma: no cover - repr of a finite float always parses
        raise ValueError(str(e)) from e


def _civil_from_days(z: int) -> tuple[int, int, int]:
    # z counts days from 0000-03-01, the origin of _days_from_civil
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


def add_duration(v: DateTimeValue, d: DurationValue) -> DateTimeValue:
    """``v + d`` (XPath F&O 3.1 10.8.x, XSD 1.1 Appendix E): months first, the day
    clamped to the month's length, then seconds; the timezone is kept."""
    y, mo, day = v.year, v.month, v.day
    if d.months:
        total = y * 12 + (mo - 1) + d.months
        y, mo = divmod(total, 12)
        mo += 1
        day = min(day, _days_in_month(y, mo))
    secs = Decimal(_days_from_civil(y, mo, day) * 86400 + v.hour * 3600 + v.minute * 60) + v.second
    secs += d.seconds
    days, rest = divmod(secs, 86400)
    y, mo, day = _civil_from_days(int(days))
    h, rest = divmod(rest, 3600)
    mi, s = divmod(rest, 60)
    return DateTimeValue(y, mo, day, int(h), int(mi), s, v.tz)


def format_duration(months: int, seconds: Decimal, datatype: str = DURATION) -> str:
    """Canonical lexical form of a duration (``P1Y2M``, ``P1DT1H``, ``-P1D``, ``PT0S`` / ``P0M``)."""
    if datatype == DAYTIMEDURATION or (months == 0 and datatype != YEARMONTHDURATION):
        return format_daytime_duration(seconds)
    if months == 0 and seconds == 0:
        return "P0M"
    sign = "-" if (months < 0 or seconds < 0) else ""
    months, seconds = abs(months), abs(seconds)
    y, m = divmod(months, 12)
    out = sign + "P"
    if y:
        out += f"{y}Y"
    if m:
        out += f"{m}M"
    if seconds:
        out += format_daytime_duration(seconds)[1:]  # drop the "P"
    return out
