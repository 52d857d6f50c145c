"""One identity for every RDF term: the one the store gives it.

Oxigraph does not keep a typed literal as it was written: it stores the *value* of
every literal of a datatype it understands and prints that value back in its own
canonical form (measured with pyoxigraph 0.5.13)::

    "…00.500000Z"^^xsd:dateTime   -> "…00.5Z"          "+00:00" offset -> "Z"
    "40000.50"^^xsd:decimal        -> "40000.5"         ".5"            -> "0.5"
    "0005"^^xsd:int                -> "5"^^xsd:integer  (every integer subtype becomes
    "+3"^^xsd:positiveInteger      -> "3"^^xsd:integer   xsd:integer, bounds unchecked)
    "1"^^xsd:boolean               -> "true"            "1e400"^^xsd:double -> "INF"
    "PT24H"^^xsd:dayTimeDuration   -> "P1D"             "2026-01-01T24:00:00Z" -> next day

while ill-typed lexical forms (``"TRUE"^^xsd:boolean``, ``"abc"^^xsd:integer``,
``" 5 "``, a decimal with more than 18 fractional digits) are kept exactly as given,
and pyoxigraph's ``Literal`` constructor lower-cases language tags. pyoxigraph
``Literal`` objects compare by their raw text, so a term built in Python and the term
the store returns for it are different Python objects, and two writes of one value in
two spellings are one quad on disk but two terms in any Python set.

Anything that holds terms outside the store (the reasoner, the mirror, the journal,
caches, the write path's sets) must therefore use the store's form, or a delete misses
what an insert added (an old clock value that is never retracted keeps an expired
memory active). :func:`canonical_term` gives that form *by construction*: it stores the
literal in a private in-memory Oxigraph store and reads it back (about 7 µs), cached
per literal. Strings, language-tagged strings, IRIs and blank nodes are returned
unchanged (Oxigraph stores them as given).

The differential test ``tests/store/test_terms.py`` holds this equal to what an
on-disk tenant store returns, over generated literals of every XSD datatype.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Context, Decimal, InvalidOperation
from typing import Any, TypeVar

from pyoxigraph import BlankNode, DefaultGraph, Literal, NamedNode, Quad, Store, Triple

from reckon._errors import InvalidInput

__all__ = [
    "DECIMAL_LEXICAL",
    "DECIMAL_MAX",
    "DECIMAL_PLACES",
    "canonical_quad",
    "canonical_term",
    "canonical_triple",
    "check_file_text",
    "check_text",
    "check_triples_text",
    "datetime_literal",
    "decimal_literal",
    "same_term",
    "text_fault",
]

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_UNCHANGED = frozenset({_XSD_STRING, _RDF + "langString", _RDF + "dirLangString"})

_S = NamedNode("urn:reckon:canonical:s")
_P = NamedNode("urn:reckon:canonical:p")
_G = DefaultGraph()

_cache: dict[Literal, Literal] = {}
_CACHE_MAX = 1 << 16
"""Literals remembered; the cache is emptied when it would grow past this."""

T = TypeVar("T")


def _roundtrip(lit: Literal) -> Literal:
    # a fresh store per literal: ~8 µs (removing from a long-lived in-memory store
    # costs ~300 µs, its deleted versions pile up)
    probe = Store()
    probe.add(Quad(_S, _P, lit, _G))
    for q in probe.quads_for_pattern(_S, _P, None, _G):
        return q.object  # type: ignore[return-value]
    return lit  # pragma: no cover - the quad was just added


# Lexical forms that are already what the store prints (so the round trip is skipped):
# either the canonical form of a valid value or an ill-typed form kept as given. Only
# the common datatypes of a tenant; anything else takes the round trip. Held equal to
# the round trip by tests/store/test_terms.py.
_XSD = "http://www.w3.org/2001/XMLSchema#"
_FAST = {
    _XSD + "integer": re.compile(r"0|-?[1-9][0-9]{0,17}"),
    _XSD + "decimal": re.compile(r"0|-?(?:[1-9][0-9]{0,14}(?:\.[0-9]{0,5}[1-9])?|0\.[0-9]{0,5}[1-9])"),
    _XSD + "boolean": re.compile(r"true|false"),
    _XSD + "dateTime": re.compile(
        r"[1-9][0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
        r"(?:\.[0-9]{0,5}[1-9])?(?:Z|[+-](?:0[0-9]|1[0-3]):[0-5][0-9])?"
    ),
}


def canonical_term(term: T) -> T:
    """The term as the tenant store holds it: typed literals in Oxigraph's canonical
    form (see the module docstring), triple terms component by component, everything
    else unchanged. Idempotent; thread-safe.

    >>> from pyoxigraph import Literal, NamedNode
    >>> X = "http://www.w3.org/2001/XMLSchema#"
    >>> canonical_term(Literal("2026-03-01T10:00:34.829040+00:00", datatype=NamedNode(X + "dateTime"))).value
    '2026-03-01T10:00:34.82904Z'
    >>> canonical_term(Literal("0005", datatype=NamedNode(X + "int")))
    <Literal value=5 datatype=<NamedNode value=http://www.w3.org/2001/XMLSchema#integer>>
    >>> canonical_term(Literal("TRUE", datatype=NamedNode(X + "boolean"))).value  # ill-typed: as given
    'TRUE'
    """
    if isinstance(term, Literal):
        dt = term.datatype.value
        if dt in _UNCHANGED:
            return term
        fast = _FAST.get(dt)
        if fast is not None and fast.fullmatch(term.value) and not _zero_offset(term.value):
            return term
        got = _cache.get(term)
        if got is None:
            got = _roundtrip(term)
            if len(_cache) >= _CACHE_MAX:
                _cache.clear()
            _cache[term] = got
            _cache[got] = got
        return got  # type: ignore[return-value]
    if isinstance(term, Triple):
        return canonical_triple(term)  # type: ignore[return-value]
    return term


def _zero_offset(text: str) -> bool:
    return text.endswith(("+00:00", "-00:00"))


def canonical_triple(t: Triple) -> Triple:
    """``t`` with its object (and the parts of nested triple terms) canonical."""
    o = t.object
    if isinstance(o, (NamedNode, BlankNode)):
        return t
    c = canonical_term(o)
    return t if c == o else Triple(t.subject, t.predicate, c)


def canonical_quad(q: Quad) -> Quad:
    """``q`` with its object canonical (subjects and predicates are never literals)."""
    o = q.object
    if isinstance(o, (NamedNode, BlankNode)):
        return q
    c = canonical_term(o)
    return q if c == o else Quad(q.subject, q.predicate, c, q.graph_name)


def same_term(a: object, b: object) -> bool:
    """Whether the store holds ``a`` and ``b`` as one term (e.g. ``"0.85"`` and
    ``"0.850"`` as ``xsd:decimal``)."""
    return bool(canonical_term(a) == canonical_term(b))


# ---------------------------------------------------------------------------------------
# Builders of the literals Reckon writes (canonical by construction)
# ---------------------------------------------------------------------------------------

DECIMAL_PLACES = 18
"""Fractional digits an ``xsd:decimal`` may have: Oxigraph holds decimals as 128-bit
integers of 10^-18 (``oxsdatatypes::Decimal``); a longer fraction is stored as an
ill-typed literal that no comparison in SPARQL or in the rules can use."""

DECIMAL_MAX = Decimal("170141183460469231731.687303715884105727")  # (2**127 - 1) / 10**18
"""Largest ``xsd:decimal`` magnitude Oxigraph holds as a value (about 1.7e20)."""

_X_DECIMAL = NamedNode(_XSD + "decimal")
DECIMAL_LEXICAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
"""The ``xsd:decimal`` lexical space (XML Schema 1.1 Part 2, section 3.3.3): ASCII digits,
an optional sign and point, no exponent; match it with ``fullmatch`` after stripping
:data:`XSD_WHITESPACE`. Every text read as a decimal takes this one rule."""
XSD_WHITESPACE = " \t\r\n"
"""What XML Schema calls white space (XML 1.0 ``S``: #x20, #x9, #xD, #xA), the only
characters the ``collapse`` facet of numeric datatypes takes off a lexical form."""
_X_DATETIME = NamedNode(_XSD + "dateTime")


def decimal_literal(value: Any) -> Literal:
    """An ``xsd:decimal`` in the store's canonical form (``"40000"``, ``"2.5"``).

    :param value: ``Decimal``, ``int``, ``float`` (its shortest repr: ``0.1`` -> ``"0.1"``)
        or text in the ``xsd:decimal`` lexical space (``"34000.10"``, ``" -.5"``; XML
        Schema 1.1 Part 2 §3.3.3: ASCII digits, no exponent, so ``"1e3"`` is refused --
        it is an ``xsd:double``'s form, and SRL's ``xsd:decimal("1e3")`` is an error
        too), around which only :data:`XSD_WHITESPACE` is taken off (the whiteSpace
        facet ``collapse``; a no-break or other Unicode space is refused).
    :raises ValueError: for a boolean, text that is not a decimal, a non-finite value, a
        value with more than :data:`DECIMAL_PLACES` fractional digits or beyond
        :data:`DECIMAL_MAX` (the store could not compare it; never rounded silently).
    """
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(value, str):
        value = value.strip(XSD_WHITESPACE)  # the datatype's whiteSpace facet: collapse
        if not DECIMAL_LEXICAL.fullmatch(value):
            raise ValueError("is not an xsd:decimal (ASCII digits with an optional sign and point, no exponent)")
    try:
        d = value if isinstance(value, Decimal) else Decimal(repr(value) if isinstance(value, float) else str(value))
    except (InvalidOperation, ValueError):
        raise ValueError("is not a decimal number") from None
    if not d.is_finite():
        raise ValueError("is not a finite number")
    d = d.normalize(Context(prec=max(28, len(d.as_tuple().digits))))  # exact: never rounds
    exp = d.as_tuple().exponent
    if isinstance(exp, int) and exp < -DECIMAL_PLACES:
        raise ValueError(f"has more than {DECIMAL_PLACES} digits after the decimal point (the store keeps {DECIMAL_PLACES})")
    if d.copy_abs() > DECIMAL_MAX:
        raise ValueError(f"is beyond the largest decimal the store holds (about {float(DECIMAL_MAX):.3g})")
    text = format(d, "f")
    return canonical_term(Literal("0" if text == "-0" else text, datatype=_X_DECIMAL))


_SECOND_FRACTION = re.compile(r"\d:\d\d[.,](\d+)")


def check_datetime_text(text: str) -> str:
    """``text`` unchanged when it can be read as a ``datetime`` without losing a digit.

    ``xsd:dateTime`` allows any number of fractional-second digits (XML Schema 1.1
    Part 2, section 3.3.7); Python's ``datetime`` (and so the store's canonical
    literal) keeps six. ``datetime.fromisoformat`` and pydantic cut the rest silently
    (``12:00:00.1234567`` became ``.123456``): a seventh non-zero digit is refused
    instead (zeros after the sixth change nothing and are accepted).

    :raises ValueError: naming the digits that would be lost.
    """
    m = _SECOND_FRACTION.search(text)
    if m is not None and len(m.group(1)) > 6 and m.group(1)[6:].strip("0"):
        raise ValueError(
            f"{text!r} has {len(m.group(1))} fractional-second digits; date-times are kept "
            "to the microsecond (at most 6 digits)"
        )
    return text


def parse_datetime_text(text: str) -> datetime:
    """An ISO 8601 date-time text (``Z`` or an offset, any microsecond) as a ``datetime``
    (naive when ``text`` has no offset: the caller refuses that).

    :raises ValueError: when ``text`` is not ISO 8601 or would lose digits
        (:func:`check_datetime_text`).
    """
    return datetime.fromisoformat(check_datetime_text(text.strip()).replace("Z", "+00:00"))


def datetime_literal(value: datetime, field: str = "datetime") -> Literal:
    """An ``xsd:dateTime`` in UTC, canonical (``"2026-03-01T10:00:34.82904Z"``).

    :param value: a time-zone-aware ``datetime`` (any offset; converted to UTC).
    :param field: the input field named in the error.
    :raises InvalidInput: for a naive ``datetime`` (no time zone: Reckon never guesses
        one) or a non-``datetime``.
    """
    from reckon._errors import InvalidInput

    if not isinstance(value, datetime):
        raise InvalidInput(f"{field}: expected a datetime, got {type(value).__name__}", field=field)
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(
            f"{field}: {value.isoformat()} has no time zone; give an aware datetime "
            f"(e.g. datetime.now(timezone.utc) or a value with an offset such as +02:00)",
            field=field,
        )
    text = value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return canonical_term(Literal(text, datatype=_X_DATETIME))


_NOT_RDF_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""A character no RDF literal or IRI can hold: outside XML 1.0 ``Char`` (W3C XML 1.0,
section 2.2: ``#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]``),
the lexical space of ``xsd:string`` (XML Schema 1.1 Part 2, section 3.3.1)."""


