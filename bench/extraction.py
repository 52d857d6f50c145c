"""Precision and recall of the deterministic extractor (``reckon.capture.rules``) on a
labelled set of user utterances (``bench/data/extraction_labelled.jsonl``, written for
this benchmark: budget caps, KPI targets, explicit preferences, and utterances that state
no standing condition -- questions, reports of the past, current values, chit-chat).

A second set, ``bench/data/extraction_holdout.jsonl``, was written after the rules were
frozen (one exception: utterances 1036-1041, several caps or targets in one sentence,
ran once before the rule "one amount over several platforms is a combined cap, not the
first platform's" was added; that rule came from the tuned utterance 69, and it also
turned the hold-out's spurious "$2k per day cap on both Meta and Google" into no
memory). A predicted budget matches an expected one when platform, amount, currency and period are
equal; a target when metric, target value and platform (or its absence) are equal; a
preference when the utterance was labelled with one. Precision = matched predictions /
predictions; recall = matched expectations / expectations.

Run: ``PYTHONPATH=engine python bench/extraction.py [-v]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))

from reckon.capture.rules import RuleExtractor  # noqa: E402

DATA = REPO / "bench" / "data" / "extraction_labelled.jsonl"
#: Written after the extractor's rules were frozen (never used to tune them).
HOLDOUT = REPO / "bench" / "data" / "extraction_holdout.jsonl"


def key(c: dict[str, Any]) -> tuple[Any, ...]:
    """The comparable form of an expected item or a predicted candidate."""
    if c["type"] == "budget":
        return ("budget", c["platform"], Decimal(str(c["amount"])).normalize(), c["currency"], c["period"])
    if c["type"] == "target":
        return ("target", c["metric"], Decimal(str(c["target_value"])).normalize(), c.get("platform"))
    return ("preference",)


def predicted(text: str, ex: RuleExtractor) -> list[dict[str, Any]]:
    out = []
    for c in ex.extract_text(text):
        if c.subclass == "BudgetConstraintMemory":
            out.append({"type": "budget", **c.properties})
        elif c.subclass == "PerformanceTargetMemory":
            out.append({"type": "target", **c.properties})
        else:
            out.append({"type": "preference"})
    return out


def evaluate(path: Path = DATA, verbose: bool = False) -> dict[str, dict[str, int]]:
    """Per type: ``{"tp", "fp", "fn"}`` counts."""
    ex = RuleExtractor()
    stats: dict[str, Counter[str]] = {t: Counter() for t in ("budget", "target", "preference")}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        exp = Counter(key(e) for e in row["expected"])
        got = Counter(key(p) for p in predicted(row["text"], ex))
        for k in set(exp) | set(got):
            t = k[0]
            tp = min(exp[k], got[k])
            stats[t]["tp"] += tp
            stats[t]["fp"] += got[k] - tp
            stats[t]["fn"] += exp[k] - tp
            if verbose and (got[k] != exp[k]):
                print(f"  {'missed' if exp[k] > got[k] else 'spurious'} {k} in {row['text']!r}", file=sys.stderr)
    return {t: dict(c) for t, c in stats.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    for path in (DATA, HOLDOUT):
        stats = evaluate(path, verbose=args.verbose)
        n = len(path.read_text().splitlines())
        note = "written after the rules were frozen" if path == HOLDOUT else "the rules were tuned on these"
        print(f"Deterministic extractor on {path.relative_to(REPO)} ({n} utterances; {note})")
        print()
        print("| type | expected | predicted | precision | recall |")
        print("| --- | ---: | ---: | ---: | ---: |")
        tot: Counter[str] = Counter()
        for t, c in stats.items():
            tp, fp, fn = c.get("tp", 0), c.get("fp", 0), c.get("fn", 0)
            tot.update({"tp": tp, "fp": fp, "fn": fn})
            print(f"| {t} | {tp + fn} | {tp + fp} | {tp / (tp + fp) if tp + fp else 0:.3f} | "
                  f"{tp / (tp + fn) if tp + fn else 0:.3f} |")
        tp, fp, fn = tot["tp"], tot["fp"], tot["fn"]
        print(f"| all | {tp + fn} | {tp + fp} | {tp / (tp + fp):.3f} | {tp / (tp + fn):.3f} |")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
