"""The limits a worker process runs under, applied before any import: its CPUs (the run's threads) and its
memory cap (`units.memory_size` parses `--memory-limit`)."""

from __future__ import annotations

import os
import resource


def pin_threads(threads: int) -> None:
    """Restrict the process to `threads` CPUs: the one limit every framework's pools obey."""
    allowed = sorted(os.sched_getaffinity(0))
    if threads < len(allowed):
        os.sched_setaffinity(0, allowed[:threads])


def apply_memory_limit(size: int) -> None:
    """Cap this process's writable memory at `size` bytes; an allocation past it fails.

    RLIMIT_DATA, not RLIMIT_AS: since Linux 4.7 it counts heap and private writable mappings,
    which is what arrays use, but not the address space JAX, TensorFlow and CUDA reserve
    without touching (under RLIMIT_AS those fail to start at a cap far above their real use).
    """
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        size = min(size, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (size, size))
