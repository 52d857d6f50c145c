"""Search over transcripts: every turn is a document of a per-tenant
:class:`~reckon.recall.tenant_index.TenantIndex` (directory ``<tenant>/recall-turns``),
derived from the store's commits like the memory index and ranked by the same hybrid
pipeline with the turn-search configuration :data:`TURN_RANKING`.

A turn's document is ``"speaker: text"`` (plus ``[shares a photo: caption]`` when it has
one) with the turn before it in the same conversation as its context: BM25 ranks the
text alone and, as a third ranker, the text with that context; the vector is
``normalise(v(turn) + 0.5 * v(previous turn))`` (:func:`turn_parts`), so a reply such as
"Yes, last Sunday!" is found through the question it answers and every turn is embedded
once (not once alone and once inside the next turn's document). On the five LoCoMo dev
conversations this mix measured R@10 68.4 against 67.7 for embedding the concatenated
pair, at half the tokens (``bench/recall_locomo.py``). RM3-style keyword feedback from
the top 5 fused hits expands the query; no recency (turns are searched for what was
said, not for what is new).

Recording turns never waits for an embedding: the turns are searchable by keyword when
``record_turns`` returns and by vector once the background thread has embedded them
(:meth:`TurnIndex.wait`). Vectors persist beside the store, keyed by the embedded text,
so nothing is embedded twice; a process killed before its queue drained leaves turns
without a vector, which the next process to open the index embeds.

Search checks visibility against the store: an operator sees every conversation, a
member the conversations they spoke in (``ag:participant``, derived by rules/agent.srl).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pyoxigraph import NamedNode

from reckon._errors import InvalidInput
from reckon.memory.models import Principal
from reckon.recall.rank import RankConfig
from reckon.transcripts.models import ROLES, Turn, TurnHit
from reckon.transcripts.service import P_PARTICIPANT, T_CONV, TranscriptService

__all__ = ["TURN_CONTEXT_WEIGHT", "TURN_RANKING", "TurnIndex", "turn_document", "turn_line", "turn_parts"]

log = logging.getLogger("reckon.recall")

TURN_RANKING = RankConfig.model_validate(dict(
    half_life_days=None, access_weight=0.0, feedback_weight=0.0, mmr_lambda=None,
    depth=25, context_keyword_weight=1.0, prf_docs=5, prf_terms=10,
    prf_keyword_weight=0.5, prf_vector_weight=0.0,
))
"""Ranking of turn search: RRF of BM25 (text), MiniLM (turn + 0.5 x the one before) and
BM25 (turn + the one before), depth 25, keyword pseudo-relevance feedback."""

TURN_CONTEXT_WEIGHT = 0.5
"""Weight of the previous turn's embedding in a turn's vector (see the module docstring;
0.3-1.0 all measured R@10 68.0-68.4 on the LoCoMo dev conversations)."""

_LEGACY = ("meta.json", "embeddings*.npy", ".meta.json.*.tmp")  # the index format before the derived one


def turn_parts(text: str, context: str | None) -> tuple[tuple[str, float], ...]:
    """The :data:`~reckon.recall.tenant_index.Parts` of a turn's vector: its line, and
    the previous turn's line with weight :data:`TURN_CONTEXT_WEIGHT`."""
    if not context:
        return ((text, 1.0),)
    return ((text, 1.0), (context, TURN_CONTEXT_WEIGHT))


def turn_line(t: Turn) -> str:
    """The text a turn is indexed and embedded by: ``"<speaker or role>: <text>"``, with
    ``" [shares a photo: <caption>]"`` when it has a caption."""
    who = t.speaker or t.role
    text = f"{who}: {t.text}" if t.text else f"{who}:"
    if t.caption:
        text += f" [shares a photo: {t.caption}]"
    return text


def turn_document(t: Turn, previous: Turn | None) -> dict[str, Any]:
    """The index document of turn ``t`` (``previous``: the turn before it in the same
    conversation, or ``None``)."""
    return dict(
        id=t.iri, text=turn_line(t), time=t.at, kind=t.role,
        context=turn_line(previous) if previous is not None and previous.conversation == t.conversation else None,
        conversation=t.conversation,
    )


