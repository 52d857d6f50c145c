"""Rule dependency graph and stratification.

Source: SRL draft ``index.html`` sections "Rule Dependency", "Dependency Graph
Algorithm", "Stratification" and "Stratification Algorithm"
(``../shared/conformance/srl-spec/sparql12-rl/``), with CHANGES.md 2026-08-24:
"A ``WHERE DATA`` rule body and a ``NOT DATA`` negation element no longer give rise to
rule dependencies".

* Rule R1 *depends on* R2 when a triple pattern of R1's body (a triple pattern element,
  or inside a negation) can match a triple that a template of R2's head can generate.
  Matching is unification with the two rules' variables renamed apart: a repeated
  variable takes one value, triple terms unify component-wise, and a head blank node
  is a fresh term (it matches only a variable).
* The dependency is *closed* when the pattern is inside a ``NOT`` (or, Reckon
  extension, inside an ``AGGREGATE``), or when R1 is a run-once rule (it has an
  assignment / aggregate or a blank node in its head); else it is *open*.
* Stratification condition: no cycle of the graph contains a closed edge. The
  layering equals the spec's fixpoint algorithm (open edge: stratum(R1) >= stratum(R2);
  closed edge: stratum(R1) > stratum(R2); least solution), computed here over the
  strongly connected components in O(rules + edges) after matching. Head templates
  are indexed by predicate (and by object for constant objects) so that matching a
  1000-rule program stays fast; a variable-predicate template is tried against every
  pattern and vice versa.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from pyoxigraph import BlankNode, NamedNode, Triple, Variable

from reckon._errors import RuleSetInvalid
from reckon.datalog.diagnostics import Diagnostic
from reckon.datalog.model import (
    INTERNAL,
    Aggregate,
    Assignment,
    Negation,
    Rule,
    RuleSet,
    TriplePattern,
    TripleTermPattern,
)
from reckon.datalog.wellformed import check_wellformed

__all__ = ["Stratum", "Dependency", "DependencyGraph", "dependency_graph", "stratify", "check_program"]


@dataclass(frozen=True)
class Stratum:
    """A stratification layer (spec "Stratification layer").

    :ivar once: run-once rules, each evaluated exactly once at the start of the layer.
    :ivar general: the other rules, evaluated to fixpoint (semi-naive).
    """

    once: tuple[Rule, ...] = ()
    general: tuple[Rule, ...] = ()


class Dependency(NamedTuple):
    """Edge ``source -> target``: rule ``source`` depends on rule ``target``.

    :ivar label: ``"open"`` or ``"closed"``.
    :ivar pattern: a body pattern of ``source`` witnessing the dependency (the one
        that made the edge closed, if it is closed).
    :ivar template: the head template of ``target`` it matches.
    :ivar reason: for a closed edge: ``"negation"``, ``"aggregate"`` or ``"run-once"``.
    """

    source: int
    target: int
    label: str
    pattern: TriplePattern
    template: TriplePattern
    reason: str = ""


@dataclass
class DependencyGraph:
    """The dependency graph: vertices are rule indexes into ``rules``."""

    rules: tuple[Rule, ...]
    edges: dict[tuple[int, int], Dependency]

    def successors(self, i: int) -> list[int]:
        """Rules that rule ``i`` depends on."""
        return self._succ().get(i, [])

    def _succ(self) -> dict[int, list[int]]:
        cache = getattr(self, "_succ_cache", None)
        if cache is None:
            cache = defaultdict(list)
            for a, b in self.edges:
                cache[a].append(b)
            self._succ_cache = cache
        return cache


def _body_patterns(rule: Rule) -> Iterator[tuple[TriplePattern, str]]:
    """(pattern, reason) pairs; reason ``""`` = open."""
    if rule.data:  # WHERE DATA: matched against the base graph only
        return
    for e in rule.body:
        if isinstance(e, TriplePattern):
            yield e, ""
        elif isinstance(e, Negation):
            if e.data:  # NOT DATA: base graph only
                continue
            for x in e.elements:
                if isinstance(x, TriplePattern):
                    yield x, "negation"
        elif isinstance(e, Aggregate):
            for x in e.elements:
                if isinstance(x, TriplePattern):
                    yield x, "aggregate"


def dependency_graph(ruleset: RuleSet) -> DependencyGraph:
    """Build the dependency graph (spec "Dependency Graph").

    Edges merge labels as the spec's ``mergeLabel``: closed wins over open.
    """
    rules = ruleset.rules
    by_pred: dict[object, list[tuple[int, TriplePattern]]] = defaultdict(list)
    by_pred_obj: dict[tuple[object, object], list[tuple[int, TriplePattern]]] = defaultdict(list)
    by_pred_varobj: dict[object, list[tuple[int, TriplePattern]]] = defaultdict(list)
    wildcard: list[tuple[int, TriplePattern]] = []
    for j, r in enumerate(rules):
        for tt in r.head:
            if isinstance(tt.p, Variable):
                wildcard.append((j, tt))
            else:
                by_pred[tt.p].append((j, tt))
                if _is_const(tt.o):
                    by_pred_obj[(tt.p, tt.o)].append((j, tt))
                else:
                    by_pred_varobj[tt.p].append((j, tt))
    all_templates = [(j, tt) for j, r in enumerate(rules) for tt in r.head]
    with_head = [j for j, r in enumerate(rules) if r.head]

    edges: dict[tuple[int, int], Dependency] = {}
    for i, r in enumerate(rules):
        run_once = r.run_once
        for tp, reason in _body_patterns(r):
            if run_once and not reason:
                reason = "run-once"
            label = "closed" if reason else "open"
            if _all_distinct_vars(tp):  # matches whatever any head can generate
                for j in with_head:
                    old = edges.get((i, j))
                    if old is None or (reason and old.label == "open"):
                        edges[(i, j)] = Dependency(i, j, label, tp, rules[j].head[0], reason)
                continue
            if isinstance(tp.p, Variable):
                candidates = all_templates
            elif _is_const(tp.o):
                candidates = by_pred_obj.get((tp.p, tp.o), []) + by_pred_varobj.get(tp.p, []) + wildcard
            else:
                candidates = by_pred.get(tp.p, []) + wildcard
            for j, tt in candidates:
                old = edges.get((i, j))
                if old is not None and (old.label == "closed" or not reason):
                    continue  # nothing new to learn from this pair
                if not matches(tp, tt):
                    continue
                edges[(i, j)] = Dependency(i, j, label, tp, tt, reason)
    return DependencyGraph(rules, edges)


def matches(pattern: TriplePattern, template: TriplePattern) -> bool:
    """Whether ``template`` can generate a triple that ``pattern`` matches (spec "Triple
    pattern matching"): unification with the two sides' variables kept apart.

    Reckon extension: a template whose predicate is a variable never generates a fact
    whose predicate is helper vocabulary (:data:`~reckon.datalog.model.INTERNAL`; the
    evaluator drops such instances), so it does not match a pattern with such a
    predicate: ``rdfs7``'s ``{ ?x ?b ?y }`` does not feed a rule that reads
    ``?lt rki:literal true``; and a pattern whose predicate is a variable does not read
    helper facts (the evaluator skips them), so it does not match a template with such a
    predicate."""
    if isinstance(template.p, Variable) and isinstance(pattern.p, NamedNode) and pattern.p.value.startswith(INTERNAL):
        return False
    if isinstance(pattern.p, Variable) and isinstance(template.p, NamedNode) and template.p.value.startswith(INTERNAL):
        return False
    if _linear(pattern) and _linear(template):
        for a, b in ((pattern.s, template.s), (pattern.p, template.p), (pattern.o, template.o)):
            if isinstance(a, Variable) or isinstance(b, Variable):
                continue
            if isinstance(a, BlankNode) or isinstance(b, BlankNode) or a != b:
                return False
        return True
    subst: dict[tuple[str, object], tuple[str, object]] = {}
    return (
        _unify(("P", pattern.s), ("T", template.s), subst)
        and _unify(("P", pattern.p), ("T", template.p), subst)
        and _unify(("P", pattern.o), ("T", template.o), subst)
    )


def _linear(tp: TriplePattern) -> bool:
    """No triple-term pattern and no variable repeated: positions match independently."""
    s, p, o = tp.s, tp.p, tp.o
    if isinstance(s, TripleTermPattern) or isinstance(p, TripleTermPattern) or isinstance(o, TripleTermPattern):
        return False
    vs = [x for x in (s, p, o) if isinstance(x, Variable)]
    return len(vs) == len(set(vs))


def _all_distinct_vars(tp: TriplePattern) -> bool:
    return isinstance(tp.s, Variable) and isinstance(tp.p, Variable) and isinstance(tp.o, Variable) and len({tp.s, tp.p, tp.o}) == 3


# Terms are tagged with their side ("P" pattern / "T" template) so variables never clash.
def _walk(x: tuple[str, object], subst: dict[tuple[str, object], tuple[str, object]]) -> tuple[str, object]:
    while isinstance(x[1], Variable) and x in subst:
        x = subst[x]
    return x


def _unify(a: tuple[str, object], b: tuple[str, object], subst: dict[tuple[str, object], tuple[str, object]]) -> bool:
    a = _walk(a, subst)
    b = _walk(b, subst)
    if a == b:
        return True
    ta, tb = a[1], b[1]
    if isinstance(ta, Variable):
        if _occurs(a, b, subst):
            return False
        subst[a] = b
        return True
    if isinstance(tb, Variable):
        if _occurs(b, a, subst):
            return False
        subst[b] = a
        return True
    if isinstance(ta, BlankNode) or isinstance(tb, BlankNode):
        # a head blank node is a fresh term per solution; a body has no blank nodes
        return False
    pa, pb = _parts(ta), _parts(tb)
    if pa is None or pb is None:
        return ta == tb
    return all(_unify((a[0], x), (b[0], y), subst) for x, y in zip(pa, pb))


def _parts(t: object) -> tuple[object, object, object] | None:
    if isinstance(t, TripleTermPattern):
        return (t.s, t.p, t.o)
    if isinstance(t, Triple):
        return (t.subject, t.predicate, t.object)
    return None


def _occurs(v: tuple[str, object], t: tuple[str, object], subst: dict[tuple[str, object], tuple[str, object]]) -> bool:
    t = _walk(t, subst)
    if t == v:
        return True
    parts = _parts(t[1])
    return parts is not None and any(_occurs(v, (t[0], x), subst) for x in parts)


def _is_const(t: object) -> bool:
    return not isinstance(t, (Variable, TripleTermPattern, BlankNode))


def _sccs(n: int, succ: dict[int, list[int]]) -> list[list[int]]:
    """Tarjan's algorithm, iterative; components come out dependencies-first."""
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, k = work[-1]
            nbrs = succ.get(v, [])
            if k < len(nbrs):
                work[-1] = (v, k + 1)
                w = nbrs[k]
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack[w] = False
                        comp.append(w)
                        if w == v:
                            break
                    out.append(comp)
    return out


def stratify(ruleset: RuleSet) -> list[Stratum]:
    """Partition the rules into strata (spec "Stratification").

    :returns: strata, lowest first; rules keep their source order inside a stratum.
    :raises RuleSetInvalid: with one SRL008 diagnostic per recursive component that
        contains a closed dependency, naming the predicates and rules of a cycle, e.g.
        ``negation of :status in rule f.srl:3 is inside a recursive cycle:
        :safe -> :status -> :safe (rules f.srl:3 -> f.srl:4 -> f.srl:3); cannot be stratified``.
    """
    graph = dependency_graph(ruleset)
    problems: list[Diagnostic] = []
    strata = _layers(graph, ruleset, problems)
    if problems:
        raise RuleSetInvalid(problems)
    return strata


def _layers(graph: DependencyGraph, ruleset: RuleSet, problems: list[Diagnostic]) -> list[Stratum]:
    rules = graph.rules
    n = len(rules)
    succ = graph._succ()
    comps = _sccs(n, succ)
    comp_of = [0] * n
    for c, members in enumerate(comps):
        for v in members:
            comp_of[v] = c
    level = [0] * len(comps)
    for c, members in enumerate(comps):  # dependencies-first order
        best = 0
        bad: Dependency | None = None
        for v in members:
            for w in succ.get(v, []):
                dep = graph.edges[(v, w)]
                closed = dep.label == "closed"
                if comp_of[w] == c:
                    if closed and bad is None:
                        bad = dep
                    continue
                best = max(best, level[comp_of[w]] + (1 if closed else 0))
        level[c] = best
        if bad is not None:
            problems.append(_cycle_diagnostic(graph, bad, set(members), ruleset))
    if n == 0:
        return []
    top = max(level)
    buckets: list[list[Rule]] = [[] for _ in range(top + 1)]
    for i, r in enumerate(rules):
        buckets[level[comp_of[i]]].append(r)
    return [
        Stratum(once=tuple(r for r in b if r.run_once), general=tuple(r for r in b if not r.run_once))
        for b in buckets
        if b
    ]


def _cycle_diagnostic(graph: DependencyGraph, bad: Dependency, comp: set[int], ruleset: RuleSet) -> Diagnostic:
    # shortest path target -> ... -> source inside the component, closing the cycle
    src, dst = bad.source, bad.target
    prev: dict[int, int] = {dst: dst}
    q = deque([dst])
    while q and src not in prev:
        v = q.popleft()
        for w in graph.successors(v):
            if w in comp and w not in prev:
                prev[w] = v
                q.append(w)
    path = [src]
    while path[-1] != dst:
        path.append(prev[path[-1]])
    path.reverse()  # dst ... src
    cycle = [src] + path  # src -> dst -> ... -> src
    if cycle[-1] != src:
        cycle.append(src)
    pfx = ruleset.prefixes
    preds = [_edge_pred(graph.edges[(cycle[k], cycle[k + 1])], pfx) for k in range(len(cycle) - 1)]
    chain = " -> ".join([preds[-1]] + preds)
    rules = " -> ".join(rule_label(graph.rules[k], pfx) for k in cycle)
    r = graph.rules[src]
    name = rule_label(r, pfx)
    what = _edge_pred(bad, pfx)
    if bad.reason == "negation":
        head = f"negation of {what} in rule {name}"
    elif bad.reason == "aggregate":
        head = f"aggregate over {what} in rule {name}"
    else:
        if any(isinstance(e, Aggregate) for e in r.body):
            why = "an aggregate"
        elif any(isinstance(e, Assignment) for e in r.body):
            why = "an assignment"
        else:
            why = "a blank node in its head"
        head = f"run-once rule {name} (it has {why}) depending on {what}"
    loc = bad.pattern.loc or r.loc
    msg = f"{head} is inside a recursive cycle: {chain} (rules {rules}); cannot be stratified"
    if loc is None:
        return Diagnostic("SRL008", msg)
    return Diagnostic("SRL008", msg, loc.file, loc.line, loc.column)


def _edge_pred(dep: Dependency, prefixes: dict[str, str]) -> str:
    p = dep.pattern.p if not isinstance(dep.pattern.p, Variable) else dep.template.p
    if isinstance(p, Variable):
        return "?" + p.value
    return short_iri(p, prefixes)


def rule_label(rule: Rule, prefixes: dict[str, str]) -> str:
    """The rule's IRI (prefixed when possible), else ``file:line``."""
    if isinstance(rule.id, NamedNode):
        return short_iri(rule.id, prefixes)
    return rule.name


def short_iri(t: object, prefixes: dict[str, str]) -> str:
    """``prefix:local`` for an IRI under a declared prefix (longest namespace), else ``<iri>``."""
    if isinstance(t, NamedNode):
        best = None
        for pfx, ns in prefixes.items():
            if t.value.startswith(ns) and (best is None or len(ns) > len(best[1])):
                best = (pfx, ns)
        if best is not None:
            return f"{best[0]}:{t.value[len(best[1]):]}"
    return str(t)


def check_program(ruleset: RuleSet) -> list[Stratum]:
    """Well-formedness and stratification together; every problem in one report.

    :returns: the strata (see :func:`stratify`).
    :raises RuleSetInvalid: listing all SRL003-SRL008 / SRL012 problems, sorted by location.
    """
    problems = list(check_wellformed(ruleset))
    graph = dependency_graph(ruleset)
    strata = _layers(graph, ruleset, problems)
    if problems:
        raise RuleSetInvalid(sorted(problems, key=lambda d: (d.file, d.line, d.column)))
    return strata
