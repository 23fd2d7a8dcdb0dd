"""Pooling the spread between processes over a run's cases, and the host-speed correction.

Everything here is simulated: known variances, known host speeds, a fake clock for the Timer.
"""

import math
import random

import pytest

from arraybench.measure import hostspeed
from arraybench.measure.timing import Timer, TimerConfig
from arraybench.stats import spells
from arraybench.stats.measurement import Measurement, Replicated
from arraybench.stats.pooling import (
    MIN_CASES,
    NO_PRIOR,
    VariancePrior,
    digamma,
    f_upper_tail,
    fit_prior,
    t975,
    trigamma,
    trigamma_inverse,
)


def test_special_functions_match_known_values():
    assert digamma(1.0) == pytest.approx(-0.5772156649015329, abs=1e-10)
    assert digamma(0.5) == pytest.approx(-1.9635100260214235, abs=1e-10)
    assert trigamma(1.0) == pytest.approx(math.pi**2 / 6, abs=1e-10)
    assert trigamma(0.5) == pytest.approx(math.pi**2 / 2, abs=1e-10)
    for y in (1e-3, 0.1, 1.0, 5.0, 100.0):
        assert trigamma(trigamma_inverse(y)) == pytest.approx(y, rel=1e-6)


def test_t_quantiles_for_whole_and_fractional_degrees_of_freedom():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 2.5, 3, 4.6, 7.3, 10, 10.5, 15, 30, 62.0):
        assert t975(df) == pytest.approx(float(stats.t.ppf(0.975, df)), rel=0.02 if df < 3 else 2e-3)


def draw_variances(cases: int, s0: float, d0: float, d: int, rng: random.Random) -> list[tuple[float, float]]:
    """Each case's true variance from the scaled inverse-χ² prior, then its estimate from d df."""
    out = []
    for _ in range(cases):
        true = s0 * d0 / rng.gammavariate(d0 / 2, 2)
        out.append((true * rng.gammavariate(d / 2, 2) / d, d))
    return out


def test_prior_recovers_the_distribution_the_variances_came_from():
    prior = fit_prior(draw_variances(4000, s0=0.02, d0=6.0, d=2, rng=random.Random(1)))
    assert prior.variance == pytest.approx(0.02, rel=0.15)
    assert prior.df == pytest.approx(6.0, rel=0.3)
    assert prior.cases == 4000


def test_no_prior_from_too_few_cases_and_a_capped_one_from_identical_cases():
    assert fit_prior([(0.01, 2)] * (MIN_CASES - 1)).df == 0
    same = fit_prior([(0.01, 2)] * 50)  # every case agrees exactly: worth a capped number of df
    assert 0 < same.df <= 60 and same.variance > 0
    assert fit_prior([(0.0, 2)] * 50).df == 0  # zero variances carry no log


def test_moderated_variance_lies_between_the_case_and_the_prior():
    prior = VariancePrior(variance=0.04, df=6.0, cases=64)
    v, df = prior.moderate(0.01, 2)
    assert 0.01 < v < 0.04 and df == 8
    assert NO_PRIOR.moderate(0.01, 2) == (0.01, 2)


def simulated_run(rng: random.Random, sds: list[float], processes: int = 3, n: int = 15) -> list[Replicated]:
    """Cases whose processes' levels vary by sds[c] (log scale), samples ±2 % inside a process."""
    out = []
    for sd in sds:
        runs = []
        for _ in range(processes):
            level = math.exp(rng.gauss(0, sd))
            runs.append(Measurement(tuple(level * (1 + 0.02 * rng.random()) for _ in range(n))))
        out.append(Replicated(tuple(runs)))
    return out


def pooled(run: list[Replicated]) -> list[Replicated]:
    prior = fit_prior((r.own_process_variance, r.processes - 1) for r in run)
    return [Replicated(r.runs, prior) for r in run]


