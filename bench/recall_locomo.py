"""LoCoMo turn-level evidence recall for Reckon's recall layer, with peers side by side.

Data: LoCoMo (Maharana et al. 2024, "Evaluating Very Long-Term Conversational Memory of
LLM Agents"), ``../shared/data/locomo/locomo_dev.json``. One :class:`RecallIndex` per
conversation; every turn is a document ``"speaker: text"`` timed at its session's date;
every category 1-4 question (single-hop, temporal, open-domain, multi-hop; category 5
adversarial questions are excluded) is a search. Evidence dialog ids are every
``D<session>:<turn>`` found in the evidence strings (some entries hold several,
e.g. ``"D8:6; D9:17"``). Recall@k of a question = evidence turns in the top k / evidence
turns; the table gives the mean over questions.

Systems (same run, same MiniLM model, same tokeniser):

* ``BM25``      -- keyword ranking alone (bm25s, k1=1.2, b=0.75).
* ``MiniLM``    -- cosine ranking alone (all-MiniLM-L6-v2).
* ``RRF``       -- plain Reciprocal Rank Fusion of the two (k=60).
* ``Reckon``    -- the full pipeline with the components printed under the table; the
  ablation rows add one technique at a time. No model call, no LoCoMo-specific rule: the
  techniques (shallow fusion depth, neighbouring-turn context, image captions as text,
  RM3-style keyword feedback) are general, and their parameters were fixed on the first
  conversation only; per-conversation R@10 is printed so held-back conversations can be
  compared.

Run: ``PYTHONPATH=engine python bench/recall_locomo.py [--data PATH] [--conv N ...]``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))

import json  # noqa: E402

import numpy as np  # noqa: E402

from reckon.recall import RankConfig, RecallIndex  # noqa: E402
from reckon.recall.embed import MiniLMEmbedder  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
DIA = re.compile(r"D(\d+):(\d+)")
KS = (5, 10, 25)

OFF = dict(half_life_days=None, access_weight=0.0, feedback_weight=0.0, mmr_lambda=None)
#: Peers: each ranker alone and plain RRF (k=60) of their full top-100 lists.
BASELINES: dict[str, RankConfig] = {
    "BM25": RankConfig(use_vector=False, depth=100, **OFF),
    "MiniLM": RankConfig(use_keyword=False, depth=100, **OFF),
    "RRF": RankConfig(depth=100, **OFF),
}
#: Reckon's configuration for LoCoMo. Recency off (questions carry no query time);
#: access / feedback boosts are on but neutral (no usage history: both factors are 1);
#: MMR off (evidence turns of one question are often near-paraphrases; see the ablation).
#: Parameters (depth 25, context ranker weight 1, PRF 5 docs / 10 terms / weight 0.5)
#: were fixed on the first conversation (conv-26) only.
RECKON = RankConfig(
    half_life_days=None, access_weight=0.1, feedback_weight=0.2, mmr_lambda=None,
    depth=25, context_keyword_weight=1.0, prf_docs=5, prf_terms=10,
    prf_keyword_weight=0.5, prf_vector_weight=0.0,
)
#: Ablation: (index, config) -- "base" = plain "speaker: text" documents, "reckon" =
#: documents with image captions, embedded with the preceding turn.
ABLATION: dict[str, tuple[str, RankConfig]] = {
    "RRF, depth 25": ("base", RankConfig(depth=25, **OFF)),
    "+ captions, turn embedded with preceding turn": ("reckon", RankConfig(depth=25, **OFF)),
    "+ BM25 over preceding + turn (3rd ranker)": ("reckon", RECKON.model_copy(update={"prf_docs": 0})),
    "+ keyword PRF = Reckon": ("reckon", RECKON),
    "Reckon + MMR lambda 0.9": ("reckon", RECKON.model_copy(update={"mmr_lambda": 0.9})),
    "Reckon + vector PRF (Rocchio 0.5)": ("reckon", RECKON.model_copy(update={"prf_vector_weight": 0.5})),
}


class CachedEmbedder:
    """Wraps an embedder with a text -> vector cache kept in a ``.npz`` file, so reruns
    of the benchmark (and its ablations) do not re-encode. Vectors are identical to the
    wrapped embedder's."""

    def __init__(self, inner: Any, path: Path | None) -> None:
        self.inner, self.path = inner, path
        self.name, self.dim = inner.name, inner.dim
        self.cache: dict[str, Any] = {}
        if path is not None and path.exists():
            with np.load(path, allow_pickle=False) as z:
                self.cache = dict(zip(z["texts"].tolist(), z["vecs"]))
        self.misses = 0

    def encode(self, texts: list[str]) -> Any:
        todo = sorted({t for t in texts if t not in self.cache})
        if todo:
            self.misses += len(todo)
            for t, v in zip(todo, self.inner.encode(todo)):
                self.cache[t] = v
        return np.stack([self.cache[t] for t in texts]) if texts else self.inner.encode([])

    def save(self) -> None:
        if self.path is not None and self.misses:
            self.misses = 0
            texts = list(self.cache)
            np.savez(self.path, texts=np.array(texts), vecs=np.stack([self.cache[t] for t in texts]))


