"""SPARQL expression evaluation for SRL ``FILTER`` and ``SET``.

Spec: SRL (``../shared/conformance/srl-spec/sparql12-rl/``) "Evaluation of an
Expression" — *an expression is evaluated with respect to a solution mapping*; the
operators and functions are SPARQL's: SPARQL 1.1 Query section 17 "Expressions and
Testing Values" (https://www.w3.org/TR/sparql11-query/#expressions), plus the
SPARQL 1.2 additions ``LANGDIR``, ``hasLANG``, ``hasLANGDIR``, ``STRLANGDIR``,
``isTRIPLE``, ``TRIPLE``, ``SUBJECT``, ``PREDICATE``, ``OBJECT``.

An expression (:data:`reckon.datalog.model.Expr`) is compiled once into a tree of
closures (:func:`compile_expr`) that reads variable values from a row (a tuple of
terms indexed by slot); :func:`evaluate` is the convenience form over a mapping.
Any SPARQL evaluation error (type error, unbound variable, invalid lexical form,
division by zero, unknown function, bad cast) raises :class:`ExprError`; a
``FILTER`` treats it as false and a ``SET`` drops the solution.

Constants are returned as written (SRL ``evalFunction``: *if F is an RDF term,
return F*); computed numeric results use canonical lexical forms as Oxigraph prints
them (``1/2`` -> ``"0.5"^^xsd:decimal``, ``1e0+1`` -> ``"2"^^xsd:double``), so that
a value derived by a rule and the same value computed by a SPARQL query over the
store are the same term. ``xsd:decimal`` products and quotients keep 18 fractional
digits (truncated) and decimal -> double promotion rounds as Oxigraph does.

Deliberate differences from Oxigraph 0.5 (each pinned by a test in
``tests/datalog/test_expr.py``): integers and decimals do not overflow; NaN compares
false instead of raising; a dateTime without timezone compares with one that has a
timezone using the implicit timezone UTC; ``isNUMERIC`` and numeric operators check
the ranges of derived integer types; casts trim whitespace (XPath casting rules);
``REPLACE`` follows XPath (``$10`` with one group is ``$1`` then ``0``, an
empty-matching pattern is an error); XPath regular expressions reject ``(?i)``
and ``\\b`` but accept XPath block escapes (``\\p{IsBasicLatin}``); a float/double
cast to ``xsd:decimal`` gives its shortest round-tripping decimal (``0.1``); casts to
the derived integer types (``xsd:int`` ...) are supported.

Evaluation context: ``BNODE(label)`` is stable within one solution; the caller
calls :meth:`EvalContext.new_solution` between solutions.

Example::

    >>> from pyoxigraph import Literal, Variable
    >>> from reckon.datalog.model import Call
    >>> x = Variable("x")
    >>> evaluate(Call("+", (x, Literal(1))), {x: Literal(2)}, EvalContext())
    <Literal value=3 datatype=<NamedNode value=http://www.w3.org/2001/XMLSchema#integer>>
    >>> evaluate(Call("/", (Literal(1), Literal(2))), {}, EvalContext())
    <Literal value=0.5 datatype=<NamedNode value=http://www.w3.org/2001/XMLSchema#decimal>>
    >>> evaluate(Call("/", (Literal(1), Literal(0))), {}, EvalContext())
    Traceback (most recent call last):
    ...
    reckon.datalog.expr.ExprError: division by zero
"""

from __future__ import annotations

import hashlib
import math
import re
import urllib.parse
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, Context, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from pyoxigraph import BaseDirection, BlankNode, Literal, NamedNode, Triple, Variable

from reckon.datalog import _datatypes as _DTS
from reckon.datalog import _xsd as X
from reckon.datalog.model import Call, Expr, GroundTerm, TripleTermPattern

_RE_ENGINE: list[Any] = []


def _re_engine() -> Any:
    """The regular-expression module, imported on first use (~20 ms; a process that
    evaluates no REGEX / REPLACE / sh:pattern never pays it): the `regex` module, which
    understands ``\\p{..}`` classes, or plain ``re`` as the fallback."""
    if not _RE_ENGINE:
        try:
            import regex as engine  # type: ignore[import-untyped]
        except ImportError:  # pragma: no cover - depends on the environment
            engine = re
        _RE_ENGINE.append(engine)
    return _RE_ENGINE[0]

__all__ = [
    "EvalContext",
    "ExprError",
    "Row",
    "compile_expr",
    "compile_filter",
    "compile_xpath_regex",
    "ebv",
    "evaluate",
    "xpath_regex_for_re",
]

Row = Sequence[GroundTerm | None]
"""Variable values by slot; ``None`` marks an unbound slot."""

Compiled = Callable[[Row, "EvalContext"], GroundTerm]


class ExprError(Exception):
    """A SPARQL expression evaluation error (SPARQL 1.1 section 17.3: type errors,
    unbound variables, invalid lexical forms, division by zero, unknown functions)."""


@dataclass
class EvalContext:
    """State shared by the expressions of one rule-set evaluation.

    :ivar now: the ``xsd:dateTime`` literal ``NOW()`` returns; fixed for the whole
        evaluation (SPARQL 1.1 section 17.4.5.1). Default: the current UTC time,
        captured when the context is constructed.
    :ivar base: base IRI that ``IRI()`` / ``URI()`` resolve relative IRIs against.
    :ivar datatypes: the recognized datatypes D of the entailment regime (IRIs), as the
        ``rkf:`` datatype functions see them; ``None`` = every datatype Reckon supports
        (``reckon.datalog._datatypes.SUPPORTED``). Outside D a datatype IRI is no
        datatype and a literal of it has an unknown value (RDF 1.1 Semantics §7:
        nothing is claimed, so it is never ill-typed): ``rkf:isDatatype`` is false and
        the other functions are undecided (an error: the ``FILTER`` fails).

    ``BNODE(label)`` returns the same blank node for the same label within one
    solution (SPARQL 1.1 section 17.4.2.9); call :meth:`new_solution` before
    evaluating the expressions of each new solution.
    """

    now: Literal | None = None
    base: str | None = None
    datatypes: frozenset[str] | None = None
    _bnodes: dict[str, BlankNode] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.now is None:
            t = datetime.now(UTC)
            self.now = Literal(t.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), datatype=_DT_DATETIME)

    def new_solution(self) -> None:
        """Start a new solution: ``BNODE(label)`` labels seen so far are forgotten."""
        if self._bnodes:
            self._bnodes.clear()

    def bnode_for(self, label: str) -> BlankNode:
        """The blank node for ``label`` within the current solution."""
        b = self._bnodes.get(label)
        if b is None:
            b = self._bnodes[label] = BlankNode()
        return b


# ---------------------------------------------------------------------------
# terms and values

_DT_STRING = NamedNode(X.STRING)
_DT_BOOLEAN = NamedNode(X.BOOLEAN)
_DT_INTEGER = NamedNode(X.INTEGER)
_DT_DECIMAL = NamedNode(X.DECIMAL)
_DT_DATETIME = NamedNode(X.DATETIME)
_DT_DATE = NamedNode(X.DATE)
_DT_TIME = NamedNode(X.TIME)
_DT_DAYTIME = NamedNode(X.DAYTIMEDURATION)
_DT_LANGSTRING = NamedNode(X.LANGSTRING)
_RANK_DT = tuple(NamedNode(d) for d in X.RANK_DATATYPE)

TRUE = Literal("true", datatype=_DT_BOOLEAN)
FALSE = Literal("false", datatype=_DT_BOOLEAN)
_EMPTY = Literal("")

def _bool(b: bool) -> Literal:
    return TRUE if b else FALSE


def _err(msg: str) -> ExprError:
    return ExprError(msg)


Num = tuple[int, Any]  # (rank, int | Decimal | float)


# Literal "kinds": what SPARQL's operators dispatch on. One cached (kind, value) per
# literal, so the hot loop reads the datatype and parses the lexical form once.
K_INT, K_DEC, K_FLOAT, K_DOUBLE = X.R_INTEGER, X.R_DECIMAL, X.R_FLOAT, X.R_DOUBLE
K_STRING, K_BOOL, K_TEMPORAL, K_DURATION, K_LANG, K_OTHER = 4, 5, 6, 7, 8, 9
K_BAD_NUMBOOL = 10  # ill-typed numeric or boolean literal (EBV false; error in operators)
K_BAD = 11  # ill-typed date/time/duration literal

_INFO: dict[Literal, tuple[int, Any]] = {}
_INFO_MAX = 1 << 17


def _compute_info(lit: Literal) -> tuple[int, Any]:
    if lit.language is not None:
        d = lit.direction
        return K_LANG, (lit.language, None if d is None else str(d), lit.value)
    dt = lit.datatype.value
    try:
        rank = X.NUMERIC_RANK.get(dt)
        if rank is not None:
            return X.parse_numeric(lit.value, dt)
        if dt == X.STRING:
            return K_STRING, lit.value
        if dt == X.BOOLEAN:
            return K_BOOL, X.parse_boolean(lit.value)
        if dt in _TEMPORAL:
            v = _TEMPORAL[dt](lit.value)
            kind = X.DATETIME if dt == X.DATETIMESTAMP else dt
            return K_TEMPORAL, (kind, v.timeline(), v)
        if dt in _DURATIONS:
            return K_DURATION, X.parse_duration(lit.value, dt)
    except ValueError as e:
        return (K_BAD_NUMBOOL if (dt in X.NUMERIC_RANK or dt == X.BOOLEAN) else K_BAD), str(e)
    return K_OTHER, None


