"""Measurement: raw per-call samples of one case, in one or several processes, and their statistics."""

from __future__ import annotations

import functools
import hashlib
import math
import statistics
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from arraybench.stats.pooling import NO_PRIOR, VariancePrior, t975

NOISY_IQR_RATIO = 0.10
FEW_SAMPLES = 5
# Processes whose medians differ by more than this make a case noisy, whatever each one's IQR.
NOISY_PROCESS_SPREAD = 0.10
# What one minor page fault costs (trap, zero a 4 KiB page, map it): 2.0 µs measured on the
# 2-core VM of issue 11 (30.6 ms for 15 583 faults), about 0.5 µs on bare metal; 1 µs between.
FAULT_COST_S = 1e-6
# A case whose page faults take this share of its time (at FAULT_COST_S each, so likely twice
# that on a VM) measures the kernel's memory mapping as much as the framework.
FAULT_DOMINATED_SHARE = 0.3
# Samples of one process that fall into two groups this far apart (the gap over the lower group's
# largest) are two modes: a process whose calls ran 381 ms once and 820 ms once reports a mode,
# never their average.
BIMODAL_GAP = 0.25
BOOTSTRAP_RESAMPLES = 2000
# The bootstraps kept for the cases read again (bootstrap_of): 16 kB each, a `make bench` run's ~900
# cases and its report's readings with room to spare.
BOOTSTRAP_CACHE = 2048
BOOTSTRAP_SEED = 0  # fixed: the same samples always give the same interval
# Var(median of R normal draws) / Var(their mean), R = 2..12 (odd R by integrating the middle
# order statistic's density, even R from 2·10⁶ draws); past 12, the limit π/2 (an upper bound).
MEDIAN_VARIANCE_FACTOR = (1.0, 1.346, 1.191, 1.434, 1.289, 1.473, 1.343, 1.495, 1.384, 1.509, 1.411)


def fault_dominated(faults_per_call: float | None, seconds_per_call: float | None) -> bool:
    """Whether page faults (at FAULT_COST_S each) take FAULT_DOMINATED_SHARE or more of a call's time."""
    if not faults_per_call or not seconds_per_call:
        return False
    return faults_per_call * FAULT_COST_S >= FAULT_DOMINATED_SHARE * seconds_per_call


@functools.lru_cache(maxsize=256)
def median_ci_rank(n: int) -> int:
    """The rank j of Measurement.ci95 for n samples: exact to 200 samples, then the normal limit.

    The exact sum costs O(n) big-integer binomials; the Timer asks after every sample.
    """
    if n > 200:
        return max(1, math.floor(n / 2 - 1.96 * math.sqrt(n) / 2))
    j, tail = 0, 0.0
    while True:
        tail_next = tail + math.comb(n, j) / 2.0**n
        if tail_next > 0.025:
            break
        tail, j = tail_next, j + 1
    return max(j, 1)


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

    @cached_property
    def modes(self) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """The two groups of a process's samples split by their widest gap, when that gap is at least
        BIMODAL_GAP of the lower group's top and each group has two samples (any split with three or
        fewer: a lone outlier among many is noise, not a mode); else None."""
        s = self.sorted
        if len(s) < 2:
            return None
        i = max(range(len(s) - 1), key=lambda k: s[k + 1] / s[k] if s[k] > 0 else 0.0)
        if s[i] <= 0 or s[i + 1] / s[i] < 1 + BIMODAL_GAP:
            return None
        low, high = s[:i + 1], s[i + 1:]
        if len(s) > 3 and min(len(low), len(high)) < 2:
            return None
        return low, high

    @property
    def bimodal(self) -> bool:
        return self.modes is not None

    @cached_property
    def reported(self) -> tuple[float, ...]:
        """The sorted samples the median and its interval speak for: all of them, or the larger
        mode's where they split into two (the faster on a tie)."""
        modes = self.modes
        if modes is None:
            return self.sorted
        low, high = modes
        return high if len(high) > len(low) else low

    @property
    def median(self) -> float:
        """The median of the samples; of the larger mode's where they split into two (the faster on a tie)."""
        return statistics.median(self.reported)

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
        rank that keeps this at 95 % or more (fewer than 6 samples: the whole range). Where the
        samples split into two modes, the interval is the reported mode's, as the median is (a lone
        sample's mode: every sample's), so that it always holds the median it goes with.
        """
        s = self.reported if len(self.reported) > 1 else self.sorted
        n = len(s)
        j = median_ci_rank(n)
        return s[j - 1], s[n - j]

    @property
    def half_width(self) -> float:
        """The 95 % interval's larger half, relative to the median: what adaptive stopping aims at."""
        lo, hi = self.ci95
        med = self.median
        return max(med - lo, hi - med) / med if med > 0 else math.inf

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
        if self.modes is not None:
            low, high = (statistics.median(m) for m in self.modes)
            out.append(f"two modes ({low:.3g} s and {high:.3g} s): the median of the larger is reported")
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


