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


def by_round(medians: Sequence[float], rounds: Sequence[int]) -> dict[int, float]:
    """Each process's log median, keyed by the round it ran in (`rounds`: one per process, in order)."""
    if len(medians) != len(rounds):
        raise ValueError(f"{len(medians)} process medians but {len(rounds)} rounds")
    return {r: math.log(m) for r, m in zip(rounds, medians, strict=True)}


def round_differences(old: Mapping[int, float], new: Mapping[int, float]) -> list[float]:
    """new − old log median of each round that both sides ran, in round order, without the rounds
    where a process was in another state (outlying)."""
    return kept(all_differences(old, new))


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
    the rule drops no round (tests/test_paired.py); the rounds it was made for lie 2× to 100× out.
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


def paired_prior(cases: Iterable[Sequence[float]]) -> VariancePrior:
    """What a comparison's cases say about the variance of one round's difference (pooling.py):
    `cases` are each case's round_differences. Three rounds give a case's own variance 2 degrees
    of freedom; the cases of one run share the host and the harness, so their spreads are alike."""
    return fit_prior((statistics.variance(d), len(d) - 1) for d in cases if len(d) >= MIN_PAIRED_ROUNDS)


@dataclass(frozen=True)
class Paired:
    """A paired estimate of log(new/old): `rounds` is how many rounds it pairs, `unmatched` how many
    processes ran in a round the other side did not (left out)."""

    estimate: LogRatio
    rounds: int
    unmatched: int
    outlying: int = 0  # rounds left out: a process of one side in another state (kept)


def paired_log_ratio(old: Mapping[int, float], new: Mapping[int, float],
                     prior: VariancePrior = NO_PRIOR) -> Paired | None:
    """log(new/old) from the log medians of each side's processes keyed by round (by_round); None
    when fewer than MIN_PAIRED_ROUNDS rounds hold both sides.

    The point is the median of the per-round differences (a process in a slow state moves one
    difference, not the answer, as in measurement.Replicated); its variance the differences'
    variance shrunk toward `prior` (paired_prior), times the median's factor over n rounds
    (measurement.point_variance); its degrees of freedom n − 1 plus the prior's. On normal
    differences the median's t interval covers 95-96 % (the mean's: 95 %) from 2 to 10 rounds.
    """
    every = all_differences(old, new)
    d = kept(every)
    if len(d) < MIN_PAIRED_ROUNDS:
        return None
    variance, df = prior.moderate(statistics.variance(d), len(d) - 1)
    estimate = LogRatio(statistics.median(d), math.sqrt(point_variance(variance, len(d))), df)
    return Paired(estimate, len(d), len(old) + len(new) - 2 * len(every), len(every) - len(d))
