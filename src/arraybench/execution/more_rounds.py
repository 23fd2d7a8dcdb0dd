"""In the arraybench process: more rounds for the cases whose question is still open, within a budget.

After the first rounds every case gets (two: parent.Rounds), a case is open where a question it takes
part in is undecided: between the environments of a run (`--env`: the paired ratio of its processes,
round by round), or at one size, between the fastest backend·mode and another one, or between two
others at least LOPSIDED× apart by their medians (their paired ratio, as the report's every claim
reads it: bracket.side). Each open case gets one more process a round, in the same shuffled rounds as
the rest (taking turns with the other open rivals of its size), until the stop rule
(stats/sequential.py: a bounded number of looks, each at α over the looks) calls it decided, the
rounds reach their maximum, or the budget of seconds (`--budget`) runs out. The rounds up to the
plan's (`--processes`) claim no budget, and the budget's clock starts after them: a case whose every
question is decided sooner stops sooner (a call 30× behind the fastest at its size needs no third
process), every other case gets them, and the whole budget is left for rounds beyond the plan. (Its
clock once ran through them: on a host in spells at its worst, when nearly every case is open, the
planned round took 42 of a 47-s budget and left the questions open.) Decided cases stop at once. A
case's environments take their rounds together, and a budget too small for every open case is spent
an open question at a time, both its sides or neither (`spend`): first the answer's own (the fastest
of a size against each other there, environments), nearest a decision for their cost. A case placed
before the planned rounds ran out whose question a later round opens again gets the planned processes
it skipped, without budget. Last, a case whose processes all ran within SPREAD_S of each other gets
one more, once, GAP_S or more after its last (crowded), and its questions are read again. Every case
looked at ends with a line whose `stopped` says why its rounds ended: a case decided once, whose
question a later process opened again and which the rounds or the budget then did not let go on, ends
open (`budget`, `max rounds`), not decided.

Two rivals measured side by side are read paired by round, as the report reads them, once
bracket.MIN_RIVAL_ROUNDS kept rounds pair them (two environments: once two do); two kept rounds leave
them open while the report leaves them unordered (bracket.side), and else place them as their processes
read apart do (a call 30× behind needs no third process, a pair ×1.3 apart does); where a spell covered
one of a case's processes, so that fewer than two pair, its question stays open until a further round
pairs it (`estimate`), never placed from its processes read apart.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Protocol

from arraybench.core.case import Case, base_id, rivals
from arraybench.results import Results, ResultsWriter, load_results
from arraybench.results.reading import Reading, paired_prior_of, process_rounds
from arraybench.results.record import CaseRecord
from arraybench.stats.bracket import MIN_RIVAL_ROUNDS, side
from arraybench.stats.measurement import point_variance
from arraybench.stats.paired import paired_log_ratio
from arraybench.stats.pooling import NO_PRIOR, VariancePrior
from arraybench.stats.sequential import BUDGET, DECIDED, MAX_ROUNDS, NEAR_TIE, Budget, StopRule
from arraybench.stats.student import LogRatio
from arraybench.stats.two_sample import compare_samples

# At most this many times the planned rounds (3 → 12, looked at after 2, 3, 5, 8 and 12: the stop
# rule's schedule): past it a case stays open and says so.
MAX_ROUNDS_FACTOR = 4
# A difference smaller than this is "the same" for the stop rule (compare's default threshold).
THRESHOLD = 0.05
# A case whose processes all ended within this many seconds of each other gets one more, after the
# rounds: processes close in time can share one state of a shared host, which no interval of theirs can
# see, and which a second run will not share. On the 2-core VM a 2-thread 100² matmul ran at 14, 20 or
# 31 µs in stretches of 4 to 40 s; the six cases that five pairs of identical runs (benchmarks/noisy.py)
# called 12-17 % or 1.4-2.1× faster each had its two processes 5-14 s apart in the run that was off, and NumPy's
# 10⁶ `a + b`, ×1.26 in another pair, 47 s apart in each run.
SPREAD_S = 60.0
# ...at least this long after its last: most of those stretches were shorter.
GAP_S = 30.0
# Two rivals of one size, neither of them the fastest, this far apart by their medians are a question
# too: a table that shows one 2× the other had better say which is faster.
LOPSIDED = 2.0
# A question whose two sides are LOPSIDED× apart or more may overdraw the budget by this share of it,
# once the budget is spent: a report that leaves a pair 2× apart unordered says less than a glance at
# its table. Beside the neighbour, with spells in 41 % of processes, Numba's and JAX's jitted adds of
# 10⁶ floats (74 and 178 µs) shared one kept round of four when the budget ran out, and the run ended
# with them unordered; in eleven other runs that day and the day before, no pair 2× apart was left so.
WIDE_RESERVE = 0.5


def estimate(base: CaseRecord, new: CaseRecord, reading: Reading, prior: VariancePrior | None = None
             ) -> LogRatio | None:
    """log(new/base) with its error: paired by round where both were measured in the same rounds (with
    `prior`: two environments; else two rivals, with the reading's pairing, in bracket.MIN_RIVAL_ROUNDS
    rounds or more, as the report reads them), else unpaired (their processes, spells set aside); two
    rivals that two rounds pair and the report leaves unordered are open (an infinite error)."""
    b, n = reading.measured(base), reading.measured(new)
    if b is None or n is None:
        return None
    pairs = prior if prior is not None else (reading.pairing.prior if reading.pairing is not None else NO_PRIOR)
    found = paired_log_ratio(reading.rounds(base), reading.rounds(new), pairs)
    if found is not None and (prior is not None or found.rounds >= MIN_RIVAL_ROUNDS):
        return found.estimate
    if found is not None and side(reading.point(base), reading.point(new)) == 0:
        # Two kept rounds pair two rivals: open while the report leaves them unordered (bracket.side), for
        # their processes read apart can say more than its intervals do: the first make bench of three
        # rounds for a paired order stopped four pairs ×1.22-1.65 apart at two processes, unordered.
        return LogRatio(found.estimate.value, math.inf, 1)
    result = compare_samples(b, n)
    if found is None and len(set(process_rounds(base)) & set(process_rounds(new))) >= 2:
        # Measured side by side, but a spell set aside what would pair them: the report reads them paired
        # once they share two kept rounds, so neither is placed before then. Read apart, PyTorch's jitted
        # 10⁶ add (one process of two stalled at 7.7 ms, 86 µs the other) stopped as 3.7× ahead of
        # JAX's; paired in the two rounds a last process gave it, the two were unordered.
        return LogRatio(math.log(result.ratio), math.inf, 1)
    return LogRatio(math.log(result.ratio), result.log_se, result.df)


def questions(records: Sequence[CaseRecord], env_order: Sequence[str] = (),
              reading: Reading | None = None) -> dict[str, list[tuple[str, LogRatio]]]:
    """Per case id, the open-or-not questions it takes part in, as (other case id, estimate): each
    environment against the run's first one (`env_order`: the run's environments as --env gave them,
    as the report and compare take them), and at each size the fastest against each other one, and any
    two others LOPSIDED× apart."""
    reading = reading or Reading()
    ok = [r for r in records if r.status == "ok" and r.samples_s]
    out: dict[str, list[tuple[str, LogRatio]]] = defaultdict(list)

    def ask(a: CaseRecord, b: CaseRecord, prior: VariancePrior | None = None) -> None:
        if (e := estimate(a, b, reading, prior)) is not None:
            out[a.id].append((b.id, e))
            out[b.id].append((a.id, e))

    envs: dict[str, list[CaseRecord]] = defaultdict(list)
    rank = {env: i for i, env in enumerate(env_order)}
    for r in ok:
        if r.env:
            envs[base_id(r.id, r.env)].append(r)
    pairs = []
    for same in envs.values():
        first, *others = sorted(same, key=lambda r: (rank.get(r.env or "", len(rank)), r.id))
        pairs += [(first, other) for other in others]
    # The spread of the run's other cases, as compare RUN@A RUN@B reads it: without it a case of 3
    # rounds has 2 degrees of freedom, and the stop rule would go on where compare has decided.
    prior = paired_prior_of(pairs, reading)
    for first, other in pairs:
        ask(first, other, prior)
    for ranked in by_size(ok):
        for other in ranked[1:]:
            ask(ranked[0], other)
        for a, b in combinations(ranked[1:], 2):
            if (b.median_s or 0) >= LOPSIDED * (a.median_s or math.inf):
                ask(a, b)
    return out


def by_size(records: Sequence[CaseRecord]) -> list[list[CaseRecord]]:
    """The rivals of each size (with its environment and machine) among `records`, fastest first by
    their medians, as the answer ranks them."""
    sizes: dict[tuple, list[CaseRecord]] = defaultdict(list)
    for r in records:
        sizes[(*rivals(r), r.env, r.machine)].append(r)
    return [sorted(here, key=lambda r: r.median_s or math.inf) for here in sizes.values()]


def together(cases: Sequence[str], latest: Mapping[str, CaseRecord]) -> list[list[str]]:
    """The cases that go on or stop together, in id order: every environment's variant of one case,
    since their paired question reads only the rounds that both sides ran (a process without its
    partner is left out: one more round of one side alone buys nothing), else each alone."""
    out: dict[str, list[str]] = defaultdict(list)
    for cid in sorted(cases):
        out[base_id(cid, latest[cid].env)].append(cid)
    return list(out.values())


def process_records(res: Results) -> dict[str, list[CaseRecord]]:
    """Every case's process records from the results file's replicate lines, in round order."""
    out: dict[str, list[CaseRecord]] = defaultdict(list)
    for k, r in sorted(res.replicate_lines, key=lambda kr: kr[0]):
        out[r.id].append(replace(r, round=k if r.round is None else r.round))
    return out


class Runs(Protocol):
    """What more_rounds drives: parent.Rounds (a local or a cluster run's), which measures `cases` up to
    `processes` each, reusing the processes in `partial` (as --resume does)."""

    processes: int
    partial: dict[str, list[CaseRecord]]

    def run(self, cases: list[Case]) -> list[CaseRecord]: ...


def more_rounds(runner: Runs, plan: Sequence[Case], path: Path, writer: ResultsWriter, budget_s: float,
                planned: int | None = None, clock: Callable[[], float] | None = None,
                on_round: Callable[[int], None] = lambda n: None) -> dict[str, str]:
    """Run rounds for the open cases of `plan` until each is decided, at its maximum of rounds, or out of
    budget; returns why each case looked at stopped (also written to the file as its `stopped`). Up to
    `planned` rounds (None: as many as the runner ran already) claim no budget, and its clock starts
    after them: a case with no question (no rival, no other environment) gets them all, one whose
    questions are decided sooner stops then.
    `on_round(n)` is told before each further round how many processes it measures (the progress bar,
    which counted the first rounds): one a case, or several for a case catching up."""
    first = runner.processes
    planned = max(first, planned or first)
    if first < 2 or (budget_s <= 0 and planned <= first):
        return {}
    # A run of several environments asks whether a change of a few per cent is there: no near-tie stop.
    several_envs = len({c.env for c in plan}) > 1
    rule = StopRule(THRESHOLD, first_round=first, max_rounds=max(planned, MAX_ROUNDS_FACTOR * planned),
                    near_tie=None if several_envs else NEAR_TIE)
    budget = Budget(budget_s) if clock is None else Budget(budget_s, clock)
    by_id = {c.id: c for c in plan}
    stopped: dict[str, str] = {}
    spread: set[str] = set()  # the cases given their process for spread (crowded), once each
    now = clock or time.time
    rounds = first
    while True:
        res = load_results(path)  # once a round: what the last round added
        latest = res.latest()
        ours = [r for r in latest.values() if r.id in by_id]
        asked = questions(ours, list(res.header.environments), res.reading)
        # Per group not yet stopped: its cases, the estimates of their questions, what a round of it
        # costs (nothing within the planned rounds).
        # A case stopped as decided is looked at again: a rival's point that moved since may have opened
        # a question it never answered (JAX's processes falling into another mode: two rivals ×1.8 apart at
        # its look, ×2.5 later).
        live = [r.id for r in ours if r.status == "ok" and r.samples_s and stopped.get(r.id, DECIDED) == DECIDED]
        groups = [(g, [e for cid in g for _, e in asked.get(cid, [])],
                   sum(next_round(latest[cid]) * catch_up(latest[cid], rounds) for cid in g)
                   if rounds >= planned else 0.0)
                  for g in together(live, latest)]
        # What each group would do, were the budget no object; then which of those going on it buys (spend).
        free = Budget(math.inf)
        wants: list[tuple[list[str], list[LogRatio], float]] = []
        alone: set[int] = set()  # wants whose round serves without a rival's (a spell covered them)
        reopened: set[int] = set()  # wants decided before, whose question opened again
        going: list[Case] = []
        behind: list[Case] = []  # placed before the planned rounds ran out, and open again: caught up to them
        for group, found, cost in groups:
            if any(res.reading.covered(latest[cid]) for cid in group):
                # Every process of a case ran in a slow spell: no number of it stands yet, whatever
                # its questions say. A round more, while the rounds and the budget allow.
                if rounds < rule.max_rounds:
                    alone.add(len(wants))
                    wants.append((group, found, cost))
                else:
                    stopped.update(dict.fromkeys(group, MAX_ROUNDS))
                continue
            if not found:  # nothing asked of it: the planned rounds, no more
                going += [by_id[cid] for cid in group] if rounds < planned else []
                continue
            if any(cid in stopped for cid in group):
                # Decided before: it goes on only for a question opened since, while rounds and budget allow;
                # one placed before the plan's processes ran out gets them first, as every open case does,
                # without budget (two `make bench` runs left 2× pairs open at two processes: placed at their
                # first look, and open again when later rounds moved the run's reading of them).
                if all(rule.answered(e) for e in found):
                    continue
                if rounds >= planned and any((latest[cid].n_processes or 0) < planned for cid in group):
                    behind += [by_id[cid] for cid in group]
                    for cid in group:
                        stopped.pop(cid)
                elif rounds < rule.max_rounds:
                    reopened.add(len(wants))
                    wants.append((group, found, cost))
                continue
            step = rule.step(found, rounds, free, cost)
            if step.go_on:
                wants.append((group, found, cost))
            else:
                stopped.update(dict.fromkeys(group, step.reason))
        prior = res.reading.pairing.prior if res.reading.pairing is not None else None
        bought = spend(rule, rounds, wants, alone, asked, leaders(ours), budget, prior,
                       wide=WIDE_RESERVE * budget_s)
        for i, (group, _, _) in enumerate(wants):
            if i in bought:
                going += [by_id[cid] for cid in group]
                for cid in group if i in reopened else ():
                    stopped.pop(cid)
            elif i not in reopened:  # one decided before stays as it was, and the end says if it is open
                stopped.update(dict.fromkeys(group, BUDGET))
        budget.settle()
        if behind:
            on_round(len(behind))
            one_more(runner, behind, process_records(res))
            if not going:
                continue  # looked at again with the processes they caught up
        if not going:
            # Last, one more process of each case whose processes all ended within SPREAD_S of each other
            # (the cases refinement added too: a refined size ran its two back to back), once, where it can
            # come GAP_S after its last; its questions are then looked at again (one it reopens goes on, as
            # above). A case whose last process is more recent waits for the others' turn; one that is still
            # too recent then (a run shorter than GAP_S) gets none: it would share their state.
            procs = process_records(res)
            measured = [r.id for r in latest.values() if r.status == "ok" and r.samples_s]
            crowd = set(crowded(procs, measured)) - spread
            due = [g for g in together(measured, latest)
                   if any(c in crowd for c in g) and now() - last_end(procs, g) >= GAP_S]
            if not due:
                break
            spread.update(cid for g in due for cid in g)
            on_round(sum(len(g) for g in due))
            one_more(runner, [by_id.get(cid) or latest[cid].to_case() for g in due for cid in g], procs)
            continue
        runner.processes, runner.partial = rounds + 1, process_records(res)
        on_round(sum(rounds + 1 - max(first, latest[c.id].n_processes or 1) for c in going))
        runner.run(going)
        rounds += 1
        if rounds == planned:  # the planned rounds ran: the budget's clock counts from here
            budget.restart()
    # A case decided once whose question the last look found open again could not go on: it ends open.
    for group, found, _ in groups:
        if any(stopped.get(cid) == DECIDED for cid in group) and not all(rule.answered(e) for e in found):
            stopped.update(dict.fromkeys(group, MAX_ROUNDS if rounds >= rule.max_rounds else BUDGET))
    for cid, why in sorted(stopped.items()):  # `latest` was read after the last round
        writer.append(replace(latest[cid], stopped=why))
    return stopped


def leaders(records: Sequence[CaseRecord]) -> set[str]:
    """The cases fastest at their size by their medians (by_size): whose questions name the answer's winner."""
    return {ranked[0].id for ranked in by_size([r for r in records if r.status == "ok" and r.samples_s])}


def spend(rule: StopRule, rounds: int, wants: Sequence[tuple[Sequence[str], Sequence[LogRatio], float]],
          alone: set[int], asked: Mapping[str, Sequence[tuple[str, LogRatio]]], lead: set[str], budget: Budget,
          spread: VariancePrior | None = None, wide: float = 0.0) -> set[int]:
    """Which of the groups that would go on (`wants`: their case ids, their questions' estimates, what a
    round of them costs) a round is bought for, within `budget`: an open question at a time, both its
    sides or neither, for a process whose rival ran in another round pairs with nothing. First the questions
    the answer's claims rest on (a case fastest at its size, `lead`, against each other there; a case's
    environments) and the rounds of a case a spell covered (`alone`), then those between two others
    (LOPSIDED), then a group's round alone (its rivals go on no more), and after all of them any that
    more rounds than the rule has left would not decide; within each, the fewest rounds to decide it
    (`to_decide`, the unpaired projected with the run's paired `spread`) times their cost. Bought a case
    at a time, each ranked by its hardest question, a round went to one side of a pair and not the other:
    beside the neighbour JAX's jitted FFT of 1000 points got a fourth and PyTorch's eager one, ×1.44 ahead
    of it, did not, and the run ended with the pair unpaired and the size without a winner. Free rounds
    (within the plan's, cost 0) are never refused; a question whose sides are LOPSIDED× apart or more may
    overdraw the budget by `wide` seconds (WIDE_RESERVE)."""
    unit = {cid: i for i, (group, _, _) in enumerate(wants) for cid in group}
    left = rule.max_rounds - rounds
    options: list[tuple[tuple[bool, int, float, str], frozenset[int], float]] = []

    def offer(need: float, tier: int, units: frozenset[int], beyond: float = 0.0) -> None:
        cost = sum(wants[k][2] for k in units)
        first = min(cid for k in units for cid in wants[k][0])
        options.append(((need > left, tier, need * cost if cost > 0 else 0.0, first), units, beyond))

    for i, (group, found, _) in enumerate(wants):
        paired = False
        for cid in group:
            for other, e in asked.get(cid, ()):
                j = unit.get(other)
                if j is None or rule.answered(e):
                    continue
                main = j == i or cid in lead or other in lead
                offer(to_decide(rule, [e], rounds, spread), 0 if main else 1, frozenset({i, j}),
                      wide if abs(e.value) >= math.log(LOPSIDED) else 0.0)
                paired = True
        if i in alone or not paired:
            need = to_decide(rule, found, rounds, spread)
            offer(max(need, 1.0) if i in alone else need, 0 if i in alone else 2, frozenset({i}))
    bought: set[int] = set()
    for _, units, beyond in sorted(options, key=lambda o: o[0]):
        new = units - bought
        cost = sum(wants[k][2] for k in new)
        if new and (cost <= 0 or budget.claim(cost, beyond)):
            bought |= new
    return bought


def to_decide(rule: StopRule, found: Sequence[LogRatio], rounds: int, spread: VariancePrior | None = None) -> float:
    """About how many more rounds a group's questions (`found`) need to be decided: which open question a
    budget too small for all of them is spent on first (spend). A question that no two kept rounds pair yet
    (its error infinite: `estimate`) counts one round, the next that may pair it, and with the run's paired
    `spread` (Pairing.prior) the rounds it would then need, were it paired in bracket.MIN_RIVAL_ROUNDS
    rounds that spread as the run's pairs do: a pair unpaired at ×1.44 one round, one at ×1.03 dozens.
    Counted as one round whatever its point, each unpaired near tie of a noisy run was bought a round
    before the pairs a round would decide. Ranked last instead, such a pair waited for every other:
    beside the neighbour, NumPy's and Numba's adds of 1000 floats (0.54 and 0.73 µs, each in two
    processes that a spell spared, never in one round) ended the run open with 44 cases at `budget`.
    The paired ones count the degrees of freedom they gain a round (StopRule.rounds_to_answer)."""
    paired = [e for e in found if math.isfinite(e.se)]
    need = rule.rounds_to_answer(paired, rounds)
    unpaired = [e for e in found if not math.isfinite(e.se)]
    if not unpaired:
        return need
    if spread is None or spread.df <= 0 or not math.isfinite(spread.variance):
        return max(need, 1.0)
    k = MIN_RIVAL_ROUNDS
    se = math.sqrt(point_variance(spread.variance, k))
    projected = [LogRatio(e.value, se, spread.df + k - 1) for e in unpaired]
    return max(need, 1.0 + rule.rounds_to_answer(projected, k))


def crowded(processes: Mapping[str, Sequence[CaseRecord]], ids: Sequence[str]) -> list[str]:
    """The cases among `ids` whose processes all ended within SPREAD_S of each other (`ended_at`; a case
    with a process of unknown end, from a file before it, is not one)."""
    out = []
    for cid in ids:
        procs = processes.get(cid, ())
        ends = [p.ended_at for p in procs if p.ended_at is not None]
        if len(procs) >= 2 and len(ends) == len(procs) and max(ends) - min(ends) < SPREAD_S:
            out.append(cid)
    return out


def last_end(processes: Mapping[str, Sequence[CaseRecord]], group: Sequence[str]) -> float:
    """When the last process of the cases of `group` ended (`ended_at`)."""
    return max((p.ended_at or 0.0) for cid in group for p in processes.get(cid, ()))


def one_more(runner: Runs, cases: Sequence[Case], processes: Mapping[str, Sequence[CaseRecord]]) -> None:
    """One more process of each of `cases` (`processes`: those each has, which a round of others leaves
    as they are), in a round of the count each reaches: cases of one count, rivals and environments among
    them, take their turns in one round."""
    counts: dict[int, list[Case]] = defaultdict(list)
    for case in cases:
        counts[len(processes[case.id])].append(case)
    for n, same in sorted(counts.items()):
        runner.processes, runner.partial = n + 1, {c.id: list(processes[c.id]) for c in same}
        runner.run(same)


def catch_up(rec: CaseRecord, rounds: int) -> int:
    """The processes `rec` takes in the next round: one, or as many as bring a case that stopped early
    back to the others' count (the runner measures each case up to the round's count)."""
    return max(1, rounds + 1 - (rec.n_processes or 1))


def next_round(rec: CaseRecord) -> float:
    """What one more process of `rec` costs: its processes' mean wall time (start-up included)."""
    return (rec.wall_s or 0.0) / max(1, rec.n_processes or 1)
