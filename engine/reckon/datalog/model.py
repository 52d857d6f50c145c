"""The rule model: one abstract syntax for SRL and the RDFox Datalog subset.

Follows the abstract syntax of the W3C draft *SPARQL 1.2 Rules Language* (SRL),
section "SPARQL-RL Abstract Syntax" (``../shared/conformance/srl-spec/sparql12-rl/``):
a rule set is rules + data blocks + imports; a rule is a head (triple templates) and
a body (a sequence of rule elements: triple pattern, filter, negation, assignment).

Terms are pyoxigraph terms (``NamedNode``, ``BlankNode``, ``Literal``, ``Triple``)
and ``pyoxigraph.Variable``. A triple term that contains variables is a
:class:`TripleTermPattern`.

Normalisations done by the parsers (so evaluators never see them):

* blank nodes in a rule *body* are replaced by variables named ``__bn_<label>``
  (SRL "Evaluation of a Rule": blank nodes in triple patterns behave like variables);
* property paths (``/``, ``^``) are expanded into triple patterns joined by fresh
  variables named ``__path_<n>``;
* RDF 1.2 reifiers/annotations (``~?r {| :p ?o |}``) are expanded to
  ``?r rdf:reifies <<( s p o )>>`` plus the annotation triples;
* collections and ``[ ]`` in heads become blank-node triple templates (a head
  blank node is freshened per solution: CHANGES.md 2026-08-24).

Reckon extension (documented, not in the SRL draft): :class:`Aggregate`, a
correlated aggregate used by the live-context guardrail (DESIGN.md, Rules). It is
treated like negation for stratification (a closed dependency).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from pyoxigraph import BlankNode, Literal, NamedNode, Triple, Variable

__all__ = [
    "GENERALIZED_TRIPLES",
    "INTERNAL",
    "Aggregate",
    "Assignment",
    "BodyElement",
    "Call",
    "Expr",
    "Filter",
    "GroundTerm",
    "Location",
    "Negation",
    "PatternTerm",
    "Rule",
    "RuleSet",
    "TriplePattern",
    "TripleTermPattern",
    "pattern_variables",
    "expr_variables",
]

INTERNAL = "urn:reckon:internal:"
"""Namespace of rule-program *helper vocabulary*: a derived fact that mentions an IRI of
this namespace (in any position) stays in the evaluation graph, where rules read it, but
is not part of the inference graph a reasoner returns (``Reasoner.inferred()``, deltas,
the tenant's inferred graph). A triple pattern or template whose predicate is a variable
neither matches nor produces a fact whose predicate is helper vocabulary (``rdfs7``'s
``{ ?x ?b ?y }`` never copies a helper fact, ``rdfD2``'s ``?x ?a ?y`` never reads one).
``rules/owl2rl.srl`` walks RDF lists with helper predicates here. Reckon extension; the
SRL draft has no hidden triples."""

GENERALIZED_TRIPLES = Triple(NamedNode(INTERNAL + "program"), NamedNode(INTERNAL + "generalizedTriples"),
                             Literal(True))
"""The ``DATA`` triple by which a rule file asks for generalized RDF (see
:attr:`RuleSet.generalized`): ``DATA { <urn:reckon:internal:program>
<urn:reckon:internal:generalizedTriples> true }``."""

GroundTerm = Union[NamedNode, BlankNode, Literal, Triple]
"""An RDF term (RDF 1.2: a triple term is a ``pyoxigraph.Triple``)."""


@dataclass(frozen=True)
class Location:
    """Where a construct starts in its source: file name, 1-based line and column."""

    file: str = "<string>"
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class TripleTermPattern:
    """An RDF 1.2 triple term ``<<( s p o )>>`` with at least one variable inside."""

    s: PatternTerm
    p: PatternTerm
    o: PatternTerm

    def __str__(self) -> str:
        return f"<<( {_fmt(self.s)} {_fmt(self.p)} {_fmt(self.o)} )>>"


PatternTerm = Union[NamedNode, BlankNode, Literal, Triple, Variable, TripleTermPattern]
"""A position of a triple pattern / template: a ground term, a variable or a triple-term pattern."""


@dataclass(frozen=True)
class Call:
    """A function call or operator in an expression.

    ``name`` is either an upper-case SPARQL keyword / operator string
    (``"STR"``, ``"IF"``, ``"SAMETERM"``, ``"REGEX"``, ``"||"``, ``"&&"``, ``"!"``,
    ``"="``, ``"!="``, ``"<"``, ``">"``, ``"<="``, ``">="``, ``"+"``, ``"-"``, ``"*"``,
    ``"/"``, ``"UMINUS"``, ``"UPLUS"``, ``"IN"``, ``"NOT IN"``) or a ``NamedNode``
    naming a function by IRI (XSD casts such as ``xsd:integer``).
    For ``IN`` / ``NOT IN`` the first argument is the tested expression and the rest
    is the list.
    """

    name: str | NamedNode
    args: tuple[Expr, ...] = ()

    def __str__(self) -> str:
        n = self.name if isinstance(self.name, str) else str(self.name)
        return f"{n}({', '.join(_fmt(a) for a in self.args)})"


Expr = Union[NamedNode, BlankNode, Literal, Triple, Variable, TripleTermPattern, Call]
"""An expression: a constant term, a variable, a triple-term expression or a :class:`Call`."""


@dataclass(frozen=True)
class TriplePattern:
    """A triple pattern (in a body) or triple template (in a head)."""

    s: PatternTerm
    p: PatternTerm
    o: PatternTerm
    loc: Location | None = field(default=None, compare=False, hash=False)

    def __str__(self) -> str:
        return f"{_fmt(self.s)} {_fmt(self.p)} {_fmt(self.o)}"

    def variables(self) -> set[Variable]:
        """Variables of the pattern, including those inside triple-term patterns."""
        return pattern_variables(self.s) | pattern_variables(self.p) | pattern_variables(self.o)


@dataclass(frozen=True)
class Filter:
    """A filter element: keep a solution when the expression's EBV is true; an error drops it."""

    expr: Expr
    loc: Location | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class Assignment:
    """``SET(?var := expr)``: bind a new variable; an evaluation error drops the solution
    (SRL "Relationship between SPARQL-RL and SPARQL": SET = BIND + FILTER(BOUND))."""

    var: Variable
    expr: Expr
    loc: Location | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class Negation:
    """``NOT { ... }`` (or ``NOT DATA { ... }`` when ``data`` is true: matched against the
    base graph only). ``elements`` are triple patterns and filters."""

    elements: tuple[TriplePattern | Filter, ...]
    data: bool = False
    loc: Location | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class Aggregate:
    """Reckon extension: a correlated aggregate, bound like an assignment.

    Syntax (SRL extension)::

        AGGREGATE(?n := COUNT(DISTINCT ?o)) { ?o a :Candidate ; :rank ?r . FILTER(?r < ?myRank) }

    For each incoming solution μ, ``elements`` are evaluated with μ's bindings
    (like negation), ``function`` (``COUNT``, ``SUM``, ``MIN``, ``MAX``, ``AVG``) is
    applied to the values of ``expr`` (``None`` = ``COUNT(*)``) over the inner solutions,
    and the result is bound to ``var``. COUNT over no solutions is 0; SUM is 0;
    MIN/MAX/AVG over no solutions is an error (the solution is dropped).
    Stratified like negation: a closed dependency.
    """

    var: Variable
    function: str
    expr: Expr | None
    distinct: bool
    elements: tuple[TriplePattern | Filter, ...]
    loc: Location | None = field(default=None, compare=False, hash=False)


BodyElement = Union[TriplePattern, Filter, Negation, Assignment, Aggregate]


@dataclass(frozen=True)
class Rule:
    """A rule: ``RULE id? { head } WHERE DATA? { body }``.

    :ivar id: the rule's IRI / blank node if given, else ``None``.
    :ivar head: triple templates; may contain ``BlankNode`` (fresh per solution).
    :ivar body: rule elements in source order (order matters for well-formedness).
    :ivar data: ``True`` for ``WHERE DATA``: the body matches the base graph only.
    :ivar loc: where the rule starts.
    :ivar text: the rule's source text, for explanations.
    """

    head: tuple[TriplePattern, ...]
    body: tuple[BodyElement, ...]
    id: NamedNode | BlankNode | None = None
    data: bool = False
    loc: Location | None = field(default=None, compare=False, hash=False)
    text: str = field(default="", compare=False, hash=False)

    @property
    def run_once(self) -> bool:
        """SRL run-once rule: has an assignment (or aggregate) or a blank node in the head."""
        if any(isinstance(e, (Assignment, Aggregate)) for e in self.body):
            return True
        return any(_has_bnode(t) for tp in self.head for t in (tp.s, tp.p, tp.o))

    @property
    def name(self) -> str:
        """A readable name: the rule IRI, else ``file:line``."""
        if self.id is not None:
            return str(self.id)
        if self.loc is not None:
            return f"{self.loc.file}:{self.loc.line}"
        return "<rule>"


@dataclass(frozen=True)
class RuleSet:
    """A rule set: rules, data-block triples, imports, and the prologue it was parsed with.

    :ivar rules: the rules in source order.
    :ivar data: ground triples of all ``DATA { }`` blocks (may contain blank nodes).
    :ivar imports: IRIs of ``IMPORTS``.
    :ivar prefixes: prefix -> namespace IRI, as declared.
    :ivar base: the last ``BASE`` IRI, if any.
    :ivar source: file name the set came from (``"<string>"`` if inline).
    """

    rules: tuple[Rule, ...] = ()
    data: tuple[Triple, ...] = ()
    imports: tuple[NamedNode, ...] = ()
    prefixes: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    base: str | None = None
    source: str = "<string>"

    @property
    def generalized(self) -> bool:
        """Whether the program is evaluated over generalized RDF (RDF 1.1 Concepts §7:
        a literal may be a subject, a blank node or literal a predicate): a head instance
        such as ``"25" rdf:type xsd:integer`` (OWL 2 RL rule prp-rng on a data value,
        needed to find a range clash) or ``?x _:p ?y`` (a blank-node property) is kept
        in the evaluation graph, where later rules read it, but never returned in the
        inference graph, which holds RDF triples only. Off unless a ``DATA`` block
        holds :data:`GENERALIZED_TRIPLES` (``rules/rdfs.srl`` and ``rules/owl2rl.srl``
        do: their entailment rules are defined over generalized RDF, RDF 1.1 Semantics
        §9.2.1, OWL 2 RDF-Based Semantics §4). Reckon extension."""
        return GENERALIZED_TRIPLES in self.data

    def __add__(self, other: RuleSet) -> RuleSet:
        """Merge two rule sets (SRL "Processing Imports": union of rules and data)."""
        return RuleSet(
            rules=self.rules + other.rules,
            data=self.data + tuple(t for t in other.data if t not in set(self.data)),
            imports=self.imports + other.imports,
            prefixes={**self.prefixes, **other.prefixes},
            base=self.base,
            source=self.source if other.source == self.source else f"{self.source}+{other.source}",
        )


def pattern_variables(t: object) -> set[Variable]:
    """Variables occurring in a pattern term, including inside triple-term patterns."""
    if isinstance(t, Variable):
        return {t}
    if isinstance(t, TripleTermPattern):
        return pattern_variables(t.s) | pattern_variables(t.p) | pattern_variables(t.o)
    return set()


def expr_variables(e: object) -> set[Variable]:
    """Variables mentioned by an expression."""
    if isinstance(e, Call):
        out: set[Variable] = set()
        for a in e.args:
            out |= expr_variables(a)
        return out
    return pattern_variables(e)


def _has_bnode(t: object) -> bool:
    if isinstance(t, BlankNode):
        return True
    if isinstance(t, TripleTermPattern):
        return _has_bnode(t.s) or _has_bnode(t.p) or _has_bnode(t.o)
    if isinstance(t, Triple):
        return _has_bnode(t.subject) or _has_bnode(t.object)
    return False


def _fmt(t: object) -> str:
    return str(t)
