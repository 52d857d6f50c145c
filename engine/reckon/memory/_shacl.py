"""SHACL validation of one memory's small graph, through :func:`reckon.schema.check`
against the tenant's own SCHEMA graph (shipped modules plus any ontology author's
modules loaded into that tenant).

The :class:`reckon.schema.Schema` is built once from the SCHEMA graph and kept until
:meth:`TenantValidator.reset` (the service calls it from ``reload_schema``).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from pyoxigraph import NamedNode, Triple

__all__ = ["TenantValidator", "default_validator"]

_Q_SCHEMA = "SELECT ?s ?p ?o WHERE { GRAPH <urn:reckon:graph:schema> { ?s ?p ?o } }"


class TenantValidator:
    """``validator(focus, triples)``: raises :class:`~reckon._errors.ShapeViolation`
    naming focus node, field / path and constraint of every violation.

    :param query: reads the tenant store (SELECT rows as dicts of terms).
    """

    def __init__(self, query: Callable[..., Any]) -> None:
        self.query = query
        self._schema: Any = None
        self._lock = threading.Lock()

    def reset(self) -> None:
        self._schema = None

    @property
    def schema(self) -> Any:
        with self._lock:
            if self._schema is None:
                from reckon.schema import schema_from_graph
                from reckon.store.sparql import deskolemize

                rows = self.query(_Q_SCHEMA)
                self._schema = schema_from_graph(
                    [Triple(deskolemize(r["s"]), r["p"], deskolemize(r["o"])) for r in rows]
                )
            return self._schema

    def __call__(self, focus: NamedNode, triples: list[Triple]) -> None:
        from reckon.schema import check

        check(triples, [focus], schema=self.schema)


def default_validator(query: Callable[..., Any]) -> Callable[[NamedNode, list[Triple]], None]:
    """The validator the service uses when none is given."""
    return TenantValidator(query)