def parse_session_time(s: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> datetime(2023, 5, 8, 13, 56)."""
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y")


def dia_key(s: str) -> str:
    m = DIA.fullmatch(s)
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else s


def turns_of(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """Every turn of a conversation with its session time, in order."""
    c = conv["conversation"]
    out = []
    n = 1
    while f"session_{n}_date_time" in c:
        when = parse_session_time(c[f"session_{n}_date_time"])
        for t in c.get(f"session_{n}", []) or []:
            out.append({**t, "time": when, "session": n})
        n += 1
    return out


def questions_of(conv: dict[str, Any]) -> list[tuple[str, set[str]]]:
    out = []
    for q in conv["qa"]:
        if q.get("category") not in (1, 2, 3, 4):
            continue
        ev = {dia_key(m.group(0)) for e in q.get("evidence", []) for m in DIA.finditer(str(e))}
        if ev:
            out.append((q["question"], ev))
    return out


def turn_text(t: dict[str, Any], with_caption: bool) -> str:
    text = f"{t['speaker']}: {t['text']}"
    if with_caption and t.get("blip_caption"):
        text += f" [shares a photo: {t['blip_caption']}]"
    return text


def build(turns: list[dict[str, Any]], embedder: MiniLMEmbedder, *, reckon: bool) -> RecallIndex:
    ix = RecallIndex(None, embedder=embedder, config=RankConfig(), autosave=False)
    docs = []
    for k, t in enumerate(turns):
        ctx = None
        text = turn_text(t, with_caption=reckon)
        if reckon and k > 0 and turns[k - 1]["session"] == t["session"]:
            ctx = turn_text(turns[k - 1], with_caption=True)
        docs.append(dict(id=dia_key(t["dia_id"]), text=text, time=t["time"], context=ctx))
    ix.add_many(docs)
    return ix


def recall_at(hits: list[str], ev: set[str], k: int) -> float:
    return len(ev & set(hits[:k])) / len(ev)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--conv", type=int, nargs="*", help="conversation indexes (default: all)")
    ap.add_argument("--cache", type=Path, default=None,
                    help="embedding cache file (.npz) to reuse between runs")
    ap.add_argument("--encode-samples", type=int, default=50,
                    help="questions encoded one by one to time query embedding (0 = skip)")
    args = ap.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    convs = [data[i] for i in args.conv] if args.conv else data
    emb = CachedEmbedder(MiniLMEmbedder(), args.cache)
    systems = list(BASELINES) + ["Reckon"] + list(ABLATION)
    plan: dict[str, tuple[str, RankConfig]] = {k: ("base", v) for k, v in BASELINES.items()}
    plan["Reckon"] = ("reckon", RECKON)
    plan.update(ABLATION)
    per_conv: dict[str, dict[str, list[float]]] = {}
    allr: dict[str, dict[int, list[float]]] = {s: {k: [] for k in KS} for s in systems}
    lat: dict[str, list[float]] = {s: [] for s in systems}
    maxk = max(KS)
    for conv in convs:
        turns = turns_of(conv)
        qs = questions_of(conv)
        t0 = time.perf_counter()
        base_ix = build(turns, emb, reckon=False)
        reck_ix = build(turns, emb, reckon=True)
        emb.save()
        print(f"[{conv.get('sample_id')}] {len(turns)} turns, {len(qs)} questions, "
              f"indexed in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        pc = per_conv.setdefault(conv.get("sample_id", "?"), {})
        for s in systems:
            which, cfg = plan[s]
            ix = reck_ix if which == "reckon" else base_ix
            ix.search("warm up", limit=1, config=cfg)
            r10 = []
            for q, ev in qs:
                t0 = time.perf_counter()
                hits = [h.id for h in ix.search(q, limit=maxk, config=cfg)]
                lat[s].append(time.perf_counter() - t0)
                for k in KS:
                    allr[s][k].append(recall_at(hits, ev, k))
                r10.append(recall_at(hits, ev, 10))
            pc[s] = [100 * statistics.fmean(r10), len(qs)]
            print(f"  {s}: R@10 {pc[s][0]:.1f}", file=sys.stderr, flush=True)
    emb.save()
    nq = len(allr["BM25"][5])
    print(f"LoCoMo turn-level evidence recall ({args.data.name}, {len(convs)} conversations, "
          f"{nq} questions of categories 1-4), embedder {emb.name}")
    print()
    print("Latency: one search on one conversation's index (BM25 rebuild excluded: warmed up),"
          " with the query's embedding already cached (--cache); add the encoding time below.")
    print()
    print("| system | R@5 | R@10 | R@25 | search p50 ms | p95 ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for s in systems:
        if s == next(iter(ABLATION)):
            print("| *ablation (each row adds to the one above)* | | | | | |")
        ls = sorted(lat[s])
        p50 = 1000 * ls[len(ls) // 2]
        p95 = 1000 * ls[min(len(ls) - 1, int(0.95 * len(ls)))]
        cells = " | ".join(f"{100 * statistics.fmean(allr[s][k]):.1f}" for k in KS)
        print(f"| {s} | {cells} | {p50:.1f} | {p95:.1f} |")
    print()
    print("R@10 per conversation:")
    main_sys = list(BASELINES) + ["Reckon"]
    print("| conversation | questions | " + " | ".join(main_sys) + " | Reckon - RRF |")
    print("| --- | ---: |" + " ---: |" * (len(main_sys) + 1))
    for cid, row in per_conv.items():
        print(f"| {cid} | {row['BM25'][1]} | " + " | ".join(f"{row[s][0]:.1f}" for s in main_sys)
              + f" | {row['Reckon'][0] - row['RRF'][0]:+.1f} |")
    print()
    if args.encode_samples:
        qs_all = [q for c in convs for q, _ in questions_of(c)][: args.encode_samples]
        emb.inner.encode(["warm up"])
        enc = []
        for q in qs_all:
            t0 = time.perf_counter()
            emb.inner.encode([q])
            enc.append(time.perf_counter() - t0)
        enc.sort()
        print(f"MiniLM query encoding (one question, CPU): p50 {1000 * enc[len(enc) // 2]:.1f} ms, "
              f"p95 {1000 * enc[min(len(enc) - 1, int(0.95 * len(enc)))]:.1f} ms over {len(enc)} questions")
        print()
    print("Reckon components:", RECKON.components())
    print("Reckon documents: 'speaker: text' + '[shares a photo: <caption>]' when the turn has an "
          "image; embedded with the preceding turn of the same session as context.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
