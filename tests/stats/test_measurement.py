"""Statistics derived from raw samples."""

import pytest

from arraybench.stats.measurement import Measurement, Replicated


def test_statistics_from_samples():
    m = Measurement((1.0, 2.0, 3.0, 4.0, 100.0))
    assert m.median == 3.0
    assert m.min == 1.0
    assert m.mean == pytest.approx(22.0)
    assert m.iqr == pytest.approx(2.0)  # numpy's linear quantiles: 4.0 - 2.0
    assert m.noisy  # IQR is 67 % of the median


def test_quiet_measurement_is_not_flagged():
    m = Measurement(tuple(1.0 + 0.001 * i for i in range(20)))
    assert not m.noisy
    assert m.warnings == []


@pytest.mark.parametrize("n, lo, hi", [(10, 1, 8), (20, 5, 14), (100, 39, 60), (5, 0, 4)])
def test_median_confidence_interval_uses_binomial_ranks(n, lo, hi):
    # 1000 + rank: evenly spread samples (0, 1, 2, ... would split at 1 → 2 into two modes).
    m = Measurement(tuple(1000.0 + i for i in range(n)))
    assert not m.bimodal
    assert m.ci95 == (1000.0 + lo, 1000.0 + hi)


def test_few_samples_warn():
    assert any("only 2 samples" in w for w in Measurement((1.0, 1.0)).warnings)


def test_empty_measurement_is_refused():
    with pytest.raises(ValueError):
        Measurement(())


def test_the_interval_of_a_case_holds_its_point_to_the_last_digit():
    """A process whose samples sit at one value (a coarse clock, a quantized call): its point goes through
    exp(log()), which for this value lands one ulp below it, and its interval ended above the point (CI saw a
    dashboard export's lower bound above its value)."""
    x = 0.0007581964485373622
    one = Replicated((Measurement((x,) * 9),))
    assert one.point < x  # the round trip this test is about
    assert one.ci95[0] <= one.point <= one.ci95[1]
    several = Replicated(tuple(Measurement((x,) * 9) for _ in range(3)))
    assert several.ci95[0] <= several.point <= several.ci95[1]


def test_a_bootstrap_is_kept_for_the_same_samples_read_again_and_the_cache_is_bounded(monkeypatch):
    """A run's results are read again after each round: the same samples, in a new record, give the same
    read-only bootstrap without drawing it again; other samples draw their own; the oldest go first."""
    from arraybench.stats import measurement as m

    monkeypatch.setattr(m, "BOOTSTRAP_CACHE", 2)
    monkeypatch.setattr(m, "_BOOTSTRAPS", type(m._BOOTSTRAPS)())
    groups = [(1.0, 1.1, 0.9), (1.2, 1.3)]
    first = m.bootstrap_of(groups)
    assert (first == m.bootstrap_log_point(groups)).all() and not first.flags.writeable
    assert m.bootstrap_of([list(g) for g in groups]) is first  # equal samples, another container
    other = m.bootstrap_of([(1.0, 1.1, 0.9), (1.2, 1.4)])
    assert other is not first and not (other == first).all()
    m.bootstrap_of([(2.0, 2.1)])
    assert len(m._BOOTSTRAPS) == 2 and m.bootstrap_of(groups) is not first  # the oldest went first
