"""Tokenizer shared by the SRL and RDFox Datalog parsers.

Terminals follow the SRL grammar ``@terminals`` section
(``../shared/conformance/srl-spec/sparql12-rl/sparql-rl-grammar.bnf``, productions
119-153), which are the SPARQL 1.2 terminals. Numbers are emitted unsigned; the
parsers fold an adjacent ``+``/``-`` sign (productions 96-97) themselves.

One compiled regular expression scans the text once (linear time). A character that
starts no token yields an ``ERROR`` token so that the parser can report it and go on.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from reckon.store.terms import text_fault

__all__ = ["Token", "tokenize", "LineIndex", "unescape_string", "unescape_iri", "unescape_local"]

_BASE = (
    "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
    "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
_U = _BASE + "_"
_CHARS = _U + "\\-0-9\u00b7\u0300-\u036f\u203f-\u2040"
_PLX = r"(?:%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%])"
_PN_PREFIX = f"[{_BASE}](?:[{_CHARS}.]*[{_CHARS}])?"
_PN_LOCAL = f"(?:[{_U}:0-9]|{_PLX})(?:(?:[{_CHARS}.:]|{_PLX})*(?:[{_CHARS}:]|{_PLX}))?"
_VARNAME = f"[{_U}0-9][{_U}0-9\u00b7\u0300-\u036f\u203f-\u2040]*"

_PUNCT = [
    "<<(", ")>>", ":=", ":-", "<<", ">>", "{|", "|}", "||", "&&", "^^", "!=", "<=", ">=",
    "{", "}", "(", ")", "[", "]", ".", ",", ";", "~", "^", "/", "*", "+", "-", "!", "=", "<", ">", "|",
]

_SPEC = [
    ("WS", r"(?:[ \t\r\n]+|#[^\r\n]*)+"),
    ("STRING_LONG2", r'"""(?:(?:"|"")?(?:[^"\\]|\\[\s\S]))*"""'),
    ("STRING_LONG1", r"'''(?:(?:'|'')?(?:[^'\\]|\\[\s\S]))*'''"),
    ("STRING2", r'"(?:[^"\\\n\r]|\\[^\n\r])*"'),
    ("STRING1", r"'(?:[^'\\\n\r]|\\[^\n\r])*'"),
    ("TTOPEN", r"<<\("),
    ("IRI", r"<(?:[^<>\"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>"),
    ("DOUBLE", r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][+-]?[0-9]+"),
    ("DECIMAL", r"[0-9]*\.[0-9]+"),
    ("INTEGER", r"[0-9]+"),
    ("VAR", f"[?$]({_VARNAME})"),
    ("BNODE", f"_:((?:[{_U}0-9])(?:[{_CHARS}.]*[{_CHARS}])?)"),
    ("LANG", r"@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*(?:--[a-zA-Z]+)?"),
    ("ASSIGN", r":=|:-"),
    ("PNAME", f"({_PN_PREFIX})?:({_PN_LOCAL})?"),
    ("NAME", r"[A-Za-z_][A-Za-z0-9_]*"),
    ("NIL", r"\([ \t\r\n]*\)"),
    ("ANON", r"\[[ \t\r\n]*\]"),
    ("PUNCT", "|".join(re.escape(p) for p in _PUNCT)),
    ("ERROR", r"[\s\S]"),
]
_MASTER_RE: re.Pattern[str] | None = None


def _master() -> re.Pattern[str]:
    """The token regular expression, compiled on first use (~50 ms: Unicode classes)."""
    global _MASTER_RE
    if _MASTER_RE is None:
        _MASTER_RE = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _SPEC))
    return _MASTER_RE


@dataclass(slots=True)
class Token:
    """One token.

    :ivar kind: ``IRI``, ``PNAME``, ``BNODE``, ``VAR``, ``LANG``, ``STRING``, ``INTEGER``,
        ``DECIMAL``, ``DOUBLE``, ``NAME``, ``NIL``, ``ANON``, ``PUNCT``, ``ERROR`` or ``EOF``.
    :ivar value: the token's payload: for ``PUNCT``/``NAME``/``ERROR`` its text, for ``IRI``
        the raw IRI between ``<>``, for ``PNAME`` a ``(prefix, local)`` pair (raw local),
        for ``VAR``/``BNODE`` the name/label, for ``STRING`` the raw body between quotes.
    :ivar start: offset of the first character in the source text.
    :ivar end: offset just past the token.
    """

    kind: str
    value: object
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens (whitespace and ``#`` comments dropped); ends with ``EOF``."""
    out: list[Token] = []
    append = out.append
    n = len(text)
    for m in _master().finditer(text):  # ERROR matches any character: the matches are contiguous
        kind = m.lastgroup
        if kind == "WS":
            continue
        pos, end = m.span()
        if kind == "PUNCT" or kind == "NAME" or kind == "ERROR":
            append(Token(kind, m.group(), pos, end))
        elif kind == "PNAME":
            s = m.group()
            i = s.index(":")
            append(Token("PNAME", (s[:i], s[i + 1 :]), pos, end))
        elif kind == "VAR":
            append(Token("VAR", text[pos + 1 : end], pos, end))
        elif kind == "IRI":
            append(Token("IRI", text[pos + 1 : end - 1], pos, end))
        elif kind == "ASSIGN":
            append(Token("PUNCT", m.group(), pos, end))
        elif kind == "TTOPEN":
            append(Token("PUNCT", "<<(", pos, end))
        elif kind == "BNODE":
            append(Token("BNODE", text[pos + 2 : end], pos, end))
        elif kind in ("STRING_LONG1", "STRING_LONG2"):
            append(Token("STRING", text[pos + 3 : end - 3], pos, end))
        elif kind in ("STRING1", "STRING2"):
            append(Token("STRING", text[pos + 1 : end - 1], pos, end))
        else:  # DOUBLE DECIMAL INTEGER LANG NIL ANON
            append(Token(kind, m.group(), pos, end))  # type: ignore[arg-type]
    out.append(Token("EOF", "", n, n))
    return out


