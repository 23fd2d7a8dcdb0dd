"""The comparison case by case: every case both runs measured with its verdict after the correction
across cases (compare), the spread between earlier runs added where history allows, the verdict's
notes, and each case's memory."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

from arraybench.comparison import memory_change
from arraybench.comparison.matching import (
    case_label,
    earlier_measurements,
    environment_differences,
    match_key,
    row_label,
)
from arraybench.comparison.outcome import BROKEN, MIN_SPREAD_DF, NOT_COMPARED, CaseComparison, Comparison
from arraybench.results import Results, measured
from arraybench.results.reading import paired_prior_of, process_rounds, split
from arraybench.results.record import FAILED, CaseRecord
from arraybench.stats import modes, pools, power, spells, wakes
from arraybench.stats.between_runs import MIN_EARLIER_RUNS, RunSpread, case_spreads, pair_spread, run_spread
from arraybench.stats.measurement import FEW_SAMPLES, Replicated
from arraybench.stats.pooling import VariancePrior
from arraybench.stats.two_sample import (
    DEFAULT_THRESHOLD,
    SampleComparison,
    adjust,
    compare_paired,
    compare_samples,
    log_ratio_error,
    scipy_stats,
)
from arraybench.stats.verdicts import ALPHA, FASTER, NOISY, SLOWER
from arraybench.units import format_seconds


def read_sides(base: CaseRecord, new: CaseRecord, runs: tuple[Results, Results],
               paired: bool) -> tuple[Replicated | None, Replicated | None]:
    """A case's two sides as each run reads its records: spells set aside, with its prior, robust
    between two separate runs (not `paired`)."""
    b, n = runs[0].reading.measured(base), runs[1].reading.measured(new)
    if paired:
        return b, n
    return b.with_prior(b.prior, robust=True) if b else None, n.with_prior(n.prior, robust=True) if n else None


def compare_cases(base: CaseRecord, new: CaseRecord, threshold: float,
                  runs: tuple[Results, Results] | None = None, spread: RunSpread | None = None,
                  paired: VariancePrior | None = None,
                  sides: tuple[Replicated | None, Replicated | None] | None = None) -> CaseComparison:
    """One case, before the correction across cases (`compare` applies it). `runs` are the two
    runs the records come from, whose priors pool the spread between processes (results.analysed);
    `spread` the variance between earlier runs of this case's machine (None: no history);
    `paired`: the two sides are two environments of one run, compared round by round with this
    prior (paired_prior over the comparison's cases); `sides`: the two as read_sides reads them, where
    already read."""
    label, row = case_label(new), row_label(new)
    if base.status == "ok" and new.status == "ok":
        if runs is None:
            b, n = measured(base), measured(new)
            rounds = (process_rounds(base), process_rounds(new))
        else:
            b, n = sides if sides is not None else read_sides(base, new, runs, paired is not None)
            rounds = ([p.round for p in runs[0].reading.kept(base)], [p.round for p in runs[1].reading.kept(new)])
        if b is None or n is None:
            return CaseComparison(label, row, base, new, None, NOT_COMPARED, "no raw samples recorded")
        result = (compare_samples(b, n, threshold, spread) if paired is None else
                  compare_paired(b, n, rounds, threshold, paired))
        alone = judged_alone(b, n) if runs is not None and paired is None else ""
        return CaseComparison(label, row, base, new, result, result.verdict, "", alone=alone)
    if base.status == "ok" and new.status in FAILED:
        return CaseComparison(label, row, base, new, None, BROKEN, f"new is {new.status}: {new.error}")
    side, rec = ("base", base) if base.status != "ok" else ("new", new)
    return CaseComparison(label, row, base, new, None, NOT_COMPARED, f"{side} is {rec.status}")


def too_noisy(c: CaseComparison, why: str) -> CaseComparison:
    """`c` called too noisy to say, `why` first in its note."""
    result = dataclasses.replace(c.result, verdict=NOISY) if c.result is not None else None
    return dataclasses.replace(c, verdict=NOISY, result=result, note="; ".join(filter(None, (why, c.note))))


def spelled(c: CaseComparison, base: Results, new: Results) -> CaseComparison:
    """`c`, too noisy to say where a slow spell of its host (stats/spells.py) covered every process of one
    side, or most of them (Reading.outnumbered): nothing of that side, or one process of several, was
    measured outside one, so no change of it is known, whatever the intervals say. Two runs of PyTorch's
    165² matmul beside a neighbour read 15.8 ms (its 2-thread pool stalled in every process, its threads
    waiting a core's worth throughout) and 65 µs, and compare called it 250× faster; two identical runs
    with spells in 41-43 % of processes, whose one process left of four read PyTorch's 10⁶ add at 179 µs
    (97-99 µs in the other), ×0.52 faster."""
    if c.verdict not in (SLOWER, FASTER) or c.result is None:
        return c
    sides = [(side, res.reading.processes(rec), res.reading.kept(rec), res.reading.covered(rec))
             for side, res, rec in (("base", base, c.base), ("new", new, c.new)) if res.reading.outnumbered(rec)]
    if not sides:
        return c
    said = [f"every process of {side}" if covered else f"{len(procs) - len(kept)} of {side}'s {len(procs)} processes"
            for side, procs, kept, covered in sides]
    why = (f"{' and '.join(said)} ran in a slow spell of its host (its threads waited for a CPU another "
           "process held, or its reference ran slow)")
    return too_noisy(c, why)


def moded(c: CaseComparison, base: Results, new: Results) -> CaseComparison:
    """`c`, too noisy to say where its change may be the two runs landing in different process modes
    (stats/modes.py): the processes of its family's cases of its time scale, or its own, fell into modes at
    least this far apart within one of the runs."""
    if c.verdict not in (SLOWER, FASTER) or c.result is None:
        return c
    own = [m for m in (base.reading.measured(c.base), new.reading.measured(c.new)) if m is not None]
    spread = max(base.reading.mode_spread(c.base), new.reading.mode_spread(c.new),
                 *(s for m in own if (s := 1 + m.spread) >= modes.MODE_SPREAD))
    if not modes.explained(c.result.ratio, spread):
        return c
    why = (f"{c.new.backend}·{c.new.mode}'s processes at this time scale fell into modes up to ×{spread:.1f} "
           "apart within one run, so two runs can differ this much by the modes their processes landed in; "
           "more processes a side would tell")
    return too_noisy(c, why)


def woken(c: CaseComparison) -> CaseComparison:
    """`c`, too noisy to say where its change may be the host waking threads at another speed in one
    run than in the other (stats/wakes.py): a call of several threads that lasts a few wake-ups moves
    with them, in every process of a run alike."""
    if c.verdict not in (SLOWER, FASTER) or c.result is None or c.new.median_s is None:
        return c
    base, new = wakes.level(c.base.wake_ref_s), wakes.level(c.new.wake_ref_s)
    if base is None or new is None or not wakes.explains(c.result.ratio, c.new.threads, c.new.median_s, base, new):
        return c
    why = (f"the host woke a thread on another CPU in {format_seconds(base)} a round trip in base's processes "
           f"and {format_seconds(new)} in new's, and a call of {format_seconds(c.new.median_s)} on "
           f"{c.new.threads} threads moves with that in every process of a run")
    return too_noisy(c, why)


def hosted(c: CaseComparison) -> CaseComparison:
    """`c`, too noisy to say where the host's reference (host_level) ran SPELL_FACTOR× or more
    slower beside one side's samples than beside the other's, the way the case moved. Spells are read within
    a window, so a host slow for minutes sets nothing aside in a run (its rivals were slowed alike), and
    two runs of it differ by the host: of two identical runs beside the neighbour, NumPy's add of 7943
    floats read 1.33-1.38 µs in every process of one and 1.80-1.89 µs in every process of the other, whose
    reference ran 9.2-10.0 µs against 5.9-6.1 µs, and compare called it ×1.38 slower."""
    if c.verdict not in (SLOWER, FASTER) or c.result is None:
        return c
    base, new = host_level(c.base), host_level(c.new)
    if base is None or new is None or not spells.explains(c.result.ratio, base, new):
        return c
    why = (f"the host's reference loop ran in {format_seconds(base)} beside base's samples and "
           f"{format_seconds(new)} beside new's (×{new / base:.2f}): the host ran at another speed in one run, "
           "which moves every case of those minutes alike")
    return too_noisy(c, why)


def host_level(r: CaseRecord) -> float | None:
    """How fast the host ran beside `r`, over its processes (spells.host_level). Beside the neighbour NumPy's
    finite-difference gradient at n = 100 read 1.97, 1.03 and 2.04 ms in the three processes of one run,
    beside references of 13.2, 7.6 and 13.4 µs, and 0.94, 0.99 and 1.72 ms in an identical run, beside 7.7,
    8.0 and 13.3 µs: over their samples (10, 33 and 238; 46, 66 and 117) both runs' references read about
    13 µs, and compare called the second ×0.46 faster."""
    try:
        parts = [p.refs for p in split(r)] if r.samples_s else []
    except ValueError:  # a record whose processes' sample counts do not add up: its samples as one
        parts = []
    return spells.host_level(parts) or spells.host_level([r.host_ref_s])


def pooled_apart(c: CaseComparison) -> CaseComparison:
    """`c`, too noisy to say where its change may be the host leaving a pool's threads ready between calls
    in one run and not in the other (stats/pools.py): a call of several threads moves with that, in every
    process of a run alike."""
    if c.verdict not in (SLOWER, FASTER) or c.result is None:
        return c
    base, new = pools.level(c.base.pool_ref_s), pools.level(c.new.pool_ref_s)
    if base is None or new is None or not pools.explains(c.result.ratio, c.new.threads, base, new):
        return c
    why = (f"NumPy's 100² matmul on {c.new.threads} threads, timed as each worker started, took "
           f"{format_seconds(base)} in base's processes and {format_seconds(new)} in new's: the host left a pool's "
           "threads ready between calls in one run and not in the other, and this case's pool moves with that")
    return too_noisy(c, why)


def judged_alone(b: Replicated, n: Replicated) -> str:
    """The words for the sides of a comparison whose processes spread further than their run's prior
    allows (pooling.VariancePrior.hypervariable), so were judged on their own spread; "" where none."""
    sides = [f"{side}'s {m.processes} processes spread ×{1 + m.spread:.2f}, beyond its run's typical "
             f"±{math.expm1(math.sqrt(m.prior.variance)):.0%} a process"
             for side, m in (("base", b), ("new", n)) if m.hypervariable]
    if not sides:
        return ""
    return f"{' and '.join(sides)}: judged on {'their' if len(sides) > 1 else 'its'} own spread"


def hypervaried(c: CaseComparison) -> CaseComparison:
    """`c`, with a note where a side was judged on its own spread, not its run's (judged_alone)."""
    return dataclasses.replace(c, note="; ".join(filter(None, (c.note, c.alone)))) if c.alone else c


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


def wider(a: RunSpread | None, b: RunSpread | None) -> RunSpread | None:
    """Of two spreads between runs, the one of larger variance (either where the other is None)."""
    if a is None or b is None:
        return a or b
    return a if a.variance >= b.variance else b


def spread_between(sides: Iterable[tuple[Replicated | None, Replicated | None]]) -> RunSpread | None:
    """The spread between two separate runs that their own cases show (between_runs.pair_spread), each
    case read as compare reads it (`sides`: read_sides) and its log ratio's error as compare tests it
    (log_ratio_error), of the cases whose both sides know their spread between processes."""
    return pair_spread([(math.log(n.point / b.point), *log_ratio_error(b, n)) for b, n in sides
                        if b is not None and n is not None and min(b.df, n.df) > 0 and min(b.point, n.point) > 0])


def spread_of(case_id: str, own: Mapping[str, RunSpread]) -> RunSpread | None:
    """The spread between runs added to a case's interval: its own (between_runs.case_spreads), taken
    as worth at least MIN_SPREAD_DF degrees of freedom (a τ² barely above the processes' own spread
    is known from a fraction of one, and a t quantile below one has no bound); none without history.
    It does not wait for the machine's figure to be worth a degree of freedom: a machine whose runs
    shift all their cases together knows that figure from a few differences between runs, while each
    case knows its own from its own runs (on the 2-core VM, 18 earlier runs: the machine's ±4.7 %
    worth 0.75 df, which kept the 2-thread 100² matmuls' ×2 swings out of their intervals)."""
    if case_id not in own:
        return None
    mine = own[case_id]
    return mine if mine.df >= MIN_SPREAD_DF else dataclasses.replace(mine, df=MIN_SPREAD_DF)


def compare(base: Results, new: Results, threshold: float = DEFAULT_THRESHOLD,
            names: tuple[str, str] = ("base", "new"), history: Sequence[Results] = (),
            paired: bool = False) -> Comparison:
    """Every case both runs measured, with its verdict after the correction across cases.

    `history`: earlier runs (a store's, Store.runs_on) from which the spread between runs of
    this machine is estimated (run_spread) and added to the intervals of the cases that have
    MIN_EARLIER_RUNS of them; without, each case is judged on its two runs alone.
    Two separate runs (not `paired`) also add the spread between them that their own cases show
    (between_runs.pair_spread), where it is larger than history's.
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
    own = case_spreads(earlier)
    # Two separate runs differ by more than their processes show, as much for the cases with history as
    # for those without: the larger of what history and the two runs' own cases say.
    sides = {k: read_sides(b[k], n[k], (base, new), paired) for k in both if b[k].status == n[k].status == "ok"}
    between = None if paired else spread_between(sides.values())
    prior = paired_prior_of([(b[k], n[k]) for k in both], base.reading) if paired else None
    cases = [compare_cases(b[k], n[k], threshold, (base, new), wider(spread_of(b[k].id, own), between), prior,
                           sides.get(k))
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
    cases = [spelled(c, base, new) for c in cases]
    if not paired:  # two environments of one run ran in the same rounds: a mode is each round's, paired
        cases = [hypervaried(hosted(pooled_apart(woken(moded(c, base, new))))) for c in cases]
    cases = with_memory(cases, threshold, paired)
    return Comparison(
        base_name=names[0],
        new_name=names[1],
        cases=cases,
        only_base=sorted(f"{case_label(b[k])} {row_label(b[k])}" for k in b.keys() - n.keys()),
        only_new=sorted(f"{case_label(n[k])} {row_label(n[k])}" for k in n.keys() - b.keys()),
        differences=environment_differences(base, new),
        threshold=threshold,
        run_spread=spread,
        pair_spread=between,
        paired=paired,
        planned=(base.planned(), new.planned()),
    )


def with_memory(cases: list[CaseComparison], threshold: float, paired: bool) -> list[CaseComparison]:
    """Each case with its memory change (comparison/memory_change.py), corrected across the cases that have one."""
    found = [memory_change.change(c.base, c.new, paired) if c.base.status == c.new.status == "ok" else None
             for c in cases]
    known = [m for m in found if m is not None]
    qs = scipy_stats().false_discovery_control([m.estimate.p_value for m in known], method="bh") if known else []
    decided = iter(memory_change.decided(known, [float(q) for q in qs], threshold))
    return [dataclasses.replace(c, memory=next(decided) if m is not None else None) for c, m in zip(cases, found,
                                                                                                      strict=True)]
