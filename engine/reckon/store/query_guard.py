"""What a SPARQL text is, decided before anything evaluates it, and the query limits.

The read-only query interface (``Tenant.sparql``, ``reckon sparql``, the HTTP endpoint)
takes text from people it should not trust. :func:`inspect_query` reads that text with a
SPARQL 1.2 lexer written from the grammar's terminal productions (SPARQL 1.2 Query
Language, section 19.8 "Grammar": ``IRIREF``, ``PNAME_LN``, ``STRING_LITERAL*``,
``VAR1`` / ``VAR2``, ``LANG_DIR``, comments, ``<<( )>>`` ...), and then walks the token
stream iteratively (no recursion: a 10,000-deep ``(((...`` costs one pass) to decide:

* the **form**: the first keyword after the prologue (``BASE`` / ``PREFIX`` /
  ``VERSION``) must be ``SELECT``, ``CONSTRUCT``, ``DESCRIBE`` or ``ASK``; an update
  keyword (``INSERT``, ``DELETE``, ``LOAD``, ``CLEAR``, ``DROP``, ``CREATE``, ``ADD``,
  ``MOVE``, ``COPY``, ``WITH``) anywhere outside IRIs, strings, comments, variables and
  prefixed names is refused with :class:`~reckon._errors.ReadOnlyQuery`;
* ``SERVICE`` (SPARQL 1.1 Federated Query) anywhere: refused -- also inside a bare word
  or a prefix (``SERVICEex:svc``, ``service:svc``, ``trueSERVICE<...>``), because
  pyoxigraph's PEG parser matches keywords without a word boundary after them;
* the **dataset clauses** ``FROM`` / ``FROM NAMED``: the IRIs (``BASE`` and prefixes
  applied) must be public graphs of the tenant (schema, memories, business, inferred):
  the private meta graph and any other IRI are refused. The evaluator is then given
  exactly this dataset (``default_graph`` / ``named_graphs``), so the query's own
  dataset clauses never reach the store: the dataset is fixed by construction;
* the **size** (UTF-8 bytes, before lexing) and the **depth**: bracket nesting plus the
  length of operator chains (``1 + 1 + ...``, ``UNION``, sibling groups, ``||`` ...),
  which the evaluator turns into left-deep trees it walks recursively.

Escapes are read as the SPARQL 1.2 grammar and pyoxigraph 0.5 read them: ``\\uXXXX`` /
``\\UXXXXXXXX`` (``UCHAR``) only inside IRIs and strings, ``ECHAR`` inside strings,
``PN_LOCAL_ESC`` (``\\#``, ``\\'`` ...) inside prefixed names. SPARQL 1.1 (section 19.2)
instead replaced codepoint escapes everywhere before parsing; so that neither reading can
hide an update or ``SERVICE``, a text holding ``\\u`` / ``\\U`` outside those places is
also lexed after that replacement, and a keyword found in either reading is refused.

The grammar itself is checked by pyoxigraph's parser when the query is evaluated (a
syntax error becomes :class:`~reckon._errors.InvalidInput` with line and column).
rdflib's SPARQL parser was measured as an alternative and not used: it has no SPARQL 1.2
syntax (triple terms, ``LATERAL``, ``LANGDIR``, ``VERSION``), refuses valid 1.1 (``ex:a\\#b``
before ``SERVICE``) and raises ``RecursionError`` below 50 nested parentheses.

This lexer is the first wall. The second is where queries from the read-only interface
are evaluated: a worker process that cannot open an Internet socket
(:mod:`reckon.store.query_pool`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from reckon._errors import InvalidInput, QueryLimitExceeded, ReadOnlyQuery
from reckon.store.terms import text_fault
from reckon.vocab import PREFIXES

__all__ = [
    "DEFAULT_PREFIX_MAP",
    "UPDATE_KEYWORDS",
    "QueryLimits",
    "QueryPlan",
    "inspect_query",
    "tokenize",
]

UPDATE_KEYWORDS = frozenset(
    {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"}
)
"""Keywords that begin a SPARQL 1.1 Update operation (Update section 3)."""

QUERY_FORMS = ("SELECT", "CONSTRUCT", "DESCRIBE", "ASK")

DEFAULT_PREFIX_MAP: dict[str, str] = dict(PREFIXES)
"""Prefixes every read-only query may use without declaring them; a ``PREFIX`` in the
query overrides them."""


@dataclass(frozen=True)
class QueryLimits:
    """Limits of the read-only query interface (every one configurable; ``None`` = no
    limit, for trusted callers only).

    :ivar max_query_bytes: size of the query text, UTF-8 bytes (default 1 MiB). Checked
        first, before lexing. HTTP 413.
    :ivar max_depth: bracket nesting plus operator-chain length (default 1,000; the
        evaluator's parser crashed the process at about 3,000 nested braces and 10,000
        nested parentheses with an 8 MiB stack, measured with pyoxigraph 0.5.13). HTTP 400.
    :ivar timeout: seconds of evaluation before the query is cancelled and its worker
        process killed, which frees the core (default 10 s). HTTP 503.
    :ivar max_rows: solutions (SELECT) or triples (CONSTRUCT / DESCRIBE) in a result
        (default 100,000). HTTP 413 (add ``LIMIT``).
    :ivar max_result_bytes: N-Triples size of the result's terms, bytes (default 32 MiB).
        HTTP 413.
    :ivar max_memory_bytes: resident memory of a query worker process, bytes (default
        4 GiB; checked every 50 ms while it evaluates, with an address-space cap of this
        plus 4 GiB as a backstop): a query that needs more is stopped
        (``limit="resources"``), HTTP 503.
    :ivar workers: query worker processes per engine (default 2). A query waits for a
        free worker at most ``timeout`` seconds (``limit="busy"``, HTTP 503).
    """

    max_query_bytes: int | None = 1 << 20
    max_depth: int | None = 1000
    timeout: float | None = 10.0
    max_rows: int | None = 100_000
    max_result_bytes: int | None = 32 << 20
    max_memory_bytes: int | None = 4 << 30
    workers: int = 2

    def __post_init__(self) -> None:
        for name in ("max_query_bytes", "max_depth", "max_rows", "max_result_bytes", "max_memory_bytes"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise InvalidInput(f"QueryLimits.{name}: expected a positive integer or None, got {v!r}", field=name)
        if self.timeout is not None and (not isinstance(self.timeout, (int, float)) or not self.timeout > 0):
            raise InvalidInput(f"QueryLimits.timeout: expected seconds > 0 or None, got {self.timeout!r}",
                               field="timeout")
        if not isinstance(self.workers, int) or self.workers < 1:
            raise InvalidInput(f"QueryLimits.workers: expected an integer >= 1, got {self.workers!r}",
                               field="workers")


@dataclass(frozen=True)
class QueryPlan:
    """What :func:`inspect_query` decided about a text.

    :ivar text: the query text, unchanged.
    :ivar form: ``"SELECT"``, ``"CONSTRUCT"``, ``"DESCRIBE"`` or ``"ASK"``.
    :ivar from_graphs: IRIs of the ``FROM`` clauses (public graphs only), in order.
    :ivar from_named: IRIs of the ``FROM NAMED`` clauses.
    :ivar depth: the measured depth (see :class:`QueryLimits`).
    """

    text: str
    form: str
    from_graphs: tuple[str, ...] = ()
    from_named: tuple[str, ...] = ()
    depth: int = 0
    has_dataset: bool = field(default=False)


# --- lexer (SPARQL 1.2 Query Language, section 19.8, terminals) -------------------------

_PN_CHARS_BASE = (
    "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
    "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
_PN_CHARS_U = _PN_CHARS_BASE + "_"
_PN_CHARS = _PN_CHARS_U + "\\-0-9\u00b7\u0300-\u036f\u203f-\u2040"
_HEX = "[0-9A-Fa-f]"
_UCHAR = rf"\\u{_HEX}{{4}}|\\U{_HEX}{{8}}"
_ECHAR = r"\\[tbnrf\\\"']"
_PLX = rf"%{_HEX}{_HEX}|\\[_~.\-!$&'()*+,;=/?#@%]"
_PN_PREFIX = rf"[{_PN_CHARS_BASE}](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?"
_PN_LOCAL = (
    rf"(?:[{_PN_CHARS_U}:0-9]|{_PLX})"
    rf"(?:(?:[{_PN_CHARS}.:]|{_PLX})*(?:[{_PN_CHARS}:]|{_PLX}))?"
)
_VARNAME = rf"[{_PN_CHARS_U}0-9][{_PN_CHARS_U}0-9\u00b7\u0300-\u036f\u203f-\u2040]*"

_RX_SOURCES: dict[str, tuple[str, int]] = {
    "ws": (r"[ \t\r\n]+", 0),
    "comment": (r"#[^\r\n]*", 0),
    "iri": (rf"<(?:[^<>\"{{}}|^`\\\x00-\x20]|{_UCHAR})*>", 0),
    # Strings: any backslash pair is taken as one escape (a superset of ECHAR / UCHAR:
    # an invalid escape makes pyoxigraph refuse the whole query, so it hides nothing).
    "slong2": (r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""', re.DOTALL),
    "slong1": (r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''", re.DOTALL),
    "s2": (r'"[^"\\\n\r]*(?:\\[^\n\r][^"\\\n\r]*)*"', 0),
    "s1": (r"'[^'\\\n\r]*(?:\\[^\n\r][^'\\\n\r]*)*'", 0),
    "bnode": (rf"_:[{_PN_CHARS_U}0-9](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?", 0),
    "pname": (rf"(?:{_PN_PREFIX})?:(?:{_PN_LOCAL})?", 0),
    "var": (rf"[?$]{_VARNAME}", 0),
    "lang": (r"@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*(?:--[a-zA-Z]+)?", 0),
    "num": (r"(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?", 0),
    "word": (r"[A-Za-z_][A-Za-z0-9_]*", 0),
    "punct": (r"<<\(|\)>>|<<|>>|\{\||\|\}|\^\^|\|\||&&|!=|<=|>=|[(){}\[\],;.=<>!+\-*/|^~?]", 0),
}


class _Patterns(dict[str, "re.Pattern[str]"]):
    """The token patterns by kind, each compiled on its first use (compiling them all
    costs ~30 ms, mostly the Unicode classes of prefixed names, paid by every process
    that imports the store even when it never checks a query)."""

    def __missing__(self, kind: str) -> re.Pattern[str]:
        rx, flags = _RX_SOURCES[kind]
        got = self[kind] = re.compile(rx, flags)
        return got


_RX = _Patterns()
#: Which token kinds may start at a character (tried in order: the first that matches
#: wins, as the grammar's longest-match terminals require here).
_BY_FIRST: dict[str, tuple[str, ...]] = {
    **{c: ("ws",) for c in " \t\r\n"},
    "#": ("comment",),
    "<": ("iri", "punct"),
    '"': ("slong2", "s2"),
    "'": ("slong1", "s1"),
    "_": ("bnode", "pname", "word"),
    "?": ("var", "punct"),
    "$": ("var",),
    "@": ("lang",),
    ".": ("num", "punct"),
    ":": ("pname",),
    **{c: ("num",) for c in "0123456789"},
    **{c: ("punct",) for c in "(){}[],;=>!+-*/|^~&"},
}
_PNAME_CONT = frozenset(":.-")
"""ASCII characters after a bare word that may make it the prefix of a prefixed name
(so may any non-ASCII character)."""

_OPEN = {"(", "{", "[", "<<", "<<(", "{|"}
_CLOSE = {")", "}", "]", ">>", ")>>", "|}"}
#: Tokens that extend a left-deep chain in the algebra the evaluator builds (binary and
#: unary operators, path operators, group-level operations).
_CHAIN_PUNCT = {"||", "&&", "=", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/", "|", "^", "!"}
_CHAIN_WORDS = {"UNION", "OPTIONAL", "MINUS", "FILTER", "BIND", "GRAPH", "SERVICE", "VALUES", "IN", "NOT",
                "LATERAL", "EXISTS"}

Token = tuple[str, str, int]  # (kind, text, offset)


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text`` as ``(kind, text, offset)``, whitespace and comments
    dropped. Kinds: ``iri``, ``string``, ``bnode``, ``pname``, ``var``, ``lang``,
    ``num``, ``word`` (keywords and function names), ``punct``.

    :raises InvalidInput: at a character that starts no SPARQL token (line:column given).
    """
    return list(_tokens(text))