def test_pooled_intervals_still_cover_a_repeat_run_and_are_narrower():
    """The A/A promise in simulation, 128 cases whose between-process spreads differ (5–20 %)."""
    rng = random.Random(3)
    sds = [0.05 + 0.15 * rng.random() for _ in range(128)]
    first, second = pooled(simulated_run(rng, sds)), pooled(simulated_run(rng, sds))
    inside = sum(a.ci95[0] <= b.point <= a.ci95[1] for a, b in zip(first, second, strict=True))
    assert inside / len(first) >= 0.9
    own = [Replicated(r.runs) for r in first]
    width = sorted(math.log(r.ci95[1] / r.ci95[0]) for r in first)
    own_width = sorted(math.log(r.ci95[1] / r.ci95[0]) for r in own)
    assert width[len(width) // 2] < 0.75 * own_width[len(own_width) // 2]
    assert all(r.df > 2 for r in first)


def test_one_process_borrows_the_runs_spread_when_there_is_a_prior():
    m = Replicated((Measurement((1.0, 1.01, 0.99, 1.0)),), VariancePrior(0.01, 10.0, 64))
    lo, hi = m.ci95
    assert m.df == 10.0 and lo < 0.8 and hi > 1.2  # ±√2·t·0.1, not the samples' ±1 %
    assert not any("one process" in w for w in m.warnings)


# --- the host's speed ----------------------------------------------------------------------


def test_nominal_is_a_low_quantile_and_slowdown_the_median_over_it():
    refs = [1e-5] * 30 + [1.8e-5] * 70
    assert spells.nominal(refs) == 1e-5
    assert spells.nominal([]) is None
    assert spells.slowdown(refs, 1e-5) == pytest.approx(1.8)
    assert spells.slowdown([], 1e-5) is None


def test_reference_kernel_takes_a_positive_time():
    assert hostspeed.measure_reference() > 0


def test_timer_times_the_reference_beside_every_sample_outside_the_timed_region(fake_clock):
    """The reference's cost never enters a sample; each sample gets the geometric mean of its neighbours."""
    speeds = iter([2**-10, 2**-8] * 1000)

    def reference():
        cost = next(speeds)
        fake_clock.advance(cost)
        return cost

    def fn():
        fake_clock.advance(2**-7)

    cfg = TimerConfig(warmup_time=0.0, min_sample_time=2**-10, overhead_factor=0, min_time=0.0, min_samples=4,
                      max_samples=4)
    t = Timer(fn, (), config=cfg, clock=fake_clock, reference=reference).run()
    assert t.measurement.samples == (2**-7,) * 4
    assert t.host_ref_s == (2**-9,) * 4  # √(2⁻¹⁰ · 2⁻⁸)
    assert Timer(fn, (), config=cfg, clock=fake_clock).run().host_ref_s is None


def test_a_run_reads_with_intervals_pooled_over_its_cases_and_its_host_speed(tmp_path):
    """Twelve cases whose processes disagree by a similar ±15 %: each case's interval borrows from
    the others (narrower than its own, and with more degrees of freedom), the file keeps what was
    written, and the report says how fast the host ran and how the intervals were pooled."""
    from dataclasses import replace

    from arraybench.core.case import Case
    from arraybench.execution.parent import merge_processes
    from arraybench.report.data import ReportData, analysis_rows
    from arraybench.results import ResultsWriter, load_results
    from arraybench.workloads import blank_record

    rng = random.Random(11)
    writer = ResultsWriter(tmp_path / "results.jsonl", {"schema": 3, "settings": {}})
    written = []
    for c in range(12):
        case = Case(f"w{c}", (("n", 1),), "numpy", "eager", "float64", 1)
        procs = []
        for _ in range(3):
            level = (c + 1) * math.exp(rng.gauss(0, 0.15))
            samples = tuple(level * (1 + 0.01 * rng.random()) for _ in range(20))
            refs = tuple(1e-5 * (1.8 if rng.random() < 0.5 else 1.0) for _ in range(20))
            procs.append(replace(blank_record(case, "ok"), samples_s=samples, host_ref_s=refs, loops=1,
                                 median_s=sorted(samples)[10]))
        rec = merge_processes(procs)
        written.append(rec)
        writer.append(rec)
    writer.close()
    res = load_results(tmp_path)
    assert res.prior.cases == 12 and res.prior.df > 0
    assert res.full_speed_s == 1e-5
    for before, after in zip(written, res.records, strict=True):
        # The file's samples, read with the samples of a 1.8× reference (half of them) set aside.
        assert after.samples_s == before.samples_s and after.median_s == res.reading.measured(after).point
        assert after.ci95_s == res.reading.measured(after).ci95
        assert res.reading.measured(after).df > 2
    widths = [(b.ci95_s[1] / b.ci95_s[0], a.ci95_s[1] / a.ci95_s[0]) for b, a in zip(written, res.records, strict=True)]
    assert sum(a < b for b, a in widths) >= 9  # most cases' intervals narrow; a quiet one may widen
    [header] = ReportData.from_results([res]).headers.values()
    rows = dict(analysis_rows(header))
    assert "1.80× that at the median" in rows["host speed"] and "shared or throttled" in rows["host speed"]
    assert "pooled over 12 cases" in rows["intervals"]
    from arraybench.report import host_warnings

    [warning] = host_warnings(ReportData.from_results([res]))
    assert warning.startswith("the host ran 1.80× slower than its full speed")


def test_with_a_pooled_prior_compare_finds_a_10_percent_change_on_a_quiet_host():
    """Processes within ±2 % of each other: three a side find a 10 % change once the run's cases
    are pooled, and two identical runs give (almost) no verdict: with every case unchanged,
    Benjamini–Hochberg at 5 % lets some run show one false verdict about one time in twenty."""
    from arraybench.stats.two_sample import adjust, compare_samples
    from arraybench.stats.verdicts import SAME, SLOWER

    rng = random.Random(21)
    sds = [0.02] * 40
    base = pooled(simulated_run(rng, sds))
    same = pooled(simulated_run(rng, sds))
    slower = [Replicated(tuple(Measurement(tuple(1.1 * x for x in m.samples)) for m in r.runs), r.prior)
              for r in pooled(simulated_run(rng, sds))]
    found = adjust([compare_samples(b, n, 0.05) for b, n in zip(base, slower, strict=True)], 0.05)
    assert sum(c.verdict == SLOWER for c in found) >= 36
    quiet = adjust([compare_samples(b, n, 0.05) for b, n in zip(base, same, strict=True)], 0.05)
    # "same" needs the whole interval within ±5 %: at ±2 % processes the ratio's is about ±4 %
    # (the median of three processes has √1.35 the mean's standard error), so only ratios within
    # about 1 % of 1 qualify: 20 of 40 with the geometric mean of processes, 11 with their median.
    assert sum(c.verdict == SAME for c in quiet) >= 8
    assert sum(c.verdict in ("slower", "faster") for c in quiet) <= 1


def test_reading_with_a_prior_reuses_the_bootstrap_and_gives_what_a_fresh_read_gives():
    run = simulated_run(random.Random(4), [0.1])[0]
    prior = VariancePrior(0.01, 10.0, 64)
    _ = run.own_process_variance  # draws the bootstrap
    again = run.with_prior(prior)
    assert again.log_bootstrap is run.log_bootstrap
    assert again.ci95 == Replicated(run.runs, prior).ci95


def test_compare_says_a_one_process_side_borrowed_its_runs_spread_when_both_runs_have_a_prior():
    from arraybench.comparison import verdict_note
    from arraybench.stats.two_sample import SampleComparison

    one = SampleComparison(1.0, (0.9, 1.1), 1.0, "same", 0.05, 10.0, 1.0, (1, 1))
    assert "borrow" not in verdict_note(one, None, None) and "unknown" in verdict_note(one, None, None)
    assert "the run's typical one" in verdict_note(one, None, None, pooled=True)


def test_the_f_distributions_upper_tail_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for f, d1, d2 in [(7.4, 1, 60), (9.0, 7, 60), (1.0, 2, 10), (0.3, 1, 60), (50.0, 1, 60), (2.2, 12, 33.3)]:
        assert f_upper_tail(f, d1, d2) == pytest.approx(float(stats.f.sf(f, d1, d2)), rel=1e-8)
    assert f_upper_tail(0.0, 3, 8) == 1.0


def test_a_case_far_noisier_than_its_run_is_not_shrunk_toward_it():
    """PyTorch's 2-thread FFT at n = 10⁶ beside a neighbour: eight processes 2.4-3.3 ms (13 % a process)
    in a run whose cases agree to 4 %. Shrunk, it claimed ±6 %; two identical runs disagreed by ×0.82."""
    prior = VariancePrior(variance=0.043**2, df=60.0, cases=80)
    assert prior.hypervariable(0.13**2, 7)
    assert prior.moderate(0.13**2, 7) == (0.13**2, 7)  # its own, with its own degrees of freedom
    shrunk, df = prior.moderate(0.13**2, 7, robust=False)
    assert shrunk < 0.06**2 and df == 67
    # A case within what the prior allows is shrunk as before, noisier or not.
    assert not prior.hypervariable(0.06**2, 2)
    v, df = prior.moderate(0.06**2, 2)
    assert 0.043**2 < v < 0.06**2 and df == 62
    assert not NO_PRIOR.hypervariable(1.0, 2)


def test_between_two_runs_a_hypervariable_case_gives_no_verdict_where_shrunk_it_did():
    """Numba's `a + b` at n = 125 893 beside a neighbour, in two identical runs whose cases agree to 4 %:
    8.0 and 7.8 µs in one, 6.1 and 7.2 µs in the other. Shrunk toward its run, ×0.83 was a verdict."""
    from arraybench.stats.two_sample import compare_samples

    rng = random.Random(5)
    prior = fit_prior((r.own_process_variance, r.processes - 1) for r in simulated_run(rng, [0.04] * 30))

    def case(levels: list[float]) -> Replicated:
        return Replicated(tuple(Measurement(tuple(x * (1 + 0.01 * rng.random()) for _ in range(15))) for x in levels),
                          prior)

    base, new = case([8.0, 7.8]), case([6.1, 7.2])
    assert new.hypervariable and not base.hypervariable
    assert compare_samples(base, new).verdict == "faster"  # shrunk toward the run: ×0.83 "found"
    robust = compare_samples(base.with_prior(prior, robust=True), new.with_prior(prior, robust=True))
    assert robust.verdict == "too noisy to say" and robust.df < 20
    # A change well beyond the case's own spread is still found.
    slower = case([15.2, 17.9, 16.1, 16.8])
    slower = slower.with_prior(prior, robust=True)
    assert compare_samples(base.with_prior(prior, robust=True), slower).verdict == "slower"
