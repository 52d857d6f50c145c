"""Knowledge indexing: a document chunked into memories that search finds and cites (issue
15 item 7; seed 002 "knowledge": documents chunked around 1,400 characters with 180
overlap).

:func:`index_document` splits the text with ``semantic-text-splitter``
(https://github.com/benbrandt/text-splitter: splits at the largest semantic unit that fits
-- sections, paragraphs, sentences, words -- and gives each chunk's character offset;
Markdown-aware for ``.md`` documents) and writes, in one transaction
(``Tenant.remember_many``: all or nothing):

* one ``ty:DocumentMemory`` (``location``, ``document_key`` = SHA-256 of location and
  text, ``chunk_count``), and
* one ``ty:ChunkMemory`` per chunk (its text as content; ``document_key``,
  ``chunk_position`` 0.., ``chunk_start`` / ``chunk_end`` character offsets into the text),

and the rule ``rule:chunk-part-of`` (``rules/types.srl``) derives ``?chunk ty:partOf
?document``. Chunks are importance 3 (Medium) by default: the long tail that ``search``
finds, not preloaded into the bundle; a search hit on a chunk carries
:attr:`~reckon.recall.models.SearchHit.citation` (``"handbook.md, chunk 3 of 12,
characters 2,440-3,820"``).

Indexing the same location and text again writes nothing and returns what is there;
new text at the same location supersedes the old document and its chunks (history keeps
them).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from reckon._errors import InvalidInput
from reckon.memory.models import Memory, Principal

__all__ = ["CHUNK_CHARS", "CHUNK_OVERLAP", "IndexedDocument", "chunk_text", "index_document"]

#: Chunk size (characters) and overlap (seed 002: "chunks around 1400 characters with 180 overlap").
CHUNK_CHARS = 1400
CHUNK_OVERLAP = 180
#: Largest document indexed at once (characters).
MAX_DOCUMENT_CHARS = 5_000_000


class IndexedDocument(BaseModel):
    """A document and its chunks, as indexed (chunks in position order)."""

    document: Memory
    chunks: list[Memory]
    key: str
    location: str
    written: bool

    def to_dict(self) -> dict[str, Any]:
        return {"document": self.document.model_dump(mode="json"), "key": self.key, "location": self.location,
                "written": self.written, "chunks": [
                    {"id": c.id, "position": c.properties.get("chunkPosition"), "start": c.properties.get("chunkStart"),
                     "end": c.properties.get("chunkEnd"), "text": c.content} for c in self.chunks]}


def chunk_text(text: str, *, markdown: bool = False, chunk_chars: int = CHUNK_CHARS,
               overlap: int = CHUNK_OVERLAP) -> list[tuple[int, str]]:
    """``[(start offset in characters, chunk text)]`` of ``text``: chunks of at most
    ``chunk_chars`` characters overlapping by up to ``overlap``, cut at the largest
    semantic unit that fits (``semantic_text_splitter``).

    :raises InvalidInput: for a bad size or overlap.
    """
    if chunk_chars < 100 or not 0 <= overlap < chunk_chars:
        raise InvalidInput(f"chunk_chars >= 100 and 0 <= overlap < chunk_chars are required, got {chunk_chars}, "
                           f"{overlap}", field="chunk_chars")
    from semantic_text_splitter import MarkdownSplitter, TextSplitter

    splitter = (MarkdownSplitter if markdown else TextSplitter)(chunk_chars, overlap=overlap)
    return [(int(i), str(c)) for i, c in splitter.chunk_indices(text)]


def _label(title: str, pos: int, n: int) -> str:
    return f"{title} (chunk {pos + 1} of {n})"[:500]


def index_document(tenant: Any, text: str | None = None, *, principal: Principal, location: str | None = None,
                   path: str | Path | None = None, title: str | None = None, scope: str = "user",
                   importance: int = 3, chunk_chars: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> IndexedDocument:
    """Index a document (module docstring). Give ``text`` (and a ``location`` naming
    it) or a ``path`` to read (UTF-8).

    :param scope: ``user`` (the principal's), ``team`` or ``company`` (operators).
    :param importance: of the chunks (2-5; default 3: searched, not preloaded).
    :returns: :class:`IndexedDocument` (``written`` False when it was indexed already).
    :raises InvalidInput: no text, an unreadable or non-UTF-8 file, an empty or too long
        document, a bad scope or importance.
    :raises NotAuthorized: a member indexing into team or company scope.
    """
    if not isinstance(principal, Principal):
        raise InvalidInput("principal: a reckon Principal is required", field="principal")
    if (text is None) == (path is None):
        raise InvalidInput("give exactly one of text or path", field="text")
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"path: cannot read {p.name!r} as UTF-8 text: {exc}", field="path") from None
        location = location or str(p)
    assert text is not None
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("text: a non-empty document is required", field="text")
    if len(text) > MAX_DOCUMENT_CHARS:
        raise InvalidInput(f"text: at most {MAX_DOCUMENT_CHARS:,} characters, got {len(text):,}", field="text")
    if not location or not isinstance(location, str) or len(location) > 2000:
        raise InvalidInput("location: a string of 1 to 2,000 characters naming the document is required",
                           field="location")
    title = (title or Path(location).name or location).strip()[:400] or location[:400]
    if isinstance(importance, bool) or importance not in (2, 3, 4, 5):
        raise InvalidInput(f"importance: 2-5 is required, got {importance!r}", field="importance")
    key = hashlib.sha256(f"{location}\n{text}".encode()).hexdigest()

    existing = [m for m in tenant.memories(subclass="DocumentMemory") if m.properties.get("location") == location]
    for d in existing:
        if d.properties.get("documentKey") == key:
            return IndexedDocument(document=d, chunks=_chunks_of(tenant, key), key=key, location=location,
                                   written=False)
    chunks = chunk_text(text, markdown=location.lower().endswith((".md", ".markdown")), chunk_chars=chunk_chars,
                        overlap=overlap)
    if not chunks:
        raise InvalidInput("text: nothing to index (no chunk)", field="text")
    n = len(chunks)
    source = "import" if principal.is_operator else "agent_tool"
    # the new document supersedes the old one, and new chunk i the old chunk at position
    # i (the last new chunk also the old ones past the new count): an explicit replacement
    # is never merged into the same-label old chunk (seed 003 §9), so every new chunk is
    # a new active memory and every old one is superseded, with its lineage in history
    old_docs = [d.id for d in existing]
    old_chunks: dict[int, list[str]] = {}
    for d in existing:
        for c in _chunks_of(tenant, d.properties["documentKey"]):
            old_chunks.setdefault(int(c.properties.get("chunkPosition", 0)), []).append(c.id)
    doc_item: dict[str, Any] = dict(
        kind="fact", scope=scope, importance=importance, source=source, label=title,
        content=f"Document {title} ({location}): {n} chunk(s), {len(text):,} characters.",
        subclass="DocumentMemory", properties={"documentKey": key, "location": location, "chunkCount": n})
    if old_docs:
        doc_item["supersedes"] = old_docs
    items = [doc_item]
    for i, (start, chunk) in enumerate(chunks):
        item: dict[str, Any] = dict(
            kind="fact", scope=scope, importance=importance, source=source, label=_label(title, i, n),
            content=chunk, subclass="ChunkMemory",
            properties={"documentKey": key, "chunkPosition": i, "chunkStart": start, "chunkEnd": start + len(chunk)})
        replaced = list(old_chunks.get(i, []))
        if i == n - 1:
            replaced += [c for pos, ids in sorted(old_chunks.items()) if pos >= n for c in ids]
        if replaced:
            item["supersedes"] = replaced
        items.append(item)
    written = tenant.remember_many(items, principal=principal, conflicts="keep_both")
    doc = written[0]
    return IndexedDocument(document=doc, chunks=[c for c in written[1:] if c is not None], key=key,
                           location=location, written=True)


def _chunks_of(tenant: Any, key: str) -> list[Memory]:
    out = [m for m in tenant.memories(subclass="ChunkMemory") if m.properties.get("documentKey") == key]
    return sorted(out, key=lambda m: int(m.properties.get("chunkPosition", 0)))


def citation(chunk: Memory, document: Memory | None) -> str:
    """``"<location>, chunk i of n, characters a-b"`` of a chunk memory."""
    p = chunk.properties
    where = document.properties.get("location") if document is not None else None
    n = document.properties.get("chunkCount") if document is not None else None
    pos = int(p.get("chunkPosition", 0)) + 1
    return (f"{where or 'document ' + str(p.get('documentKey', ''))[:12]}, chunk {pos}"
            + (f" of {n}" if n else "") + f", characters {int(p.get('chunkStart', 0)):,}-{int(p.get('chunkEnd', 0)):,}")
