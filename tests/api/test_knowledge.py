"""Knowledge indexing through ``Tenant.index_document`` (issue 15 item 7; seed 002
"knowledge": chunks around 1,400 characters with 180 overlap); REST and MCP in
tests/server/test_knowledge_serving.py, the CLI in tests/cli/test_index_verb.py.

The oracle is the document itself: every chunk is exactly ``text[start:end]``, at most
1,400 characters, in order; together they cover the text; the rule ``chunk-part-of``
links each chunk to its document (golden case); a search for a sentence of the document
returns the chunk holding it, citing the document and the chunk's position."""

from __future__ import annotations

from pathlib import Path

import pytest

from reckon._errors import InvalidInput, NotAuthorized
from reckon.api import Engine, Principal
from tests.conftest import embedder_env

README = Path(__file__).resolve().parents[2] / "README.md"
ANN = Principal(person="ann", teams=["growth"])
OPS = Principal.operator(person="dana", teams=["growth"])


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with embedder_env("hashing"):
        yield Engine(tmp_path_factory.mktemp("knowledge"), jobs=False)


_n = iter(range(1000))


@pytest.fixture
def tenant(engine):
    t = engine.create_tenant(f"k{next(_n)}")
    t.add_team("growth")  # ANN's and OPS's team
    return t


def test_a_document_becomes_chunks_that_cover_it_and_belong_to_it(tenant):
    text = README.read_text(encoding="utf-8")
    d = tenant.index_document(path=README, principal=ANN)
    assert d.written and d.location.endswith("README.md") and len(d.chunks) >= 5
    assert d.document.subclass == "DocumentMemory" and d.document.properties["chunkCount"] == len(d.chunks)
    covered = 0
    for i, c in enumerate(d.chunks):
        p = c.properties
        assert p["chunkPosition"] == i and c.subclass == "ChunkMemory" and c.importance == 3
        assert c.content == text[p["chunkStart"]:p["chunkEnd"]] and len(c.content) <= 1400
        assert p["chunkStart"] <= covered + 1 or text[covered:p["chunkStart"]].strip() == ""  # no gap with text
        covered = max(covered, p["chunkEnd"])
        assert c.status["partOf"] == d.document.id  # rule:chunk-part-of (golden: premise -> derived link)
    assert text[covered:].strip() == ""
    again = tenant.index_document(path=README, principal=ANN)
    assert not again.written and again.document.id == d.document.id and [c.id for c in again.chunks] == [
        c.id for c in d.chunks]


def test_search_finds_and_cites_the_chunk(tenant):
    d = tenant.index_document(path=README, principal=ANN, title="Reckon README")
    target = next(c for c in d.chunks if "SPARQL" in c.content)
    sentence = next(s for s in target.content.split(". ") if "SPARQL" in s and len(s) > 40)
    hits = tenant.search(sentence, principal=ANN, k=5)
    hit = next(h for h in hits if h.memory.id == target.id)
    n, pos = len(d.chunks), target.properties["chunkPosition"]
    assert hit.document == d.document.id
    assert hit.citation == (f"{d.location}, chunk {pos + 1} of {n}, characters "
                            f"{target.properties['chunkStart']:,}-{target.properties['chunkEnd']:,}")
    assert hit.memory.label == f"Reckon README (chunk {pos + 1} of {n})"
    assert not tenant.search(sentence, principal=Principal(person="lee"), k=5)  # ann's, not lee's


def test_new_text_at_the_same_location_supersedes_the_old_document(tenant):
    first = tenant.index_document("Alpha paragraph one.\n\nAlpha paragraph two.", principal=ANN, location="notes.txt")
    second = tenant.index_document("Beta paragraph, replaced.", principal=ANN, location="notes.txt")
    assert second.written and second.key != first.key
    assert not tenant.get(first.document.id).active
    assert tenant.get(first.document.id).superseded_by == [second.document.id]
    new_ids = {c.id for c in second.chunks}
    for m in first.chunks:  # each old chunk is replaced by a new chunk, never by the document
        old = tenant.get(m.id)
        assert not old.active and old.superseded_by and set(old.superseded_by) <= new_ids
    assert [m.id for m in tenant.memories(subclass="DocumentMemory")] == [second.document.id]
    assert {c.id for c in tenant.memories(subclass="ChunkMemory")} == new_ids
    assert all(tenant.get(i).active for i in new_ids)


def test_an_edited_document_keeps_every_new_chunk_searchable(tenant):
    """Same location, same number of chunks, one word changed: the chunks' labels are
    the same as before, and the new chunks must still be new active memories (not merged
    into the old same-label chunk and then superseded with it)."""
    text = "# Refunds\n\nRefunds over $500 need approval from finance within 48 hours.\n"
    first = tenant.index_document(text, principal=ANN, location="pol.md")
    second = tenant.index_document(text.replace("48 hours", "24 hours"), principal=ANN, location="pol.md")
    assert second.written and len(second.chunks) == len(first.chunks)
    assert {c.id for c in second.chunks}.isdisjoint({c.id for c in first.chunks})
    live = tenant.memories(subclass="ChunkMemory")
    assert [c.content for c in live] == [c.content for c in second.chunks]
    assert all("24 hours" in c.content or "Refunds" not in c.content for c in live)
    assert all(not tenant.get(c.id).active for c in first.chunks)
    hits = tenant.search("who approves refunds over $500", principal=ANN, k=5)
    assert any("24 hours" in h.memory.content for h in hits)
    assert not any("48 hours" in h.memory.content for h in hits)
    history = tenant.history(first.chunks[0].id)
    assert history[-1].id in {c.id for c in second.chunks}


def test_bad_documents_are_refused_and_nothing_is_written(tenant):
    before = len(tenant.memories(active_only=False))
    for kw, field in ((dict(text="   ", location="x"), "text"), (dict(text="a"), "location"),
                      (dict(text="a", location="x", path=README), "text"),
                      (dict(text="a", location="x", importance=1), "importance")):
        with pytest.raises(InvalidInput) as e:
            tenant.index_document(principal=ANN, **kw)
        assert e.value.field == field
    with pytest.raises(NotAuthorized):
        tenant.index_document("Company handbook.", principal=ANN, location="h.txt", scope="company")
    assert len(tenant.memories(active_only=False)) == before
    ok = tenant.index_document("Company handbook.", principal=OPS, location="h.txt", scope="company")
    assert ok.document.source == "import" and ok.chunks[0].scope == "company"
