"""Sizes: sweep presets evenly spaced on a log scale, and which cases form one series over the size."""

from collections.abc import Mapping
from typing import Any

# Fewer points leave crossovers interpolated across decades; more cost time on every backend.
SWEEP_POINTS = 9


def log_sweep(param: str, lo: int, hi: int, points: int = SWEEP_POINTS) -> list[dict[str, Any]]:
    """`points` values of `param` from `lo` to `hi`, each the same factor above the last (rounded)."""
    ratio = (hi / lo) ** (1.0 / (points - 1))
    return [{param: v} for v in sorted({round(lo * ratio**i) for i in range(points)})]


def fixed_params(params: Mapping[str, Any], size_param: str) -> tuple[tuple[str, Any], ...]:
    """A case's problem: its parameters other than the size, sorted.

    Cases of one workload (dtype, device, machine) that share them are one series ordered by the
    size: its crossovers, refinement rounds and size-by-size answer. Cases that differ in any other
    parameter are different problems, never one series, even where that parameter grows with the
    size (`{n: 64, m: 128}`, `{n: 512, m: 1024}`): nothing measured says that `m` moving does not
    change who is fastest at a given `n`.
    """
    return tuple(sorted((k, v) for k, v in params.items() if k != size_param))
