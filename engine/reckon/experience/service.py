"""Experience records and strategy cards (ontology/experience.ttl; seed 000 "Evolving
Memory", seed 001 "Procedural strategies").

Seed 000: Evolving Memory "stores structured experience records that persist across
sessions and are retrieved by semantic similarity at the start of future tasks"; each
record holds a task trace and a reusable lesson, the *strategy card* ("given a task of
this shape, here is how to approach it"); procedural records "can be promoted ... after
exceeding a configurable access threshold (promotionAccessThreshold, default 5)".

Here an experience is an ``xp:Experience`` node (task, outcome, what worked, what failed,
tools, the approach taken, session, author, time) in ``<urn:reckon:graph:experience>``,
SHACL-validated and written in one store transaction. The approach text becomes an
``xp:Strategy`` node, one per normalised text (NFKC, case-folded, white space
collapsed), so every run that took the same approach strengthens one strategy instead of
duplicating it (seed 001: "strengthened not duplicated"). ``rules/experience.srl``
counts each strategy's successful runs and promotes it to a card once the count reaches
the tenant setting ``strategy_promotion_threshold`` (default 5, seed 000): promotion is
derived, so lowering the setting promotes at once and a deleted success demotes.

Retrieval by task similarity (:meth:`ExperienceService.similar`,
:meth:`ExperienceService.recommend`): cosine similarity of the engine's embedder
(all-MiniLM-L6-v2 when installed) between the new task and the recorded tasks, top-k
with k = 4 by default (seed 000 ``topK: 4``). If the embedder fails, ranking falls back to
word overlap (seed 000: "If query embedding fails, retrieval degrades gracefully to
keyword results").
"""

from __future__ import annotations

import builtins
import hashlib
import re
import threading
import unicodedata
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyoxigraph import Literal, NamedNode, Quad, Triple

from reckon import vocab as V
from reckon._args import checked_methods
from reckon._errors import InvalidInput, ReckonError, UnknownMemory
from reckon.memory import _rdf as R
from reckon.memory.models import Principal
from reckon.store.terms import check_text
from reckon.vocab import BUSINESS, EXPERIENCE, INFERRED, MEMORIES, XP, xp

__all__ = ["OUTCOMES", "XP", "Experience", "ExperienceHit", "ExperienceService", "StrategyCard"]

T_EXPERIENCE, T_STRATEGY = xp("Experience"), xp("Strategy")
P_TASK, P_OUTCOME, P_WORKED, P_FAILED, P_TOOL = xp("task"), xp("outcome"), xp("worked"), xp("failed"), xp("tool")
P_STRATEGY, P_KEY, P_AT, P_AUTHOR, P_SESSION = xp("usedStrategy"), xp("approachKey"), xp("at"), xp("author"), xp("session")
P_COUNT, P_PROMOTED = xp("successCount"), xp("promoted")
OUTCOMES: dict[str, NamedNode] = {"success": xp("Success"), "partial": xp("Partial"), "failure": xp("Failure")}
_OUTCOME_NAME = {v: k for k, v in OUTCOMES.items()}
TOP_K = 4
"""Default k of the similarity retrieval: seed 000 Evolving Memory ``topK: 4``."""

_Q_EXPERIENCES = (
    V.sparql_prefixes("xp") + f"SELECT ?e WHERE {{ GRAPH {EXPERIENCE} {{ ?e a xp:Experience ; xp:at ?at }} }} ORDER BY ?at ?e"
)
_Q_STRATEGIES = V.sparql_prefixes("xp") + f"SELECT ?s WHERE {{ GRAPH {EXPERIENCE} {{ ?s a xp:Strategy }} }} ORDER BY ?s"
_WORD = re.compile(r"\w+")


def normalize(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@dataclass(frozen=True)
class Experience:
    """One recorded run.

    :ivar id: 32 hex digits.
    :ivar outcome: ``"success"``, ``"partial"`` or ``"failure"``.
    :ivar strategy: the id of the strategy (approach) it took, or ``None``.
    :ivar at: when it was recorded (UTC).
    """

    id: str
    task: str
    outcome: str
    worked: str | None
    failed: str | None
    tools: tuple[str, ...]
    strategy: str | None
    approach: str | None
    at: datetime
    author: str
    session: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "task": self.task, "outcome": self.outcome, "worked": self.worked,
                "failed": self.failed, "tools": list(self.tools), "strategy": self.strategy,
                "approach": self.approach, "at": self.at.isoformat(), "author": self.author, "session": self.session}


