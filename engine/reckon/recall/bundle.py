"""The context bundle and on-demand search of one tenant (seed 003 §6, §8; seed 002
"pre-turn retrieval"; seed 001 "stable salient core", "context ledger").

:class:`TenantRecall` is what ``Tenant.context`` / ``Tenant.search`` delegate to.

**Bundle** (:meth:`TenantRecall.context`), as of the store's latest commit on every call
(seed §6: a memory written in one chat is visible in the next). Everything but the
ranking -- items and their status texts, conflicts, business lines, capped counts -- is
a function of the committed data, the principal, the project, the conversation id, the
judge and the schema: it is kept per such key and generation and carried to a newer
generation only when none of the commits since (this process's or another's,
:meth:`TenantStore.changes <reckon.store.TenantStore.changes>`) touched a memory it
holds or counts, a live or candidate membership, the business data, the schema, the
clock or anything that is not a memory; otherwise rebuilt from the snapshot. A write
of a memory the bundle does not hold (a Medium one) leaves it as it was.

* *eligibility is structural* -- the rules choose every memory of the bundle
  (``rules/core.srl``): the company's live context (``rk:liveContext rk:liveMember ?m``:
  active, company scope, importance >= the ``rk:liveImportanceFloor``, confidence >=
  ``rk:confidenceFloor``, capped by the ``rk:liveContextCap`` guardrail; rule
  live-context-cap) and the live context of each stakeholder the principal speaks for
  (``?s rk:liveMember ?m``, rule stakeholder-live-cap: the same floors, order and cap per
  stakeholder): their own person (user scope), each of their teams (team scope), the
  turn's project if they are a member of it (project scope) and the turn's conversation if
  they take part in it (conversation scope; ``context(..., project=, conversation_id=)``). This
  code picks those stakeholders from the principal and keeps what
  :func:`reckon.memory.authz.can_read` and :func:`~reckon.memory.authz.in_audience`
  allow; it never ranks, floors or caps. Plus the live business data
  (``rk:liveContext mk:liveKpi / mk:liveAccount / mk:liveSubscription``).
  :attr:`ContextBundle.capped` counts, per scope, the candidates
  (``?m rk:liveCandidateIn ?s``) of the principal's stakeholders the cap left out.
* *blocks* — one per memory subclass (label from the ontology's ``rdfs:label``, e.g.
  "Budget constraints"), then objectives, preferences, facts, context for plain
  memories; each item carries its id, scope, importance name, owner / author and its
  derived status inline (``near_limit — 85 % ($34,000 of $40,000)``).
* *ranking* — inside a block, by cosine similarity of the item's embedding (computed
  after the write by the :class:`~reckon.recall.tenant_index.TenantIndex`) to the recent
  conversation (a list of turns: the recency-weighted normalized mean of each recent
  turn's embedding, :func:`_conversation_vector`, each cached by text, so a new turn
  costs one encode of that turn; a string: its embedding); without a conversation or an embedder, by importance then recency
  (:attr:`ContextBundle.ranking` says which). An item whose vector is not computed yet
  gets similarity 0. Similarity orders, never decides.
* *precedence* (seed §4) -- personal > conversation > project > team > company: the
  more specific scope is authoritative. Two items of different scopes conflict when the
  tenant's conflict judge (:mod:`reckon.memory.conflicts`, the write path's one policy;
  :mod:`reckon.recall.precedence`) says the more specific would replace the other: the
  same subclass with equal identifying properties (two targets on the same metric, two
  budgets on the same platform and period), or two plain memories stating a different
  value for one subject. The other stays visible, marked ``overridden by``, and the
  pair is listed in :attr:`ContextBundle.conflicts` with ``kind``:

  - ``deliberate`` when the specific memory says so (its label or content matches
    :data:`OVERRIDE_WORDS`: "override", "instead of", "rather than", "regardless",
    "despite", "exception", "unlike") or when it was created after the general one by
    the general one's own author (who therefore knew the rule they were bending);
  - ``accidental`` otherwise: the agent should confirm with the user.

* *budget and ledger* (seed 001 "context ledger", seed 002 "pre-turn retrieval", seed
  000 "summarization" budget) — the rendered text never exceeds ``budget_chars`` (>= 500)
  or, when given instead, ``budget_tokens`` (>= 100) counted by a real tokenizer
  (:mod:`reckon.recall.tokens`). Blocks compete by priority
  (:data:`reckon.recall.render.PRIORITY`); under pressure, in this order: items below
  High, High items (from the least important block first: context, facts, preferences,
  objectives, then subclass blocks; the lowest-ranked, overridden ones counting as
  lowest, first), business lines, conflict lines; then the boilerplate (header to its
  short form, footer to its short form, header to one line); then Critical content is
  shortened; only then Critical items go. A Critical memory is never dropped while
  lower-priority text or boilerplate remains. A conflict line whose two memories were
  both dropped goes with them. :attr:`ContextBundle.omitted` counts drops per block label
  (plus ``business`` and ``conflicts``); :attr:`ContextBundle.capped` counts the eligible
  memories the ``rk:liveContextCap`` guardrail left out, per scope (company ones are the
  ``rk:LiveCandidate`` memories the rule did not make live), never mixed with the budget
  drops; :attr:`ContextBundle.ledger` holds both, the unit, the cost of each priority
  block and the header's and footer's form. The text's last line says what was left out
  and why, and the header claims "every active Critical and High memory" only when
  nothing was.

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

import contextlib
import logging
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from pyoxigraph import NamedNode

from reckon import vocab as R
from reckon import vocab as V
from reckon._errors import InvalidInput
from reckon.memory import authz
from reckon.memory.models import IMPORTANCE_NAMES, Memory, Principal
from reckon.recall import precedence, render
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
from reckon.recall.precedence import OVERRIDE_WORDS
from reckon.recall.tokens import CHARS, token_measure
from reckon.recall.usage import UsageLog
from reckon.store.graphs import BUSINESS, INFERRED, MEMORIES, SCHEMA, TRANSCRIPTS

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
_CANDIDATE_IN = R.rk("liveCandidateIn")
_LIVE_CANDIDATE = R.rk("LiveCandidate")
_PARTICIPANT = NamedNode(V.AG + "participant")  # conversation -> who spoke in it (derived)
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
_MIN_TOKENS = 100


def check_budget_chars(budget_chars: object) -> None:
    """Refuse a bundle size that :meth:`TenantRecall.context` would refuse.

    :param budget_chars: the bundle's maximum rendered length, characters.
    :raises InvalidInput: (field ``budget_chars``) when it is not an integer >= 500.
    """
    if isinstance(budget_chars, bool) or not isinstance(budget_chars, int) or budget_chars < _MIN_BUDGET:
        raise InvalidInput(f"budget_chars: an integer >= {_MIN_BUDGET} is required, got {budget_chars!r}",
                           field="budget_chars")
_DEFAULT_BUDGET = 6000
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
_PREFETCH_LOCK = threading.Lock()
_PREFETCHING: set[int] = set()  # ids of embedders a thread is loading (TenantRecall.prefetch_model)


class _Node:
    """Asserted and inferred triples of one memory, as the service's reader takes them."""

    __slots__ = ("asserted", "inferred")

    def __init__(self) -> None:
        self.asserted: dict[Any, list[Any]] = defaultdict(list)
        self.inferred: dict[Any, list[Any]] = defaultdict(list)