def _tokens(text: str) -> Iterator[Token]:
    i, n = 0, len(text)
    rx = _RX
    by_first = _BY_FIRST
    word = rx["word"]
    while i < n:
        c = text[i]
        kinds = by_first.get(c)
        m = None
        if kinds is None:  # a keyword / function name, or a prefixed name
            m = word.match(text, i)
            kind = "word"
            e = m.end() if m is not None else i
            if m is None or (e < n and (text[e] in _PNAME_CONT or text[e] > "\x7f")):
                p = rx["pname"].match(text, i)
                if p is not None and p.end() > i:
                    m, kind = p, "pname"
        else:
            for kind in kinds:
                m = rx[kind].match(text, i)
                if m is not None and m.end() > i:
                    break
                m = None
        if m is None:
            line = text.count("\n", 0, i) + 1
            col = i - (text.rfind("\n", 0, i) + 1) + 1
            raise InvalidInput(
                f"SPARQL query does not parse: unexpected {text[i]!r} at {line}:{col}", field="query"
            )
        if kind != "ws" and kind != "comment":
            yield ("string" if kind[0] == "s" else kind, m.group(), i)
        i = m.end()


_UESC = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


def _replace_codepoint_escapes(text: str) -> str:
    """SPARQL 1.1 section 19.2: codepoint escapes replaced before parsing."""

    def sub(m: re.Match[str]) -> str:
        cp = int(m.group(1) or m.group(2), 16)
        if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
            return m.group()
        return chr(cp)

    return _UESC.sub(sub, text)


