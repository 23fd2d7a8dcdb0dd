"""glibc's allocator thresholds: the worker's steady state, and the bare one its memory phases read in."""

from __future__ import annotations

import ctypes
import sys
from typing import Any

# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
# Where glibc's dynamic mmap threshold ends in a long-running program: it rises to the size of
# each large block freed, up to DEFAULT_MMAP_THRESHOLD_MAX (32 MiB on 64-bit), and the trim
# threshold follows at twice that.
STEADY_MMAP_THRESHOLD = 32 * 2**20
STEADY_TRIM_THRESHOLD = 2 * STEADY_MMAP_THRESHOLD
# While memory is read (measure/call_memory.py): a block of 64 KiB or more that no free chunk holds is
# a fresh mapping of its own, and every free that leaves free memory at the top of an arena's heap
# gives it back, so that what a call needs shows in the resident set rather than in pages kept.
BARE_MMAP_THRESHOLD = 64 * 2**10
BARE_TRIM_THRESHOLD = 0


def glibc() -> Any | None:
    """The C library, where it is glibc on Linux; else None."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None)
    return libc if hasattr(libc, "gnu_get_libc_version") else None


def set_thresholds(mmap: int, trim: int) -> bool:
    """Set glibc's mmap and trim thresholds (which also ends its dynamic adjustment of them);
    whether it took both."""
    libc = glibc()
    return libc is not None and libc.mallopt(M_MMAP_THRESHOLD, mmap) == 1 and libc.mallopt(M_TRIM_THRESHOLD, trim) == 1


def trim() -> None:
    """Give the kernel back every whole free page in glibc's arenas (malloc_trim(0)): the free chunks of
    each, and the top of the main one; another arena's top goes only when a free there trims it."""
    libc = glibc()
    if libc is not None:
        libc.malloc_trim(0)