class _Prepared:
    """Everything of one bundle but the ranking (items with their status texts and
    precedence marks, conflicts, business lines, capped counts, clock and cap), built
    from the snapshot of :attr:`generation`, plus :attr:`watched`: the IRIs it was read
    from (the live and candidate memories, the business lines' values). Never handed out:
    :meth:`TenantRecall.context` copies what goes into a bundle."""

    __slots__ = ("business", "cap", "capped", "capped_importance", "conflicts", "generation", "items", "judge",
                 "now", "schema", "watched", "wide", "_costs", "_lines")

    def __init__(self, *, generation: int, judge: Any, schema: Any, now: datetime | None, cap: int,
                 capped: dict[str, int], capped_importance: dict[str, int], items: list[BundleItem],
                 conflicts: list[BundleConflict], business: list[BusinessLine], watched: frozenset[str],
                 wide: bool = False) -> None:
        self.generation = generation
        self.wide = wide
        """True when the parts hold a memory of a project or conversation other than the
        turn's: they then depend on all of the principal's memberships."""
        self.judge, self.schema = judge, schema
        self.now, self.cap, self.capped, self.capped_importance = now, cap, capped, capped_importance
        self.items, self.conflicts, self.business, self.watched = items, conflicts, business, watched
        self._lines: dict[int, dict[str, str]] = {}
        self._costs: dict[str, dict[str, int]] = {}

    def lines(self, max_item_chars: int) -> dict[str, str]:
        """``item id -> BundleItem.line(max_item_chars)`` (rendered once per length)."""
        got = self._lines.get(max_item_chars)
        if got is None:
            got = self._lines[max_item_chars] = {it.id: it.line(max_item_chars) for it in self.items}
        return got

    def costs(self, measure: str) -> dict[str, int]:
        """The line costs :func:`reckon.recall.render.fit` measured with ``measure``
        (kept while this part set lives; bounded by the lines it renders)."""
        got = self._costs.get(measure)
        if got is None or len(got) > 20_000:
            got = self._costs[measure] = {}
        return got

    def untouched_by(self, commits: Sequence[Any], memory_prefix: str) -> bool:
        """True when none of ``commits`` can change these parts: every quad and inferred
        triple they added or removed is about a memory (asserted ones in the memories
        graph) that is not :attr:`watched`, names no watched IRI as its object, and none
        makes or unmakes a live member, a live candidate or a stakeholder candidate. Any
        write to the business data, the schema, the clock or settings, a membership, or
        anything else that is not a memory counts as touching -- except a recorded turn:
        the transcripts graph and the ``ag:participant`` it derives are read by no part
        (who takes part in a conversation is the principal's ``conversations``, which
        the key the parts are kept under holds as far as the parts depend on it:
        :meth:`TenantRecall._prepared_for`)."""
        watched = self.watched
        for c in commits:
            for q in c.added | c.removed:
                if q.graph_name == TRANSCRIPTS:
                    continue
                if q.graph_name != MEMORIES or not _quiet(q, watched, memory_prefix):
                    return False
            for t in c.inferred_added | c.inferred_removed:
                if t.predicate == _PARTICIPANT:
                    continue
                if t.predicate in (_LIVE_MEMBER, _CANDIDATE_IN) or (t.predicate == R.A and t.object == _LIVE_CANDIDATE):
                    return False
                if not _quiet(t, watched, memory_prefix):
                    return False
        return True


