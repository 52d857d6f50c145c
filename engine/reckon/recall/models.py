"""The recall layer's result types: what a context bundle and a search return
(``reckon`` exports :class:`ContextBundle`, :class:`BundleItem`, :class:`SearchHit`).

Pydantic models (JSON-serialisable with ``model_dump(mode="json")``); built by
:class:`reckon.recall.bundle.TenantRecall`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from typing import Literal as TLiteral

from pydantic import BaseModel, Field, field_serializer

from reckon.memory.models import Memory
from reckon.recall.rank import ScoreExplanation
from reckon.vocab import json_decimals

__all__ = [
    "BundleBlock",
    "BundleConflict",
    "BundleItem",
    "BusinessLine",
    "ContextBundle",
    "SearchHit",
    "block_label",
]

MAX_ITEM_CHARS = 400
"""Default length of one item's content in the bundle (characters)."""
_MAX_ITEM_CHARS = MAX_ITEM_CHARS


class BundleItem(BaseModel):
    """One memory in the bundle.

    :ivar id: the memory id (32 hex digits; what the tools take); ``iri`` its IRI.
    :ivar importance_name: ``"High"`` (4) or ``"Critical"`` (5).
    :ivar status: derived statuses (``Memory.status``); ``status_text`` their rendering.
    :ivar similarity: cosine to the conversation (``None`` when not ranked by similarity).
    :ivar overridden_by: id of the more specific memory that takes precedence, if any.
    """

    id: str
    iri: str
    block: str
    label: str
    content: str
    kind: str
    scope: str
    importance: int
    importance_name: str
    confidence: float
    owner: str | None = None
    teams: list[str] = Field(default_factory=list)
    author: str | None = None
    subclass: str | None = None
    subclass_iri: str | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    status: dict[str, Any] = Field(default_factory=dict)
    status_text: str | None = None
    similarity: float | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    expires_at: datetime | None = None
    overridden_by: str | None = None
    overrides: list[str] = Field(default_factory=list)

    @field_serializer("properties", "status", when_used="json")
    def _exact_decimals(self, v: dict[str, Any]) -> dict[str, Any]:
        """xsd:decimal values as exact strings in JSON (see :class:`reckon.memory.models.Memory`)."""
        return dict(json_decimals(v))

    def line(self, max_chars: int = _MAX_ITEM_CHARS) -> str:
        """The item as one Markdown list line (content shortened to ``max_chars``).

        Label and content are folded onto the one line (every run of whitespace,
        newlines and Unicode line separators included, becomes one space), so text a
        user or an agent stored can never open a section of its own in the prompt.
        """
        label = _one_line(self.label)
        content = _one_line(self.content)
        if content and content != label:
            if len(content) > max_chars:
                content = content[: max_chars - 1].rstrip() + "…"
            text = f"{label}: {content}"
        else:
            text = label
        who = [self.importance_name, self.scope]
        if self.scope == "team" and self.teams:
            who[-1] = f"team {', '.join(self.teams)}"
        if self.owner:
            who.append(f"owner {self.owner}")
        if self.author and self.author != self.owner:
            who.append(f"set by {self.author}")
        if self.expires_at is not None:
            who.append(f"expires {self.expires_at.strftime('%Y-%m-%d')}")
        out = f"- [{self.id}] {text} ({'; '.join(who)})"
        if self.status_text:
            out += f" — status: {self.status_text}"
        if self.overrides:
            out += f" — takes precedence over [{'], ['.join(self.overrides)}]"
        if self.overridden_by:
            out += f" — OVERRIDDEN by [{self.overridden_by}] (more specific scope)"
        return out


def _one_line(text: str) -> str:
    """``text`` with every whitespace run (``\\n``, ``\\r``, U+2028 ...) folded to one space."""
    return " ".join(text.split())


class BundleBlock(BaseModel):
    """A labelled group of items: a subclass block or a kind block.

    :ivar key: subclass CURIE-ish key (``"subclass:<iri>"``) or the kind (``"objective"`` ...).
    :ivar omitted: items of this block dropped to fit the budget.
    """

    key: str
    label: str
    items: list[BundleItem] = Field(default_factory=list)
    omitted: int = 0


