"""Datatypes of OWL 2 RL and RDF 1.1: value spaces, lexical-to-value mapping, ill-typed literals.

The one place the engine decides what a literal *means* (its data value) — used by the
datatype rules of ``rules/owl2rl.srl`` / ``rules/rdfs.srl`` through the Reckon
extension functions of :mod:`reckon.datalog.expr` (``rkf:canonicalLiteral``,
``rkf:inValueSpace``, ``rkf:differentValues``, ``rkf:disjointDatatypes``,
``rkf:subsumesDatatype``, ``rkf:isDatatype``), which rules call in ``FILTER`` and
``SET`` like any SPARQL function. Lexical forms are parsed by :mod:`reckon.datalog._xsd`,
the module SPARQL expressions use, so a FILTER and a datatype rule read a literal the
same way. (SPARQL's ``=`` is not the OWL 2 data-value identity: SPARQL promotes
``1 = 1.0e0`` to true, while in OWL 2 ``xsd:double`` values are not ``owl:real``
values. The functions here follow OWL 2.)

Sources:

* OWL 2 Profiles §4.2 (the datatypes supported in OWL 2 RL) and §4.3 Table 8
  (dt-type1, dt-type2, dt-eq, dt-diff, dt-not-type):
  https://www.w3.org/TR/owl2-profiles/#Entities_3
* OWL 2 Structural Specification §4 (datatype maps: ``owl:real`` ⊇ ``owl:rational`` ⊇
  ``xsd:decimal`` ⊇ ``xsd:integer``; ``xsd:float`` and ``xsd:double`` are disjoint from
  ``owl:real`` and from each other; strings; binary; IRIs; time instants; XML literals):
  https://www.w3.org/TR/owl2-syntax/#Datatype_Maps
* rdf:PlainLiteral: https://www.w3.org/TR/rdf-plain-literal/ (``"abc@en"``, ``"abc@"``)
* RDF 1.1 Concepts §5 (datatypes, ``rdf:langString``, ill-typed literals) and RDF 1.1
  Semantics §7 (D-entailment; an ill-typed literal of a recognized datatype makes a
  graph unsatisfiable): https://www.w3.org/TR/rdf11-concepts/#section-Datatypes
* XSD 1.1 Part 2 (lexical spaces, the whitespace of ``token`` and ``normalizedString``,
  the ranges of the derived integer types).

A *value* is ``(space, key)``: ``"real"`` (``fractions.Fraction``: ``"1"^^xsd:integer``,
``"1.0"^^xsd:decimal`` and ``"2/2"^^owl:rational`` are one value), ``"float"`` /
``"double"`` (the float, with ``-0`` and ``+0`` distinct and one NaN), ``"string"``
(also ``"abc@"^^rdf:PlainLiteral``), ``"lang"`` (text, lower-cased tag), ``"boolean"``,
``"hexBinary"``, ``"base64Binary"`` (octets), ``"anyURI"``, ``"dateTime"`` (an instant when a
timezone is given — ``12:00:00-05:00`` is ``17:00:00Z`` —, the local time otherwise; the
two kinds never equal), ``"date"``, ``"time"``, ``"XMLLiteral"`` (the lexical form: XML
canonicalization is not done, so two spellings of one XML fragment are not identified).

Limitations (documented, each a reason a literal gets *no* value rather than a wrong
one): ``owl:real`` has no lexical forms, so every ``"…"^^owl:real`` is ill-typed (as the
OWL 2 specification says); datatypes outside :data:`SUPPORTED` (``xsd:gYear``,
``xsd:duration``, user datatypes ...) are unknown: their literals have no value, are never
ill-typed and never equal to or different from anything but themselves.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from functools import cache, lru_cache
from typing import Any

from pyoxigraph import Literal, NamedNode

from reckon.datalog import _xsd as X

__all__ = [
    "OWL2RL_DATATYPES",
    "SUPPORTED",
    "canonical",
    "canonical_form",
    "different_values",
    "disjoint",
    "in_value_space",
    "is_supported",
    "subsumes",
    "subsumes_intersection",
    "value",
]

from reckon.vocab import OWL, RDF, RDFS  # noqa: E402  (the one spelling of the namespaces)

XSD = X.XSD

PLAIN_LITERAL = RDF + "PlainLiteral"
LANG_STRING = RDF + "langString"
XML_LITERAL = RDF + "XMLLiteral"
HTML = RDF + "HTML"
RDFS_LITERAL = RDFS + "Literal"
OWL_REAL = OWL + "real"
OWL_RATIONAL = OWL + "rational"

Value = tuple[str, Any]

_ALL_SPACES = frozenset({
    "real", "float", "double", "string", "lang", "boolean", "hexBinary", "base64Binary",
    "anyURI", "dateTime", "date", "time", "XMLLiteral", "HTML",
})

# XML 1.0 (fifth edition) Name productions, as character classes
_NAME_START = (
    r":A-Z_a-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C-\u200D"
    r"\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\U00010000-\U000EFFFF"
)
_NAME_CHAR = _NAME_START + r"\-.0-9\u00B7\u0300-\u036F\u203F-\u2040"



@cache
def _xml_name_re(kind: str) -> re.Pattern[str]:
    """XML Name / NCName / NMTOKEN patterns, compiled on first use (their Unicode classes
    cost ~50 ms to compile)."""
    if kind == "Name":
        return re.compile(f"[{_NAME_START}][{_NAME_CHAR}]*")
    if kind == "NCName":
        return re.compile(f"[{_NAME_START.replace(':', '')}][{_NAME_CHAR.replace(':', '')}]*")
    return re.compile(f"[{_NAME_CHAR}]+")
_LANGUAGE_RE = re.compile(r"[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*")
_RATIONAL_RE = re.compile(r"[+-]?[0-9]+/[0-9]*[1-9][0-9]*")
_HEX_RE = re.compile(r"(?:[0-9a-fA-F]{2})*")
_B64_RE = re.compile(r"[A-Za-z0-9+/= ]*")


_NOT_XML_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml_chars(s: str) -> bool:
    """XML 1.0 Char*: the lexical space of xsd:string (no U+0000, no C0 control but tab,
    newline and carriage return, no surrogate, no U+FFFE / U+FFFF)."""
    return _NOT_XML_CHAR.search(s) is None


def _normalized(s: str) -> bool:
    return not any(c in s for c in "\r\n\t")


def _token(s: str) -> bool:
    return _normalized(s) and not s.startswith(" ") and not s.endswith(" ") and "  " not in s


# string datatypes: (facet test on the lexical form = the value)
_STRING_FACETS: dict[str, Callable[[str], bool]] = {
    XSD + "string": lambda s: True,
    XSD + "normalizedString": _normalized,
    XSD + "token": _token,
    XSD + "language": lambda s: _LANGUAGE_RE.fullmatch(s) is not None,
    XSD + "Name": lambda s: _xml_name_re("Name").fullmatch(s) is not None,
    XSD + "NCName": lambda s: _xml_name_re("NCName").fullmatch(s) is not None,
    XSD + "NMTOKEN": lambda s: _xml_name_re("NMTOKEN").fullmatch(s) is not None,
}
# the string facets that imply another (sub -> its direct supertypes)
_STRING_PARENTS: dict[str, tuple[str, ...]] = {
    XSD + "string": (),
    XSD + "normalizedString": (XSD + "string",),
    XSD + "token": (XSD + "normalizedString",),
    XSD + "language": (XSD + "token",),
    XSD + "NMTOKEN": (XSD + "token",),
    XSD + "Name": (XSD + "token", XSD + "NMTOKEN"),
    XSD + "NCName": (XSD + "Name",),
}


def _float_key(x: float) -> Any:
    if math.isnan(x):
        return "NaN"
    return (x, math.copysign(1.0, x))


def _real_parser(dt: str) -> Callable[[str], Value]:
    if dt in X.INTEGER_TYPES:
        return lambda lex: ("real", Fraction(X.parse_integer(lex, dt)))
    return lambda lex: ("real", Fraction(X.parse_decimal(lex)))


def _parse_rational(lex: str) -> Value:
    if not _RATIONAL_RE.fullmatch(lex):
        raise ValueError(f"invalid owl:rational lexical form {lex!r}")
    n, d = lex.split("/")
    return "real", Fraction(int(n), int(d))


def _no_lexical_form(lex: str) -> Value:
    raise ValueError("owl:real has no lexical forms (OWL 2 Structural Specification §4.1)")


def _parse_string(dt: str) -> Callable[[str], Value]:
    facet = _STRING_FACETS[dt]

    def parse(lex: str) -> Value:
        if not _xml_chars(lex) or not facet(lex):
            raise ValueError(f"{lex!r} is not in the lexical space of {dt}")
        return "string", lex

    return parse


def _parse_plain(lex: str) -> Value:
    text, sep, lang = lex.rpartition("@")
    if not sep:
        raise ValueError("rdf:PlainLiteral lexical form without '@'")
    if not lang:
        return "string", text
    if not _LANGUAGE_RE.fullmatch(lang):
        raise ValueError(f"invalid language tag {lang!r}")
    return "lang", (text, lang.lower())


def _parse_hex(lex: str) -> Value:
    if not _HEX_RE.fullmatch(lex):
        raise ValueError(f"invalid hexBinary lexical form {lex!r}")
    return "hexBinary", bytes.fromhex(lex)


def _parse_b64(lex: str) -> Value:
    if not _B64_RE.fullmatch(lex):
        raise ValueError(f"invalid base64Binary lexical form {lex!r}")
    try:
        return "base64Binary", base64.b64decode(lex.replace(" ", ""), validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"invalid base64Binary lexical form {lex!r}: {e}") from None


def _parse_datetime(stamp: bool) -> Callable[[str], Value]:
    def parse(lex: str) -> Value:
        v = X.parse_datetime(lex)
        if stamp and v.tz is None:
            raise ValueError("xsd:dateTimeStamp needs a timezone")
        return "dateTime", (v.tz is not None, v.timeline())

    return parse


def _parse_date(lex: str) -> Value:
    v = X.parse_date(lex)
    return "date", (v.tz is not None, v.timeline())


def _parse_time(lex: str) -> Value:
    v = X.parse_time(lex)
    return "time", (v.tz is not None, v.timeline())


def _parse_xml(lex: str) -> Value:
    try:
        ET.fromstring(f"<rdf-wrapper>{lex}</rdf-wrapper>")  # a fragment cannot hold a DOCTYPE
    except ET.ParseError as e:
        raise ValueError(f"not a well-formed XML fragment: {e}") from None
    return "XMLLiteral", lex


_PARSERS: dict[str, Callable[[str], Value]] = {
    **{dt: _real_parser(dt) for dt in X.INTEGER_TYPES},
    XSD + "decimal": _real_parser(XSD + "decimal"),
    OWL_RATIONAL: _parse_rational,
    OWL_REAL: _no_lexical_form,
    XSD + "float": lambda lex: ("float", _float_key(X.parse_float(lex))),
    XSD + "double": lambda lex: ("double", _float_key(X.parse_double(lex))),
    **{dt: _parse_string(dt) for dt in _STRING_FACETS},
    PLAIN_LITERAL: _parse_plain,
    XSD + "boolean": lambda lex: ("boolean", X.parse_boolean(lex)),
    XSD + "hexBinary": _parse_hex,
    XSD + "base64Binary": _parse_b64,
    XSD + "anyURI": lambda lex: ("anyURI", lex),
    XSD + "dateTime": _parse_datetime(False),
    XSD + "dateTimeStamp": _parse_datetime(True),
    XSD + "date": _parse_date,
    XSD + "time": _parse_time,
    XML_LITERAL: _parse_xml,
    HTML: lambda lex: ("HTML", lex),
}

OWL2RL_DATATYPES: tuple[str, ...] = (
    PLAIN_LITERAL, XML_LITERAL, RDFS_LITERAL, OWL_REAL, OWL_RATIONAL,
    XSD + "decimal", XSD + "integer", XSD + "nonNegativeInteger", XSD + "nonPositiveInteger",
    XSD + "positiveInteger", XSD + "negativeInteger", XSD + "long", XSD + "int", XSD + "short",
    XSD + "byte", XSD + "unsignedLong", XSD + "unsignedInt", XSD + "unsignedShort",
    XSD + "unsignedByte", XSD + "float", XSD + "double", XSD + "string",
    XSD + "normalizedString", XSD + "token", XSD + "language", XSD + "Name", XSD + "NCName",
    XSD + "NMTOKEN", XSD + "boolean", XSD + "hexBinary", XSD + "base64Binary", XSD + "anyURI",
    XSD + "dateTime", XSD + "dateTimeStamp",
)
"""The datatypes supported in OWL 2 RL (OWL 2 Profiles §4.2), the ``dt`` of dt-type1."""

SUPPORTED: frozenset[str] = frozenset(OWL2RL_DATATYPES) | {LANG_STRING, HTML, XSD + "date", XSD + "time"}
"""Datatypes whose literals get a value here: OWL 2 RL's, plus RDF 1.1's
``rdf:langString`` and ``rdf:HTML`` and ``xsd:date`` / ``xsd:time`` (recognized for
ill-typed literals)."""


def is_supported(dt: str) -> bool:
    """Whether ``dt`` (an IRI string) is a datatype this module knows."""
    return dt in SUPPORTED


@lru_cache(maxsize=1 << 16)
def value(lit: Literal) -> Value | None:
    """The data value of ``lit``: ``(space, key)``; ``None`` when its datatype is unknown
    (cached: the datatype rules ask for the same literal several times).

    :raises ValueError: when ``lit`` is ill-typed (its lexical form is not in the lexical
        space of its supported datatype).
    """
    if lit.language is not None:
        if not _xml_chars(lit.value):
            raise ValueError(f"{lit.value!r} is not in the lexical space of rdf:langString")
        return "lang", (lit.value, lit.language.lower())
    dt = lit.datatype.value
    parse = _PARSERS.get(dt)
    if parse is None:
        return None
    return parse(lit.value)


# -- membership, disjointness, subsumption -------------------------------------------

# datatype -> (spaces it draws from, facet on the value or None)
def _integral(lo: int | None, hi: int | None) -> Callable[[Any], bool]:
    def test(v: Any) -> bool:
        return v.denominator == 1 and (lo is None or v >= lo) and (hi is None or v <= hi)

    return test


def _finite_decimal(v: Any) -> bool:
    d = v.denominator
    for f in (2, 5):
        while d % f == 0:
            d //= f
    finite: bool = d == 1
    return finite


_SHAPE: dict[str, tuple[frozenset[str], Callable[[Any], bool] | None]] = {
    RDFS_LITERAL: (_ALL_SPACES, None),
    PLAIN_LITERAL: (frozenset({"string", "lang"}), None),
    LANG_STRING: (frozenset({"lang"}), None),
    OWL_REAL: (frozenset({"real"}), None),
    OWL_RATIONAL: (frozenset({"real"}), None),
    XSD + "decimal": (frozenset({"real"}), _finite_decimal),
    **{dt: (frozenset({"real"}), _integral(*b)) for dt, b in X.INTEGER_TYPES.items()},
    **{dt: (frozenset({"string"}), f) for dt, f in _STRING_FACETS.items()},
    XSD + "float": (frozenset({"float"}), None),
    XSD + "double": (frozenset({"double"}), None),
    XSD + "boolean": (frozenset({"boolean"}), None),
    XSD + "hexBinary": (frozenset({"hexBinary"}), None),
    XSD + "base64Binary": (frozenset({"base64Binary"}), None),
    XSD + "anyURI": (frozenset({"anyURI"}), None),
    XSD + "dateTime": (frozenset({"dateTime"}), None),
    XSD + "dateTimeStamp": (frozenset({"dateTime"}), lambda v: v[0]),
    XSD + "date": (frozenset({"date"}), None),
    XSD + "time": (frozenset({"time"}), None),
    XML_LITERAL: (frozenset({"XMLLiteral"}), None),
    HTML: (frozenset({"HTML"}), None),
}


def in_value_space(lit: Literal, dt: str) -> bool | None:
    """Whether the data value of ``lit`` is in the value space of datatype ``dt``
    (dt-not-type); an ill-typed literal is in none. ``None`` when ``lit``'s datatype or
    ``dt`` is unknown."""
    shape = _SHAPE.get(dt)
    if shape is None:
        return None
    try:
        v = value(lit)
    except ValueError:
        return False
    if v is None:
        return None
    spaces, facet = shape
    if v[0] not in spaces:
        return False
    return True if facet is None else bool(facet(v[1]))


_ORDER_FACETS = {
    XSD + "minInclusive": lambda c: c >= 0, XSD + "maxInclusive": lambda c: c <= 0,
    XSD + "minExclusive": lambda c: c > 0, XSD + "maxExclusive": lambda c: c < 0,
}
_LENGTH_FACETS = {
    XSD + "length": lambda n, k: n == k, XSD + "minLength": lambda n, k: n >= k, XSD + "maxLength": lambda n, k: n <= k,
}
_ORDERED = frozenset({"real", "float", "double", "dateTime", "date", "time"})


def _order_key(v: Value) -> Any:
    space, key = v
    if space in ("float", "double"):
        return None if key == "NaN" else key[0]
    if space in ("dateTime", "date", "time"):
        return key  # (has timezone, timeline): comparable only with the same timezone presence
    return key


def satisfies_facet(lit: Literal, facet: str, bound: Literal) -> bool | None:
    """Whether the data value of ``lit`` satisfies the constraining facet ``facet`` with
    value ``bound`` (XML Schema 1.1 Part 2 §4.3; OWL 2 Structural Specification §7.5
    ``DatatypeRestriction``): ``xsd:minInclusive`` / ``maxInclusive`` / ``minExclusive`` /
    ``maxExclusive`` between values of one ordered value space (numbers, date/time with
    the same timezone presence), ``xsd:length`` / ``minLength`` / ``maxLength`` (characters
    of a string, octets of binary data), ``xsd:pattern`` (the whole lexical form, XSD
    regular expressions read as Python ones). ``None`` when it cannot be decided: an
    unknown facet or datatype, an ill-typed literal, values of different spaces, NaN."""
    try:
        v = value(lit)
    except ValueError:
        return None
    if v is None:
        return None
    if facet in _ORDER_FACETS:
        try:
            b = value(bound)
        except ValueError:
            return None
        if b is None or v[0] != b[0] or v[0] not in _ORDERED:
            return None
        kv, kb = _order_key(v), _order_key(b)
        if kv is None or kb is None:
            return None
        if v[0] in ("dateTime", "date", "time"):
            if kv[0] != kb[0]:
                return None
            kv, kb = kv[1], kb[1]
        return bool(_ORDER_FACETS[facet]((kv > kb) - (kv < kb)))
    if facet in _LENGTH_FACETS:
        try:
            k = int(bound.value)
        except ValueError:
            return None
        space, key = v
        if space in ("string", "anyURI"):
            n = len(key)
        elif space == "lang":
            n = len(key[0])
        elif space in ("hexBinary", "base64Binary"):
            n = len(key)
        else:
            return None
        return bool(_LENGTH_FACETS[facet](n, k))
    if facet == XSD + "pattern":
        try:
            return re.fullmatch(bound.value, lit.value) is not None
        except re.error:
            return None
    return None


def different_values(a: Literal, b: Literal) -> bool | None:
    """Whether two literals denote different data values (dt-diff); ``None`` when one is
    of an unknown datatype or ill-typed (then nothing is claimed)."""
    try:
        va, vb = value(a), value(b)
    except ValueError:
        return None
    if va is None or vb is None:
        return None
    return va != vb


def _interval(dt: str) -> tuple[int | None, int | None] | None:
    return X.INTEGER_TYPES.get(dt)


def disjoint(d1: str, d2: str) -> bool | None:
    """Whether the value spaces of two datatypes share no value; ``None`` if one is unknown."""
    s1, s2 = _SHAPE.get(d1), _SHAPE.get(d2)
    if s1 is None or s2 is None:
        return None
    if not (s1[0] & s2[0]):
        return True
    i1, i2 = _interval(d1), _interval(d2)
    if i1 is not None and i2 is not None:
        lo = max(x for x in (i1[0], i2[0], -math.inf) if x is not None)
        hi = min(x for x in (i1[1], i2[1], math.inf) if x is not None)
        return lo > hi
    return False


def _string_ancestors(dt: str) -> set[str]:
    out = {dt}
    for p in _STRING_PARENTS.get(dt, ()):
        out |= _string_ancestors(p)
    return out


def subsumes(sup: str, sub: str) -> bool | None:
    """Whether every value of datatype ``sub`` is a value of ``sup``; ``None`` if one is
    unknown."""
    a, b = _SHAPE.get(sup), _SHAPE.get(sub)
    if a is None or b is None:
        return None
    if sup == sub or sup == RDFS_LITERAL:
        return True
    if not b[0] <= a[0]:
        return False
    if a[1] is None:
        return True
    if sup in _STRING_FACETS:
        return sub in _STRING_FACETS and sup in _string_ancestors(sub)
    if sup == XSD + "decimal":
        return sub == XSD + "decimal" or sub in X.INTEGER_TYPES
    ia, ib = _interval(sup), _interval(sub)
    if ia is not None:
        if ib is None:
            return False
        lo_ok = ia[0] is None or (ib[0] is not None and ib[0] >= ia[0])
        hi_ok = ia[1] is None or (ib[1] is not None and ib[1] <= ia[1])
        return lo_ok and hi_ok
    if sup == XSD + "dateTimeStamp":
        return sub == XSD + "dateTimeStamp"
    return False


def subsumes_intersection(sup: str, a: str, b: str) -> bool | None:
    """Whether every value of both ``a`` and ``b`` is a value of ``sup`` (``xsd:short``
    and ``xsd:unsignedInt`` meet in 0 .. 32767, inside ``xsd:unsignedShort``); ``None``
    when a datatype is unknown."""
    ss, sa, sb = subsumes(sup, a), subsumes(sup, b), subsumes(a, b)
    if ss is None or sa is None or sb is None:
        return None
    if ss or sa:
        return True
    ia, ib, isup = _interval(a), _interval(b), _interval(sup)
    if ia is None or ib is None:
        return False
    lo = max((x for x in (ia[0], ib[0]) if x is not None), default=None)
    hi = min((x for x in (ia[1], ib[1]) if x is not None), default=None)
    if lo is not None and hi is not None and lo > hi:
        return True  # the intersection is empty
    if isup is None:
        return _SHAPE[sup][1] is None or sup == XSD + "decimal"  # owl:real, owl:rational, decimal, rdfs:Literal hold integers
    return (isup[0] is None or (lo is not None and lo >= isup[0])) and (isup[1] is None or (hi is not None and hi <= isup[1]))


# -- canonical literals (dt-eq) -----------------------------------------------------

_DT = {name: NamedNode(name) for name in (XSD + "integer", XSD + "decimal", OWL_RATIONAL, XSD + "float",
                                          XSD + "double", XSD + "boolean", XSD + "hexBinary",
                                          XSD + "base64Binary", XSD + "anyURI", XSD + "dateTime")}


def canonical(lit: Literal) -> Literal | None:
    """The canonical literal of ``lit``'s data value — the term every literal of that
    value is ``owl:sameAs`` (dt-eq) —, or ``None`` when the datatype is unknown, the
    literal ill-typed, or the value has no canonical literal kept here (``xsd:date``,
    ``xsd:time``, XML literals). ``owl:real`` values: ``xsd:integer`` when integral,
    else ``xsd:decimal`` when a finite decimal, else ``owl:rational``; strings: the
    ``xsd:string`` literal; language-tagged: the lower-cased tag; floats and doubles,
    booleans, binary and dateTimes (with a timezone: its UTC form): the canonical lexical
    form (XSD 1.1 canonical mappings, as Oxigraph prints them)."""
    try:
        v = value(lit)
    except ValueError:
        return None
    if v is None:
        return None
    space, key = v
    if space == "real":
        if key.denominator == 1:
            return Literal(str(key.numerator), datatype=_DT[XSD + "integer"])
        if _finite_decimal(key):
            return Literal(X.format_decimal(Decimal(key.numerator) / Decimal(key.denominator)),
                           datatype=_DT[XSD + "decimal"])
        return Literal(f"{key.numerator}/{key.denominator}", datatype=_DT[OWL_RATIONAL])
    if space == "string":
        return Literal(key)
    if space == "lang":
        return Literal(key[0], language=key[1])
    if space in ("float", "double"):
        x = math.nan if key == "NaN" else key[0]
        fmt = X.format_float if space == "float" else X.format_double
        return Literal(fmt(x), datatype=_DT[XSD + space])
    if space == "boolean":
        return Literal("true" if key else "false", datatype=_DT[XSD + "boolean"])
    if space == "hexBinary":
        return Literal(key.hex().upper(), datatype=_DT[XSD + "hexBinary"])
    if space == "base64Binary":
        return Literal(base64.b64encode(key).decode("ascii"), datatype=_DT[XSD + "base64Binary"])
    if space == "anyURI":
        return Literal(key, datatype=_DT[XSD + "anyURI"])
    if space == "dateTime":
        dtv = X.parse_datetime(lit.value)
        if dtv.tz is not None:
            secs = dtv.timeline()
            dtv = X.add_duration(X.DateTimeValue(0, 3, 1, 0, 0, Decimal(0), 0), X.DurationValue(0, secs))
        return Literal(X.format_datetime(dtv), datatype=_DT[XSD + "dateTime"])
    return None



def canonical_form(lit: Literal) -> Literal | None:
    """The canonical lexical form of ``lit`` in its own datatype (``"01"^^xsd:int`` ->
    ``"1"^^xsd:int``, ``"1.50"^^xsd:decimal`` -> ``"1.5"^^xsd:decimal``, ``"1"^^xsd:boolean``
    -> ``"true"^^xsd:boolean``, as Oxigraph stores them), or ``None`` when the datatype is
    unknown, the literal ill-typed, or it has no other canonical form here."""
    try:
        v = value(lit)
    except ValueError:
        return None
    if v is None or lit.language is not None:
        return None
    dt = lit.datatype
    space, key = v
    lex: str | None = None
    if dt.value in X.INTEGER_TYPES:
        lex = str(key.numerator)
    elif dt.value == XSD + "decimal":
        lex = X.format_decimal(Decimal(key.numerator) / Decimal(key.denominator))
    elif space in ("float", "double"):
        x = math.nan if key == "NaN" else key[0]
        lex = (X.format_float if space == "float" else X.format_double)(x)
    elif space == "boolean":
        lex = "true" if key else "false"
    elif space == "hexBinary":
        lex = key.hex().upper()
    elif space == "base64Binary":
        lex = base64.b64encode(key).decode("ascii")
    elif dt.value in (XSD + "dateTime", XSD + "dateTimeStamp"):
        lex = X.format_datetime(X.parse_datetime(lit.value))
    if lex is None or lex == lit.value:
        return None
    return Literal(lex, datatype=dt)