def _quiet(x: Any, watched: frozenset[str], memory_prefix: str) -> bool:
    s, o = x.subject, x.object
    if not isinstance(s, NamedNode) or not s.value.startswith(memory_prefix) or s.value in watched:
        return False
    return not (isinstance(o, NamedNode) and o.value in watched)


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
        self.usage = UsageLog(self._directory / "usage.sqlite" if self._directory is not None else None)
        self._usage_seen: tuple[int, int] | None = None
        self._records: OrderedDict[str, Memory | None] = OrderedDict()
        """Memory IRI -> the :class:`Memory` read at generation :attr:`_records_gen`
        (``None``: not a memory); entries a commit touches are dropped (see
        :meth:`_follow_commits`), so a bundle reads only what changed since the last one."""
        self._records_gen = -1
        self._importance: dict[str, int] = {}  # memory IRI -> importance (see _importance_of)
        self._items: dict[str, tuple[Memory, Any, BundleItem]] = {}
        """Memory IRI -> (the record, the schema, its bundle item) (see :meth:`_item`)."""
        self._prepared: OrderedDict[tuple[Any, ...], _Prepared] = OrderedDict()
        """The bundle parts of the latest (principal, project, conversation id, judge,
        schema) keys (see :meth:`_prepared_for`)."""

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

    def _apply_usage(self, idx: Any) -> None:
        """Copy the access and feedback counts (:mod:`reckon.recall.usage`) into the
        index's records when they changed, so ranking uses them."""
        try:
            key = (self.usage.version(), len(idx))
            if key == self._usage_seen:
                return
            ix = idx.index
            for mid, u in self.usage.counts().items():
                if mid in ix:
                    rec = ix.get(mid)
                    rec.access_count, rec.feedback = u.access, u.feedback
            self._usage_seen = (self.usage.version(), len(idx))
        except Exception:  # noqa: BLE001 - counts only order; they never break a read
            log.warning("recall: reading the usage counts failed", exc_info=True)

    def record_access(self, ids: Sequence[str]) -> None:
        """Count one access of each memory (a hit returned, a bundle item shown). Never
        raises: counting never fails a read."""
        try:
            self.usage.record_access(ids)
        except Exception:  # noqa: BLE001
            log.warning("recall: recording access failed", exc_info=True)

    def close(self, *, wait: float = 10.0) -> None:
        """Write the index snapshot, stop the embedding thread (waiting up to ``wait``
        seconds for a batch in progress) and close the access-count file."""
        with self._lock:
            index, self._index = self._index, None
        if index is not None:
            index.close(wait=wait)
        self.usage.close()

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

    def prefetch_model(self) -> None:
        """Start loading the embedding model on a background thread, when it is neither
        loaded nor loading (a search, or a bundle with a conversation, is about to rank).

        A fresh process's first ranking then opens the index (snapshot + the commits
        since, :attr:`index`) while the model loads, instead of one after the other; the
        query encode waits for the load under the embedder's own lock. The thread is not
        a daemon: an interpreter exiting during the load waits for it (ONNX Runtime
        aborts a process that exits inside a session's construction). A load failure is
        remembered by the embedder and raised by the encode that needs it, as without the
        prefetch."""
        from reckon.recall.embed import configured_embedder

        emb = configured_embedder(self._embedder)
        load = getattr(emb, "load", None)
        if not callable(load) or getattr(emb, "loaded", True):
            return
        with _PREFETCH_LOCK:
            if id(emb) in _PREFETCHING:
                return
            _PREFETCHING.add(id(emb))

        def run() -> None:
            try:
                load()
            except Exception:  # noqa: BLE001 - remembered by the embedder, raised by the encode
                pass
            finally:
                with _PREFETCH_LOCK:
                    _PREFETCHING.discard(id(emb))

        threading.Thread(target=run, name="reckon-model-load", daemon=False).start()

    def check(self) -> dict[str, Any]:
        """The recall index compared with the store (``reckon tenant validate``)."""
        return dict(self.index.check())

    # ------------------------------------------------------------------ reads
    def _memory(self, view: Any, m: NamedNode) -> Memory:
        return self._memories(view, [m])[0]

    _RECORDS_MAX = 16384

    def _follow_commits(self, view: Any) -> None:
        """Bring the record cache to the snapshot's generation: drop every memory a
        commit since touched (a subject or object of an asserted quad or an inferred
        triple: an edit, a supersession, a status the business data moved); everything
        when a commit changed the schema or the commits are not known any more
        (:meth:`TenantStore.changes <reckon.store.TenantStore.changes>`)."""
        gen = getattr(view, "generation", -1)
        if gen == self._records_gen and gen >= 0:
            return
        commits = None
        if gen >= 0 and 0 <= self._records_gen <= gen and self._records:
            changes = getattr(self.store, "changes", None)
            commits = changes(self._records_gen, gen) if callable(changes) else None
        if commits is None:
            self._records.clear()
            self._importance.clear()
        else:
            rec, imp = self._records, self._importance
            for c in commits:
                if any(q.graph_name == SCHEMA for q in (*c.added, *c.removed)):
                    rec.clear()
                    imp.clear()
                    break
                for x in (*c.added, *c.removed, *c.inferred_added, *c.inferred_removed):
                    for v in (getattr(x.subject, "value", ""), getattr(x.object, "value", "")):
                        rec.pop(v, None)
                        imp.pop(v, None)
        self._records_gen = gen

    def _importance_of(self, view: Any, m: NamedNode) -> int:
        """``rk:importance`` of memory ``m`` (0 without one), kept like the records
        (call after :meth:`_follow_commits` for ``view``, under the lock)."""
        got = self._importance.get(m.value)
        if got is None:
            objs = view.objects(m, R.rk("importance"), MEMORIES)
            got = int(R.python_value(objs[0])) if objs else 0
            if len(self._importance) >= 4 * self._RECORDS_MAX:
                self._importance.clear()
            self._importance[m.value] = got
        return got

    _PREFETCH = 64
    """More memories than this without a known importance are read by one SPARQL join
    (every live candidate's importance) instead of one pattern read each."""

    def _importances(self, view: Any, ms: Sequence[NamedNode]) -> list[int]:
        """:meth:`_importance_of` of each of ``ms``; when many are not known yet (a fresh
        process on a big tenant: thousands of capped candidates), the importance of every
        ``rk:LiveCandidate`` is read first with one query on the snapshot (the join runs in
        the store: ~16 us a row at 100k memories, against ~41 us for a pattern read each)."""
        known = self._importance
        if sum(1 for m in ms if m.value not in known) > self._PREFETCH and len(known) < 4 * self._RECORDS_MAX:
            # (a UNION with rk:liveCandidateIn here makes the store's plan 10x slower; the
            # stakeholder candidates a cap left out are few and read one by one)
            rows = view.query(
                f"SELECT ?m ?i WHERE {{ GRAPH <{INFERRED.value}> {{ ?m a <{_LIVE_CANDIDATE.value}> }} "
                f"GRAPH <{MEMORIES.value}> {{ ?m <{R.rk('importance').value}> ?i }} }}")
            for row in rows:
                m, i = row["m"], row["i"]
                if isinstance(m, NamedNode) and m.value not in known:
                    with contextlib.suppress(TypeError, ValueError):
                        known[m.value] = int(R.python_value(i))
        return [self._importance_of(view, m) for m in ms]

    def _memories(self, view: Any, iris: Sequence[NamedNode]) -> list[Memory]:
        """Memories (with derived state) of ``iris``, in that order; ids that are not
        memories are skipped. Two indexed pattern reads per memory on the snapshot (a
        ``VALUES`` query over many IRIs is 3-20x slower on pyoxigraph 0.5), for the
        memories no commit touched since an earlier read (a per-process cache of
        :data:`_RECORDS_MAX` records, kept equal to the snapshot's generation)."""
        out = []
        with self._lock:
            self._follow_commits(view)
            rec = self._records
            for m in dict.fromkeys(iris):
                if m.value in rec:
                    got = rec[m.value]
                    rec.move_to_end(m.value)
                    if got is not None:
                        out.append(got)
                    continue
                node = _Node()
                for q in view.quads(m, None, None, MEMORIES):
                    node.asserted[q.predicate].append(q.object)
                if _P_KIND not in node.asserted:
                    memory = None
                else:
                    for q in view.quads(m, None, None, INFERRED):
                        node.inferred[q.predicate].append(q.object)
                    memory = self.memory._to_memory(m, node.asserted, node.inferred)  # noqa: SLF001 (shared reader)
                    out.append(memory)
                rec[m.value] = memory
                if len(rec) > self._RECORDS_MAX:
                    rec.popitem(last=False)
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
        budget_chars: int | None = None,
        *,
        budget_tokens: int | None = None,
        max_item_chars: int = _MAX_ITEM_CHARS,
        project: str | None = None,
        conversation_id: str | None = None,
        record_access: bool = True,
    ) -> ContextBundle:
        """The context bundle for a new turn of ``principal`` (see the module docstring).

        :param conversation: the recent conversation: a string (its last 2,000
            characters rank), or turns oldest first (the last 6 non-blank turns, whole,
            newest first within 2,000 characters, each embedded on its own and cached;
            see :func:`_conversation_turns`).
        :param budget_chars: maximum length of the rendered text, characters (>= 500;
            default 6,000 when no ``budget_tokens`` is given).
        :param budget_tokens: maximum length in tokens instead (>= 100), counted by
            :func:`reckon.recall.tokens.token_measure` (``$RECKON_TOKENIZER`` or the
            MiniLM package's WordPiece tokenizer).
        :param max_item_chars: content of one item is shortened to this many characters.
        :param project: the project of the turn: the live members of that project join
            when ``principal`` is a member of it (``Principal.projects``).
        :param conversation_id: the conversation of the turn: its live members join when
            ``principal`` takes part in it (``Principal.conversations``).
        :param record_access: count an access of each item shown (:mod:`reckon.recall.usage`).
        :returns: :class:`ContextBundle`; ``bundle.render()`` is the prompt text,
            ``bundle.ledger`` what it spent and left out.
        :raises InvalidInput: for a bad principal, conversation or budget, or both budgets.
        """
        if not isinstance(principal, Principal):
            raise InvalidInput("principal: a reckon Principal is required", field="principal")
        measure = CHARS
        if budget_tokens is not None:
            if budget_chars is not None:
                raise InvalidInput("budget_tokens: give either budget_chars or budget_tokens, not both",
                                   field="budget_tokens")
            if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < _MIN_TOKENS:
                raise InvalidInput(f"budget_tokens: an integer >= {_MIN_TOKENS} is required, got {budget_tokens!r}",
                                   field="budget_tokens")
            measure = token_measure()
        elif budget_chars is None:
            budget_chars = _DEFAULT_BUDGET
        if budget_chars is not None:
            check_budget_chars(budget_chars)
        turns = _conversation_turns(conversation)
        with self.store.snapshot() as view:
            prep = self._prepared_for(view, principal, project, conversation_id)
            ranking, sims = self._similarities(view, turns, [it.id for it in prep.items])
        # the blocks and the budget read the prepared items as they are; only the items
        # shown are copied (with their similarity) into the bundle handed out
        blocks = _blocks(prep.items, sims if sims else None)
        bundle = ContextBundle(
            tenant=self.tenant, principal=principal.person, generated_at=datetime.now(UTC),
            clock=prep.now, budget_chars=budget_chars, budget_tokens=budget_tokens, blocks=blocks,
            business=[x.model_copy() for x in prep.business], conflicts=[c.model_copy() for c in prep.conflicts],
            capped=dict(prep.capped), capped_importance=dict(prep.capped_importance), cap=prep.cap, ranking=ranking,
        )
        render.fit(bundle, max_item_chars, measure, item_lines=prep.lines, costs=prep.costs(measure.name))
        for blk in bundle.blocks:
            blk.items = [it.model_copy(update={
                "similarity": sims.get(it.id), "teams": list(it.teams), "properties": dict(it.properties),
                "status": dict(it.status), "overrides": list(it.overrides)}) for it in blk.items]
        if record_access:
            self.record_access(bundle.ids())
        return bundle

    _PREPARED_MAX = 32

    def _prepared_for(self, view: Any, principal: Principal, project: str | None,
                      conversation_id: str | None) -> _Prepared:
        """Everything of the bundle but the ranking, for the snapshot's generation: kept
        per (person, teams, role, effective project, effective conversation, judge,
        schema) and carried to a later generation only when none of the commits since
        touched anything it was built from (:meth:`_Prepared.untouched_by`); otherwise
        rebuilt.

        The turn's project and conversation count only when the principal is a member of
        it and its stakeholder node has a live member or candidate (:meth:`_effective`):
        otherwise the parts are those of a turn without it, so the first turn of a new
        conversation, and every turn after the principal joins one, reuse the parts
        already built. The principal's other projects and conversations count only for
        parts that hold a memory of a project or conversation other than the turn's
        (:attr:`_Prepared.wide`: kept under a key holding both sets, as no rule of
        ``rules/core.srl`` makes one live for a turn but ontology rules may)."""
        project = self._effective(view, principal.projects, project, R.project_iri)
        conversation_id = self._effective(view, principal.conversations, conversation_id, R.conversation_iri)
        base = (principal.person, tuple(sorted(set(principal.teams))), principal.role, project, conversation_id,
                id(self.memory.judge), id(self.memory.schema))
        wide = base + (tuple(sorted(set(principal.projects))), tuple(sorted(set(principal.conversations))))
        gen = getattr(view, "generation", -1)
        with self._lock:
            for key in (base, wide):
                prep = self._prepared.get(key)
                if prep is None:
                    continue
                if self._current(prep, gen):
                    self._prepared.move_to_end(key)
                    return prep
                del self._prepared[key]  # touched since: rebuilt below
            prep = self._prepare(view, principal, project, conversation_id)
            if gen >= 0:
                key = wide if prep.wide else base
                self._prepared[key] = prep
                self._prepared.move_to_end(key)
                while len(self._prepared) > self._PREPARED_MAX:
                    self._prepared.popitem(last=False)
            return prep

    def _current(self, prep: _Prepared, gen: int) -> bool:
        """True when ``prep`` holds for generation ``gen`` (then moved to it): the same
        judge and schema, and built at ``gen`` or at an earlier generation none of the
        commits since touched. Called under ``self._lock``."""
        if prep.judge is not self.memory.judge or prep.schema is not self.memory.schema or gen < 0:
            return False
        if prep.generation == gen:
            return True
        if not 0 <= prep.generation < gen:
            return False
        changes = getattr(self.store, "changes", None)
        commits = changes(prep.generation, gen) if callable(changes) else None
        if commits is None or not prep.untouched_by(commits, R.memory_prefix(self.tenant)):
            return False
        prep.generation = gen
        return True

    def _effective(self, view: Any, member_of: Collection[str], name: str | None,
                   iri: Callable[[str, str], NamedNode]) -> str | None:
        """``name`` (a project or conversation of the turn) when the principal is a
        member of it (``member_of``) and its stakeholder node has a live member or a live
        candidate; else None: the bundle's parts are then exactly those of a turn
        without it (:meth:`_stakeholders` would add nothing). A later candidate of it
        makes ``rk:liveCandidateIn``, which touches the parts kept without it."""
        if name is None or name not in member_of:
            return None
        node = iri(self.tenant, name)
        if view.subjects(_CANDIDATE_IN, node, INFERRED) or view.objects(node, _LIVE_MEMBER, INFERRED):
            return name
        return None

    def _prepare(self, view: Any, principal: Principal, project: str | None,
                 conversation_id: str | None) -> _Prepared:
        """Build the :class:`_Prepared` bundle parts from the snapshot ``view``."""
        clock = view.objects(_CLOCK, _NOW, BUSINESS) or view.objects(_CLOCK, _NOW, None)
        now = _utc(R.python_value(clock[0])) if clock else None
        cap = int(self._setting(view, "liveContextCap", 50))
        # eligibility is the rules' (rules/core.srl live-context-cap and
        # stakeholder-live-cap): the company's live members, then those of each
        # stakeholder the principal speaks for (their person, their teams); this code
        # only picks the stakeholders and applies the read policy below
        chosen: dict[NamedNode, None] = dict.fromkeys(
            m for m in view.objects(_LIVE_CONTEXT, _LIVE_MEMBER, INFERRED) if isinstance(m, NamedNode))
        capped: dict[str, int] = {}
        left_out: list[NamedNode] = []  # stakeholder candidates the cap left out
        for scope, node in self._stakeholders(principal, project, conversation_id):
            live = [m for m in view.objects(node, _LIVE_MEMBER, INFERRED) if isinstance(m, NamedNode)]
            chosen.update(dict.fromkeys(live))
            left = [m for m in view.subjects(_CANDIDATE_IN, node, INFERRED)
                    if isinstance(m, NamedNode) and m not in chosen]
            if left:
                capped[scope] = capped.get(scope, 0) + len(left)
                left_out.extend(left)
        with self._lock:
            self._follow_commits(view)
            candidates: set[str] = set()
            capped_imp = _capped_importance(view, chosen, capped, left_out, lambda ms: self._importances(view, ms),
                                            candidates)
        memories = self._memories(view, list(chosen))
        # a memory of another project or conversation than the turn's: its read check
        # depends on the principal's other memberships (see _prepared_for)
        wide = any((m.scope == "project" and m.project != project)
                   or (m.scope == "conversation" and m.conversation != conversation_id) for m in memories)
        memories = [m for m in memories if m.active and authz.can_read_memory(principal, m)
                    and authz.in_audience_memory(principal, m)]
        business = render.business_lines(view, self.memory.schema.templates("lineTemplate"))
        items = [self._item(view, m, None) for m in memories]
        conflicts = self._conflicts(items)
        # what the parts were read from: a later commit touching none of it leaves them valid
        watched = {m.value for m in chosen} | {m.value for m in left_out}
        watched |= candidates
        for line in business:
            watched |= {x.object.value for x in view.quads(NamedNode(line.iri), None, None, BUSINESS)
                        if isinstance(x.object, NamedNode)}
        return _Prepared(generation=getattr(view, "generation", -1), judge=self.memory.judge,
                         schema=self.memory.schema, now=now, cap=cap, capped=capped,
                         capped_importance=capped_imp, items=items, conflicts=conflicts, business=business,
                         watched=frozenset(watched), wide=wide)

    def _stakeholders(self, principal: Principal, project: str | None,
                      conversation: str | None) -> list[tuple[str, NamedNode]]:
        """``(scope, stakeholder IRI)`` of every stakeholder whose live members the
        bundle of ``principal`` holds besides the company's: their person (user scope),
        each of their teams (team scope), the turn's project if they are a member of it
        (project scope), the turn's conversation if they take part in it (conversation
        scope). Anything else is left to :func:`reckon.memory.authz.in_audience`, which
        every item passes too."""
        out = [("user", R.person_iri(self.tenant, principal.person))]
        out += [("team", R.team_iri(self.tenant, t)) for t in sorted(set(principal.teams))]
        if project is not None and project in principal.projects:
            out.append(("project", R.project_iri(self.tenant, project)))
        if conversation is not None and conversation in principal.conversations:
            out.append(("conversation", R.conversation_iri(self.tenant, conversation)))
        return out

    def _similarities(self, view: Any, turns: list[str], ids: list[str]) -> tuple[str, dict[str, float]]:
        if not ids:
            return "no items", {}
        if not turns:
            return "importance, then most recent (no conversation given)", {}
        try:
            idx = self.index
            if len(turns) == 1:
                ranked = idx.rank_by_similarity(turns[0], ids)
            else:
                ranked = idx.rank_by_similarity("\n".join(turns), ids, vector=_conversation_vector(idx, turns))
        except Exception as exc:  # noqa: BLE001 - ranking must never break the bundle
            log.warning("bundle ranking fell back to importance/recency: %s", exc)
            return f"importance, then most recent (similarity unavailable: {exc})", {}
        sims = {i: c for i, c in ranked}
        if not any(c != 0.0 for c in sims.values()):
            return "importance, then most recent (no embeddings for the conversation or the items)", {}
        return f"cosine similarity to the recent conversation (embedder: {idx.embedder_name})", sims

    def _item(self, view: Any, m: Memory, sim: float | None) -> BundleItem:
        """The bundle item of ``m`` (a fresh copy; the rendering of one :class:`Memory`
        record -- its status text above all -- is kept while the record cache holds that
        same record, i.e. until a commit touches the memory or the schema changes)."""
        got = self._items.get(m.iri)
        if got is not None and got[0] is m and got[1] is self.memory.schema:
            base = got[2]
        else:
            base = self._new_item(view, m)
            self._items[m.iri] = (m, self.memory.schema, base)
            if len(self._items) > self._RECORDS_MAX:
                self._items.pop(next(iter(self._items)))
        return base.model_copy(update={"similarity": sim, "teams": list(base.teams),
                                       "properties": dict(base.properties), "status": dict(base.status),
                                       "overrides": [], "overridden_by": None})

    def _new_item(self, view: Any, m: Memory) -> BundleItem:
        sim = None
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
        """Cross-scope conflicts among the items, judged by the tenant's conflict judge
        (:func:`reckon.recall.precedence.conflicts`)."""
        return precedence.conflicts(items, self.memory.judge, self.memory.schema)

    # ------------------------------------------------------------------ search
    search = _search.search  # the long-tail search job: reckon.recall.search (one signature, one docstring)

    def _cite(self, view: Any, hits: list[SearchHit]) -> None:
        """Name the document and position of every chunk hit (``ty:partOf``, derived by
        ``rule:chunk-part-of``)."""
        from reckon.knowledge import citation

        docs = {h.memory.status.get("partOf") for h in hits if h.memory.subclass == "ChunkMemory"}
        docs.discard(None)
        if not docs:
            return
        by_id = {m.id: m for m in self._memories(view, [R.memory_iri(self.tenant, str(d)) for d in docs])}
        for h in hits:
            if h.memory.subclass == "ChunkMemory":
                d = by_id.get(str(h.memory.status.get("partOf")))
                h.document = d.id if d is not None else None
                h.citation = citation(h.memory, d)