def median_variance_factor(processes: int) -> float:
    """How much more the median of `processes` log medians varies than their mean (normal draws)."""
    if processes <= 1:
        return 1.0
    return MEDIAN_VARIANCE_FACTOR[processes - 2] if processes - 2 < len(MEDIAN_VARIANCE_FACTOR) else math.pi / 2


def point_variance(process_variance: float, processes: int) -> float:
    """The variance of Replicated.point's log (the median of `processes` log medians) when one
    process's log median varies by `process_variance`."""
    return median_variance_factor(processes) * process_variance / processes


def bootstrap_log_point(groups: Sequence[Sequence[float]], resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = BOOTSTRAP_SEED) -> Any:
    """The mean of the processes' log medians in each of `resamples` two-level (hierarchical)
    bootstrap resamples: what the spread between processes is read from (own_process_variance).

    First each process's median is resampled from its own samples (the noise inside a process),
    then the processes themselves are drawn with replacement (the noise between processes, which
    on a shared machine is usually the larger one). Returns a NumPy array of `resamples` values.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    r = len(groups)
    log_medians = np.empty((r, resamples))
    for i, g in enumerate(groups):
        a = np.asarray(g, dtype=float)
        log_medians[i] = np.log(np.median(a[rng.integers(0, a.size, (resamples, a.size))], axis=1))
    picks = rng.integers(0, r, (resamples, r))
    return log_medians[picks, np.arange(resamples)[:, None]].mean(axis=1)


_BOOTSTRAPS: OrderedDict[bytes, Any] = OrderedDict()
_BOOTSTRAPS_LOCK = threading.Lock()


def bootstrap_of(groups: Sequence[Sequence[float]]) -> Any:
    """bootstrap_log_point of `groups` at its defaults, kept for the next reading of the same samples
    (read-only; the BOOTSTRAP_CACHE latest, keyed by a digest of the samples, which it does not hold).
    A run's results are read again after every round (execution/more_rounds.py) and by its report,
    and only the cases the round measured have new samples: a reading of a `make bench` results file
    (1078 processes) took 2.15 s, and 0.60 s again with these kept."""
    import numpy as np

    digest = hashlib.blake2b(digest_size=20)
    for g in groups:
        a = np.asarray(g, dtype=float)
        digest.update(a.size.to_bytes(8, "little"))
        digest.update(a.tobytes())
    key = digest.digest()
    with _BOOTSTRAPS_LOCK:
        if (out := _BOOTSTRAPS.get(key)) is not None:
            _BOOTSTRAPS.move_to_end(key)
            return out
    out = bootstrap_log_point(groups)
    out.setflags(write=False)
    with _BOOTSTRAPS_LOCK:
        _BOOTSTRAPS[key] = out
        while len(_BOOTSTRAPS) > BOOTSTRAP_CACHE:
            _BOOTSTRAPS.popitem(last=False)
    return out


def small_sample_factor(processes: int) -> float:
    """√(R/(R−1)): the bootstrap's spread of a mean over R processes is √((R−1)/R) too small."""
    return math.sqrt(processes / (processes - 1)) if processes > 1 else 1.0


