"""Two environments measured in the same rounds of one run: the ratio new/old and its paired interval.

Round r of a run runs one process of every case of every environment, in random order, so
whatever the host does during round r (a slow minute, a busy neighbour) reaches env A's and env
B's process r alike. The difference of their log medians cancels it: the interval is read from
the spread of the per-round differences, which the host's drift does not reach, rather than
from each side's spread between processes, which it does.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from arraybench.stats.measurement import point_variance
from arraybench.stats.pooling import NO_PRIOR, VariancePrior, fit_prior
from arraybench.stats.student import LogRatio

# Fewer rounds that both sides ran leave no spread of their differences to read (one difference
# has none); the comparison is then unpaired.
MIN_PAIRED_ROUNDS = 2
# Outlying rounds (kept): at least this many differences to judge one by, how far is outlying
# (robust standard deviations; 3.5, the textbook bar, dropped 3 % of normal rounds at 6 rounds),
# and at least how far in ratio to the median difference (a process in another state, not a spread).
MIN_ROUNDS_TO_JUDGE = 4
OUTLIER_MADS = 8.0
OUTLYING_RATIO = 1.5
ROBUST_SD = 1.4826  # the median absolute deviation's factor to a normal standard deviation
# From this many rounds on, the point is the TRIM trimmed mean of the differences and its variance
# Yuen's, from the winsorized differences (`trimmed`); below it, the median of those `kept`.
TRIM_FROM_ROUNDS = 8
TRIM = 0.2


def by_round(medians: Sequence[float], rounds: Sequence[int]) -> dict[int, float]:
    """Each process's log median, keyed by the round it ran in (`rounds`: one per process, in order)."""
    if len(medians) != len(rounds):
        raise ValueError(f"{len(medians)} process medians but {len(rounds)} rounds")
    return {r: math.log(m) for r, m in zip(rounds, medians, strict=True)}


def all_differences(old: Mapping[int, float], new: Mapping[int, float]) -> list[float]:
    """new − old log median of each round that both sides ran, in round order."""
    return [new[r] - old[r] for r in sorted(old.keys() & new.keys())]