# ---------------------------------------------------------------------------------------
# module helpers
# ---------------------------------------------------------------------------------------


def _capped_importance(view: Any, chosen: dict[NamedNode, None], capped: dict[str, int],
                       left_out: Sequence[NamedNode], importance: Callable[[Sequence[NamedNode]], list[int]],
                       candidates: set[str]) -> dict[str, int]:
    """The context ledger's account of the ``rk:liveContextCap`` guardrail: company
    candidates (``rk:LiveCandidate``) the rule did not make live go into ``capped``
    under ``"company"``; returns every capped memory's count by importance name (the
    company ones and ``left_out``, the stakeholder candidates -- ``rk:liveCandidateIn``
    -- that their ``stakeholder-live-cap`` left out); adds every ``rk:LiveCandidate``'s
    IRI to ``candidates``."""
    by_imp: dict[int, int] = defaultdict(int)
    out: list[NamedNode] = []
    for q in view.quads(None, R.A, _LIVE_CANDIDATE, INFERRED):
        m = q.subject
        if not isinstance(m, NamedNode):
            continue
        candidates.add(m.value)
        if m not in chosen:
            out.append(m)
    if out:
        capped["company"] = len(out)
    for imp in importance([*out, *dict.fromkeys(left_out)]):
        by_imp[imp] += 1
    return {IMPORTANCE_NAMES.get(i, str(i)): c for i, c in sorted(by_imp.items(), reverse=True)}

