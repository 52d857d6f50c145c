"""LoCoMo turn-level evidence recall THROUGH THE PUBLIC API, with peers side by side.

Data: LoCoMo (Maharana et al. 2024, "Evaluating Very Long-Term Conversational Memory of
LLM Agents"), ``../shared/data/locomo/locomo_dev.json``. Every conversation goes into
its own tenant the way a user would put it there:

* ``Reckon: record_turns + search_turns`` -- ``Tenant.record_turns`` (one call per
  conversation: speaker, session time, image caption, the dialog id as ``external_id``),
  then one ``Tenant.search_turns(question, k=25)`` per question (the transcript search
  configuration ``reckon.transcripts.search.TURN_RANKING``). Import time per
  conversation is printed (store, reasoning and MiniLM embeddings included).
* ``Reckon: remember_many + search`` (``--memories``) -- every turn a context memory
  (``Tenant.remember_many``, ``source="import"``), then ``Tenant.search`` (memory search,
  default ranking).

Peers, same run, same MiniLM model, same tokeniser, over plain ``"speaker: text"``
documents in a bare :class:`~reckon.recall.index.RecallIndex`: ``BM25`` alone, ``MiniLM``
cosine alone, and plain ``RRF`` (k=60) of their top-100 lists.

Every category 1-4 question (single-hop, temporal, open-domain, multi-hop; category 5
adversarial questions are excluded) is a search; evidence dialog ids are every
``D<session>:<turn>`` found in the evidence strings (some hold several, ``"D8:6; D9:17"``).
Recall@k of a question = evidence turns in the top k / evidence turns; tables give the
mean over questions, and R@10 per conversation so held-back conversations can be compared.

**Cross-validation** (``--cv``): is the shipped turn ranking tuned to these
conversations? A grid of query-time settings of the turn search (:data:`CV_GRID`: keyword
feedback on/off, the context BM25 ranker on/off, fusion depth; the shipped
``TURN_RANKING`` is one point) is run over the same tenants. Leave one conversation out:
the setting with the best mean R@10 over the other conversations' questions is chosen
and scored on the held-out one. The table gives per conversation R@10 of the shipped
setting, of the fold's choice, and of the best setting in hindsight; the fold mean of the
choices beside the shipped setting's mean says whether the shipped constants generalise
(nothing in the ranking is per conversation: ``TURN_RANKING`` and
``TURN_CONTEXT_WEIGHT`` are module constants).

Run: ``PYTHONPATH=engine python bench/recall_locomo.py [--data PATH] [--conv N ...] [--memories] [--cv]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RECKON_EMBEDDER", "minilm")

from reckon import Engine, Principal  # noqa: E402
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
API_TURNS = "Reckon: record_turns + search_turns"
API_MEMORIES = "Reckon: remember_many + search"


def _cv_grid() -> dict[str, RankConfig]:
    from reckon.transcripts.search import TURN_RANKING

    grid: dict[str, RankConfig] = {}
    for prf in (5, 0):
        for ctx in (1.0, 0.0):
            for depth in (25, 100):
                name = f"prf {prf}, ctx-BM25 {ctx:g}, depth {depth}"
                grid[name] = TURN_RANKING.model_copy(update=dict(prf_docs=prf, context_keyword_weight=ctx, depth=depth))
    return grid


CV_SHIPPED = "prf 5, ctx-BM25 1, depth 25"
"""The grid point equal to ``TURN_RANKING`` (checked at run time)."""


def cross_validate(scores: dict[str, dict[str, list[float]]]) -> list[tuple[str, float, str, float, float]]:
    """Leave-one-conversation-out selection over ``scores[conversation][setting]`` (R@10
    per question): per held-out conversation ``(conversation, shipped R@10, chosen
    setting, its R@10, best R@10 in hindsight)``, in percent."""
    out = []
    convs = list(scores)
    for held in convs:
        train = [c for c in convs if c != held]
        settings = list(scores[held])

        def mean_over(cs: list[str], g: str) -> float:
            vals = [v for c in cs for v in scores[c][g]]
            return statistics.fmean(vals) if vals else 0.0

        chosen = max(settings, key=lambda g: (mean_over(train, g), g == CV_SHIPPED))
        best = max(statistics.fmean(scores[held][g]) for g in settings)
        out.append((held, 100 * statistics.fmean(scores[held][CV_SHIPPED]), chosen,
                    100 * statistics.fmean(scores[held][chosen]), 100 * best))
    return out


def parse_session_time(s: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> datetime(2023, 5, 8, 13, 56, tzinfo=UTC)."""
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


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


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.casefold()).strip("-") or "speaker"


