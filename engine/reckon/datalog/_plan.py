"""Join plans: each rule body compiled once into a Python function.

Private support for :mod:`reckon.datalog.evaluate`. A rule body (SRL "Evaluation of a
Rule", ``evalRuleElements``) is a sequence of rule elements; we evaluate it as nested
loops over the hash indexes of a :class:`~reckon.datalog._factstore.FactStore`, with
variables held in Python locals (one per variable slot), by generating Python source
for each (rule, delta position, mode) and ``exec``-ing it once. ``Plan.source`` keeps
the generated text for debugging.

Element order (:func:`order_elements`): triple patterns are ordered greedily by
estimated cost (bound positions and index statistics; the delta atom of a semi-naive
variant first); a filter, assignment, negation or aggregate is placed as soon as the
variables it reads that were bound *before it in source order* are bound, and before
any variable it reads that was *not* bound before it in source order gets bound. So
every element sees exactly the bindings SRL's sequential semantics gives it, and
evaluation order is free otherwise.

Modes (the innermost statement of the generated loops):

* ``"new"``: add each head instance not yet in the full store to ``NEW``;
* ``"new1"``: the same, with the delta atom always first (maintenance: tiny deltas);
* ``"old"``: add each head instance already in the full store to ``NEW`` (DRed
  over-deletion; delta atom first);
* ``"all"``: add every head instance to ``NEW``;
* ``"exists"``: head template bound to a given fact; return whether the body has a
  solution (DRed rederivation);
* ``"rows"``: head template bound; yield each body solution (explanations);
* ``"safe"``: head template bound; whether some body solution's supports (its positive
  atoms' facts) are each asserted, or of rank below ``RF`` and not in ``UNSAFE`` (the
  well-founded check of maintenance, inlined).

Aggregates (Reckon extension, :class:`~reckon.datalog.model.Aggregate`) compile to a
nested function called per outer solution. When no inner triple pattern reads an outer
variable, the inner join runs once per plan call and is cached; a ``COUNT`` whose only
correlated filter is one order comparison is then answered by bisection over the sorted
inner values (:data:`AGGREGATE_STRATEGY`, :class:`_OrderIndex`): O(n log n) instead of
O(n^2) for "how many candidates rank ahead of this one".
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, cast

from pyoxigraph import BlankNode, Literal, Triple, Variable

from reckon.datalog import expr as _expr
from reckon.datalog._factstore import BNODE, IRI, FactStore, TermDictionary, index_width
from reckon.datalog.model import (
    Aggregate,
    Assignment,
    Call,
    Expr,
    Filter,
    Negation,
    Rule,
    TriplePattern,
    TripleTermPattern,
    expr_variables,
    pattern_variables,
)

__all__ = ["Plan", "PlanCompiler", "RuleInfo", "instantiate", "instantiate_fact", "order_elements", "pattern_predicate", "prepare_rule"]

DELTA_FACTOR = 0.05
"""Estimated size of a semi-naive delta relative to the full relation (join ordering)."""

_E: frozenset[int] = frozenset()
_ED: dict[int, Any] = {}


def pattern_predicate(tp: TriplePattern) -> object:
    """The predicate of a pattern/template if constant, else ``None`` (matches any)."""
    return None if isinstance(tp.p, (Variable, TripleTermPattern)) else tp.p


def _elem_vars(e: object) -> set[Variable]:
    if isinstance(e, TriplePattern):
        return e.variables()
    if isinstance(e, Filter):
        return expr_variables(e.expr)
    if isinstance(e, Assignment):
        return expr_variables(e.expr) | {e.var}
    if isinstance(e, Negation):
        out: set[Variable] = set()
        for x in e.elements:
            out |= _elem_vars(x)
        return out
    if isinstance(e, Aggregate):
        out = {e.var} | (expr_variables(e.expr) if e.expr is not None else set())
        for x in e.elements:
            out |= _elem_vars(x)
        return out
    return set()


def order_elements(
    elements: tuple[object, ...],
    prebound: set[Variable],
    cost: Callable[[TriplePattern, set[Variable]], float],
    first: int | None = None,
    delta_factor: float | None = None,
) -> list[int]:
    """Evaluation order of ``elements`` (indices), consistent with SRL sequential semantics.

    :param prebound: variables bound before the body (head variables in check mode,
        correlated variables inside a negation).
    :param cost: estimated cost of a triple pattern given the bound variables.
    :param first: index of the semi-naive delta atom; its cost is scaled by
        ``delta_factor`` (default :data:`DELTA_FACTOR`: a delta is usually much smaller
        than the full relation; ``0.0`` puts it first).
    """
    factor = DELTA_FACTOR if delta_factor is None else delta_factor
    need: dict[int, set[Variable]] = {}
    forbid: dict[int, set[Variable]] = {}
    binds: dict[int, set[Variable]] = {}
    prefix = set(prebound)
    for k, e in enumerate(elements):
        if isinstance(e, TriplePattern):
            binds[k] = e.variables()
            prefix |= binds[k]
            continue
        v = _elem_vars(e)
        own: set[Variable] = {e.var} if isinstance(e, (Assignment, Aggregate)) else set()
        reads = v - own if isinstance(e, (Assignment, Aggregate)) else v
        need[k] = reads & prefix
        forbid[k] = ((reads - prefix) | own) - prebound
        binds[k] = own
        prefix |= own
    bound = set(prebound)
    order: list[int] = []
    remaining = list(range(len(elements)))
    while remaining:
        placed = True
        while placed:
            placed = False
            for k in remaining:
                if k in need and need[k] <= bound and not (forbid[k] & bound):
                    order.append(k)
                    remaining.remove(k)
                    bound |= binds[k]
                    placed = True
                    break
        if not remaining:
            break
        blocked: set[Variable] = set()
        for k in remaining:
            if k in forbid:
                blocked |= forbid[k]
        pats = [k for k in remaining if k not in need and not ((binds[k] - bound) & blocked)]
        if pats:
            # the delta atom is usually far smaller than its full relation
            pick = min(
                pats,
                key=lambda k: (cost(elements[k], bound) * (factor if k == first else 1.0), k),  # type: ignore[arg-type]
            )
        else:
            pick = remaining[0]
        order.append(pick)
        remaining.remove(pick)
        bound |= binds[pick]
    return order


@dataclass
class RuleInfo:
    """A rule prepared for evaluation.

    :ivar index: position of the rule in the rule set.
    :ivar stratum: index of its stratum.
    :ivar once: run-once rule (SRL "Stratification layer": ``SL.once``).
    :ivar atoms: body indices of the positive triple patterns.
    :ivar head_bnodes: distinct blank nodes of the head (fresh per solution).
    """

    index: int
    rule: Rule
    stratum: int
    once: bool
    atoms: list[int]
    head_bnodes: list[BlankNode]
    slots: dict[Variable, int] = field(default_factory=dict)
    uses_bnode_fn: bool = False

    @property
    def nonmonotone(self) -> bool:
        """Reads a negation or aggregate, mints blank nodes, or reads the base graph only
        without being :attr:`base_monotone`."""
        r = self.rule
        return bool(
            (r.data and not self.base_monotone)
            or self.head_bnodes
            or any(isinstance(e, (Negation, Aggregate)) for e in r.body)
        )

    @property
    def base_monotone(self) -> bool:
        """A ``WHERE DATA`` rule with only triple patterns, filters and assignments (no
        negation, aggregate or head blank node): monotone in the base graph, so it is
        maintained from the base graph's deltas like any rule from its body's."""
        r = self.rule
        return bool(
            r.data and not self.head_bnodes and not any(isinstance(e, (Negation, Aggregate)) for e in r.body)
        )


def _uses_bnode_call(e: object) -> bool:
    if isinstance(e, Call):
        return e.name == "BNODE" or any(_uses_bnode_call(a) for a in e.args)
    return False


def prepare_rule(index: int, rule: Rule, stratum: int, once: bool) -> RuleInfo:
    """Slot numbering and structural facts of a rule."""
    atoms = [k for k, e in enumerate(rule.body) if isinstance(e, TriplePattern)]
    bnodes: list[BlankNode] = []

    def collect(t: object) -> None:
        if isinstance(t, BlankNode) and t not in bnodes:
            bnodes.append(t)
        elif isinstance(t, TripleTermPattern):
            collect(t.s)
            collect(t.p)
            collect(t.o)
        elif isinstance(t, Triple):
            collect(t.subject)
            collect(t.object)

    for tp in rule.head:
        collect(tp.s)
        collect(tp.p)
        collect(tp.o)
    slots: dict[Variable, int] = {}
    for e in rule.body:
        for v in sorted(_elem_vars(e), key=lambda v: v.value):
            slots.setdefault(v, len(slots))
    for tp in rule.head:
        for v in sorted(tp.variables(), key=lambda v: v.value):
            slots.setdefault(v, len(slots))
    uses = any(
        _uses_bnode_call(getattr(e, "expr", None))
        or (isinstance(e, (Negation, Aggregate)) and any(_uses_bnode_call(getattr(x, "expr", None)) for x in e.elements))
        for e in rule.body
    )
    return RuleInfo(index, rule, stratum, once, atoms, bnodes, slots, uses)


@dataclass
class Plan:
    """A compiled body: ``fn`` and the generated ``source``."""

    fn: Callable[..., Any]
    source: str
    order: list[int]
    row_vars: tuple[Variable, ...] = ()
    cost: float = 0.0
    """Estimated work of one call (index statistics at compile time): the fan-out of the
    joins, plus the size of each object index a lookup would have to build first.
    Maintenance tries the cheapest justification of a fact first."""


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ind = 1
        self.n = 0

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    def open(self, line: str) -> None:
        self.emit(line)
        self.ind += 1

    def tmp(self, prefix: str) -> str:
        self.n += 1
        return f"_{prefix}{self.n}"


class PlanCompiler:
    """Compiles rule bodies against one dictionary and one full store (for statistics).

    :param dic: the term dictionary (constants are interned at compile time).
    :param full: the full store whose predicate statistics guide join order.
    :param mint: ``mint(rule_index, key, n) -> tuple of n blank-node ids`` for head
        blank nodes (memoised per solution by the caller).
    :param ctx: the expression context (``NOW()`` fixed per reasoner).
    :param generalized: heads may build generalized RDF triples (a literal or triple
        term as subject, a blank node or literal as predicate; RDF 1.1 Concepts §7),
        kept in the evaluation graph (see :attr:`reckon.datalog.model.RuleSet.generalized`);
        otherwise a head instance that is not an RDF triple is not produced.
    :param hidden: ids of helper-vocabulary IRIs (:data:`reckon.datalog.model.INTERNAL`),
        kept current by the caller: a head template whose predicate is a variable never
        produces a fact with one of these as predicate (see
        :func:`reckon.datalog.stratify.matches`).
    :param program_cache: a :class:`~reckon.datalog._cache.ProgramCache`: the generated
        plans are compiled through it (once per source text, shared by processes).
    :param guard: the runaway guard (:class:`~reckon.datalog._guard.Guard`): the join
        loops that produce facts stop through ``guard.hit`` once the round collected more
        than ``guard.cap`` new facts, and head triple terms are built through
        ``guard.triple_term`` (nesting depth); ``None``: no checks.
    """

    def __init__(
        self,
        dic: TermDictionary,
        full: FactStore,
        mint: Callable[[int, tuple[int, ...], int], tuple[int, ...]],
        ctx: _expr.EvalContext,
        guard: Any = None,
        generalized: bool = False,
        hidden: set[int] | None = None,
        program_cache: Any = None,
    ) -> None:
        self.program_cache = program_cache
        self.generalized = generalized
        self.hidden = hidden if hidden is not None else set()
        self.dic = dic
        self.full = full
        self.mint = mint
        self.ctx = ctx
        self.guard = guard
        self.cache: dict[tuple[int, int | None, str, int | None], Plan | None] = {}
        self._estimates: dict[tuple[int, str, int], float] = {}
        self.memo: dict[str, Any] = {}
        """Derived data kept as long as these plans (one materialization): incremental
        maintenance keeps its ordered rederivation checks here across calls."""

    # -- statistics -------------------------------------------------------------

    def _cost(self, tp: TriplePattern, bound: set[Variable]) -> float:
        full = self.full

        def known(t: object) -> bool:
            if isinstance(t, Variable):
                return t in bound
            if isinstance(t, TripleTermPattern):
                return t.variables() <= bound if hasattr(t, "variables") else pattern_variables(t) <= bound
            return True

        sk, ok = known(tp.s), known(tp.o)
        p = tp.p
        if isinstance(p, Variable) and p not in bound:
            n = float(len(full.facts)) + 1.0
            ds = do = max(1.0, n / 10.0)
        else:
            pid = self.dic.lookup(p) if not isinstance(p, Variable) else None
            if pid is None and not isinstance(p, Variable):
                return 0.0  # constant never seen: no match
            if pid is None:  # bound predicate variable: average predicate
                np_ = max(1, len(full.count))
                n = len(full.facts) / np_
                ds = do = max(1.0, n / 10.0)
            else:
                n = float(full.count.get(pid, 0))
                ds = float(max(1, index_width(full.spo, pid)))  # a restored entry is not built for this
                do = float(max(1, index_width(full.pos, pid))) if pid in full.pos else ds
        if sk and ok:
            return 0.1
        if sk:
            return n / ds
        if ok:
            return n / do
        return n + 0.5

    # -- compilation ------------------------------------------------------------

    def plan(self, info: RuleInfo, delta: int | None, mode: str, head: int | None = None) -> Plan | None:
        """The plan of ``info.rule`` with body atom ``delta`` over the delta store.

        ``head`` (modes ``exists`` / ``rows``) is the index of the head template bound
        to the fact given at call time. Returns ``None`` when the head template cannot be
        matched by a fact (it has a blank node: minted, not rederivable).
        """
        key = (info.index, delta, mode, head)
        if key in self.cache:
            return self.cache[key]
        plan = self._compile(info, delta, mode, head)
        self.cache[key] = plan
        return plan

    def estimate(self, info: RuleInfo, mode: str, head: int) -> float:
        """:attr:`Plan.cost` of the check plan (``mode`` ``exists`` / ``safe``, head
        template ``head`` bound) without generating it (``inf`` when the template has a
        blank node): maintenance orders its checks by it and compiles only those it runs."""
        key = (info.index, mode, head)
        got = self._estimates.get(key)
        if got is None:
            ckey = (info.index, None, mode, head)
            if ckey in self.cache:
                compiled = self.cache[ckey]
                got = float("inf") if compiled is None else compiled.cost
            else:
                tpl = info.rule.head[head]
                if any(isinstance(t, BlankNode) for t in _flat(tpl)):
                    got = float("inf")
                else:
                    prebound = tpl.variables()
                    order = order_elements(info.rule.body, prebound, self._cost, None, None)
                    got = self._plan_cost(info.rule, order, prebound)
            self._estimates[key] = got
        return got

    def _const(self, t: object) -> int:
        return self.dic.intern(t)

    def _compile(self, info: RuleInfo, delta: int | None, mode: str, head: int | None) -> Plan | None:
        rule = info.rule
        slots = info.slots
        ns: dict[str, Any] = {
            "T": self.dic.terms,
            "K": self.dic.kinds,
            "TID": self.dic.triple_ids,
            "PARTS": self.dic.parts,
            "TT": self.dic.triple_term if self.guard is None else self.guard.triple_term,
            "G": self.guard,
            "HIDDEN": self.hidden,
            "INTERN": self.dic.intern,
            "LOOKUP": self.dic.lookup,
            "EBV": _expr.ebv,
            "ExprError": _expr.ExprError,
            "_E": _E,
            "_ED": _ED,
            "CTX": self.ctx,
            "AGG": _aggregate,
            "ORDER_INDEX": _OrderIndex.build,
            "OBJECTS": _objects,
            "SCAN": _subjects_with,
        }
        w = _Writer()
        self._subj: set[Variable] = set()  # variables bound from a subject / predicate position
        self._iri: set[Variable] = set()  # variables bound from a predicate position
        vn = {v: f"v{i}" for v, i in slots.items()}
        bound: set[Variable] = set()
        check_mode = mode in ("exists", "rows", "safe")
        stores = {"F"}
        body_src = "B" if rule.data else "F"
        if check_mode:
            assert head is not None
            tpl = rule.head[head]
            if any(isinstance(t, BlankNode) for t in _flat(tpl)):
                return None
            header = (
                "def _plan(F, B, HS, HP, HO, UNSAFE, RANK, RF):" if mode == "safe" else "def _plan(F, B, HS, HP, HO):"
            )
            for t, val in ((tpl.s, "HS"), (tpl.p, "HP"), (tpl.o, "HO")):
                self._bind(w, t, val, bound, vn)
        else:
            header = "def _plan(F, D, B, NEW):"
        prebound = set(bound)
        # maintenance deltas ("old", "new1") are tiny: start from them
        order = order_elements(rule.body, prebound, self._cost, delta, 0.0 if mode in ("old", "new1") else None)
        fcount = [0]

        def fresh_fn(obj: Any) -> str:
            fcount[0] += 1
            name = f"_fx{fcount[0]}"
            ns[name] = obj
            return name

        # hoisted per-atom indexes (predicate constant)
        hoist: list[str] = []

        def atom_src(k: int) -> str:
            if k == delta:
                return "D"
            return body_src

        def gen_atom(
            tp: TriplePattern, src: str, dead: frozenset[Variable] = frozenset(), ready: Callable[[], None] | None = None,
        ) -> None:
            stores.add(src)
            self._atom(w, tp, src, bound, vn, hoist, dead, ready)

        # Variables an atom binds that nothing after it reads (no later element, not the
        # head) are projected away: the atom is tested for existence instead of iterated
        # over them (`?x ?a ?y` in rdfs4a reads ?x only: one step per subject, not per
        # fact). Only where the number of solutions is unobservable: head instances
        # collected in a set, or one solution found. Not with head blank nodes (minted
        # per solution of every variable), BNODE() (per solution), nor in modes that
        # read every binding (``rows``: explanations, ``safe``: the supports).
        project = mode in ("new", "new1", "old", "all", "exists") and not info.head_bnodes and not info.uses_bnode_fn
        live_after: dict[int, frozenset[Variable]] = {}
        if project:
            later: set[Variable] = set()
            if not check_mode:
                for tpl in rule.head:
                    later |= tpl.variables()
            for k in reversed(order):
                live_after[k] = frozenset(later)
                later |= _elem_vars(rule.body[k])

        def dead_vars(k: int, tp: TriplePattern) -> frozenset[Variable]:
            if k not in live_after:
                return frozenset()
            seen: list[object] = [tp.s, tp.p, tp.o]
            return frozenset(
                t for t in (tp.s, tp.o)
                if isinstance(t, Variable) and t not in bound and t not in live_after[k] and seen.count(t) == 1
            )

        def gen_filter(e: Filter, local_bound: set[Variable]) -> None:
            fast = self._fast(e.expr, local_bound, vn)
            if fast is not None:
                w.open(f"if {fast}:")
                return
            vars_ = sorted(expr_variables(e.expr) & local_bound, key=lambda v: slots[v])
            fn = fresh_fn(_expr.compile_expr(e.expr, {v: i for i, v in enumerate(vars_)}))
            row = "(" + "".join(f"T[{vn[v]}], " for v in vars_) + ")"
            ok = w.tmp("ok")
            w.open("try:")
            w.emit(f"{ok} = EBV({fn}({row}, CTX))")
            w.ind -= 1
            w.open("except ExprError:")
            w.emit(f"{ok} = False")
            w.ind -= 1
            w.open(f"if {ok}:")

        def gen_inner(elements: tuple[object, ...], src: str, corr: set[Variable], final: list[str]) -> None:
            """Loops of a negation / aggregate body; ``final`` lines at the innermost."""
            saved = set(bound)
            bound.clear()
            bound.update(corr)
            inner_order = order_elements(elements, set(corr), self._cost)
            for k in inner_order:
                e = elements[k]
                if isinstance(e, TriplePattern):
                    gen_atom(e, src)
                else:
                    gen_filter(e, bound)  # type: ignore[arg-type]
            for line in final:
                w.emit(line)
            bound.clear()
            bound.update(saved)

        def agg_final(e: Aggregate, corr: list[Variable] | set[Variable]) -> list[str]:
            """Innermost lines of an aggregate body: append the value of ``e.expr``."""
            if e.expr is None:
                return ["_vals.append(1)"]
            if isinstance(e.expr, Variable) and (
                e.expr in corr or any(isinstance(x, TriplePattern) and e.expr in x.variables() for x in e.elements)
            ):
                return [f"_vals.append(T[{vn[e.expr]}])"]
            # inner bound set is known only inside gen_inner: compile on all inner vars
            inner_vars = sorted(expr_variables(e.expr), key=lambda v: slots[v])
            fn = fresh_fn(_expr.compile_expr(e.expr, {v: i for i, v in enumerate(inner_vars)}))
            row = "(" + "".join(f"T[{vn[v]}], " for v in inner_vars) + ")"
            return [
                "try:",
                f"    _vals.append({fn}({row}, CTX))",
                "except ExprError:",
                "    _vals.append(None)",
            ]

        def gen_memo_aggregate(e: Aggregate, src: str, corr: list[Variable], memo: _Uncorrelated) -> None:
            """An aggregate whose triple patterns read no outer variable: the inner join
            (with the filters that read no outer variable) runs once per plan call and is
            cached; each outer solution only evaluates the correlated filters over the
            cached rows, or, for one order comparison under COUNT, bisects a sorted index
            (:class:`_OrderIndex`)."""
            needed = sorted(memo.needed, key=lambda v: slots[v])
            name = w.tmp("agg")
            params = ", ".join(vn[v] for v in corr)
            outer_ind = w.ind
            w.ind = 1
            start = len(w.lines)
            cell = f"{name}_m"
            w.emit(f"{cell} = []")
            # the uncorrelated join, once per plan call
            w.open(f"def {name}_join():")
            w.emit("_rows = []")
            tup = "(" + "".join(f"{vn[v]}, " for v in needed) + ")"
            gen_inner(memo.local, src, set(), [f"_rows.append({tup})"])
            w.ind = 2
            w.emit("return _rows")
            w.ind = 1
            w.open(f"def {name}({params}):")
            w.open(f"if not {cell}:")
            w.emit(f"{cell}.append({name}_join())")
            w.ind -= 1
            fast = memo.order if AGGREGATE_STRATEGY == "index" else None
            if fast is not None:
                # plans that start from a bound head or a tiny delta usually call the
                # aggregate once: they build the index only on a second call and scan
                # the cached rows before that
                inner_e, op, outer_e = fast
                fi = fresh_fn(_expr.compile_expr(cast(Expr, inner_e), {v: i for i, v in enumerate(needed)}))
                key_col = needed.index(e.expr) if isinstance(e.expr, Variable) else None
                build = f"{cell}.append(ORDER_INDEX({cell}[0], {fi}, {op!r}, {key_col!r}, {e.distinct!r}, T, CTX))"
                if mode in ("exists", "rows", "safe", "old", "new1"):
                    w.open(f"elif len({cell}) == 1:")
                else:
                    w.ind += 1
                w.emit(build)
                w.ind -= 1
                outer_vars = sorted(expr_variables(outer_e), key=lambda v: slots[v])
                fo = fresh_fn(_expr.compile_expr(cast(Expr, outer_e), {v: i for i, v in enumerate(outer_vars)}))
                orow = "(" + "".join(f"T[{vn[v]}], " for v in outer_vars) + ")"
                w.emit(f"_idx = {cell}[1] if len({cell}) == 2 else None")
                w.open("if _idx is not None:")
                w.emit(f"_n = _idx.count({fo}, {orow}, CTX)")
                w.open("if _n is not None:")
                w.emit("return _n")
                w.ind -= 2
            w.emit("_vals = []")
            saved = set(bound)
            bound.clear()
            bound.update(corr)
            bound.update(needed)
            w.open(f"for {tup} in {cell}[0]:" if needed else f"for _r in {cell}[0]:")
            for f in memo.correlated:
                gen_filter(f, bound)
            for line in agg_final(e, set(corr)):
                w.emit(line)
            bound.clear()
            bound.update(saved)
            w.ind = 2
            w.emit(f"return AGG({e.function!r}, {e.distinct!r}, {e.expr is None!r}, _vals, CTX)")
            agg_lines = w.lines[start:]
            del w.lines[start:]
            hoist.extend(agg_lines)
            w.ind = outer_ind
            x = w.tmp("x")
            w.emit(f"{x} = {name}({params})")
            w.open(f"if {x} is not None:")
            self._bind_value(w, e.var, x, bound, vn)

        done: set[int] = set()

        def tests_after(i: int) -> list[int]:
            """The pure tests that follow the atom ``order[i]`` (term-kind / sameTerm
            filters, atoms all of whose terms are known by then): emitted by the atom
            as soon as their variables are bound (between its loops), not innermost.
            Moved only within the run of tests right after the atom, so each sees the
            same bindings as in place."""
            if info.uses_bnode_fn:
                return []
            after = bound | cast(TriplePattern, rule.body[order[i]]).variables()
            out = []
            for k in order[i + 1:]:
                e = rule.body[k]
                if isinstance(e, Filter) and _elem_vars(e) <= after and self._fast(e.expr, after, vn) is not None:
                    out.append(k)
                elif isinstance(e, TriplePattern) and e.variables() <= after and not any(
                    isinstance(t, TripleTermPattern) for t in (e.s, e.p, e.o)
                ):
                    out.append(k)
                else:
                    break
            return out

        for i, k in enumerate(order):
            e = rule.body[k]
            if k in done:
                continue
            if isinstance(e, TriplePattern):
                pending = tests_after(i)

                def ready(pending: list[int] = pending) -> None:
                    for j in list(pending):
                        t = rule.body[j]
                        if _elem_vars(t) <= bound:
                            pending.remove(j)
                            done.add(j)
                            if isinstance(t, Filter):
                                gen_filter(t, bound)
                            else:
                                gen_atom(cast(TriplePattern, t), atom_src(j))

                gen_atom(e, atom_src(k), dead_vars(k, e), ready if pending else None)
            elif isinstance(e, Filter):
                if info.uses_bnode_fn:
                    w.emit("CTX.new_solution()")
                gen_filter(e, bound)
            elif isinstance(e, Assignment):
                vars_ = sorted(expr_variables(e.expr) & bound, key=lambda v: slots[v])
                fn = fresh_fn(_expr.compile_expr(e.expr, {v: i for i, v in enumerate(vars_)}))
                row = "(" + "".join(f"T[{vn[v]}], " for v in vars_) + ")"
                x = w.tmp("x")
                if info.uses_bnode_fn:
                    w.emit("CTX.new_solution()")
                w.open("try:")
                w.emit(f"{x} = {fn}({row}, CTX)")
                w.ind -= 1
                w.open("except ExprError:")
                w.emit(f"{x} = None")
                w.ind -= 1
                w.open(f"if {x} is not None:")
                self._bind_value(w, e.var, x, bound, vn)
            elif isinstance(e, Negation):
                src = "B" if (e.data or rule.data) else "F"
                stores.add(src)
                corr = sorted(_elem_vars(e) & bound, key=lambda v: slots[v])
                name = w.tmp("neg")
                params = ", ".join(vn[v] for v in corr)
                outer_ind = w.ind
                w.ind = 1
                start = len(w.lines)
                w.open(f"def {name}({params}):")
                gen_inner(e.elements, src, set(corr), ["return True"])
                w.ind = 2
                w.emit("return False")
                neg_lines = w.lines[start:]
                del w.lines[start:]
                hoist.extend(neg_lines)
                w.ind = outer_ind
                w.open(f"if not {name}({params}):")
            elif isinstance(e, Aggregate):
                src = "B" if rule.data else "F"
                stores.add(src)
                corr = sorted((_elem_vars(e) - {e.var}) & bound, key=lambda v: slots[v])
                memo = None if AGGREGATE_STRATEGY == "nested" else _split_uncorrelated(e, set(corr))
                if memo is not None:
                    gen_memo_aggregate(e, src, corr, memo)
                    continue
                name = w.tmp("agg")
                params = ", ".join(vn[v] for v in corr)
                outer_ind = w.ind
                w.ind = 1
                start = len(w.lines)
                w.open(f"def {name}({params}):")
                w.emit("_vals = []")
                gen_inner(e.elements, src, set(corr), agg_final(e, corr))
                w.ind = 2
                w.emit(f"return AGG({e.function!r}, {e.distinct!r}, {e.expr is None!r}, _vals, CTX)")
                agg_lines = w.lines[start:]
                del w.lines[start:]
                hoist.extend(agg_lines)
                w.ind = outer_ind
                x = w.tmp("x")
                w.emit(f"{x} = {name}({params})")
                w.open(f"if {x} is not None:")
                self._bind_value(w, e.var, x, bound, vn)

        # innermost: head
        if mode == "exists":
            w.emit("return True")
        elif mode == "safe":
            # a derivation whose supports are asserted, or of rank below RF and not unsafe
            if not rule.data:  # a WHERE DATA body matched the base graph: asserted supports
                stores.add("B")
                for k in info.atoms:
                    tp = cast(TriplePattern, rule.body[k])
                    parts = [self._known(w, t, bound, vn) for t in (tp.s, tp.p, tp.o)]
                    g = w.tmp("g")
                    w.emit(f"{g} = ({parts[0]}, {parts[1]}, {parts[2]})")
                    w.open(f"if {g} not in UNSAFE and ({g} in BFACTS or RANK.get({g}, 0) < RF):")
            w.emit("return True")
        elif mode == "rows":
            outs = sorted(bound, key=lambda v: slots[v])
            ns["ROW_VARS"] = tuple(outs)
            w.emit("yield (" + "".join(f"{vn[v]}, " for v in outs) + ")")
        else:
            self._head(w, info, bound, vn, mode, ns)

        prologue = []
        for s in sorted(stores):
            prologue.append(f"    {s}_spo = {s}.spo")
            prologue.append(f"    {s}_pos = {s}.pos")
        prologue.append("    FACTS = F.facts")
        if mode == "safe" and "B" in stores:
            prologue.append("    BFACTS = B.facts")
        if not check_mode:
            prologue.append("    NEWADD = NEW.add")
        body_lines = w.lines
        if not check_mode and self.guard is not None:
            body_lines = _cap_checks(body_lines, rule.name)
        tail = ["    return False"] if mode in ("exists", "safe") else []
        src = "\n".join([header, *prologue, *hoist, *body_lines, *tail]) + "\n"
        if mode == "rows" and "yield" not in src:
            src += "    yield from ()\n"
        filename = f"<plan {rule.name} d={delta} {mode} h={head}>"
        try:
            code = self.program_cache.compile(src, filename) if self.program_cache is not None else compile(src, filename, "exec")
            exec(code, ns)
        except SyntaxError as exc:  # pragma: no cover - a bug in the generator
            raise RuntimeError(f"plan generation failed for {rule.name}:\n{src}") from exc
        return Plan(ns["_plan"], src, order, ns.get("ROW_VARS", ()), self._plan_cost(rule, order, prebound))

    def _plan_cost(self, rule: Rule, order: list[int], prebound: set[Variable]) -> float:
        full = self.full
        bound = set(prebound)
        fan, total = 1.0, 0.0
        for k in order:
            e = rule.body[k]
            if not isinstance(e, TriplePattern):
                continue
            c = self._cost(e, bound)
            total += fan * max(c, 1.0)
            s_known = not isinstance(e.s, Variable) or e.s in bound
            o_known = not isinstance(e.o, Variable) or e.o in bound
            if o_known and not s_known:
                if isinstance(e.p, Variable) and e.p not in bound and not full.pos_all:
                    # every predicate is looked up by object: each one's index may be built
                    total += float(len(full.facts))
                elif isinstance(e.p, Variable):
                    total += float(len(full.facts)) / max(1, len(full.count))
                else:
                    pid = self.dic.lookup(e.p)
                    if pid is not None and pid not in full.pos and not full.pos_all:
                        total += float(full.count.get(pid, 0))
            fan *= max(c, 1.0)
            bound |= e.variables()
        return total

    # -- pieces -----------------------------------------------------------------

    _KIND_TESTS = {"ISIRI": "== 0", "ISURI": "== 0", "ISBLANK": "== 1", "ISLITERAL": "== 2", "ISTRIPLE": "== 3"}

    def _fast(self, e: object, bound: set[Variable], vn: dict[Variable, str]) -> str | None:
        """A Python condition for filters that never raise (term-kind tests, sameTerm,
        and their ``&&`` / ``||`` / ``!``) evaluated on ids; ``None`` otherwise."""
        if not isinstance(e, Call) or not isinstance(e.name, str):
            return None
        name = e.name.upper()
        if name in self._KIND_TESTS and len(e.args) == 1:
            a = e.args[0]
            if isinstance(a, Variable) and a in bound:
                return f"K[{vn[a]}] {self._KIND_TESTS[name]}"
            return None
        if name == "SAMETERM" and len(e.args) == 2:
            parts = []
            for a in e.args:
                if isinstance(a, Variable):
                    if a not in bound:
                        return None
                    parts.append(vn[a])
                elif isinstance(a, (Call, TripleTermPattern)):
                    return None
                else:
                    parts.append(str(self._const(a)))
            return f"({parts[0]} == {parts[1]})"
        if name in ("||", "&&") and e.args:
            subs = [self._fast(a, bound, vn) for a in e.args]
            if any(x is None for x in subs):
                return None
            return "(" + (" or " if name == "||" else " and ").join(subs) + ")"  # type: ignore[arg-type]
        if name == "!" and len(e.args) == 1:
            sub = self._fast(e.args[0], bound, vn)
            return None if sub is None else f"(not {sub})"
        return None

    def _bind(self, w: _Writer, t: object, val: str, bound: set[Variable], vn: dict[Variable, str]) -> None:
        """Match pattern term ``t`` against the id expression ``val`` (opens ifs)."""
        if isinstance(t, Variable):
            if t in bound:
                w.open(f"if {val} == {vn[t]}:")
            else:
                w.emit(f"{vn[t]} = {val}")
                bound.add(t)
        elif isinstance(t, TripleTermPattern):
            p = w.tmp("p")
            w.emit(f"{p} = PARTS.get({val})")
            w.open(f"if {p} is not None:")
            self._bind(w, t.s, f"{p}[0]", bound, vn)
            self._bind(w, t.p, f"{p}[1]", bound, vn)
            self._bind(w, t.o, f"{p}[2]", bound, vn)
        else:
            w.open(f"if {val} == {self._const(t)}:")

    def _bind_value(self, w: _Writer, var: Variable, term_expr: str, bound: set[Variable], vn: dict[Variable, str]) -> None:
        """Bind ``var`` to the id of a computed term, or compare if already bound."""
        if var in bound:
            w.open(f"if LOOKUP({term_expr}) == {vn[var]}:")
        else:
            w.emit(f"{vn[var]} = INTERN({term_expr})")
            bound.add(var)

    def _known(self, w: _Writer, t: object, bound: set[Variable], vn: dict[Variable, str]) -> str | None:
        """Id expression of a position whose value is known, else ``None`` (free)."""
        if isinstance(t, Variable):
            return vn[t] if t in bound else None
        if isinstance(t, TripleTermPattern):
            if not (pattern_variables(t) <= bound):
                return None
            parts = [self._known(w, x, bound, vn) for x in (t.s, t.p, t.o)]
            tv = w.tmp("t")
            w.emit(f"{tv} = TID.get(({parts[0]}, {parts[1]}, {parts[2]}))")
            w.open(f"if {tv} is not None:")
            return tv
        return str(self._const(t))

    def _atom(
        self, w: _Writer, tp: TriplePattern, src: str, bound: set[Variable], vn: dict[Variable, str], hoist: list[str],
        dead: frozenset[Variable] = frozenset(), ready: Callable[[], None] | None = None,
    ) -> None:
        """Open the loops (or tests) matching ``tp`` over store ``src``; ``dead``: free
        variables of its subject / object that nothing reads afterwards (not bound:
        the atom is only tested for a match on them); ``ready()`` is called each time a
        loop level has bound more variables (``bound`` updated), so that tests on them
        are emitted as far out as they can go."""
        s_val = self._known(w, tp.s, bound, vn)
        o_val = self._known(w, tp.o, bound, vn)
        s_dead = isinstance(tp.s, Variable) and tp.s in dead
        o_dead = isinstance(tp.o, Variable) and tp.o in dead
        post: list[tuple[object, str]] = []
        claimed: set[Variable] = set()

        def target(t: object, pos: str = "") -> str:
            if isinstance(t, Variable) and t not in bound and t not in claimed:
                claimed.add(t)
                if pos == "s":
                    self._subj.add(t)
                elif pos == "p":
                    self._subj.add(t)
                    self._iri.add(t)
                return vn[t]
            tmp = w.tmp("x")
            post.append((t, tmp))
            return tmp

        def level() -> None:
            if ready is not None and claimed - bound:
                bound.update(claimed)
                ready()

        p = tp.p
        by_object = s_val is None and o_val is not None
        # the outermost atom over a semi-naive delta, object bound: scan the delta's
        # subjects instead of indexing the whole delta by object (an index costs as
        # much as the scan, and the delta is used once)
        scan = by_object and src == "D" and not bound and not isinstance(p, (Variable, TripleTermPattern))
        if not isinstance(p, (Variable, TripleTermPattern)):
            pid = self._const(p)
            pexpr = str(pid)
            sp, ps = w.tmp("SP"), w.tmp("PS")
            hoist.append(f"    {sp} = {src}_spo.get({pid}, _ED)")
            if scan:
                hoist.append(f"    {ps} = {src}.shared_pos({pid})")
            elif by_object:
                hoist.append(f"    {src}.need_pos({pid})")
                hoist.append(f"    {ps} = {src}_pos.get({pid}, _ED)")
        else:
            p_val = self._known(w, p, bound, vn)
            sp, ps = w.tmp("sp"), w.tmp("ps")

            def object_index(pred: str) -> None:
                # built on first use, per predicate: a variable-predicate pattern that
                # is only reached for rare bindings (eq-rep-o after a non-reflexive
                # owl:sameAs) never indexes every predicate by object
                w.emit(f"{ps} = {src}_pos.get({pred})")
                w.open(f"if {ps} is None:")
                w.emit(f"{src}.need_pos({pred})")
                w.emit(f"{ps} = {src}_pos.get({pred}, _ED)")
                w.ind -= 1

            if p_val is not None:
                pexpr = p_val
                w.emit(f"{sp} = {src}_spo.get({p_val})")
                w.open(f"if {sp} is not None:")
                if s_val is None and o_val is not None:
                    object_index(p_val)
            else:
                pt = target(p, "p")
                pexpr = pt
                w.open(f"for {pt}, {sp} in {src}_spo.items():")
                # helper vocabulary is invisible to a variable predicate (model.INTERNAL)
                w.emit(f"if {pt} in HIDDEN: continue")
                if s_val is None and o_val is not None:
                    object_index(pt)
                level()
        if s_val is not None and o_val is not None:
            w.open(f"if {o_val} in {sp}.get({s_val}, _E):")
        elif s_val is not None and o_dead:
            w.open(f"if {sp}.get({s_val}):")
        elif s_val is not None:
            ot = target(tp.o)
            w.open(f"for {ot} in {sp}.get({s_val}, _E):")
        elif o_val is not None and s_dead and not scan:
            w.open(f"if {ps}.get({o_val}):")
        elif o_val is not None and scan:
            # the delta's object index when another plan of the round asked for it
            # too (FactStore.shared_pos), else a scan of its subjects
            st = target(tp.s, "s")
            w.open(f"for {st} in ({ps}.get({o_val}, _E) if {ps} is not None else SCAN({sp}, {o_val})):")
        elif o_val is not None:
            st = target(tp.s, "s")
            w.open(f"for {st} in {ps}.get({o_val}, _E):")
        elif s_dead and o_dead:
            w.open(f"if {sp}:")
        elif o_dead:
            st = target(tp.s, "s")
            w.open(f"for {st} in {sp}:")
            level()
        elif s_dead:
            # the distinct objects: the object index's keys when it is kept, else every
            # fact's object (repeats cost only time)
            ot = target(tp.o)
            w.open(f"for {ot} in OBJECTS({sp}, {src}_pos.get({pexpr})):")
        else:
            st = target(tp.s, "s")
            os_ = w.tmp("os")
            w.open(f"for {st}, {os_} in {sp}.items():")
            level()
            ot = target(tp.o)
            w.open(f"for {ot} in {os_}:")
        bound |= claimed
        for t, tmp in post:
            self._bind(w, t, tmp, bound, vn)
        if ready is not None:
            ready()

    def _head_term(self, w: _Writer, t: object, vn: dict[Variable, str], bn: dict[BlankNode, int]) -> str | None:
        if isinstance(t, Variable):
            return vn[t]
        if isinstance(t, BlankNode) and t in bn:
            return f"_bn[{bn[t]}]"
        if isinstance(t, TripleTermPattern) or (isinstance(t, Triple) and _has_bnode_in(t, bn)):
            if isinstance(t, Triple):
                t = TripleTermPattern(t.subject, t.predicate, t.object)
            parts = [self._head_term(w, x, vn, bn) for x in (t.s, t.p, t.o)]
            if any(x is None for x in parts):
                return None
            tv = w.tmp("h")
            w.emit(f"{tv} = TT({parts[0]}, {parts[1]}, {parts[2]})")
            w.open(f"if {tv} is not None:")
            return tv
        return str(self._const(t))

    def _head(self, w: _Writer, info: RuleInfo, bound: set[Variable], vn: dict[Variable, str], mode: str, ns: dict[str, Any]) -> None:
        bn = {b: i for i, b in enumerate(info.head_bnodes)}
        if bn:
            key_vars = sorted(bound, key=lambda v: info.slots[v])
            ns["MINT"] = self.mint
            key = "(" + "".join(f"{vn[v]}, " for v in key_vars) + ")"
            w.emit(f"_bn = MINT({info.index}, {key}, {len(bn)})")
        kinds = self.dic.kinds
        for tpl in info.rule.head:
            base_ind = w.ind
            s = self._head_term(w, tpl.s, vn, bn)
            p = self._head_term(w, tpl.p, vn, bn)
            o = self._head_term(w, tpl.o, vn, bn)
            if s is None or p is None or o is None:
                w.ind = base_ind
                continue
            conds = []
            if self.generalized:
                pass
            elif s.isdigit():
                if kinds[int(s)] > BNODE:
                    w.ind = base_ind
                    continue
            elif not (isinstance(tpl.s, Variable) and tpl.s in self._subj) and not s.startswith("_bn"):
                conds.append(f"K[{s}] < 2")
            if self.generalized:
                pass
            elif p.isdigit():
                if kinds[int(p)] != IRI:
                    w.ind = base_ind
                    continue
            elif not (isinstance(tpl.p, Variable) and tpl.p in self._iri):
                conds.append(f"K[{p}] == 0")
            if not p.isdigit():
                conds.append(f"{p} not in HIDDEN")
            if conds:
                w.open(f"if {' and '.join(conds)}:")
            w.emit(f"_f = ({s}, {p}, {o})")
            if mode in ("new", "new1"):
                w.open("if _f not in FACTS:")
                w.emit("NEWADD(_f)")
            elif mode == "old":
                w.open("if _f in FACTS:")
                w.emit("NEWADD(_f)")
            else:
                w.emit("NEWADD(_f)")
            w.ind = base_ind


def _objects(sp: dict[int, set[int]], ps: dict[int, set[int]] | None) -> Iterable[int]:
    """The objects of one predicate's facts: ``ps``'s keys (its object index, each
    object once) when it is kept, else each fact's object."""
    return ps if ps is not None else chain.from_iterable(sp.values())


