"""The spread between two runs read from their own cases (between_runs.pair_spread, as compare reads each
case: comparison.cases.spread_between): simulated runs only."""

import math
import random

import pytest

from arraybench.comparison.cases import spread_between
from arraybench.stats.between_runs import MIN_PAIR_CASES
from arraybench.stats.measurement import Measurement, Replicated


def case(level: float, rng: random.Random, processes: int = 3, spread: float = 0.02) -> Replicated:
    """A case of `processes` processes within ±`spread` of `level`, 10 samples each within 1 %."""
    groups = []
    for _ in range(processes):
        p = level * (1 + spread * (2 * rng.random() - 1))
        groups.append(tuple(p * (1 + 0.01 * rng.random()) for _ in range(10)))
    return Replicated(tuple(Measurement(g) for g in groups))


def two_runs(sd: float, cases: int = 60, factor: float = 1.0, seed: int = 0, changed: int = 0
             ) -> list[tuple[Replicated, Replicated]]:
    """Each case's base and new runs, each run off its case's level by a log-normal offset of `sd`; new
    `factor` times base throughout, and its first `changed` cases 3× slower besides."""
    rng = random.Random(seed)
    out = []
    for c in range(cases):
        level = 1e-4 * (1 + c)
        extra = 3.0 if c < changed else 1.0
        out.append((case(level * math.exp(rng.gauss(0, sd)), rng),
                    case(level * factor * extra * math.exp(rng.gauss(0, sd)), rng)))
    return out


def test_two_runs_whose_cases_scatter_between_them_tell_how_much():
    """Each run off by ±10 % (log sd) per case: τ, one run's spread, read back near 0.10."""
    taus = [math.sqrt(spread_between(two_runs(0.10, seed=s)).variance) for s in range(5)]
    assert all(0.07 < t < 0.14 for t in taus), taus
    found = spread_between(two_runs(0.10))
    assert (found.runs, found.cases) == (2, 60) and found.df == pytest.approx(0.37 * 59)


def test_runs_that_agree_beyond_their_processes_add_next_to_nothing():
    """An estimate of zero is above it half the time: under 1 %, beside processes ±2 % apart."""
    assert all(math.sqrt(spread_between(two_runs(0.0, seed=s)).variance) < 0.01 for s in range(5))
    rng = random.Random(2)
    same = [(m, m) for m in (case(1e-3 * (1 + c), rng) for c in range(20))]
    assert spread_between(same).variance == 0.0 and spread_between(same).df == math.inf


def test_a_change_of_every_case_alike_or_of_a_few_is_not_counted_as_spread():
    """The median, not the mean: a run 40 % slower throughout moves only the centre, and a tenth of the
    cases 3× slower barely moves the spread; either would be a change compare must still find."""
    alone = math.sqrt(spread_between(two_runs(0.03)).variance)
    assert math.sqrt(spread_between(two_runs(0.03, factor=1.4)).variance) == pytest.approx(alone, rel=0.05)
    assert math.sqrt(spread_between(two_runs(0.03, changed=6)).variance) < 1.5 * alone


def test_too_few_cases_of_two_processes_say_nothing():
    assert spread_between(two_runs(0.1, cases=MIN_PAIR_CASES - 1)) is None
    rng = random.Random(1)
    single = [(case(1e-3, rng, processes=1), case(1e-3, rng, processes=1)) for _ in range(40)]
    assert spread_between(single) is None
    assert spread_between(two_runs(0.1, cases=MIN_PAIR_CASES)) is not None