class TurnIndex:
    """The transcript search index of one tenant.

    :param transcripts: the tenant's :class:`~reckon.transcripts.service.TranscriptService`.
    :param directory: where the index persists (``None`` = in memory).
    :param embedder: the embedder (share the memory index's; ``None`` = the configured one).
    :param background: embed in a background thread (False: on the calling thread).
    """

    def __init__(self, transcripts: TranscriptService, directory: Path | None, *, embedder: Any = None,
                 background: bool = True) -> None:
        self.transcripts = transcripts
        self.store = transcripts.store
        self._directory = directory
        self._embedder = embedder
        self._background = background
        self._tindex: Any = None
        self._lock = threading.RLock()

    @property
    def tenant_index(self) -> Any:
        """The underlying :class:`~reckon.recall.tenant_index.TenantIndex` (opened on
        first use: snapshot + the commits since, or every turn of the store)."""
        with self._lock:
            if self._tindex is None:
                from reckon.recall.embed import configured_embedder
                from reckon.recall.tenant_index import TenantIndex

                if self._directory is not None:
                    for pattern in _LEGACY:
                        for old in self._directory.glob(pattern):
                            old.unlink(missing_ok=True)
                self._tindex = TenantIndex(
                    self.store, self._read_docs,
                    memory_prefix=f"urn:reckon:{self.transcripts.tenant}:conversation:", full_ids=True,
                    embedder=configured_embedder(self._embedder), directory=self._directory,
                    config=TURN_RANKING, background=self._background, parts=turn_parts,
                )
            return self._tindex

    @property
    def index(self) -> Any:
        """The :class:`~reckon.recall.index.RecallIndex` holding the turn documents."""
        return self.tenant_index.index

    def _read_docs(self, view: Any, ids: Collection[str] | None) -> dict[str, dict[str, Any] | None]:
        """The :data:`~reckon.recall.tenant_index.DocReader` of turns (ids: turn IRIs)."""
        ts = self.transcripts
        if ids is None:
            turns = ts.all_turns(view)
            by_iri = {t.iri: t for t in turns}
            return {t.iri: turn_document(t, by_iri.get(ts.turn_iri(f"{t.conversation}/{t.order - 1}").value)
                                         if t.order > 0 else None) for t in turns}
        out: dict[str, dict[str, Any] | None] = {}
        for i in ids:
            t = ts._read(view, NamedNode(i)) if "/turn/" in i else None  # noqa: SLF001 - same package
            if t is None:
                out[i] = None
                continue
            prev = ts._read(view, ts.turn_iri(f"{t.conversation}/{t.order - 1}")) if t.order > 0 else None  # noqa: SLF001
            out[i] = turn_document(t, prev)
        return out

    def add(self, turns: Sequence[Turn]) -> None:
        """After turns were recorded: index them from the commit (keyword at once) and
        embed them in the background."""
        ti = self.tenant_index
        ti.sync()
        if turns:
            ti.start_embedding()

    def sync(self) -> None:
        """Bring the index to the store's committed generation."""
        self.tenant_index.sync()

    def wait(self, timeout: float | None = 60.0) -> bool:
        """Block until every indexed turn has its vector (False on timeout or while the
        embedder is failing)."""
        ti = self.tenant_index
        ti.sync()
        return bool(ti.wait(timeout))

    def pending(self) -> int:
        """Turns waiting for their embedding."""
        return int(self.tenant_index.pending())

    def close(self) -> None:
        """Stop the background thread and write a snapshot (if the index was opened)."""
        if self._tindex is not None:
            self._tindex.close()

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
        allowed: set[str] | None = None
        if not principal.is_operator:
            me = self.transcripts.memory._person(principal.person)  # noqa: SLF001
            with self.store.snapshot() as view:
                allowed = set()
                for c in view.subjects(P_PARTICIPANT, me, None):
                    if isinstance(c, NamedNode) and view.contains(_type_quad(c)):
                        allowed.add(c.value)
        want_conv = set(conversations) if conversations is not None else None

        def ok(d: Any) -> bool:
            if want_conv is not None and d.extra.get("conversation") not in want_conv:
                return False
            return allowed is None or d.id.split("/turn/", 1)[0] in allowed

        def mask(ix: Any) -> np.ndarray:
            return ix.filter_mask(kinds=roles) if roles is not None else np.ones(len(ix), dtype=bool)

        hits = self.tenant_index.search(query, limit=k, mask_fn=mask, config=TURN_RANKING,
                                        where=ok if allowed is not None or want_conv is not None else None)
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
