"""What an extractor proposes: a memory to write, with the turns it came from."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Candidate", "Extractor"]


class Candidate(BaseModel):
    """A memory an extractor proposes (the fields of ``Tenant.remember`` that an
    extractor may set; source is always ``extraction``, scope ``user``, owner the person
    who said it).

    :ivar turns: orders of the turns it was extracted from (``rk:derivedFrom``).
    :ivar owner: person id of the speaker the memory is about (default: the speaker of
        its first turn).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["preference", "fact", "objective", "context"]
    label: str = Field(min_length=1, max_length=500)
    content: str = Field(min_length=1, max_length=20_000)
    importance: int = Field(3, ge=1, le=5)
    confidence: float = Field(0.7, ge=0.0, le=1.0)
    subclass: str | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    expires_at: datetime | None = None
    turns: list[int] = Field(default_factory=list)
    owner: str | None = None


@runtime_checkable
class Extractor(Protocol):
    """Turns the unprocessed tail of a conversation into candidate memories.

    ``tail``: the ingestible turns (user and assistant; never tool or web output),
    oldest first. ``known``: active memories related to the tail (so the extractor does
    not repeat them). ``tool_schema``: the JSON Schema of the ``remember`` tool generated
    from the tenant's ontology and shapes.
    """

    name: str

    def extract(self, tail: Sequence[Any], known: Sequence[Any], tool_schema: dict[str, Any]) -> list[Candidate]:
        ...