def _conversation_turns(conversation: Any) -> list[str]:
    """The texts the bundle ranks by, oldest first: a string conversation is one text
    (its last :data:`_CONVERSATION_CHARS` characters); of a list of turns, the last
    :data:`_CONVERSATION_TURNS` non-blank ones, each its last :data:`_CONVERSATION_CHARS`
    characters, newest first while they total at most :data:`_CONVERSATION_CHARS` (the
    newest always). Whole turns, never a turn cut at the window's edge: a turn's text --
    and so its cached embedding -- stays the same while the conversation goes on.

    :raises InvalidInput: for anything but a string or a list / tuple of strings.
    """
    if conversation is None:
        return []
    if isinstance(conversation, str):
        text = conversation[-_CONVERSATION_CHARS:]
        return [text] if text.strip() else []
    if isinstance(conversation, (list, tuple)) and all(isinstance(t, str) for t in conversation):
        out: list[str] = []
        total = 0
        for t in reversed([t for t in conversation if t.strip()][-_CONVERSATION_TURNS:]):
            t = t[-_CONVERSATION_CHARS:]
            if out and total + len(t) > _CONVERSATION_CHARS:
                break
            out.append(t)
            total += len(t)
        return out[::-1]
    raise InvalidInput("conversation: a string or a list of strings is required", field="conversation")


