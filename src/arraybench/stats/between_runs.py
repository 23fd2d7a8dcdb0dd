"""The spread between runs of one machine: τ², what a case's log point estimate varies from run to
run beyond what its processes show, estimated from earlier runs of the compared cases: the
machine's (run_spread, which compare names beneath its summary) and each case's own, moderated
toward the machine's cases (case_spreads, which compare adds to both sides of the case's interval:
comparison/cases.py); and, with or without history, from the two compared runs' own cases
(pair_spread: how far their cases scatter between the two beyond their processes' spread)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arraybench.stats.measurement import Replicated, point_variance
from arraybench.stats.pooling import fit_prior
from arraybench.stats.student import t_isf

# A case's earlier runs say something about the spread between runs from two on (one run has
# no spread); fewer, and the case is compared on its two runs alone.
MIN_EARLIER_RUNS = 2
# Two runs' own cases say how far the runs differ beyond their processes' spread from this many cases
# whose sides know their spread between processes on (pair_spread); fewer, and none is read from them.
MIN_PAIR_CASES = 12
# What a median-based estimate of a spread is worth against the plain variance of as many values: the
# median absolute deviation's asymptotic efficiency at the normal (37 %), a share of its degrees of freedom.
MEDIAN_EFFICIENCY = 0.37


@dataclass(frozen=True)
class RunSpread:
    """The spread between runs of one machine that the runs' own intervals cannot see.

    A run shares more than its processes do: what else the machine was doing for those
    minutes, its host's speed state, the build. On the 2-core VM of issue 23 one case's three
    processes agreed within ±3 % in each of two identical runs, and the runs differed by 30 %.
    `variance` is τ², the variance of a case's log point estimate from run to run beyond what
    its processes show; `df` what the estimate is worth (fewer when the runs' cases shift
    together, see run_spread); `runs` and `cases` what it came from.
    """

    variance: float
    df: float
    runs: int
    cases: int

    @property
    def relative(self) -> float:
        """One standard deviation between runs, as a share of the time (0.07: ±7 %)."""
        return math.expm1(math.sqrt(self.variance))

    def to_json(self) -> dict[str, float | int | None]:
        return {"variance": self.variance, "relative": self.relative,
                "df": self.df if math.isfinite(self.df) else None, "runs": self.runs, "cases": self.cases}


def log_point(m: Replicated) -> tuple[float, float, int]:
    """A run's log point estimate of a case (its Replicated.point), its squared standard error from
    the spread of its processes' log medians, and that error's degrees of freedom (R − 1; two
    processes or more).

    The plain variance over processes, not the bootstrap's: it is unbiased, which the moment
    estimate of run_spread needs, and a history of hundreds of cases reads in milliseconds."""
    logs = [math.log(x) for x in m.medians]
    return math.log(m.point), point_variance(statistics.variance(logs), len(logs)), len(logs) - 1


def earlier_points(history: Mapping[str, Mapping[str, Replicated]]) -> dict[str, dict[str, tuple[float, float, int]]]:
    """Per case, its earlier runs' log_point by run id: those of two processes or more, for the cases
    with MIN_EARLIER_RUNS such runs (what run_spread and case_spreads read)."""
    points = {case: {rid: log_point(m) for rid, m in runs.items() if m.processes > 1}
              for case, runs in history.items()}
    return {case: p for case, p in points.items() if len(p) >= MIN_EARLIER_RUNS}


def run_spread(history: Mapping[str, Mapping[str, Replicated]]) -> RunSpread | None:
    """τ², the variance between runs, from earlier runs of the compared cases: `history` maps a
    case id to its measurement in each earlier run (by run id).

    Per case c with J_c ≥ MIN_EARLIER_RUNS earlier runs of two processes or more, its runs'
    log points y_jc vary by a_c = var_j(y_jc), of which their own standard errors se_jc
    explain their square's mean; τ² = a − b, a the mean of a_c over the cases and b that of
    se²_jc over every run of every case, floored at 0 (the method of moments of a
    random-effects model, DerSimonian–Laird's without weights). Pooled over the
    cases, as pooling.py pools the spread between processes: 2–5 runs say little about one
    case's τ², and a machine's run-to-run spread is much the same for its cases.

    Its degrees of freedom (Satterthwaite, for a − b): a's count the cases as independent only
    as far as their runs' shifts are: a shift ρ·τ² that a run's cases share (a slow host for
    the whole run) is estimated from J − 1 runs however many cases there are, so
    1/df_a = mean(1/(J_c − 1))/C + (1 − 1/C)·ρ²/(J − 1), ρ from how the cases' deviations
    from their own means agree within a run. b's df are the processes' (R − 1 each).
    Returns None when no case has enough earlier runs.
    """
    points = earlier_points(history)
    if not points:
        return None
    run_ids = {rid for p in points.values() for rid in p}
    cases, runs = len(points), len(run_ids)
    between = statistics.fmean(statistics.variance([y for y, _, _ in p.values()]) for p in points.values())
    errors = [(se2, df) for p in points.values() for _, se2, df in p.values()]
    within = statistics.fmean(se2 for se2, _ in errors)
    tau2 = between - within
    if tau2 <= 0:
        return RunSpread(0.0, math.inf, runs, cases)
    deviations: dict[str, list[float]] = defaultdict(list)
    for p in points.values():
        mean = statistics.fmean(y for y, _, _ in p.values())
        for rid, (y, _, _) in p.items():
            deviations[rid].append(y - mean)
    shared_sq = sum(statistics.fmean(d) ** 2 for d in deviations.values()) / (runs - 1)
    shared = between if cases == 1 else (cases * shared_sq - between) / (cases - 1)
    rho = min(1.0, max(0.0, shared / between))
    df_between = 1 / (statistics.fmean(1 / (len(p) - 1) for p in points.values()) / cases
                      + (1 - 1 / cases) * rho**2 / (runs - 1))
    df_within = (within * len(errors)) ** 2 / sum(se2**2 / df for se2, df in errors) if within > 0 else math.inf
    df = tau2**2 / (between**2 / df_between + within**2 / df_within)
    return RunSpread(tau2, df, runs, cases)


def case_spreads(history: Mapping[str, Mapping[str, Replicated]]) -> dict[str, RunSpread]:
    """Each case's own τ²: its earlier runs' log points vary by a_c (J_c − 1 df), moderated toward
    what the machine's cases say (pooling.fit_prior over the a_c, as a run pools its processes'
    spreads), less its runs' own squared standard errors b_c; with Satterthwaite's df for the
    difference. Keyed by case id, for the cases of `history` with MIN_EARLIER_RUNS runs or more.

    Why per case: the machine-wide τ² of `run_spread` is a mean over cases, and a few cases that
    move between runs set it for all. On the 2-core VM, 16 earlier runs of one plan gave ±8-12 %:
    compare then found none of 74-80 cases made 10 % slower, where their own runs, with no history,
    found 42-59, because most cases move 1-3 % between runs and NumPy's 10⁶ `a + b` 15-26 %. Moderated,
    a case that moves speaks for itself (robust: hypervariable cases are not shrunk), and a case with
    two or three earlier runs borrows from the rest."""
    points = {case: list(p.values()) for case, p in earlier_points(history).items()}
    between = {case: (statistics.variance([y for y, _, _ in p]), len(p) - 1.0) for case, p in points.items()}
    prior = fit_prior(between.values())
    out: dict[str, RunSpread] = {}
    for case, p in points.items():
        a, a_df = prior.moderate(*between[case])
        within = statistics.fmean(se2 for _, se2, _ in p)
        tau2 = a - within
        if tau2 <= 0:
            out[case] = RunSpread(0.0, math.inf, len(p), 1)
            continue
        df_within = (within * len(p)) ** 2 / sum(se2**2 / df for _, se2, df in p) if within > 0 else math.inf
        out[case] = RunSpread(tau2, tau2**2 / (a**2 / a_df + within**2 / df_within), len(p), 1)
    return out


def pair_spread(cases: Sequence[tuple[float, float, float]]) -> RunSpread | None:
    """τ² between two runs, read from their own cases (`cases`: each case's log ratio new/base, its
    standard error and degrees of freedom, as compare tests it: two_sample.log_ratio_error): what their
    log ratios scatter about their median beyond what their errors allow. None with fewer than
    MIN_PAIR_CASES cases.

    A run's processes share what else the host did for its minutes, which no interval of one run can
    see: of two identical runs beside a noisy neighbour, PyTorch's jitted FFT of 10⁶ points read
    4.3-5.0 ms in all three processes of one and 6.6-7.2 ms in all three of the other, with neither
    host reference moved, and compare called it ×1.43 slower; the two runs' cases had a median ratio of
    1.02 and a 90th percentile of 1.30. With no earlier runs to tell that spread, the two runs' other
    cases tell it, as an empirical null does (Efron 2004): for a case that did not change, its log ratio
    d_c less their median m, over √(v_c + 2τ²) (v_c its squared standard error, with df_c), is a t
    deviate, within its quartile q_c (the t quantile of 0.75 at df_c) half the time. τ² is the one at which
    half of the cases are within theirs: the median over the cases of the τ²_c at which each one's deviate
    reaches its quartile, ((d_c − m)² / q_c² − v_c) / 2, floored at 0. The median, not the mean: a few
    cases that did change move it little, and a change of every case alike moves only m. Its degrees of
    freedom are the cases' (C − 1) times MEDIAN_EFFICIENCY."""
    if len(cases) < MIN_PAIR_CASES:
        return None
    center = statistics.median(d for d, _, _ in cases)
    tau2 = statistics.median(((d - center) ** 2 / t_isf(0.25, df) ** 2 - se**2) / 2 for d, se, df in cases)
    if tau2 <= 0:
        return RunSpread(0.0, math.inf, 2, len(cases))
    return RunSpread(tau2, max(1.0, MEDIAN_EFFICIENCY * (len(cases) - 1)), 2, len(cases))