class BusinessLine(BaseModel):
    """One line of live business data from the live context (KPI, account, subscription)."""

    kind: str
    iri: str
    text: str


class BundleConflict(BaseModel):
    """Two bundle memories of different scopes that disagree (seed §4).

    :ivar authoritative: id of the more specific memory (shown as the one to apply).
    :ivar overridden: id of the less specific one.
    :ivar key: what they are both about (``"PerformanceTargetMemory metric=ROAS"`` or
        ``"similar text (cosine 0.62)"``).
    :ivar kind: ``"deliberate"`` or ``"accidental"`` (see the module docstring).
    """

    authoritative: str
    overridden: str
    authoritative_scope: str
    overridden_scope: str
    key: str
    kind: TLiteral["deliberate", "accidental"]
    reason: str

    def line(self) -> str:
        what = ("deliberate override" if self.kind == "deliberate"
                else "ACCIDENTAL? confirm with the user which one applies")
        return (f"- [{self.authoritative}] ({self.authoritative_scope}) takes precedence over "
                f"[{self.overridden}] ({self.overridden_scope}) on {self.key}: {what} ({self.reason})")


class ContextBundle(BaseModel):
    """What a fresh conversation starts with (seed 003 §6, §8).

    :ivar blocks: non-empty blocks in display order (subclass blocks, then objectives,
        preferences, facts, context).
    :ivar business: live business data lines.
    :ivar conflicts: scope conflicts, authoritative first.
    :ivar omitted: items dropped to fit ``budget_chars``, by block label (plus
        ``"business"`` and ``"conflicts"`` when lines of those were dropped).
    :ivar omitted_total: sum of ``omitted``.
    :ivar capped: eligible items left out by the per-scope guardrail cap, by scope.
    :ivar ranking: how items are ordered inside blocks (similarity or the fallback, and why).
    :ivar text: the rendered prompt text (``len(text) <= budget_chars``).
    """

    tenant: str
    principal: str
    generated_at: datetime
    clock: datetime | None = None
    budget_chars: int
    blocks: list[BundleBlock] = Field(default_factory=list)
    business: list[BusinessLine] = Field(default_factory=list)
    conflicts: list[BundleConflict] = Field(default_factory=list)
    omitted: dict[str, int] = Field(default_factory=dict)
    omitted_total: int = 0
    capped: dict[str, int] = Field(default_factory=dict)
    ranking: str
    text: str = ""

    def render(self) -> str:
        """The text an agent puts in its prompt (``len <= budget_chars``)."""
        return self.text

    def items(self) -> list[BundleItem]:
        """Every item shown, block by block."""
        return [it for b in self.blocks for it in b.items]

    def ids(self) -> list[str]:
        """Ids of the items shown."""
        return [it.id for it in self.items()]

    def item(self, memory_id: str) -> BundleItem:
        """The shown item with this id. :raises KeyError: when it is not in the bundle."""
        for it in self.items():
            if it.id == memory_id:
                return it
        raise KeyError(memory_id)


class SearchHit(BaseModel):
    """One search result: the memory, its score and (on request) the score components."""

    memory: Memory
    score: float
    explanation: ScoreExplanation | None = None




def block_label(class_label: str | None, local_name: str) -> str:
    """Block title of a subclass from its ``rdfs:label``: drop a trailing "memory",
    capitalise, pluralise the last word ("budget constraint memory" -> "Budget
    constraints"; "hiring criteria memory" -> "Hiring criteria")."""
    text = (class_label or re.sub(r"(?<!^)(?=[A-Z])", " ", local_name).lower()).strip()
    text = re.sub(r"\s*memory$", "", text, flags=re.IGNORECASE).strip() or text
    words = text.split()
    last = words[-1]
    if last.lower().endswith(("s", "a", "ia")) or not last.isalpha():
        pass
    elif last.lower().endswith("y") and len(last) > 1 and last[-2].lower() not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last = last + "s"
    words[-1] = last
    out = " ".join(words)
    return out[:1].upper() + out[1:]