def _info(lit: Literal) -> tuple[int, Any]:
    """(kind, value) of a literal, cached."""
    r = _INFO.get(lit)
    if r is None:
        r = _compute_info(lit)
        if len(_INFO) >= _INFO_MAX:
            _INFO.clear()
        _INFO[lit] = r
    return r


def _num_of(lit: Literal) -> Num | None:
    """(rank, value) of a numeric literal, ``None`` for non-numeric datatypes; raises
    ValueError for an ill-typed numeric literal."""
    k, v = _info(lit)
    if k <= K_DOUBLE:
        return k, v
    if k == K_BAD_NUMBOOL and lit.datatype.value in X.NUMERIC_RANK:
        raise ValueError(v)
    return None


def _num(t: GroundTerm) -> Num:
    if type(t) is Literal:
        n = _INFO.get(t) or _info(t)
        if n[0] <= K_DOUBLE:
            return n
        if n[0] == K_BAD_NUMBOOL:
            raise _err(n[1])
    raise _err(f"not a numeric literal: {t}")


_DEC_CTX_PREC = 80
_DCTX = Context(prec=_DEC_CTX_PREC, Emax=999_999, Emin=-999_999)
# xsd:decimal results of * and / keep 18 fractional digits, truncated (as Oxigraph's
# 128-bit fixed-point decimals do); + and - are exact.
_DEC_QUANTUM = Decimal("1e-18")


@lru_cache(maxsize=4096)
def _int_lit(v: int) -> Literal:
    """The canonical ``xsd:integer`` literal for ``v`` (cached: building a Literal costs µs)."""
    return Literal(str(v), datatype=_DT_INTEGER)


def _make_num(rank: int, v: Any) -> Literal:
    if rank == X.R_INTEGER:
        return _int_lit(v)
    if rank == X.R_DECIMAL:
        if not v.is_finite():  # pragma: no cover - defensive
            raise _err("decimal overflow")
    return Literal(X.format_numeric(rank, v), datatype=_RANK_DT[rank])


_POW18 = 10**18


def _dec_div(a: int | Decimal, b: int | Decimal) -> Decimal:
    """a / b truncated to 18 fractional digits, with exact integer arithmetic."""
    n1, d1 = a.as_integer_ratio()
    n2, d2 = b.as_integer_ratio()
    num, den = n1 * d2 * _POW18, d1 * n2
    q = abs(num) // abs(den)
    if (num < 0) != (den < 0):
        q = -q
    return Decimal(q).scaleb(-18, context=_DCTX)


def _dec_to_double(d: Decimal) -> float:
    """xsd:decimal -> xsd:double promotion exactly as Oxigraph does it (scaled integer
    without trailing zeros, divided by its power of ten), so that rule results and
    SPARQL query results over the same store agree to the last bit."""
    if d.as_tuple().exponent < -18:  # type: ignore[operator]
        d = d.quantize(_DEC_QUANTUM, rounding=ROUND_DOWN, context=_DCTX)
    a = int(d.scaleb(18, context=_DCTX))
    shift = 10**18
    if a:
        while shift != 1 and a % 10 == 0:
            a //= 10
            shift //= 10
    return float(a) / float(shift)


def _promote(rank: int, to: int, v: Any) -> Any:
    if rank == to:
        return v
    if to == X.R_DECIMAL:
        return Decimal(v)
    if to == X.R_FLOAT:
        return X.to_f32(_dec_to_double(v) if rank == X.R_DECIMAL else float(v))
    if to == X.R_DOUBLE:
        return _dec_to_double(v) if rank == X.R_DECIMAL else float(v)
    raise AssertionError(to)  # pragma: no cover


def _arith(op: str, a: GroundTerm, b: GroundTerm) -> Literal:
    if type(a) is not Literal or type(b) is not Literal:
        raise _err(f"arithmetic on a non-literal: {a} {op} {b}")
    try:
        na, nb = _num_of(a), _num_of(b)
    except ValueError as e:
        raise _err(str(e)) from None
    if na is None or nb is None:
        return _temporal_arith(op, a, b)
    ra, va = na
    rb, vb = nb
    r = ra if ra >= rb else rb
    va = _promote(ra, r, va)
    vb = _promote(rb, r, vb)
    if r >= X.R_FLOAT:
        try:
            if op == "+":
                v = va + vb
            elif op == "-":
                v = va - vb
            elif op == "*":
                v = va * vb
            else:
                v = _float_div(va, vb)
        except OverflowError:
            v = math.inf
        if r == X.R_FLOAT:
            v = X.to_f32(v)
        return _make_num(r, v)
    if r == X.R_INTEGER and op != "/":
        return _int_lit(va + vb if op == "+" else va - vb if op == "-" else va * vb)
    # decimal arithmetic (and integer division, which yields a decimal: SPARQL 17.4.1 op:numeric-divide)
    try:
        if op == "/":
            if vb == 0:
                raise _err("division by zero")
            v = _dec_div(va, vb)
        elif op == "+":
            v = _DCTX.add(va, vb)
        elif op == "-":
            v = _DCTX.subtract(va, vb)
        else:
            v = _DCTX.multiply(va, vb)
            if v.as_tuple().exponent < -18:  # type: ignore[operator]
                v = v.quantize(_DEC_QUANTUM, rounding=ROUND_DOWN, context=_DCTX)
    except InvalidOperation:
        raise _err("decimal overflow") from None
    return _make_num(X.R_DECIMAL, v)


_DT_FORMAT = {X.DATETIME: X.format_datetime, X.DATETIMESTAMP: X.format_datetime, X.DATE: X.format_date,
              X.TIME: X.format_time}


def _temporal_arith(op: str, a: Literal, b: Literal) -> Literal:
    """Date/time and duration arithmetic (XPath F&O 3.1 sections 8.4 and 9.7, as in SPARQL 1.2):
    ``dateTime - dateTime`` (also date, time) -> ``xsd:dayTimeDuration``;
    ``dateTime ± duration`` -> dateTime (also date); ``duration ± duration``.

    :raises ExprError: for any other operand pair or an invalid lexical form.
    """
    da, db = a.datatype.value, b.datatype.value
    try:
        if op == "-" and da in _TEMPORAL and db in _TEMPORAL:
            ka, ta = _temporal_key(a)
            kb, tb = _temporal_key(b)
            if ka == kb:
                return Literal(X.format_daytime_duration(ta - tb), datatype=_DT_DAYTIME)
        elif op in "+-" and da in (X.DATETIME, X.DATETIMESTAMP, X.DATE) and db in _DURATIONS:
            d = _duration_of(b)
            if op == "-":
                d = X.DurationValue(-d.months, -d.seconds)
            v = X.add_duration(_dt_value(a), d)
            return Literal(_DT_FORMAT[da](v), datatype=a.datatype)
        elif op == "+" and db in (X.DATETIME, X.DATETIMESTAMP, X.DATE) and da in _DURATIONS:
            return _temporal_arith(op, b, a)
        elif op in "+-" and da in _DURATIONS and db in _DURATIONS:
            x, y = _duration_of(a), _duration_of(b)
            sign = 1 if op == "+" else -1
            months, secs = x.months + sign * y.months, x.seconds + sign * y.seconds
            dt = da if da == db else X.DURATION
            if (months < 0 < secs) or (secs < 0 < months):
                raise _err("duration with mixed signs")
            return Literal(X.format_duration(months, secs, dt), datatype=NamedNode(dt))
    except ValueError as e:
        raise _err(str(e)) from None
    raise _err(f"no arithmetic for {a} {op} {b}")


