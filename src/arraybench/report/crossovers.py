"""Crossovers: the size at which one backend·mode overtakes another, interpolated on the log-log curve."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from arraybench.report.model import ReportData
from arraybench.runner import format_seconds


@dataclass(frozen=True)
class Crossover:
    """Below `size` `faster_below` wins; above it `faster_above` does (both correct there)."""

    workload: str
    machine: str
    dtype: str
    fixed: tuple  # the other parameters, the same along the sweep
    size_param: str
    faster_below: str
    faster_above: str
    size: float
    time_s: float

    def describe(self) -> str:
        return (f"{self.workload} ({self.dtype}): {self.faster_above} overtakes {self.faster_below} at "
                f"{self.size_param} ≈ {self.size:.3g} ({format_seconds(self.time_s)} per call)")


def sweeps(data: ReportData) -> dict[tuple, dict[str, dict[float, dict[str, Any]]]]:
    """Correct records with a numeric size, per (workload, machine, dtype, other params): label -> size -> record."""
    out: dict[tuple, dict[str, dict[float, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for wl, recs in data.by_workload().items():
        name = data.size_param(wl)
        for r in recs:
            size = r.get("size")
            if r["status"] != "ok" or not isinstance(size, int | float) or size <= 0 or not r.get("median_s"):
                continue
            fixed = tuple(sorted((k, v) for k, v in r["params"].items() if k != name))
            out[(wl, r["machine"], r["dtype"], name, fixed)][data.label(r)][size] = r
    return {k: v for k, v in out.items() if len({s for series in v.values() for s in series}) >= 2}


def crossovers(data: ReportData) -> list[Crossover]:
    """Every sign change of log(time A / time B) between neighbouring sizes both were measured at."""
    found = []
    for (wl, machine, dtype, name, fixed), series in sweeps(data).items():
        for a, b in combinations(sorted(series), 2):
            common = sorted(set(series[a]) & set(series[b]))
            points = []
            for s in common:
                gap = math.log(series[a][s]["median_s"]) - math.log(series[b][s]["median_s"])
                if gap != 0:  # an exact tie is not a side; the crossing lies between its neighbours
                    points.append((s, gap))
            for (s0, g0), (s1, g1) in zip(points, points[1:], strict=False):
                if (g0 < 0) == (g1 < 0):
                    continue
                frac = g0 / (g0 - g1)
                x = math.exp(math.log(s0) + frac * (math.log(s1) - math.log(s0)))
                t0, t1 = series[a][s0]["median_s"], series[a][s1]["median_s"]
                t = math.exp(math.log(t0) + frac * (math.log(t1) - math.log(t0)))
                below, above = (a, b) if g0 < 0 else (b, a)
                found.append(Crossover(wl, machine, dtype, fixed, name, below, above, x, t))
    return sorted(found, key=lambda c: (c.workload, c.machine, c.size, c.faster_above))


def render_text(data: ReportData, found: list[Crossover]) -> str:
    """Lines for the terminal and report.md: each crossover, or why a sweep has none."""
    if not found:
        swept = sorted({k[0] for k in sweeps(data)})
        if not swept:
            return "Crossovers: none (no workload was measured at two or more sizes)"
        return f"Crossovers: none; the order of backends does not change over the sizes of {', '.join(swept)}"
    return "\n".join(["Crossovers (interpolated on log-log):", *[f"  {c.describe()}" for c in found]])