def _subjects_with(sp: dict[int, set[int]], o: int) -> list[int]:
    """The subjects of one predicate's facts whose object is ``o`` (a scan)."""
    return [s for s, os_ in sp.items() if o in os_]


def _cap_checks(lines: list[str], name: str) -> list[str]:
    """Insert the round's fact-cap check (``Guard.cap``) as the first statement of every
    ``for`` loop that has another loop inside it: the innermost loop, where the work is,
    stays untouched, and a runaway product is still stopped after at most one pass of
    its innermost loop."""
    out = list(lines)
    indents = [len(x) - len(x.lstrip(" ")) for x in lines]
    check = f"if len(NEW) > G.cap: G.hit({name!r}, len(NEW))"
    for i in range(len(lines) - 1, -1, -1):
        if not lines[i].lstrip().startswith("for "):
            continue
        ind = indents[i]
        j = i + 1
        nested = False
        while j < len(lines) and indents[j] > ind:
            if lines[j].lstrip().startswith("for "):
                nested = True
                break
            j += 1
        if nested:
            out.insert(i + 1, " " * (ind + 4) + check)
    return out


def _flat(tp: TriplePattern) -> Iterable[object]:
    for t in (tp.s, tp.p, tp.o):
        if isinstance(t, TripleTermPattern):
            yield from _flat(TriplePattern(t.s, t.p, t.o))
        elif isinstance(t, Triple):
            yield from _flat(TriplePattern(t.subject, t.predicate, t.object))
        else:
            yield t