def _unescape_iri(iri: str) -> str:
    return _UESC.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), iri)


_PN_LOCAL_ESC = re.compile(r"\\([_~.\-!$&'()*+,;=/?#@%])")


# --- structural analysis ---------------------------------------------------------------


def _lex_measured(text: str, max_depth: int | None) -> tuple[list[Token], int]:
    """Tokens and depth (nesting plus chains), stopping at the first token past
    ``max_depth`` (a 20,000-``UNION`` text is refused after ~1,000 tokens)."""
    tokens: list[Token] = []
    chains: list[int] = [0]  # chain length per open bracket frame (index 0: top level)
    opener: list[str] = [""]
    running = 0  # open frames + the chains of every open frame
    depth = 0
    for tk in _tokens(text):
        tokens.append(tk)
        kind, tok = tk[0], tk[1]
        if kind == "word":
            if tok.upper() in _CHAIN_WORDS:
                chains[-1] += 1
                running += 1
        elif kind == "punct":
            if tok in _OPEN:
                if tok == "{" and opener[-1] == "{":
                    chains[-1] += 1  # a sibling group: one more join in the parent group
                    running += 1
                chains.append(0)
                opener.append(tok)
                running += 1
            elif tok in _CLOSE:
                if len(chains) > 1:
                    running -= 1 + chains.pop()
                    opener.pop()
            elif tok in _CHAIN_PUNCT:
                chains[-1] += 1
                running += 1
        else:
            continue
        if running > depth:
            depth = running
            if max_depth is not None and depth > max_depth:
                raise QueryLimitExceeded(
                    f"SPARQL query nests too deep: more than {max_depth} levels of brackets and operator "
                    "chains (split it, or use VALUES / IN instead of long UNION / || chains)",
                    limit="depth", value=max_depth,
                )
    return tokens, depth


