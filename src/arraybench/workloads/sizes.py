"""Sweep presets: sizes evenly spaced on a log scale, enough of them for scaling plots and crossovers."""

from typing import Any

# Fewer points leave crossovers interpolated across decades; more cost time on every backend.
SWEEP_POINTS = 9


def log_sweep(param: str, lo: int, hi: int, points: int = SWEEP_POINTS) -> list[dict[str, Any]]:
    """`points` values of `param` from `lo` to `hi`, each the same factor above the last (rounded)."""
    ratio = (hi / lo) ** (1.0 / (points - 1))
    return [{param: v} for v in sorted({round(lo * ratio**i) for i in range(points)})]
