"""Units and their formatting: seconds and byte sizes as people read them, and numbers as JSON can hold
them. A leaf: imports nothing of ours."""

from __future__ import annotations

import math
import re
from typing import Any

_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def format_seconds(s: float | None) -> str:
    """`0.00123` -> `1.23 ms`; three significant digits, `—` for no value."""
    if s is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def format_size(size: int) -> str:
    """Bytes in binary units: `1.5 GiB`."""
    for unit in ("T", "G", "M", "K"):
        scale = _UNITS[unit.lower()]
        if size >= scale:
            return f"{size / scale:.3g} {unit}iB"
    return f"{size} B"


def memory_size(text: str) -> int:
    """`2G`, `512M`, `1.5GiB` or a byte count -> bytes (binary units); a ValueError says what is wrong."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"bad size {text!r}: expected e.g. 2G, 512M or a byte count")
    size = int(float(m[1]) * _UNITS[m[2].lower()])
    if size < 2**20:
        raise ValueError(f"{text!r} is below 1M, too little for any framework to start")
    return size


def finite(obj: Any) -> Any:
    """`obj` with NaN and infinities as None: JSON has no token for them, and readers expect null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    if hasattr(obj, "tolist"):  # NumPy scalars and arrays
        return finite(obj.tolist())
    return obj
