"""The context bundle and on-demand search of one tenant (seed 003 §6, §8; seed 002
"pre-turn retrieval"; seed 001 "stable salient core", "context ledger").

:class:`TenantRecall` is what ``Tenant.context`` / ``Tenant.search`` delegate to.

**Bundle** (:meth:`TenantRecall.context`), read fresh from the store on every call (no
caching across calls, seed §6: a memory written in one chat is visible in the next):

* *eligibility is structural* — the company memories the rules put in the live context
  (``rk:liveContext rk:liveMember ?m``: active, company scope, importance >= the
  ``rk:liveImportanceFloor``, confidence >= ``rk:confidenceFloor``, capped by the
  ``rk:liveContextCap`` guardrail), plus the principal's own user-scope memories and their
  teams' team-scope memories that are ``rk:ActiveMemory`` with the same importance and
  confidence floors (capped by the same ``rk:liveContextCap`` per scope, same order as the
  rule: importance, then newest, then IRI); plus the live business data
  (``rk:liveContext mk:liveKpi / mk:liveAccount / mk:liveSubscription``).
* *blocks* — one per memory subclass (label from the ontology's ``rdfs:label``, e.g.
  "Budget constraints"), then objectives, preferences, facts, context for plain
  memories; each item carries its id, scope, importance name, owner / author and its
  derived status inline (``near_limit — 85 % ($34,000 of $40,000)``).
* *ranking* — inside a block, by cosine similarity of the item's embedding (computed
  after the write by the :class:`~reckon.recall.tenant_index.TenantIndex`) to the recent
  conversation; without a conversation or an embedder, by importance then recency
  (:attr:`ContextBundle.ranking` says which). An item whose vector is not computed yet
  gets similarity 0. Similarity orders, never decides.
* *precedence* (seed §4) — personal over team over company. Two items of different
  scopes conflict when they are the same subclass with equal identifying properties
  (two targets on the same metric, two budgets on the same platform and period), or two
  plain memories the lexical judge (:mod:`reckon.memory.conflicts`, word-count cosine >=
  0.5) finds alike. The more specific item is authoritative; the other stays visible,
  marked ``overridden by``, and the pair is listed in :attr:`ContextBundle.conflicts`
  with ``kind``:

  - ``deliberate`` when the specific memory says so (its label or content matches
    :data:`OVERRIDE_WORDS`: "override", "instead of", "rather than", "regardless",
    "despite", "exception", "unlike") or when it was created after the general one by
    the general one's own author (who therefore knew the rule they were bending);
  - ``accidental`` otherwise: the agent should confirm with the user.

* *budget* — the rendered text never exceeds ``budget_chars`` (>= 500). Items are
  dropped greedily in this order until it fits: High items before any Critical item;
  within a tier, from the least important block first (context, facts, preferences,
  objectives, then subclass blocks), the lowest-ranked (overridden ones count as lowest)
  first; then business lines, then conflict lines, then Critical items the same way. A
  conflict line whose two memories were both dropped goes with them.
  :attr:`ContextBundle.omitted` counts drops per block label (plus ``business`` and
  ``conflicts``) and the text ends with a line saying how many were omitted (seed 002:
  "omitted counts"; seed 001: lower-priority blocks are dropped first under pressure).

**Search** (:meth:`TenantRecall.search`): the long tail. Eligibility from the store:
every hit is read back from the snapshot and kept only if it is ``rk:ActiveMemory``,
visible to the principal (company, their teams', their own) and in the requested tiers
(2-3 by default) and kinds. Ranking by the recall index's hybrid pipeline (BM25 +
embeddings, RRF, recency, MMR; :mod:`reckon.recall.rank`), over the documents whose index
metadata (scope, owner, teams, importance, kind) passes the same filters, as a numpy mask
(:meth:`~reckon.recall.index.RecallIndex.filter_mask`); rejected hits are replaced by
asking the index for more.

**The index follows the store's commits** (:mod:`reckon.recall.tenant_index`): before
every read, and after every write of this process, it re-reads the memories the commits
since its last look touched, whichever process wrote them; so it is right across
processes and after any write path (``conflict_resolution="replace"``, extraction,
import). A write never waits for an embedding: the memory is searchable by keyword at
once and by vector once the background thread has embedded it. The index is a cache of
the store, never the source of eligibility: what search returns is checked against the
store's snapshot.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pyoxigraph import NamedNode

from reckon import vocab as R
from reckon import vocab as V
from reckon._errors import InvalidInput
from reckon.memory import authz
from reckon.memory.conflicts import SIMILARITY_THRESHOLD, cosine_matrix
from reckon.memory.models import IMPORTANCE_NAMES, Memory, Principal
from reckon.recall import render
from reckon.recall import search as _search
from reckon.recall.models import (
    MAX_ITEM_CHARS,
    BundleBlock,
    BundleConflict,
    BundleItem,
    BusinessLine,
    ContextBundle,
    SearchHit,
    block_label,
)
from reckon.recall.precedence import (
    OVERRIDE_WORDS,
    SCOPE_RANK,
    conflict_key,
    deliberate,
)
from reckon.store.graphs import BUSINESS, INFERRED, MEMORIES, SCHEMA

__all__ = [
    "BundleConflict",
    "BundleBlock",
    "BundleItem",
    "BusinessLine",
    "ContextBundle",
    "OVERRIDE_WORDS",
    "SearchHit",
    "TenantRecall",
    "block_label",
]

log = logging.getLogger("reckon.recall")

MK = V.MK
RC = V.RC

_P_KIND = R.rk("kind")
_LIVE_CONTEXT = R.rk("liveContext")
_LIVE_MEMBER = R.rk("liveMember")
_SETTINGS = R.rk("settings")
_CLOCK = R.rk("clock")
_NOW = R.rk("now")

#: Kind blocks, most important first (plain memories; subclass memories get their own
#: blocks, which rank above these).
_KIND_BLOCKS: tuple[tuple[str, str], ...] = (
    ("objective", "Objectives"),
    ("preference", "Preferences"),
    ("fact", "Facts"),
    ("context", "Context"),
)
_MIN_BUDGET = 500
_MAX_ITEM_CHARS = MAX_ITEM_CHARS
_CONVERSATION_TURNS = 6
_CONVERSATION_CHARS = 2000

# Queries are built from constants and from pyoxigraph terms serialised by pyoxigraph
# (``str(NamedNode)``: a validated IRI in N-Triples form, e.g. a person IRI whose id was
# percent-encoded by ``reckon.vocab.person_iri``) and validated integers; never from
# raw strings. (pyoxigraph 0.5 ``substitutions`` are applied after evaluation: binding the
# owner that way is ~10x slower than a constant; measured in bench/bundle.py's setup.)
_PREFIX = V.sparql_prefixes("rk")


# ---------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def _utc(t: datetime | None) -> datetime | None:
    if t is None:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _Node:
    """Asserted and inferred triples of one memory, as the service's reader takes them."""

    __slots__ = ("asserted", "inferred")

    def __init__(self) -> None:
        self.asserted: dict[Any, list[Any]] = defaultdict(list)
        self.inferred: dict[Any, list[Any]] = defaultdict(list)


