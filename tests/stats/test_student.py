"""Student's t without SciPy (stats.student) agrees with SciPy's, and so do a log ratio's interval and p."""

import math

import pytest
import scipy.stats

from arraybench.stats.student import LogRatio, t_isf, t_sf


@pytest.mark.parametrize("df", [0.5, 1, 2, 2.7, 5, 30, 61.5, 400, 1e5, math.inf])
def test_tail_and_quantile_match_scipy(df):
    for x in (-8.0, -1.0, 0.0, 0.3, 1.96, 4.0, 30.0):
        assert t_sf(x, df) == pytest.approx(scipy.stats.t.sf(x, df), rel=1e-8, abs=1e-300)
    for q in (1e-7, 0.0025, 0.025, 0.2, 0.5, 0.9):
        assert t_isf(q, df) == pytest.approx(scipy.stats.t.isf(q, df), rel=1e-8, abs=1e-12)


def test_a_log_ratio_gives_scipys_interval_and_p():
    est = LogRatio(math.log(1.08), 0.03, 4.5)
    half = scipy.stats.t.ppf(0.975, 4.5) * 0.03
    assert est.ci95 == pytest.approx((1.08 * math.exp(-half), 1.08 * math.exp(half)), rel=1e-9)
    assert est.p_value == pytest.approx(2 * scipy.stats.t.sf(math.log(1.08) / 0.03, 4.5), rel=1e-8)
    assert LogRatio(0.0, 0.0, 3).p_value == 1.0 and LogRatio(0.1, 0.0, 3).p_value == 0.0
