"""Measurement: raw per-call samples of one case and the statistics derived from them."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import cached_property

NOISY_IQR_RATIO = 0.10
FEW_SAMPLES = 5


@dataclass(frozen=True)
class Measurement:
    """Per-call times in seconds, each the mean of `loops` back-to-back calls.

    Only the samples are stored; every statistic is computed from them, so a results file
    can always be re-analysed.
    """

    samples: tuple[float, ...]
    loops: int = 1

    def __post_init__(self) -> None:
        if not self.samples:
            raise ValueError("a Measurement needs at least one sample")

    @cached_property
    def sorted(self) -> tuple[float, ...]:
        return tuple(sorted(self.samples))

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return self.sorted[0]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    @property
    def std(self) -> float:
        return statistics.stdev(self.samples) if self.n > 1 else 0.0

    def quantile(self, q: float) -> float:
        """Linear interpolation between order statistics (NumPy's default method)."""
        s = self.sorted
        pos = q * (len(s) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    @property
    def iqr(self) -> float:
        return self.quantile(0.75) - self.quantile(0.25)

    @property
    def ci95(self) -> tuple[float, float]:
        """Distribution-free 95 % confidence interval of the median, from order statistics.

        Timing samples are skewed (a long right tail), so a normal-theory interval around the
        mean would mislead. The j-th smallest and j-th largest samples bound the median with
        probability 1 − 2·P(Binomial(n, ½) < j), whatever the distribution; j is the largest
        rank that keeps this at 95 % or more (fewer than 6 samples: the whole range).
        """
        s, n = self.sorted, self.n
        j, tail = 0, 0.0
        while True:
            tail_next = tail + math.comb(n, j) / 2.0**n
            if tail_next > 0.025:
                break
            tail, j = tail_next, j + 1
        j = max(j, 1)
        return s[j - 1], s[n - j]

    @property
    def noisy(self) -> bool:
        return self.iqr > NOISY_IQR_RATIO * self.median

    @property
    def warnings(self) -> list[str]:
        """What a careful reader should know before trusting the median."""
        out = []
        if self.noisy:
            out.append(
                f"noisy: IQR is {100 * self.iqr / self.median:.0f}% of the median; "
                "close other programs or raise --min-time"
            )
        if self.n < FEW_SAMPLES:
            out.append(f"only {self.n} samples; raise --max-time for a tighter interval")
        return out

    def summary(self) -> dict[str, float | int | bool | list[float]]:
        lo, hi = self.ci95
        return {
            "median_s": self.median,
            "iqr_s": self.iqr,
            "min_s": self.min,
            "mean_s": self.mean,
            "std_s": self.std,
            "ci95_s": [lo, hi],
            "n_samples": self.n,
            "noisy": self.noisy,
        }
