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
    "ContextLedger",
    "LedgerBlock",
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


class LedgerBlock(BaseModel):
    """One priority block of the context ledger (seed 001 "context ledger": blocks compete
    by priority, the lowest are dropped first under pressure).

    :ivar key: ``"header"``, ``"critical"``, ``"high"``, ``"lower"`` (below High, when a
        tenant lowered the floor), ``"business"``, ``"conflicts"`` or ``"footer"``.
    :ivar priority: higher survives longer (header 100, footer 95, critical 90, high 70,
        lower 60, business 50, conflicts 40).
    :ivar shown: items or lines of the block in the text; ``omitted`` dropped to fit.
    :ivar size: what the shown part costs, in the ledger's unit (a section title and the
        separating newlines are counted with the block's first line).
    :ivar form: the header's and footer's form (``"full"``, ``"short"``, ``"minimal"``);
        ``"compact"`` for Critical items whose content was shortened to keep them.
    """

    key: str
    priority: int
    shown: int = 0
    omitted: int = 0
    size: int = 0
    form: str | None = None


class ContextLedger(BaseModel):
    """What the bundle spent its budget on and what it left out, and why (seed 001
    "context ledger", seed 002 "pre-turn retrieval": budget and omitted counts).

    :ivar unit: ``"chars"`` or ``"tokens"``; ``measure`` names the tokenizer
        (:mod:`reckon.recall.tokens`).
    :ivar budget: the limit, in ``unit``; ``used`` what the text costs (``<= budget``).
    :ivar blocks: the priority blocks, highest priority first.
    :ivar omitted: items and lines dropped to fit the budget, by block label (as
        :attr:`ContextBundle.omitted`).
    :ivar capped: eligible memories left out by the ``rk:liveContextCap`` guardrail, by
        scope; ``capped_importance`` the same by importance name (``"Critical"`` ...).
    :ivar cap: the guardrail's value (``rk:settings rk:liveContextCap``).
    """

    unit: TLiteral["chars", "tokens"]
    measure: str
    budget: int
    used: int
    blocks: list[LedgerBlock] = Field(default_factory=list)
    omitted: dict[str, int] = Field(default_factory=dict)
    capped: dict[str, int] = Field(default_factory=dict)
    capped_importance: dict[str, int] = Field(default_factory=dict)
    cap: int | None = None

    def line(self) -> str:
        """One-line summary (``reckon context`` prints it)."""
        parts = [f"{self.used}/{self.budget} {self.unit}"]
        dropped = sum(self.omitted.values())
        if dropped:
            parts.append(f"{dropped} omitted for the budget ("
                         + ", ".join(f"{k} {v}" for k, v in self.omitted.items()) + ")")
        capped = sum(self.capped.values())
        if capped:
            parts.append(f"{capped} left out by the live-context cap {self.cap} ("
                         + ", ".join(f"{k} {v}" for k, v in self.capped_importance.items()) + ")")
        return "; ".join(parts)


class ContextBundle(BaseModel):
    """What a fresh conversation starts with (seed 003 §6, §8).

    :ivar blocks: non-empty blocks in display order (subclass blocks, then objectives,
        preferences, facts, context).
    :ivar business: live business data lines.
    :ivar conflicts: scope conflicts, authoritative first.
    :ivar omitted: items dropped to fit ``budget_chars``, by block label (plus
        ``"business"`` and ``"conflicts"`` when lines of those were dropped).
    :ivar omitted_total: sum of ``omitted``.
    :ivar capped: eligible items left out by the per-scope guardrail cap
        (``rk:liveContextCap``), by scope (company included); never counted in
        ``omitted``.
    :ivar budget_tokens: the budget in tokens when one was given (then ``budget_chars``
        is None); :attr:`ledger` says what the text costs in that unit.
    :ivar ranking: how items are ordered inside blocks (similarity or the fallback, and why).
    :ivar ledger: the context ledger (budget, priority blocks, what was left out).
    :ivar text: the rendered prompt text (within the budget).
    """

    tenant: str
    principal: str
    generated_at: datetime
    clock: datetime | None = None
    budget_chars: int | None = None
    budget_tokens: int | None = None
    blocks: list[BundleBlock] = Field(default_factory=list)
    business: list[BusinessLine] = Field(default_factory=list)
    conflicts: list[BundleConflict] = Field(default_factory=list)
    omitted: dict[str, int] = Field(default_factory=dict)
    omitted_total: int = 0
    capped: dict[str, int] = Field(default_factory=dict)
    capped_importance: dict[str, int] = Field(default_factory=dict)
    cap: int | None = None
    ranking: str
    ledger: ContextLedger | None = None
    text: str = ""

    def render(self) -> str:
        """The text an agent puts in its prompt (within the budget)."""
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
    """One search result: the memory, its score and (on request) the score components.

    :ivar document: for a chunk of an indexed document (``ty:ChunkMemory``,
        :mod:`reckon.knowledge`), the id of its document memory (``ty:partOf``);
        ``citation`` names the document and the chunk's position and character span.
    :ivar expanded_from: for a graph neighbour added by ``search(..., expand="graph")``,
        the id of the direct hit it was reached from (``None`` for a direct hit).
    :ivar via: the edge that brought it: ``partOf`` (the hit is a chunk of this
        document), ``hasPart`` (a chunk of the hit's document), ``supersedes`` /
        ``supersededBy`` (supersession lineage), ``derivedFrom`` (extracted from the same
        turn as the hit).
    """

    memory: Memory
    score: float
    explanation: ScoreExplanation | None = None
    document: str | None = None
    citation: str | None = None
    expanded_from: str | None = None
    via: str | None = None




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


