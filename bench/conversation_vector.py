"""How the bundle's conversation vector ranks: one embedding of the joined turns (what
``Tenant.context`` did before) against a weighted mean of each turn's embedding (what it
does now, ``reckon.recall.bundle._conversation_vector``: a new turn costs one encode of
that turn alone; weight ``decay ** age``, the newest turn age 0, for several decays; the
shipped one is ``reckon.recall.bundle._TURN_DECAY``), on LoCoMo.

Data: LoCoMo (Maharana et al. 2024), ``../shared/data/locomo/locomo_dev.json``. For each
category 1-4 question of a conversation, an agent-like conversation window of the last
6 turns ending in the question: the 5 turns before it are (a) ``nearby``: the 5 turns
that precede the question's first evidence turn in the dialogue (the chat was about
that moment), or (b) ``random``: 5 turns drawn from the same dialogue (seeded), unrelated
chat before the question. The documents are every turn of that dialogue (``speaker:
text``), embedded with all-MiniLM-L6-v2; the score is evidence recall@10 of a cosine
top-10 (the bundle ranks its items the same way, by cosine). The window is cut like the
bundle's: whole turns within 2,000 characters, joined for the old method. A
``question alone`` row is the reference of a one-turn conversation.

Run: ``PYTHONPATH=engine python bench/conversation_vector.py [--conv N ...]``. A
benchmark of ranking quality, not speed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from reckon.recall.bundle import _conversation_turns  # noqa: E402
from reckon.recall.embed import MiniLMEmbedder  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo_dev.json"


DECAYS = (1.0, 0.5, 0.35, 0.25)


def weighted(vecs: list[np.ndarray], decay: float) -> np.ndarray:
    """Normalized ``sum(decay**age * v)`` of unit vectors, oldest first (newest age 0)."""
    w = np.array([decay ** (len(vecs) - 1 - i) for i in range(len(vecs))], dtype=np.float32)
    m = (np.stack(vecs) * w[:, None]).sum(axis=0)
    return m / np.linalg.norm(m)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--conv", type=int, nargs="*", default=None, help="conversation indexes (default: all)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "bench"))
    import recall_locomo as lm  # the LoCoMo reader of bench/recall_locomo.py, a sibling script

    data = json.loads(args.data.read_text())
    convs = args.conv if args.conv is not None else list(range(len(data)))
    emb = MiniLMEmbedder()
    cache: dict[str, np.ndarray] = {}

    def vec(texts: list[str]) -> list[np.ndarray]:
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        if todo:
            for t, v in zip(todo, emb.encode(todo)):
                cache[t] = v / np.linalg.norm(v)
        return [cache[t] for t in texts]

    methods = ["joined", *(f"decay {d:g}" for d in DECAYS), "question"]
    rows: dict[str, dict[str, list[float]]] = {w: {m: [] for m in methods} for w in ("nearby", "random")}
    for ci in convs:
        conv = data[ci]
        turns = lm.turns_of(conv)
        docs = [f"{t['speaker']}: {t['text']}" for t in turns]
        ids = [lm.dia_key(t["dia_id"]) for t in turns]
        pos = {d: i for i, d in enumerate(ids)}
        mat = np.stack(vec(docs))
        rng = random.Random(ci)
        for q, ev in lm.questions_of(conv):
            first = min(pos[e] for e in ev if e in pos)
            windows = {"nearby": docs[max(0, first - 5):first], "random": rng.sample(docs, 5)}
            for w, before in windows.items():
                window = _conversation_turns([*before, f"user: {q}"])
                qvs = {"joined": vec(["\n".join(window)])[0], "question": vec([f"user: {q}"])[0]}
                for d in DECAYS:
                    qvs[f"decay {d:g}"] = weighted(vec(window), d)
                for name, qv in qvs.items():
                    top = np.argsort(-(mat @ qv))[:10]
                    rows[w][name].append(lm.recall_at([ids[i] for i in top], ev, 10))
        print(f"conversation {ci}: {len(docs)} turns, {len(lm.questions_of(conv))} questions", file=sys.stderr)
    print(f"\nevidence recall@10 of a cosine top-10, all-MiniLM-L6-v2, conversations {convs}")
    print("methods: joined = one embedding of the joined window (before); decay d = normalized mean of the turns'"
          " unit vectors weighted d**age (newest age 0; d=1 the plain mean); question = the last turn alone")
    print(f"{'window':<8} " + " ".join(f"{m:>10}" for m in methods) + f" {'n':>6}")
    for w, r in rows.items():
        print(f"{w:<8} " + " ".join(f"{statistics.mean(r[m]):>10.3f}" for m in methods) + f" {len(r['joined']):>6}")


if __name__ == "__main__":
    main()