def _has_bnode_in(t: Triple, bn: dict[BlankNode, int]) -> bool:
    return any(isinstance(x, BlankNode) and x in bn for x in _flat(TriplePattern(t.subject, t.predicate, t.object)))


# -- aggregates (Reckon extension, see model.Aggregate) ---------------------------

AGGREGATE_STRATEGY = "index"
"""How :class:`PlanCompiler` evaluates an ``AGGREGATE`` (read when a plan is compiled).

* ``"nested"``: the reference: the inner body is evaluated once per outer solution,
  with the outer solution's bindings (the model's definition, O(outer x inner));
* ``"memo"``: when no inner triple pattern reads an outer variable (the correlation
  is only through ``FILTER``s), the inner join and the filters that read no outer
  variable run once per plan call; each outer solution evaluates the correlated
  filters over the cached rows;
* ``"index"`` (default): ``"memo"``, and when moreover the only correlated filter is
  one order comparison (``<``, ``<=``, ``>``, ``>=``) of an inner-only expression with
  an outer-only expression under ``COUNT``, the compared inner values are sorted once
  and each outer solution is answered by bisection (:class:`_OrderIndex`), O((outer +
  inner) log inner); outer values it cannot order exactly fall back to ``"memo"``.

All three give the same results (``tests/datalog/test_aggregate_strategies.py``).
"""

