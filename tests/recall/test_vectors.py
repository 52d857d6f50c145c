"""The append-only vector file: torn tails, other processes' appends, compaction."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from reckon.recall.vectors import VectorFile, row_dots, text_key

DIM = 8


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def test_round_trip_and_keys_are_salted_by_embedder(tmp_path: Path) -> None:
    vf = VectorFile(tmp_path, "emb-a", DIM)
    assert vf.add([(vf.key("alpha"), vec(1)), (vf.key("bravo"), vec(2))]) == 2
    assert vf.add([(vf.key("alpha"), vec(3))]) == 0  # known key: not written twice
    back = VectorFile(tmp_path, "emb-a", DIM)
    back.refresh()
    assert len(back) == 2 and np.array_equal(back.get(back.key("alpha")), vec(1))
    assert text_key("emb-a", "alpha") != text_key("emb-b", "alpha")
    other = VectorFile(tmp_path, "emb-b", DIM)
    other.refresh()
    assert len(other) == 0 and other.path != vf.path


def test_torn_tail_is_ignored_then_cut_by_the_next_append(tmp_path: Path) -> None:
    vf = VectorFile(tmp_path, "e", DIM)
    vf.add([(vf.key("a"), vec(1))])
    rec = vf.path.stat().st_size
    with open(vf.path, "ab") as f:
        f.write(b"RKV1" + b"\x01" * 10)  # killed mid-record
    r = VectorFile(tmp_path, "e", DIM)
    r.refresh()
    assert len(r) == 1
    r.add([(r.key("b"), vec(2))])
    assert vf.path.stat().st_size == 2 * rec  # cut, then aligned
    vf.refresh()
    assert len(vf) == 2 and np.array_equal(vf.get(vf.key("b")), vec(2))


def test_a_corrupt_record_in_the_middle_is_skipped(tmp_path: Path) -> None:
    vf = VectorFile(tmp_path, "e", DIM)
    vf.add([(vf.key(str(i)), vec(i)) for i in range(10)])
    rec = vf.path.stat().st_size // 10
    data = bytearray(vf.path.read_bytes())
    data[3 * rec + 30] ^= 0xFF  # flip a bit of record 3's vector
    vf.path.write_bytes(bytes(data))
    r = VectorFile(tmp_path, "e", DIM)
    r.refresh()
    assert len(r) == 9 and r.get(r.key("3")) is None and np.array_equal(r.get(r.key("4")), vec(4))


_APPENDER = """
import sys
sys.path.insert(0, {engine!r})
import numpy as np
from reckon.recall.vectors import VectorFile
vf = VectorFile({d!r}, "e", 8)
w = int(sys.argv[1])
for i in range(200):
    v = np.full(8, w * 1000 + i, dtype=np.float32)
    vf.add([(vf.key(f"{{w}}-{{i}}"), v)])
"""


def test_concurrent_appends_from_processes_are_all_readable(tmp_path: Path) -> None:
    engine = str(Path(__file__).resolve().parents[2] / "engine")
    code = _APPENDER.format(engine=engine, d=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(w)]) for w in range(3)]
    reader = VectorFile(tmp_path, "e", DIM)
    seen = 0
    while any(p.poll() is None for p in procs):
        seen += reader.refresh()  # reading while they append: never a torn or wrong vector
    assert all(p.wait(60) == 0 for p in procs)
    seen += reader.refresh()
    assert seen == len(reader) == 600
    for w in range(3):
        for i in (0, 99, 199):
            assert float(reader.get(reader.key(f"{w}-{i}"))[0]) == w * 1000 + i


def test_compaction_keeps_what_is_asked_and_readers_follow(tmp_path: Path) -> None:
    vf = VectorFile(tmp_path, "e", DIM)
    vf.add([(vf.key(str(i)), vec(i)) for i in range(20)])
    other = VectorFile(tmp_path, "e", DIM)
    other.refresh()
    keep = {vf.key(str(i)) for i in range(5)}
    assert vf.compact(keep) == 15
    assert len(vf) == 5
    other.refresh()  # the file was replaced: read again from the start
    assert len(other) == 5 and np.array_equal(other.get(other.key("4")), vec(4))
    assert list(tmp_path.glob(".*tmp")) == []


def test_keys_ending_in_nul_bytes_round_trip(tmp_path: Path) -> None:
    """A digest that ends in 0x00 (1 key in 256) is found again (a fixed-width bytes field
    that strips trailing NULs lost them: the vector was rewritten on every open)."""
    vf = VectorFile(tmp_path, "e", DIM)
    keys = [bytes(15) + b"\x01", b"\x07" + bytes(15), b"abc" + bytes(13), bytes(16)]
    vf.add([(k, vec(i)) for i, k in enumerate(keys)])
    back = VectorFile(tmp_path, "e", DIM)
    back.refresh()
    assert len(back) == 4
    for i, k in enumerate(keys):
        assert np.array_equal(back.get(k), vec(i))
    assert vf.add([(k, vec(9)) for k in keys]) == 0  # known: nothing written twice
    assert vf.compact(set(keys[:2])) == 2
    back.refresh()
    assert len(back) == 2 and np.array_equal(back.get(keys[0]), vec(0))


def test_row_dots_has_the_bits_of_one_matrix_vector_product() -> None:
    """``row_dots`` (chunks of rows on several threads) equals ``matrix @ vector`` bit for
    bit, at sizes around its chunk boundaries and below its threshold, for views of the
    first rows of a larger matrix (as a search passes them), and falls back to ``@`` for
    other dtypes (float64 in, float64 out)."""
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    from reckon.recall import vectors as V

    rng = np.random.default_rng(7)
    big = rng.standard_normal((5 * V._CHUNK_ROWS + 13, 384)).astype(np.float32)  # noqa: SLF001
    q = rng.standard_normal(384).astype(np.float32)
    q /= np.linalg.norm(q)
    c = V._CHUNK_ROWS  # noqa: SLF001
    for threads in (1, 2):  # one BLAS thread (as with MiniLM loaded): chunks; two: one call
        with threadpool_limits(limits=threads, user_api="blas"):
            assert V._openblas_one_thread() == (threads == 1)  # noqa: SLF001 - numpy here runs on OpenBLAS
            for n in (0, 1, 7, 2 * c - 1, 2 * c, 2 * c + 1, 3 * c + 5, 5 * c + 13, *rng.integers(2 * c, 5 * c, 8).tolist()):
                m = big[:n]
                got = row_dots(m, q)
                assert got.dtype == np.float32 and got.shape == (n,)
                assert np.array_equal(got, m @ q), (threads, n)
    q64 = q.astype(np.float64)
    got = row_dots(big, q64)
    assert got.dtype == np.float64 and np.array_equal(got, big @ q64)
