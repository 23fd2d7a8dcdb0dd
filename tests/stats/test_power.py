"""What "too noisy to say" could have seen: the detectable change against a simulation of the verdict."""

import math

import numpy as np
import pytest
import scipy.stats

from arraybench.report.view import CaseView
from arraybench.stats import bracket
from arraybench.stats.power import bh_level, detectable_change, detectable_gap, phrase
from arraybench.stats.verdicts import SLOWER, decide

THRESHOLD = 0.05


def simulated_power(change: float, se: float, df: float, level: float, draws: int = 4000, seed: int = 0) -> float:
    """How often compare's own rule (verdicts.decide on a t interval and p) calls a true log change
    `change` slower, when its estimate has standard error `se` estimated on `df` degrees of freedom."""
    rng = np.random.default_rng(seed)
    est = rng.normal(change, se, draws)
    s = se * np.sqrt(rng.chisquare(df, draws) / df) if math.isfinite(df) else np.full(draws, se)
    p = 2 * scipy.stats.t.sf(np.abs(est) / s, df)
    half = scipy.stats.t.ppf(0.975, df) * s
    verdicts = [decide(math.exp(e), (math.exp(e - h), math.exp(e + h)), q, THRESHOLD, level)
                for e, h, q in zip(est, half, p, strict=True)]
    return sum(v == SLOWER for v in verdicts) / draws


@pytest.mark.parametrize("se, df, level", [
    (0.03, 2, 0.05),            # three processes a side, no prior: few degrees of freedom
    (0.03, 20, 0.05),
    (0.2, 4.5, 0.05),           # a noisy case
    (0.005, 60, 0.05),          # a quiet case: the threshold, not the noise, sets what it can see
    (0.03, math.inf, 0.05 / 300),  # known error, at the level BH asks of one case among 300
])
def test_the_detectable_change_is_called_slower_four_times_in_five(se, df, level):
    fraction = detectable_change(se, df, THRESHOLD, level)
    assert fraction >= THRESHOLD
    assert simulated_power(math.log1p(fraction), se, df, level) == pytest.approx(0.8, abs=0.03)
    # And it is the smallest such change: one a tenth smaller (in log) is caught clearly less often.
    assert simulated_power(0.9 * math.log1p(fraction), se, df, level, seed=1) < 0.77


def test_what_compare_could_see_shrinks_with_its_error_and_grows_with_its_strictness():
    assert detectable_change(0.0, 5, THRESHOLD) == THRESHOLD
    # Two processes a side (1 degree of freedom) at the level of one case among 300: nothing.
    assert detectable_change(0.3, 1, THRESHOLD, level=bh_level(0, 300)) == math.inf
    tight, wide = detectable_change(0.01, 10, THRESHOLD), detectable_change(0.05, 10, THRESHOLD)
    assert THRESHOLD < tight < wide
    assert detectable_change(0.05, 10, THRESHOLD, level=bh_level(0, 300)) > wide


def test_the_level_is_the_one_benjamini_hochberg_would_have_asked_of_one_more_case():
    assert bh_level(0, 300) == pytest.approx(0.05 / 300)
    assert bh_level(29, 300) == pytest.approx(0.005)
    assert bh_level(299, 300) == bh_level(0, 1) == bh_level(0, 0) == 0.05


@pytest.mark.parametrize("fraction, text", [
    (0.07, "no change larger than 7 % (80 % power)"),
    (0.0731, "no change larger than 7.3 % (80 % power)"),
    (0.1234, "no change larger than 12 % (80 % power)"),
    (0.994, "no change larger than 99 % (80 % power)"),
    (1.0, "no change larger than ×2 (80 % power)"),  # past 100 %, a factor: issue 41's "701 %" reads ×8
    (2.5, "no change larger than ×3.5 (80 % power)"),
    (7.01, "no change larger than ×8 (80 % power)"),
    (12.0, "no change larger than ×13 (80 % power)"),
    (998.0, "no change larger than ×999 (80 % power)"),
    (3.3e33, "it could have missed a change of any size (80 % power)"),  # one df a side: not ×3,354,366,…
    (math.inf, "it could have missed a change of any size (80 % power)"),
])
def test_the_phrase(fraction, text):
    assert phrase(fraction) == text


def _case(median: float, se: float, processes: int) -> CaseView:
    """A case's record as the report reads it: its 95 % interval from a log standard error `se`
    (±z·√2·se, where a repeat run's median falls, with several processes; ±z·se with one)."""
    half = scipy.stats.norm.ppf(0.975) * se * (math.sqrt(2) if processes > 1 else 1)
    return CaseView(size=1000, median_s=median, ci_low_s=median * math.exp(-half),
                    ci_high_s=median * math.exp(half), n_processes=processes)


def simulated_separation(gap: float, se_a: float, se_b: float, processes: int, draws: int = 4000,
                         seed: int = 0) -> float:
    """How often the report's own test (bracket.order) finds `a` faster when `b` is truly slower by
    the log difference `gap`: each draw a fresh estimate of each, with intervals of their widths."""
    rng = np.random.default_rng(seed)
    a = 1e-4 * np.exp(rng.normal(0, se_a, draws))
    b = 1e-4 * np.exp(rng.normal(gap, se_b, draws))
    return sum(bracket.order(_case(x, se_a, processes), _case(y, se_b, processes)) == -1
               for x, y in zip(a, b, strict=True)) / draws


@pytest.mark.parametrize("se_a, se_b, processes", [
    (0.03, 0.03, 3),    # two cases alike, several processes each
    (0.01, 0.08, 5),    # a quiet case tied with a noisy one
    (0.05, 0.02, 1),    # one process each: the median's own interval
])
def test_a_tie_within_noise_would_have_been_separated_four_times_in_five_at_its_figure(se_a, se_b, processes):
    fraction = detectable_gap(_case(1e-4, se_a, processes), _case(1e-4, se_b, processes))
    assert simulated_separation(math.log1p(fraction), se_a, se_b, processes) == pytest.approx(0.8, abs=0.03)
    # The smallest such difference: one a tenth smaller (in log) is separated clearly less often.
    assert simulated_separation(0.9 * math.log1p(fraction), se_a, se_b, processes, seed=1) < 0.75


def test_what_a_tie_could_see_grows_with_its_intervals_and_is_said_as_a_difference():
    tight = detectable_gap(_case(1e-4, 0.01, 3), _case(1.1e-4, 0.01, 3))
    wide = detectable_gap(_case(1e-4, 0.05, 3), _case(1.1e-4, 0.01, 3))
    assert 0 < tight < wide
    # The report's test is one of intervals apart: it needs more than compare's paired t test.
    assert tight > detectable_change(0.01 * math.sqrt(2), math.inf, 0.0)
    unbounded = CaseView(size=1000, median_s=1e-4, ci_low_s=0.0, ci_high_s=math.inf, n_processes=1)
    assert detectable_gap(unbounded, _case(1e-4, 0.01, 3)) == math.inf
    assert phrase(0.123, noun="difference") == "no difference larger than 12 % (80 % power)"
