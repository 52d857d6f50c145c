"""Ontology + shapes loading, SHACL validation and the memory subclass catalogue.

* :func:`load_schema` — the shipped modules (``ontology/``, ``shapes/``, module rules)
  plus an ontology author's extra files, cached per module set.
* :meth:`Schema.catalogue` — every class under ``rk:Memory`` with its shape-declared
  properties (feeds the LLM tool schema).
* :func:`validate` / :func:`check` — pySHACL over the changed nodes' small graph plus the
  class hierarchy; violation dicts with focus node, path, field, constraint, value, message.
* :func:`check_schema` — every problem of a module set (the ontology author's check).
* :class:`TenantSchema` — one tenant's schema (its SCHEMA graph), cached per digest: the
  one owner of classes, subclass closure, property specs, catalogue, the compiled SHACL
  fast path and the validator every asserted write goes through.

Namespaces (``rk:``, ``mk:``, ``rc:``, ``ag:``) and graph names come from :mod:`reckon.vocab`.
The triples a writer creates for a memory
are listed in ``ontology/core.ttl`` and the shapes (``shapes/core.ttl``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reckon.schema._convert import graph_from_triples, to_oxigraph, to_rdflib
from reckon.schema.catalogue import Catalogue, MemoryClass, PropertySpec
from reckon.schema.check import SchemaProblem, check_schema
from reckon.schema.tenant import TenantSchema, schema_digest
from reckon.schema.validate import check, format_violations, validate

if TYPE_CHECKING:  # pragma: no cover
    from reckon.schema.loader import MK, RC, RK, Schema, load_schema, schema_from_graph, split_shapes

# None of the modules above imports rdflib (~0.1 s) at module level: the write and read
# paths (``reckon.schema.tenant``) never build an rdflib graph. ``reckon.schema.loader``
# (Turtle loading, whose namespaces are rdflib's) is imported on first use of its names
# (PEP 562), as pySHACL validation and the author's check import it.
_LOADER = frozenset({"MK", "RC", "RK", "Schema", "load_schema", "schema_from_graph", "split_shapes"})


def __getattr__(name: str) -> object:
    if name not in _LOADER:
        raise AttributeError(f"module 'reckon.schema' has no attribute {name!r}")
    from reckon.schema import loader

    value = getattr(loader, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LOADER)


__all__ = [
    "Catalogue",
    "MK",
    "MemoryClass",
    "PropertySpec",
    "RC",
    "RK",
    "Schema",
    "SchemaProblem",
    "TenantSchema",
    "check",
    "check_schema",
    "format_violations",
    "graph_from_triples",
    "load_schema",
    "schema_digest",
    "schema_from_graph",
    "split_shapes",
    "to_oxigraph",
    "to_rdflib",
    "validate",
]
