"""Compare's memory side: a case's memory in two runs (or two environments of one), by the rules of its time.

Per case, the ratio new/base of the processes' median `memory_bytes` (at stats.memory_order.RESOLUTION) and
its 95 % interval: paired round by round where the two sides are environments of one run (as their
times are), else Welch's t on the processes' log figures (each side's spread between processes; one
process a side knows none, and decides nothing). Compare corrects the p-values across cases with
Benjamini–Hochberg and calls a change as it calls a time's (stats/verdicts.decide): `more memory` or
`less memory` only when significant, its interval excludes 1 and it exceeds the threshold.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from arraybench.results.reading import memory_by_round
from arraybench.results.record import CaseRecord
from arraybench.stats.measurement import point_variance
from arraybench.stats.memory_order import quantized
from arraybench.stats.paired import paired_log_ratio
from arraybench.stats.student import LogRatio
from arraybench.stats.verdicts import FASTER, NOISY, SLOWER, decide
from arraybench.units import format_size

MORE, LESS = "more memory", "less memory"
WORDS = {SLOWER: MORE, FASTER: LESS}  # a time's verdict, said of memory


@dataclass(frozen=True)
class MemoryChange:
    """One case's memory, new over base: the ratio, its 95 % interval, its own p-value and (after the
    correction across cases) its q-value and verdict."""

    base_bytes: float
    new_bytes: float
    estimate: LogRatio
    verdict: str = NOISY
    q_value: float = math.nan

    @property
    def ratio(self) -> float:
        return self.estimate.ratio

    @property
    def ci95(self) -> tuple[float, float]:
        return self.estimate.ci95


def logs(values: Sequence[float]) -> list[float]:
    return [math.log(quantized(v)) for v in values]


def welch(base: Sequence[float], new: Sequence[float]) -> LogRatio:
    """log(new/base) of the two sides' median figures, its standard error from each side's spread
    between processes (the median's, measurement.point_variance) and Welch–Satterthwaite's degrees
    of freedom; an unknown spread (one process) is an infinite error."""
    lb, ln = logs(base), logs(new)
    value = math.log(quantized(statistics.median(new))) - math.log(quantized(statistics.median(base)))
    if min(len(lb), len(ln)) < 2:
        return LogRatio(value, math.inf, 1.0)
    vb, vn = point_variance(statistics.variance(lb), len(lb)), point_variance(statistics.variance(ln), len(ln))
    if vb + vn == 0:  # every process of each side read the same: the figures are what they are
        return LogRatio(value, 0.0, math.inf)
    df = (vb + vn) ** 2 / (vb**2 / (len(lb) - 1) + vn**2 / (len(ln) - 1))
    return LogRatio(value, math.sqrt(vb + vn), df)


def change(base: CaseRecord, new: CaseRecord, paired: bool = False) -> MemoryChange | None:
    """The case's memory change before the correction across cases; None where a side has no figure.
    `paired`: the sides are two environments of one run, their processes in the same rounds."""
    b, n = memory_by_round(base), memory_by_round(new)
    if not b or not n:
        return None
    found = paired_log_ratio({k: math.log(quantized(v)) for k, v in b.items()},
                             {k: math.log(quantized(v)) for k, v in n.items()}) if paired else None
    estimate = found.estimate if found is not None else welch(list(b.values()), list(n.values()))
    return MemoryChange(statistics.median(b.values()), statistics.median(n.values()), estimate)


def decided(changes: Sequence[MemoryChange], q_values: Sequence[float], threshold: float) -> list[MemoryChange]:
    """Each change with its q-value (Benjamini–Hochberg across the cases, computed by the caller) and its
    verdict, by the rule of a time's (stats/verdicts.decide), in memory's words."""
    out = []
    for c, q in zip(changes, q_values, strict=True):
        verdict = decide(c.ratio, c.ci95, q, threshold)
        out.append(dataclasses.replace(c, verdict=WORDS.get(verdict, verdict), q_value=q))
    return out


HEADER = ["case", "backend·mode", "base memory", "new memory", "new/base [95% CI]", "q (BH)", "verdict"]


def table_rows(compared: Sequence[tuple[str, str, MemoryChange]]) -> list[list[str]]:
    """The memory table's rows (HEADER): per case with a figure on both sides, changes first."""
    order = {MORE: 0, LESS: 1}
    rows = []
    for label, row, c in sorted(compared, key=lambda x: (order.get(x[2].verdict, 2), x[0], x[1])):
        lo, hi = c.ci95
        rows.append([label, row, format_size(round(c.base_bytes)), format_size(round(c.new_bytes)),
                     f"{c.ratio:.3f} [{lo:.3f}, {hi:.3f}]", f"{c.q_value:.2g}", c.verdict])
    return rows


def json_fields(c: MemoryChange | None) -> dict[str, float | str | None]:
    """A compared case's memory in `compare --format json|csv` (null where a side has no figure)."""
    if c is None:
        return dict.fromkeys(("base_memory_bytes", "new_memory_bytes", "memory_ratio", "memory_ci95_low",
                              "memory_ci95_high", "memory_verdict"))
    return {"base_memory_bytes": c.base_bytes, "new_memory_bytes": c.new_bytes, "memory_ratio": c.ratio,
            "memory_ci95_low": c.ci95[0], "memory_ci95_high": c.ci95[1], "memory_verdict": c.verdict}