_ORDER_OPS = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NONDETERMINISTIC = frozenset({"RAND", "BNODE", "UUID", "STRUUID"})


@dataclass
class _Uncorrelated:
    """An aggregate body split for memoisation (:func:`_split_uncorrelated`).

    :ivar local: the triple patterns and the filters reading no outer variable, in
        source order (the join evaluated once).
    :ivar correlated: the filters reading an outer variable, in source order.
    :ivar needed: inner variables the correlated filters and the aggregated expression
        read (the columns of the cached rows).
    :ivar order: ``(inner expression, operator, outer expression)`` with the inner
        side on the left when the only correlated filter is one order comparison of
        an inner-only with an outer-only expression under ``COUNT``; else ``None``.
    """

    local: tuple[object, ...]
    correlated: tuple[Filter, ...]
    needed: set[Variable]
    order: tuple[object, str, object] | None


def _calls(e: object) -> Iterable[str]:
    if isinstance(e, Call):
        if isinstance(e.name, str):
            yield e.name.upper()
        for a in e.args:
            yield from _calls(a)


def _split_uncorrelated(e: Aggregate, corr: set[Variable]) -> _Uncorrelated | None:
    """The memoisable form of aggregate ``e`` whose outer (correlated) variables are
    ``corr``, or ``None`` when an inner triple pattern reads one of them, a filter reads
    a variable no earlier pattern binds (its value depends on evaluation order), or an
    expression is not deterministic (``RAND``, ``BNODE``, ``UUID``, ``STRUUID``)."""
    seen: set[Variable] = set()
    local: list[object] = []
    correlated: list[Filter] = []
    for x in e.elements:
        if isinstance(x, TriplePattern):
            vs = x.variables()
            if vs & corr:
                return None
            seen |= vs
            local.append(x)
        elif isinstance(x, Filter):
            vs = expr_variables(x.expr)
            if not vs <= seen | corr or _NONDETERMINISTIC & set(_calls(x.expr)):
                return None
            (correlated if vs & corr else local).append(x)
        else:
            return None
    needed: set[Variable] = set()
    for f in correlated:
        needed |= expr_variables(f.expr) - corr
    if e.expr is not None:
        vs = expr_variables(e.expr)
        if not vs <= seen | corr or _NONDETERMINISTIC & set(_calls(e.expr)):
            return None
        needed |= vs - corr
    order = None
    if (
        e.function.upper() == "COUNT"
        and len(correlated) == 1
        and (e.expr is None or (isinstance(e.expr, Variable) and e.expr in seen))
    ):
        c = correlated[0].expr
        if isinstance(c, Call) and isinstance(c.name, str) and c.name in _ORDER_OPS and len(c.args) == 2:
            a, b = c.args
            va, vb = expr_variables(a), expr_variables(b)
            if not (va & corr) and vb and vb <= corr:
                order = (a, c.name, b)
            elif not (vb & corr) and va and va <= corr:
                order = (b, _ORDER_OPS[c.name], a)
    return _Uncorrelated(tuple(local), tuple(correlated), needed, order)


