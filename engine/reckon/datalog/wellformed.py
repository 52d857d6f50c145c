"""Well-formedness of a rule set.

Source: SRL draft ``index.html`` section "Well-formedness Conditions"
(``../shared/conformance/srl-spec/sparql12-rl/``):

    A [rule] is a well-formed rule if the sequence of the [rule body] is a
    [well-formed sequence] given V0 is the empty set, and each variable in a
    [triple template] of the [rule head] is an element of Vall.

A sequence is well-formed when, for its i-th element: a filter mentions only
variables of V(i-1); an assignment's expression mentions only variables of V(i-1)
and its variable is not in V(i-1); a negation's body is a well-formed sequence given
V(i-1). Triple patterns define their variables, assignments define their variable.

Reckon extension: an :class:`~reckon.datalog.model.Aggregate` is checked like a
negation for its inner elements (given V(i-1)); its result variable must be new
(SRL012), its argument may use outer variables and the inner patterns' variables, and
it defines its result variable.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyoxigraph import Variable

from reckon.datalog.diagnostics import Diagnostic
from reckon.datalog.model import (
    Aggregate,
    Assignment,
    BodyElement,
    Filter,
    Location,
    Negation,
    Rule,
    RuleSet,
    TriplePattern,
    expr_variables,
)

__all__ = ["check_wellformed", "check_rule"]


def check_wellformed(ruleset: RuleSet) -> list[Diagnostic]:
    """All well-formedness problems of ``ruleset`` (empty list when well-formed).

    :returns: diagnostics with codes SRL003 (unsafe head variable), SRL004 (FILTER
        variable not bound before it), SRL005 (SET expression variable not bound before
        it), SRL006 (SET variable already bound), SRL007 (problem inside a NOT body; the
        message names the NOT), SRL012 (aggregate), each located at the offending element.

    >>> from reckon.datalog.srl import parse_srl
    >>> rs = parse_srl("PREFIX : <http://e/> RULE { ?s :p ?o } WHERE { ?s :q ?z }", check=False)
    >>> [d.code for d in check_wellformed(rs)]
    ['SRL003']
    """
    out: list[Diagnostic] = []
    for rule in ruleset.rules:
        out.extend(check_rule(rule))
    return out


def check_rule(rule: Rule) -> list[Diagnostic]:
    """Well-formedness problems of one rule."""
    out: list[Diagnostic] = []
    bound = _check_sequence(rule.body, set(), rule, out, inside=None)
    missing: dict[Variable, TriplePattern] = {}
    for tp in rule.head:
        for v in sorted(tp.variables(), key=lambda v: v.value):
            if v not in bound and v not in missing:
                missing[v] = tp
    for v, tp in missing.items():
        out.append(_diag("SRL003", f"head variable {_v(v)} of rule {rule.name} is not bound in the body", tp.loc or rule.loc))
    return out


def _check_sequence(
    elements: Iterable[BodyElement], v0: set[Variable], rule: Rule, out: list[Diagnostic], inside: str | None
) -> set[Variable]:
    bound = set(v0)
    for e in elements:
        if isinstance(e, TriplePattern):
            bound |= e.variables()
        elif isinstance(e, Filter):
            unbound = expr_variables(e.expr) - bound
            if unbound:
                where = f" inside {inside}" if inside else ""
                out.append(
                    _diag(
                        "SRL007" if inside == "NOT" else ("SRL012" if inside else "SRL004"),
                        f"FILTER{where} in rule {rule.name} uses {_vs(unbound)} before {'it is' if len(unbound) == 1 else 'they are'} bound",
                        e.loc or rule.loc,
                    )
                )
        elif isinstance(e, Assignment):
            unbound = expr_variables(e.expr) - bound
            if unbound:
                out.append(_diag("SRL005", f"SET({_v(e.var)} := ...) in rule {rule.name} uses {_vs(unbound)} before {'it is' if len(unbound) == 1 else 'they are'} bound", e.loc or rule.loc))
            if e.var in bound:
                out.append(_diag("SRL006", f"SET assigns {_v(e.var)} in rule {rule.name}, but {_v(e.var)} is already bound earlier in the body", e.loc or rule.loc))
            bound.add(e.var)
        elif isinstance(e, Negation):
            _check_sequence(e.elements, bound, rule, out, inside="NOT")
        elif isinstance(e, Aggregate):
            inner = _check_sequence(e.elements, bound, rule, out, inside="AGGREGATE")
            if e.expr is not None:
                unbound = expr_variables(e.expr) - inner
                if unbound:
                    out.append(_diag("SRL012", f"AGGREGATE({_v(e.var)} := {e.function}(...)) in rule {rule.name} uses {_vs(unbound)}, bound neither before it nor by its patterns", e.loc or rule.loc))
            if e.var in bound:
                out.append(_diag("SRL012", f"AGGREGATE assigns {_v(e.var)} in rule {rule.name}, but {_v(e.var)} is already bound earlier in the body", e.loc or rule.loc))
            if e.function not in ("COUNT", "SUM", "MIN", "MAX", "AVG"):
                out.append(_diag("SRL012", f"unknown aggregate function {e.function!r} in rule {rule.name}", e.loc or rule.loc))
            if e.expr is None and e.function != "COUNT":
                out.append(_diag("SRL012", f"{e.function}(*) in rule {rule.name}: only COUNT may omit its argument", e.loc or rule.loc))
            bound.add(e.var)
    return bound


def _diag(code: str, message: str, loc: Location | None) -> Diagnostic:
    if loc is None:
        return Diagnostic(code, message)
    return Diagnostic(code, message, loc.file, loc.line, loc.column)


def _v(v: Variable) -> str:
    return "?" + v.value


def _vs(vs: set[Variable]) -> str:
    names = sorted(_v(v) for v in vs)
    return ("variable " if len(names) == 1 else "variables ") + ", ".join(names)