def kept(d: Sequence[float]) -> list[float]:
    """The differences but the outlying ones: more than OUTLIER_MADS robust standard deviations
    (1.4826 × the median absolute deviation) and more than a factor OUTLYING_RATIO from their
    median, where MIN_ROUNDS_TO_JUDGE or more can judge, and at most one round in four.

    A process now and then runs in another state for its whole life (on the 2-core VM: 2-3× slow
    with a cold allocator or JAX's slow dispatch mode, or 100× in a stall beside another
    framework's thread pool), and its round's difference with it: in a planted 5 % slowdown the
    rounds of sort read +5, +6, +5, +7 % and of an add −99, +5, −9, +10753, −14 %. The median
    point ignores such a round, but the variance does not, and one of them made every interval
    ±12 % wide.

    Leaving rounds out is a choice made after seeing them, and the interval of what is left does not
    pay for it: a rule of deviations alone, on a few rounds, is a rule of luck. In an A/A run the
    rounds of torch's add read +6.6, +8.3, −6.4, +20.0, +7.4 %; three happened to lie close, their
    tiny spread made −6.4 and +20 % "outlying", and the three left called the same code 7.6 % slower.
    So a round is left out only when it is far in both senses: a process 1.5× off the others is in
    another state, while ±20 % between processes is the spread the interval must show. And at most
    one round in four: where more are far out, the states are common, not rare, and every round is
    kept (the interval is then wide, and the stop rule asks for more rounds). On normal differences
    the rule drops no round (tests/stats/test_paired.py); the rounds it was made for lie 2× to 100× out.
    """
    if len(d) < MIN_ROUNDS_TO_JUDGE:
        return list(d)
    mid = statistics.median(d)
    spread = ROBUST_SD * statistics.median(abs(x - mid) for x in d)
    bar = max(OUTLIER_MADS * spread, math.log(OUTLYING_RATIO))
    out = [x for x in d if abs(x - mid) > bar]
    if len(out) > max(1, len(d) // 4):
        return list(d)
    return [x for x in d if abs(x - mid) <= bar]


@dataclass(frozen=True)
class PairedPoint:
    """A case's per-round differences read: the `point` (log new/old), the variance of one round's
    difference and its degrees of freedom (what paired_prior pools and a prior moderates),
    `point_factor`, the point's variance per unit of one round's (the median's factor over n, or
    1/n for a trimmed mean), how many rounds it read, and how many it set aside (`outlying`, by
    kept; `trimmed`, at each end)."""

    point: float
    variance: float
    df: float
    point_factor: float
    rounds: int
    outlying: int = 0
    trimmed: int = 0


def trimmed(d: Sequence[float], trim: float = TRIM) -> PairedPoint:
    """The trimmed mean of the differences, with Yuen's variance (Yuen 1974; Wilcox, *Introduction
    to Robust Estimation*, ch. 4): the int(trim · n) lowest and highest set aside for the point, and
    set to the nearest kept value for the spread (winsorized), whose variance over (1 − 2g/n)² is
    one round's, on n − 2g − 1 degrees of freedom.

    On the 2-core VM a process runs, now and then, in a slow spell of the host for its whole window
    (a 2-thread matmul at its 1-thread speed, 1.6×; 0.2-0.7 s at a time, in 5-10 % of processes),
    and one of a pair's two processes is hit in about one round in six. A mean reads each such round
    in full and a rule that leaves rounds out reads them by luck (kept). The trimmed mean sets aside
    a fixed share at both ends, whatever the rounds read, so a spell on either side moves neither the
    point nor, through the winsorized spread, the interval much; on normal differences its interval
    covers 95 % (tests/stats/test_paired.py), at 8 rounds and more, where a fifth is at least one round.
    """
    s = sorted(d)
    n = len(s)
    g = int(trim * n)
    w = [min(max(x, s[g]), s[n - 1 - g]) for x in s]
    return PairedPoint(statistics.mean(s[g:n - g]), statistics.variance(w) / (1 - 2 * g / n) ** 2, n - 2 * g - 1,
                       1 / n, n, trimmed=g)


def spread_of(d: Sequence[float]) -> PairedPoint | None:
    """A case's per-round differences read: trimmed from TRIM_FROM_ROUNDS rounds, else the median of
    those kept; None where fewer than MIN_PAIRED_ROUNDS remain."""
    if len(d) >= TRIM_FROM_ROUNDS:
        return trimmed(d)
    k = kept(d)
    if len(k) < MIN_PAIRED_ROUNDS:
        return None
    return PairedPoint(statistics.median(k), statistics.variance(k), len(k) - 1, point_variance(1.0, len(k)),
                       len(k), outlying=len(d) - len(k))


def paired_prior(cases: Iterable[Sequence[float]]) -> VariancePrior:
    """What a comparison's cases say about the variance of one round's difference (pooling.py):
    `cases` are each case's all_differences, read as spread_of reads them. Three rounds give a
    case's own variance 2 degrees of freedom; the cases of one run share the host and the harness,
    so their spreads are alike."""
    spreads = [spread_of(d) for d in cases]
    return fit_prior((s.variance, s.df) for s in spreads if s is not None and s.df > 0)


@dataclass(frozen=True)
class Pairing:
    """What pairs the cases of one run round by round: the run (`run`: its id and machine) and what its
    pairs of rivals say about the variance of one round's difference (paired_prior). Two cases pair
    only under one Pairing: processes of two runs share a round's number, not its host."""

    run: str
    prior: VariancePrior


@dataclass(frozen=True)
class Paired:
    """A paired estimate of log(new/old): `rounds` is how many rounds it pairs, `unmatched` how many
    processes ran in a round the other side did not (left out)."""

    estimate: LogRatio
    rounds: int
    unmatched: int
    outlying: int = 0  # rounds left out: a process of one side in another state (kept)
    trimmed: int = 0  # rounds set aside at each end by the trimmed mean (from TRIM_FROM_ROUNDS rounds)


def paired_log_ratio(old: Mapping[int, float], new: Mapping[int, float],
                     prior: VariancePrior = NO_PRIOR) -> Paired | None:
    """log(new/old) from the log medians of each side's processes keyed by round (by_round); None
    when fewer than MIN_PAIRED_ROUNDS rounds hold both sides.

    Below TRIM_FROM_ROUNDS rounds the point is the median of the per-round differences (a process
    in a slow state moves one difference, not the answer, as in measurement.Replicated), its
    variance the kept differences' times the median's factor over n rounds
    (measurement.point_variance). From TRIM_FROM_ROUNDS on, the point is their trimmed mean and its
    variance Yuen's (`trimmed`). Either variance is shrunk toward `prior` (paired_prior), and the
    degrees of freedom are the case's plus the prior's; a pair whose differences spread further than
    the prior allows is not shrunk (pooling.VariancePrior.hypervariable), and keeps its own; nor is one
    shrunk below its own where the prior is weak (pooling.VariancePrior.weak: the pairs' spreads too
    unlike to tell a pair far above their centre), which then lends only degrees of freedom. On normal
    differences the interval covers 95-97 % from 2 to 16 rounds (tests/stats/test_paired.py).
    """
    every = all_differences(old, new)
    spread = spread_of(every)
    if spread is None:
        return None
    variance, df = prior.moderate(spread.variance, spread.df, robust=True, floor=True)
    estimate = LogRatio(spread.point, math.sqrt(spread.point_factor * variance), df)
    return Paired(estimate, spread.rounds, len(old) + len(new) - 2 * len(every), spread.outlying, spread.trimmed)
