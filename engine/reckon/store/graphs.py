"""Named graphs of a tenant store and the private bookkeeping vocabulary.

Every tenant dataset keeps triples apart by origin (DESIGN.md, "The store"):

* :data:`SCHEMA`   ontology + shapes + settings defaults (asserted)
* :data:`MEMORIES` memory nodes, people, teams, the company (asserted)
* :data:`BUSINESS` KPIs, spend, accounts, subscription, the clock (asserted)
* :data:`TRANSCRIPTS` conversations and their turns (asserted; ontology/agent.ttl)
* :data:`NOTES` keyed shared notes (asserted; ontology/notes.ttl)
* :data:`EVENTS` the typed event graph: events, episodes, entities (asserted; ontology/events.ttl)
* :data:`EXPERIENCE` experience records and strategies (asserted; ontology/experience.ttl)
* :data:`INFERRED` derived triples only; never asserted, written by the reasoner

Reasoning runs over the union of the asserted graphs (:data:`ASSERTED`) as one base
graph. :data:`META` is private to the store (the write generation counter) and
:data:`PROGRAM` holds the tenant's program (its modules: ontology, shapes and rule
files, see ``reckon.schema.program``); SPARQL users see neither.
"""

from __future__ import annotations

from pyoxigraph import NamedNode

from reckon.vocab import (
    ASSERTED,
    BUSINESS,
    EVENTS,
    EXPERIENCE,
    INFERRED,
    MEMORIES,
    META,
    NOTES,
    PROGRAM,
    PUBLIC,
    SCHEMA,
    TRANSCRIPTS,
)

__all__ = [
    "ASSERTED",
    "BUSINESS",
    "GENERATION",
    "INCARNATION",
    "INFERRED",
    "MEMORIES",
    "EVENTS",
    "EXPERIENCE",
    "NOTES",
    "META",
    "PROGRAM",
    "PUBLIC",
    "SCHEMA",
    "SKOLEM_PREFIX",
    "STORE_NODE",
    "TRANSCRIPTS",
]

STORE_NODE = NamedNode("urn:reckon:store")
GENERATION = NamedNode("urn:reckon:generation")
INCARNATION = NamedNode("urn:reckon:incarnation")
"""``<urn:reckon:store> <urn:reckon:incarnation> "hex"`` in :data:`META`: random per
created / imported tenant, the same as ``meta.json``'s ``incarnation``."""
"""``<urn:reckon:store> <urn:reckon:generation> n`` in :data:`META`: bumped by every write."""

SKOLEM_PREFIX = "https://reckon.dev/.well-known/genid/"
"""Blank nodes are stored as Skolem IRIs (RDF 1.1 Concepts, section 3.5 "Replacing Blank
Nodes with IRIs") because a SPARQL update cannot name an existing blank node; they are
turned back into blank nodes when read into the reasoner and when exported."""
