"""No Internet sockets for this process: a seccomp filter (Linux).

pyoxigraph 0.5's ``Store.query`` evaluates ``SERVICE`` with its own HTTP client and has
no switch to turn it off. The query worker processes (:mod:`reckon.store.query_pool`)
therefore install, before they import pyoxigraph, a seccomp-BPF filter
(``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)``, Linux kernel documentation
"Seccomp BPF (SECure COMPuting with filters)") under which

* ``socket(AF_INET | AF_INET6, ...)`` fails with ``EACCES`` (no TCP, no UDP, hence no
  DNS lookup and no HTTP request: nothing can leave the process),
* ``io_uring_setup`` fails with ``ENOSYS`` (an io_uring could open sockets without the
  ``socket`` system call).

Unix-domain sockets, pipes and files keep working. The filter cannot be removed, and it
is inherited by every thread the process starts afterwards. ``PR_SET_NO_NEW_PRIVS`` is
set first, as the kernel requires of unprivileged processes.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

__all__ = ["deny_internet_sockets"]

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_BPF_RET_K = 0x06  # BPF_RET | BPF_K
_AF_INET, _AF_INET6 = 2, 10

#: machine -> (AUDIT_ARCH_*, socket syscall number, io_uring_setup syscall number)
_ARCH = {
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
}


def _stmt(code: int, k: int) -> bytes:
    return struct.pack("HBBI", code, 0, 0, k)


def _jump(k: int, jt: int, jf: int) -> bytes:
    return struct.pack("HBBI", _BPF_JEQ_K, jt, jf, k)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def deny_internet_sockets() -> str | None:
    """Install the filter in the calling process (all threads started later inherit it).

    :returns: ``None`` when installed, else why not (another OS or architecture, or the
        kernel refused), for the caller to report.
    """
    machine = platform.machine()
    if platform.system() != "Linux" or machine not in _ARCH:
        return f"seccomp filter not available on {platform.system()} {machine}"
    arch, nr_socket, nr_uring = _ARCH[machine]
    # struct seccomp_data: nr @0, arch @4, instruction_pointer @8, args[6] @16 (u64;
    # the low 32 bits of args[0] at offset 16 on little-endian machines)
    prog = [
        _stmt(_BPF_LD_W_ABS, 4),
        _jump(arch, 1, 0),
        _stmt(_BPF_RET_K, _SECCOMP_RET_ERRNO | errno.EACCES),  # a foreign ABI: refuse everything
        _stmt(_BPF_LD_W_ABS, 0),
        _jump(nr_uring, 0, 1),
        _stmt(_BPF_RET_K, _SECCOMP_RET_ERRNO | errno.ENOSYS),
        _jump(nr_socket, 0, 4),
        _stmt(_BPF_LD_W_ABS, 16),
        _jump(_AF_INET, 1, 0),
        _jump(_AF_INET6, 0, 1),
        _stmt(_BPF_RET_K, _SECCOMP_RET_ERRNO | errno.EACCES),
        _stmt(_BPF_RET_K, _SECCOMP_RET_ALLOW),
    ]
    code = b"".join(prog)
    buf = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(prog), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {errno.errorcode.get(ctypes.get_errno(), '?')}"
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return f"prctl(PR_SET_SECCOMP) failed: {errno.errorcode.get(ctypes.get_errno(), '?')}"
    return None