#: Weight of a turn in the conversation vector: ``_TURN_DECAY ** age`` (the newest turn
#: age 0). Measured by ``bench/conversation_vector.py`` on LoCoMo (evidence recall@10 of a
#: cosine top-10 with the question as the newest of 6 turns; the 5 before it from the
#: same moment / random): chosen on conversations 0-1 (one embedding of the joined turns
#: 0.22 / 0.13, the plain mean 0.11 / 0.05, decay 0.5 0.47 / 0.32, 0.25 0.52 / 0.46, the
#: question alone 0.50); held out, conversations 2-3: joined 0.22 / 0.14, plain mean
#: 0.10 / 0.04, decay 0.25 0.56 / 0.48, the question alone 0.51.
_TURN_DECAY = 0.25


def _conversation_vector(idx: Any, turns: Sequence[str]) -> Any:
    """The conversation's embedding from its turns (oldest first): the normalized sum of
    each turn's unit vector weighted :data:`_TURN_DECAY` ``** age`` (``float32 (dim,)``;
    the newest turn says most of what the agent needs now), each vector from the index's
    query cache (:meth:`TenantIndex.query_vectors
    <reckon.recall.tenant_index.TenantIndex.query_vectors>`, an LRU keyed by text), so
    only the new turns are encoded, in one batch (an agent's next call brings two: its
    own reply and the user's new turn). ``None`` when no turn could be embedded."""
    import numpy as np

    vecs, weights = [], []
    newest_first = list(reversed(turns))
    for age, v in enumerate(idx.query_vectors(newest_first)):
        n = float(np.linalg.norm(v)) if v is not None else 0.0
        if n > 0:
            vecs.append(np.asarray(v, dtype=np.float32) / n)
            weights.append(_TURN_DECAY ** age)
    if not vecs:
        return None
    total = (np.stack(vecs) * np.asarray(weights, dtype=np.float32)[:, None]).sum(axis=0)
    norm = float(np.linalg.norm(total))
    return (total / norm).astype(np.float32) if norm > 0 else None




def _blocks(items: list[BundleItem], sims: dict[str, float] | None) -> list[BundleBlock]:
    """The items in blocks, each ordered by similarity (``sims``: id -> cosine; None:
    by importance, then recency), overridden items last."""
    groups: dict[str, list[BundleItem]] = defaultdict(list)
    for it in items:
        groups[it.block].append(it)

    def order(its: list[BundleItem]) -> list[BundleItem]:
        def recency(i: BundleItem) -> float:
            return -(_utc(i.updated_at or i.created_at) or _EPOCH).timestamp()

        def key(i: BundleItem) -> tuple[Any, ...]:
            if sims is not None:
                return (i.overridden_by is not None, -sims.get(i.id, 0.0), -i.importance, recency(i), i.id)
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