def _order_key(t: object) -> tuple[object, object] | None:
    """``(class, key)`` such that two literals of one class compare in SPARQL
    (``expr._value_cmp``, SPARQL 1.1 section 17.3 operator mapping) exactly as their
    keys compare in Python; ``None`` for a term outside the classes handled:

    * ``"exact"``: ``xsd:integer`` (and derived types) and ``xsd:decimal`` (int /
      ``Decimal``, compared exactly, as SPARQL does without promotion);
    * ``"float"`` / ``"double"``: one floating-point type, NaN excluded (unordered);
    * ``"string"``: simple literals / ``xsd:string`` (code point order);
    * ``"boolean"``;
    * ``("temporal", kind)``: one of ``xsd:dateTime`` (and dateTimeStamp), ``xsd:date``,
      ``xsd:time``, keyed by the instant (a missing timezone is taken as Z, as
      ``expr`` does).
    """
    if type(t) is not Literal:
        return None
    k, v = _expr._INFO.get(t) or _expr._info(t)
    if k == _expr.K_STRING:
        return "string", v
    if k == _expr.K_INT or k == _expr.K_DEC:
        return "exact", v
    if k == _expr.K_FLOAT or k == _expr.K_DOUBLE:
        return (None if v != v else ("float" if k == _expr.K_FLOAT else "double", v))
    if k == _expr.K_STRING:
        return "string", v
    if k == _expr.K_BOOL:
        return "boolean", v
    if k == _expr.K_TEMPORAL:
        return ("temporal", v[0]), v[1]
    return None


