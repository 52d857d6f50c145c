"""The vector file's reading path against oracles: its checksum against the formula of
the module docstring of ``reckon/recall/vectors.py`` computed another way, and
:meth:`VectorFile.refresh` against a record-by-record reader of the same file (the
first record of a key wins; a bad record among the last 4 stops the read, an older one
is skipped)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from reckon.recall import vectors as V
from reckon.recall.vectors import MAGIC, VectorFile

DIM = 4
REC = 4 + 16 + 4 * DIM + 4
EXTREMES = [0, 1, 2**16 - 1, 2**16, 2**31, 2**32 - 2, 2**32 - 1]


def checks_u64(body: np.ndarray) -> np.ndarray:
    """The check as the file's first version computed it, in uint64 (exact mod 2**32
    whatever the width: 2**32 divides 2**64, where uint64 wraps)."""
    w = body.astype(np.uint64)
    i = np.arange(1, body.shape[1] + 1, dtype=np.uint64)
    s1 = w.sum(axis=1) & 0xFFFFFFFF
    s2 = (w * i).sum(axis=1) & 0xFFFFFFFF
    return ((s1 + (s2 << np.uint64(16))) & 0xFFFFFFFF).astype(np.uint32)


def check_int(words: list[int]) -> int:
    """The check of one record's words ``w_1..w_m`` in Python integers:
    (sum w_i + (sum i*w_i) * 65536) mod 2**32."""
    return (sum(words) + sum(i * w for i, w in enumerate(words, 1)) * 65536) % 2**32


# ------------------------------------------------------------------ the checksum
@settings(max_examples=200, deadline=None)
@given(
    body=arrays(np.uint32, st.tuples(st.integers(0, 40), st.integers(1, 64)),
                elements=st.one_of(st.sampled_from(EXTREMES), st.integers(0, 2**32 - 1))),
    strided=st.booleans(),
)
def test_checksums_equal_the_formula_on_small_matrices(body: np.ndarray, strided: bool) -> None:
    """If ``body`` is any uint32 matrix (contiguous or a column slice, as ``refresh``
    passes it), then ``_checksums`` equals the formula in Python integers and in uint64."""
    if strided:
        wide = np.zeros((body.shape[0], body.shape[1] + 2), dtype=np.uint32)
        wide[:, 1:-1] = body
        body = wide[:, 1:-1]
    got = V._checksums(body)  # noqa: SLF001
    assert got.dtype == np.uint32 and got.shape == (body.shape[0],)
    assert got.tolist() == [check_int(row) for row in body.tolist()]
    assert np.array_equal(got, checks_u64(body))


@settings(max_examples=40, deadline=None)
@given(
    rows=st.one_of(st.sampled_from([0, 1, V._CHECK_ROWS - 1, V._CHECK_ROWS, V._CHECK_ROWS + 1,  # noqa: SLF001
                                    2 * V._CHECK_ROWS + 3]), st.integers(0, 3 * V._CHECK_ROWS)),  # noqa: SLF001
    width=st.one_of(st.just(388), st.integers(1, 400)),
    fill=st.sampled_from(["random", "zeros", "max", "extremes"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_checksums_equal_the_formula_across_blocks(rows: int, width: int, fill: str, seed: int) -> None:
    """If ``body`` has any number of rows (around and across the blocks of
    ``_CHECK_ROWS``) and any width (388: the words of a 384-wide record), filled at
    random, with 0, with 2**32-1 or with extremes only, then ``_checksums`` equals the
    formula in uint64."""
    rng = np.random.default_rng(seed)
    if fill == "random":
        body = rng.integers(0, 2**32, size=(rows, width), dtype=np.uint32)
    elif fill == "zeros":
        body = np.zeros((rows, width), dtype=np.uint32)
    elif fill == "max":
        body = np.full((rows, width), 2**32 - 1, dtype=np.uint32)
    else:
        body = rng.choice(np.array(EXTREMES, dtype=np.uint32), size=(rows, width))
    assert np.array_equal(V._checksums(body), checks_u64(body))  # noqa: SLF001


# ------------------------------------------------------------------ records by hand
def record(key: bytes, vector: np.ndarray, *, corrupt: str = "") -> bytes:
    """One record in the on-disk format, its check computed by :func:`check_int`;
    ``corrupt`` ("magic", "key", "vec", "crc") breaks one part after the check."""
    body = key + np.asarray(vector, dtype="<f4").tobytes()
    crc = check_int(np.frombuffer(body, dtype="<u4").tolist())
    raw = bytearray(MAGIC + body + crc.to_bytes(4, "little"))
    at = {"magic": 1, "key": 7, "vec": 25, "crc": REC - 2}.get(corrupt)
    if at is not None:
        raw[at] ^= 0x5A
    return bytes(raw)


def key_of(i: int) -> bytes:
    return bytes([i]) * 16 if i % 2 else bytes(15) + bytes([i])  # some end in NUL bytes


def vector_of(seed: int) -> np.ndarray:
    return (np.arange(DIM, dtype=np.float32) + np.float32(seed)) * np.float32(0.25)


class Reader:
    """:meth:`VectorFile.refresh` record by record, as the module docstring states it."""

    def __init__(self) -> None:
        self.offset = 0
        self.rows: dict[bytes, np.ndarray] = {}

    def refresh(self, data: bytes) -> int:
        whole = len(data) // REC * REC
        recs = [data[o:o + REC] for o in range(self.offset, whole, REC)]
        ok = [r[:4] == MAGIC and check_int(np.frombuffer(r[4:-4], dtype="<u4").tolist()) == int.from_bytes(r[-4:], "little")
              for r in recs]
        stop = len(recs)
        for j in range(max(0, len(recs) - 4), len(recs)):
            if not ok[j]:  # possibly still being written: read again next time
                stop = j
                break
        new = 0
        for r, good in zip(recs[:stop], ok):
            if good and r[4:20] not in self.rows:
                self.rows[r[4:20]] = np.frombuffer(r[20:-4], dtype="<f4").copy()
                new += 1
        self.offset += stop * REC
        return new


def agree(vf: VectorFile, model: Reader) -> None:
    assert len(vf) == len(model.rows)
    keys = [key_of(i) for i in range(8)]
    for k in keys:
        got, want = vf.get(k), model.rows.get(k)
        assert (got is None) == (want is None), k
        assert want is None or np.array_equal(got, want), k
    many = vf.get_many(keys)
    assert set(many) == set(model.rows) & set(keys)
    assert all(np.array_equal(v, model.rows[k]) for k, v in many.items())
    assert vf._n == len(vf) and len(vf._mat) <= max(64, 2 * vf._n)  # noqa: SLF001 - one row a key, amortised growth


op = st.one_of(
    st.tuples(st.just("good"), st.integers(0, 7), st.integers(0, 99)),
    st.tuples(st.just("bad"), st.integers(0, 7), st.sampled_from(["magic", "key", "vec", "crc"])),
    st.tuples(st.just("fix"), st.integers(0, 7), st.integers(0, 99)),  # a bad record completed
    st.tuples(st.just("torn"), st.integers(0, 7), st.integers(1, REC - 1)),  # a writer killed
    st.tuples(st.just("many"), st.integers(0, 7), st.integers(1, 40)),  # a batch, with repeats
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.lists(op, max_size=10), min_size=1, max_size=8))
def test_refresh_reads_what_a_record_by_record_reader_reads(tmp_path: Path, steps: list[list[tuple[Any, ...]]]) -> None:
    """If records (good, bad in any part, completed later, torn, repeated keys) are
    appended between refreshes, then every ``refresh`` returns what a record-by-record
    reader counts as new, and ``len``, ``get`` and ``get_many`` give its vectors: a key's
    first good record, nothing of a skipped one. A fresh reader of the final file agrees
    as well."""
    directory = tmp_path / f"t{len(list(tmp_path.iterdir()))}"
    vf = VectorFile(directory, "e", DIM)
    directory.mkdir()
    vf.path.write_bytes(b"")
    model = Reader()
    for step in steps:
        data = bytearray(vf.path.read_bytes())
        for kind, k, x in step:
            if kind != "fix":
                del data[len(data) // REC * REC:]  # as ``add`` does: cut a torn tail first
            if kind == "good":
                data += record(key_of(k), vector_of(x))
            elif kind == "bad":
                data += record(key_of(k), vector_of(k), corrupt=x)
            elif kind == "fix":
                bad = [o for o in range(0, len(data) // REC * REC, REC)
                       if bytes(data[o:o + REC]) != record(data[o + 4:o + 20], np.frombuffer(bytes(data[o + 20:o + REC - 4]), "<f4"))]
                if bad:
                    o = bad[x % len(bad)]
                    data[o:o + REC] = record(key_of(k), vector_of(x))
            elif kind == "torn":
                data += record(key_of(k), vector_of(k))[:x]
            else:
                data += b"".join(record(key_of((k + j * j) % 8), vector_of(j)) for j in range(x))
        vf.path.write_bytes(bytes(data))  # same inode: read on from the last offset
        assert vf.refresh() == model.refresh(bytes(data))
        agree(vf, model)
    fresh, whole = VectorFile(directory, "e", DIM), Reader()
    assert fresh.refresh() == whole.refresh(vf.path.read_bytes())
    agree(fresh, whole)


# ------------------------------------------------------------------ cases, spelled out
def test_a_key_written_twice_keeps_its_first_vector(tmp_path: Path) -> None:
    """If a key's record is written again (two processes computed it at once), in the
    same read or a later one, then its first vector is kept and it counts once."""
    vf = VectorFile(tmp_path, "e", DIM)
    vf.add([(key_of(1), vector_of(1))])
    with open(vf.path, "ab") as f:
        f.write(record(key_of(2), vector_of(2)) + record(key_of(1), vector_of(9)) + record(key_of(2), vector_of(8)))
    r = VectorFile(tmp_path, "e", DIM)
    assert r.refresh() == 2 and len(r) == 2
    assert np.array_equal(r.get(key_of(1)), vector_of(1)) and np.array_equal(r.get(key_of(2)), vector_of(2))
    with open(vf.path, "ab") as f:
        f.write(record(key_of(3), vector_of(3)) + record(key_of(1), vector_of(7)) + record(key_of(3), vector_of(6)))
    assert r.refresh() == 1 and len(r) == 3
    assert np.array_equal(r.get(key_of(1)), vector_of(1)) and np.array_equal(r.get(key_of(3)), vector_of(3))
    with open(vf.path, "ab") as f:
        f.write(record(key_of(2), vector_of(5)))
    assert r.refresh() == 0 and np.array_equal(r.get(key_of(2)), vector_of(2))


def test_a_bad_record_among_the_last_four_is_read_once_complete(tmp_path: Path) -> None:
    """If one of the last 4 records does not check (a writer is still at it), then the
    read stops before it and takes it once it checks; an older bad record is skipped."""
    vf = VectorFile(tmp_path, "e", DIM)
    with open(vf.path, "wb") as f:
        f.write(record(key_of(0), vector_of(0), corrupt="vec")
                + b"".join(record(key_of(i), vector_of(i)) for i in range(1, 5))
                + record(key_of(5), vector_of(5), corrupt="crc")
                + record(key_of(6), vector_of(6)))
    assert vf.refresh() == 4 and key_of(0) not in vf and key_of(5) not in vf and key_of(6) not in vf
    data = bytearray(vf.path.read_bytes())
    data[5 * REC:6 * REC] = record(key_of(5), vector_of(5))
    data[0:REC] = record(key_of(0), vector_of(0))  # too late: record 0 was skipped
    vf.path.write_bytes(bytes(data))
    assert vf.refresh() == 2 and len(vf) == 6 and key_of(0) not in vf
    assert np.array_equal(vf.get(key_of(5)), vector_of(5)) and np.array_equal(vf.get(key_of(6)), vector_of(6))


def test_many_records_across_checksum_blocks_round_trip(tmp_path: Path) -> None:
    """If more records than two blocks of ``_CHECK_ROWS`` are written by ``add``, then
    a fresh reader finds every one, except one whose vector was damaged."""
    n = 2 * V._CHECK_ROWS + 5  # noqa: SLF001
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vf = VectorFile(tmp_path, "e", DIM)
    assert vf.add([(vf.key(str(i)), vecs[i]) for i in range(n)]) == n
    data = bytearray(vf.path.read_bytes())
    data[(V._CHECK_ROWS + 1) * REC + 30] ^= 0x01  # noqa: SLF001
    vf.path.write_bytes(bytes(data))
    r = VectorFile(tmp_path, "e", DIM)
    assert r.refresh() == n - 1 and r.get(r.key(str(V._CHECK_ROWS + 1))) is None  # noqa: SLF001
    got = r.get_many([r.key(str(i)) for i in range(n)])
    assert len(got) == n - 1 and all(np.array_equal(got[r.key(str(i))], vecs[i]) for i in range(n) if i != V._CHECK_ROWS + 1)  # noqa: SLF001


# ------------------------------------------------------------------ lookup without a read
def first_good_from(data: bytes, offset: int, key: bytes) -> np.ndarray | None:
    """The vector of ``key``'s first record that checks among the whole records from
    byte ``offset`` on (no stop at a bad record: a lookup reads nothing into the file's
    state, so it has no next time to wait for)."""
    for o in range(offset, len(data) // REC * REC, REC):
        r = data[o:o + REC]
        if (r[4:20] == key and r[:4] == MAGIC
                and check_int(np.frombuffer(r[4:-4], dtype="<u4").tolist()) == int.from_bytes(r[-4:], "little")):
            return np.frombuffer(r[20:-4], dtype="<f4").copy()
    return None


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.lists(op, max_size=10), st.booleans()), min_size=1, max_size=6),
       few=st.booleans())
def test_lookup_finds_what_the_file_holds_without_reading_it(
        tmp_path: Path, steps: list[tuple[list[tuple[Any, ...]], bool]], few: bool) -> None:
    """If records are appended (good, bad, completed, torn, repeated) and the file is
    refreshed only now and then, then ``lookup`` of any keys gives a known key's vector
    and an unknown key's first good record after what was read; it changes nothing that
    ``len``, ``get`` or a later ``refresh`` sees. With more unknown keys than
    ``LOOKUP_KEYS`` it is ``refresh`` + ``get_many``."""
    directory = tmp_path / f"t{len(list(tmp_path.iterdir()))}"
    vf = VectorFile(directory, "e", DIM)
    if few:
        vf.LOOKUP_KEYS = 2  # type: ignore[misc]  # an instance attribute: this reader only
    directory.mkdir()
    vf.path.write_bytes(b"")
    model = Reader()
    keys = [key_of(i) for i in range(8)]
    for step, read in steps:
        data = bytearray(vf.path.read_bytes())
        for kind, k, x in step:
            if kind != "fix":
                del data[len(data) // REC * REC:]
            if kind == "good":
                data += record(key_of(k), vector_of(x))
            elif kind == "bad":
                data += record(key_of(k), vector_of(k), corrupt=x)
            elif kind == "torn":
                data += record(key_of(k), vector_of(k))[:x]
            elif kind == "many":
                data += b"".join(record(key_of((k + j * j) % 8), vector_of(j)) for j in range(x))
        vf.path.write_bytes(bytes(data))
        raw = bytes(data)
        unknown = [k for k in keys if k not in model.rows]
        if len(unknown) > vf.LOOKUP_KEYS:
            model.refresh(raw)
            want = {k: v for k, v in model.rows.items() if k in keys}
        else:
            want = {k: model.rows[k] if k in model.rows else first_good_from(raw, model.offset, k) for k in keys}
            want = {k: v for k, v in want.items() if v is not None}
        before = len(vf)
        got = vf.lookup(keys)
        assert set(got) == set(want)
        assert all(np.array_equal(got[k], want[k]) and got[k].shape == (DIM,) for k in got)
        if len(unknown) <= vf.LOOKUP_KEYS:
            assert len(vf) == before  # nothing became known
        if read:
            assert vf.refresh() == model.refresh(raw)
            agree(vf, model)


def test_lookup_of_a_compacted_file_searches_it_from_the_start(tmp_path: Path) -> None:
    """If the file was replaced (compacted by another process) after this reader read
    it, then a lookup searches the new file from its first record."""
    vf = VectorFile(tmp_path, "e", DIM)
    vf.add([(key_of(i), vector_of(i)) for i in range(4)])
    other = VectorFile(tmp_path, "e", DIM)
    other.refresh()
    assert other.compact({key_of(1), key_of(3)}) == 2
    with open(vf.path, "ab") as f:
        f.write(record(key_of(5), vector_of(5)))
    got = vf.lookup([key_of(1), key_of(5), key_of(6)])
    assert set(got) == {key_of(1), key_of(5)}
    assert np.array_equal(got[key_of(5)], vector_of(5)) and np.array_equal(got[key_of(1)], vector_of(1))
