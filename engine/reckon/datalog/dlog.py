"""Parser for the subset of RDFox's Datalog syntax that maps onto the SRL rule model.

Source: RDFox documentation, "Reasoning" chapter (rule syntax), as cited by the design
seed (DESIGN.md, Rules)::

    @prefix : <http://example/> .
    PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
    [?m, rdf:type, :Memory] :- [?m, rdf:type, ?c], [?c, rdfs:subClassOf, :Memory] .
    :Active[?m] :- :Memory[?m], NOT [?m, :supersededBy, ?n], FILTER(?x > 0), BIND(?x + 1 AS ?y) .
    [:a, :p, :b] .

Supported: ``@prefix p: <iri> .`` and ``PREFIX p: <iri>`` (and ``@base`` / ``BASE``);
rules ``head :- body .`` with one or more head atoms separated by commas; facts
``atom .`` (collected as data, like an SRL ``DATA`` block); atoms ``[s, p, o]``, the
class atom ``C[x]`` (= ``[x, rdf:type, C]``) and the property atom ``p[x, y]``
(= ``[x, p, y]``); body literals ``atom``, ``NOT atom``, ``NOT (atom, ...)``,
``NOT EXISTS ?v, ... IN (atom, ...)`` (the listed variables are local, which the
SRL negation semantics gives anyway), ``FILTER(expr)`` and ``BIND(expr AS ?v)``
(-> :class:`~reckon.datalog.model.Assignment`, i.e. SRL ``SET``). Expressions use the
SRL/SPARQL expression grammar (:class:`reckon.datalog.srl.TermParser`).
Not supported (reported as SRL001): RDFox aggregates, ``OPTIONAL``, named-graph atoms
``[s, p, o] @graph``, equality atoms.
"""

from __future__ import annotations

from pyoxigraph import Triple

from reckon._errors import RuleSetInvalid
from reckon.datalog.model import (
    Assignment,
    BodyElement,
    Filter,
    Negation,
    PatternTerm,
    Rule,
    RuleSet,
    TriplePattern,
)
from reckon.datalog.srl import RDF_TYPE, TermParser, _ParseError

__all__ = ["parse_dlog"]


def parse_dlog(text: str, *, file: str = "<string>", base: str | None = None, check: bool = True) -> RuleSet:
    """Parse a program in the RDFox Datalog subset described in this module.

    :param text: the program.
    :param file: name used in diagnostics and rule locations.
    :param base: base IRI for relative IRIs.
    :param check: also check well-formedness (as :func:`reckon.datalog.srl.parse_srl`).
    :returns: a :class:`~reckon.datalog.model.RuleSet` (facts in ``data``).
    :raises RuleSyntaxError: with every syntax error (SRL001, SRL010 variable in a fact, SRL013).
    :raises RuleSetInvalid: on unknown prefixes (SRL002) or, when ``check``, a rule that
        is not well-formed.

    >>> rs = parse_dlog("@prefix : <http://e/> . :B[?x] :- :A[?x] .")
    >>> str(rs.rules[0].body[0])
    '?x <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://e/A>'
    """
    p = _DlogParser(text, file=file, base=base)
    rs = p.parse_program()
    p.raise_problems()
    if check:
        from reckon.datalog.wellformed import check_wellformed

        problems = check_wellformed(rs)
        if problems:
            raise RuleSetInvalid(problems)
    return rs