class _OrderIndex:
    """The sorted inner values of an ``AGGREGATE`` whose only correlated filter is
    ``FILTER(inner op outer)`` under ``COUNT`` (see :data:`AGGREGATE_STRATEGY`).

    Every inner value is computed once; an inner row whose value raises an evaluation
    error, or is not a literal, fails the filter for every outer value and is dropped.
    For ``COUNT(DISTINCT ?x)`` each ``?x`` is keyed by its smallest value (``<``, ``<=``:
    the passing rows are a prefix) or its largest (``>``, ``>=``: a suffix).
    """

    __slots__ = ("cls", "keys", "op")

    def __init__(self, cls: object, keys: list[Any], op: str) -> None:
        self.cls = cls
        self.keys = keys
        self.op = op

    @classmethod
    def build(
        cls, rows: list[tuple[int, ...]], inner: Any, op: str, key_col: int | None, distinct: bool,
        terms: list[Any], ctx: _expr.EvalContext,
    ) -> _OrderIndex | None:
        """The index over ``rows`` (term-id tuples; ``inner(row_of_terms, ctx)`` is the
        compared inner value), or ``None`` when the values are not all of one class of
        :func:`_order_key` (then every outer solution takes the general path)."""
        klass: object = None
        best: dict[int, Any] = {}
        vals: list[Any] = []
        low = op in ("<", "<=")
        per_key = distinct and key_col is not None
        order_key = _order_key
        for row in rows:
            try:
                x = inner(tuple([terms[i] for i in row]), ctx)
            except _expr.ExprError:
                continue
            if type(x) is not Literal:
                continue
            got = order_key(x)
            if got is None:
                return None
            c, k = got
            if c != klass:
                if klass is not None:
                    return None
                klass = c
            if per_key:
                o = row[key_col]  # type: ignore[index]
                old = best.get(o)
                if old is None or (k < old if low else k > old):
                    best[o] = k
            else:
                vals.append(k)
        keys = sorted(best.values() if per_key else vals)
        return cls(klass, keys, op)

    def count(self, outer: Any, row: tuple[Any, ...], ctx: _expr.EvalContext) -> Literal | None:
        """``COUNT`` for the outer solution ``row`` (terms of ``outer``'s variables), or
        ``None`` when its value is not of the index's class (take the general path)."""
        keys = self.keys
        if not keys:
            return _ZERO
        try:
            y = outer(row, ctx)
        except _expr.ExprError:
            return _ZERO  # the filter is an error for every inner row
        if type(y) is not Literal:
            return _ZERO
        got = _order_key(y)
        if got is None or got[0] != self.cls:
            return None
        k = got[1]
        op = self.op
        if op == "<":
            n = bisect_left(keys, k)
        elif op == "<=":
            n = bisect_right(keys, k)
        elif op == ">":
            n = len(keys) - bisect_right(keys, k)
        else:
            n = len(keys) - bisect_left(keys, k)
        return Literal(n)


