"""Helpers of :class:`reckon.schema.TenantSchema`: reading a tenant's SCHEMA graph, its
digest, and restricting a shapes graph to the shapes of some classes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from pyoxigraph import BlankNode, NamedNode, Triple

from reckon.vocab import SCHEMA, SH

__all__ = ["read_schema", "restrict", "schema_digest"]

_TARGET = NamedNode(SH + "targetClass")
_Q_SCHEMA = "SELECT ?s ?p ?o WHERE { GRAPH " + str(SCHEMA) + " { ?s ?p ?o } }"



def schema_digest(triples: list[Triple]) -> str:
    """SHA-256 over the sorted N-Triples lines of ``triples`` with every blank node
    written as ``_:b`` (blank node labels differ per tenant load of the same files).
    Two schemas that differ only in how their blank nodes are wired would collide; shapes
    graphs built from the same ``.ttl`` files never do."""

    def canon(t: Triple) -> str:
        s = "_:b" if isinstance(t.subject, BlankNode) else str(t.subject)
        o = "_:b" if isinstance(t.object, BlankNode) else str(t.object)
        return f"{s} {t.predicate} {o}"

    h = hashlib.sha256()
    for line in sorted(canon(t) for t in triples):
        h.update(line.encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()


def restrict(triples: list[Triple], classes: frozenset[str]) -> list[Triple]:
    """Drop the shapes (and the blank-node structure only they reach) whose
    ``sh:targetClass`` is none of ``classes``. Shapes without a target are kept."""
    targets: dict[Any, set[str]] = {}
    for t in triples:
        if t.predicate == _TARGET and isinstance(t.object, NamedNode):
            targets.setdefault(t.subject, set()).add(t.object.value)
    dropped = {s for s, cs in targets.items() if not (cs & classes)}
    if not dropped:
        return triples
    by_subject: dict[Any, list[Triple]] = {}
    for t in triples:
        by_subject.setdefault(t.subject, []).append(t)
    # blank nodes reachable from the dropped shapes, minus those also reachable from kept subjects
    def reach(roots: set[Any]) -> set[Any]:
        seen: set[Any] = set()
        stack = list(roots)
        while stack:
            n = stack.pop()
            for t in by_subject.get(n, ()):
                if isinstance(t.object, BlankNode) and t.object not in seen:
                    seen.add(t.object)
                    stack.append(t.object)
        return seen

    kept_roots = {s for s in by_subject if not isinstance(s, BlankNode) and s not in dropped}
    gone = (reach(dropped) - reach(kept_roots)) | dropped
    return [t for t in triples if t.subject not in gone]


def read_schema(query: Callable[..., Any]) -> tuple[str, list[Triple]]:
    """``(digest, triples)`` of a tenant's SCHEMA graph read through ``query``."""
    from reckon.store.sparql import deskolemize

    rows = query(_Q_SCHEMA)
    triples = [Triple(deskolemize(r["s"]), r["p"], deskolemize(r["o"])) for r in rows]  # type: ignore[arg-type]
    return schema_digest(triples), triples
