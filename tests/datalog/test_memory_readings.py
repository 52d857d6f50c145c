"""The evaluation budget's memory readings (``reckon.datalog._memory``) against the
kernel's own accounting (``/proc/self/statm`` opened anew), in this process and in a
forked child. The kernel's resident counters are per-CPU sums read without
synchronisation (approximate by up to a batch per CPU), hence the tolerances."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys

import pytest

from reckon.datalog import _memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")

MB = 1 << 20


def _statm_now() -> tuple[int, int]:
    with open("/proc/self/statm", "rb") as fh:
        size, resident = fh.read().split()[:2]
    return int(size) * _memory.PAGE, int(resident) * _memory.PAGE


def test_readings_follow_the_process_as_it_grows() -> None:
    # a fresh anonymous mapping, every page touched: resident whatever the allocator kept
    before = _memory.rss_bytes()
    block = mmap.mmap(-1, 64 * MB)
    for off in range(0, 64 * MB, _memory.PAGE):
        block[off] = 1
    ref_before = _statm_now()
    after = _memory.rss_bytes()
    vm_after = _memory.vm_bytes()
    ref_after = _statm_now()
    held = _memory._statm_fd
    block.close()
    assert held is not None
    assert os.readlink(f"/proc/self/fd/{held[1]}") == f"/proc/{os.getpid()}/statm"
    assert after - before >= 48 * MB  # the same descriptor, read again, sees the growth
    # other threads of a long test run allocate and free between the readings: ours lies
    # between the kernel's own just before and just after, within the counters' slack
    low = min(ref_before[1], ref_after[1]) - 64 * MB
    high = max(ref_before[1], ref_after[1]) + 64 * MB
    assert low <= after <= high, (ref_before, after, ref_after)
    assert vm_after is not None
    assert min(ref_before[0], ref_after[0]) - 64 * MB <= vm_after <= max(ref_before[0], ref_after[0]) + 64 * MB


def test_a_descriptor_closed_and_reused_elsewhere_is_reopened() -> None:
    # other code closes our number by mistake and the kernel hands it to another file --
    # here another process's statm, which parses as well as ours and reads its size
    _memory.rss_bytes()
    held = _memory._statm_fd
    assert held is not None
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        theirs = os.open(f"/proc/{child.pid}/statm", os.O_RDONLY)
        os.dup2(theirs, held[1])  # closes ours, the number now names the child's statm
        os.close(theirs)
        block = mmap.mmap(-1, 96 * MB)
        for off in range(0, 96 * MB, _memory.PAGE):
            block[off] = 1
        ours = _memory.rss_bytes()
        ref = _statm_now()[1]
        child_rss = int(os.pread(held[1], 128, 0).split()[1]) * _memory.PAGE
        block.close()
        assert child_rss < 90 * MB  # the number really names the small child
        assert ours >= 96 * MB and abs(ours - ref) < 64 * MB
        assert _memory._statm_fd is not None and _memory._statm_fd[1] != held[1]
    finally:
        child.kill()
        child.wait()
        os.close(held[1])


def test_a_forked_child_reads_its_own_size_not_its_parents() -> None:
    _memory.rss_bytes()  # the parent's descriptor is open before the fork
    parent = _memory.rss_bytes()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            start = _memory.rss_bytes()  # the child's own, smaller: file pages are not copied
            block = bytearray(200 * MB)
            block[:: _memory.PAGE] = b"\x01" * len(block[:: _memory.PAGE])
            os.write(w, f"{start} {_memory.rss_bytes()} {_statm_now()[1]}".encode())
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 100).decode().split()
    os.waitpid(pid, 0)
    os.close(r)
    start, child, child_ref = (int(x) for x in got)
    assert child - start >= 190 * MB  # the parent's descriptor would show no growth
    assert abs(child - child_ref) < 32 * MB
    assert abs(_memory.rss_bytes() - parent) < 32 * MB  # the parent is unchanged