_ZERO = Literal(0)
_VA, _VB = Variable("a"), Variable("b")
_ADD = _expr.compile_expr(Call("+", (_VA, _VB)), {_VA: 0, _VB: 1})
_LT = _expr.compile_expr(Call("<", (_VA, _VB)), {_VA: 0, _VB: 1})
_GT = _expr.compile_expr(Call(">", (_VA, _VB)), {_VA: 0, _VB: 1})
_DIV = _expr.compile_expr(Call("/", (_VA, _VB)), {_VA: 0, _VB: 1})


def _aggregate(function: str, distinct: bool, star: bool, values: list[Any], ctx: _expr.EvalContext) -> object | None:
    """Value of an aggregate over inner-solution values; ``None`` = error (drop solution).

    COUNT over no solutions is 0, SUM is 0; MIN / MAX / AVG over no solutions is an
    error; an evaluation error inside SUM / MIN / MAX / AVG is an error; COUNT(expr)
    counts the solutions where ``expr`` has a value (SPARQL 1.1 section 18.5.1).
    The accumulating operators are compiled once (module level).
    """
    fn = function.upper()
    if fn == "COUNT":
        if star:
            return Literal(len(values))
        vals = [v for v in values if v is not None]
        return Literal(len(set(vals)) if distinct else len(vals))
    if any(v is None for v in values):
        return None
    if distinct:
        seen: list[Any] = []
        for v in values:
            if v not in seen:
                seen.append(v)
        values = seen
    try:
        if fn == "SUM":
            acc: Any = _ZERO
            for v in values:
                acc = _ADD((acc, v), ctx)
            total: object = acc
            return total
        if not values:
            return None
        if fn in ("MIN", "MAX"):
            op = _LT if fn == "MIN" else _GT
            best: Any = values[0]
            for v in values[1:]:
                if _expr.ebv(op((v, best), ctx)):
                    best = v
            chosen: object = best
            return chosen
        if fn == "AVG":
            acc = _ZERO
            for v in values:
                acc = _ADD((acc, v), ctx)
            return _DIV((acc, Literal(len(values))), ctx)
    except _expr.ExprError:
        return None
    return None


def instantiate(t: object, binding: dict[Variable, int], dic: TermDictionary) -> int | None:
    """Id of a pattern term under ``binding`` (variable -> id); ``None`` if unbound or
    the triple term does not exist."""
    if isinstance(t, Variable):
        return binding.get(t)
    if isinstance(t, TripleTermPattern):
        parts = (instantiate(t.s, binding, dic), instantiate(t.p, binding, dic), instantiate(t.o, binding, dic))
        if None in parts:
            return None
        return dic.triple_ids.get(parts)  # type: ignore[arg-type]
    return dic.lookup(t)


def instantiate_fact(tp: TriplePattern, binding: dict[Variable, int], dic: TermDictionary) -> tuple[int, int, int] | None:
    """The fact a body triple pattern matched under ``binding``, or ``None``."""
    s = instantiate(tp.s, binding, dic)
    p = instantiate(tp.p, binding, dic)
    o = instantiate(tp.o, binding, dic)
    if s is None or p is None or o is None:
        return None
    return (s, p, o)
