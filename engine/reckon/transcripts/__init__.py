"""Transcripts: conversations and turns as graph data (ontology/agent.ttl), recorded
after each turn off the reply's path (seed 002 "Post-turn persistence"), searchable, and
the provenance of extracted memories (``rk:derivedFrom``)."""

from reckon.transcripts.models import ROLES, Conversation, Turn, TurnHit, TurnInput, parse_turn
from reckon.transcripts.service import TranscriptService, agent_iri, conversation_iri, turn_iri

__all__ = [
    "ROLES",
    "Conversation",
    "TranscriptService",
    "Turn",
    "TurnHit",
    "TurnInput",
    "agent_iri",
    "conversation_iri",
    "parse_turn",
    "turn_iri",
]