# ---------------------------------------------------------------------------------------
# the per-tenant recall service
# ---------------------------------------------------------------------------------------


class TenantRecall:
    """Bundle, search and the recall index of one tenant.

    :param store: the tenant's :class:`~reckon.store.TenantStore`.
    :param memory: the tenant's :class:`~reckon.memory.service.MemoryService` (reads
        memories into :class:`~reckon.memory.models.Memory`, resolves class names).
    :param embedder: an :class:`~reckon.recall.embed.Embedder`, a configuration name
        (``"minilm"``, ``"openai"``, ``"hashing"`` ...) or None = ``$RECKON_EMBEDDER``
        (:func:`~reckon.recall.embed.configured_embedder`; named embedders are shared by
        the process's tenants).
    :param directory: where the index persists; default ``<store.path>/recall``.
    :param background: embed in a background thread (False: on the calling thread).
    """

    def __init__(self, store: Any, memory: Any, *, embedder: Any = None, directory: Any = None,
                 background: bool = True) -> None:
        self.store = store
        self.memory = memory
        self.tenant: str = store.tenant_id
        self._embedder = embedder
        self._directory = directory if directory is not None else getattr(store, "path", None)
        if directory is None and self._directory is not None:
            self._directory = self._directory / "recall"
        self._index: Any = None
        self._background = background
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ index
    @property
    def index(self) -> Any:
        """The tenant's :class:`~reckon.recall.tenant_index.TenantIndex` (opened on first
        use: snapshot + the commits since, or a rebuild from the store)."""
        with self._lock:
            if self._index is None:
                from reckon.recall.embed import configured_embedder
                from reckon.recall.tenant_index import TenantIndex

                self._index = TenantIndex(
                    self.store, self._read_docs, memory_prefix=R.memory_prefix(self.tenant),
                    embedder=configured_embedder(self._embedder), directory=self._directory,
                    background=self._background,
                )
            return self._index

    @property
    def loaded(self) -> bool:
        """True once the index was opened in this process."""
        return self._index is not None

    def _read_docs(self, view: Any, ids: Collection[str] | None) -> dict[str, dict[str, Any] | None]:
        """The :data:`~reckon.recall.tenant_index.DocReader` over the memory layer's reader."""
        prefix = R.memory_prefix(self.tenant)
        if ids is None:
            iris = [q.subject for q in view.quads(None, R.A, R.ACTIVE, INFERRED)
                    if isinstance(q.subject, NamedNode) and q.subject.value.startswith(prefix)]
            out: dict[str, dict[str, Any] | None] = {}
        else:
            iris = []
            for i in ids:
                try:
                    iris.append(R.memory_iri(self.tenant, i))
                except ValueError:
                    pass
            out = dict.fromkeys(ids)
        for m in self._memories(view, iris):
            out[m.id] = self.document(m) if m.active else None
        return out

    @staticmethod
    def document(m: Memory) -> dict[str, Any]:
        """The index document of a memory: label, content and subclass property values as
        text; time = last update; metadata for filters."""
        extra = " ".join(
            f"{k} {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in sorted(m.properties.items())
        )
        text = f"{m.label}\n{m.content}" + (f"\n{extra}" if extra else "")
        return dict(
            id=m.id, text=text, time=m.updated_at or m.created_at or _EPOCH,
            importance=m.importance, scope=m.scope, kind=m.kind, owner=m.owner, teams=list(m.teams),
            subclass=m.subclass, confidence=float(m.confidence),
            created=(_utc(m.created_at) or _EPOCH).isoformat(),
        )

    def after_write(self) -> None:
        """Follow the commit(s) just made, if the index is open in this process (the
        memory is then searchable by keyword at once; its embedding is queued). A process
        that has not opened the index (``reckon remember``) does nothing: the next one to
        open it reads the commits. Never raises: indexing never fails a committed write."""
        if self._index is None:
            return
        try:
            self._index.sync()
        except Exception:  # noqa: BLE001
            log.warning("recall index sync after a write failed (the next read retries)", exc_info=True)

    def wait(self, timeout: float | None = 60.0) -> bool:
        """Block until every indexed memory has its embedding (see
        :meth:`TenantIndex.wait <reckon.recall.tenant_index.TenantIndex.wait>`)."""
        idx = self.index
        idx.sync()
        return bool(idx.wait(timeout))

    def warm(self) -> None:
        """Open the index and load the embedding model now (``serve``, ``mcp``)."""
        idx = self.index
        idx.load_model()

    def check(self) -> dict[str, Any]:
        """The recall index compared with the store (``reckon tenant validate``)."""
        return dict(self.index.check())

    # ------------------------------------------------------------------ reads
    def _memory(self, view: Any, m: NamedNode) -> Memory:
        return self._memories(view, [m])[0]

    def _memories(self, view: Any, iris: Sequence[NamedNode]) -> list[Memory]:
        """Memories (with derived state) of ``iris``, in that order; ids that are not
        memories are skipped. Two indexed pattern reads per memory on the snapshot (a
        ``VALUES`` query over many IRIs is 3-20x slower on pyoxigraph 0.5)."""
        out = []
        for m in dict.fromkeys(iris):
            node = _Node()
            for q in view.quads(m, None, None, MEMORIES):
                node.asserted[q.predicate].append(q.object)
            if _P_KIND not in node.asserted:
                continue
            for q in view.quads(m, None, None, INFERRED):
                node.inferred[q.predicate].append(q.object)
            out.append(self.memory._to_memory(m, node.asserted, node.inferred))  # noqa: SLF001 (shared reader)
        return out

    @staticmethod
    def _setting(view: Any, name: str, default: Any) -> Any:
        objs = view.objects(_SETTINGS, R.rk(name), SCHEMA)
        if not objs:
            return default
        return R.python_value(objs[0])

    # ------------------------------------------------------------------ bundle
    def context(
        self,
        principal: Principal,
        conversation: str | Sequence[str] = "",
        budget_chars: int = 6000,
        *,
        max_item_chars: int = _MAX_ITEM_CHARS,
    ) -> ContextBundle:
        """The context bundle for a new turn of ``principal`` (see the module docstring).

        :param conversation: the recent conversation: a string, or turns oldest first
            (the last 6 turns, at most 2,000 characters, are used for ranking).
        :param budget_chars: maximum length of the rendered text, characters (>= 500).
        :param max_item_chars: content of one item is shortened to this many characters.
        :returns: :class:`ContextBundle`; ``bundle.render()`` is the prompt text.
        :raises InvalidInput: for a bad principal, conversation or budget.
        """
        if not isinstance(principal, Principal):
            raise InvalidInput("principal: a reckon Principal is required", field="principal")
        if isinstance(budget_chars, bool) or not isinstance(budget_chars, int) or budget_chars < _MIN_BUDGET:
            raise InvalidInput(f"budget_chars: an integer >= {_MIN_BUDGET} is required, got {budget_chars!r}",
                               field="budget_chars")
        text = _conversation_text(conversation)
        with self.store.snapshot() as view:
            floor_conf = float(self._setting(view, "confidenceFloor", 0.5))
            floor_imp = int(self._setting(view, "liveImportanceFloor", 4))
            cap = int(self._setting(view, "liveContextCap", 50))
            clock = view.objects(_CLOCK, _NOW, BUSINESS) or view.objects(_CLOCK, _NOW, None)
            now = _utc(R.python_value(clock[0])) if clock else None

            chosen: dict[str, NamedNode] = {}
            for m in view.objects(_LIVE_CONTEXT, _LIVE_MEMBER, INFERRED):
                chosen[m.value.rsplit(":", 1)[-1]] = m
            capped: dict[str, int] = {}
            # personal and team tiers: candidates from the recall index's columns (kept
            # equal to this snapshot's generation), each checked against the snapshot
            # below -- the store decides, the index only narrows the reads
            idx = self.index
            tiers = list(range(max(1, floor_imp), 6))
            cands = idx.candidates(importance=tiers, scopes=["user", "team"],
                                   visible_to=(principal.person, principal.teams))
            read: dict[str, Memory] = {}
            for scope in ("user", "team"):
                # the rule's order (importance, newest, IRI) on the index's columns; then
                # read and check against the snapshot until the cap is filled
                ok = sorted((d for d in cands if d.scope == scope and (d.extra.get("confidence") or 0.0) >= floor_conf),
                            key=lambda d: (-d.importance, _neg_iso(d.extra.get("created")), d.id))
                kept: list[str] = []
                for k in range(0, len(ok), max(cap, 1)):
                    chunk = ok[k:k + max(cap, 1)]
                    for m in self._memories(view, [R.memory_iri(self.tenant, d.id) for d in chunk]):
                        fits = (m.active and floor_imp <= m.importance <= 5 and m.confidence >= floor_conf
                                and m.scope == scope and authz.can_read_memory(principal, m)
                                and authz.in_audience(principal, scope=m.scope, owner=m.owner, teams=m.teams))
                        if fits and len(kept) < cap:
                            kept.append(m.id)
                            read[m.id] = m
                    if len(kept) >= cap:
                        break
                eligible = len(ok)
                if eligible > cap:
                    capped[scope] = eligible - cap
                for i in kept:
                    chosen[i] = R.memory_iri(self.tenant, i)
            live = [iri for i, iri in chosen.items() if i not in read]
            memories_by_id = {m.id: m for m in self._memories(view, live)}
            memories_by_id.update(read)
            memories = [memories_by_id[i] for i in chosen if i in memories_by_id]
            memories = [m for m in memories if m.active and authz.can_read_memory(principal, m)]
            business = render.business_lines(view, self.memory.schema.templates("lineTemplate"))
            ranking, sims = self._similarities(view, text, [m.id for m in memories])
            items = [self._item(view, m, sims.get(m.id)) for m in memories]
        conflicts = self._conflicts(items)
        blocks = _blocks(items, sims is not None and bool(sims))
        bundle = ContextBundle(
            tenant=self.tenant, principal=principal.person, generated_at=datetime.now(UTC),
            clock=now, budget_chars=budget_chars, blocks=blocks, business=business,
            conflicts=conflicts, capped=capped, ranking=ranking,
        )
        render.fit(bundle, max_item_chars)
        return bundle

    def _similarities(self, view: Any, text: str, ids: list[str]) -> tuple[str, dict[str, float]]:
        if not ids:
            return "no items", {}
        if not text.strip():
            return "importance, then most recent (no conversation given)", {}
        try:
            idx = self.index
            ranked = idx.rank_by_similarity(text, ids)
        except Exception as exc:  # noqa: BLE001 - ranking must never break the bundle
            log.warning("bundle ranking fell back to importance/recency: %s", exc)
            return f"importance, then most recent (similarity unavailable: {exc})", {}
        sims = {i: c for i, c in ranked}
        if not any(c != 0.0 for c in sims.values()):
            return "importance, then most recent (no embeddings for the conversation or the items)", {}
        return f"cosine similarity to the recent conversation (embedder: {idx.embedder_name})", sims

    def _item(self, view: Any, m: Memory, sim: float | None) -> BundleItem:
        schema = self.memory.schema
        if m.subclass_iri:
            node = NamedNode(m.subclass_iri)
            label = schema.label_of(node)
            block = f"subclass:{m.subclass_iri}|{block_label(label, m.subclass or '')}"
        else:
            block = m.kind
        return BundleItem(
            id=m.id, iri=m.iri, block=block, label=m.label, content=m.content, kind=m.kind, scope=m.scope,
            importance=m.importance, importance_name=IMPORTANCE_NAMES.get(m.importance, str(m.importance)),
            confidence=m.confidence, owner=m.owner, teams=list(m.teams), author=m.author,
            subclass=m.subclass, subclass_iri=m.subclass_iri, properties=dict(m.properties), status=dict(m.status),
            status_text=render.status_text(view, m, schema), similarity=sim, created_at=m.created_at,
            updated_at=m.updated_at, expires_at=m.expires_at,
        )

    def _conflicts(self, items: list[BundleItem]) -> list[BundleConflict]:
        """Cross-scope conflicts among the items (personal > team > company)."""
        schema = self.memory.schema
        keys: dict[str, dict[str, Any]] = {}
        for it in items:
            if not it.subclass:
                continue
            specs = schema.properties(NamedNode(it.subclass_iri or R.MEMORY.value))
            k = {}
            for spec in specs.values():
                if spec.identifying:
                    name = R.local_name(spec.iri)
                    if name in it.properties and not isinstance(it.properties[name], list):
                        k[name] = it.properties[name]
            keys[it.id] = k
        # word-count vectors of label + content (the lexical judge's measure), as rows of
        # one matrix: all pairwise cosines in one product
        texty = [it for it in items if not it.subclass or not keys.get(it.id)]
        row = {it.id: r for r, it in enumerate(texty)}
        cos = cosine_matrix([f"{it.label} {it.content}" for it in texty])

        def similar(a: BundleItem, b: BundleItem) -> float:
            return float(cos[row[a.id], row[b.id]])

        out: list[BundleConflict] = []
        seen: set[tuple[str, str]] = set()
        by_class: dict[str | None, list[BundleItem]] = defaultdict(list)
        for it in items:
            by_class[it.subclass].append(it)
        plain = [it for it in texty if not it.subclass]
        plain_rows = np.array([row[it.id] for it in plain], dtype=np.int64)
        for spec_item in sorted(items, key=lambda i: (-SCOPE_RANK[i.scope], i.id)):
            rank = SCOPE_RANK[spec_item.scope]
            if rank == 0:
                continue
            if spec_item.subclass:
                cands = [g for g in by_class[spec_item.subclass] if SCOPE_RANK[g.scope] < rank]
            else:
                close: list[int] = (np.nonzero(cos[row[spec_item.id], plain_rows] >= SIMILARITY_THRESHOLD)[0].tolist()
                                    if len(plain) else [])
                cands = [plain[j] for j in close if SCOPE_RANK[plain[j].scope] < rank]
            for gen in sorted(cands, key=lambda g: g.id):
                if (spec_item.id, gen.id) in seen:
                    continue
                key = conflict_key(spec_item, gen, keys, similar)
                if key is None:
                    continue
                seen.add((spec_item.id, gen.id))
                kind, reason = deliberate(spec_item, gen)
                out.append(BundleConflict(
                    authoritative=spec_item.id, overridden=gen.id, authoritative_scope=spec_item.scope,
                    overridden_scope=gen.scope, key=key, kind=kind, reason=reason,
                ))
        by_id = {it.id: it for it in items}
        for c in out:
            gen = by_id[c.overridden]
            if gen.overridden_by is None or SCOPE_RANK[by_id[c.authoritative].scope] > SCOPE_RANK[
                    by_id[gen.overridden_by].scope]:
                gen.overridden_by = c.authoritative
            by_id[c.authoritative].overrides.append(c.overridden)
        return out

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        *,
        principal: Principal,
        k: int = 10,
        kinds: Collection[str] | None = None,
        scopes: Collection[str] | None = None,
        subclasses: Collection[str] | None = None,
        importance: tuple[int, int] | Collection[int] | str = (2, 3),
        explain: bool = False,
        now: datetime | None = None,
    ) -> list[SearchHit]:
        """Hybrid search over the ACTIVE memories visible to ``principal`` (company, their
        teams', their own), by default the long tail (importance 2-3, seed §6).

        :param query: free text (non-empty).
        :param k: number of hits, 1..100.
        :param kinds: restrict to kinds (``"fact"`` ...); ``scopes``: to scopes.
        :param subclasses: restrict to memory classes (name, CURIE or IRI; instances of
            classes below them match too).
        :param importance: ``(lo, hi)`` inclusive, a collection of tiers, or ``"all"``
            (2-5). Importance 1 (Disabled) is never returned.
        :param explain: attach each hit's score components.
        :returns: hits, best first, each with ``.memory`` and ``.score``.
        :raises InvalidInput: for a bad query, k, kind, scope, subclass or importance.
        """
        return _search.search(
            self, query, principal=principal, k=k, kinds=kinds, scopes=scopes, subclasses=subclasses,
            importance=importance, explain=explain, now=now,
        )


