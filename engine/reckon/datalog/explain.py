"""Explanations: why an inferred triple holds (``Reasoner.explain``).

An explanation is a derivation tree computed on demand (no derivations are stored):
the rule body is re-matched with the head template bound to the triple (SRL
"Evaluation of a Rule": the solution sequence of the body, then ``subst(μ, head)``),
and the first solution whose supporting facts are asserted, ``DATA`` triples, or
inferred facts of strictly smaller *rank* (the evaluation round in which a fact was
first derived, kept by :class:`~reckon.datalog.evaluate.Reasoner`) is chosen. Ranks are
well-founded, so the tree is finite even when rules are recursive (a fact is never
explained through itself). A triple with a head blank node minted by a run-once rule is
explained by the solution that minted it.

Each node gives the rule (its IRI, else ``file:line``), the variable bindings, the
supporting triples (each asserted, from a ``DATA`` block, or inferred and explained in
turn) and the ``NOT`` elements that were checked absent, instantiated with the bindings.
:meth:`Explanation.render` prints an indented tree using the rule set's prefixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyoxigraph import BlankNode, Literal, NamedNode, Triple, Variable

from reckon._errors import ExplainError
from reckon.datalog._plan import instantiate_fact
from reckon.datalog.model import (
    Aggregate,
    Assignment,
    Filter,
    Location,
    Negation,
    TriplePattern,
    TripleTermPattern,
)

if TYPE_CHECKING:  # pragma: no cover
    from reckon.datalog._factstore import Fact
    from reckon.datalog.evaluate import Reasoner

__all__ = ["Explanation", "GeneralizedTriple", "Support", "explain"]

_XSD = "http://www.w3.org/2001/XMLSchema#"
_PLAIN = {_XSD + "integer", _XSD + "decimal", _XSD + "boolean", _XSD + "double"}
_LOCAL = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$|^$")


@dataclass(frozen=True)
class GeneralizedTriple:
    """A fact of a generalized-RDF program that is not an RDF triple (a literal subject,
    a blank-node predicate ...: :attr:`reckon.datalog.model.RuleSet.generalized`), as it
    appears among the supports of an explanation. Same attribute names as
    ``pyoxigraph.Triple``."""

    subject: object
    predicate: object
    object: object

    def __str__(self) -> str:
        return f"{self.subject} {self.predicate} {self.object}"


def _decode(dic: object, f: Fact) -> Triple | GeneralizedTriple:
    try:
        return dic.decode(f)  # type: ignore[attr-defined, no-any-return]
    except TypeError:
        t = dic.terms  # type: ignore[attr-defined]
        return GeneralizedTriple(t[f[0]], t[f[1]], t[f[2]])


@dataclass(frozen=True)
class Support:
    """A body triple that a derivation used.

    :ivar triple: the triple.
    :ivar origin: ``"asserted"`` (in the base graph), ``"data"`` (a ``DATA`` block) or
        ``"inferred"``.
    :ivar explanation: for an inferred support, why it holds (else ``None``).
    """

    triple: Triple | GeneralizedTriple
    origin: str
    explanation: Explanation | None = None


@dataclass(frozen=True)
class Explanation:
    """Why an inferred triple holds.

    :ivar triple: the explained triple.
    :ivar rule: the rule's name (IRI, else ``file:line``); ``"DATA"`` for a ``DATA``
        block triple.
    :ivar location: where the rule is written, if known.
    :ivar bindings: variable -> RDF term of the chosen body solution (internal
        variables for body blank nodes and paths are omitted).
    :ivar supports: the body's triple patterns, instantiated, in body order.
    :ivar absent: the ``NOT`` elements, instantiated, that found no match.
    :ivar conditions: the ``FILTER`` / ``SET`` / ``AGGREGATE`` elements that held, as text.
    """

    triple: Triple | GeneralizedTriple
    rule: str
    location: Location | None = None
    bindings: tuple[tuple[Variable, object], ...] = ()
    supports: tuple[Support, ...] = ()
    absent: tuple[str, ...] = ()
    conditions: tuple[str, ...] = ()
    prefixes: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def binding(self, name: str) -> object | None:
        """The term bound to the variable ``name`` (without ``?``), or ``None``."""
        for v, t in self.bindings:
            if v.value == name:
                return t
        return None

    def render(self) -> str:
        """An indented, human-readable tree (prefixed names where prefixes are known)."""
        lines: list[str] = []
        self._render(lines, 0)
        return "\n".join(lines)

    def _render(self, out: list[str], depth: int) -> None:
        pad = "  " * depth
        fmt = _Fmt(self.prefixes)
        out.append(f"{pad}{fmt.triple(self.triple)}")
        if self.rule == "DATA":
            out.append(f"{pad}  from a DATA block of the rule set")
            return
        where = f" ({self.location.file}:{self.location.line})" if self.location and self.rule != _loc_name(self.location) else ""
        out.append(f"{pad}  by rule {fmt.name(self.rule)}{where}")
        if self.bindings:
            out.append(pad + "  with " + ", ".join(f"?{v.value} = {fmt.term(t)}" for v, t in self.bindings))
        for s in self.supports:
            if s.explanation is None:
                out.append(f"{pad}  - {fmt.triple(s.triple)}  [{s.origin}]")
            else:
                out.append(f"{pad}  - [inferred]")
                s.explanation._render(out, depth + 2)
        for c in self.conditions:
            out.append(f"{pad}  - {c}  [holds]")
        for a in self.absent:
            out.append(f"{pad}  - NOT {{ {a} }}  [no match]")


def _loc_name(loc: Location) -> str:
    return f"{loc.file}:{loc.line}"


class _Fmt:
    def __init__(self, prefixes: dict[str, str]) -> None:
        self.ns = sorted(prefixes.items(), key=lambda kv: -len(kv[1]))

    def name(self, iri: str) -> str:
        if iri.startswith("<") and iri.endswith(">"):
            iri = iri[1:-1]
        for p, ns in self.ns:
            if ns and iri.startswith(ns) and _LOCAL.match(iri[len(ns):]):
                return f"{p}:{iri[len(ns):]}"
        return f"<{iri}>" if "://" in iri or iri.startswith("urn:") else iri

    def term(self, t: object) -> str:
        if isinstance(t, NamedNode):
            if t.value == "http://www.w3.org/1999/02/22-rdf-syntax-ns#type":
                return "a"
            return self.name(t.value)
        if isinstance(t, BlankNode):
            return f"_:{t.value}"
        if isinstance(t, Literal):
            dt = t.datatype.value
            if dt in _PLAIN:
                return t.value
            if t.language:
                return f'"{t.value}"@{t.language}'
            if dt == _XSD + "string":
                return f'"{t.value}"'
            return f'"{t.value}"^^{self.name(dt)}'
        if isinstance(t, Triple):
            return f"<<( {self.triple(t)} )>>"
        if isinstance(t, Variable):
            return f"?{t.value}"
        if isinstance(t, TripleTermPattern):
            return f"<<( {self.term(t.s)} {self.term(t.p)} {self.term(t.o)} )>>"
        return str(t)

    def triple(self, t: Triple | GeneralizedTriple) -> str:
        return f"{self.term(t.subject)} {self.term(t.predicate)} {self.term(t.object)}"


def explain(reasoner: Reasoner, triple: Triple) -> Explanation:
    """Explain an inferred triple (see the module docstring).

    :raises ExplainError: when ``triple`` is not in the inference graph (not derived,
        or asserted).
    """
    st = reasoner._state
    f = reasoner._dic.encode_existing(triple)
    if f is None or f not in st.full.facts:
        raise ExplainError(f"not inferred: {triple} is not in the evaluation graph")
    if f in st.base.facts:
        raise ExplainError(f"not inferred: {triple} is asserted (in the base graph)")
    return _Explainer(reasoner).explain(f)


class _Explainer:
    def __init__(self, reasoner: Reasoner) -> None:
        self.r = reasoner
        self.st = reasoner._state
        self.dic = reasoner._dic
        self.prefixes = dict(reasoner.ruleset.prefixes)
        self.memo: dict[Fact, Explanation] = {}

    def explain(self, f: Fact) -> Explanation:
        got = self.memo.get(f)
        if got is not None:
            return got
        st = self.st
        dic = self.dic

        def decode(g: Fact) -> Triple | GeneralizedTriple:
            return _decode(dic, g)

        if f in st.data:
            e = Explanation(decode(f), "DATA", prefixes=self.prefixes)
            self.memo[f] = e
            return e
        found = self._minted(f) or self._match(f)
        if found is None:  # pragma: no cover - would be an engine bug
            raise ExplainError(f"no well-founded derivation found for {decode(f)}")
        info, binding = found
        e = self._build(f, info, binding)
        self.memo[f] = e
        return e

    def _support_ok(self, g: Fact | None, rf: int, from_base: bool) -> bool:
        st = self.st
        if g is None:
            return False
        if g in st.base.facts:
            return True
        if from_base:
            return False
        if g in st.data:
            return True
        return st.rank.get(g, rf) < rf

    def _match(self, f: Fact) -> tuple[object, dict[Variable, int]] | None:
        r, st = self.r, self.st
        rf = st.rank.get(f, 0)
        comp = r._compiler
        from reckon.datalog._plan import pattern_predicate

        for info in r._rules:
            for j, tpl in enumerate(info.rule.head):
                p = pattern_predicate(tpl)
                if p is not None and self.dic.lookup(p) != f[1]:
                    continue
                plan = comp.plan(info, None, "rows", j)
                if plan is None:
                    continue
                atoms = [info.rule.body[k] for k in info.atoms]
                for row in plan.fn(st.full, st.base, f[0], f[1], f[2]):
                    binding = dict(zip(plan.row_vars, row))
                    if all(
                        self._support_ok(instantiate_fact(tp, binding, self.dic), rf, info.rule.data)  # type: ignore[arg-type]
                        for tp in atoms
                    ):
                        return info, binding
        return None

    def _minted(self, f: Fact) -> tuple[object, dict[Variable, int]] | None:
        rev = self.r._memo_rev
        for x in (f[0], f[2]):
            hit = rev.get(x)
            if hit is not None:
                rule_index, key = hit
                info = self.r._by_index[rule_index]
                outer: set[Variable] = set()
                for e in info.rule.body:
                    if isinstance(e, TriplePattern):
                        outer |= e.variables()
                    elif isinstance(e, (Assignment, Aggregate)):
                        outer.add(e.var)
                names = sorted(outer, key=lambda v: info.slots[v])
                if len(names) == len(key):
                    return info, dict(zip(names, key))
        return None

    def _build(self, f: Fact, info: object, binding: dict[Variable, int]) -> Explanation:
        st = self.st
        dic = self.dic
        rule = info.rule  # type: ignore[attr-defined]
        fmt = _Fmt(self.prefixes)
        terms = dic.terms
        supports: list[Support] = []
        absent: list[str] = []
        conditions: list[str] = []

        def show(t: object) -> str:
            if isinstance(t, Variable) and t in binding:
                return fmt.term(terms[binding[t]])
            if isinstance(t, TripleTermPattern):
                return f"<<( {show(t.s)} {show(t.p)} {show(t.o)} )>>"
            return fmt.term(t)

        for e in rule.body:
            if isinstance(e, TriplePattern):
                g = instantiate_fact(e, binding, dic)
                if g is None:  # pragma: no cover
                    continue
                t = _decode(dic, g)
                if g in st.base.facts:
                    supports.append(Support(t, "asserted"))
                elif g in st.data:
                    supports.append(Support(t, "data"))
                else:
                    supports.append(Support(t, "inferred", self.explain(g)))
            elif isinstance(e, Negation):
                inner = " . ".join(
                    f"{show(x.s)} {show(x.p)} {show(x.o)}" if isinstance(x, TriplePattern) else _expr_text(x, show)
                    for x in e.elements
                )
                absent.append(("DATA " if e.data else "") + inner if not e.data else inner + "  (base graph)")
            elif isinstance(e, Filter):
                conditions.append(_expr_text(e, show))
            elif isinstance(e, Assignment):
                conditions.append(f"SET(?{e.var.value} := {_expr_str(e.expr, show)})")
            elif isinstance(e, Aggregate):
                conditions.append(f"AGGREGATE(?{e.var.value} := {e.function}(...)) = {show(e.var)}")
        shown = tuple(
            (v, terms[i]) for v, i in sorted(binding.items(), key=lambda kv: kv[0].value) if not v.value.startswith("__")
        )
        return Explanation(
            _decode(dic, f),
            rule.name,
            rule.loc,
            shown,
            tuple(supports),
            tuple(absent),
            tuple(conditions),
            self.prefixes,
        )


def _expr_text(e: object, show: object) -> str:
    if isinstance(e, Filter):
        return f"FILTER({_expr_str(e.expr, show)})"
    return str(e)


def _expr_str(x: object, show: object) -> str:
    from reckon.datalog.model import Call

    if isinstance(x, Call):
        name = x.name if isinstance(x.name, str) else show(x.name)  # type: ignore[operator]
        if isinstance(x.name, str) and len(x.args) == 2 and not x.name[0].isalpha():
            return f"{_expr_str(x.args[0], show)} {name} {_expr_str(x.args[1], show)}"
        return f"{name}({', '.join(_expr_str(a, show) for a in x.args)})"
    return show(x)  # type: ignore[operator, no-any-return]
