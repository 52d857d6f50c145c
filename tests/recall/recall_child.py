"""Child process for the recall index's multi-process and SIGKILL tests (run as a script).

usage: python recall_child.py <data_dir> <tenant> <command> [args...]

commands:
  remember-stuck <label>     open the index, remember one memory with an embedder whose
                             document encodes never return (named like the hashing
                             embedder), print "committed <id>", then wait to be killed
  update <id> <importance>   operator update of a memory's importance
  remember <label> <content> remember a company fact; prints its id
  loop <n>                   n remembers, a search after each; prints "acked <id>" after
                             each write returned (the parent SIGKILLs it at some point)
  snapshot-loop <n>          n remembers (index open); after each, the recall snapshot is
                             written again (BM25 arrays included); prints "acked <id>"
                             after each write (the parent SIGKILLs it, often mid-snapshot)
  record-stuck <conv> <n>    record n turns of conversation conv (one record_turns call)
                             with the stuck embedder, print "committed <n>", then wait to
                             be killed
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2] / "engine"), str(HERE.parents[2])]

import numpy as np  # noqa: E402

from reckon import ConflictPending  # noqa: E402
from reckon.api import Engine, Principal  # noqa: E402
from reckon.recall import HashingEmbedder  # noqa: E402

OPS = Principal.operator(person="dana")


class StuckHashing(HashingEmbedder):
    """The hashing embedder (same name, so the same vector file), except that encoding a
    document (anything but a query of one text starting with 'q:') never returns."""

    def encode(self, texts: list[str]) -> np.ndarray:
        if not (len(texts) == 1 and texts[0].startswith("q:")):
            threading.Event().wait()
        return super().encode(texts)


def remember(tenant, label: str, content: str):  # type: ignore[no-untyped-def]
    fields = dict(kind="fact", scope="company", importance=3, source="operator", label=label,
                  content=content, principal=OPS)
    try:
        return tenant.remember(**fields)
    except ConflictPending as c:
        return tenant.remember(**fields, conflict_resolution="keep_both", conflict_id=c.conflict_id)


def main() -> None:
    data_dir, tenant_id, cmd, *args = sys.argv[1:]
    if cmd == "remember-stuck":
        tenant = Engine(data_dir, embedder=StuckHashing()).tenant(tenant_id)
        tenant.search("q: open the index", principal=OPS)
        m = remember(tenant, args[0], f"{args[0]} content words")
        print(f"committed {m.id}", flush=True)
        time.sleep(600)
    if cmd == "record-stuck":
        tenant = Engine(data_dir, embedder=StuckHashing(), jobs=False).tenant(tenant_id)
        turns = [dict(conversation=args[0], text=f"turn {i} about the spring launch {uuid.uuid4().hex[:6]}",
                      speaker="ann", role="user") for i in range(int(args[1]))]
        got = tenant.record_turns(turns, principal=OPS)
        print(f"committed {len(got)}", flush=True)
        time.sleep(600)
    tenant = Engine(data_dir, embedder="hashing").tenant(tenant_id)
    if cmd == "update":
        tenant.update(args[0], principal=OPS, importance=int(args[1]))
    elif cmd == "remember":
        print(remember(tenant, args[0], args[1]).id, flush=True)
    elif cmd == "loop":
        for i in range(int(args[0])):
            words = [uuid.uuid4().hex[:8] for _ in range(3)]
            m = remember(tenant, f"loop {i} {words[0]}", " ".join(words[1:]))
            print(f"acked {m.id}", flush=True)
            tenant.search(words[1], principal=OPS)
    elif cmd == "snapshot-loop":
        idx = tenant.recall.index
        for i in range(int(args[0])):
            words = [uuid.uuid4().hex[:8] for _ in range(3)]
            m = remember(tenant, f"snap {i} {words[0]}", " ".join(words[1:]))
            print(f"acked {m.id}", flush=True)
            idx._snap_gen = None  # noqa: SLF001 - force a rewrite of the snapshot every time
            idx.save_snapshot()
    else:  # pragma: no cover
        raise SystemExit(f"unknown command {cmd}")
    tenant.store.close()


if __name__ == "__main__":
    main()
