"""One extraction run over a conversation's unprocessed tail (seed 003 §5): read the tail
after the watermark, pull the known related memories, ask the extractor, write what it
proposes through the validated write path (``source="extraction"``, user scope, owned
by the person who said it, ``rk:derivedFrom`` its turns), and advance the watermark --
all memories and the watermark in ONE store transaction.

**Idempotent**: a re-run after a crash before the commit finds the same tail and writes
it once; a re-run after the commit finds nothing after the watermark and writes nothing.
So a retried job never writes twice, and a killed worker loses nothing.

Limits (seed 002 "Fact extraction"): at most 5 memories per turn, confidence at least
0.6, content at most 1,000 characters; tool, web and system turns are never read (seed
001 poisoning defence). A proposed memory that would replace a human's memory is not
written (the write path raises ``ConflictPending``: a person must confirm) and is
reported in :attr:`ExtractionResult.skipped`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from reckon._errors import ReckonError
from reckon.capture.candidates import Candidate, Extractor
from reckon.memory.models import Principal

__all__ = ["ExtractionResult", "extract_conversation", "remember_tool_schema"]

log = logging.getLogger("reckon.capture")

MAX_PER_TURN = 5
MIN_CONFIDENCE = 0.6
MAX_CONTENT = 1000


class ExtractionResult(BaseModel):
    """What one run did.

    :ivar through: the watermark after the run (highest turn order processed).
    :ivar written: ids of the memories written (new or restated).
    :ivar skipped: ``(label, reason)`` of proposals not written.
    """

    tenant: str
    conversation: str
    extractor: str
    previous: int
    through: int
    turns_read: int = 0
    written: list[str] = Field(default_factory=list)
    skipped: list[tuple[str, str]] = Field(default_factory=list)


def remember_tool_schema(tenant: Any) -> dict[str, Any]:
    """JSON Schema of the ``remember`` tool's parameters for ``tenant`` (from its ontology
    and shapes, :func:`reckon.api._tools.tool_definitions`)."""
    for d in tenant.tool_definitions(format="openai"):
        fn = d.get("function", d)
        if fn.get("name") == "remember":
            return fn.get("parameters", {})  # type: ignore[no-any-return]
    return {}


def _related(tenant: Any, tail: Sequence[Any], owners: set[str]) -> list[Any]:
    text = " ".join(t.text for t in tail)[-2000:]
    if not text.strip():
        return []
    out: dict[str, Any] = {}
    for owner in sorted(owners):
        try:
            for h in tenant.search(text, principal=Principal(person=owner), k=10, importance="all"):
                out.setdefault(h.memory.id, h.memory)
        except ReckonError:  # search is a hint for the extractor, never a reason to fail
            continue
    return list(out.values())


def extract_conversation(tenant: Any, conversation: str, extractor: Extractor) -> ExtractionResult:
    """Run ``extractor`` over the unprocessed tail of ``conversation`` and commit what it
    proposes with the new watermark (module docstring).

    :raises LLMError: the model call failed (retryable or not); nothing was written.
    :raises UnknownMemory: no such conversation.
    """
    tx = tenant.transcripts
    conv = tx.conversation(conversation)
    mark, tail = tx.tail(conversation)
    result = ExtractionResult(tenant=tenant.id, conversation=conversation, extractor=extractor.name,
                              previous=mark, through=mark, turns_read=len(tail))
    last = conv.last_order
    if last <= mark:
        return result  # nothing new: a retried job ends here
    by_order = {t.order: t for t in tail}
    owners = {t.speaker for t in tail if t.role == "user" and t.speaker}
    candidates: list[Candidate] = []
    if tail:
        known = _related(tenant, tail, owners)
        candidates = extractor.extract(tail, known, remember_tool_schema(tenant))
    per_turn: Counter[int] = Counter()
    items: list[dict[str, Any]] = []
    who: list[Principal] = []
    labels: list[str] = []
    for c in candidates:
        turns = [o for o in c.turns if o in by_order] or ([max(by_order)] if by_order else [])
        owner = c.owner if c.owner in owners else None  # never a person who did not say it
        owner = owner or next((by_order[o].speaker for o in turns if by_order[o].role == "user"), None)
        if owner is None and len(owners) == 1:
            owner = next(iter(owners))
        reason = None
        if owner is None:
            reason = "no person said it"
        elif c.confidence < MIN_CONFIDENCE:
            reason = f"confidence {c.confidence} below {MIN_CONFIDENCE}"
        elif len(c.content) > MAX_CONTENT:
            reason = f"content longer than {MAX_CONTENT} characters"
        elif turns and per_turn[turns[0]] >= MAX_PER_TURN:
            reason = f"more than {MAX_PER_TURN} memories from turn {turns[0]}"
        if reason is not None:
            result.skipped.append((c.label, reason))
            continue
        if turns:
            per_turn[turns[0]] += 1
        item: dict[str, Any] = dict(kind=c.kind, scope="user", owner=owner, importance=c.importance,
                                    source="extraction", label=c.label, content=c.content,
                                    confidence=c.confidence, derived_from=[by_order[o].iri for o in turns])
        if c.subclass:
            item["subclass"] = c.subclass
            item["properties"] = c.properties
        if c.expires_at is not None:
            item["expires_at"] = c.expires_at
        items.append(item)
        who.append(Principal(person=owner))
        labels.append(c.label)

    def watermark(txn: Any) -> None:
        tx.set_watermark(txn, conversation, last)

    memory = tenant.memory
    written: list[Any] = []
    # a proposal the write path refuses (bad property value, shape violation) is dropped
    # and reported; the others are written with the watermark, all in one transaction
    while True:
        try:
            written = memory.remember_many(items, principal=who, conflicts="skip", within=watermark) if items \
                else memory.remember_many([], principal=[], within=watermark)
            break
        except ReckonError as exc:
            i = getattr(exc, "index", None)
            if i is None:
                raise
            result.skipped.append((labels[i], f"{type(exc).__name__}: {exc}"))
            del items[i], who[i], labels[i]
    for lab, m in zip(labels, written):
        if m is None:
            result.skipped.append((lab, "would replace a memory a person wrote: needs confirmation"))
        else:
            result.written.append(m.id)
    try:
        tenant._indexed_many([m for m in written if m is not None])  # noqa: SLF001 - the facade's recall hook
    except Exception:  # noqa: BLE001
        log.warning("recall indexing after extraction failed", exc_info=True)
    result.through = last
    return result
