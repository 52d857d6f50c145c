"""A small SPARQL expression reader for the expression tests.

Turns SPARQL 1.2 expression text (grammar productions 103-118 of the SRL grammar)
into :mod:`reckon.datalog.model` expressions, so that each test case is written
once and can be run both through :func:`reckon.datalog.expr.evaluate` and, as a
``SELECT``, through pyoxigraph's own SPARQL engine.
"""

from __future__ import annotations

import re

from pyoxigraph import BlankNode, Literal, NamedNode, Triple, Variable

from reckon.datalog.model import Call, Expr, TripleTermPattern

XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = {"xsd": XSD, "ex": "http://example/", "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#"}

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<tto><<\()|(?P<ttc>\)>>)
    |(?P<iri><[^<>"{}|^`\\\s]*>)
    |(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    |(?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    |(?P<var>[?$][A-Za-z_][A-Za-z_0-9]*)
    |(?P<lang>@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*(?:--[a-zA-Z]+)?)
    |(?P<bnode>_:[A-Za-z0-9_]+)
    |(?P<pname>[A-Za-z][A-Za-z0-9_]*:[A-Za-z0-9_]*)
    |(?P<word>[A-Za-z_][A-Za-z_0-9]*)
    |(?P<op>\|\||&&|!=|<=|>=|\^\^|[=<>!+\-*/(),])
    )""",
    re.VERBOSE,
)

_ESC = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESC[m.group(1)], s)


def tokenize(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise SyntaxError(f"cannot tokenize at {text[pos:]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Reader:
    def __init__(self, text: str) -> None:
        self.toks = tokenize(text)
        self.i = 0

    def peek(self, k: int = 0) -> tuple[str, str] | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, value: str) -> bool:
        t = self.peek()
        if t is not None and t[1].upper() == value.upper() and t[0] in ("op", "word"):
            self.i += 1
            return True
        return False

    def expect(self, value: str) -> None:
        if not self.accept(value):
            raise SyntaxError(f"expected {value!r} at {self.peek()!r}")

    def expr(self) -> Expr:
        left = self.and_()
        while self.accept("||"):
            left = Call("||", (left, self.and_()))
        return left

    def and_(self) -> Expr:
        left = self.rel()
        while self.accept("&&"):
            left = Call("&&", (left, self.rel()))
        return left

    def rel(self) -> Expr:
        left = self.add()
        t = self.peek()
        if t and t[0] == "op" and t[1] in ("=", "!=", "<", ">", "<=", ">="):
            self.take()
            return Call(t[1], (left, self.add()))
        if self.accept("IN"):
            return Call("IN", (left, *self.arglist()))
        if t and t[1].upper() == "NOT" and self.peek(1) and self.peek(1)[1].upper() == "IN":  # type: ignore[index]
            self.i += 2
            return Call("NOT IN", (left, *self.arglist()))
        return left

    def add(self) -> Expr:
        left = self.mul()
        while True:
            t = self.peek()
            if t and t[0] == "op" and t[1] in "+-":
                self.take()
                left = Call(t[1], (left, self.mul()))
            else:
                return left

    def mul(self) -> Expr:
        left = self.unary()
        while True:
            t = self.peek()
            if t and t[0] == "op" and t[1] in "*/":
                self.take()
                left = Call(t[1], (left, self.unary()))
            else:
                return left

    def unary(self) -> Expr:
        if self.accept("!"):
            return Call("!", (self.unary(),))
        if self.accept("-"):
            t = self.peek()
            if t and t[0] == "num":  # a negative numeric literal
                self.take()
                return _number("-" + t[1])
            return Call("UMINUS", (self.unary(),))
        if self.accept("+"):
            t = self.peek()
            if t and t[0] == "num":
                self.take()
                return _number("+" + t[1])
            return Call("UPLUS", (self.unary(),))
        return self.primary()

    def arglist(self) -> list[Expr]:
        self.expect("(")
        args: list[Expr] = []
        if self.accept(")"):
            return args
        args.append(self.expr())
        while self.accept(","):
            args.append(self.expr())
        self.expect(")")
        return args

    def primary(self) -> Expr:
        kind, val = self.take()
        if val == "(":
            e = self.expr()
            self.expect(")")
            return e
        if kind == "tto":
            s, p, o = self.primary(), self.primary(), self.primary()
            if self.take()[0] != "ttc":
                raise SyntaxError("expected )>>")
            if any(isinstance(x, (Variable, TripleTermPattern, Call)) for x in (s, p, o)):
                return TripleTermPattern(s, p, o)  # type: ignore[arg-type]
            return Triple(s, p, o)  # type: ignore[arg-type]
        if kind == "num":
            return _number(val)
        if kind == "var":
            return Variable(val[1:])
        if kind == "bnode":
            return BlankNode(val[2:])
        if kind == "str":
            lex = _unescape(val[1:-1])
            t = self.peek()
            if t and t[0] == "lang":
                self.take()
                tag = t[1][1:]
                if "--" in tag:
                    from pyoxigraph import BaseDirection

                    tag, d = tag.split("--")
                    return Literal(lex, language=tag, direction=BaseDirection.LTR if d == "ltr" else BaseDirection.RTL)
                return Literal(lex, language=tag)
            if t and t[1] == "^^":
                self.take()
                return Literal(lex, datatype=self.iri(self.take()))
            return Literal(lex)
        if kind in ("iri", "pname"):
            iri = self.iri((kind, val))
            t = self.peek()
            if t and t[1] == "(":
                return Call(iri, tuple(self.arglist()))
            return iri
        if kind == "word":
            up = val.upper()
            if up in ("TRUE", "FALSE"):
                return Literal(up.lower(), datatype=NamedNode(XSD + "boolean"))
            return Call(up, tuple(self.arglist()))
        raise SyntaxError(f"unexpected {val!r}")

    def iri(self, tok: tuple[str, str]) -> NamedNode:
        kind, val = tok
        if kind == "iri":
            return NamedNode(val[1:-1])
        if kind == "pname":
            pfx, local = val.split(":", 1)
            return NamedNode(PREFIXES[pfx] + local)
        raise SyntaxError(f"expected an IRI, got {val!r}")


def _number(text: str) -> Literal:
    if "e" in text or "E" in text:
        dt = "double"
    elif "." in text:
        dt = "decimal"
    else:
        dt = "integer"
    return Literal(text, datatype=NamedNode(XSD + dt))


def parse_expr(text: str) -> Expr:
    """Parse SPARQL expression text into a model expression.

    :raises SyntaxError: when the text is not an expression this reader understands.
    """
    r = _Reader(text)
    e = r.expr()
    if r.i != len(r.toks):
        raise SyntaxError(f"trailing tokens at {r.peek()!r}")
    return e


def sparql_prologue() -> str:
    return "".join(f"PREFIX {p}: <{iri}> " for p, iri in PREFIXES.items())