@dataclass(frozen=True)
class StrategyCard:
    """A strategy with its rule-derived standing.

    :ivar id: 32 hex digits (from the normalised approach text).
    :ivar approach: the approach as first written.
    :ivar success_count: successful experiences that used it (derived).
    :ivar promoted: whether it is a strategy card (derived: success_count >= the setting).
    :ivar tasks: the tasks of its successful experiences.
    :ivar tools: the tools of its successful experiences, most used first.
    """

    id: str
    approach: str
    success_count: int
    promoted: bool
    tasks: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "approach": self.approach, "success_count": self.success_count,
                "promoted": self.promoted, "tasks": list(self.tasks), "tools": list(self.tools)}


@dataclass(frozen=True)
class ExperienceHit:
    """An experience (or card) and its similarity to the query task (cosine in [-1, 1],
    or word overlap in [0, 1] when the embedder failed)."""

    item: Experience | StrategyCard
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"score": round(self.score, 6), **self.item.to_dict()}


@checked_methods
class ExperienceService:
    """Experience records and strategy cards of one tenant (see the module docstring).

    :param store: the tenant store.
    :param memory: the tenant's ``MemoryService`` (its SHACL validator).
    :param embedder: an :class:`~reckon.recall.embed.Embedder` (or a name / ``None``:
        the engine's configuration), loaded on the first similarity query.
    """

    def __init__(self, store: Any, memory: Any, *, embedder: Any = None, wall: Any = None) -> None:
        self.store = store
        self.memory = memory
        self.tenant: str = store.tenant_id
        self._embedder_spec = embedder
        self._embedder: Any = None
        self._vectors: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._wall = wall or (lambda: datetime.now(UTC))

    # ------------------------------------------------------------------ ids
    def experience_iri(self, eid: str) -> NamedNode:
        return NamedNode(f"urn:reckon:{self.tenant}:experience:{eid}")

    def strategy_iri(self, approach: str) -> NamedNode:
        digest = hashlib.sha256(normalize(approach).encode("utf-8")).hexdigest()[:32]
        return NamedNode(f"urn:reckon:{self.tenant}:strategy:{digest}")

    @staticmethod
    def _hex(iri: Any) -> str:
        return str(iri.value).rsplit(":", 1)[-1]

    # ------------------------------------------------------------------ writes
    def record(self, task: str, outcome: str, *, principal: Principal, worked: str | None = None,
               failed: str | None = None, tools: Iterable[str] = (), strategy: str | None = None,
               session: str | None = None, at: datetime | None = None) -> Experience:
        """Record one run of ``task``.

        :param outcome: ``"success"``, ``"partial"`` or ``"failure"``.
        :param strategy: the approach taken, in words ("bisect the failing commit range");
            runs with the same normalised text share one strategy.
        :param at: when (time-zone-aware; default the in-graph clock, else now).
        :returns: the experience.
        :raises InvalidInput: a missing task, an unknown outcome, a naive ``at``, a tool
            that is not a string.
        :raises ShapeViolation: a field over its shape's limits (task 2,000 characters,
            worked / failed 4,000, at most 50 tools of 200).
        """
        if not isinstance(principal, Principal):
            raise InvalidInput("principal: a reckon Principal is required", field="principal")
        task = _text(task, "task", required=True)
        if outcome not in OUTCOMES:
            raise InvalidInput(f"outcome: one of {', '.join(OUTCOMES)}, not {outcome!r}", field="outcome")
        worked = _text(worked, "worked")
        failed = _text(failed, "failed")
        approach = _text(strategy, "strategy")
        session = _text(session, "session")
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
            raise InvalidInput("tools: a list of tool names is required", field="tools")
        tool_list = sorted({_text(t, "tools", required=True) for t in tools})
        if at is not None and (not isinstance(at, datetime) or at.tzinfo is None or at.utcoffset() is None):
            raise InvalidInput("at: a date-time with a time zone is required", field="at")
        eid = uuid.uuid4().hex
        node = self.experience_iri(eid)
        with self.store.transaction() as txn:
            view = txn.view
            when = at or _clock(view) or self._wall()
            person = R.person_iri(self.tenant, principal.person)
            if not view.contains(Quad(person, R.A, R.PERSON, MEMORIES)):
                txn.add(Quad(person, R.A, R.PERSON, MEMORIES))
            triples = [Triple(node, R.A, T_EXPERIENCE), Triple(node, P_TASK, Literal(task)),
                       Triple(node, P_OUTCOME, OUTCOMES[outcome]), Triple(node, P_AT, R.dt_literal(when, "at")),
                       Triple(node, P_AUTHOR, person)]
            triples += [Triple(node, P_TOOL, Literal(t)) for t in tool_list]
            for p, v in ((P_WORKED, worked), (P_FAILED, failed), (P_SESSION, session)):
                if v is not None:
                    triples.append(Triple(node, p, Literal(v)))
            s_iri = None
            if approach is not None:
                s_iri = self.strategy_iri(approach)
                triples.append(Triple(node, P_STRATEGY, s_iri))
                if not view.contains(Quad(s_iri, R.A, T_STRATEGY, EXPERIENCE)):
                    s_triples = [Triple(s_iri, R.A, T_STRATEGY), Triple(s_iri, R.LABEL, Literal(approach)),
                                 Triple(s_iri, P_KEY, Literal(normalize(approach)))]
                    self.memory._validate(s_iri, s_triples)
                    for t in s_triples:
                        txn.add(Quad(t.subject, t.predicate, t.object, EXPERIENCE))
            self.memory._validate(node, triples)
            for t in triples:
                txn.add(Quad(t.subject, t.predicate, t.object, EXPERIENCE))
        with self.store.snapshot() as view:
            got = self._read(view, node)
        assert got is not None
        return got

    def delete(self, experience_id: str, *, principal: Principal) -> None:
        """Delete an experience (operators, or its author); its strategy's count and
        promotion are re-derived.

        :raises UnknownMemory: no such experience.
        :raises InvalidInput: a member deleting another person's experience.
        """
        node = self._iri(experience_id)
        with self.store.transaction() as txn:
            authors = txn.view.objects(node, P_AUTHOR, EXPERIENCE)
            if not authors:
                raise UnknownMemory(f"no experience {experience_id!r} in tenant {self.tenant!r}")
            if not principal.is_operator and authors[0] != R.person_iri(self.tenant, principal.person):
                from reckon._errors import NotAuthorized

                raise NotAuthorized(f"{principal.person!r} may delete only their own experiences")
            txn.remove_pattern(node, None, None, EXPERIENCE)

    # ------------------------------------------------------------------ reads
    def _iri(self, experience_id: str) -> NamedNode:
        if not isinstance(experience_id, str) or not re.fullmatch(r"[0-9a-f]{32}", experience_id.rsplit(":", 1)[-1]):
            raise UnknownMemory(f"no experience {experience_id!r} in tenant {self.tenant!r}")
        return self.experience_iri(experience_id.rsplit(":", 1)[-1])

    def get(self, experience_id: str) -> Experience:
        """One experience by id.

        :raises UnknownMemory: no such experience."""
        node = self._iri(experience_id)
        with self.store.snapshot() as view:
            got = self._read(view, node)
        if got is None:
            raise UnknownMemory(f"no experience {experience_id!r} in tenant {self.tenant!r}")
        return got

    def experiences(self, *, outcome: str | None = None, strategy: str | None = None) -> builtins.list[Experience]:
        """Every experience by time (filtered by ``outcome`` / strategy id)."""
        if outcome is not None and outcome not in OUTCOMES:
            raise InvalidInput(f"outcome: one of {', '.join(OUTCOMES)}, not {outcome!r}", field="outcome")
        with self.store.snapshot() as view:
            out = [self._read(view, r["e"]) for r in view.query(_Q_EXPERIENCES)]
        return [e for e in out if e is not None and (outcome is None or e.outcome == outcome)
                and (strategy is None or e.strategy == strategy)]

    def strategies(self, *, promoted: bool | None = None) -> builtins.list[StrategyCard]:
        """Every strategy with its derived success count and promotion, most successful
        first (``promoted=True``: only the strategy cards)."""
        with self.store.snapshot() as view:
            cards = [self._card(view, r["s"]) for r in view.query(_Q_STRATEGIES)]
        cards = [c for c in cards if promoted is None or c.promoted == promoted]
        return sorted(cards, key=lambda c: (-c.success_count, c.approach))

    def similar(self, task: str, *, k: int = TOP_K, outcome: str | None = None) -> builtins.list[ExperienceHit]:
        """The ``k`` recorded experiences whose task is most similar to ``task`` (seed
        000: "embed the incoming task, retrieve top-K memories"), best first.

        :raises InvalidInput: an empty task or a k outside 1..100.
        """
        task = _text(task, "task", required=True)
        _k(k)
        exps = self.experiences(outcome=outcome)
        scores = self._scores(task, [e.task for e in exps])
        hits = [ExperienceHit(e, s) for e, s in zip(exps, scores)]
        return sorted(hits, key=lambda h: (-h.score, h.item.id))[:k]

    def recommend(self, task: str, *, k: int = TOP_K) -> builtins.list[ExperienceHit]:
        """The strategy cards (promoted strategies) for ``task``: each scored by the
        highest similarity between ``task`` and the tasks it succeeded on, best first.

        :raises InvalidInput: an empty task or a k outside 1..100.
        """
        task = _text(task, "task", required=True)
        _k(k)
        cards = self.strategies(promoted=True)
        hits = []
        for c in cards:
            scores = self._scores(task, list(c.tasks)) if c.tasks else [0.0]
            hits.append(ExperienceHit(c, max(scores)))
        return sorted(hits, key=lambda h: (-h.score, h.item.id))[:k]

    # ------------------------------------------------------------------ internals
    def _scores(self, query: str, texts: builtins.list[str]) -> builtins.list[float]:
        if not texts:
            return []
        try:
            import numpy as np

            emb = self._get_embedder()
            missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
            if missing:
                for t, v in zip(missing, emb.encode(missing)):
                    self._vectors[t] = v
            q = emb.encode([query])[0]
            mat = np.stack([self._vectors[t] for t in texts])
            return [float(x) for x in mat @ q]
        except (ReckonError, ImportError, OSError, RuntimeError, ValueError):
            qw = set(_WORD.findall(normalize(query)))
            return [len(qw & set(_WORD.findall(normalize(t)))) / (len(qw | set(_WORD.findall(normalize(t)))) or 1)
                    for t in texts]

    def _get_embedder(self) -> Any:
        with self._lock:
            if self._embedder is None:
                from reckon.recall.embed import configured_embedder

                self._embedder = configured_embedder(self._embedder_spec)
            return self._embedder

    def _read(self, view: Any, node: Any) -> Experience | None:
        po: dict[Any, builtins.list[Any]] = {}
        for q in view.quads(node, None, None, EXPERIENCE):
            po.setdefault(q.predicate, []).append(q.object)
        if T_EXPERIENCE not in po.get(R.A, []):
            return None

        def one(p: NamedNode) -> Any:
            v = po.get(p)
            return v[0].value if v else None

        s = (po.get(P_STRATEGY) or [None])[0]
        approach = None
        if s is not None:
            labels = view.objects(s, R.LABEL, EXPERIENCE)
            approach = labels[0].value if labels else None
        author = (po.get(P_AUTHOR) or [NamedNode("urn:x:person:")])[0].value.rsplit(":person:", 1)[-1]
        from urllib.parse import unquote

        return Experience(self._hex(node), one(P_TASK), _OUTCOME_NAME.get((po.get(P_OUTCOME) or [None])[0], "failure"),
                          one(P_WORKED), one(P_FAILED), tuple(sorted(t.value for t in po.get(P_TOOL, []))),
                          self._hex(s) if s is not None else None, approach,
                          datetime.fromisoformat(one(P_AT)), unquote(author), one(P_SESSION))

    def _card(self, view: Any, s: Any) -> StrategyCard:
        labels = view.objects(s, R.LABEL, EXPERIENCE)
        counts = [int(c.value) for c in view.objects(s, P_COUNT, INFERRED)]
        promoted = any(v.value == "true" for v in view.objects(s, P_PROMOTED, INFERRED))
        tasks: list[str] = []
        tools: dict[str, int] = {}
        for q in view.quads(None, P_STRATEGY, s, EXPERIENCE):
            e = q.subject
            if view.contains(Quad(e, P_OUTCOME, OUTCOMES["success"], EXPERIENCE)):
                tasks += [t.value for t in view.objects(e, P_TASK, EXPERIENCE)]
                for t in view.objects(e, P_TOOL, EXPERIENCE):
                    tools[t.value] = tools.get(t.value, 0) + 1
        return StrategyCard(self._hex(s), labels[0].value if labels else "", max(counts, default=0), promoted,
                            tuple(sorted(set(tasks))), tuple(sorted(tools, key=lambda t: (-tools[t], t))))


def _text(value: Any, field: str, *, required: bool = False) -> Any:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field}: a non-empty string is required", field=field)
    return check_text(value, field)


def _k(k: Any) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
        raise InvalidInput("k: an integer from 1 to 100", field="k")


def _clock(view: Any) -> datetime | None:
    for v in view.objects(R.rk("clock"), R.rk("now"), BUSINESS):
        try:
            t = datetime.fromisoformat(v.value)
        except ValueError:
            continue
        return t if t.tzinfo else t.replace(tzinfo=UTC)
    return None
