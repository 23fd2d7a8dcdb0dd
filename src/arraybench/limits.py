"""Memory cap for worker processes: parsing `--memory-limit` and applying it before any import."""

from __future__ import annotations

import argparse
import re
import resource

_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def memory_size(text: str) -> int:
    """`2G`, `512M`, `1.5GiB` or a byte count -> bytes (binary units); argparse type for --memory-limit."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: expected e.g. 2G, 512M or a byte count")
    size = int(float(m[1]) * _UNITS[m[2].lower()])
    if size < 2**20:
        raise argparse.ArgumentTypeError(f"{text!r} is below 1M, too little for any framework to start")
    return size


def format_size(size: int) -> str:
    for unit in ("T", "G", "M", "K"):
        scale = _UNITS[unit.lower()]
        if size >= scale:
            return f"{size / scale:.3g} {unit}iB"
    return f"{size} B"


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
