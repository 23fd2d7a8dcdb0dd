"""What "too noisy to say" could have seen: the detectable change against a simulation of the verdict."""

import math

import numpy as np
import pytest
import scipy.stats

from arraybench.comparison import SLOWER
from arraybench.stats.power import bh_level, detectable_change, phrase
from arraybench.stats.verdicts import decide

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
    (2.5, "no change larger than 250 % (80 % power)"),
    (12.0, "no change larger than ×13 (80 % power)"),
    (math.inf, "it could have missed a change of any size (80 % power)"),
])
def test_the_phrase(fraction, text):
    assert phrase(fraction) == text
