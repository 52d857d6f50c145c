"""Incremental maintenance of a materialized rule set: ``Reasoner.apply(insert, delete)``.

Deletions follow DRed (Gupta, Mumick & Subrahmanian 1993, "Maintaining views
incrementally", SIGMOD '93): *over-delete* every fact with a derivation that uses a
deleted fact, *rederive* the over-deleted facts that still have a derivation in what
remains, then *propagate insertions* semi-naively. Changes are pushed stratum by stratum
in the order of :func:`reckon.datalog.stratify.stratify`, so a stratum sees the final
state of every stratum below it (SRL "Evaluation of a Rule Set").

What is done for each stratum, given the net change of the evaluation graph so far
(``plus``: facts added since the call began, ``minus``: facts removed) and the net
change of the base graph ``G0``:

* **skipped** when no predicate its positive atoms read changed, no rule of it is
  *affected* (below) and no removed fact has one of its head predicates;
* a rule is **affected** when a predicate read inside its ``NOT`` / ``AGGREGATE``
  changed, or (``WHERE DATA`` / ``NOT DATA``) a predicate it reads from ``G0``
  changed in ``G0``. Affected rules are the non-monotone part: they are re-evaluated in
  full, once in the old state (their old head instances are over-deleted) and once in
  the new state (their new head instances are inserted); for a run-once rule the old
  instances are the output of its last full evaluation, cached while none of its
  inputs changed, so only one evaluation is needed. Every other rule (``SET``,
  head blank nodes and unaffected negations included) is maintained by its deltas.
* DRed for the stratum:

  1. over-delete: the affected rules' old instances, then, with the old state
     temporarily restored, every rule with one body atom over the removed facts (then
     over the newly over-deleted ones) and the others over the full store; a head
     instance that is in the store, not asserted and not a ``DATA`` triple is a
     candidate. Candidates are taken in order of rank (the round a fact was first
     derived): one that still has a derivation from asserted facts or from facts of
     smaller rank that are not over-deleted is kept (a well-founded, backward check in
     the spirit of Motik et al. 2015, "Incremental update of datalog materialisation:
     the backward/forward algorithm"); the others are over-deleted and propagate. So
     a hub fact with many derivations does not drag the whole closure along;
  2. rederive: every removed fact matching a head of the stratum is checked against
     the rules of this and lower strata with the head bound to the fact (one body match
     suffices) and put back if some rule still derives it; the affected rules are not
     checked (step 3 re-evaluates them in full: a capped aggregate's removed members
     would otherwise each cost one evaluation of the aggregate);
  3. insert: the affected rules' instances in the new state, then semi-naive
     propagation from every added fact (lower strata, base graph, rederived) to
     fixpoint, each rule with one body atom over the delta.

A fact removed and put back during the call (over-deleted, then rederived) is present
as before but has a new, larger rank; higher strata recheck its consequences like a
deletion's, so every derived fact keeps a derivation from facts of smaller rank (which
:meth:`Reasoner.explain` relies on).

Head blank nodes are memoised per (rule, solution): a solution that still holds keeps
its blank node, so the result equals a fresh evaluation up to blank-node names.

An insertion below a negation therefore retracts facts above it and a deletion adds
them, and the result always equals :func:`reckon.datalog.evaluate.materialize` of the
new base graph (up to blank-node names); ``tests/datalog/test_incremental.py`` checks
exactly that on random stratified programs and histories.

On :class:`~reckon._errors.EvaluationLimitExceeded` every change is rolled back.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pyoxigraph import Triple

from reckon.datalog._factstore import Fact, FactStore
from reckon.datalog.evaluate import NOTHING, RDF_TYPE

if TYPE_CHECKING:  # pragma: no cover
    from reckon.datalog.evaluate import Delta, Reasoner, _State

__all__ = ["apply_changes"]


class _Net:
    """Net change of a set relative to its state when the call began."""

    __slots__ = ("minus", "plus")

    def __init__(self) -> None:
        self.plus: set[Fact] = set()
        self.minus: set[Fact] = set()

    def added(self, f: Fact) -> None:
        if f in self.minus:
            self.minus.discard(f)
        else:
            self.plus.add(f)

    def removed(self, f: Fact) -> None:
        if f in self.plus:
            self.plus.discard(f)
        else:
            self.minus.add(f)


class _Maintainer:
    def __init__(self, reasoner: Reasoner) -> None:
        self.r = reasoner
        self.state: _State = reasoner._state
        self.net = _Net()
        self.base_net = _Net()
        self.old_rank: dict[Fact, int | None] = {}
        self.maintained: list[int] = []
        self.bumped: set[Fact] = set()
        self.old_outputs: dict[int, set[Fact] | None] = {}
        self.nonmonotone: list[str] = []
        # the ordered checks depend on the rules and the index statistics only: kept
        # with the compiled plans, across calls (PlanCompiler.memo)
        memo = reasoner._compiler.memo
        self._checks: dict[int, list[tuple[Any, int, int | None]]] = memo.setdefault("checks", {})
        self._checks_by_pid: dict[tuple[int, int], list[tuple[Any, int, int | None]]] = memo.setdefault(
            "checks_by_pid", {})
        self._head_consts: dict[tuple[int, int], tuple[int | None, int | None]] = memo.setdefault("head_consts", {})
        self._live: dict[tuple[str, int, int], list[list[Any]]] = {}
        """(mode, upto, predicate) -> the checks of :meth:`_checks_for` whose rule is not
        starved, each ``[info, head index, subject const, object const, plan function or
        None (not compiled yet) or False (no plan)]``; valid while the evaluation graph's
        predicates do not change (cleared by :meth:`_fresh_checks`)."""

    # -- bookkeeping -------------------------------------------------------------

    def remove(self, f: Fact) -> None:
        st = self.state
        if st.full.remove(f):
            if f not in self.old_rank:
                self.old_rank[f] = st.rank.get(f)
            st.rank.pop(f, None)
            self.net.removed(f)

    def add(self, facts: Any) -> list[Fact]:
        minus = self.net.minus
        back = []
        for f in facts:
            if f not in self.old_rank and f not in self.state.full.facts:
                self.old_rank[f] = self.state.rank.get(f)
            if f in minus:
                back.append(f)
        added = self.r._add(self.state, facts, self.net)
        # removed and put back: same presence, but a new (larger) rank
        self.bumped.update(back)
        return added

    def rollback(self) -> None:
        st = self.state
        for f in list(self.net.plus):
            st.full.remove(f)
        st.full.add_all(self.net.minus)
        for f in self.base_net.plus:
            st.base.remove(f)
        st.base.add_all(self.base_net.minus)
        for index, out in self.old_outputs.items():
            if out is None:
                st.outputs.pop(index, None)
            else:
                st.outputs[index] = out
        for f, r in self.old_rank.items():
            if r is None:
                st.rank.pop(f, None)
            else:
                st.rank[f] = r

    def _drop_output(self, index: int) -> None:
        outputs = self.state.outputs
        if index not in self.old_outputs:
            self.old_outputs[index] = outputs.get(index)
        outputs.pop(index, None)

    # -- rederivation -------------------------------------------------------------

    def _check_list(self, upto: int) -> list[tuple[Any, int, int | None]]:
        """(rule info, head template index, predicate id or None) of strata <= upto."""
        got = self._checks.get(upto)
        if got is None:
            from reckon.datalog._plan import pattern_predicate

            got = []
            for si in range(upto + 1):
                for info in self.r._strata[si]:
                    for j, tpl in enumerate(info.rule.head):
                        got.append((info, j, self.r._pid(pattern_predicate(tpl))))
                        self._head_consts[(info.index, j)] = (self._const_id(tpl.s), self._const_id(tpl.o))
            self._checks[upto] = got
        return got

    def _checks_for(self, upto: int, pid: int) -> list[tuple[Any, int, int | None]]:
        """The entries of :meth:`_check_list` whose head predicate can be ``pid``,
        cheapest first (estimated plan cost, :meth:`PlanCompiler.estimate
        <reckon.datalog._plan.PlanCompiler.estimate>`): a fact is checked against its
        predicate's rules only, one success ends the search, and an expensive check (an
        object index to build) is then rarely reached. Estimated per predicate, when
        first needed: a small change touches a few predicates."""
        key = (upto, pid)
        got = self._checks_by_pid.get(key)
        if got is None:
            comp = self.r._compiler

            def cost(entry: tuple[Any, int, int | None]) -> float:
                return comp.estimate(entry[0], "safe", entry[1])

            got = sorted((e for e in self._check_list(upto) if e[2] is None or e[2] == pid), key=cost)
            self._checks_by_pid[key] = got
        return got

    def _const_id(self, t: object) -> int | None:
        from pyoxigraph import BlankNode, Variable

        from reckon.datalog.model import TripleTermPattern

        if isinstance(t, (Variable, TripleTermPattern, BlankNode)):
            return None
        return self.r._dic.lookup(t)

    def _fresh_checks(self) -> None:
        """Forget which rules are starved (call when the graph's predicates may have
        changed)."""
        self._live.clear()

    def _live_checks(self, mode: str, upto: int, pid: int) -> list[list[Any]]:
        key = (mode, upto, pid)
        got = self._live.get(key)
        if got is None:
            st = self.state
            starved = self.r._starved
            got = []
            for info, j, _pid in self._checks_for(upto, pid):
                if not starved(info, st.full, st.base):
                    sc, oc = self._head_consts[(info.index, j)]
                    got.append([info, j, sc, oc, None])
            self._live[key] = got
        return got

    def _fn(self, entry: list[Any], mode: str) -> Any:
        """The compiled check of a :meth:`_live_checks` entry (compiled on first use)."""
        fn = entry[4]
        if fn is None:
            plan = self.r._compiler.plan(entry[0], None, mode, entry[1])
            fn = entry[4] = False if plan is None else plan.fn
        return fn

    def derivable(self, f: Fact, upto: int, skip: frozenset[int] = frozenset()) -> bool:
        """Some rule of strata ``<= upto`` whose index is not in ``skip`` derives ``f``
        in the current state (which must not change the graph's predicates between
        calls without :meth:`_fresh_checks`)."""
        if upto < 0:
            return False
        st = self.state
        s, p, o = f
        for entry in self._live_checks("exists", upto, p):
            info, _j, sc, oc, fn = entry
            if info.index in skip or (sc is not None and sc != s) or (oc is not None and oc != o):
                continue
            if fn is None:
                fn = self._fn(entry, "exists")
            if fn and fn(st.full, st.base, s, p, o):
                return True
        return False

    def safe(self, f: Fact, rf: int, upto: int, excluded: set[int], unsafe: set[Fact]) -> bool:
        """``f`` has a derivation (rules of strata ``<= upto`` not in ``excluded``) whose
        supports are asserted, or have rank ``< rf`` and are not in ``unsafe`` (same
        condition on the state as :meth:`derivable`)."""
        st = self.state
        full, base, rank = st.full, st.base, st.rank
        s, p, o = f
        for entry in self._live_checks("safe", upto, p):
            info, _j, sc, oc, fn = entry
            if info.index in excluded or (sc is not None and sc != s) or (oc is not None and oc != o):
                continue
            if fn is None:
                fn = self._fn(entry, "safe")
            if fn and fn(full, base, s, p, o, unsafe, rank, rf):
                return True
        return False

    # -- the algorithm ------------------------------------------------------------

    def run(self, insert: list[Triple], delete: list[Triple]) -> Delta:
        from reckon.datalog.evaluate import Delta

        r, st = self.r, self.state
        dic = r._dic
        t0 = time.perf_counter()
        stats = r._new_stats()
        r._guard.start()
        r._guard.before_round(len(st.full) - len(st.base))
        for t in delete:
            f = dic.encode_existing(t)
            if f is not None and st.base.remove(f):
                self.base_net.removed(f)
                if f not in st.data:
                    self.remove(f)
        for t in insert:
            f = dic.encode(t)
            if st.base.add(f):
                self.base_net.added(f)
                if f not in st.full.facts:
                    self.add([f])
        r._hidden()  # new helper-vocabulary terms of the inserted facts
        base_preds = {f[1] for f in self.base_net.plus} | {f[1] for f in self.base_net.minus}
        for si, sinfo in enumerate(r._sinfo):
            net = self.net
            if not net.plus and not net.minus and not base_preds and not self.bumped:
                break
            changed = {f[1] for f in net.plus} | {f[1] for f in net.minus}
            changed_or_bumped = changed | {f[1] for f in self.bumped}
            removed_preds = {f[1] for f in net.minus}
            affected = [
                info for info in sinfo.rules
                if _hit(sinfo.closed.get(info.index, set()), changed)
                or _hit(sinfo.base_reads.get(info.index, set()), base_preds)
            ]
            base_hit = bool(sinfo.base_atoms) and _hit(sinfo.base_atom_preds, base_preds)
            if affected or base_hit or _hit(sinfo.reads, changed_or_bumped) or _hit(sinfo.heads, removed_preds):
                self.dred_stratum(si, sinfo, affected, stats)
        added, removed = [], []
        bplus, bminus = self.base_net.plus, self.base_net.minus
        full, base = st.full.facts, st.base.facts
        decode = dic.decode
        visible = r._visible_filter()
        for f in self.net.plus | self.net.minus | bplus | bminus:
            if visible is not None and not visible(f):
                continue
            was_full = (f in full and f not in self.net.plus) or f in self.net.minus
            was_base = (f in base and f not in bplus) or f in bminus
            was_inf = was_full and not was_base
            now_inf = f in full and f not in base
            if now_inf and not was_inf:
                added.append(decode(f))
            elif was_inf and not now_inf:
                removed.append(decode(f))
        stats["maintained_strata"] = list(self.maintained)
        stats["nonmonotone_rules"] = list(self.nonmonotone)
        stats["derived"] = len(st.full) - len(st.base)
        stats["seconds"] = time.perf_counter() - t0
        r.stats = stats
        return Delta(frozenset(added), frozenset(removed))

    def _old_state(self) -> None:
        """Put the evaluation graph and ``G0`` back as they were when the call began."""
        st = self.state
        for f in self.net.plus:
            st.full.remove(f)
        st.full.add_all(self.net.minus)
        for f in self.base_net.plus:
            st.base.remove(f)
        st.base.add_all(self.base_net.minus)

    def _new_state(self) -> None:
        st = self.state
        for f in self.net.minus:
            st.full.remove(f)
        st.full.add_all(self.net.plus)
        for f in self.base_net.minus:
            st.base.remove(f)
        st.base.add_all(self.base_net.plus)

    def dred_stratum(self, si: int, sinfo: Any, affected: list[Any], stats: dict[str, Any]) -> None:
        r, st = self.r, self.state
        comp = r._compiler
        full, base = st.full, st.base
        self.maintained.append(si)
        self.nonmonotone.extend(info.rule.name for info in affected)
        t0 = time.perf_counter()
        atoms = sinfo.atoms
        minus = set(self.net.minus)
        bumped = set(self.bumped)

        def keepable(f: Fact) -> bool:
            return f in base.facts or f in st.data

        # 1. over-delete, against the old state. A candidate (a consequence of an
        #    over-deleted fact) is kept when it still has a derivation whose supports all
        #    have a smaller rank and are not over-deleted (processed in rank order, so a
        #    kept fact never rests on a fact over-deleted later); this stops DRed from
        #    over-deleting through hub facts such as ``rdf:type rdf:type rdf:Property``.
        unsafe: set[Fact] = set(minus)
        outputs = st.outputs
        changed = {f[1] for f in self.net.plus} | {f[1] for f in minus}
        for info in sinfo.rules:  # a cached output stays valid only while no input changes
            if info.index in outputs and info not in affected and any(
                i is info and (pid is None or pid in changed) for i, _, pid in atoms
            ):
                self._drop_output(info.index)
        # consequences of removed base facts through base-monotone WHERE DATA rules,
        # computed against the old base graph (the removed facts put back meanwhile)
        base_seed: set[Fact] = set()
        bminus = self.base_net.minus
        if bminus and sinfo.base_atoms:
            dB = FactStore(bminus)
            base.add_all(bminus)
            try:
                for info, k, pid in sinfo.base_atoms:
                    if pid is None or pid in dB.spo:
                        comp.plan(info, k, "old").fn(full, dB, base, base_seed)  # type: ignore[union-attr]
            finally:
                for f in bminus:
                    base.remove(f)
        if minus or affected or bumped or base_seed:
            seed: set[Fact] = set(base_seed)
            stale = []
            for info in affected:
                cached = outputs.get(info.index)
                if cached is None:
                    stale.append(info)
                else:
                    seed |= cached
            if stale:
                self._old_state()
                try:
                    for info in stale:
                        comp.plan(info, None, "all").fn(full, None, base, seed)  # type: ignore[union-attr]
                finally:
                    self._new_state()
            excluded = {info.index for info in affected}
            rank = st.rank
            decided: set[Fact] = set()
            heap: list[tuple[int, Fact]] = []

            def push(facts: Iterable[Fact]) -> None:
                for f in facts:
                    if f not in unsafe and f not in decided and f in full.facts and not keepable(f):
                        heapq.heappush(heap, (rank.get(f, 0), f))

            def consequences(facts: list[Fact] | set[Fact]) -> None:
                delta = FactStore(facts)
                dp = delta.spo
                new: set[Fact] = set()
                for info, k, pid in atoms:
                    # an affected rule's old instances are all seeds already
                    if (pid is not None and pid not in dp) or info.index in excluded or r._starved(info, full, base, k):
                        continue
                    comp.plan(info, k, "old").fn(full, delta, base, new)  # type: ignore[union-attr]
                push(new)

            full.add_all(minus)
            self._fresh_checks()
            try:
                push(seed)
                if minus or bumped:
                    # a fact put back with a larger rank (lower stratum) no longer supports
                    # facts of smaller rank: recheck its consequences like a deletion's
                    consequences(minus | bumped)
                while heap:
                    r0 = heap[0][0]
                    batch: set[Fact] = set()
                    while heap and heap[0][0] == r0:
                        f = heapq.heappop(heap)[1]
                        if f not in unsafe and f not in decided:
                            batch.add(f)
                    bad = []
                    for f in batch:
                        if self.safe(f, r0, si, excluded, unsafe):
                            decided.add(f)
                        else:
                            unsafe.add(f)
                            bad.append(f)
                    if bad:
                        consequences(bad)
            finally:
                for f in minus:
                    full.remove(f)
            for f in unsafe - minus:
                self.remove(f)
        # 2. rederive removed facts that match a head of this stratum (the affected
        #    rules are skipped: step 3 evaluates them in full in the new state anyway)
        heads = sinfo.heads
        cands = [f for f in self.net.minus if heads is None or f[1] in heads]
        skip = frozenset(info.index for info in affected)
        self._fresh_checks()
        back = [f for f in cands if self.derivable(f, si, skip)]
        self._fresh_checks()
        if back:
            self.add(back)
        # 3. insert: affected rules in the new state, then semi-naive propagation
        fresh: set[Fact] = set()
        for info in affected:
            if info.once:
                out: set[Fact] = set()
                comp.plan(info, None, "all").fn(full, None, base, out)  # type: ignore[union-attr]
                self._drop_output(info.index)
                outputs[info.index] = out
                fresh.update(f for f in out if f not in full.facts)
            else:
                comp.plan(info, None, "new").fn(full, None, base, fresh)  # type: ignore[union-attr]
        bplus = self.base_net.plus
        if bplus and sinfo.base_atoms:
            dB = FactStore(bplus)
            for info, k, pid in sinfo.base_atoms:
                if pid is None or pid in dB.spo:
                    comp.plan(info, k, "new1").fn(full, dB, base, fresh)  # type: ignore[union-attr]
        reads = sinfo.reads
        seeds = [f for f in self.net.plus if reads is None or f[1] in reads]
        seeds += [f for f in back if reads is None or f[1] in reads]
        seeds += self.add(fresh)
        rounds = 0
        n0 = len(full)
        # an affected run-once rule was just evaluated in full over its inputs, which
        # are final (a run-once rule reads only lower strata): no delta variant of it
        # can derive anything new
        done = {info.index for info in affected if info.once}
        while seeds:
            delta = FactStore(seeds)
            dp = delta.spo
            new: set[Fact] = set()
            culprit = ""
            for info, k, pid in atoms:
                if (pid is not None and pid not in dp) or info.index in done or r._starved(info, full, base, k):
                    continue
                before = len(new)
                comp.plan(info, k, "new1").fn(full, delta, base, new)  # type: ignore[union-attr]
                if len(new) > before:
                    culprit = info.rule.name
            seeds = self.add(new)
            rounds += 1
            r._check_limits(st, rounds, culprit, len(seeds))
        stats["facts_per_stratum"][si] += len(full) - n0
        stats["rounds_per_stratum"][si] += rounds
        stats["seconds_per_stratum"][si] += time.perf_counter() - t0
        stats["rounds"] += rounds


def _hit(preds: set[int] | None, changed: set[int]) -> bool:
    """Whether a predicate set (``None`` = any) meets the changed predicates."""
    if preds is None:
        return bool(changed)
    return bool(preds & changed)


def apply_changes(reasoner: Reasoner, insert: list[Triple], delete: list[Triple]) -> Delta:
    """Apply base-graph deletions then insertions and maintain the inference graph.

    :returns: :class:`~reckon.datalog.evaluate.Delta` of the inference graph.
    :raises EvaluationLimitExceeded: when a limit is hit; all changes are rolled back.
    """
    m = _Maintainer(reasoner)
    try:
        delta = m.run(insert, delete)
        if reasoner.refuse_inconsistent or _switched_on(reasoner):
            _refuse_new_inconsistencies(reasoner, m)
        return delta
    except BaseException:
        m.rollback()
        raise


def _switched_on(reasoner: Reasoner) -> bool:
    """The graph holds the reasoner's ``refuse_when`` triple (after the change)."""
    t = reasoner.refuse_when
    if t is None:
        return False
    f = reasoner._dic.encode_existing(t)
    return f is not None and f in reasoner._state.full.facts


def _refuse_new_inconsistencies(reasoner: Reasoner, m: _Maintainer) -> None:
    """Raise :class:`~reckon._errors.InconsistentGraph` (explanations taken before the
    caller rolls back) when the change made some node newly ``rdf:type owl:Nothing``."""
    from reckon._errors import InconsistentGraph

    dic = reasoner._dic
    t = dic.lookup(RDF_TYPE)
    n = dic.lookup(NOTHING)
    if t is None or n is None:
        return
    new = {f for f in m.net.plus | m.base_net.plus if f[1] == t and f[2] == n}
    if not new:
        return
    found = reasoner._inconsistencies(new)
    if not found:  # a literal in owl:Nothing with no holder: report the literal's mark
        return
    lines = "\n".join(i.render() for i in found)
    raise InconsistentGraph(
        f"refused: the change makes the graph inconsistent ({len(found)} node"
        f"{'s' if len(found) != 1 else ''} in owl:Nothing)\n{lines}",
        found,
    )