def record_payload(conv_id: str, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``record_turns`` payload of a LoCoMo conversation (what ``reckon import
    conversation`` sends too)."""
    return [dict(conversation=conv_id, text=t["text"], role="user", speaker=slug(t["speaker"]), at=t["time"],
                 caption=t.get("blip_caption") or None, external_id=dia_key(t["dia_id"])) for t in turns]


def memory_payload(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for t in turns:
        text = f"{t['speaker']}: {t['text']}"
        if t.get("blip_caption"):
            text += f" [shares a photo: {t['blip_caption']}]"
        out.append(dict(kind="context", scope="company", importance=3, source="import",
                        label=f"{dia_key(t['dia_id'])} {t['speaker']}", content=text))
    return out


def recall_at(hits: list[str], ev: set[str], k: int) -> float:
    return len(ev & set(hits[:k])) / len(ev)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--conv", type=int, nargs="*", help="conversation indexes (default: all)")
    ap.add_argument("--memories", action="store_true", help="also measure remember_many + Tenant.search")
    ap.add_argument("--no-peers", action="store_true", help="skip the BM25 / MiniLM / RRF peers")
    ap.add_argument("--cv", action="store_true", help="leave-one-conversation-out check of the turn ranking")
    args = ap.parse_args(argv)
    grid = _cv_grid() if args.cv else {}
    if grid:
        from reckon.transcripts.search import TURN_RANKING

        assert grid[CV_SHIPPED] == TURN_RANKING, "the CV grid must contain the shipped ranking"
    cv_scores: dict[str, dict[str, list[float]]] = {}
    data = json.loads(args.data.read_text(encoding="utf-8"))
    convs = [data[i] for i in args.conv] if args.conv else data
    systems = ([] if args.no_peers else list(BASELINES)) + [API_TURNS] + ([API_MEMORIES] if args.memories else [])
    allr: dict[str, dict[int, list[float]]] = {s: {k: [] for k in KS} for s in systems}
    lat: dict[str, list[float]] = {s: [] for s in systems}
    per_conv: dict[str, dict[str, Any]] = {}
    imports: list[tuple[str, int, float, float | None]] = []
    peer_emb = MiniLMEmbedder() if not args.no_peers else None
    ops = Principal.operator("importer")
    maxk = max(KS)
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(tmp, jobs=False)
        for ci, conv in enumerate(convs):
            cid = conv.get("sample_id", f"conv-{ci}")
            turns = turns_of(conv)
            qs = questions_of(conv)
            pc = per_conv.setdefault(cid, {"questions": len(qs)})
            ranked: dict[str, Any] = {}
            # -- through the public API: record_turns, then search_turns ---------------
            tenant = engine.create_tenant(f"t{ci}")
            t0 = time.perf_counter()
            recorded = tenant.record_turns(record_payload(cid, turns), principal=ops)
            t_return = time.perf_counter() - t0
            assert tenant.turn_index.wait(timeout=None)  # embeddings run off the write path
            t_import = time.perf_counter() - t0
            assert len(recorded) == len(turns)

            def api_turns(q: str, tenant: Any = tenant) -> list[str]:
                return [h.turn.external_id for h in tenant.search_turns(q, principal=ops, k=maxk)]

            ranked[API_TURNS] = api_turns
            t_mem = None
            if args.memories:
                mt = engine.create_tenant(f"m{ci}")
                t0 = time.perf_counter()
                ms = mt.remember_many(memory_payload(turns), principal=ops, conflicts="keep_both")
                t_mem = time.perf_counter() - t0
                label_of = {m.id: m.label.split(" ", 1)[0] for m in ms if m is not None}

                def api_mem(q: str, mt: Any = mt, label_of: dict[str, str] = label_of) -> list[str]:
                    return [label_of.get(h.memory.id, "") for h in mt.search(q, principal=ops, k=maxk)]

                ranked[API_MEMORIES] = api_mem
            imports.append((cid, len(turns), t_return, t_import, t_mem))
            print(f"[{cid}] {len(turns)} turns, {len(qs)} questions; record_turns returned in {t_return:.1f} s, "
                  f"every vector in {t_import:.1f} s"
                  + (f", remember_many {t_mem:.1f} s" if t_mem is not None else ""), file=sys.stderr, flush=True)
            # -- peers: a bare index over "speaker: text" ------------------------------
            if peer_emb is not None:
                ix = RecallIndex(None, embedder=peer_emb, config=RankConfig(), autosave=False)
                ix.add_many([dict(id=dia_key(t["dia_id"]), text=f"{t['speaker']}: {t['text']}", time=t["time"])
                             for t in turns])
                for name, cfg in BASELINES.items():
                    def peer(q: str, ix: RecallIndex = ix, cfg: RankConfig = cfg) -> list[str]:
                        return [h.id for h in ix.search(q, limit=maxk, config=cfg)]
                    ranked[name] = peer
            for s in systems:
                fn = ranked[s]
                fn("warm up")
                r10 = []
                for q, ev in qs:
                    t0 = time.perf_counter()
                    hits = fn(q)
                    lat[s].append(time.perf_counter() - t0)
                    for k in KS:
                        allr[s][k].append(recall_at(hits, ev, k))
                    r10.append(recall_at(hits, ev, 10))
                pc[s] = 100 * statistics.fmean(r10)
                print(f"  {s}: R@10 {pc[s]:.1f}", file=sys.stderr, flush=True)
            if grid:
                ext = {t.iri: t.external_id for t in recorded}
                ti = tenant.turn_index.tenant_index
                cs = cv_scores.setdefault(cid, {})
                for g, cfg in grid.items():
                    cs[g] = [recall_at([ext.get(h.id, "") for h in ti.search(q, limit=maxk, config=cfg)], ev, 10)
                             for q, ev in qs]
                print(f"  CV grid: {len(grid)} settings", file=sys.stderr, flush=True)
    nq = len(allr[systems[0]][5])
    print(f"LoCoMo turn-level evidence recall ({args.data.name}, {len(convs)} conversations, {nq} questions of "
          f"categories 1-4), MiniLM all-MiniLM-L6-v2; Reckon rows go through the public API")
    print()
    print("| system | R@5 | R@10 | R@25 | search p50 ms | p95 ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for s in systems:
        ls = sorted(lat[s])
        p50 = 1000 * ls[len(ls) // 2]
        p95 = 1000 * ls[min(len(ls) - 1, int(0.95 * len(ls)))]
        cells = " | ".join(f"{100 * statistics.fmean(allr[s][k]):.1f}" for k in KS)
        print(f"| {s} | {cells} | {p50:.1f} | {p95:.1f} |")
    print()
    print("R@10 per conversation:")
    print("| conversation | questions | " + " | ".join(systems) + " |")
    print("| --- | ---: |" + " ---: |" * len(systems))
    for cid, row in per_conv.items():
        print(f"| {cid} | {row['questions']} | " + " | ".join(f"{row[s]:.1f}" for s in systems) + " |")
    if cv_scores and len(cv_scores) > 1:
        folds = cross_validate(cv_scores)
        print()
        print(f"Leave-one-conversation-out check of the turn ranking ({len(grid)} settings; R@10):")
        print("| held-out conversation | shipped setting | chosen on the others | its R@10 | best in hindsight |")
        print("| --- | ---: | --- | ---: | ---: |")
        for held, ship, chosen, got, best in folds:
            print(f"| {held} | {ship:.1f} | {chosen} | {got:.1f} | {best:.1f} |")
        print(f"| fold mean | {statistics.fmean(f[1] for f in folds):.1f} | | "
              f"{statistics.fmean(f[3] for f in folds):.1f} | {statistics.fmean(f[4] for f in folds):.1f} |")
        print()
        print("Every setting, R@10 per conversation:")
        convs_cv = list(cv_scores)
        print("| setting | " + " | ".join(convs_cv) + " | mean of questions |")
        print("| --- |" + " ---: |" * (len(convs_cv) + 1))
        for g in grid:
            allq = [v for c in convs_cv for v in cv_scores[c][g]]
            print(f"| {g}{' (shipped)' if g == CV_SHIPPED else ''} | "
                  + " | ".join(f"{100 * statistics.fmean(cv_scores[c][g]):.1f}" for c in convs_cv)
                  + f" | {100 * statistics.fmean(allq):.1f} |")
    print()
    print("Import through the public API (one call per conversation; store, reasoning, then the background "
          "MiniLM embeddings):")
    print("| conversation | turns | record_turns returns s | with every vector s | turns/s |"
          + (" remember_many s |" if args.memories else ""))
    print("| --- | ---: | ---: | ---: | ---: |" + (" ---: |" if args.memories else ""))
    for cid, n, tr, ti, tm in imports:
        print(f"| {cid} | {n} | {tr:.1f} | {ti:.1f} | {n / ti:.0f} |" + (f" {tm:.1f} |" if tm is not None else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
