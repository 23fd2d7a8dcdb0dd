"""The CPU's caches, as the kernel lists them."""

from __future__ import annotations

import glob


def last_level_cache_bytes() -> int | None:
    """The largest CPU cache of cpu0 (Linux sysfs), or None where it cannot be read."""
    sizes = []
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        try:
            text = open(path).read().strip()
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes) if sizes else None
