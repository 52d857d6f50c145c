"""Semantic edges of the event graph: ``ev:similarTo`` (symmetric) between two events
whose labels' embeddings have a cosine similarity of at least the tenant setting
``event_similarity_threshold`` (seed 000 MAGMA's semantic graph: "SIMILAR_TO edges from
embedding similarity").

**Off the write path.** :meth:`EventGraph.record <reckon.events.EventGraph.record>`
returns once its transaction commits; the events it wrote are queued here and a
background thread (one per tenant graph, started on first need, like the recall index's
embedding thread in :mod:`reckon.recall.tenant_index`) embeds their labels with the
tenant's embedder, compares them with every other event of the graph and writes the
edges, both directions, to ``<urn:reckon:graph:events>`` in one transaction per batch.
That transaction first checks that both ends are still events, so an event deleted in
between never gets an edge (the store stays consistent). When a process opens the graph
it compares every event once in the background (:meth:`Similarity.catch_up`): the
edges of events whose process stopped before its queue drained are written then, and so
are the edges under a threshold another process changed. Episodes (sessions) are not
compared: their labels name a session, not what happened.

Vectors are kept in a :class:`~reckon.recall.vectors.VectorFile` of their own beside the
store (``<tenant>/recall/events/vectors-<embedder>.f32``, keyed by the digest of the
label), so no label is embedded twice, across processes too; the recall index's file is
compacted to the memories it indexes and is therefore not shared.

**The default threshold, 0.7**, was measured with all-MiniLM-L6-v2 on the five
conversations of LoCoMo's dev file (302 ``event_summary`` events, 10,930 pairs within a
conversation): 0.5 gives 1,326 edges, 0.6 gives 596, 0.7 gives 211 and 0.8 gives 42.
At 0.5-0.6 the speaker's name dominates ("Caroline attends an LGBTQ support group" ~
"Caroline attends an adoption council meeting", 0.59): most of a speaker's events join
one cluster and the edge says little. At 0.8 clear paraphrases of one topic are lost
("... LGBTQ support group ..." ~ "Caroline joins a mentorship program for LGBTQ youth",
0.77). 0.7 keeps those and gives 0.7 edges per event, a sparse graph worth walking.
The threshold is a per-tenant setting (``ontology/events.ttl`` ``ev:similarityThreshold``);
a new value applies to the events compared after it and to every event at the next
catch-up (:meth:`Similarity.rebuild` recomputes every edge at once).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
from pyoxigraph import NamedNode, Quad

from reckon.memory import _rdf as R
from reckon.vocab import EVENTS, ev

__all__ = ["DEFAULT_THRESHOLD", "P_SIMILAR", "Similarity"]

log = logging.getLogger("reckon.events")

DEFAULT_THRESHOLD = 0.7
P_SIMILAR = ev("similarTo")
_T_EVENT, _T_EPISODE = ev("Event"), ev("Episode")


class Similarity:
    """The background maintainer of one tenant graph's ``ev:similarTo`` edges.

    :param store: the tenant store.
    :param embedder: an :class:`~reckon.recall.embed.Embedder` (or ``None``: the engine
        default, :func:`reckon.recall.embed.shared_embedder`).
    :param threshold: returns the tenant setting ``event_similarity_threshold`` (cosine
        in [0, 1]).
    :param directory: where the vector file lives (``None``: vectors in memory).
    """

    def __init__(self, store: Any, *, embedder: Any = None, threshold: Callable[[], float] | None = None,
                 directory: Path | None = None) -> None:
        self.store = store
        self._embedder = embedder
        self._threshold = threshold or (lambda: DEFAULT_THRESHOLD)
        self._directory = directory
        self._vectors: Any = None
        self._queue: set[NamedNode] = set()
        self._all = False  # compare every event (catch-up), not only the queue
        self._cv = threading.Condition()
        self._busy = False
        self._worker: threading.Thread | None = None

    # ------------------------------------------------------------------ queue
    def enqueue(self, events: Iterable[NamedNode]) -> None:
        """Queue events (IRIs) whose edges are to be computed; returns at once."""
        with self._cv:
            self._queue.update(events)
            if not self._queue and not self._all:
                return
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, daemon=True,
                                                name=f"reckon-similar-{self.store.tenant_id}")
                self._worker.start()
            self._cv.notify_all()

    def catch_up(self) -> None:
        """Compare every event in the background (once per process, when the graph is
        opened): the edges of events recorded by a process that stopped before its
        queue drained, and of every event after the threshold changed in another
        process, are written; nothing is written when they are right already."""
        with self._cv:
            self._all = True
        self.enqueue(())

    def pending(self) -> int:
        """Events queued or being compared (a catch-up counts one)."""
        with self._cv:
            return len(self._queue) + (1 if self._busy or self._all else 0)

    def wait(self, timeout: float | None = 60.0) -> bool:
        """Block until the queue is empty; ``False`` when ``timeout`` (seconds) passed."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._queue and not self._busy and not self._all, timeout=timeout)

    def rebuild(self) -> int:
        """Recompute the edges of every event with the current threshold (synchronously).

        :returns: the number of ``ev:similarTo`` edges (each pair once) afterwards."""
        with self.store.snapshot() as view:
            every = [q.subject for q in view.quads(None, R.A, _T_EVENT, EVENTS) if isinstance(q.subject, NamedNode)]
        self._compare(set(every))
        with self.store.snapshot() as view:
            return sum(1 for _ in view.quads(None, P_SIMILAR, None, EVENTS)) // 2

    def _work(self) -> None:
        while True:
            with self._cv:
                if not self._cv.wait_for(lambda: bool(self._queue) or self._all, timeout=30.0):
                    self._worker = None
                    return
                batch, self._queue, every = self._queue, set(), self._all
                self._all = False
                self._busy = True
            try:
                if every:
                    with self.store.snapshot() as view:
                        batch |= {q.subject for q in view.quads(None, R.A, _T_EVENT, EVENTS)
                                  if isinstance(q.subject, NamedNode)}
                self._compare(batch)
            except Exception:  # noqa: BLE001 - the edges are derived; the next write retries
                log.exception("event similarity for tenant %s failed", self.store.tenant_id)
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()

    # ------------------------------------------------------------------ compare
    def _get_embedder(self) -> Any:
        if self._embedder is None or isinstance(self._embedder, str):
            from reckon.recall.embed import shared_embedder

            self._embedder = shared_embedder(self._embedder)
        return self._embedder

    def _vector_file(self, emb: Any) -> Any:
        from reckon.recall.vectors import MemoryVectors, VectorFile

        vf = self._vectors
        if vf is None or vf.embedder != emb.name or vf.dim != emb.dim:
            if self._directory is not None:
                self._directory.mkdir(parents=True, exist_ok=True)
                vf = VectorFile(self._directory, emb.name, emb.dim)
            else:
                vf = MemoryVectors(emb.name, emb.dim)
            self._vectors = vf
        return vf

    def _embed(self, labels: list[str]) -> np.ndarray:
        emb = self._get_embedder()
        vf = self._vector_file(emb)
        vf.refresh()
        keys = [vf.key(t) for t in labels]
        known = vf.get_many(keys)
        missing = sorted({t for t, k in zip(labels, keys, strict=True) if k not in known})
        if missing:
            vecs = np.asarray(emb.encode(missing), dtype=np.float32)
            new = {vf.key(t): v for t, v in zip(missing, vecs, strict=True)}
            vf.add(new.items())
            known.update(new)
        out = np.zeros((len(labels), emb.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = known[k]
        return out

    def _compare(self, batch: set[NamedNode]) -> None:
        threshold = float(self._threshold())
        with self.store.snapshot() as view:
            events: list[NamedNode] = []
            labels: list[str] = []
            for q in view.quads(None, R.A, _T_EVENT, EVENTS):
                s = q.subject
                if not isinstance(s, NamedNode) or view.contains(Quad(s, R.A, _T_EPISODE, EVENTS)):
                    continue
                lab = next(iter(view.quads(s, R.LABEL, None, EVENTS)), None)
                if lab is not None:
                    events.append(s)
                    labels.append(lab.object.value)
        pos = {e: i for i, e in enumerate(events)}
        rows = [pos[e] for e in batch if e in pos]
        want: set[tuple[NamedNode, NamedNode]] = set()
        if rows and len(events) > 1:
            x = self._embed(labels)
            for lo in range(0, len(rows), 512):  # (512, n) float32 at a time, not (n, n)
                part = rows[lo:lo + 512]
                sims = x[part] @ x.T
                for r, i in enumerate(part):
                    for j in np.nonzero(sims[r] >= threshold)[0]:
                        if int(j) != i:
                            want.add((events[i], events[int(j)]))
                            want.add((events[int(j)], events[i]))
        touched = {e for e in batch if e in pos}
        with self.store.snapshot() as view:
            drop = {(e, q.object) for e in touched for q in view.quads(e, P_SIMILAR, None, EVENTS)
                    if (e, q.object) not in want}
            add = {p for p in want if not view.contains(Quad(p[0], P_SIMILAR, p[1], EVENTS))}
        if not drop and not add:
            return  # nothing to change: nothing written
        with self.store.transaction() as txn:
            view = txn.view
            for a, b in drop:  # edges of a compared event that are no longer wanted, both ways
                txn.remove(Quad(a, P_SIMILAR, b, EVENTS))
                txn.remove(Quad(b, P_SIMILAR, a, EVENTS))
            for a, b in sorted(add, key=lambda p: (p[0].value, p[1].value)):
                # both ends re-checked inside the transaction: an event deleted since the
                # snapshot never gets an edge
                if view.contains(Quad(a, R.A, _T_EVENT, EVENTS)) and view.contains(Quad(b, R.A, _T_EVENT, EVENTS)):
                    txn.add(Quad(a, P_SIMILAR, b, EVENTS))
