"""A tiny recompute-from-scratch reasoner for store plumbing tests (independent of
reckon.datalog): two rules over ``urn:t:`` predicates.

* transitive:  ?a sub ?b . ?b sub ?c            -> ?a sub ?c
* membership:  ?x type ?c . ?c sub ?d            -> ?x type ?d
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyoxigraph import NamedNode, Triple

SUB = NamedNode("urn:t:sub")
TYPE = NamedNode("urn:t:type")


@dataclass(frozen=True)
class ToyDelta:
    added: frozenset[Triple]
    removed: frozenset[Triple]


def closure(base: set[Triple]) -> set[Triple]:
    full = set(base)
    while True:
        sub = [(t.subject, t.object) for t in full if t.predicate == SUB]
        new = set()
        for a, b in sub:
            for b2, c in sub:
                if b == b2:
                    new.add(Triple(a, SUB, c))
        for t in full:
            if t.predicate == TYPE:
                for c, d in sub:
                    if c == t.object:
                        new.add(Triple(t.subject, TYPE, d))
        if new <= full:
            return full - base
        full |= new


class ToyReasoner:
    fail_next_apply = False

    def __init__(self) -> None:
        self._base: set[Triple] = set()
        self._inf: set[Triple] = set()

    def load(self, base: Iterable[Triple]) -> None:
        self._base = set(base)
        self._inf = closure(self._base)

    def apply(self, insert: Iterable[Triple] = (), delete: Iterable[Triple] = ()) -> ToyDelta:
        if ToyReasoner.fail_next_apply:
            ToyReasoner.fail_next_apply = False
            raise RuntimeError("injected reasoner failure")
        insert, delete = set(insert), set(delete)
        new_base = (self._base - delete) | insert
        if not delete and not any(t.predicate == SUB for t in insert):
            # monotonic fast path: only membership of the inserted subjects can change
            sub = [(t.subject, t.object) for t in self._base | self._inf if t.predicate == SUB]
            new_inf = set(self._inf)
            for t in insert:
                if t.predicate == TYPE:
                    new_inf |= {Triple(t.subject, TYPE, d) for c, d in sub if c == t.object}
            new_inf -= new_base
        else:
            new_inf = closure(new_base)
        d = ToyDelta(frozenset(new_inf - self._inf), frozenset(self._inf - new_inf))
        self._base, self._inf = new_base, new_inf
        return d

    def inferred(self) -> set[Triple]:
        return set(self._inf)

    def base(self) -> set[Triple]:
        return set(self._base)
