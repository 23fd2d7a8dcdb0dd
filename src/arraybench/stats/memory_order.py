"""Memory claims: a case's memory over its processes as a point, compared by the rule every time claim uses.

Memory varies between processes too (what a framework's allocator had kept, a lazily made workspace,
the counters' own resolution), so a claim that one case needs less memory than another rests on the
same test as a claim about time (bracket.side): paired by round where one run measured both, from
their per-round log ratios; otherwise from each case's interval over its processes. Figures are
compared at RESOLUTION: below it a counter cannot tell two cases apart (docs/memory.md).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping

from arraybench.stats.bracket import Point, side
from arraybench.stats.measurement import point_variance
from arraybench.stats.paired import Pairing
from arraybench.stats.pooling import NO_PRIOR
from arraybench.stats.student import t_isf

# The resident set's per-CPU counters read within 32 pages a CPU (128 KiB on 4 KiB pages), and a
# framework's pool rounds blocks up: 1 MiB is what every counter here resolves. A figure is compared
# as a whole number of MiB (at least one), so two cases that differ by less are the same.
RESOLUTION = 2**20


def quantized(value: float) -> float:
    """`value` bytes to the nearest whole MiB, at least one: what a memory claim compares."""
    return RESOLUTION * max(1, round(value / RESOLUTION))


def interval(values: list[float]) -> tuple[float, float]:
    """Where a repeat run's median memory is expected (95 %), from the processes' log spread, as a case's
    time interval is (`median · exp(±t · √2 · se)`, t with R − 1 degrees of freedom); unbounded from one
    process, which knows nothing of the spread between processes."""
    if len(values) < 2:
        return 0.0, math.inf
    logs = [math.log(v) for v in values]
    se = math.sqrt(point_variance(statistics.variance(logs), len(logs)))
    half = t_isf(0.025, len(logs) - 1) * math.sqrt(2) * se
    middle = statistics.median(values)
    return middle * math.exp(-half), middle * math.exp(half)


def point(size: float, by_round: Mapping[int, float], run: str | None = None) -> Point | None:
    """A case's memory as a claim compares it: the median of its processes' figures (quantized), their
    interval, and where `run` measured it beside its rivals, its log figure by round: two cases of one
    run pair round by round, with no prior (what a run's pairs say of time says nothing of memory).
    None where no process has a figure."""
    values = {k: quantized(v) for k, v in by_round.items()}
    if not values:
        return None
    low, high = interval(list(values.values()))
    rounds = tuple(sorted((k, math.log(v)) for k, v in values.items()))
    return Point(size, statistics.median(values.values()), low, high, rounds,
                 Pairing(run, NO_PRIOR) if run is not None else None)


def less(a: Point, b: Point, factor: float = 1.0) -> bool:
    """Whether `a` needs less than 1/`factor` of `b`'s memory beyond noise (bracket.side)."""
    return side(a.times(factor), b) == -1
