"""Pydantic models of transcripts: the turn a caller records and the turn read back
(ontology/agent.ttl, shapes/agent.ttl)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reckon._errors import InvalidInput
from reckon.store.terms import text_fault

__all__ = ["ROLES", "Conversation", "Role", "Turn", "TurnHit", "TurnInput", "parse_turn"]

Role = Literal["user", "assistant", "tool", "web", "system"]
ROLES: tuple[str, ...] = ("user", "assistant", "tool", "web", "system")
#: Roles extraction reads (seed 001 poisoning defence: tool and web output is stored,
#: never auto-ingested). The ontology says the same with ``ag:ingestible``.
INGESTIBLE: frozenset[str] = frozenset({"user", "assistant"})


class TurnInput(BaseModel):
    """One turn as the caller records it.

    :ivar conversation: the conversation id (any non-empty string up to 200 characters:
        a chat thread id, ``"conv-26"``).
    :ivar text: what was said, verbatim (at most 100,000 characters; may be empty only
        when ``caption`` is given).
    :ivar role: ``user`` (a person), ``assistant`` (the agent), ``tool`` / ``web``
        (stored, searchable, never extracted from), ``system``.
    :ivar speaker: person id (role user; default the principal's person) or agent id
        (role assistant; default ``"assistant"``); tool, web and system turns have none.
    :ivar at: when it was said (naive = UTC; default now).
    :ivar order: position in the conversation (default: after the last turn).
    :ivar caption: description of an image shared in the turn.
    :ivar external_id: the turn's id where it came from (a message id, ``"D3:7"``);
        recording a turn whose external id the conversation already has is a no-op.
    """

    model_config = ConfigDict(extra="forbid")

    conversation: str = Field(min_length=1, max_length=200)
    text: str = Field(max_length=100_000)
    role: Role = "user"
    speaker: str | None = Field(default=None, min_length=1, max_length=200)
    at: datetime | None = None
    order: int | None = Field(default=None, ge=0, le=10**9)
    caption: str | None = Field(default=None, max_length=10_000)
    external_id: str | None = Field(default=None, min_length=1, max_length=500)

    @field_validator("conversation")
    @classmethod
    def _conv(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("conversation must not be blank")
        return v

    @field_validator("at")
    @classmethod
    def _aware(cls, v: datetime | None) -> datetime | None:
        if v is not None and v.tzinfo is None:
            return v.replace(tzinfo=UTC)
        return v


class Turn(BaseModel):
    """A recorded turn.

    :ivar id: ``"<conversation>/<order>"``; :ivar iri: its IRI
        (``urn:reckon:<tenant>:conversation:<pct-encoded id>/turn/<order>``), what
        ``Memory.derived_from`` lists.
    """

    id: str
    iri: str
    conversation: str
    order: int
    role: Role
    speaker: str | None = None
    at: datetime
    text: str
    caption: str | None = None
    external_id: str | None = None


class Conversation(BaseModel):
    """A conversation: its id, how many turns, the last order and time, participants
    (derived) and the extraction watermark (``-1`` = nothing extracted yet)."""

    id: str
    iri: str
    turns: int
    last_order: int
    last_at: datetime | None = None
    participants: list[str] = Field(default_factory=list)
    extracted_through: int = -1

    @property
    def unprocessed(self) -> int:
        """Turns recorded after the extraction watermark."""
        return max(0, self.last_order - self.extracted_through)


class TurnHit(BaseModel):
    """One transcript search result."""

    turn: Turn
    score: float


_TEXT_FIELDS = ("conversation", "text", "speaker", "caption", "external_id")
"""The text fields of a turn: each must be text RDF can hold."""


def parse_turn(data: Any, index: int | None = None) -> TurnInput:
    """A :class:`TurnInput` from a dict (or a TurnInput).

    :raises InvalidInput: naming the field (and ``turns[index]`` in a batch).
    """
    if isinstance(data, TurnInput):
        return data
    where = f"turns[{index}]." if index is not None else ""
    if not isinstance(data, dict):
        raise InvalidInput(f"{where.rstrip('.') or 'turn'}: expected an object with conversation and text",
                           field=f"{where}turn".strip("."))
    for k in _TEXT_FIELDS:
        v = data.get(k)
        fault = text_fault(v) if isinstance(v, str) else None
        if fault is not None:  # the store cannot hold it (reckon.store.terms.check_text)
            raise InvalidInput(f"{where}{k}: {fault}", field=f"{where}{k}")
    try:
        return TurnInput(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "turn"
        raise InvalidInput(f"{where}{loc}: {err.get('msg')}", field=f"{where}{loc}") from None
    except TypeError as exc:
        raise InvalidInput(f"{where}turn: {exc}", field=f"{where}turn") from None