def _structure(
    tokens: list[Token],
) -> tuple[str | None, list[tuple[bool, str]], set[str], dict[str, str]]:
    """(form, dataset clauses [(named, iri-or-pname token)], keywords, prefixes)."""
    keywords: set[str] = set()
    prefixes: dict[str, str] = {}
    form: str | None = None
    dataset: list[tuple[bool, str]] = []
    # prologue: BASE <iri> | PREFIX pname: <iri> | VERSION "..."
    i, n = 0, len(tokens)
    while i < n and tokens[i][0] == "word":
        w = tokens[i][1].upper()
        if w == "BASE" and i + 1 < n and tokens[i + 1][0] == "iri":
            i += 2
        elif w == "PREFIX" and i + 2 < n and tokens[i + 1][0] == "pname" and tokens[i + 2][0] == "iri":
            prefixes[tokens[i + 1][1].rstrip(":")] = _unescape_iri(tokens[i + 2][1][1:-1])
            i += 3
        elif w == "VERSION" and i + 1 < n and tokens[i + 1][0] == "string":
            i += 2
        else:
            break
    if i < n and tokens[i][0] == "word":
        form = tokens[i][1].upper()
    level = 0
    for j in range(n):
        kind, tok, _off = tokens[j]
        if kind == "word":
            w = tok.upper()
            keywords.add(w)
            # pyoxigraph's PEG parser matches a keyword at any position without a word
            # boundary after it (``SERVICESILENT<...>``, ``ASKWHERE{}``, ``?s ?p
            # trueSERVICE<...>{}`` all parse): a bare word holding SERVICE anywhere, or
            # starting with an update keyword, is taken for that keyword
            if "SERVICE" in w:
                keywords.add("SERVICE")
            for u in UPDATE_KEYWORDS:
                if w.startswith(u):
                    keywords.add(u)
            if w == "FROM" and level == 0:
                k = j + 1
                named = k < n and tokens[k][0] == "word" and tokens[k][1].upper() == "NAMED"
                if named:
                    k += 1
                ok = k < n and tokens[k][0] in ("iri", "pname")
                dataset.append((named, tokens[k][1] if ok else ""))
        elif kind == "punct":
            if tok in _OPEN:
                level += 1
            elif tok in _CLOSE and level > 0:
                level -= 1
        elif kind == "pname" and "SERVICE" in tok.split(":", 1)[0].upper():
            # ``SERVICEex:svc`` and ``service:svc`` (default prefix) parse as SERVICE
            keywords.add("SERVICE")
        elif kind == "iri" and ")" in tok and "SERVICE" in tok.upper():
            # ``?a<?b)SERVICE...>``: a '<' comparison read as an IRI could only hide a
            # keyword behind a ')'; refuse rather than guess which reading pyoxigraph takes
            keywords.add("SERVICE")
    return form, dataset, keywords, prefixes


