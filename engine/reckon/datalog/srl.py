"""Parser for SRL, the W3C draft *SPARQL 1.2 Rules Language* (SPARQL-RL).

Source: ``../shared/conformance/srl-spec/sparql12-rl/sparql-rl-grammar.bnf`` (153
productions, after CHANGES.md 2026-08-24: ``IF ... THEN`` and ``FOR ?v IN`` removed)
and ``index.html`` section "SPARQL-RL Abstract Syntax". A hand-written recursive-descent
parser over the tokens of :mod:`reckon.datalog._lexer`; one pass, linear in the text.

What the parser normalises (so evaluators never see it; see :mod:`reckon.datalog.model`):

* blank nodes in a rule *body* become variables: ``_:x`` -> ``?__bn_x``; anonymous
  ``[]``, ``[ :p ?o ]``, collection cells and unnamed reifiers -> ``?__anon_<n>``;
* property paths ``p1/p2``, ``^p`` and ``( ... )`` become triple patterns joined by
  fresh variables ``?__path_<n>`` (``n`` counts per rule from 1);
* RDF 1.2 reification (RDF 1.2 Turtle / SPARQL 1.2 semantics):
  ``s p o ~r {| q z |}`` -> ``s p o . r rdf:reifies <<( s p o )>> . r q z``;
  ``<< s p o ~r >>`` used as a term -> ``r rdf:reifies <<( s p o )>>`` and the term ``r``
  (the triple ``s p o`` itself is *not* asserted); without ``~r`` the reifier is a fresh
  blank node (a variable in a body);
* collections ``( a b )`` -> ``rdf:first`` / ``rdf:rest`` / ``rdf:nil`` triples;
* in heads, ``[]``, ``_:x``, collection cells and unnamed reifiers are ``BlankNode``
  templates (the evaluator freshens them per solution); a head triple term that holds a
  blank node is kept as a :class:`~reckon.datalog.model.TripleTermPattern` so that it
  is instantiated (and freshened) like a pattern;
* expressions become :class:`~reckon.datalog.model.Call` with upper-case names;
  synonyms are normalised: ``URI`` -> ``IRI``, ``isURI`` -> ``ISIRI``; a numeric literal
  written with an adjacent sign (``-5``) is one literal (productions 96-97).

Reckon extension (not in the draft): ``AGGREGATE(?v := COUNT(DISTINCT? expr|*)) { ... }``
as a body element -> :class:`~reckon.datalog.model.Aggregate` (DESIGN.md, Rules).

All syntax errors of a text are collected (the parser resumes at the next ``RULE``,
``DATA``, ``PREFIX``, ``BASE``, ``VERSION`` or ``IMPORTS``) and raised together.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn, cast

from pyoxigraph import BaseDirection, BlankNode, Literal, NamedNode, Triple, Variable

from reckon._errors import RuleSetInvalid, RuleSyntaxError
from reckon.datalog._lexer import LineIndex, Token, tokenize, unescape_iri, unescape_local, unescape_string
from reckon.datalog.diagnostics import Diagnostic
from reckon.datalog.model import (
    Aggregate,
    Assignment,
    BodyElement,
    Call,
    Expr,
    Filter,
    Location,
    Negation,
    PatternTerm,
    Rule,
    RuleSet,
    TriplePattern,
    TripleTermPattern,
)

__all__ = ["parse_srl", "SYNTAX_CODES"]

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = NamedNode(RDF + "type")
RDF_FIRST = NamedNode(RDF + "first")
RDF_REST = NamedNode(RDF + "rest")
RDF_NIL = NamedNode(RDF + "nil")
RDF_REIFIES = NamedNode(RDF + "reifies")
XSD_INTEGER = NamedNode(XSD + "integer")
XSD_DECIMAL = NamedNode(XSD + "decimal")
XSD_DOUBLE = NamedNode(XSD + "double")
XSD_BOOLEAN = NamedNode(XSD + "boolean")
_UNKNOWN = "urn:reckon:unknown-prefix:"
_INVALID = "urn:reckon:invalid-iri"
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_IRI_PARTS = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.S)

SYNTAX_CODES = frozenset({"SRL001", "SRL010", "SRL013"})
"""Diagnostic codes raised as :class:`~reckon.RuleSyntaxError`; others as ``RuleSetInvalid``."""

# BuiltInCall (production 118): name -> (min args, max args); None = ExpressionList.
BUILTINS: dict[str, tuple[int, int] | None] = {
    "STR": (1, 1), "LANG": (1, 1), "LANGMATCHES": (2, 2), "LANGDIR": (1, 1), "DATATYPE": (1, 1),
    "IRI": (1, 1), "URI": (1, 1), "BNODE": (0, 1), "ABS": (1, 1), "CEIL": (1, 1), "FLOOR": (1, 1),
    "ROUND": (1, 1), "CONCAT": None, "SUBSTR": (2, 3), "STRLEN": (1, 1), "REPLACE": (3, 4),
    "UCASE": (1, 1), "LCASE": (1, 1), "ENCODE_FOR_URI": (1, 1), "CONTAINS": (2, 2),
    "STRSTARTS": (2, 2), "STRENDS": (2, 2), "STRBEFORE": (2, 2), "STRAFTER": (2, 2),
    "YEAR": (1, 1), "MONTH": (1, 1), "DAY": (1, 1), "HOURS": (1, 1), "MINUTES": (1, 1),
    "SECONDS": (1, 1), "TIMEZONE": (1, 1), "TZ": (1, 1), "NOW": (0, 0), "UUID": (0, 0),
    "STRUUID": (0, 0), "IF": (3, 3), "STRLANG": (2, 2), "STRLANGDIR": (3, 3), "STRDT": (2, 2),
    "SAMETERM": (2, 2), "ISIRI": (1, 1), "ISURI": (1, 1), "ISBLANK": (1, 1), "ISLITERAL": (1, 1),
    "ISNUMERIC": (1, 1), "HASLANG": (1, 1), "HASLANGDIR": (1, 1), "REGEX": (2, 3),
    "ISTRIPLE": (1, 1), "TRIPLE": (3, 3), "SUBJECT": (1, 1), "PREDICATE": (1, 1), "OBJECT": (1, 1),
}
_SYNONYMS = {"URI": "IRI", "ISURI": "ISIRI"}
AGGREGATE_FUNCTIONS = frozenset({"COUNT", "SUM", "MIN", "MAX", "AVG"})

_TOP_KEYWORDS = frozenset({"RULE", "DATA", "PREFIX", "BASE", "VERSION", "IMPORTS"})
_BODY_KEYWORDS = frozenset({"FILTER", "NOT", "SET", "AGGREGATE"})
_NUMBER_KINDS = frozenset({"INTEGER", "DECIMAL", "DOUBLE"})

Mode = str  # "data" | "head" | "body"


class _ParseError(Exception):
    """Unwinds to the recovery point; the diagnostic is already recorded."""


def parse_srl(text: str, *, file: str = "<string>", base: str | None = None, check: bool = True) -> RuleSet:
    """Parse an SRL rule set.

    :param text: the SRL document.
    :param file: name used in diagnostics and rule locations.
    :param base: base IRI for relative IRIs (a ``BASE`` in the text overrides it).
    :param check: also check the well-formedness conditions (spec "Well-formedness
        Conditions", :func:`reckon.datalog.wellformed.check_wellformed`).
    :returns: the :class:`~reckon.datalog.model.RuleSet` (rules in source order, DATA
        triples, IMPORTS IRIs, prefixes).
    :raises RuleSyntaxError: with every syntax error of the text (codes SRL001, SRL010,
        SRL013), each with file:line:column.
    :raises RuleSetInvalid: on unknown prefixes (SRL002), unrepresentable terms (SRL011)
        or, when ``check``, a rule that is not well-formed (SRL003-SRL007, SRL012).

    >>> rs = parse_srl("PREFIX : <http://example/> RULE { ?x a :B } WHERE { ?x a :A }")
    >>> str(rs.rules[0].head[0])
    '?x <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example/B>'
    """
    p = SrlParser(text, file=file, base=base)
    rs = p.parse_ruleset()
    p.raise_problems()
    if check:
        from reckon.datalog.wellformed import check_wellformed  # next pipeline stage

        problems = check_wellformed(rs)
        if problems:
            raise RuleSetInvalid(problems)
    return rs


class TermParser:
    """Token cursor, diagnostics, RDF terms and the SPARQL expression grammar.

    Shared by :class:`SrlParser` and the RDFox Datalog parser (:mod:`reckon.datalog.dlog`).
    """

    def __init__(self, text: str, *, file: str = "<string>", base: str | None = None) -> None:
        self.text = text
        self.file = file
        self.base = base
        self.toks = tokenize(text)
        self.toks.extend([self.toks[-1]] * 4)  # EOF padding: peek(k) never runs off the end
        self.i = 0
        self.lines = LineIndex(text)
        self.diagnostics: list[Diagnostic] = []
        self.prefixes: dict[str, str] = {}
        self.mode: Mode = "body"
        self._bnode_vars: dict[str, Variable] = {}
        self._head_bnodes: dict[str, BlankNode] = {}
        self._data_bnodes: dict[str, BlankNode] = {}
        self._anon = 0
        self._paths = 0
        self._bnode_prefix = ""
        self._bnodes_made = 0
        for t in self.toks:
            if t.kind == "ERROR":
                self.diag("SRL001", f"unexpected character {t.value!r}", t)

    # -- cursor -------------------------------------------------------------------
    def peek(self, k: int = 0) -> Token:
        return self.toks[self.i + k]

    def next(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "EOF":
            self.i += 1
        return t

    def at(self, value: str, k: int = 0) -> bool:
        t = self.toks[self.i + k]
        return t.value == value and t.kind == "PUNCT"

    def at_kw(self, kw: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == "NAME" and str(t.value).upper() == kw

    def accept(self, value: str) -> bool:
        if self.at(value):
            self.i += 1
            return True
        return False

    def expect(self, value: str, what: str | None = None) -> Token:
        if self.at(value):
            return self.next()
        self.fail(f"expected {what or repr(value)}, found {self.describe(self.peek())}")

    def expect_kw(self, kw: str) -> Token:
        if self.at_kw(kw):
            return self.next()
        self.fail(f"expected {kw!r}, found {self.describe(self.peek())}")

    # -- diagnostics --------------------------------------------------------------
    def loc(self, t: Token) -> Location:
        line, col = self.lines.position(t.start)
        return Location(self.file, line, col)

    def diag(self, code: str, message: str, t: Token | None = None) -> None:
        t = t or self.peek()
        line, col = self.lines.position(t.start)
        self.diagnostics.append(Diagnostic(code, message, self.file, line, col))

    def fail(self, message: str, code: str = "SRL001", t: Token | None = None) -> NoReturn:
        self.diag(code, message, t)
        raise _ParseError(message)

    @staticmethod
    def describe(t: Token) -> str:
        if t.kind == "EOF":
            return "end of input"
        if t.kind in ("PUNCT", "NAME", "ERROR"):
            return repr(t.value)
        if t.kind == "PNAME":
            pfx, local = cast("tuple[str, str]", t.value)
            return f"prefixed name '{pfx}:{local}'"
        if t.kind == "IRI":
            return f"IRI <{t.value}>"
        if t.kind == "VAR":
            return f"variable ?{t.value}"
        if t.kind == "BNODE":
            return f"blank node _:{t.value}"
        if t.kind == "STRING":
            return "string literal"
        if t.kind == "LANG":
            return f"language tag {t.value}"
        return f"{t.kind.lower()} {t.value}"

    def raise_problems(self) -> None:
        """Raise the collected diagnostics: ``RuleSyntaxError`` if any is a syntax error."""
        if not self.diagnostics:
            return
        ds = sorted(self.diagnostics, key=lambda d: (d.line, d.column))
        if any(d.code in SYNTAX_CODES for d in ds):
            raise RuleSyntaxError(ds)
        raise RuleSetInvalid(ds)

    # -- IRIs ---------------------------------------------------------------------
    def resolve(self, raw: str, t: Token) -> NamedNode:
        try:
            iri = unescape_iri(raw)
        except ValueError as e:
            self.diag("SRL013", str(e), t)
            return NamedNode(_INVALID)
        if not _ABSOLUTE.match(iri):
            if self.base is None:
                self.diag("SRL013", f"relative IRI <{raw}> and no BASE to resolve it against", t)
                return NamedNode(_INVALID)
            iri = resolve_iri(self.base, iri)
        try:
            return NamedNode(iri)
        except ValueError as e:
            self.diag("SRL013", f"invalid IRI <{raw}>: {e}", t)
            return NamedNode(_INVALID)

    def iri(self) -> NamedNode:
        t = self.peek()
        if t.kind == "IRI":
            self.next()
            return self.resolve(str(t.value), t)
        if t.kind == "PNAME":
            self.next()
            return self.expand(t)
        self.fail(f"expected an IRI, found {self.describe(t)}")

    def expand(self, t: Token) -> NamedNode:
        pfx, local = cast("tuple[str, str]", t.value)
        ns = self.prefixes.get(pfx)
        if ns is None:
            self.diag("SRL002", f"unknown prefix '{pfx}:' (no PREFIX declaration before it)", t)
            return NamedNode(_UNKNOWN + pfx)
        try:
            return NamedNode(ns + unescape_local(local))
        except ValueError as e:
            self.fail(f"invalid IRI from '{pfx}:{local}': {e}", "SRL013", t)

    def is_iri_start(self, k: int = 0) -> bool:
        return self.peek(k).kind in ("IRI", "PNAME")

    # -- literals -----------------------------------------------------------------
    def literal(self) -> Literal:
        """RDFLiteral | NumericLiteral | BooleanLiteral at the cursor."""
        t = self.peek()
        if t.kind == "STRING":
            self.next()
            try:
                value = unescape_string(str(t.value))
            except ValueError as e:
                self.diag("SRL013", str(e), t)
                value = str(t.value)
            nt = self.peek()
            if nt.kind == "LANG":
                self.next()
                tag = str(nt.value)[1:]
                lang, _, direction = tag.partition("--")
                if direction:
                    if direction not in ("ltr", "rtl"):
                        self.diag("SRL001", f"invalid base direction {direction!r} in {nt.value} (expected 'ltr' or 'rtl')", nt)
                        return Literal(value, language=lang)
                    return Literal(value, language=lang, direction=BaseDirection.LTR if direction == "ltr" else BaseDirection.RTL)
                try:
                    return Literal(value, language=lang)
                except ValueError as e:
                    self.diag("SRL013", f"invalid language tag {nt.value}: {e}", nt)
                    return Literal(value)
            if self.accept("^^"):
                dt = self.iri()
                try:
                    return Literal(value, datatype=dt)
                except ValueError as e:
                    self.diag("SRL013", f"invalid literal: {e}", t)
                    return Literal(value)
            return Literal(value)
        if t.kind in _NUMBER_KINDS:
            self.next()
            return self.number(t, "")
        if t.kind == "PUNCT" and t.value in ("+", "-"):
            nt = self.peek(1)
            if nt.kind in _NUMBER_KINDS and nt.start == t.end:
                self.next()
                self.next()
                return self.number(nt, str(t.value))
        if t.kind == "NAME" and str(t.value).lower() in ("true", "false"):
            self.next()
            return Literal(str(t.value).lower(), datatype=XSD_BOOLEAN)
        self.fail(f"expected a literal, found {self.describe(t)}")

    @staticmethod
    def number(t: Token, sign: str) -> Literal:
        dt = {"INTEGER": XSD_INTEGER, "DECIMAL": XSD_DECIMAL, "DOUBLE": XSD_DOUBLE}[t.kind]
        return Literal(sign + str(t.value), datatype=dt)

    def is_literal_start(self, k: int = 0) -> bool:
        t = self.peek(k)
        if t.kind in ("STRING", "INTEGER", "DECIMAL", "DOUBLE"):
            return True
        if t.kind == "NAME" and str(t.value).lower() in ("true", "false"):
            return True
        if t.kind == "PUNCT" and t.value in ("+", "-"):
            nt = self.peek(k + 1)
            return nt.kind in _NUMBER_KINDS and nt.start == t.end
        return False

    # -- variables and blank nodes ------------------------------------------------
    def variable(self, t: Token) -> Variable:
        if self.mode == "data":
            self.fail(f"variable ?{t.value} is not allowed in a DATA block", "SRL010", t)
        return Variable(str(t.value))

    def bnode(self, label: str | None) -> BlankNode | Variable:
        """A blank node in the current mode: a variable in a body, a BlankNode elsewhere."""
        if self.mode == "body":
            if label is None:
                self._anon += 1
                return Variable(f"__anon_{self._anon}")
            v = self._bnode_vars.get(label)
            if v is None:
                v = self._bnode_vars[label] = _bn_var(label)
            return v
        if label is None:
            return self._new_bnode()
        table = self._head_bnodes if self.mode == "head" else self._data_bnodes
        b = table.get(label)
        if b is None:
            b = table[label] = self._new_bnode()
        return b

    def _new_bnode(self) -> BlankNode:
        """A blank node named deterministically: a digest of the document (file, base
        IRI, text) and a counter, so the same text always parses to the same rule set
        (a DATA block's blank nodes are the same in every process, and a cached parse is
        exactly a re-parse) while two documents never share one."""
        if not self._bnode_prefix:
            import hashlib

            doc = f"{self.file}\0{self.base}\0{self.text}".encode("utf-8", "surrogatepass")
            self._bnode_prefix = "r" + hashlib.sha256(doc).hexdigest()[:20]
        self._bnodes_made += 1
        return BlankNode(f"{self._bnode_prefix}b{self._bnodes_made}")

    def fresh_path_var(self) -> Variable:
        self._paths += 1
        return Variable(f"__path_{self._paths}")

    def reset_rule_scope(self) -> None:
        self._bnode_vars = {}
        self._head_bnodes = {}
        self._anon = 0
        self._paths = 0

    def make_triple_term(self, s: PatternTerm, p: PatternTerm, o: PatternTerm, t: Token) -> Triple | TripleTermPattern:
        """``<<( s p o )>>``: a ground ``Triple``, else a :class:`TripleTermPattern`."""
        if _open(s) or _open(p) or _open(o) or (self.mode == "head" and (_bn(s) or _bn(o))):
            return TripleTermPattern(s, p, o)
        try:
            return Triple(s, p, o)  # type: ignore[arg-type]
        except TypeError:
            self.diag(
                "SRL011",
                f"triple term <<( {s} {p} {o} )>> cannot be represented (RDF 1.2: the subject of a triple term is an IRI or blank node)",
                t,
            )
            return TripleTermPattern(s, p, o)

    # -- expressions (productions 103-118) ------------------------------------------
    def expression(self) -> Expr:
        left = self.and_expr()
        while self.accept("||"):
            left = Call("||", (left, self.and_expr()))
        return left

    def and_expr(self) -> Expr:
        left = self.relational()
        while self.accept("&&"):
            left = Call("&&", (left, self.relational()))
        return left

    def relational(self) -> Expr:
        left = self.additive()
        t = self.peek()
        if t.kind == "PUNCT" and t.value in ("=", "!=", "<", ">", "<=", ">="):
            self.next()
            return Call(str(t.value), (left, self.additive()))
        if self.at_kw("IN"):
            self.next()
            return Call("IN", (left, *self.expression_list()))
        if self.at_kw("NOT") and self.at_kw("IN", 1):
            self.next()
            self.next()
            return Call("NOT IN", (left, *self.expression_list()))
        return left

    def additive(self) -> Expr:
        left = self.multiplicative()
        while True:
            t = self.peek()
            if t.kind == "PUNCT" and t.value in ("+", "-"):
                self.next()
                left = Call(str(t.value), (left, self.multiplicative()))
            else:
                return left

    def multiplicative(self) -> Expr:
        left = self.unary()
        while True:
            t = self.peek()
            if t.kind == "PUNCT" and t.value in ("*", "/"):
                self.next()
                left = Call(str(t.value), (left, self.unary()))
            else:
                return left

    def unary(self) -> Expr:
        if self.accept("!"):
            return Call("!", (self.primary(),))
        if self.is_literal_start():
            return self.primary()
        if self.accept("+"):
            return Call("UPLUS", (self.primary(),))
        if self.accept("-"):
            return Call("UMINUS", (self.primary(),))
        return self.primary()

    def primary(self) -> Expr:
        t = self.peek()
        if self.at("("):
            return self.bracketted()
        if t.kind == "VAR":
            self.next()
            return self.variable(t)
        if self.is_literal_start():
            return self.literal()
        if t.kind == "NAME":
            return self.builtin_call()
        if t.kind in ("IRI", "PNAME"):
            name = self.iri()
            if self.at("(") or self.peek().kind == "NIL":
                return Call(name, self.arg_list())
            return name
        if self.at("<<("):
            return self.expr_triple_term()
        self.fail(f"expected an expression, found {self.describe(t)}")

    def bracketted(self) -> Expr:
        self.expect("(")
        e = self.expression()
        self.expect(")")
        return e

    def arg_list(self) -> tuple[Expr, ...]:
        if self.peek().kind == "NIL":
            self.next()
            return ()
        self.expect("(", "'(' to start the argument list")
        args = [self.expression()]
        while self.accept(","):
            args.append(self.expression())
        self.expect(")", "',' or ')'")
        return tuple(args)

    expression_list = arg_list

    def builtin_call(self) -> Call:
        t = self.next()
        name = str(t.value).upper()
        if name == "EXISTS" or (name == "NOT" and self.at_kw("EXISTS")):
            what = "FILTER NOT EXISTS" if name == "NOT" else "FILTER EXISTS"
            instead = ("write NOT { ... } (stratified negation) in the body instead" if name == "NOT"
                       else "write its patterns in the body instead")
            self.fail(f"{what} is not supported in rule bodies; {instead}", "SRL011", t=t)
        if name not in BUILTINS:
            self.fail(f"unknown function {t.value!r} (expected a SPARQL built-in, an IRI function or an expression)", t=t)
        arity = BUILTINS[name]
        args = self.arg_list()
        if arity is not None and not (arity[0] <= len(args) <= arity[1]):
            want = str(arity[0]) if arity[0] == arity[1] else f"{arity[0]} to {arity[1]}"
            self.fail(f"{name} takes {want} argument(s), found {len(args)}", t=t)
        return Call(_SYNONYMS.get(name, name), args)

    def expr_triple_term(self) -> Expr:
        t = self.expect("<<(")
        s = self.expr_tt_part(subject=True)
        p = self.verb_simple()
        o = self.expr_tt_part(subject=False)
        self.close_triple_term()
        return self.make_triple_term(s, p, o, t)

    def close_triple_term(self) -> None:
        if self.accept(")>>"):
            return
        if self.at(")") and self.at(">>", 1):
            self.i += 2
            return
        self.fail(f"expected ')>>' to close the triple term, found {self.describe(self.peek())}")

    def expr_tt_part(self, subject: bool) -> PatternTerm:
        t = self.peek()
        if t.kind == "VAR":
            self.next()
            return self.variable(t)
        if t.kind in ("IRI", "PNAME"):
            return self.iri()
        if not subject and self.at("<<("):
            return self.expr_triple_term()  # type: ignore[return-value]
        return self.literal()

    def verb_simple(self) -> PatternTerm:
        """Verb ::= VarOrIri | 'a' (no paths)."""
        t = self.peek()
        if t.kind == "NAME" and t.value == "a":
            self.next()
            return RDF_TYPE
        if t.kind == "VAR":
            self.next()
            return self.variable(t)
        if t.kind in ("IRI", "PNAME"):
            return self.iri()
        self.fail(f"expected a predicate (IRI, variable or 'a'), found {self.describe(t)}")


class SrlParser(TermParser):
    """Recursive-descent parser for the SRL grammar (productions 1-102)."""

    def __init__(self, text: str, *, file: str = "<string>", base: str | None = None) -> None:
        super().__init__(text, file=file, base=base)
        self.rules: list[Rule] = []
        self.data: list[Triple] = []
        self.imports: list[NamedNode] = []
        self._out: list[TriplePattern] = []

    # -- rule set -----------------------------------------------------------------
    def parse_ruleset(self) -> RuleSet:
        while self.peek().kind != "EOF":
            start = self.i
            try:
                self.top_level()
            except _ParseError:
                self.recover(start)
        seen: set[Triple] = set()
        data = tuple(t for t in self.data if not (t in seen or seen.add(t)))  # type: ignore[func-returns-value]
        return RuleSet(
            rules=tuple(self.rules),
            data=data,
            imports=tuple(self.imports),
            prefixes=dict(self.prefixes),
            base=self.base,
            source=self.file,
        )

    def recover(self, start: int) -> None:
        if self.i == start:
            self.next()
        while True:
            t = self.peek()
            if t.kind == "EOF":
                return
            if t.kind == "NAME":
                kw = str(t.value).upper()
                if kw in _TOP_KEYWORDS:
                    prev = self.toks[self.i - 1] if self.i > 0 else None
                    after_where = prev is not None and prev.kind == "NAME" and str(prev.value).upper() in ("WHERE", "NOT")
                    if not (kw == "DATA" and after_where):
                        return
            self.next()

    def top_level(self) -> None:
        t = self.peek()
        kw = str(t.value).upper() if t.kind == "NAME" else ""
        if kw == "BASE":
            self.next()
            it = self.peek()
            if it.kind != "IRI":
                self.fail(f"expected an IRI after BASE, found {self.describe(it)}")
            self.next()
            self.base = self.resolve(str(it.value), it).value
        elif kw == "PREFIX":
            self.next()
            pt = self.peek()
            if pt.kind != "PNAME" or pt.value[1]:  # type: ignore[index]
                self.fail(f"expected a prefix name such as 'ex:' after PREFIX, found {self.describe(pt)}")
            self.next()
            it = self.peek()
            if it.kind != "IRI":
                self.fail(f"expected an IRI after PREFIX {pt.value[0]}:, found {self.describe(it)}")  # type: ignore[index]
            self.next()
            self.prefixes[pt.value[0]] = self.resolve(str(it.value), it).value  # type: ignore[index]
        elif kw == "VERSION":
            self.next()
            st = self.peek()
            if st.kind != "STRING" or self.text[st.start : st.start + 3] in ('"""', "'''"):
                self.fail(f"expected a short string after VERSION, found {self.describe(st)}")
            self.next()
        elif kw == "IMPORTS":
            self.next()
            self.imports.append(self.iri())
        elif kw == "RULE":
            self.rule()
        elif kw == "DATA":
            self.data_block()
        else:
            self.fail(f"expected RULE, DATA, PREFIX, BASE, VERSION or IMPORTS, found {self.describe(t)}")

    def data_block(self) -> None:
        self.expect_kw("DATA")
        self.mode = "data"
        self._out = []
        self.expect("{")
        if not self.at("}"):
            self.triples_block(stop=("}",))
        self.expect("}", "'.' or '}'")
        for tp in self._out:
            try:
                self.data.append(Triple(tp.s, tp.p, tp.o))  # type: ignore[arg-type]
            except TypeError:
                line, col = (tp.loc.line, tp.loc.column) if tp.loc else (0, 0)
                self.diagnostics.append(
                    Diagnostic(
                        "SRL011",
                        f"DATA triple {tp} cannot be stored: RDF 1.2 allows only an IRI or blank node as subject",
                        self.file, line, col,
                    )
                )

    def rule(self) -> None:
        kw = self.expect_kw("RULE")
        self.reset_rule_scope()
        rule_id = None
        if self.is_iri_start():
            rule_id = self.iri()
        # head
        self.mode = "head"
        self._out = []
        self.expect("{", "'{' to start the rule head")
        if not self.at("}"):
            self.triples_block(stop=("}",))
        self.expect("}", "'.' or '}' to end the rule head")
        head = tuple(self._out)
        self.mode = "body"
        self.expect_kw("WHERE")
        data = False
        if self.at_kw("DATA"):
            self.next()
            data = True
        body = self.body(top=True)
        end = self.toks[self.i - 1].end
        self.rules.append(Rule(head=head, body=tuple(body), id=rule_id, data=data, loc=self.loc(kw), text=self.text[kw.start : end]))

    def body(self, top: bool) -> list[BodyElement]:
        """BodyPattern (14) when ``top``, else the ``{ BodyBasic }`` of a NOT / AGGREGATE."""
        self.expect("{", "'{' to start the rule body" if top else "'{'")
        elements: list[BodyElement] = []
        need_sep = False  # a triples block ended without '.'
        while True:
            t = self.peek()
            if self.at("}"):
                break
            kw = str(t.value).upper() if t.kind == "NAME" else ""
            if kw in _BODY_KEYWORDS and not (kw == "NOT" and self.at_kw("IN", 1)):
                if kw != "FILTER" and not top:
                    self.fail(f"{kw} is not allowed inside NOT or AGGREGATE (only triple patterns and FILTER)", t=t)
                elements.append(self.body_element(kw))
                self.accept(".")
                need_sep = False
                continue
            if need_sep:
                self.fail(f"expected '.', '}}' or FILTER/NOT/SET, found {self.describe(t)}")
            self._out = []
            ended_with_dot = self.triples_block(stop=("}",))
            elements.extend(self._out)
            need_sep = not ended_with_dot
        self.expect("}")
        return elements

    def body_element(self, kw: str) -> BodyElement:
        t = self.next()
        loc = self.loc(t)
        if kw == "FILTER":
            return Filter(self.constraint(), loc=loc)
        if kw == "SET":
            self.expect("(", "'(' after SET")
            vt = self.peek()
            if vt.kind != "VAR":
                self.fail(f"expected a variable in SET, found {self.describe(vt)}")
            self.next()
            self.expect(":=")
            e = self.expression()
            self.expect(")")
            return Assignment(self.variable(vt), e, loc=loc)
        if kw == "NOT":
            data = False
            if self.at_kw("DATA"):
                self.next()
                data = True
            inner = self.body(top=False)
            return Negation(tuple(inner), data=data, loc=loc)  # type: ignore[arg-type]
        # AGGREGATE (Reckon extension)
        self.expect("(", "'(' after AGGREGATE")
        vt = self.peek()
        if vt.kind != "VAR":
            self.fail(f"expected a variable in AGGREGATE, found {self.describe(vt)}")
        self.next()
        self.expect(":=")
        ft = self.peek()
        fname = str(ft.value).upper() if ft.kind == "NAME" else ""
        if fname not in AGGREGATE_FUNCTIONS:
            self.fail(f"expected COUNT, SUM, MIN, MAX or AVG, found {self.describe(ft)}")
        self.next()
        expr: Expr | None
        if self.peek().kind == "NIL":
            self.fail(f"{fname} needs an argument", t=self.peek())
        self.expect("(")
        distinct = False
        if self.at_kw("DISTINCT"):
            self.next()
            distinct = True
        if self.at("*"):
            if fname != "COUNT":
                self.fail(f"{fname}(*) is not allowed; only COUNT(*)")
            self.next()
            expr = None
        else:
            expr = self.expression()
        self.expect(")")
        self.expect(")")
        inner = self.body(top=False)
        return Aggregate(self.variable(vt), fname, expr, distinct, tuple(inner), loc=loc)  # type: ignore[arg-type]

    def constraint(self) -> Expr:
        t = self.peek()
        if self.at("("):
            return self.bracketted()
        if t.kind == "NAME":
            return self.builtin_call()
        if t.kind in ("IRI", "PNAME"):
            name = self.iri()
            return Call(name, self.arg_list())
        self.fail(f"expected '(' or a function call after FILTER, found {self.describe(t)}")

    # -- triples (shared by DATA, head templates and body patterns) ----------------
    def emit(self, s: PatternTerm, p: PatternTerm, o: PatternTerm, t: Token) -> None:
        self._out.append(TriplePattern(s, p, o, loc=self.loc(t)))

    def triples_block(self, stop: tuple[str, ...]) -> bool:
        """TriplesBlock*: returns True when it ended with a '.'."""
        while True:
            self.triples_same_subject()
            if not self.accept("."):
                return False
            if not self.is_triples_start():
                return True

    def is_triples_start(self) -> bool:
        t = self.peek()
        if t.kind in ("VAR", "IRI", "PNAME", "BNODE", "ANON", "NIL", "STRING", "INTEGER", "DECIMAL", "DOUBLE"):
            return True
        if t.kind == "PUNCT":
            return t.value in ("[", "(", "<<", "<<(") or self.is_literal_start()
        return t.kind == "NAME" and str(t.value).lower() in ("true", "false")

    def triples_same_subject(self) -> None:
        t = self.peek()
        if self.at("["):
            subj = self.blank_node_property_list()
            if self.is_verb_start():
                self.property_list(subj)
        elif self.at("("):
            subj = self.collection()
            if self.is_verb_start():
                self.property_list(subj)
        elif self.at("<<"):
            subj = self.reified_triple()
            if self.is_verb_start():
                self.property_list(subj)
        else:
            if t.kind == "NAME" and t.value == "a":
                self.fail("'a' is only allowed in predicate position", t=t)
            subj = self.var_or_term()
            self.property_list(subj)

    def is_verb_start(self) -> bool:
        t = self.peek()
        if t.kind in ("IRI", "PNAME", "VAR"):
            return True
        if t.kind == "NAME" and t.value == "a":
            return True
        return self.mode == "body" and t.kind == "PUNCT" and t.value in ("^", "(")

    def property_list(self, subj: PatternTerm) -> None:
        """PropertyListNotEmpty: Verb ObjectList ( ';' ( Verb ObjectList )? )*."""
        while True:
            vt = self.peek()
            verb = self.verb()
            self.object_list(subj, verb, vt)
            if not self.at(";"):
                return
            while self.accept(";"):
                pass
            if not self.is_verb_start():
                return

    def verb(self) -> object:
        """A predicate term, or a path structure (body only)."""
        t = self.peek()
        if self.mode == "body" and (t.kind in ("IRI", "PNAME") or (t.kind == "PUNCT" and t.value in ("^", "(")) or (t.kind == "NAME" and t.value == "a")):
            path = self.path()
            return path
        if self.mode == "data":
            if t.kind == "VAR":
                self.fail(f"variable ?{t.value} is not allowed in a DATA block", "SRL010", t)
            if t.kind == "NAME" and t.value == "a":
                self.next()
                return RDF_TYPE
            if t.kind in ("IRI", "PNAME"):
                return self.iri()
            self.fail(f"expected a predicate (IRI or 'a'), found {self.describe(t)}")
        return self.verb_simple()

    # Path structures: NamedNode | ("inv", path) | ("seq", [paths])
    def path(self) -> object:
        items = [self.path_elt_or_inverse()]
        while self.accept("/"):
            items.append(self.path_elt_or_inverse())
        return items[0] if len(items) == 1 else ("seq", items)

    def path_elt_or_inverse(self) -> object:
        if self.accept("^"):
            return ("inv", self.path_primary())
        return self.path_primary()

    def path_primary(self) -> object:
        t = self.peek()
        if t.kind == "NAME" and t.value == "a":
            self.next()
            return RDF_TYPE
        if self.accept("("):
            p = self.path()
            self.expect(")", "')' to close the path")
            return p
        if t.kind in ("IRI", "PNAME"):
            return self.iri()
        self.fail(f"expected an IRI, 'a', '^' or '(' in a property path, found {self.describe(t)}")

    def expand_path(self, s: PatternTerm, path: object, o: PatternTerm, t: Token) -> None:
        if isinstance(path, tuple) and path[0] == "inv":
            self.expand_path(o, path[1], s, t)
        elif isinstance(path, tuple) and path[0] == "seq":
            items = path[1]
            cur = s
            for k, item in enumerate(items):
                nxt = o if k == len(items) - 1 else self.fresh_path_var()
                self.expand_path(cur, item, nxt, t)
                cur = nxt
        else:
            self.emit(s, path, o, t)  # type: ignore[arg-type]

    def object_list(self, subj: PatternTerm, verb: object, vt: Token) -> None:
        while True:
            ot = self.peek()
            obj = self.graph_node()
            if isinstance(verb, tuple):
                self.expand_path(subj, verb, obj, vt)
                if self.at("~") or self.at("{|"):
                    self.fail("a reifier or annotation is not allowed on a property path", "SRL011")
            else:
                self.emit(subj, verb, obj, vt)  # type: ignore[arg-type]
                self.annotation(subj, verb, obj, ot)  # type: ignore[arg-type]
            if not self.accept(","):
                return

    def annotation(self, s: PatternTerm, p: PatternTerm, o: PatternTerm, t: Token) -> None:
        reifier: PatternTerm | None = None
        while True:
            if self.at("~"):
                tt = self.next()
                reifier = self.reifier_id() if self.is_reifier_id_start() else self.bnode(None)
                self.emit(reifier, RDF_REIFIES, self.make_triple_term(s, p, o, t), tt)
            elif self.at("{|"):
                bt = self.next()
                if reifier is None:
                    reifier = self.bnode(None)
                    self.emit(reifier, RDF_REIFIES, self.make_triple_term(s, p, o, t), bt)
                if self.at("|}"):
                    self.fail("empty annotation block '{| |}'")
                self.property_list(reifier)
                self.expect("|}", "'|}' to close the annotation block")
                reifier = None
            else:
                return

    def is_reifier_id_start(self) -> bool:
        k = self.peek().kind
        return k in ("IRI", "PNAME", "BNODE", "ANON") or k == "VAR"

    def reifier_id(self) -> PatternTerm:
        t = self.next()
        if t.kind == "VAR":
            return self.variable(t)
        if t.kind == "BNODE":
            return self.bnode(str(t.value))
        if t.kind == "ANON":
            return self.bnode(None)
        self.i -= 1
        return self.iri()

    def graph_node(self) -> PatternTerm:
        if self.at("["):
            return self.blank_node_property_list()
        if self.at("("):
            return self.collection()
        if self.at("<<"):
            return self.reified_triple()
        return self.var_or_term()

    def blank_node_property_list(self) -> PatternTerm:
        self.expect("[")
        node = self.bnode(None)
        self.property_list(node)
        self.expect("]", "']' to close the blank node property list")
        return node

    def collection(self) -> PatternTerm:
        t = self.expect("(")
        items: list[PatternTerm] = []
        while not self.at(")"):
            if self.peek().kind == "EOF":
                self.fail("expected ')' to close the collection, found end of input")
            items.append(self.graph_node())
        self.next()
        if not items:
            return RDF_NIL
        cells = [self.bnode(None) for _ in items]
        for k, (cell, item) in enumerate(zip(cells, items)):
            self.emit(cell, RDF_FIRST, item, t)
            self.emit(cell, RDF_REST, cells[k + 1] if k + 1 < len(cells) else RDF_NIL, t)
        return cells[0]

    def reified_triple(self) -> PatternTerm:
        t = self.expect("<<")
        s = self.reified_part()
        p = self.verb_simple() if self.mode != "data" else self.verb()
        o = self.reified_part()
        reifier: PatternTerm | None = None
        if self.accept("~"):
            if self.is_reifier_id_start():
                reifier = self.reifier_id()
        if reifier is None:
            reifier = self.bnode(None)
        self.expect(">>", "'>>' to close the reified triple")
        self.emit(reifier, RDF_REIFIES, self.make_triple_term(s, p, o, t), t)  # type: ignore[arg-type]
        return reifier

    def reified_part(self) -> PatternTerm:
        if self.at("<<"):
            return self.reified_triple()
        t = self.peek()
        if t.kind in ("ANON", "NIL") or self.at("[") or self.at("("):
            self.fail(f"{self.describe(t)} is not allowed inside a reified triple")
        return self.var_or_term()

    def triple_term(self) -> PatternTerm:
        t = self.expect("<<(")
        s = self.tt_part()
        p = self.verb_simple() if self.mode != "data" else self.verb()
        o = self.tt_part()
        self.close_triple_term()
        return self.make_triple_term(s, p, o, t)  # type: ignore[arg-type]

    def tt_part(self) -> PatternTerm:
        t = self.peek()
        if t.kind in ("ANON", "NIL") or self.at("[") or self.at("(") or self.at("<<"):
            self.fail(f"{self.describe(t)} is not allowed inside a triple term")
        return self.var_or_term()

    def var_or_term(self) -> PatternTerm:
        t = self.peek()
        k = t.kind
        if k == "VAR":
            self.next()
            return self.variable(t)
        if k in ("IRI", "PNAME"):
            return self.iri()
        if k == "BNODE":
            self.next()
            return self.bnode(str(t.value))
        if k == "ANON":
            self.next()
            return self.bnode(None)
        if k == "NIL":
            self.next()
            return RDF_NIL
        if self.at("<<("):
            return self.triple_term()
        if self.is_literal_start():
            return self.literal()
        self.fail(f"expected an RDF term or variable, found {self.describe(t)}")


def resolve_iri(base: str, ref: str) -> str:
    """Resolve an IRI reference against a base IRI (RFC 3986 section 5.2.2; keeps empty
    fragments and queries, which ``urllib.parse.urljoin`` drops)."""
    rm = _IRI_PARTS.match(ref)
    bm = _IRI_PARTS.match(base)
    assert rm is not None and bm is not None
    r_scheme, r_auth, r_path, r_query, r_frag = rm.group(1), rm.group(2), rm.group(3), rm.group(4), rm.group(5)
    b_scheme, b_auth, b_path, b_query = bm.group(1), bm.group(2), bm.group(3), bm.group(4)
    if r_scheme is not None:
        scheme, auth, path, query = r_scheme, r_auth, _remove_dots(r_path), r_query
    elif r_auth is not None:
        scheme, auth, path, query = b_scheme, r_auth, _remove_dots(r_path), r_query
    elif r_path == "":
        scheme, auth, path = b_scheme, b_auth, b_path
        query = r_query if r_query is not None else b_query
    else:
        if r_path.startswith("/"):
            path = _remove_dots(r_path)
        elif b_auth is not None and b_path == "":
            path = _remove_dots("/" + r_path)
        else:
            path = _remove_dots(b_path[: b_path.rfind("/") + 1] + r_path)
        scheme, auth, query = b_scheme, b_auth, r_query
    out = f"{scheme}:" if scheme is not None else ""
    if auth is not None:
        out += "//" + auth
    out += path
    if query is not None:
        out += "?" + query
    if r_frag is not None:
        out += "#" + r_frag
    return out


def _remove_dots(path: str) -> str:
    out: list[str] = []
    segs = path.split("/")
    for k, seg in enumerate(segs):
        last = k == len(segs) - 1
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if len(out) > 1 or (out and out[0] != ""):
                out.pop()
            if last:
                out.append("")
        else:
            out.append(seg)
    return "/".join(out)


def _bn_var(label: str) -> Variable:
    try:
        return Variable("__bn_" + label)
    except ValueError:
        safe = "".join(c if (c.isalnum() or c == "_") else f"_{ord(c):x}_" for c in label)
        return Variable("__bn_" + safe)


def _open(t: object) -> bool:
    return isinstance(t, (Variable, TripleTermPattern))


def _bn(t: object) -> bool:
    return isinstance(t, BlankNode)


def walk_patterns(elements: tuple[BodyElement, ...], fn: Callable[[TriplePattern], None]) -> None:
    """Call ``fn`` on every triple pattern of a body, including inside NOT / AGGREGATE."""
    for e in elements:
        if isinstance(e, TriplePattern):
            fn(e)
        elif isinstance(e, (Negation, Aggregate)):
            for x in e.elements:
                if isinstance(x, TriplePattern):
                    fn(x)