def _float_div(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        neg = (a < 0) != (math.copysign(1.0, b) < 0)
        return -math.inf if neg else math.inf
    return a / b


# --- strings ---------------------------------------------------------------

def _is_string_lit(t: GroundTerm) -> bool:
    """Simple literal or xsd:string (RDF 1.1: the same thing)."""
    return type(t) is Literal and t.datatype.value == X.STRING


def _string_arg(t: GroundTerm) -> Literal:
    """A SPARQL 'string literal' argument: simple literal, xsd:string or language-tagged."""
    if type(t) is Literal and (t.language is not None or t.datatype.value == X.STRING):
        return t
    raise _err(f"not a string literal: {t}")


def _simple_arg(t: GroundTerm) -> str:
    if _is_string_lit(t):
        return t.value  # type: ignore[union-attr]
    raise _err(f"not a simple literal: {t}")


def _compatible(a: Literal, b: Literal) -> None:
    """SPARQL 17.4.3.1.1 argument compatibility rules."""
    if b.language is None:
        return
    if a.language is not None and a.language == b.language and a.direction == b.direction:
        return
    raise _err(f"incompatible string arguments {a} and {b}")


def _like(a: Literal, value: str) -> Literal:
    """A string literal with the same language tag / direction as ``a``."""
    if a.language is not None:
        return Literal(value, language=a.language, direction=a.direction) if a.direction else Literal(value, language=a.language)
    return Literal(value)


# --- comparison ------------------------------------------------------------

_TEMPORAL = {X.DATETIME: X.parse_datetime, X.DATETIMESTAMP: X.parse_datetime, X.DATE: X.parse_date, X.TIME: X.parse_time}
_DURATIONS = (X.DURATION, X.DAYTIMEDURATION, X.YEARMONTHDURATION)


def _temporal_key(lit: Literal) -> tuple[str, Decimal]:
    k, v = _info(lit)
    if k == K_TEMPORAL:
        return v[0], v[1]
    raise ValueError(v if k == K_BAD else f"not a date/time literal: {lit}")


def _dt_value(lit: Literal) -> X.DateTimeValue:
    k, v = _info(lit)
    if k == K_TEMPORAL:
        return v[2]  # type: ignore[no-any-return]
    raise ValueError(v if k == K_BAD else f"not a date/time literal: {lit}")


def _duration_of(lit: Literal) -> X.DurationValue:
    k, v = _info(lit)
    if k == K_DURATION:
        return v  # type: ignore[no-any-return]
    raise ValueError(v if k == K_BAD else f"not a duration literal: {lit}")


_NOT_COMPARABLE = object()


def _value_cmp(a: Literal, b: Literal) -> int | None | object:
    """Compare two literals by value: -1/0/1, ``None`` when unordered (NaN) and
    ``_NOT_COMPARABLE`` when SPARQL defines no operator for the pair.

    :raises ExprError: when a literal of a known datatype has an invalid lexical form.
    """
    ka, va = _INFO.get(a) or _info(a)
    kb, vb = _INFO.get(b) or _info(b)
    if ka <= K_DOUBLE and kb <= K_DOUBLE:
        if ka != kb and (ka >= K_FLOAT or kb >= K_FLOAT):  # int <-> decimal compare exactly as is
            r = ka if ka > kb else kb
            va, vb = _promote(ka, r, va), _promote(kb, r, vb)
        if va != va or vb != vb:  # NaN is unordered
            return None
        c: int = (va > vb) - (va < vb)
        return c
    if ka >= K_BAD_NUMBOOL:
        raise _err(va)
    if kb >= K_BAD_NUMBOOL:
        raise _err(vb)
    if ka != kb:
        return _NOT_COMPARABLE
    if ka == K_STRING or ka == K_BOOL:
        c = (va > vb) - (va < vb)
        return c
    if ka == K_LANG:  # same language tag and direction: compare the strings (as Oxigraph does)
        if va[:2] != vb[:2]:
            return _NOT_COMPARABLE
        c = (va[2] > vb[2]) - (va[2] < vb[2])
        return c
    if ka == K_TEMPORAL:
        if va[0] != vb[0]:
            return _NOT_COMPARABLE
        c = (va[1] > vb[1]) - (va[1] < vb[1])
        return c
    if ka == K_DURATION:
        if (va.months, va.seconds) == (vb.months, vb.seconds):
            return 0
        if va.months == 0 and vb.months == 0:
            c = (va.seconds > vb.seconds) - (va.seconds < vb.seconds)
            return c
        if va.seconds == 0 and vb.seconds == 0:
            c = (va.months > vb.months) - (va.months < vb.months)
            return c
        return None
    return _NOT_COMPARABLE


def _equal(a: GroundTerm, b: GroundTerm) -> bool:
    """SPARQL ``=``: value equality for known datatypes, RDFterm-equal otherwise
    (SPARQL 1.1 17.4.1.7; SPARQL 1.2 compares triple terms component-wise).

    :raises ExprError: comparing two literals that are not the same term when a
        datatype is unknown or a lexical form is invalid.
    """
    ta, tb = type(a), type(b)
    if ta is Literal and tb is Literal:
        if a == b and a.value != "NaN":  # type: ignore[union-attr]
            return True  # sameTerm implies RDFterm-equal (only NaN is not equal to itself)
        ka = (_INFO.get(a) or _info(a))[0]  # type: ignore[arg-type]
        kb = (_INFO.get(b) or _info(b))[0]  # type: ignore[arg-type]
        if ka == K_OTHER or kb == K_OTHER:
            raise _err(f"cannot compare {a} and {b}: unknown datatype")
        if ka == K_LANG or kb == K_LANG:
            return False  # not the same term; a language-tagged string equals only itself
        c = _value_cmp(a, b)  # type: ignore[arg-type]
        if c is _NOT_COMPARABLE:
            return False  # two known, disjoint value spaces
        return c == 0
    if ta is Triple and tb is Triple:
        return (
            _equal(a.subject, b.subject)  # type: ignore[union-attr]
            and _equal(a.predicate, b.predicate)  # type: ignore[union-attr]
            and _equal(a.object, b.object)  # type: ignore[union-attr]
        )
    return a == b


_ORDER_OK = {"<": (-1,), ">": (1,), "<=": (-1, 0), ">=": (0, 1)}


def _c_order(op: str) -> Callable[[list[Compiled]], Compiled]:
    ok = _ORDER_OK[op]

    def make(fs: list[Compiled]) -> Compiled:
        fa, fb = fs

        def f(row: Row, ctx: EvalContext) -> GroundTerm:
            a = fa(row, ctx)
            b = fb(row, ctx)
            if type(a) is not Literal or type(b) is not Literal:
                raise _err(f"cannot order {a} and {b}")
            c = _value_cmp(a, b)
            if c is _NOT_COMPARABLE:
                raise _err(f"cannot order {a} and {b}")
            return TRUE if c in ok else FALSE

        return f

    return make


# ---------------------------------------------------------------------------
# effective boolean value


def ebv(term: GroundTerm) -> bool:
    """Effective boolean value (SPARQL 1.1 section 17.2.2).

    Booleans give their value, numerics are true unless zero or NaN, simple and
    ``xsd:string`` literals are true unless empty; a boolean or numeric literal
    with an invalid lexical form is false.

    :raises ExprError: for any other term (IRIs, blank nodes, triple terms,
        language-tagged or other typed literals).
    """
    if type(term) is Literal:
        if term is TRUE:
            return True
        if term is FALSE:
            return False
        k, v = _INFO.get(term) or _info(term)
        if k <= K_DOUBLE:
            return not (v == 0 or v != v)  # zero or NaN
        if k == K_STRING:
            return len(v) > 0
        if k == K_BOOL:
            return v  # type: ignore[no-any-return]
        if k == K_BAD_NUMBOOL:
            return False
    raise _err(f"no effective boolean value for {term}")


# ---------------------------------------------------------------------------
# compilation


def compile_expr(expr: Expr, slots: Mapping[Variable, int]) -> Compiled:
    """Compile an expression into a closure ``f(row, ctx) -> term``.

    :param expr: the expression (:data:`reckon.datalog.model.Expr`).
    :param slots: variable -> index into the rows the closure will be called with.
        A variable without a slot is unbound (evaluating it raises :class:`ExprError`).
    :returns: ``f(row, ctx)``; ``row[slots[v]]`` is the value of ``v`` (``None`` =
        unbound). ``f`` raises :class:`ExprError` on an evaluation error.
    """
    return _compile(expr, slots)


def compile_filter(expr: Expr, slots: Mapping[Variable, int]) -> Callable[[Row, EvalContext], bool]:
    """Compile a ``FILTER`` condition into ``f(row, ctx) -> bool``: the effective boolean
    value of ``expr`` (SPARQL 1.1 section 17.2.2), and ``False`` when evaluation raises
    an error (SPARQL 1.1 section 17.3: a filter error eliminates the solution).

    :param slots: as for :func:`compile_expr`.
    """
    f = _compile(expr, slots)

    def cond(row: Row, ctx: EvalContext) -> bool:
        try:
            v = f(row, ctx)
            if v is TRUE:
                return True
            if v is FALSE:
                return False
            return ebv(v)
        except ExprError:
            return False

    return cond


def evaluate(expr: Expr, binding: Mapping[Variable, GroundTerm], ctx: EvalContext) -> GroundTerm:
    """Evaluate ``expr`` under the solution mapping ``binding`` (SRL "Evaluation of an Expression").

    :returns: the RDF term the expression denotes.
    :raises ExprError: on a SPARQL evaluation error.
    """
    names = tuple(binding)
    f = _compiled_for(expr, names)
    return f(tuple(binding[v] for v in names), ctx)


@lru_cache(maxsize=1024)
def _compiled_for(expr: Expr, names: tuple[Variable, ...]) -> Compiled:
    return _compile(expr, {v: i for i, v in enumerate(names)})


def _compile(e: Expr, slots: Mapping[Variable, int]) -> Compiled:
    if isinstance(e, Call):
        return _compile_call(e, slots)
    if isinstance(e, Variable):
        i = slots.get(e)
        if i is None:
            name = e.value

            def unbound(row: Row, ctx: EvalContext) -> GroundTerm:
                raise _err(f"unbound variable ?{name}")

            return unbound

        def var(row: Row, ctx: EvalContext) -> GroundTerm:
            v = row[i]
            if v is None:
                raise _err(f"unbound variable ?{e.value}")
            return v

        return var
    if isinstance(e, TripleTermPattern):
        fs, fp, fo = (_compile(x, slots) for x in (e.s, e.p, e.o))

        def triple_term(row: Row, ctx: EvalContext) -> GroundTerm:
            return _make_triple(fs(row, ctx), fp(row, ctx), fo(row, ctx))

        return triple_term
    if isinstance(e, (NamedNode, BlankNode, Literal, Triple)):
        c = e
        if type(c) is Literal:
            try:  # warm the numeric cache for constants
                _num_of(c)
            except ValueError:
                pass
        return lambda row, ctx: c
    raise TypeError(f"not an expression: {e!r}")


def _make_triple(s: GroundTerm, p: GroundTerm, o: GroundTerm) -> Triple:
    if type(s) not in (NamedNode, BlankNode) or type(p) is not NamedNode:
        raise _err(f"not a valid triple term: ({s} {p} {o})")
    return Triple(s, p, o)  # type: ignore[arg-type]


def _raiser(msg: str) -> Compiled:
    def f(row: Row, ctx: EvalContext) -> GroundTerm:
        raise _err(msg)

    return f


# --- functional forms ------------------------------------------------------


def _c_or(fs: list[Compiled]) -> Compiled:
    def f(row: Row, ctx: EvalContext) -> GroundTerm:
        error: ExprError | None = None
        for g in fs:
            try:
                if ebv(g(row, ctx)):
                    return TRUE
            except ExprError as e:
                error = e
        if error is not None:
            raise error
        return FALSE

    return f


def _c_and(fs: list[Compiled]) -> Compiled:
    def f(row: Row, ctx: EvalContext) -> GroundTerm:
        error: ExprError | None = None
        for g in fs:
            try:
                if not ebv(g(row, ctx)):
                    return FALSE
            except ExprError as e:
                error = e
        if error is not None:
            raise error
        return TRUE

    return f


def _c_not(fs: list[Compiled]) -> Compiled:
    (a,) = fs

    def f(row: Row, ctx: EvalContext) -> GroundTerm:
        return FALSE if ebv(a(row, ctx)) else TRUE

    return f


def _c_if(fs: list[Compiled]) -> Compiled:
    c, t, e = fs

    def f(row: Row, ctx: EvalContext) -> GroundTerm:
        return t(row, ctx) if ebv(c(row, ctx)) else e(row, ctx)

    return f


def _c_in(negate: bool) -> Callable[[list[Compiled]], Compiled]:
    def make(fs: list[Compiled]) -> Compiled:
        head, items = fs[0], fs[1:]

        def f(row: Row, ctx: EvalContext) -> GroundTerm:
            v = head(row, ctx)
            error: ExprError | None = None
            for g in items:
                try:
                    if _equal(v, g(row, ctx)):
                        return FALSE if negate else TRUE
                except ExprError as e:
                    error = e
            if error is not None:
                raise error
            return TRUE if negate else FALSE

        return f

    return make


def _c_coalesce(fs: list[Compiled]) -> Compiled:
    def f(row: Row, ctx: EvalContext) -> GroundTerm:
        for g in fs:
            try:
                return g(row, ctx)
            except ExprError:
                pass
        raise _err("COALESCE: no argument evaluated without error")

    return f


_FORMS: dict[str, tuple[Callable[[list[Compiled]], Compiled], int, int]] = {
    "||": (_c_or, 2, 2),
    "&&": (_c_and, 2, 2),
    "!": (_c_not, 1, 1),
    "IF": (_c_if, 3, 3),
    "IN": (_c_in(False), 1, 1 << 30),
    "NOT IN": (_c_in(True), 1, 1 << 30),
    "COALESCE": (_c_coalesce, 0, 1 << 30),
    "<": (_c_order("<"), 2, 2),
    ">": (_c_order(">"), 2, 2),
    "<=": (_c_order("<="), 2, 2),
    ">=": (_c_order(">="), 2, 2),
}


def _compile_call(call: Call, slots: Mapping[Variable, int]) -> Compiled:
    name = call.name
    args = call.args
    if isinstance(name, NamedNode):
        fn = _CASTS.get(name.value)
        if fn is None:
            ext = _EXTENSIONS.get(name.value)
            if ext is None:
                return _raiser(f"unknown function <{name.value}>")
            return _compile_extension(name.value, ext, args, slots)
        if len(args) != 1:
            return _raiser(f"<{name.value}> takes exactly one argument")
        (a,) = (_compile(x, slots) for x in args)
        cast = fn

        def cast_call(row: Row, ctx: EvalContext) -> GroundTerm:
            v = a(row, ctx)
            try:
                return cast(v)
            except _PY_ERRORS as e:
                raise _err(f"cast: {e}") from None

        return cast_call
    key = name.upper()
    if key == "BOUND":
        if len(args) != 1 or not isinstance(args[0], Variable):
            return _raiser("BOUND takes one variable")
        i = slots.get(args[0])
        if i is None:
            return lambda row, ctx: FALSE
        return lambda row, ctx: FALSE if row[i] is None else TRUE
    form = _FORMS.get(key)
    if form is not None:
        make, lo, hi = form
        if not lo <= len(args) <= hi:
            return _raiser(f"{key}: wrong number of arguments ({len(args)})")
        return make([_compile(x, slots) for x in args])
    spec = _FUNCS.get(key)
    if spec is None:
        return _raiser(f"unknown function {name}")
    fn2, lo, hi, wants_ctx = spec
    if not lo <= len(args) <= hi:
        return _raiser(f"{key}: wrong number of arguments ({len(args)})")
    fs = [_compile(x, slots) for x in args]
    # Python errors inside a function (a value outside what the code expected) are
    # evaluation errors too: they drop the solution, never crash the reasoner.
    if wants_ctx:
        def call_ctx(row: Row, ctx: EvalContext) -> GroundTerm:
            vals = [g(row, ctx) for g in fs]
            try:
                return fn2(ctx, *vals)
            except _PY_ERRORS as e:
                raise _err(f"{key}: {e}") from None

        return call_ctx
    if len(fs) == 1:
        (a1,) = fs

        def call1(row: Row, ctx: EvalContext) -> GroundTerm:
            v = a1(row, ctx)
            try:
                return fn2(v)
            except _PY_ERRORS as e:
                raise _err(f"{key}: {e}") from None

        return call1
    if len(fs) == 2:
        a1, a2 = fs

        def call2(row: Row, ctx: EvalContext) -> GroundTerm:
            v1 = a1(row, ctx)
            v2 = a2(row, ctx)
            try:
                return fn2(v1, v2)
            except _PY_ERRORS as e:
                raise _err(f"{key}: {e}") from None

        return call2

    def calln(row: Row, ctx: EvalContext) -> GroundTerm:
        vals = [g(row, ctx) for g in fs]
        try:
            return fn2(*vals)
        except _PY_ERRORS as e:
            raise _err(f"{key}: {e}") from None

    return calln


_PY_ERRORS = (ValueError, ArithmeticError, TypeError, IndexError, KeyError)


# ---------------------------------------------------------------------------
# Reckon extension functions (``rkf:`` = ``urn:reckon:fn:``): OWL 2 / RDF 1.1 datatype
# reasoning over data values (reckon.datalog._datatypes), used by the datatype rules of
# rules/owl2rl.srl and rules/rdfs.srl. Each raises an evaluation error (the FILTER is
# false, the SET drops the solution) when it cannot decide: an argument of the wrong
# kind, or a datatype it does not know.

RKF = "urn:reckon:fn:"
"""Namespace of the Reckon extension functions."""


def _lit_arg(a: GroundTerm, fn: str) -> Literal:
    if type(a) is not Literal:
        raise _err(f"{fn}: not a literal: {a}")
    return a


def _dt_arg(a: GroundTerm, fn: str) -> str:
    if type(a) is not NamedNode:
        raise _err(f"{fn}: not a datatype IRI: {a}")
    return a.value


def _decided(x: bool | None, fn: str) -> Literal:
    if x is None:
        raise _err(f"{fn}: unknown datatype")
    return TRUE if x else FALSE


def _x_canonical(a: GroundTerm) -> GroundTerm:
    c = _DTS.canonical(_lit_arg(a, "canonicalLiteral"))
    if c is None:
        raise _err(f"canonicalLiteral: no canonical literal for {a}")
    return c


def _x_canonical_form(a: GroundTerm) -> GroundTerm:
    c = _DTS.canonical_form(_lit_arg(a, "canonicalForm"))
    if c is None:
        raise _err(f"canonicalForm: no other canonical form for {a}")
    return c


def _x_in_value_space(a: GroundTerm, dt: GroundTerm) -> Literal:
    return _decided(_DTS.in_value_space(_lit_arg(a, "inValueSpace"), _dt_arg(dt, "inValueSpace")), "inValueSpace")


def _x_different(a: GroundTerm, b: GroundTerm) -> Literal:
    return _decided(_DTS.different_values(_lit_arg(a, "differentValues"), _lit_arg(b, "differentValues")),
                    "differentValues")


def _x_disjoint(a: GroundTerm, b: GroundTerm) -> Literal:
    return _decided(_DTS.disjoint(_dt_arg(a, "disjointDatatypes"), _dt_arg(b, "disjointDatatypes")),
                    "disjointDatatypes")


def _x_subsumes(a: GroundTerm, b: GroundTerm) -> Literal:
    return _decided(_DTS.subsumes(_dt_arg(a, "subsumesDatatype"), _dt_arg(b, "subsumesDatatype")),
                    "subsumesDatatype")


def _x_subsumes_meet(a: GroundTerm, b: GroundTerm, c: GroundTerm) -> Literal:
    fn = "subsumesIntersection"
    return _decided(_DTS.subsumes_intersection(_dt_arg(a, fn), _dt_arg(b, fn), _dt_arg(c, fn)), fn)


def _x_satisfies_facet(a: GroundTerm, facet: GroundTerm, bound: GroundTerm) -> Literal:
    fn = "satisfiesFacet"
    return _decided(_DTS.satisfies_facet(_lit_arg(a, fn), _dt_arg(facet, fn), _lit_arg(bound, fn)), fn)


def _x_is_datatype(a: GroundTerm) -> Literal:
    return TRUE if type(a) is NamedNode and _DTS.is_supported(a.value) else FALSE


_EXTENSIONS: dict[str, tuple[Callable[..., GroundTerm], int]] = {
    RKF + "canonicalLiteral": (_x_canonical, 1),
    RKF + "canonicalForm": (_x_canonical_form, 1),
    RKF + "inValueSpace": (_x_in_value_space, 2),
    RKF + "differentValues": (_x_different, 2),
    RKF + "disjointDatatypes": (_x_disjoint, 2),
    RKF + "subsumesDatatype": (_x_subsumes, 2),
    RKF + "subsumesIntersection": (_x_subsumes_meet, 3),
    RKF + "isDatatype": (_x_is_datatype, 1),
    RKF + "satisfiesFacet": (_x_satisfies_facet, 3),
}
"""Reckon extension functions by IRI: ``rkf:canonicalLiteral(?lit)`` (dt-eq: the
canonical literal of the value), ``rkf:canonicalForm(?lit)`` (the canonical lexical form
in the literal's own datatype), ``rkf:inValueSpace(?lit, ?dt)`` (dt-not-type),
``rkf:differentValues(?a, ?b)`` (dt-diff), ``rkf:disjointDatatypes(?d1, ?d2)``,
``rkf:subsumesDatatype(?super, ?sub)``, ``rkf:subsumesIntersection(?super, ?d1, ?d2)``,
``rkf:isDatatype(?dt)`` (never an error), ``rkf:satisfiesFacet(?lit, ?facet, ?bound)``
(a datatype restriction's constraining facet)."""


def _compile_extension(iri: str, spec: tuple[Callable[..., GroundTerm], int], args: tuple[Expr, ...],
                       slots: Mapping[Variable, int]) -> Compiled:
    fn, n = spec
    if len(args) != n:
        return _raiser(f"<{iri}> takes {n} argument{'s' if n != 1 else ''}")
    fs = [_compile(x, slots) for x in args]

    dt_args = _DATATYPE_ARGS.get(iri, ())

    def call(row: Row, ctx: EvalContext) -> GroundTerm:
        vals = [g(row, ctx) for g in fs]
        d = ctx.datatypes
        if d is not None:
            for i, v in enumerate(vals):
                if not _recognized(v, i in dt_args, d):
                    if fn is _x_is_datatype:
                        return FALSE
                    raise _err(f"<{iri}>: {v} is outside the recognized datatypes")
        try:
            out = fn(*vals)
        except _PY_ERRORS as e:
            raise _err(f"<{iri}>: {e}") from None
        if d is not None and iri in _VALUE_RESULTS and not _recognized(out, False, d):
            raise _err(f"<{iri}>: {out} is outside the recognized datatypes")
        return out

    return call


_DATATYPE_ARGS: dict[str, tuple[int, ...]] = {
    RKF + "inValueSpace": (1,),
    RKF + "disjointDatatypes": (0, 1),
    RKF + "subsumesDatatype": (0, 1),
    RKF + "subsumesIntersection": (0, 1, 2),
    RKF + "isDatatype": (0,),
}
"""Argument positions of the ``rkf:`` functions that are datatype IRIs."""

_VALUE_RESULTS = frozenset({RKF + "canonicalLiteral", RKF + "canonicalForm"})
"""The ``rkf:`` functions whose result is a literal of a datatype (checked against D)."""

_ALWAYS_RECOGNIZED = frozenset({X.XSD + "string", _DTS.LANG_STRING})
"""RDF 1.1 Semantics §7: every regime recognizes ``xsd:string`` and ``rdf:langString``."""


def _recognized(v: object, as_datatype: bool, d: frozenset[str]) -> bool:
    """``v`` (a datatype IRI when ``as_datatype``, else any term) is within the recognized
    datatypes ``d``: a literal by its datatype, a datatype IRI itself; other terms are."""
    if type(v) is Literal:
        dt = v.datatype.value
        return dt in d or dt in _ALWAYS_RECOGNIZED
    if as_datatype and type(v) is NamedNode:
        return v.value in d or v.value in _ALWAYS_RECOGNIZED
    return True


# ---------------------------------------------------------------------------
# ordinary functions (all arguments evaluated first)


def _f_eq(a: GroundTerm, b: GroundTerm) -> Literal:
    return _bool(_equal(a, b))


def _f_ne(a: GroundTerm, b: GroundTerm) -> Literal:
    return _bool(not _equal(a, b))


def _f_uminus(a: GroundTerm) -> Literal:
    r, v = _num(a)
    return _make_num(r, -v)


def _f_uplus(a: GroundTerm) -> Literal:
    r, v = _num(a)
    return _make_num(r, v)


def _f_str(a: GroundTerm) -> Literal:
    if type(a) is Literal:
        return a if a.datatype.value == X.STRING else Literal(a.value)
    if type(a) is NamedNode:
        return Literal(a.value)
    raise _err(f"STR of {a}")


def _lit(a: GroundTerm, fn: str) -> Literal:
    if type(a) is not Literal:
        raise _err(f"{fn}: not a literal: {a}")
    return a


def _f_lang(a: GroundTerm) -> Literal:
    return Literal(_lit(a, "LANG").language or "")


def _f_langdir(a: GroundTerm) -> Literal:
    d = _lit(a, "LANGDIR").direction
    return Literal(str(d) if d is not None else "")


def _f_haslang(a: GroundTerm) -> Literal:
    return _bool(type(a) is Literal and a.language is not None)


def _f_haslangdir(a: GroundTerm) -> Literal:
    return _bool(type(a) is Literal and a.direction is not None)


def _f_datatype(a: GroundTerm) -> NamedNode:
    return _lit(a, "DATATYPE").datatype


def _f_langmatches(tag: GroundTerm, rng: GroundTerm) -> Literal:
    t = _simple_arg(tag).lower()
    r = _simple_arg(rng).lower()
    if r == "*":
        return _bool(t != "")
    return _bool(t == r or t.startswith(r + "-"))


def _f_iri(ctx: EvalContext, a: GroundTerm) -> NamedNode:
    if type(a) is NamedNode:
        return a
    s = _simple_arg(a)
    if ctx.base:
        s = urllib.parse.urljoin(ctx.base, s)
    try:
        return NamedNode(s)
    except ValueError as e:
        raise _err(f"IRI: {e}") from None


def _f_bnode(ctx: EvalContext, *a: GroundTerm) -> BlankNode:
    if not a:
        return BlankNode()
    return ctx.bnode_for(_simple_arg(a[0]))


def _f_strdt(lex: GroundTerm, dt: GroundTerm) -> Literal:
    s = _simple_arg(lex)
    if type(dt) is not NamedNode or dt.value in (X.LANGSTRING, X.DIRLANGSTRING):
        raise _err(f"STRDT: bad datatype {dt}")
    return Literal(s, datatype=dt)


def _f_strlang(lex: GroundTerm, lang: GroundTerm) -> Literal:
    s, tag = _simple_arg(lex), _simple_arg(lang)
    try:
        return Literal(s, language=tag)
    except ValueError as e:
        raise _err(f"STRLANG: {e}") from None


_DIRS = {"ltr": BaseDirection.LTR, "rtl": BaseDirection.RTL}


def _f_strlangdir(lex: GroundTerm, lang: GroundTerm, d: GroundTerm) -> Literal:
    s, tag, dirname = _simple_arg(lex), _simple_arg(lang), _simple_arg(d)
    direction = _DIRS.get(dirname)
    if direction is None:
        raise _err(f"STRLANGDIR: bad direction {dirname!r}")
    try:
        return Literal(s, language=tag, direction=direction)
    except ValueError as e:
        raise _err(f"STRLANGDIR: {e}") from None


def _f_strlen(a: GroundTerm) -> Literal:
    return Literal(str(len(_string_arg(a).value)), datatype=_DT_INTEGER)


def _xpath_round_num(v: Any) -> Any:
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return v
        r = float(math.floor(v))
        if v - r >= 0.5:  # exact for doubles: no v + 0.5 rounding surprise
            r += 1.0
        return math.copysign(0.0, v) if r == 0 else r
    if isinstance(v, Decimal):
        return _DCTX.add(v, Decimal("0.5")).to_integral_value(rounding=ROUND_FLOOR, context=_DCTX)
    return v


def _int_arg(t: GroundTerm, fn: str) -> int:
    r, v = _num(t)
    if r != X.R_INTEGER:
        raise _err(f"{fn}: not an xsd:integer: {t}")
    return v  # type: ignore[no-any-return]


def _f_substr(src: GroundTerm, start: GroundTerm, *length: GroundTerm) -> Literal:
    """SPARQL 1.1 17.4.3.3: 1-based, codepoints, integer arguments (XPath fn:substring)."""
    s = _string_arg(src)
    st = _int_arg(start, "SUBSTR")
    text = s.value
    lo = max(st, 1) - 1
    if length:
        end = st + _int_arg(length[0], "SUBSTR") - 1  # exclusive, 0-based
        return _like(s, text[lo:end] if end > lo else "")
    return _like(s, text[lo:])


def _f_ucase(a: GroundTerm) -> Literal:
    s = _string_arg(a)
    return _like(s, s.value.upper())


def _f_lcase(a: GroundTerm) -> Literal:
    s = _string_arg(a)
    return _like(s, s.value.lower())


def _pair(a: GroundTerm, b: GroundTerm) -> tuple[Literal, Literal]:
    x, y = _string_arg(a), _string_arg(b)
    _compatible(x, y)
    return x, y


def _f_strstarts(a: GroundTerm, b: GroundTerm) -> Literal:
    x, y = _pair(a, b)
    return _bool(x.value.startswith(y.value))


def _f_strends(a: GroundTerm, b: GroundTerm) -> Literal:
    x, y = _pair(a, b)
    return _bool(x.value.endswith(y.value))


def _f_contains(a: GroundTerm, b: GroundTerm) -> Literal:
    x, y = _pair(a, b)
    return _bool(y.value in x.value)


def _f_strbefore(a: GroundTerm, b: GroundTerm) -> Literal:
    x, y = _pair(a, b)
    i = x.value.find(y.value)
    if i < 0:
        return _EMPTY
    return _like(x, x.value[:i])


def _f_strafter(a: GroundTerm, b: GroundTerm) -> Literal:
    x, y = _pair(a, b)
    i = x.value.find(y.value)
    if i < 0:
        return _EMPTY
    return _like(x, x.value[i + len(y.value):])


def _f_encode_for_uri(a: GroundTerm) -> Literal:
    return Literal(urllib.parse.quote(_string_arg(a).value, safe="-_.~"))


def _f_concat(*args: GroundTerm) -> Literal:
    lits = [_string_arg(a) for a in args]
    if not lits:
        return _EMPTY
    text = "".join(x.value for x in lits)
    first = lits[0]
    if first.language is not None and all(
        x.language == first.language and x.direction == first.direction for x in lits
    ):
        return _like(first, text)
    return Literal(text)


# --- regular expressions (XPath F&O 3.1 section 5.6) -----------------------


@lru_cache(maxsize=512)
def _regex(pattern: str, flags: str) -> Any:
    """Compile an XPath regular expression with XPath flags ``s m i x q``.

    :raises ExprError: on an invalid pattern or flag.
    """
    fl = 0
    for ch in flags:
        if ch == "i":
            fl |= re.IGNORECASE
        elif ch == "s":
            fl |= re.DOTALL
        elif ch == "m":
            fl |= re.MULTILINE
        elif ch in "xq":
            pass
        else:
            raise _err(f"invalid regex flag {ch!r}")
    if "q" in flags:
        translated = re.escape(pattern)
    else:
        translated = _translate_xpath_regex(pattern, "x" in flags, "m" in flags, "s" in flags)
    try:
        return _re_engine().compile(translated, fl)
    except Exception as e:  # re.error / regex.error
        raise _err(f"invalid regular expression {pattern!r}: {e}") from None


def compile_xpath_regex(pattern: str, flags: str = "") -> Any:
    """An XPath regular expression (XPath F&O 3.1 §5.6.1; the syntax of ``fn:matches``,
    SPARQL ``REGEX`` and SHACL ``sh:pattern`` / ``sh:flags``, SHACL §4.8.1) compiled for
    Python: ``$`` is the end of the string (not "before a final newline"), ``.`` matches
    neither ``\\n`` nor ``\\r`` unless flag ``s``; flags ``s m i x q``.

    :returns: a compiled pattern (``.search(text)``).
    :raises ExprError: on an invalid pattern or flag.
    """
    return _regex(pattern, flags)


def xpath_regex_for_re(pattern: str, flags: str = "") -> str:
    """:func:`compile_xpath_regex`'s translation as one Python ``re`` pattern with the
    flags inline (``(?i)...``): for a library that evaluates ``sh:pattern`` with Python's
    ``re`` (pySHACL), so it matches by XPath rules.

    :raises ExprError: on an invalid pattern or flag.
    """
    _regex(pattern, flags)  # validates the pattern and the flags
    body = re.escape(pattern) if "q" in flags else _translate_xpath_regex(pattern, "x" in flags, "m" in flags,
                                                                         "s" in flags)
    inline = "".join(ch for ch in "ims" if ch in flags)
    return f"(?{inline}){body}" if inline else body


def _translate_xpath_regex(p: str, strip_ws: bool, multiline: bool, dotall: bool = False) -> str:
    """Translate XPath regex syntax to Python: ``$`` matches only at the very end
    (or line end with ``m``), ``.`` excludes ``\\n`` and ``\\r`` (unless ``s``), ``x``
    removes whitespace outside character classes, ``\\i``/``\\c`` name-character
    escapes, and no Python-only constructs."""
    out: list[str] = []
    i, n, in_class = 0, len(p), 0
    while i < n:
        ch = p[i]
        if ch == "\\":
            if i + 1 >= n:
                raise _err("regex ends with a backslash")
            nxt = p[i + 1]
            if nxt == "i":
                out.append("[A-Za-z_:]" if not in_class else "A-Za-z_:")
            elif nxt == "I":
                out.append("[^A-Za-z_:]")
            elif nxt == "c":
                out.append(r"[-A-Za-z0-9_:.]" if not in_class else r"\-A-Za-z0-9_:.")
            elif nxt == "C":
                out.append(r"[^-A-Za-z0-9_:.]")
            elif nxt in "pP":
                j = p.find("}", i)
                if j < 0:
                    raise _err("bad \\p escape")
                if _re_engine() is re:
                    raise _err("\\p{..} classes need the `regex` module")
                prop = p[i + 3:j]
                if prop.startswith("Is"):  # XPath block escape \p{IsBasicLatin}
                    prop = "Block=" + prop[2:]
                out.append(f"\\{nxt}{{{prop}}}")
                i = j + 1
                continue
            elif nxt.isalpha() and nxt not in "nrtdDsSwW":
                raise _err(f"invalid escape \\{nxt}")
            else:
                out.append(p[i:i + 2])
            i += 2
            continue
        if in_class:
            if ch == "[":
                raise _err("character class subtraction/nesting is not supported")
            if ch == "]":
                in_class = 0
            out.append(ch)
        elif ch == "(" and p.startswith("(?", i) and not p.startswith("(?:", i):
            raise _err("XPath regular expressions have no (?...) groups other than (?:...)")
        elif ch == "[":
            in_class = 1
            out.append(ch)
            if i + 1 < n and p[i + 1] == "^":
                out.append("^")
                i += 1
            if i + 1 < n and p[i + 1] == "]":  # literal ] first in class
                out.append(r"\]")
                i += 1
        elif strip_ws and ch in " \t\r\n":
            pass
        elif ch == "$":
            out.append("$" if multiline else r"\Z")
        elif ch == "." and not dotall:
            out.append(r"[^\n\r]")
        else:
            out.append(ch)
        i += 1
    s = "".join(out)
    return s


def _regex_args(text: GroundTerm, pattern: GroundTerm, flags: tuple[GroundTerm, ...]) -> tuple[Literal, Any]:
    t = _string_arg(text)
    pat = _simple_arg(pattern)
    fl = _simple_arg(flags[0]) if flags else ""
    return t, _regex(pat, fl)


def _f_regex(text: GroundTerm, pattern: GroundTerm, *flags: GroundTerm) -> Literal:
    t, rx = _regex_args(text, pattern, flags)
    return _bool(rx.search(t.value) is not None)


_REPL_RE = re.compile(r"\\(.)|\$([0-9]+)|(\$|\\)")


def _f_replace(text: GroundTerm, pattern: GroundTerm, repl: GroundTerm, *flags: GroundTerm) -> Literal:
    t, rx = _regex_args(text, pattern, flags)
    r = _simple_arg(repl)
    if rx.search("") is not None:  # XPath fn:replace err:FORX0003
        raise _err("REPLACE: the pattern matches the empty string")
    q = bool(flags) and "q" in _simple_arg(flags[0])
    groups = rx.groups

    def expand(m: Any) -> str:
        if q:
            return r
        out: list[str] = []
        pos = 0
        while pos < len(r):
            c = r[pos]
            if c == "\\":
                if pos + 1 < len(r) and r[pos + 1] in "\\$":
                    out.append(r[pos + 1])
                    pos += 2
                    continue
                raise _err("REPLACE: invalid replacement string")
            if c == "$":
                j = pos + 1
                if j >= len(r) or not r[j].isdigit():
                    raise _err("REPLACE: invalid replacement string")
                # XPath: take as many digits as form a valid group number
                k = j + 1
                while k < len(r) and r[k].isdigit() and int(r[j:k + 1]) <= groups:
                    k += 1
                g = int(r[j:k])
                out.append((m.group(g) or "") if g <= groups else "")
                pos = k
                continue
            out.append(c)
            pos += 1
        return "".join(out)

    return _like(t, rx.sub(expand, t.value))


# --- numeric functions -----------------------------------------------------


def _f_abs(a: GroundTerm) -> Literal:
    r, v = _num(a)
    return _make_num(r, abs(v))


def _f_ceil(a: GroundTerm) -> Literal:
    r, v = _num(a)
    if r == X.R_INTEGER:
        return _make_num(r, v)
    if r == X.R_DECIMAL:
        return _make_num(r, v.to_integral_value(rounding=ROUND_CEILING, context=_DCTX))
    if math.isnan(v) or math.isinf(v):
        return _make_num(r, v)
    c = float(math.ceil(v))
    return _make_num(r, math.copysign(0.0, v) if c == 0 else c)


def _f_floor(a: GroundTerm) -> Literal:
    r, v = _num(a)
    if r == X.R_INTEGER:
        return _make_num(r, v)
    if r == X.R_DECIMAL:
        return _make_num(r, v.to_integral_value(rounding=ROUND_FLOOR, context=_DCTX))
    if math.isnan(v) or math.isinf(v):
        return _make_num(r, v)
    return _make_num(r, float(math.floor(v)) if v != 0 else v)


def _f_round(a: GroundTerm) -> Literal:
    r, v = _num(a)
    return _make_num(r, _xpath_round_num(v))


# --- term tests ------------------------------------------------------------


def _f_sameterm(a: GroundTerm, b: GroundTerm) -> Literal:
    return _bool(a == b)


def _f_isiri(a: GroundTerm) -> Literal:
    return _bool(type(a) is NamedNode)


def _f_isblank(a: GroundTerm) -> Literal:
    return _bool(type(a) is BlankNode)


def _f_isliteral(a: GroundTerm) -> Literal:
    return _bool(type(a) is Literal)


def _f_isnumeric(a: GroundTerm) -> Literal:
    if type(a) is not Literal:
        return FALSE
    try:
        return _bool(_num_of(a) is not None)
    except ValueError:
        return FALSE


def _f_istriple(a: GroundTerm) -> Literal:
    return _bool(type(a) is Triple)


def _triple_arg(a: GroundTerm) -> Triple:
    if type(a) is not Triple:
        raise _err(f"not a triple term: {a}")
    return a


def _f_subject(a: GroundTerm) -> GroundTerm:
    return _triple_arg(a).subject


def _f_predicate(a: GroundTerm) -> GroundTerm:
    return _triple_arg(a).predicate


def _f_object(a: GroundTerm) -> GroundTerm:
    return _triple_arg(a).object


# --- date/time -------------------------------------------------------------


def _temporal_arg(a: GroundTerm, allowed: tuple[str, ...]) -> X.DateTimeValue:
    if type(a) is not Literal or a.datatype.value not in allowed:
        raise _err(f"not a {'/'.join(allowed)} literal: {a}")
    try:
        return _dt_value(a)
    except ValueError as e:
        raise _err(str(e)) from None


_DATE_TYPES = (X.DATETIME, X.DATETIMESTAMP, X.DATE)
_TIME_TYPES = (X.DATETIME, X.DATETIMESTAMP, X.TIME)
_ALL_TEMPORAL = (X.DATETIME, X.DATETIMESTAMP, X.DATE, X.TIME)




def _f_year(a: GroundTerm) -> Literal:
    return _int_lit(_temporal_arg(a, _DATE_TYPES).year)


def _f_month(a: GroundTerm) -> Literal:
    return _int_lit(_temporal_arg(a, _DATE_TYPES).month)


def _f_day(a: GroundTerm) -> Literal:
    return _int_lit(_temporal_arg(a, _DATE_TYPES).day)


def _f_hours(a: GroundTerm) -> Literal:
    return _int_lit(_temporal_arg(a, _TIME_TYPES).hour)


def _f_minutes(a: GroundTerm) -> Literal:
    return _int_lit(_temporal_arg(a, _TIME_TYPES).minute)


def _f_seconds(a: GroundTerm) -> Literal:
    return _make_num(X.R_DECIMAL, _temporal_arg(a, _TIME_TYPES).second)


def _f_timezone(a: GroundTerm) -> Literal:
    tz = _temporal_arg(a, _ALL_TEMPORAL).tz
    if tz is None:
        raise _err(f"TIMEZONE: no timezone in {a}")
    return Literal(X.format_daytime_duration(Decimal(tz * 60)), datatype=_DT_DAYTIME)


def _f_tz(a: GroundTerm) -> Literal:
    return Literal(X.format_tz(_temporal_arg(a, _ALL_TEMPORAL).tz))


def _f_now(ctx: EvalContext) -> Literal:
    return ctx.now  # type: ignore[return-value]


def _f_uuid(ctx: EvalContext) -> NamedNode:
    return NamedNode(f"urn:uuid:{uuid.uuid4()}")


def _f_struuid(ctx: EvalContext) -> Literal:
    return Literal(str(uuid.uuid4()))


# --- hash functions (SPARQL 1.1 17.4.6) ------------------------------------


def _hash(algo: str) -> Callable[[GroundTerm], Literal]:
    def f(a: GroundTerm) -> Literal:
        if not _is_string_lit(a):
            raise _err(f"{algo.upper()}: not a simple literal: {a}")
        return Literal(hashlib.new(algo, a.value.encode("utf-8")).hexdigest())  # type: ignore[union-attr]

    return f


_FUNCS: dict[str, tuple[Callable[..., GroundTerm], int, int, bool]] = {
    # name: (function, min args, max args, takes ctx)
    "=": (_f_eq, 2, 2, False),
    "!=": (_f_ne, 2, 2, False),
    "+": (lambda a, b: _arith("+", a, b), 2, 2, False),
    "-": (lambda a, b: _arith("-", a, b), 2, 2, False),
    "*": (lambda a, b: _arith("*", a, b), 2, 2, False),
    "/": (lambda a, b: _arith("/", a, b), 2, 2, False),
    "UMINUS": (_f_uminus, 1, 1, False),
    "UPLUS": (_f_uplus, 1, 1, False),
    "STR": (_f_str, 1, 1, False),
    "LANG": (_f_lang, 1, 1, False),
    "LANGMATCHES": (_f_langmatches, 2, 2, False),
    "LANGDIR": (_f_langdir, 1, 1, False),
    "HASLANG": (_f_haslang, 1, 1, False),
    "HASLANGDIR": (_f_haslangdir, 1, 1, False),
    "DATATYPE": (_f_datatype, 1, 1, False),
    "IRI": (_f_iri, 1, 1, True),
    "URI": (_f_iri, 1, 1, True),
    "BNODE": (_f_bnode, 0, 1, True),
    "STRDT": (_f_strdt, 2, 2, False),
    "STRLANG": (_f_strlang, 2, 2, False),
    "STRLANGDIR": (_f_strlangdir, 3, 3, False),
    "STRLEN": (_f_strlen, 1, 1, False),
    "SUBSTR": (_f_substr, 2, 3, False),
    "UCASE": (_f_ucase, 1, 1, False),
    "LCASE": (_f_lcase, 1, 1, False),
    "STRSTARTS": (_f_strstarts, 2, 2, False),
    "STRENDS": (_f_strends, 2, 2, False),
    "CONTAINS": (_f_contains, 2, 2, False),
    "STRBEFORE": (_f_strbefore, 2, 2, False),
    "STRAFTER": (_f_strafter, 2, 2, False),
    "ENCODE_FOR_URI": (_f_encode_for_uri, 1, 1, False),
    "CONCAT": (_f_concat, 0, 1 << 30, False),
    "REGEX": (_f_regex, 2, 3, False),
    "REPLACE": (_f_replace, 3, 4, False),
    "ABS": (_f_abs, 1, 1, False),
    "CEIL": (_f_ceil, 1, 1, False),
    "FLOOR": (_f_floor, 1, 1, False),
    "ROUND": (_f_round, 1, 1, False),
    "SAMETERM": (_f_sameterm, 2, 2, False),
    "ISIRI": (_f_isiri, 1, 1, False),
    "ISURI": (_f_isiri, 1, 1, False),
    "ISBLANK": (_f_isblank, 1, 1, False),
    "ISLITERAL": (_f_isliteral, 1, 1, False),
    "ISNUMERIC": (_f_isnumeric, 1, 1, False),
    "ISTRIPLE": (_f_istriple, 1, 1, False),
    "TRIPLE": (_make_triple, 3, 3, False),
    "SUBJECT": (_f_subject, 1, 1, False),
    "PREDICATE": (_f_predicate, 1, 1, False),
    "OBJECT": (_f_object, 1, 1, False),
    "YEAR": (_f_year, 1, 1, False),
    "MONTH": (_f_month, 1, 1, False),
    "DAY": (_f_day, 1, 1, False),
    "HOURS": (_f_hours, 1, 1, False),
    "MINUTES": (_f_minutes, 1, 1, False),
    "SECONDS": (_f_seconds, 1, 1, False),
    "TIMEZONE": (_f_timezone, 1, 1, False),
    "TZ": (_f_tz, 1, 1, False),
    "NOW": (_f_now, 0, 0, True),
    "UUID": (_f_uuid, 0, 0, True),
    "STRUUID": (_f_struuid, 0, 0, True),
    "MD5": (_hash("md5"), 1, 1, False),
    "SHA1": (_hash("sha1"), 1, 1, False),
    "SHA256": (_hash("sha256"), 1, 1, False),
    "SHA384": (_hash("sha384"), 1, 1, False),
    "SHA512": (_hash("sha512"), 1, 1, False),
}


# ---------------------------------------------------------------------------
# XSD casts (SPARQL 1.1 section 17.5, XPath F&O 3.1 section 19)


def _cast_source(a: GroundTerm, target: str) -> Literal:
    if type(a) is not Literal:
        raise _err(f"cannot cast {a} to {target}")
    if a.language is not None:
        raise _err(f"cannot cast language-tagged {a} to {target}")
    return a


def _cast_string(a: GroundTerm) -> Literal:
    if type(a) is NamedNode:
        return Literal(a.value)
    if type(a) is Literal and a.language is not None:
        return Literal(a.value)  # as Oxigraph does: the lexical form
    lit = _cast_source(a, "xsd:string")
    dt = lit.datatype.value
    try:
        if dt in X.NUMERIC_RANK:
            r, v = _num_of(lit)  # type: ignore[misc]
            return Literal(X.format_numeric(r, v))
        if dt == X.BOOLEAN:
            return Literal("true" if X.parse_boolean(lit.value) else "false")
        if dt in (X.DATETIME, X.DATETIMESTAMP):
            return Literal(X.format_datetime(X.parse_datetime(lit.value)))
        if dt == X.DATE:
            return Literal(X.format_date(X.parse_date(lit.value)))
        if dt == X.TIME:
            return Literal(X.format_time(X.parse_time(lit.value)))
    except ValueError as e:
        raise _err(str(e)) from None
    return Literal(lit.value)


def _cast_numeric_value(a: GroundTerm, target: str) -> Num:
    """The (rank, value) a numeric cast starts from: the source's numeric value,
    a boolean as 1/0, or a string parsed with the *target* type's lexical rules."""
    lit = _cast_source(a, target)
    dt = lit.datatype.value
    try:
        if dt in X.NUMERIC_RANK:
            return _num_of(lit)  # type: ignore[return-value]
        if dt == X.BOOLEAN:
            return X.R_INTEGER, int(X.parse_boolean(lit.value))
        if dt == X.STRING:
            s = lit.value.strip(" \t\r\n")
            if target in X.INTEGER_TYPES:
                return X.R_INTEGER, X.parse_integer(s)
            if target == X.DECIMAL:
                return X.R_DECIMAL, X.parse_decimal(s)
            return X.R_DOUBLE, X.parse_double(s)
    except ValueError as e:
        raise _err(str(e)) from None
    raise _err(f"cannot cast {a} to {target}")


def _cast_integer_to(target: str) -> Callable[[GroundTerm], Literal]:
    dt = NamedNode(target)
    lo, hi = X.INTEGER_TYPES[target]

    def cast(a: GroundTerm) -> Literal:
        r, v = _cast_numeric_value(a, target)
        if r >= X.R_FLOAT and (math.isnan(v) or math.isinf(v)):
            raise _err(f"cannot cast {a} to an integer")
        iv = int(v)  # truncation towards zero (XPath 19.1.2.4)
        if (lo is not None and iv < lo) or (hi is not None and iv > hi):
            raise _err(f"{iv} is out of range for {target}")
        return Literal(str(iv), datatype=dt)

    return cast


def _cast_decimal(a: GroundTerm) -> Literal:
    r, v = _cast_numeric_value(a, X.DECIMAL)
    try:
        if r == X.R_FLOAT:
            d = X.parse_decimal(X.format_float(v)) if math.isfinite(v) else X.decimal_from_float(v)
        elif r == X.R_DOUBLE:
            d = X.decimal_from_float(v)
        else:
            d = Decimal(v)
    except (ValueError, InvalidOperation) as e:
        raise _err(f"cannot cast {a} to xsd:decimal: {e}") from None
    return _make_num(X.R_DECIMAL, d)


def _cast_float(a: GroundTerm) -> Literal:
    _, v = _cast_numeric_value(a, X.FLOAT)
    return _make_num(X.R_FLOAT, X.to_f32(float(v)))


def _cast_double(a: GroundTerm) -> Literal:
    _, v = _cast_numeric_value(a, X.DOUBLE)
    return _make_num(X.R_DOUBLE, float(v))


def _cast_boolean(a: GroundTerm) -> Literal:
    lit = _cast_source(a, "xsd:boolean")
    dt = lit.datatype.value
    try:
        if dt == X.BOOLEAN or dt == X.STRING:
            return _bool(X.parse_boolean(lit.value.strip(" \t\r\n") if dt == X.STRING else lit.value))
        if dt in X.NUMERIC_RANK:
            _, v = _num_of(lit)  # type: ignore[misc]
            return _bool(not (v == 0 or (isinstance(v, float) and math.isnan(v))))
    except ValueError as e:
        raise _err(str(e)) from None
    raise _err(f"cannot cast {a} to xsd:boolean")


def _cast_datetime(a: GroundTerm) -> Literal:
    lit = _cast_source(a, "xsd:dateTime")
    dt = lit.datatype.value
    try:
        if dt in (X.DATETIME, X.DATETIMESTAMP, X.STRING):
            v = X.parse_datetime(lit.value.strip(" \t\r\n"))
        elif dt == X.DATE:
            v = X.parse_date(lit.value)
        else:
            raise _err(f"cannot cast {a} to xsd:dateTime")
    except ValueError as e:
        raise _err(str(e)) from None
    return Literal(X.format_datetime(v), datatype=_DT_DATETIME)


def _cast_date(a: GroundTerm) -> Literal:
    lit = _cast_source(a, "xsd:date")
    dt = lit.datatype.value
    try:
        if dt in (X.DATETIME, X.DATETIMESTAMP):
            v = X.parse_datetime(lit.value)
        elif dt in (X.DATE, X.STRING):
            v = X.parse_date(lit.value.strip(" \t\r\n"))
        else:
            raise _err(f"cannot cast {a} to xsd:date")
    except ValueError as e:
        raise _err(str(e)) from None
    return Literal(X.format_date(v), datatype=_DT_DATE)


def _cast_time(a: GroundTerm) -> Literal:
    lit = _cast_source(a, "xsd:time")
    dt = lit.datatype.value
    try:
        if dt in (X.DATETIME, X.DATETIMESTAMP):
            v = X.parse_datetime(lit.value)
        elif dt in (X.TIME, X.STRING):
            v = X.parse_time(lit.value.strip(" \t\r\n"))
        else:
            raise _err(f"cannot cast {a} to xsd:time")
    except ValueError as e:
        raise _err(str(e)) from None
    return Literal(X.format_time(v), datatype=_DT_TIME)


def _cast_duration_to(target: str) -> Callable[[GroundTerm], Literal]:
    """Casts to ``xsd:duration`` / ``dayTimeDuration`` / ``yearMonthDuration`` (XPath F&O 3.1
    section 19.1.5: casting between duration types drops the other component)."""
    dt = NamedNode(target)

    def cast(a: GroundTerm) -> Literal:
        lit = _cast_source(a, target)
        src = lit.datatype.value
        try:
            if src == X.STRING:
                d = X.parse_duration(lit.value.strip(" \t\r\n"), target)
            elif src in _DURATIONS:
                d = _duration_of(lit)
            else:
                raise _err(f"cannot cast {a} to {target}")
        except ValueError as e:
            raise _err(str(e)) from None
        months, secs = d.months, d.seconds
        if target == X.DAYTIMEDURATION:
            months = 0
        elif target == X.YEARMONTHDURATION:
            secs = Decimal(0)
        return Literal(X.format_duration(months, secs, target), datatype=dt)

    return cast


_CASTS: dict[str, Callable[[GroundTerm], Literal]] = {
    X.STRING: _cast_string,
    X.DECIMAL: _cast_decimal,
    X.FLOAT: _cast_float,
    X.DOUBLE: _cast_double,
    X.BOOLEAN: _cast_boolean,
    X.DATETIME: _cast_datetime,
    X.DATE: _cast_date,
    X.TIME: _cast_time,
    **{dt: _cast_integer_to(dt) for dt in X.INTEGER_TYPES},
    **{dt: _cast_duration_to(dt) for dt in _DURATIONS},
}
