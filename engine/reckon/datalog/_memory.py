"""Memory measurements behind the evaluation budget (``Limits.max_bytes``).

Private support for :mod:`reckon.datalog.evaluate`. A runaway rule program does not
fail politely: on this machine the ever-deeper triple-term program of
``tests/datalog/test_evaluate.py`` grows by ~200 MB/s until the kernel kills the
process (or, under an address-space limit, until an allocation aborts it), long before
``max_rounds``; a cross product of 9M facts costs ~0.5 KB per fact. So the evaluator
measures the process instead of trusting fact counts:

* :func:`rss_bytes` — resident set size, from ``/proc/self/statm`` (Linux, ~5 µs); on
  other systems the peak RSS from ``getrusage`` (an over-estimate, never an under-one);
* :func:`vm_bytes` — virtual size, checked against ``RLIMIT_AS`` when one is set
  (``ulimit -v``: allocation fails, and pyoxigraph's Rust code aborts, at that size);
* :func:`headroom_bytes` — how much more the process can take: the least of
  ``MemAvailable`` (``/proc/meminfo``), the cgroup v2 / v1 memory limit minus its usage,
  and ``RLIMIT_RSS`` / ``RLIMIT_DATA`` minus the RSS.

Sources: proc(5) (``/proc/self/statm``, ``/proc/meminfo``), getrlimit(2), the Linux
cgroup v2 documentation (``memory.max``, ``memory.current``).
"""

from __future__ import annotations

import os
import resource
import sys

__all__ = ["PAGE", "address_space_limit", "headroom_bytes", "rss_bytes", "vm_bytes"]

try:
    PAGE = os.sysconf("SC_PAGE_SIZE")
except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
    PAGE = 4096
"""Bytes per memory page."""

_STATM = "/proc/self/statm"
_HAS_STATM = os.path.exists(_STATM)


_statm_fd: tuple[int, int, int, int] | None = None
# (pid, descriptor, st_dev, st_ino of that pid's statm as opened)


def _open_statm(pid: int) -> tuple[int, int, int, int]:
    fd = os.open(_STATM, os.O_RDONLY | os.O_CLOEXEC)
    st = os.fstat(fd)
    return pid, fd, st.st_dev, st.st_ino


def _statm() -> tuple[int, int] | None:
    # One descriptor per process, read with pread(2) at offset 0: proc(5) regenerates a
    # seq file's text at every read from its start, and opening the path again costs
    # ~30x the read (a path walk through /proc and a Python file object). The pid check
    # reopens in a forked child, whose inherited descriptor names its parent. The fstat
    # check (~0.3 µs) reopens when the number no longer names the file opened: other
    # code in the process closed it (a double close elsewhere) and the number was given
    # to another file, which may be another process's statm.
    global _statm_fd
    pid = os.getpid()
    try:
        held = _statm_fd
        if held is None or held[0] != pid:
            held = _statm_fd = _open_statm(pid)
        else:
            try:
                st = os.fstat(held[1])
                same = (st.st_dev, st.st_ino) == held[2:]
            except OSError:
                same = False
            if not same:
                held = _statm_fd = _open_statm(pid)
        size, resident = os.pread(held[1], 128, 0).split()[:2]
        return int(size) * PAGE, int(resident) * PAGE
    except (OSError, ValueError):  # pragma: no cover - /proc vanished
        return None


def rss_bytes() -> int:
    """Resident memory of this process (bytes)."""
    if _HAS_STATM:
        got = _statm()
        if got is not None:
            return got[1]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # pragma: no cover - not Linux
    return int(peak if sys.platform == "darwin" else peak * 1024)  # pragma: no cover


def vm_bytes() -> int | None:
    """Virtual size of this process (bytes), or ``None`` where it cannot be read."""
    if _HAS_STATM:
        got = _statm()
        if got is not None:
            return got[0]
    return None  # pragma: no cover - not Linux


def _rlimit(which: int) -> int | None:
    try:
        soft, _ = resource.getrlimit(which)
    except (ValueError, OSError):  # pragma: no cover
        return None
    return None if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)


def address_space_limit() -> int | None:
    """``RLIMIT_AS`` (bytes) when one is set (``ulimit -v``), else ``None``."""
    return _rlimit(resource.RLIMIT_AS)


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    if not text or text == "max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_headroom() -> int | None:
    # cgroup v2 (unified): the process's own cgroup from /proc/self/cgroup ("0::/path")
    try:
        with open("/proc/self/cgroup", encoding="ascii") as fh:
            lines = fh.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        if line.startswith("0::"):
            base = "/sys/fs/cgroup" + line[3:].rstrip("/")
            limit = _read_int(base + "/memory.max")
            if limit is not None:
                used = _read_int(base + "/memory.current") or 0
                return max(0, limit - used)
    limit = _read_int("/sys/fs/cgroup/memory.max")
    if limit is not None:
        used = _read_int("/sys/fs/cgroup/memory.current") or 0
        return max(0, limit - used)
    limit = _read_int("/sys/fs/cgroup/memory/memory.limit_in_bytes")  # cgroup v1
    if limit is not None and limit < (1 << 60):
        used = _read_int("/sys/fs/cgroup/memory/memory.usage_in_bytes") or 0
        return max(0, limit - used)
    return None


def headroom_bytes() -> int | None:
    """How many more bytes of resident memory this process can take before the system
    (available memory, cgroup limit, ``RLIMIT_RSS`` / ``RLIMIT_DATA``) refuses or kills
    it; ``None`` when nothing can be measured."""
    rss = rss_bytes()
    candidates = [_mem_available(), _cgroup_headroom()]
    for which in (getattr(resource, "RLIMIT_RSS", None), getattr(resource, "RLIMIT_DATA", None)):
        if which is not None:
            lim = _rlimit(which)
            if lim is not None:
                candidates.append(max(0, lim - rss))
    known = [c for c in candidates if c is not None]
    return min(known) if known else None
