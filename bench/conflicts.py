"""Conflict detection through the public API: is ask-before-overwrite right?

Two measurements, each for the judge before issue 11 (``LexicalJudge``: word-count
cosine >= 0.5 means "replaces"), the default ``ContradictionJudge`` (no model) and the
same with MiniLM candidates (``--minilm``):

1. **Labelled pairs** (``bench/data/conflict_pairs.jsonl``, written for this benchmark:
   ``replace`` = same subject and attribute, different value; ``keep_both`` = similar,
   compatible, another subject, a refinement, a restatement, an event). Each pair under
   its own person: ``Tenant.remember`` the old memory, then the new one from the same
   source; ``ConflictPending`` is the prediction "replace". Precision, recall and false
   asks per category.
2. **LoCoMo import** (``../shared/data/locomo/locomo_dev.json``): every turn of every
   conversation through ``Tenant.remember(kind="context", source="import")`` one by one
   (an operator importing; user scope, owned by the speaker), label = the turn's first
   80 characters, content =
   ``"speaker: text"``. Every ``ConflictPending`` is a false ask (two utterances of a chat
   never replace each other). The same import with ``source="extraction"`` counts silent
   supersessions (the memory an agent needs, destroyed without asking).

Run: ``PYTHONPATH=engine python bench/conflicts.py [--minilm] [--pairs-only] [--conv N ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RECKON_EMBEDDER", "hashing")  # recall embeddings are not what is measured

from reckon import ConflictPending, Engine, Principal  # noqa: E402
from reckon.memory.conflicts import ContradictionJudge, LexicalJudge  # noqa: E402

PAIRS = REPO / "bench" / "data" / "conflict_pairs.jsonl"
#: Written after the judge was frozen (never used to tune it).
HOLDOUT = REPO / "bench" / "data" / "conflict_pairs_holdout.jsonl"
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo_dev.json"


def judges(minilm: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"LexicalJudge (before)": lambda: LexicalJudge(), "ContradictionJudge": lambda: None}
    if minilm:
        from reckon.recall.embed import MiniLMEmbedder

        enc = MiniLMEmbedder()
        out["ContradictionJudge + MiniLM"] = lambda: ContradictionJudge(encoder=enc.encode)
    return out


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.casefold()).strip("-") or "p"


def run_pairs(make_judge: Any, tmp: str, path: Path = PAIRS) -> tuple[dict[str, int], dict[str, Counter[str]]]:
    pairs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    judge = make_judge()
    t = Engine(tmp, jobs=False, judge=judge).create_tenant("pairs")
    conf = Counter()
    per_cat: dict[str, Counter[str]] = defaultdict(Counter)
    for p in pairs:
        who = Principal(person=f"p{p['id']}")
        common = dict(kind=p["kind"], scope="user", importance=3, source="agent_tool", principal=who)
        t.remember(label=p["old"][:80], content=p["old"], **common)
        try:
            t.remember(label=p["new"][:80], content=p["new"], **common)
            pred = False
        except ConflictPending:
            pred = True
        gold = p["label"] == "replace"
        key = {(True, True): "tp", (True, False): "fp", (False, True): "fn", (False, False): "tn"}[(pred, gold)]
        conf[key] += 1
        per_cat[p["category"]][key] += 1
    return dict(conf), per_cat


def run_locomo(make_judge: Any, tmp: str, convs: list[dict[str, Any]], source: str) -> tuple[int, int, int, float]:
    engine = Engine(tmp, jobs=False, judge=make_judge())
    asks = turns = 0
    superseded = 0
    t0 = time.perf_counter()
    for ci, conv in enumerate(convs):
        t = engine.create_tenant(f"{source[:3]}{ci}")
        c = conv["conversation"]
        n = 1
        while f"session_{n}" in c:
            for turn in c[f"session_{n}"]:
                text = turn["text"] + (f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else "")
                speaker = slug(turn["speaker"])
                # an import is operator-gated; extraction writes as the person who said it
                who = Principal.operator("importer") if source == "import" else Principal(person=speaker)
                turns += 1
                try:
                    t.remember(kind="context", scope="user", owner=speaker, importance=3, source=source,
                               principal=who, label=text[:80], content=f"{turn['speaker']}: {text}")
                except ConflictPending:
                    asks += 1
            n += 1
        superseded += sum(1 for m in t.memories(active_only=False) if m.superseded_by)
    return turns, asks, superseded, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--conv", type=int, nargs="*")
    ap.add_argument("--minilm", action="store_true", help="also the judge with MiniLM candidates")
    ap.add_argument("--pairs-only", action="store_true")
    ap.add_argument("--locomo-judges", nargs="*", help="judges of the LoCoMo import (default: all)")
    args = ap.parse_args(argv)
    js = judges(args.minilm)
    for path in (PAIRS, HOLDOUT):
        print(f"Labelled pairs ({path.relative_to(REPO)}): replace = same subject and attribute, different value"
              + (" -- written after the judge was frozen" if path == HOLDOUT else " -- the judge was tuned on these"))
        print()
        print("| judge | precision | recall | false asks (keep_both flagged) | missed (replace not flagged) |")
        print("| --- | ---: | ---: | ---: | ---: |")
        cats: dict[str, dict[str, Counter[str]]] = {}
        for name, mk in js.items():
            with tempfile.TemporaryDirectory() as tmp:
                c, per_cat = run_pairs(mk, tmp, path)
            cats[name] = per_cat
            tp, fp, fn, tn = (c.get(k, 0) for k in ("tp", "fp", "fn", "tn"))
            prec = tp / (tp + fp) if tp + fp else 0.0
            print(f"| {name} | {prec:.3f} | {tp / (tp + fn):.3f} | {fp} of {fp + tn} | {fn} of {tp + fn} |")
        print()
        print("Per category (flagged as replace / pairs):")
        names = list(js)
        print("| category | label | " + " | ".join(names) + " |")
        print("| --- | --- |" + " ---: |" * len(names))
        allcats = sorted({k for v in cats.values() for k in v})
        for cat in allcats:
            ref = cats[names[0]][cat]
            label = "replace" if ref.get("tp", 0) + ref.get("fn", 0) else "keep_both"
            cells = []
            for n in names:
                cc = cats[n][cat]
                cells.append(f"{cc.get('tp', 0) + cc.get('fp', 0)}/{sum(cc.values())}")
            print(f"| {cat} | {label} | " + " | ".join(cells) + " |")
        print()
    if args.pairs_only:
        return 0
    data = json.loads(args.data.read_text(encoding="utf-8"))
    convs = [data[i] for i in args.conv] if args.conv else data
    print()
    print(f"LoCoMo turn-by-turn import through Tenant.remember ({args.data.name}, {len(convs)} conversations):")
    print()
    print("| judge | turns | false asks (source=import) | rate | silent supersessions (source=extraction) | rate |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, mk in js.items():
        if args.locomo_judges and name not in args.locomo_judges:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            n, asks, _, s1 = run_locomo(mk, tmp, convs, "import")
        with tempfile.TemporaryDirectory() as tmp:
            n2, _, sup, s2 = run_locomo(mk, tmp, convs, "extraction")
        print(f"| {name} | {n} | {asks} | {100 * asks / n:.2f} % | {sup} | {100 * sup / n2:.2f} % |",
              flush=True)
        print(f"  ({name}: {s1:.0f} s + {s2:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
