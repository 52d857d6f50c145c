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

from reckon.schema._convert import graph_from_triples, to_oxigraph, to_rdflib
from reckon.schema.catalogue import Catalogue, MemoryClass, PropertySpec
from reckon.schema.check import SchemaProblem, check_schema
from reckon.schema.loader import MK, RC, RK, Schema, load_schema, schema_from_graph, split_shapes
from reckon.schema.tenant import TenantSchema, schema_digest
from reckon.schema.validate import check, format_violations, validate

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