def inspect_query(text: object, limits: QueryLimits | None = None, *, public_graphs: tuple[str, ...] = ()) -> QueryPlan:
    """Decide what a SPARQL text is before evaluating it (see the module docstring).

    :param limits: size and depth limits (``None``: none, for trusted internal queries).
    :param public_graphs: IRIs a ``FROM`` / ``FROM NAMED`` clause may name (empty: any
        dataset clause is refused).
    :returns: the :class:`QueryPlan`.
    :raises InvalidInput: when ``text`` is not a ``str``, holds a character no RDF text
        can hold (a lone surrogate, U+0000: :func:`reckon.store.terms.text_fault`, named
        with its offset) or a character that starts no SPARQL token, or a dataset clause names a graph outside
        ``public_graphs``.
    :raises ReadOnlyQuery: for an update or ``SERVICE``.
    :raises QueryLimitExceeded: over ``max_query_bytes`` (``limit="query_bytes"``) or
        ``max_depth`` (``limit="depth"``).
    """
    if not isinstance(text, str):
        raise InvalidInput(f"SPARQL query must be a str, not {type(text).__name__}", field="query")
    fault = text_fault(text)
    if fault is not None:
        raise InvalidInput(f"SPARQL query: {fault}", field="query")
    if limits is not None and limits.max_query_bytes is not None:
        size = len(text) if len(text) * 4 <= limits.max_query_bytes else len(text.encode("utf-8", "surrogatepass"))
        if size > limits.max_query_bytes:
            raise QueryLimitExceeded(
                f"SPARQL query is {size} bytes; the limit is {limits.max_query_bytes} bytes",
                limit="query_bytes", value=limits.max_query_bytes,
            )
    # The 1.1 reading (codepoint escapes replaced first) only adds keywords to refuse.
    keywords: set[str] = set()
    if "\\u" in text or "\\U" in text:
        try:
            keywords |= _structure(tokenize(_replace_codepoint_escapes(text)))[2]
        except InvalidInput:
            pass
    max_depth = limits.max_depth if limits is not None else None
    try:
        tokens, depth = _lex_measured(text, max_depth)
    except InvalidInput:
        _refuse(keywords, None)
        raise
    form, dataset, kw, prefixes = _structure(tokens)
    keywords |= kw
    _refuse(keywords, form)
    if form not in QUERY_FORMS:
        raise InvalidInput(
            "SPARQL query does not parse: expected SELECT, CONSTRUCT, DESCRIBE or ASK after the prologue"
            + (f", found {form}" if form else ""),
            field="query",
        )
    from_graphs: list[str] = []
    from_named: list[str] = []
    for named, tok in dataset:
        iri = _resolve(tok, prefixes)
        if iri is None or iri not in public_graphs:
            clause = "FROM NAMED" if named else "FROM"
            raise InvalidInput(
                f"{clause} {tok or '(nothing)'}: a dataset clause may name only the tenant's public graphs "
                f"({', '.join('<' + g + '>' for g in public_graphs) or 'none here'})",
                field="query",
            )
        (from_named if named else from_graphs).append(iri)
    return QueryPlan(text=text, form=form, from_graphs=tuple(from_graphs), from_named=tuple(from_named),
                     depth=depth, has_dataset=bool(dataset))


def _refuse(keywords: set[str], form: str | None) -> None:
    found = sorted(keywords & UPDATE_KEYWORDS)
    if found or (form is not None and form in UPDATE_KEYWORDS):
        raise ReadOnlyQuery(
            f"SPARQL update ({', '.join(found or [form or ''])}) refused: this interface is read-only"
        )
    if "SERVICE" in keywords:
        raise ReadOnlyQuery(
            "SERVICE (federated query) is not allowed on the read-only query interface (a bare word or "
            "prefix containing 'service' is read as SERVICE too: rename such a prefix)"
        )


def _resolve(tok: str, prefixes: dict[str, str]) -> str | None:
    if not tok:
        return None
    if tok.startswith("<"):
        iri = _unescape_iri(tok[1:-1])
        # only absolute IRIs: a relative one would depend on BASE resolution details
        return iri if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", iri) else None
    prefix, _, local = tok.partition(":")
    ns = prefixes.get(prefix, DEFAULT_PREFIX_MAP.get(prefix))
    if ns is None:
        return None
    return ns + _PN_LOCAL_ESC.sub(r"\1", local)
