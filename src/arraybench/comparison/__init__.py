"""Compare: two runs case by case — ratio with its uncertainty, significance, verdict, CI exit code."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arraybench.comparison import memory
from arraybench.errors import UsageError
from arraybench.machine import environment, packages
from arraybench.output import formats
from arraybench.planning.case import label
from arraybench.results import Planned, Results, measured
from arraybench.results.reading import Reading, process_rounds
from arraybench.results.record import FAILED, CaseRecord
from arraybench.results.run_ids import run_id
from arraybench.stats import power
from arraybench.stats.measurement import FEW_SAMPLES, Replicated, point_variance
from arraybench.stats.paired import all_differences, by_round, paired_log_ratio, paired_prior
from arraybench.stats.pooling import NO_PRIOR, VariancePrior
from arraybench.stats.student import bounded_exp
from arraybench.stats.verdicts import ALPHA, FASTER, NOISY, SAME, SLOWER, decide
from arraybench.units import format_seconds

DEFAULT_THRESHOLD = 0.05  # changes smaller than this are "same" even when real

BROKEN, NOT_COMPARED = "broken", "not compared"
VERDICTS = (SLOWER, BROKEN, FASTER, SAME, NOISY, NOT_COMPARED)

# Settings that change what a case's time means. The rest (workloads, backends, sizes...) only
# choose which cases exist, and the one-side-only lists already show that.
COMPARABLE_SETTINGS = ("dtype", "threads", "devices", "seed", "timer")
# A case's earlier runs say something about the spread between runs from two on (one run has
# no spread); fewer, and the case is compared on its two runs alone.
MIN_EARLIER_RUNS = 2
# The latest this many earlier runs that count are read, no more: τ² is pooled over the cases, so
# 30 runs already give it hundreds of degrees of freedom, while a year of nightly runs of one
# machine (333, 100 000 records) took compare 17 s to read; and the oldest say least of the host now.
MAX_EARLIER_RUNS = 30
# A run-to-run spread worth less than this many degrees of freedom is not added: its t quantile is
# unbounded (two earlier runs whose cases shift together gave τ ±2.2 % worth 0.06 df on the 2-core
# VM), so every interval would be infinite; the comparison says so and goes on without it.
MIN_SPREAD_DF = 1.0
# What marks an interval that carries the spread between runs (RunSpread) in the case table.
RUN_MARK = "†"


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
    points = {case: {rid: log_point(m) for rid, m in runs.items() if m.processes > 1}
              for case, runs in history.items()}
    points = {case: p for case, p in points.items() if len(p) >= MIN_EARLIER_RUNS}
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


def different_settings(a: Results, b: Results) -> list[str]:
    """The COMPARABLE_SETTINGS in which two runs differ (a list's order is no difference)."""
    return [k for k in COMPARABLE_SETTINGS if unordered(a.settings.get(k)) != unordered(b.settings.get(k))]


def like_for_like(a: Results, b: Results) -> bool:
    """Same machine and the same COMPARABLE_SETTINGS: runs whose spread is one machine's."""
    return (environment.fingerprint(a.environment) == environment.fingerprint(b.environment)
            and not different_settings(a, b))


def counts_as_history(base: Results, new: Results) -> Callable[[Results], bool]:
    """Whether an earlier run counts in the spread between runs of `base` and `new`, from its header alone.

    A run counts when it is neither of the two, ran on their machine with their settings and
    with the framework versions of one of them: runs between which a framework changed would
    count a real change as spread. None counts when base and new are not like for like.
    """
    versions = (base.environment.get("versions"), new.environment.get("versions"))
    compared = {run_id(base.header), run_id(new.header)}
    alike = like_for_like(base, new)
    return lambda res: (alike and run_id(res.header) not in compared and like_for_like(res, base)
                        and res.environment.get("versions") in versions)


def earlier_measurements(base: Results, new: Results, history: Sequence[Results]) -> dict[str, dict[str, Replicated]]:
    """Per case id, its measurement in each run of `history` that counts (counts_as_history)."""
    counts = counts_as_history(base, new)
    out: dict[str, dict[str, Replicated]] = defaultdict(dict)
    for res in history:
        if not counts(res):
            continue
        rid = run_id(res.header)
        for rec in res.latest().values():
            m = res.reading.measured(rec) if rec.status == "ok" else None
            if m is not None and m.processes > 1:
                out[rec.id][rid] = m
    return dict(out)


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


@dataclass(frozen=True)
class CaseComparison:
    """One case present in both runs; `result` is None when either side has no valid time."""

    label: str
    row: str
    base: CaseRecord
    new: CaseRecord
    result: SampleComparison | None
    verdict: str
    note: str
    memory: memory.MemoryChange | None = None  # its memory, new over base (comparison/memory.py)


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side: the cases both ran, those only one ran, and how their setups differ."""

    base_name: str
    new_name: str
    cases: list[CaseComparison]
    only_base: list[str]
    only_new: list[str]
    differences: list[str]
    threshold: float
    run_spread: RunSpread | None = None  # from earlier runs of the machine; None: no history
    # How many of its planned cases each side holds (Results.planned); None: its header does not say.
    planned: tuple[Planned | None, Planned | None] = (None, None)

    def partial_sides(self) -> list[str]:
        """A sentence for each side that holds fewer cases than its run planned."""
        sides = zip((self.base_name, self.new_name), self.planned, strict=True)
        return [f"{name} holds only {p} (its run was interrupted, is still running or was stored in part)"
                for name, p in sides if p is not None and not p.complete]

    def __repr__(self) -> str:
        """The table `arraybench compare` prints (a notebook shows this, not every record)."""
        return render(self, None)

    def geometric_means(self) -> list[tuple[str, float, int]]:
        """Per backend·mode: the geometric mean of new/base over its compared cases, and their count."""
        logs: dict[str, list[float]] = defaultdict(list)
        for c in self.cases:
            if c.result is not None:
                logs[c.row].append(math.log(c.result.ratio))
        return [(row, math.exp(sum(v) / len(v)), len(v)) for row, v in sorted(logs.items())]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(VERDICTS, 0)
        for c in self.cases:
            out[c.verdict] += 1
        return out

    def regressions(self, limit: float) -> list[CaseComparison]:
        """Significant slowdowns beyond `limit`, and cases that worked in base and fail in new."""
        return [c for c in self.cases if c.verdict == BROKEN
                or (c.verdict == SLOWER and c.result is not None and c.result.ratio > 1 + limit)]


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


def paired_prior_of(pairs: Sequence[tuple[CaseRecord, CaseRecord]], reading: Reading | None = None) -> VariancePrior:
    """What the compared cases of two environments say about the variance of one round's difference
    (each process read as `reading`, the run's, reads it: its spells set aside)."""
    reading = reading or Reading()
    return paired_prior(all_differences(reading.rounds(base), reading.rounds(new)) for base, new in pairs
                        if base.status == new.status == "ok" and base.samples_s and new.samples_s)


def environment_side(res: Results, env: str) -> Results:
    """The records of one environment (`--env NAME`) of a run, as a run of their own: its header's
    framework versions and `packages` are that environment's, so compare names what differs between two."""
    envs = res.header.get("environments") or {}
    if env not in envs:
        have = ", ".join(sorted(envs)) or "none: it was measured in one environment"
        raise UsageError(f"run {run_id(res.header)} has no environment {env!r} (its environments: {have})")
    header = {**res.header, "environment": {**res.environment, "versions": envs[env].get("versions") or {}},
              "environment_name": env, "packages": envs[env].get("packages")}
    if isinstance(res.header.get("plan_size"), int):  # the plan, measured once in each environment
        header["plan_size"] = res.header["plan_size"] // len(envs)
    # Named by the side, not in every row: the records drop their environment's name.
    return dataclasses.replace(res, header=header, records=[dataclasses.replace(r, env=None)
                                                            for r in res.records if r.env == env])


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


def match_key(r: CaseRecord) -> tuple:
    """What makes two records the same case. Threads are left out so that runs on machines with
    different core counts still pair up; a thread difference is listed with the other settings."""
    params = tuple(sorted((k, json.dumps(v)) for k, v in r.params.items()))
    return (r.workload, params, r.backend, r.mode, r.dtype, r.device)


def case_label(r: CaseRecord) -> str:
    params = ",".join(f"{k}={v}" for k, v in sorted(r.params.items()))
    return f"{r.workload}[{params}]"


def row_label(r: CaseRecord) -> str:
    return label(r, device=r.device != "cpu")


def compare_cases(base: CaseRecord, new: CaseRecord, threshold: float,
                  runs: tuple[Results, Results] | None = None, spread: RunSpread | None = None,
                  paired: VariancePrior | None = None) -> CaseComparison:
    """One case, before the correction across cases (`compare` applies it). `runs` are the two
    runs the records come from, whose priors pool the spread between processes (results.analysed);
    `spread` the variance between earlier runs of this case's machine (None: no history);
    `paired`: the two sides are two environments of one run, compared round by round with this
    prior (paired_prior over the comparison's cases)."""
    label, row = case_label(new), row_label(new)
    if base.status == "ok" and new.status == "ok":
        if runs is None:
            b, n = measured(base), measured(new)
            rounds = (process_rounds(base), process_rounds(new))
        else:  # as each run reads its records: spells set aside, with its prior
            b, n = runs[0].reading.measured(base), runs[1].reading.measured(new)
            rounds = ([p.round for p in runs[0].reading.kept(base)], [p.round for p in runs[1].reading.kept(new)])
        if b is None or n is None:
            return CaseComparison(label, row, base, new, None, NOT_COMPARED, "no raw samples recorded")
        result = (compare_samples(b, n, threshold, spread) if paired is None else
                  compare_paired(b, n, rounds, threshold, paired))
        return CaseComparison(label, row, base, new, result, result.verdict, "")
    if base.status == "ok" and new.status in FAILED:
        return CaseComparison(label, row, base, new, None, BROKEN, f"new is {new.status}: {new.error}")
    side, rec = ("base", base) if base.status != "ok" else ("new", new)
    return CaseComparison(label, row, base, new, None, NOT_COMPARED, f"{side} is {rec.status}")


def spelled(c: CaseComparison, base: Results, new: Results) -> CaseComparison:
    """`c`, too noisy to say where every process of one side ran in a slow spell of its host
    (stats/spells.py): nothing of that side was measured outside one, so no change of it is known,
    whatever the intervals say. Two runs of PyTorch's 165² matmul beside a neighbour read 15.8 ms
    (its 2-thread pool stalled in every process, its threads waiting a core's worth throughout) and
    65 µs, and compare called it 250× faster."""
    sides = [side for side, res, rec in (("base", base, c.base), ("new", new, c.new)) if res.reading.covered(rec)]
    if not sides or c.verdict not in (SLOWER, FASTER) or c.result is None:
        return c
    why = (f"every process of {' and '.join(sides)} ran in a slow spell of its host (its threads waited for a "
           "CPU another process held, or its reference ran slow)")
    return dataclasses.replace(c, verdict=NOISY, result=dataclasses.replace(c.result, verdict=NOISY),
                               note="; ".join(filter(None, (why, c.note))))


def verdict_note(result: SampleComparison, base: CaseRecord, new: CaseRecord, pooled: bool = False,
                 threshold: float = DEFAULT_THRESHOLD, level: float = ALPHA) -> str:
    """What a reader should know about how far this verdict can be trusted; `pooled`: both runs
    have a prior (pooling.py), so a one-process side borrows its run's spread between processes.
    An undecided verdict says the smallest change it could have seen, tested at `level` (the
    p-value the FDR correction asked of one more case: power.bh_level)."""
    notes = [result.note] if result.note else []
    if result.verdict == NOISY:
        notes.append(power.phrase(power.detectable_change(result.log_se, result.df, threshold, level)))
    if min(result.processes) == 1:
        notes.append("one process a side: its spread between processes is the run's typical one" if pooled
                     else "one process a side: between-process variation unknown; run with --processes 3")
    elif result.verdict == NOISY:
        few = min(m.n for rec in (base, new) for m in measured(rec).runs) < FEW_SAMPLES  # type: ignore[union-attr]
        notes += ["few samples; raise --min-time"] if few else []
    return "; ".join(notes)


def flatten(obj: Any, prefix: str = "") -> dict[str, str]:
    """Nested dicts and lists as dotted keys with string values, for a key-by-key diff."""
    if isinstance(obj, dict):
        out: dict[str, str] = {}
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(obj, list) and any(isinstance(v, dict | list) for v in obj):
        out = {}
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}.{i}"))
        return out
    return {prefix: json.dumps(obj) if isinstance(obj, list) else str(obj)}


def unordered(obj: Any) -> Any:
    """`obj` with every list in one canonical order: two runs that list the same BLAS libraries
    (threadpoolctl lists them in the order they were loaded) or devices in another order have
    the same setup, so a list is compared as the multiset it is."""
    if isinstance(obj, dict):
        return {k: unordered(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return sorted((unordered(v) for v in obj), key=lambda v: json.dumps(v, sort_keys=True, default=str))
    return obj


# What a worker measured about itself rather than how it was set up: these differ between any
# two runs (its start-up phases, its empty call, its layout pads) and are no setting.
MEASURED_INFO = ("version", "devices", "startup", "empty_call_s")


def backend_infos(res: Results) -> dict[str, Any]:
    """Each backend's info as its worker reported it: threads, BLAS, precision flags.

    Versions are left out (the environment lists them once), and so are device lists and what
    the worker measured of itself (MEASURED_INFO).
    """
    out: dict[str, Any] = {}
    for r in res.records:
        if r.backend_info and r.backend not in out:
            out[r.backend] = {k: v for k, v in r.backend_info.items() if k not in MEASURED_INFO}
    return out


def environment_differences(base: Results, new: Results) -> list[str]:
    """Every recorded fact about machine, software and settings that differs, as `key: base → new`.

    Facts, not measurements: what the environment and the workers measured (environment.MEASURED,
    MEASURED_INFO) differs between any two runs; a list differs only in its elements, not their
    order; an environment variable counts only where it changes results (environment.settings_env,
    which also drops the others that files written before it recorded)."""

    infos = backend_infos(base), backend_infos(new)
    ran_in_both = infos[0].keys() & infos[1].keys()

    def facts(res: Results, info: dict[str, Any]) -> dict[str, str]:
        env = environment.setup(res.environment)
        if "env" in env:
            env["env"] = environment.settings_env(env["env"])
        return {
            "arraybench": str(res.header.get("arraybench_version")),
            **flatten(unordered(env)),
            **flatten(unordered({k: res.settings[k] for k in COMPARABLE_SETTINGS if k in res.settings}), "settings"),
            **flatten(unordered({b: info[b] for b in ran_in_both}), "backend_info"),
        }

    a, b = facts(base, infos[0]), facts(new, infos[1])
    missing = "—"
    differ = [k for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
    installed = package_sides(base, new)
    if installed is None:
        return [f"{k}: {a.get(k, missing)} → {b.get(k, missing)}" for k in differ]
    # Where both sides record their packages, those say what the framework versions say, and where from.
    return packages.changes(*installed) + [f"{k}: {a.get(k, missing)} → {b.get(k, missing)}"
                                           for k in differ if not k.startswith("versions.")]


def package_sides(base: Results, new: Results) -> tuple[dict[str, packages.Package], ...] | None:
    """The packages of two environments' sides (environment_side), by name; None unless both record them."""
    old, now = packages.of_environment(base.header), packages.of_environment(new.header)
    return None if old is None or now is None else (old, now)


def compare(base: Results, new: Results, threshold: float = DEFAULT_THRESHOLD,
            names: tuple[str, str] = ("base", "new"), history: Sequence[Results] = (),
            paired: bool = False) -> Comparison:
    """Every case both runs measured, with its verdict after the correction across cases.

    `history`: earlier runs (a store's, Store.runs_on) from which the spread between runs of
    this machine is estimated (run_spread) and added to the intervals of the cases that have
    MIN_EARLIER_RUNS of them; without, each case is judged on its two runs alone.
    `paired`: `base` and `new` are two environments of one run (environment_side), whose
    processes ran in the same rounds: each case's interval is read from its per-round differences,
    which a drift of the host during the run does not reach (stats/paired.py); history is not used.
    """
    b = {match_key(r): r for r in base.latest().values()}
    n = {match_key(r): r for r in new.latest().values()}
    both = sorted(b.keys() & n.keys())
    earlier = {} if paired else earlier_measurements(base, new, history)
    earlier = {b[k].id: earlier[b[k].id] for k in both if len(earlier.get(b[k].id, {})) >= MIN_EARLIER_RUNS}
    spread = run_spread(earlier)
    usable = spread if spread is not None and spread.df >= MIN_SPREAD_DF else None
    prior = paired_prior_of([(b[k], n[k]) for k in both], base.reading) if paired else None
    cases = [compare_cases(b[k], n[k], threshold, (base, new), usable if b[k].id in earlier else None, prior)
             for k in both]
    tested = [c for c in cases if c.result is not None]
    adjusted = adjust([c.result for c in tested], threshold)  # type: ignore[misc]
    level = power.bh_level(sum(a.q_value < ALPHA for a in adjusted), len(adjusted))
    pooled = base.prior.df > 0 and new.prior.df > 0
    found = iter(adjusted)
    cases = [c if c.result is None else
             dataclasses.replace(c, result=(a := next(found)), verdict=a.verdict,
                                 note=verdict_note(a, c.base, c.new, pooled, threshold, level))
             for c in cases]
    cases = with_memory([spelled(c, base, new) for c in cases], threshold, paired)
    return Comparison(
        base_name=names[0],
        new_name=names[1],
        cases=cases,
        only_base=sorted(f"{case_label(b[k])} {row_label(b[k])}" for k in b.keys() - n.keys()),
        only_new=sorted(f"{case_label(n[k])} {row_label(n[k])}" for k in n.keys() - b.keys()),
        differences=environment_differences(base, new),
        threshold=threshold,
        run_spread=spread,
        planned=(base.planned(), new.planned()),
    )


def with_memory(cases: list[CaseComparison], threshold: float, paired: bool) -> list[CaseComparison]:
    """Each case with its memory change (comparison/memory.py), corrected across the cases that have one."""
    found = [memory.change(c.base, c.new, paired) if c.base.status == c.new.status == "ok" else None for c in cases]
    known = [m for m in found if m is not None]
    qs = scipy_stats().false_discovery_control([m.estimate.p_value for m in known], method="bh") if known else []
    decided = iter(memory.decided(known, [float(q) for q in qs], threshold))
    return [dataclasses.replace(c, memory=next(decided) if m is not None else None) for c, m in zip(cases, found,
                                                                                                      strict=True)]


def headline(base: Results, new: Results) -> str | None:
    """One sentence when the runs are not like for like; the differences follow it."""
    installed = package_sides(base, new)
    if installed is not None and run_id(base.header) == run_id(new.header):
        differ = packages.changed(*installed)
        return f"The two environments differ in {packages.named(differ)}:" if differ else None
    what = []
    if environment.fingerprint(base.environment) != environment.fingerprint(new.environment):
        what.append("on different machines")
    if base.environment.get("versions") != new.environment.get("versions"):
        what.append("with different framework versions")
    settings = different_settings(base, new)
    if settings:
        what.append(f"with different settings ({', '.join(settings)})")
    if not what:
        return None
    return "The two runs ran " + ", ".join(what) + ": a change may come from these, not from the code."


def _case_rows(cmp: Comparison) -> list[list[str]]:
    rows = []
    order = {v: i for i, v in enumerate(VERDICTS)}
    for c in sorted(cmp.cases, key=lambda c: (order[c.verdict], c.label, c.row)):
        if c.result is None:
            rows.append([c.label, c.row, _median(c.base), _median(c.new), "", "", f"{c.verdict}: {c.note}"])
            continue
        lo, hi = c.result.ci95
        mark = RUN_MARK if c.result.run_variance > 0 else ""
        rows.append([c.label, c.row, _median(c.base), _median(c.new),
                     f"{c.result.ratio:.3f} [{lo:.3f}, {hi:.3f}]{mark}", f"{c.result.q_value:.2g}",
                     f"{c.verdict} ({c.note})" if c.note else c.verdict])
    return rows


def _median(r: CaseRecord) -> str:
    return format_seconds(r.median_s) if r.status == "ok" else r.status.upper()


CASE_HEADER = ["case", "backend·mode", "base median", "new median", "new/base [95% CI]", "q (BH)", "verdict"]
GEO_HEADER = ["backend·mode", "geometric mean new/base", "cases"]


def summary(cmp: Comparison) -> str:
    parts = [f"{n} {v}" for v, n in cmp.counts().items() if n]
    return (f"{cmp.new_name} vs {cmp.base_name}: cases on both sides: {len(cmp.cases)}"
            + (f" ({', '.join(parts)})" if parts else "")
            + f"; threshold {100 * cmp.threshold:g}%, false discovery rate {100 * ALPHA:g}% (Benjamini–Hochberg)")


def history_line(cmp: Comparison) -> str | None:
    """What the earlier runs of this machine added to the intervals; None without history."""
    spread = cmp.run_spread
    if spread is None:
        return None
    source = f"{spread.runs} earlier runs of this machine ({spread.cases} cases)"
    if spread.variance <= 0:
        return f"Run-to-run spread: none beyond the processes' own in {source}; nothing added to the intervals."
    if spread.df < MIN_SPREAD_DF:
        return (f"Run-to-run spread ±{100 * spread.relative:.1f}% from {source} is worth {spread.df:.2g} degrees "
                f"of freedom (their cases shift together, so it is known from {spread.runs - 1} difference(s) "
                "between runs): too few to add to the intervals, which are the runs' own; more earlier runs "
                "of this command make it count.")
    applied = sum(c.result is not None and c.result.run_variance > 0 for c in cmp.cases)
    return (f"{RUN_MARK} Run-to-run spread ±{100 * spread.relative:.1f}% ({spread.df:.0f} df) from {source}: "
            f"added to both sides of the {applied} intervals so marked (--no-history leaves it out).")


def render(cmp: Comparison, note: str | None, markdown: bool = False,
           table: Callable[[list[str], list[list[str]]], str] = formats.text_table) -> str:
    """The comparison for a terminal (`table` draws its tables), or as Markdown for a pull request."""
    table = formats.markdown_table if markdown else table
    blocks = ["## arraybench compare", summary(cmp)] if markdown else [summary(cmp)]
    blocks += [f"**{line}.**" if markdown else f"{line}." for line in cmp.partial_sides()]
    history = history_line(cmp)
    if history:
        blocks.append(history)
    if note:
        diffs = [f"> - `{d}`" if markdown else f"  {d}" for d in cmp.differences]
        blocks.append("\n".join([f"> **{note}**\n>" if markdown else note, *diffs]))
    if cmp.cases:
        blocks.append(table(CASE_HEADER, _case_rows(cmp)))
        geo = [[row, f"{g:.3f}", str(k)] for row, g, k in cmp.geometric_means()]
        if geo:
            blocks.append(table(GEO_HEADER, geo))
        held = memory.table_rows([(c.label, c.row, c.memory) for c in cmp.cases if c.memory is not None])
        if held:
            blocks += ["Memory of a call (docs/memory.md)", table(memory.HEADER, held)]
    for side, only in ((cmp.base_name, cmp.only_base), (cmp.new_name, cmp.only_new)):
        if only:
            items = [f"- `{x}`" if markdown else f"  {x}" for x in only]
            blocks.append("\n".join([f"Only in {side}:\n" if markdown else f"only in {side}:", *items]))
    return "\n\n".join(blocks) + "\n"


def case_rows(cmp: Comparison) -> list[dict[str, Any]]:
    """One dict per compared case, for --format json and csv."""
    return [{"case": c.label, "row": c.row, "case_id": c.base.id,
             "base_status": c.base.status, "new_status": c.new.status,
             "base_median_s": c.base.median_s, "new_median_s": c.new.median_s,
             "ratio": c.result.ratio if c.result else None,
             "ci95_low": c.result.ci95[0] if c.result else None, "ci95_high": c.result.ci95[1] if c.result else None,
             "p_value": c.result.p_value if c.result else None, "verdict": c.verdict, "note": c.note,
             "run_variance": c.result.run_variance if c.result else None, **memory.json_fields(c.memory)}
            for c in cmp.cases]


def render_as(cmp: Comparison, note: str | None, fmt: str,
              table: Callable[[list[str], list[list[str]]], str] = formats.text_table) -> str:
    """The comparison in one of formats.FORMATS: text and Markdown for people, JSON and CSV for tools."""
    if fmt == "json":
        return formats.json_text({
            "base": cmp.base_name, "new": cmp.new_name, "threshold": cmp.threshold, "note": note,
            "differences": cmp.differences, "counts": cmp.counts(), "cases": case_rows(cmp),
            "run_spread": cmp.run_spread.to_json() if cmp.run_spread else None,
            "geometric_means": [{"row": row, "ratio": g, "cases": k} for row, g, k in cmp.geometric_means()],
            "only_base": cmp.only_base, "only_new": cmp.only_new,
            "planned": [dataclasses.asdict(p) if p is not None else None for p in cmp.planned],
        })
    if fmt == "csv":
        return formats.render_rows(case_rows(cmp), "csv")
    return render(cmp, note, markdown=fmt == "markdown", table=table)
