"""Two measurements of one case, new over base: their ratio, its 95 % interval, a p-value, the verdict
(Welch's t on the log point estimates, or paired round by round), and the Benjamini–Hochberg
correction across the cases of a comparison. SciPy is imported only when a test runs (scipy_stats)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arraybench.errors import UsageError
from arraybench.stats.between_runs import RunSpread
from arraybench.stats.measurement import Replicated
from arraybench.stats.paired import by_round, paired_log_ratio
from arraybench.stats.pooling import NO_PRIOR, VariancePrior
from arraybench.stats.student import bounded_exp
from arraybench.stats.verdicts import decide

DEFAULT_THRESHOLD = 0.05  # changes smaller than this are "same" even when real


@dataclass(frozen=True)
class SampleComparison:
    """What the processes and samples of one case say about its change (new over base).

    `p_value` is the case's own two-sided p; `q_value` the Benjamini–Hochberg adjusted one
    across every case of the comparison, which is what the verdict uses. `log_se` and `df` are the
    log ratio's standard error and its degrees of freedom (inf: taken as known), from which an
    undecided verdict says what it could have seen (stats.power).
    """

    ratio: float
    ci95: tuple[float, float]
    p_value: float
    verdict: str
    log_se: float
    df: float
    q_value: float = math.nan
    processes: tuple[int, int] = (1, 1)
    run_variance: float = 0.0  # τ² added to each side from earlier runs (RunSpread); 0: none
    note: str = ""  # what the way the interval was made needs said (a pairing that fell back)


def scipy_stats() -> Any:
    """scipy.stats, or a one-line UsageError saying how to install it."""
    try:
        import scipy.stats
    except ImportError:
        raise UsageError("compare needs scipy: pip install 'arraybench[compare]'") from None
    return scipy.stats


def log_ratio_error(base: Replicated, new: Replicated, spread: RunSpread | None = None) -> tuple[float, float]:
    """The standard error of log(new.point / base.point) and its degrees of freedom (see ratio_test):
    inf where a side has no spread between processes and the test is on samples."""
    vb, vn = base.log_sd**2, new.log_sd**2
    vr, vr_df = (2 * spread.variance, spread.df) if spread is not None else (0.0, math.inf)
    if min(base.df, new.df) <= 0 or vb + vn + vr == 0:
        return math.sqrt(vb + vn + vr), math.inf
    return math.sqrt(vb + vn + vr), (vb + vn + vr) ** 2 / (vb**2 / base.df + vn**2 / new.df + vr**2 / vr_df)


def ratio_test(base: Replicated, new: Replicated,
               spread: RunSpread | None = None) -> tuple[float, tuple[float, float], float]:
    """Ratio of the two point estimates, its 95 % interval and a two-sided p-value.

    The same model as a case's own interval (measurement.Replicated): each side's log point
    estimate has the standard error of its hierarchical bootstrap (processes, then samples),
    pooled with its run's other cases (pooling.py), and the log ratio is tested with Welch's t
    (Welch–Satterthwaite degrees of freedom from each side's R − 1 plus its prior's). With one
    process a side and no prior the variation between processes is unknown: the test then uses
    the normal distribution and, like the old Mann–Whitney test on pooled samples, finds
    "changes" that a fresh process would not reproduce (`verdict_note` says so).

    `spread`, the variance between runs of this machine (run_spread), is added to each side
    (both sides have R ≥ 2 or a prior: see compare_samples); being one estimate used twice, its
    2τ² enters Welch–Satterthwaite as one term with its own df.
    """
    stats = scipy_stats()
    log_ratio = math.log(new.point / base.point)
    se, df = log_ratio_error(base, new, spread)
    if se == 0:
        p = 1.0 if log_ratio == 0 else 0.0
        return math.exp(log_ratio), (math.exp(log_ratio), math.exp(log_ratio)), p
    if min(base.df, new.df) <= 0:
        b, n = base.pooled.samples, new.pooled.samples
        p = 1.0 if len(set(b) | set(n)) == 1 else float(stats.mannwhitneyu(b, n, alternative="two-sided").pvalue)
    else:
        p = float(2 * stats.t.sf(abs(log_ratio) / se, df))
    half = float(stats.t.ppf(0.975, df)) * se
    return math.exp(log_ratio), (bounded_exp(log_ratio - half), bounded_exp(log_ratio + half)), p


def compare_samples(base: Replicated, new: Replicated, threshold: float = DEFAULT_THRESHOLD,
                    spread: RunSpread | None = None) -> SampleComparison:
    """One case on its own: its verdict with q = p (no other case to correct for).

    `spread` (earlier runs' variance between runs) widens the interval only where both sides
    know their spread between processes: a side of one process and no prior is tested on its
    samples (ratio_test), which no run-level term can repair."""
    if spread is not None and (spread.variance <= 0 or min(base.df, new.df) <= 0):
        spread = None
    ratio, ci, p = ratio_test(base, new, spread)
    se, df = log_ratio_error(base, new, spread)
    return SampleComparison(ratio, ci, p, decide(ratio, ci, p, threshold), se, df, p, (base.processes, new.processes),
                            spread.variance if spread is not None else 0.0)


def compare_paired(base: Replicated, new: Replicated, rounds: tuple[Sequence[int], Sequence[int]],
                   threshold: float = DEFAULT_THRESHOLD, prior: VariancePrior = NO_PRIOR) -> SampleComparison:
    """One case of two environments measured in the same rounds of one run (`rounds`: the round of
    each side's processes, in order), on its own (q = p, as compare_samples; `adjust` corrects
    across cases). Its interval is the paired one (stats.paired; `prior` from paired_prior over
    the comparison's cases), or, where fewer than two rounds hold both sides, the unpaired one of
    compare_samples, and the result's note says so."""
    paired = paired_log_ratio(by_round(base.medians, rounds[0]), by_round(new.medians, rounds[1]), prior)
    if paired is None:
        return dataclasses.replace(compare_samples(base, new, threshold),
                                   note="unpaired: fewer than 2 rounds hold both sides")
    est = paired.estimate
    ci, p = est.ci95, est.p_value
    unmatched, outlying = paired.unmatched, paired.outlying
    left = [f"{unmatched} process{'es' if unmatched > 1 else ''} without a partner"] if unmatched else []
    left += [f"{outlying} round{'s' if outlying > 1 else ''} with a process in another state"] if outlying else []
    if paired.trimmed:  # from stats.paired.TRIM_FROM_ROUNDS rounds on
        said = [f"a trimmed mean: {paired.trimmed} at each end set aside"] + [f"{x} left out" for x in left]
        note = f"paired over {paired.rounds} rounds ({'; '.join(said)})"
    else:
        note = f"paired over {paired.rounds} rounds ({' and '.join(left)} left out)" if left else ""
    return SampleComparison(est.ratio, ci, p, decide(est.ratio, ci, p, threshold), est.se, est.df, p,
                            (base.processes, new.processes), note=note)


def adjust(results: list[SampleComparison], threshold: float) -> list[SampleComparison]:
    """Benjamini–Hochberg across all cases: q-values, and the verdicts they give.

    Two identical runs of 300 cases tested each at p < 0.05 promise about 15 false verdicts;
    controlling the false discovery rate at 5 % keeps the expected share of false ones among
    those called faster or slower at 5 %.
    """
    if not results:
        return []
    qs = scipy_stats().false_discovery_control([r.p_value for r in results], method="bh")
    return [dataclasses.replace(r, verdict=decide(r.ratio, r.ci95, float(q), threshold), q_value=float(q))
            for r, q in zip(results, qs, strict=True)]
