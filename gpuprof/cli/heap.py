"""The command's own process keeps the memory it frees for its next columns.

glibc's malloc gives a freed block of more than 128 KiB back to the kernel at once (it was
mmap'd), until its sliding threshold has seen such frees; an import makes and drops columns of a
million rows (8 MB each) dozens of times, and every new one faulted its pages in again: a third
of an import's time went to the kernel. Raising the mmap threshold to glibc's 32 MiB maximum and
keeping up to 128 MiB free at the top of the heap ends that (tens of thousands of page faults
per million-row import become about a thousand). Set by the import command, in the process that
runs it (its own, from the shell): a program that only imports gpuprof as a library keeps its own
allocator settings.
"""

from __future__ import annotations

import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
MMAP_BYTES = 32 << 20  # glibc's largest mmap threshold on 64-bit systems (mallopt(3))
TRIM_BYTES = 128 << 20


def keep_freed_memory() -> bool:
    """Set glibc's thresholds for this process; whether it took them (False off glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a libc without mallopt (musl has it as a stub)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES))