# ---------------------------------------------------------------------------------------
# module helpers
# ---------------------------------------------------------------------------------------


def _conversation_text(conversation: Any) -> str:
    if conversation is None:
        return ""
    if isinstance(conversation, str):
        return conversation[-_CONVERSATION_CHARS:]
    if isinstance(conversation, (list, tuple)) and all(isinstance(t, str) for t in conversation):
        return "\n".join(conversation[-_CONVERSATION_TURNS:])[-_CONVERSATION_CHARS:]
    raise InvalidInput("conversation: a string or a list of strings is required", field="conversation")


def _neg_iso(text: str | None) -> float:
    """Sort key: newest first for an ISO 8601 time (missing = oldest)."""
    if not text:
        return 0.0
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return 0.0
    return -(t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def _blocks(items: list[BundleItem], by_similarity: bool) -> list[BundleBlock]:
    groups: dict[str, list[BundleItem]] = defaultdict(list)
    for it in items:
        groups[it.block].append(it)

    def order(its: list[BundleItem]) -> list[BundleItem]:
        def recency(i: BundleItem) -> float:
            return -(_utc(i.updated_at or i.created_at) or _EPOCH).timestamp()

        def key(i: BundleItem) -> tuple[Any, ...]:
            if by_similarity:
                return (i.overridden_by is not None, -(i.similarity or 0.0), -i.importance, recency(i), i.id)
            return (i.overridden_by is not None, -i.importance, recency(i), i.id)

        return sorted(its, key=key)

    out: list[BundleBlock] = []
    sub_keys = sorted((k for k in groups if k.startswith("subclass:")),
                      key=lambda k: (-max(i.importance for i in groups[k]), k.split("|", 1)[1]))
    for k in sub_keys:
        out.append(BundleBlock(key=k.split("|", 1)[0], label=k.split("|", 1)[1], items=order(groups[k])))
    for kind, label in _KIND_BLOCKS:
        if groups.get(kind):
            out.append(BundleBlock(key=kind, label=label, items=order(groups[kind])))
    return out


