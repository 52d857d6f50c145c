"""Memory model <-> RDF terms (the triples ``ontology/core.ttl`` and ``shapes/core.ttl`` describe).

Nothing here builds SPARQL text from user values: data becomes pyoxigraph
``NamedNode`` / ``Literal`` terms whose constructors validate, and reads bind values
through ``substitutions``.

Person and team ids are slugs chosen by callers; they become IRIs
``urn:reckon:<tenant>:person:<pct-encoded id>`` where every character outside
``A-Z a-z 0-9 - . _ ~`` is percent-encoded (RFC 3986 unreserved set), so any id —
quotes, braces, spaces, NUL — maps to a valid IRI and back unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pyoxigraph import Literal, NamedNode, Quad

from reckon.store.terms import datetime_literal
from reckon.store.terms import decimal_literal as _decimal_literal
from reckon.vocab import (  # re-exported for the memory layer (see __all__)
    ACTIVE,
    BASE_PROPERTIES,
    BUSINESS,
    CONVERSATION,
    INFERRED,
    IRI_KIND,
    IRI_SCOPE,
    IRI_SOURCE,
    KIND_IRI,
    LABEL,
    MEMORIES,
    MEMORY,
    MK,
    OWL,
    PERSON,
    PROJECT,
    RDF,
    RDFS,
    RK,
    SCHEMA,
    SCOPE_IRI,
    SH,
    SOURCE_IRI,
    SUBCLASS,
    TEAM,
    XSD,
    A,
    conversation_iri,
    local_name,
    memory_iri,
    memory_prefix,
    person_iri,
    project_iri,
    python_value,
    revision_iri,
    rk,
    slug_of,
    team_iri,
    team_key,
)

__all__ = [
    "A",
    "ACTIVE",
    "BASE_PROPERTIES",
    "BUSINESS",
    "DELETED",
    "INFERRED",
    "IRI_KIND",
    "IRI_SCOPE",
    "IRI_SOURCE",
    "KIND_IRI",
    "LABEL",
    "MEMORIES",
    "MEMORY",
    "MK",
    "OWL",
    "PERSON",
    "P_AUTHOR",
    "P_CONFIDENCE",
    "P_CONTENT",
    "P_CREATED",
    "P_DELETED_AT",
    "P_DELETED_BY",
    "P_DERIVED_FROM",
    "P_EXPIRES",
    "P_IMPORTANCE",
    "P_KIND",
    "P_OWNER",
    "P_REVISED_AT",
    "P_REVISED_BY",
    "P_REVISION_OF",
    "P_SCOPE",
    "P_SOURCE",
    "P_SUPERSEDED_BY",
    "P_SUPERSEDES",
    "P_TEAM",
    "P_PROJECT",
    "P_CONVERSATION",
    "PROJECT",
    "CONVERSATION",
    "project_iri",
    "conversation_iri",
    "LINKS",
    "links_of",
    "P_UPDATED",
    "RDF",
    "RDFS",
    "REVISION",
    "RK",
    "SCHEMA",
    "SCOPE_IRI",
    "SH",
    "SOURCE_IRI",
    "SUBCLASS",
    "TEAM",
    "XSD",
    "X_BOOLEAN",
    "X_DATE",
    "X_DATETIME",
    "X_DECIMAL",
    "X_DOUBLE",
    "X_FLOAT",
    "X_INTEGER",
    "X_STRING",
    "decimal_literal",
    "dt_literal",
    "local_name",
    "memory_iri",
    "memory_prefix",
    "person_iri",
    "python_value",
    "quads",
    "revision_iri",
    "rk",
    "slug_of",
    "team_key",
    "team_iri",
]

P_CONTENT, P_KIND, P_SCOPE, P_OWNER, P_TEAM = rk("content"), rk("kind"), rk("scope"), rk("owner"), rk("team")
P_PROJECT, P_CONVERSATION = rk("project"), rk("conversation")
P_IMPORTANCE, P_SOURCE, P_CONFIDENCE = rk("importance"), rk("source"), rk("confidence")
P_CREATED, P_UPDATED, P_AUTHOR, P_EXPIRES = rk("createdAt"), rk("updatedAt"), rk("author"), rk("expiresAt")
P_SUPERSEDED_BY, P_SUPERSEDES = rk("supersededBy"), rk("supersedes")
DELETED, REVISION = rk("DeletedMemory"), rk("Revision")
P_DELETED_AT, P_DELETED_BY = rk("deletedAt"), rk("deletedBy")
P_REVISION_OF, P_REVISED_AT, P_REVISED_BY = rk("revisionOf"), rk("revisedAt"), rk("revisedBy")
P_DERIVED_FROM = rk("derivedFrom")  # ontology/agent.ttl: memory -> the turns it was extracted from
X_STRING, X_INTEGER, X_DECIMAL = NamedNode(XSD + "string"), NamedNode(XSD + "integer"), NamedNode(XSD + "decimal")
X_DATETIME, X_DATE, X_BOOLEAN = NamedNode(XSD + "dateTime"), NamedNode(XSD + "date"), NamedNode(XSD + "boolean")
X_DOUBLE, X_FLOAT = NamedNode(XSD + "double"), NamedNode(XSD + "float")

# ---------------------------------------------------------------------------------------
# Literals
# ---------------------------------------------------------------------------------------

def dt_literal(value: datetime, field: str = "datetime") -> Literal:
    """``xsd:dateTime`` in UTC with ``Z``, in the store's canonical form (no trailing
    zeros in the fraction: ``…34.82904Z``); see :func:`reckon.store.terms.datetime_literal`.

    :raises InvalidInput: for a naive ``datetime`` (no time zone is ever guessed).
    """
    return datetime_literal(value, field)


def decimal_literal(value: Any) -> Literal:
    """Canonical ``xsd:decimal`` (no exponent, no trailing zeros: ``"40000"``, ``"2.5"``);
    see :func:`reckon.store.terms.decimal_literal`.

    :raises ValueError: for a value the store cannot hold exactly (more than 18
        fractional digits, beyond ~1.7e20, not finite, not a number).
    """
    return _decimal_literal(value)


def quads(triples: Iterable[tuple[Any, Any, Any]], graph: NamedNode = MEMORIES) -> list[Quad]:
    return [Quad(s, p, o, graph) for s, p, o in triples]


#: The stakeholder link of each scope with one linked stakeholder besides the owner and
#: the teams: project scope -> ``rk:project``, conversation scope -> ``rk:conversation``.
LINKS: dict[str, tuple[NamedNode, Any]] = {
    "project": (P_PROJECT, project_iri),
    "conversation": (P_CONVERSATION, conversation_iri),
}


def links_of(asserted: dict[Any, list[Any]]) -> dict[str, str | None]:
    """``{"project": id | None, "conversation": id | None}`` of a memory's asserted
    triples (inputs of :mod:`reckon.memory.authz` beside scope, owner and teams)."""
    out: dict[str, str | None] = {}
    for name, (pred, _) in LINKS.items():
        objs = asserted.get(pred)
        out[name] = slug_of(objs[0].value) if objs else None
    return out