@dataclass(frozen=True)
class Replicated:
    """One case measured in several independent worker processes, each with its own samples.

    A process's allocator state, memory layout and the cases that ran before it shift all of
    its samples together, so samples from one process say nothing about the next process. The
    point estimate is the median of the per-process medians (the geometric mean of the middle
    two for an even count): the time of a typical process. Their geometric mean, used before
    issue 23, let one process in a slow state move the case: in ten identical runs on the
    2-core VM, most of the cases a run missed in the next run's interval had two processes at
    the first run's time and one 1.2-3× slower (a page-faulting output buffer, a slow layout).
    Its spread between processes comes from a hierarchical bootstrap that resamples processes,
    then samples; the median's standard error is the mean's times √MEDIAN_VARIANCE_FACTOR.
    """

    runs: tuple[Measurement, ...]
    prior: VariancePrior = NO_PRIOR
    # Between two runs: a case whose processes spread beyond what the prior allows is not shrunk
    # toward it (pooling.VariancePrior.hypervariable); within a run its rivals are paired by round.
    robust: bool = False

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError("Replicated needs at least one process's Measurement")

    @classmethod
    def from_counts(cls, samples: Sequence[float], counts: Sequence[int], loops: Sequence[int],
                    prior: VariancePrior = NO_PRIOR) -> Replicated:
        """Split the pooled samples of a record back into its processes (`counts` samples each)."""
        if sum(counts) != len(samples):
            raise ValueError(f"replicate sample counts {list(counts)} do not add up to {len(samples)} samples")
        runs, start = [], 0
        for n, lp in zip(counts, loops, strict=True):
            runs.append(Measurement(tuple(samples[start:start + n]), lp))
            start += n
        return cls(tuple(runs), prior)

    def with_prior(self, prior: VariancePrior, robust: bool = False) -> Replicated:
        """The same processes read with `prior` (`robust`: not shrunk where hypervariable), reusing the
        bootstrap already drawn (it does not depend on the prior, and it is most of what reading a run
        costs)."""
        out = Replicated(self.runs, prior, robust)
        if "log_bootstrap" in self.__dict__:
            out.__dict__["log_bootstrap"] = self.__dict__["log_bootstrap"]
        return out

    @property
    def processes(self) -> int:
        return len(self.runs)

    @cached_property
    def pooled(self) -> Measurement:
        return Measurement(tuple(x for m in self.runs for x in m.samples), self.runs[0].loops)

    @property
    def medians(self) -> list[float]:
        return [m.median for m in self.runs]

    @property
    def point(self) -> float:
        """Median of the per-process medians (geometric mean of the middle two for an even count)."""
        return math.exp(statistics.median(math.log(m) for m in self.medians))

    @property
    def spread(self) -> float:
        """Slowest process's median over the fastest's, minus one."""
        return max(self.medians) / min(self.medians) - 1

    @cached_property
    def log_bootstrap(self) -> Any:
        return bootstrap_of([m.samples for m in self.runs])

    @cached_property
    def own_process_variance(self) -> float:
        """Variance of one process's log point, from this case's processes alone (R−1 df).

        R times the hierarchical bootstrap's variance of the mean over R processes, corrected
        for the few processes a case has; NaN with one process.
        """
        if self.processes == 1:
            return math.nan
        return self.processes * float(self.log_bootstrap.var()) * small_sample_factor(self.processes) ** 2

    @property
    def pooled_variance(self) -> tuple[float, float]:
        """(variance of one process's log point, its degrees of freedom), shrunk toward the run's prior."""
        if self.processes == 1:
            return (self.prior.variance, self.prior.df) if self.prior.df > 0 else (math.nan, 0.0)
        return self.prior.moderate(self.own_process_variance, self.processes - 1, self.robust)

    @property
    def hypervariable(self) -> bool:
        """Whether its processes spread further than its run's prior allows (pooling.HYPERVARIABLE)."""
        return self.processes > 1 and self.prior.hypervariable(self.own_process_variance, self.processes - 1)

    @property
    def df(self) -> float:
        """Degrees of freedom of log_sd: R − 1, plus what the run's prior is worth."""
        return self.pooled_variance[1]

    @property
    def log_sd(self) -> float:
        """Standard error of log(point): the pooled variance of one process over R processes, times
        the median's MEDIAN_VARIANCE_FACTOR; with one process and no prior, the bootstrap's of that
        process's samples alone (which says too little)."""
        variance, df = self.pooled_variance
        if df <= 0:
            return float(self.log_bootstrap.std())
        return math.sqrt(point_variance(variance, self.processes))

    @property
    def ci95(self) -> tuple[float, float]:
        """95 % interval for the median that a repeat of this run will report.

        A repeat run is itself an estimate with the same error, so its median falls within
        point·exp(±t·√2·se), not in the narrower interval of the true value (which a second
        run's median misses about one time in six). se is the hierarchical bootstrap's
        (processes, then samples), shrunk toward the run's prior (pooling.py), and t is Student's
        with R − 1 degrees of freedom plus the prior's. Without a prior, three processes say
        little about the spread between processes and the interval says so by being wide. With
        one process and no prior the between-process variation is unknown: the interval is
        then that process's own and says too little. Either holds the point: the point goes through
        exp(log()), a process's interval does not, and a process whose samples sit at one value had
        its interval end one ulp above its point (an export's lower bound above its value).
        """
        point = self.point
        if self.df <= 0:
            lo, hi = self.runs[0].ci95
        else:
            half = t975(self.df) * math.sqrt(2) * self.log_sd
            lo, hi = math.exp(math.log(point) - half), math.exp(math.log(point) + half)
        return min(lo, point), max(hi, point)

    @property
    def noisy(self) -> bool:
        return self.pooled.noisy or self.spread > NOISY_PROCESS_SPREAD

    @property
    def warnings(self) -> list[str]:
        out = [w for w in self.pooled.warnings if not w.startswith("noisy")]
        if self.noisy:
            out.insert(0, f"noisy: IQR is {100 * self.pooled.iqr / self.pooled.median:.0f}% of the median and "
                          f"processes differ by {100 * self.spread:.0f}%; close other programs or add --replicates")
        if self.df <= 0:
            out.append("one process: the interval ignores the variation between processes")
        return out

    def summary(self) -> dict[str, Any]:
        """The pooled samples' statistics, with the point estimate and interval over processes."""
        lo, hi = self.ci95
        return {
            **self.pooled.summary(),
            "median_s": self.point,
            "ci95_s": [lo, hi],
            "n_processes": self.processes,
            "process_spread": self.spread,
            "noisy": self.noisy,
        }
