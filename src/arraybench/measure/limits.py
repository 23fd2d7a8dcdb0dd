"""Memory cap for worker processes, applied before any import (`units.memory_size` parses `--memory-limit`)."""

from __future__ import annotations

import resource


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
