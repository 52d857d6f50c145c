"""SHACL validation of one memory's small graph, through :func:`reckon.schema.check`
against the tenant's own SCHEMA graph (shipped modules plus any ontology author's
modules loaded into that tenant).

The :class:`reckon.schema.Schema` is built once from the SCHEMA graph and kept until
:meth:`TenantValidator.reset` (the service calls it from ``reload_schema``).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, Callable

from pyoxigraph import BlankNode, NamedNode, Triple


from reckon.vocab import SCHEMA, SH, SUBCLASS, A
__all__ = ["TenantValidator", "default_validator"]

_SH = SH
_Q_SCHEMA = "SELECT ?s ?p ?o WHERE { GRAPH " + str(SCHEMA) + " { ?s ?p ?o } }"

# Schemas built from SCHEMA graphs, by digest of their content: tenants with the same
# modules share one (building one costs ~1-3 s of pySHACL / rdflib work).
_CACHE: dict[str, Any] = {}
_CACHE_LOCK = threading.Lock()


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


class TenantValidator:
    """``validator(focus, triples)``: raises :class:`~reckon._errors.ShapeViolation`
    naming focus node, field / path and constraint of every violation.

    :param schema_triples: returns ``(digest, triples)`` of the tenant's SCHEMA graph
        (blank nodes as blank nodes).
    """

    def __init__(self, schema_triples: Callable[[], tuple[str, list[Triple]]]) -> None:
        self.schema_triples = schema_triples
        self._schema: Any = None
        self._lock = threading.Lock()

    def reset(self) -> None:
        self._schema = None

    @property
    def schema(self) -> Any:
        """The full schema (every shape of the tenant)."""
        return self._for(None)

    def _for(self, classes: frozenset[str] | None) -> Any:
        """The schema restricted to the shapes that target one of ``classes`` (a memory's
        class and its superclasses); ``None``: every shape. pySHACL's cost grows with the
        number of shapes it walks (~3 ms each here), so a memory is validated against its
        own 4–10 shapes rather than all of them; the shapes of other classes cannot apply
        to a node that is not an instance of their target class."""
        from reckon.schema import schema_from_graph

        key, triples = self.schema_triples()
        ckey = key if classes is None else key + "|" + "|".join(sorted(classes))
        with _CACHE_LOCK:
            if ckey not in _CACHE:
                _CACHE[ckey] = schema_from_graph(triples if classes is None else _restrict(triples, classes))
            return _CACHE[ckey]

    def fast(self) -> Any:
        """The compiled fast path for this tenant's shapes (shared per schema digest)."""
        from reckon.memory._fastshacl import FastShapes

        key, triples = self.schema_triples()
        with _CACHE_LOCK:
            if key + "#fast" not in _CACHE:
                _CACHE[key + "#fast"] = FastShapes(triples)
            return _CACHE[key + "#fast"]

    def __call__(self, focus: NamedNode, triples: list[Triple]) -> None:
        from reckon.schema import check

        if self.fast().conforms(focus, triples) is True:
            return  # only "conforms" is trusted; violations are reported by pySHACL
        types = frozenset(t.object.value for t in triples if t.subject == focus and t.predicate == _TYPE
                          and isinstance(t.object, NamedNode))
        key, schema_triples = self.schema_triples()
        chain = _superclasses(key, schema_triples, types)
        check(triples, [focus], schema=self._for(chain))


_TYPE = A
_SUBCLASS = SUBCLASS
_TARGET = NamedNode(_SH + "targetClass")


def _superclasses(key: str, triples: list[Triple], types: frozenset[str]) -> frozenset[str]:
    ck = key + "#sup|" + "|".join(sorted(types))
    with _CACHE_LOCK:
        if ck in _CACHE:
            return _CACHE[ck]
    sup: dict[str, set[str]] = {}
    for t in triples:
        if t.predicate == _SUBCLASS and isinstance(t.subject, NamedNode) and isinstance(t.object, NamedNode):
            sup.setdefault(t.subject.value, set()).add(t.object.value)
    seen: set[str] = set()
    stack = list(types)
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        stack.extend(sup.get(c, ()))
    out = frozenset(seen)
    with _CACHE_LOCK:
        _CACHE[ck] = out
    return out


def _restrict(triples: list[Triple], classes: frozenset[str]) -> list[Triple]:
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
    triples = [Triple(deskolemize(r["s"]), r["p"], deskolemize(r["o"])) for r in rows]
    return schema_digest(triples), triples


def default_validator(schema_triples: Callable[[], tuple[str, list[Triple]]]) -> Callable[[NamedNode, list[Triple]], None]:
    """The validator the service uses when none is given."""
    return TenantValidator(schema_triples)