class LineIndex:
    """Map character offsets to 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer(r"\r\n|\n|\r", text)]

    def position(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self._starts, offset) - 1
        return i + 1, offset - self._starts[i] + 1


_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_ESC_RE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[\s\S])")


def unescape_string(raw: str) -> str:
    """Decode ECHAR / UCHAR escapes of a string literal body.

    :raises ValueError: on an escape that SPARQL does not define (e.g. ``\\q``).
    """
    if "\\" not in raw:
        return raw

    def rep(m: re.Match[str]) -> str:
        e = m.group(1)
        if len(e) > 1:
            return _codepoint(int(e[1:], 16))
        if e in _ECHAR:
            return _ECHAR[e]
        raise ValueError(f"invalid escape sequence \\{e}")

    return _ESC_RE.sub(rep, raw)


def unescape_iri(raw: str) -> str:
    """Decode UCHAR escapes inside an IRIREF."""
    if "\\" not in raw:
        return raw
    return re.sub(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})", lambda m: _codepoint(int(m.group(1) or m.group(2), 16)), raw)


def unescape_local(raw: str) -> str:
    """Drop the backslash of PN_LOCAL_ESC escapes (``\\-`` -> ``-``); ``%XX`` stays as written."""
    if "\\" not in raw:
        return raw
    return re.sub(r"\\(.)", r"\1", raw)


def _codepoint(cp: int) -> str:
    if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
        raise ValueError(f"invalid code point U+{cp:04X} in escape")
    c = chr(cp)
    fault = text_fault(c)
    if fault is not None:  # no RDF term can hold it (reckon.store.terms.text_fault)
        raise ValueError(f"escape \\u{cp:04X}: {fault.replace(' at character offset 0', '')}")
    return c
