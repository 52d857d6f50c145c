"""Search over transcripts: every turn is a document of a per-tenant
:class:`~reckon.recall.index.RecallIndex` (directory ``<tenant>/recall-turns``), ranked
by the same hybrid pipeline as memories with the turn-search configuration
:data:`TURN_RANKING`.

A turn's document is ``"speaker: text"`` (plus ``[shares a photo: caption]`` when it has
one), embedded together with the turn before it in the same conversation (a reply such
as "Yes, last Sunday!" is found through the question it answers); BM25 ranks the text
alone and, as a third ranker, the text with that context; RM3-style keyword feedback
from the top 5 fused hits expands the query. Those parameters were fixed on one LoCoMo
conversation (conv-26) with ``bench/recall_locomo.py``; no recency (turns are searched
for what was said, not for what is new).

The index is a cache of the store: :meth:`TurnIndex.sync` indexes every turn the store
holds that the index lacks (written by another process, or before the index existed),
and search checks visibility against the store: an operator sees every conversation, a
member the conversations they spoke in (``ag:participant``, derived by
rules/agent.srl).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from pyoxigraph import NamedNode

from reckon import vocab
from reckon._errors import InvalidInput
from reckon.memory.models import Principal
from reckon.recall.rank import RankConfig
from reckon.transcripts.models import ROLES, Turn, TurnHit
from reckon.transcripts.service import P_PARTICIPANT, T_CONV, TranscriptService

__all__ = ["TURN_RANKING", "TurnIndex", "turn_document"]

TURN_RANKING = RankConfig.model_validate(dict(
    half_life_days=None, access_weight=0.0, feedback_weight=0.0, mmr_lambda=None,
    depth=25, context_keyword_weight=1.0, prf_docs=5, prf_terms=10,
    prf_keyword_weight=0.5, prf_vector_weight=0.0,
))
"""Ranking of turn search: RRF of BM25 (text), MiniLM (turn embedded with the one before)
and BM25 (turn + the one before), depth 25, keyword pseudo-relevance feedback."""

_Q_COUNT = (vocab.sparql_prefixes("ag")
            + "SELECT (COUNT(?t) AS ?n) WHERE { GRAPH " + str(vocab.TRANSCRIPTS) + " { ?t a ag:Turn } }")


def _line(t: Turn) -> str:
    who = t.speaker or t.role
    text = f"{who}: {t.text}" if t.text else f"{who}:"
    if t.caption:
        text += f" [shares a photo: {t.caption}]"
    return text


def turn_document(t: Turn, previous: Turn | None) -> dict[str, Any]:
    """The index document of turn ``t`` (``previous``: the turn before it in the same
    conversation, or ``None``)."""
    return dict(
        id=t.iri, text=_line(t), time=t.at, kind=t.role,
        context=_line(previous) if previous is not None and previous.conversation == t.conversation else None,
        conversation=t.conversation,
    )


class TurnIndex:
    """The transcript search index of one tenant.

    :param transcripts: the tenant's :class:`~reckon.transcripts.service.TranscriptService`.
    :param directory: where the index persists (``None`` = in memory).
    :param embedder: the embedder (share the memory index's; ``None`` = the default).
    """

    def __init__(self, transcripts: TranscriptService, directory: Path | None, *, embedder: Any = None) -> None:
        self.transcripts = transcripts
        self.store = transcripts.store
        self._directory = directory
        self._embedder = embedder
        self._index: Any = None
        self._synced: int | None = None
        self._lock = threading.RLock()

    @property
    def index(self) -> Any:
        """The underlying :class:`~reckon.recall.index.RecallIndex`."""
        with self._lock:
            if self._index is None:
                from reckon.recall.index import RecallIndex

                self._index = RecallIndex(self._directory, embedder=self._embedder, config=TURN_RANKING)
            return self._index

    def add(self, turns: Sequence[Turn]) -> None:
        """Index turns just recorded (one embedding batch, one save)."""
        if not turns:
            return
        ix = self.index
        batch = {t.iri: t for t in turns}
        docs = []
        for t in turns:
            prev = None
            if t.order > 0:
                key = f"{self.transcripts.turn_iri(f'{t.conversation}/{t.order - 1}').value}"
                prev = batch.get(key)
                if prev is None:
                    try:
                        prev = self.transcripts.turn(key)
                    except Exception:  # noqa: BLE001 - no turn before it (orders may have gaps)
                        prev = None
            docs.append(turn_document(t, prev))
        with ix.batch():
            ix.add_many(docs)

    def sync(self) -> int:
        """Index every turn of the store the index lacks; returns how many were added."""
        gen = self.store.generation()
        if gen == self._synced:
            return 0
        with self.store.snapshot() as view:
            rows = view.query(_Q_COUNT)
            n = int(rows[0]["n"].value) if rows else 0
            added = 0
            if n != len(self.index):
                turns = self.transcripts.all_turns(view)
                by_iri = {t.iri: t for t in turns}
                missing = [t for t in turns if t.iri not in self.index]
                docs = []
                for t in missing:
                    prev = by_iri.get(self.transcripts.turn_iri(f"{t.conversation}/{t.order - 1}").value) \
                        if t.order > 0 else None
                    docs.append(turn_document(t, prev))
                if docs:
                    with self.index.batch():
                        for k in range(0, len(docs), 1000):
                            self.index.add_many(docs[k:k + 1000])
                added = len(docs)
        self._synced = gen
        return added

    def search(
        self,
        query: str,
        *,
        principal: Principal,
        k: int = 10,
        conversations: Collection[str] | None = None,
        roles: Collection[str] | None = None,
    ) -> list[TurnHit]:
        """Turns matching ``query``, best first, from the conversations ``principal`` may
        read (operators: all; members: those they spoke in).

        :param k: number of hits, 1..100.
        :param conversations: restrict to these conversation ids.
        :param roles: restrict to these roles (``"user"``, ``"assistant"``, ``"tool"`` ...).
        :raises InvalidInput: for a bad query, k, or role.
        """
        if not isinstance(principal, Principal):
            raise InvalidInput("principal: a reckon Principal is required", field="principal")
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query: a non-empty string is required", field="query")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
            raise InvalidInput(f"k: an integer 1-100 is required, got {k!r}", field="k")
        for name, vals in (("conversations", conversations), ("roles", roles)):
            if vals is not None and isinstance(vals, str):
                raise InvalidInput(f"{name}: give a list, e.g. [{vals!r}]", field=name)
        if roles is not None and any(r not in ROLES for r in roles):
            bad = next(r for r in roles if r not in ROLES)
            raise InvalidInput(f"roles: unknown role {bad!r}; allowed: {', '.join(ROLES)}", field="roles")
        self.sync()
        allowed: set[str] | None = None
        if not principal.is_operator:
            me = self.transcripts.memory._person(principal.person)  # noqa: SLF001
            with self.store.snapshot() as view:
                allowed = set()
                for c in view.subjects(P_PARTICIPANT, me, None):
                    if isinstance(c, NamedNode) and view.contains(_type_quad(c)):
                        allowed.add(c.value)
        want_conv = set(conversations) if conversations is not None else None
        want_roles = set(roles) if roles is not None else None

        def ok(d: Any) -> bool:
            conv = d.extra.get("conversation")
            if want_conv is not None and conv not in want_conv:
                return False
            if want_roles is not None and d.kind not in want_roles:
                return False
            return allowed is None or d.id.split("/turn/", 1)[0] in allowed

        hits = self.index.search(query, limit=k, where=ok, config=TURN_RANKING)
        out: list[TurnHit] = []
        for h in hits:
            try:
                out.append(TurnHit(turn=self.transcripts.turn(h.id), score=h.score))
            except Exception:  # noqa: BLE001 - gone from the store: skip
                continue
        return out


def _type_quad(c: NamedNode) -> Any:
    from pyoxigraph import Quad

    from reckon.memory import _rdf as R
    from reckon.store.graphs import TRANSCRIPTS

    return Quad(c, R.A, T_CONV, TRANSCRIPTS)