class _DlogParser(TermParser):
    def __init__(self, text: str, *, file: str, base: str | None) -> None:
        super().__init__(text, file=file, base=base)
        self.rules: list[Rule] = []
        self.data: list[Triple] = []

    def parse_program(self) -> RuleSet:
        while self.peek().kind != "EOF":
            start = self.i
            try:
                self.statement()
            except _ParseError:
                if self.i == start:
                    self.next()
                while self.peek().kind != "EOF" and not self.accept("."):
                    self.next()
        seen: set[Triple] = set()
        data = tuple(t for t in self.data if not (t in seen or seen.add(t)))  # type: ignore[func-returns-value]
        return RuleSet(rules=tuple(self.rules), data=data, prefixes=dict(self.prefixes), base=self.base, source=self.file)

    def statement(self) -> None:
        t = self.peek()
        if t.kind == "LANG" and t.value in ("@prefix", "@base"):
            self.next()
            self.directive(str(t.value)[1:].upper())
            self.accept(".")
            return
        if self.at_kw("PREFIX") or self.at_kw("BASE"):
            self.directive(str(self.next().value).upper())
            return
        is_rule = self.is_rule()
        self.reset_rule_scope()
        self.mode = "head" if is_rule else "data"
        first = self.peek()
        heads = [self.atom()]
        while self.accept(","):
            heads.append(self.atom())
        if not is_rule:
            self.expect(".", "'.' or ':-'")
            for h in heads:
                try:
                    self.data.append(Triple(h.s, h.p, h.o))  # type: ignore[arg-type]
                except TypeError:
                    self.diag("SRL011", f"fact {h} cannot be stored: RDF 1.2 allows only an IRI or blank node as subject", first)
            return
        self.expect(":-", "':-'")
        self.mode = "body"
        body: list[BodyElement] = []
        while True:
            body.extend(self.body_literal())
            if not self.accept(","):
                break
        end = self.expect(".", "',' or '.' to end the rule")
        self.rules.append(Rule(head=tuple(heads), body=tuple(body), loc=self.loc(first), text=self.text[first.start : end.end]))

    def is_rule(self) -> bool:
        depth = 0
        j = self.i
        while True:
            t = self.toks[j]
            if t.kind == "EOF":
                return False
            if t.kind == "PUNCT":
                if t.value in ("(", "["):
                    depth += 1
                elif t.value in (")", "]"):
                    depth -= 1
                elif depth <= 0 and t.value == ":-":
                    return True
                elif depth <= 0 and t.value == ".":
                    return False
            j += 1

    def directive(self, kind: str) -> None:
        if kind == "PREFIX":
            pt = self.peek()
            if pt.kind != "PNAME" or pt.value[1]:  # type: ignore[index]
                self.fail(f"expected a prefix name such as 'ex:', found {self.describe(pt)}")
            self.next()
            it = self.peek()
            if it.kind != "IRI":
                self.fail(f"expected an IRI, found {self.describe(it)}")
            self.next()
            self.prefixes[pt.value[0]] = self.resolve(str(it.value), it).value  # type: ignore[index]
        else:
            it = self.peek()
            if it.kind != "IRI":
                self.fail(f"expected an IRI after BASE, found {self.describe(it)}")
            self.next()
            self.base = self.resolve(str(it.value), it).value

    def atom(self) -> TriplePattern:
        t = self.peek()
        loc = self.loc(t)
        if self.accept("["):
            s = self.term()
            self.expect(",")
            p = self.term()
            self.expect(",")
            o = self.term()
            self.expect("]", "']' to close the atom")
            return TriplePattern(s, p, o, loc=loc)
        if t.kind in ("IRI", "PNAME"):
            name = self.iri()
            self.expect("[", "'[' after the class or property name")
            x = self.term()
            if self.accept(","):
                y = self.term()
                self.expect("]", "']' to close the atom")
                return TriplePattern(x, name, y, loc=loc)
            self.expect("]", "',' or ']'")
            return TriplePattern(x, RDF_TYPE, name, loc=loc)
        self.fail(f"expected an atom such as [?s, :p, ?o] or :C[?x], found {self.describe(t)}")

    def term(self) -> PatternTerm:
        t = self.peek()
        if t.kind == "VAR":
            self.next()
            return self.variable(t)
        if t.kind in ("IRI", "PNAME"):
            return self.iri()
        if t.kind == "BNODE":
            self.next()
            return self.bnode(str(t.value))
        if self.at("<<("):
            return self.expr_triple_term()  # type: ignore[return-value]
        if self.is_literal_start():
            return self.literal()
        self.fail(f"expected a variable, IRI or literal, found {self.describe(t)}")

    def body_literal(self) -> list[BodyElement]:
        t = self.peek()
        loc = self.loc(t)
        if self.at_kw("NOT"):
            self.next()
            if self.at_kw("EXISTS"):
                self.next()
                self.term()
                while self.accept(","):
                    self.term()
                self.expect_kw("IN")
            if self.accept("("):
                atoms = [self.atom()]
                while self.accept(","):
                    atoms.append(self.atom())
                self.expect(")")
            else:
                atoms = [self.atom()]
            return [Negation(tuple(atoms), loc=loc)]
        if self.at_kw("FILTER"):
            self.next()
            return [Filter(self.bracketted(), loc=loc)]
        if self.at_kw("BIND"):
            self.next()
            self.expect("(")
            e = self.expression()
            self.expect_kw("AS")
            vt = self.peek()
            if vt.kind != "VAR":
                self.fail(f"expected a variable after AS, found {self.describe(vt)}")
            self.next()
            self.expect(")")
            return [Assignment(self.variable(vt), e, loc=loc)]
        return [self.atom()]