def text_fault(text: str) -> str | None:
    """``None`` when every character of ``text`` is an XML 1.0 ``Char`` (what an RDF
    literal or IRI can hold), else what is wrong and where: ``"lone surrogate U+D800 at
    character offset 3"`` (offset: 0-based index into the Python ``str``)."""
    m = _NOT_RDF_CHAR.search(text)
    if m is None:
        return None
    c = ord(m.group())
    what = ("the NUL character" if c == 0 else "lone surrogate" if 0xD800 <= c <= 0xDFFF
            else "noncharacter" if c >= 0xFFFE else "control character")
    return f"{what} U+{c:04X} at character offset {m.start()} (not allowed in RDF text)"


def check_file_text(text: str, where: str, field: str = "path") -> str:
    """``text`` (the content of the file ``where``) unchanged when every character is
    an XML 1.0 ``Char`` (:func:`text_fault`).

    :raises InvalidInput: naming ``field``, ``where:line:column`` (1-based) of the first
        character no RDF text can hold, the character and its offset in the file.
    """
    m = _NOT_RDF_CHAR.search(text)
    if m is None:
        return text
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    raise InvalidInput(f"{where}:{line}:{col}: {text_fault(text)}", field=field)


def check_triples_text(triples: Any, where: str, field: str = "path") -> None:
    """Refuse the first parsed triple whose IRI or literal holds a character no RDF text
    can hold (written as an escape such as ``\\u0001`` or ``\\uFFFF``, which parsers
    decode; :func:`text_fault`).

    :raises InvalidInput: naming ``field``, ``where``, the triple's subject and
        predicate, the character and its offset in the term.
    """
    for t in triples:
        stack: list[Any] = [t]
        while stack:
            x = stack.pop()
            for term in (x.subject, x.predicate, x.object):
                if isinstance(term, Triple):
                    stack.append(term)
                    continue
                fault = text_fault(term.value) if isinstance(term, (Literal, NamedNode)) else None
                if fault is None and isinstance(term, Literal) and term.language:
                    fault = text_fault(term.language)
                if fault is not None:
                    what = "literal" if isinstance(term, Literal) else "IRI"
                    s_ = t.subject.value if isinstance(t.subject, NamedNode) else str(t.subject)
                    raise InvalidInput(f"{where}: the {what} of the triple about <{s_[:200]}> "
                                       f"<{t.predicate.value[:200]}>: {fault}", field=field)


def check_text(value: Any, field: str) -> Any:
    """``value`` unchanged when each string in it (nested in lists, tuples and dict keys
    and values too) holds only characters RDF text can hold (:func:`text_fault`).

    :raises InvalidInput: naming ``field`` (``field.key`` inside a dict), the character
        and its offset: a lone surrogate cannot be encoded as UTF-8 at all, and U+0000,
        other C0 controls but tab / newline / return, U+FFFE and U+FFFF are no XML
        characters (SPARQL XML results and Turtle dumps would be invalid).
    """
    if isinstance(value, str):
        fault = text_fault(value)
        if fault is not None:
            raise InvalidInput(f"{field}: {fault}", field=field)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for x in value:
            check_text(x, field)
    elif isinstance(value, dict):
        for k, x in value.items():
            check_text(k, field)
            check_text(x, f"{field}.{k}" if isinstance(k, str) and text_fault(k) is None else field)
    return value
