"""The evaluation budget's memory readings (``reckon.datalog._memory``) against the
kernel's own accounting (``/proc/self/statm`` opened anew), in this process and in a
forked child. The kernel's resident counters are per-CPU sums read without
synchronisation (approximate by up to a batch per CPU), hence the tolerances."""

from __future__ import annotations

import mmap
import os
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
    after = _memory.rss_bytes()
    vm_after = _memory.vm_bytes()
    rss_ref, vm_ref = _statm_now()
    block.close()
    assert after - before >= 48 * MB  # the same descriptor, read again, sees the growth
    assert abs(after - rss_ref) < 64 * MB
    assert vm_after is not None and abs(vm_after - vm_ref) < 64 * MB


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
