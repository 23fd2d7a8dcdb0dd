"""More rounds where the question is open (execution/more_rounds.py): stub processes, a fake clock."""

import math
import random
from dataclasses import replace

import pytest

from arraybench.core.case import Case
from arraybench.execution.more_rounds import THRESHOLD, more_rounds, to_decide
from arraybench.execution.parent import merge_processes
from arraybench.execution.session import further_budget
from arraybench.results import ResultsWriter, load_results
from arraybench.results.record import ProcessRecord
from arraybench.stats import bracket
from arraybench.stats.sequential import StopRule
from arraybench.stats.student import LogRatio
from arraybench.workloads import blank_record

HEADER = {"schema": 3, "run_id": "r1", "started": "2026-01-01T00:00:00Z", "settings": {}, "environment": {},
          "environments": {"old": {}, "new": {}}}


class StubRunner:
    """Measures each case's next process from its `true` time, a round drift shared by every case of
    the round, and a process's own noise; writes the process and the case as parent.Runner does.
    Each process costs `cost` seconds of the fake clock."""

    def __init__(self, writer, true, clock, noise, cost=1.0, processes=2):
        self.writer, self.true, self.clock, self.noise, self.cost = writer, true, clock, noise, cost
        self.processes, self.partial = processes, {}
        self.rng = random.Random(1)
        self.calls = []

    def process(self, case, k, drift):
        t = self.true[case.id] * drift * self.rng.lognormvariate(0, self.noise[case.id])
        self.clock.advance(self.cost)
        return replace(blank_record(case, "ok"), samples_s=tuple(t * f for f in (0.99, 1.0, 1.01)), median_s=t,
                       loops=1, round=k, wall_s=self.cost)

    def run(self, cases):
        self.calls.append((self.processes, sorted(c.id for c in cases)))
        for k in range(self.processes):
            drift = self.rng.uniform(0.85, 1.15)
            for case in cases:
                done = self.partial.setdefault(case.id, [])
                if len(done) > k:
                    continue
                rec = self.process(case, k, drift)
                self.writer.append_replicate(rec, k)
                done.append(rec)
                if k == self.processes - 1:
                    self.writer.append(merge_processes(done))
        return []


def measured(tmp_path, clock, plan, true, noise, budget_s):
    """The plan's 2 rounds on stub processes, then more_rounds within `budget_s`: (runner, why each
    case stopped, the latest records)."""
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, HEADER)
    runner = StubRunner(writer, true, clock, noise)
    runner.run(plan)
    stopped = more_rounds(runner, plan, path, writer, budget_s=budget_s, clock=clock)
    writer.close()
    return runner, stopped, load_results(path).latest()


def planned_run(tmp_path, clock, plan, true, noise=0.01, name="results.jsonl"):
    """The plan's 2 rounds on stub processes, then more_rounds with no budget and 3 planned rounds: (runner,
    why each case stopped, the latest records)."""
    path = tmp_path / name
    writer = ResultsWriter(path, {**HEADER, "environments": None})
    runner = StubRunner(writer, true, clock, dict.fromkeys(true, noise))
    runner.run(plan)
    stopped = more_rounds(runner, plan, path, writer, budget_s=0.0, planned=3, clock=clock)
    writer.close()
    return runner, stopped, load_results(path).latest()


def plan_of(*names):
    return [Case("elementwise_add", (("n", n),), "numpy", "eager", "float32", 1, env=env)
            for n in names for env in ("old", "new")]


def test_an_open_case_gets_rounds_until_the_budget_ends_and_a_decided_one_stops_at_once(tmp_path, fake_clock):
    plan = plan_of(1000, 2000)
    clear = {c.id for c in plan if c.params == (("n", 1000),)}
    open_ = {c.id for c in plan if c.params == (("n", 2000),)}
    # n = 1000: new is 30 % slower, quiet processes; n = 2000: the same time, processes spread 20 %.
    true = {c.id: 1e-3 * (1.3 if c.env == "new" and c.id in clear else 1.0) for c in plan}
    noise = {c.id: 0.001 if c.id in clear else 0.2 for c in plan}
    runner, stopped, latest = measured(tmp_path, fake_clock, plan, true, noise, 2.5)
    assert {stopped[c] for c in clear} == {"decided"}
    assert {stopped[c] for c in open_} == {"budget"}
    # One further round fit the 2.5 s (two processes of 1 s), a second would not.
    assert runner.calls[1:] == [(3, sorted(open_))]
    assert all(latest[c].n_processes == 3 and latest[c].stopped == "budget" for c in open_)
    assert all(latest[c].n_processes == 2 and latest[c].stopped == "decided" for c in clear)
    assert [p.round for p in latest[next(iter(open_))].replicates] == [0, 1, 2]


def test_without_budget_or_with_one_process_nothing_more_is_measured(tmp_path, fake_clock):
    plan = plan_of(1000)
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, HEADER)
    runner = StubRunner(writer, {c.id: 1e-3 for c in plan}, fake_clock, {c.id: 0.3 for c in plan})
    runner.run(plan)
    assert more_rounds(runner, plan, path, writer, budget_s=0.0, clock=fake_clock) == {}
    runner.processes = 1
    assert more_rounds(runner, plan, path, writer, budget_s=100.0, clock=fake_clock) == {}
    assert len(runner.calls) == 1


def test_the_environments_of_a_case_get_their_further_rounds_together(tmp_path, fake_clock):
    """A paired question reads only the rounds both sides ran: a budget of 3 processes buys one more
    round of one case in both environments (2 processes), never a third process of one side alone."""
    plan = plan_of(1000, 2000)
    _, _, latest = measured(tmp_path, fake_clock, plan, {c.id: 1e-3 for c in plan}, {c.id: 0.2 for c in plan}, 3.0)
    rounds = {c.id: [p.round for p in latest[c.id].replicates] for c in plan}
    for n in (1000, 2000):
        old, new = (rounds[c.id] for c in plan if c.params == (("n", n),))
        assert old == new  # every process has its partner
    assert sorted(len(r) for r in rounds.values()) == [2, 2, 3, 3]


def test_a_budget_too_small_for_every_open_case_goes_to_the_one_nearest_a_decision(tmp_path, fake_clock):
    """Both cases are open after 2 rounds; one more round can decide the quieter one (new 8 % slower,
    processes spread 3 %), not the one whose processes spread 40 %: the only round the budget buys is
    the quieter one's, whatever the order of their ids."""
    plan = plan_of(1000, 2000)
    quiet = {c.id for c in plan if c.params == (("n", 2000),)}
    true = {c.id: 1e-3 * (1.08 if c.env == "new" and c.id in quiet else 1.0) for c in plan}
    noise = {c.id: 0.03 if c.id in quiet else 0.4 for c in plan}
    runner, _, _ = measured(tmp_path, fake_clock, plan, true, noise, 2.5)
    assert runner.calls[1:] == [(3, sorted(quiet))]


def test_the_stop_rule_reads_each_case_with_the_runs_spread_as_compare_does(tmp_path, fake_clock):
    """Ten cases, 2 rounds each: alone, a case's paired estimate has 1 degree of freedom; moderated
    toward the others' spread (compare's prior) it has many more, so the rule stops where compare
    would decide instead of spending the budget there."""
    from arraybench.execution.more_rounds import questions

    plan = plan_of(*range(1000, 1010))
    true = {c.id: 1e-3 for c in plan}
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, HEADER)
    StubRunner(writer, true, fake_clock, dict.fromkeys(true, 0.01)).run(plan)
    writer.close()
    asked = questions(list(load_results(path).latest().values()), ["old", "new"])
    dfs = [e.df for found in asked.values() for _, e in found]
    assert len(dfs) == 20 and min(dfs) > 5


def test_the_planned_rounds_go_to_open_places_and_a_case_far_behind_stops_at_its_first_look(tmp_path, fake_clock):
    """One size, three rivals: numpy fastest, torch 2 % behind it (open), jax 30× behind (placed at
    once); and a lone case with no rival. With no budget, the planned third round goes to the open
    pair and the lone case, not to jax; beyond the plan, nothing."""
    rivals = [Case("elementwise_add", (("n", 1000),), b, "eager", "float32", 1) for b in ("numpy", "torch", "jax")]
    lone = Case("elementwise_add", (("n", 5000),), "numpy", "eager", "float32", 1)
    plan = [*rivals, lone]
    true = {rivals[0].id: 1e-3, rivals[1].id: 1.02e-3, rivals[2].id: 3e-2, lone.id: 2e-3}
    runner, stopped, latest = planned_run(tmp_path, fake_clock, plan, true)
    assert stopped[rivals[2].id] == "decided" and latest[rivals[2].id].n_processes == 2
    assert latest[rivals[0].id].n_processes == latest[rivals[1].id].n_processes == 3
    assert latest[lone.id].n_processes == 3 and lone.id not in stopped  # nothing asked of it: the plan's rounds
    assert runner.calls[1][0] == 3 and rivals[2].id not in runner.calls[1][1]
    assert {stopped[rivals[0].id], stopped[rivals[1].id]} == {"budget"}


def test_the_budget_is_left_whole_for_the_rounds_beyond_the_plan(tmp_path, fake_clock):
    """Two sizes, each open between its environments (processes spread 20 %). The planned third round
    of all four cases takes 4 s of the fake clock and claims no budget; its clock starts after it, so
    the 2.5 s buy a fourth round of one size (two processes), as they would with no planned round. When
    the clock counted the planned round, it ate the budget and left every case at three."""
    plan = plan_of(1000, 2000)
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, HEADER)
    runner = StubRunner(writer, {c.id: 1e-3 for c in plan}, fake_clock, {c.id: 0.2 for c in plan})
    runner.run(plan)
    stopped = more_rounds(runner, plan, path, writer, budget_s=2.5, planned=3, clock=fake_clock)
    writer.close()
    assert [n for n, _ in runner.calls[1:]] == [3, 4]
    assert runner.calls[1][1] == sorted(c.id for c in plan)  # the planned round: every open case
    assert len(runner.calls[2][1]) == 2  # beyond it: one size, both environments, 2 of the 2.5 s
    assert set(stopped.values()) == {"budget"}


class DriftingRunner(StubRunner):
    """A StubRunner whose cases in `later` run at that time from round 2 on (a framework's processes
    landing in another mode)."""

    def __init__(self, *args, later, **kwargs):
        super().__init__(*args, **kwargs)
        self.later = later

    def process(self, case, k, drift):
        if k >= 2 and case.id in self.later:
            self.true = {**self.true, case.id: self.later[case.id]}
        return super().process(case, k, drift)


def test_a_case_decided_early_goes_on_when_a_rival_that_moved_opens_a_question(tmp_path, fake_clock):
    """numpy fastest; torch 3× behind it, placed at the first look; jax 1.5× from torch then (no question
    of theirs) and open against numpy, and from round 2 twice as fast as numpy: jax is the fastest now,
    6× ahead of torch, a question torch never answered. torch is looked at again and measured in the
    rounds that follow, brought up to the others' count."""
    numpy, torch, jax = (Case("elementwise_add", (("n", 1000),), b, "eager", "float32", 1)
                         for b in ("numpy", "torch", "jax"))
    plan = [numpy, torch, jax]
    true = {numpy.id: 1e-3, torch.id: 3e-3, jax.id: 2e-3}
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, {**HEADER, "environments": None})
    runner = DriftingRunner(writer, true, fake_clock, {numpy.id: 0.01, torch.id: 0.01, jax.id: 0.2},
                            later={jax.id: 0.5e-3})
    runner.run(plan)
    grown: list[int] = []
    more_rounds(runner, plan, path, writer, budget_s=40.0, clock=fake_clock, on_round=grown.append)
    writer.close()
    latest = load_results(path).latest()
    assert runner.calls[1] == (3, sorted([numpy.id, jax.id]))  # torch placed at its first look
    # The progress bar's count ends where the processes did: torch's catching up counts each it took.
    assert 2 * len(plan) + sum(grown) == sum(latest[c.id].n_processes for c in plan)
    back = next(k for k, ids in runner.calls[2:] if torch.id in ids)
    assert latest[torch.id].n_processes >= back
    assert [p.round for p in latest[torch.id].replicates] == list(range(latest[torch.id].n_processes))


class StampingRunner(DriftingRunner):
    """A DriftingRunner whose processes say when they ended (`ended_at`), by the fake clock, as
    parent.Rounds's do."""

    def process(self, case, k, drift):
        rec = super().process(case, k, drift)
        return replace(rec, ended_at=self.clock())


def rivals_of(*times):
    return [Case("elementwise_add", (("n", 1000),), b, "eager", "float32", 1)
            for b, _ in zip(("numpy", "torch", "jax"), times, strict=False)]


def stamped(tmp_path, clock, plan, true, cost, budget_s=5.0, later=None, idle=40.0, recent=()):
    """The plan's 2 rounds on StampingRunner, `idle` seconds of the run's other work, the `recent` cases'
    2 rounds, then more_rounds: (runner, why each case stopped, the latest records)."""
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, {**HEADER, "environments": None})
    # `later`: from round 2 on, these cases run at another time (a state of the host that changed).
    runner = StampingRunner(writer, true, clock, dict.fromkeys(true, 0.01), cost=cost, later=later or {})
    runner.run(plan)
    clock.advance(idle)
    if recent:
        runner.run(list(recent))
    stopped = more_rounds(runner, [*plan, *recent], path, writer, budget_s=budget_s, clock=clock)
    writer.close()
    return runner, stopped, load_results(path).latest()


def test_a_case_whose_processes_ran_close_in_time_gets_one_more_after_the_rounds(tmp_path, fake_clock):
    """Three rivals far apart, each placed at its first look; their two processes ended 3 s apart (1 s a
    process), 40 s before the rounds ended: each gets a third, once, in a round of its own, and is still
    decided."""
    plan = rivals_of(1, 3, 30)
    true = dict(zip((c.id for c in plan), (1e-3, 3e-3, 3e-2), strict=True))
    runner, stopped, latest = stamped(tmp_path, fake_clock, plan, true, cost=1.0)
    assert runner.calls[1:] == [(3, sorted(true))]
    assert all(latest[c.id].n_processes == 3 and stopped[c.id] == "decided" for c in plan)
    for c in plan:
        ends = [p.ended_at for p in latest[c.id].replicates]
        assert len(ends) == 3 and ends[2] - ends[1] >= 40.0


def test_a_crowded_case_too_recent_to_be_spread_gets_none(tmp_path, fake_clock):
    """The rivals of one size ran 40 s before the rounds ended, those of another just before: only the
    first get a process more; the second's would share the state of their last."""
    plan = rivals_of(1, 3, 30)
    recent = [replace(c, params=(("n", 2000),)) for c in plan]
    true = dict(zip((c.id for c in [*plan, *recent]), (1e-3, 3e-3, 3e-2) * 2, strict=True))
    runner, _, latest = stamped(tmp_path, fake_clock, plan, true, cost=1.0, recent=recent)
    assert runner.calls[2:] == [(3, sorted(c.id for c in plan))]
    assert [latest[c.id].n_processes for c in plan + recent] == [3, 3, 3, 2, 2, 2]


def test_a_case_whose_processes_ran_far_apart_gets_none(tmp_path, fake_clock):
    """The same rivals at 30 s a process: a round of three takes 90 s, so each case's two processes ended
    90 s apart, more than more_rounds.SPREAD_S: nothing more."""
    plan = rivals_of(1, 3, 30)
    true = dict(zip((c.id for c in plan), (1e-3, 3e-3, 3e-2), strict=True))
    runner, stopped, latest = stamped(tmp_path, fake_clock, plan, true, cost=30.0)
    assert runner.calls[1:] == []
    assert all(latest[c.id].n_processes == 2 for c in plan)


def test_a_process_in_another_state_reopens_the_question_it_had_answered(tmp_path, fake_clock):
    """numpy 1 ms, jax 2.5 ms: jax placed second at the first look, both processes close in time. Its
    third process, after the rounds, runs at 0.8 ms (the host's state changed): its processes now
    disagree, its place is open again, and it goes on within the budget with numpy."""
    numpy, jax = plan = [Case("elementwise_add", (("n", 1000),), b, "eager", "float32", 1) for b in ("numpy", "jax")]
    true = {numpy.id: 1e-3, jax.id: 2.5e-3}
    runner, stopped, latest = stamped(tmp_path, fake_clock, plan, true, cost=1.0, budget_s=20.0,
                                      later={jax.id: 0.8e-3})
    assert runner.calls[1] == (3, sorted(true))  # the process for spread
    assert len(runner.calls) > 2 and jax.id in runner.calls[2][1]  # then more rounds: its question reopened
    assert latest[jax.id].n_processes > 3


class StallingRunner(StubRunner):
    """A StubRunner whose processes in `stalls` ((case id, round) pairs) stall beside a neighbour: 100×
    slower, their threads waiting for a CPU throughout (`cpu_wait`), so a spell covers them."""

    def __init__(self, *args, stalls, **kwargs):
        super().__init__(*args, **kwargs)
        self.stalls = stalls

    def process(self, case, k, drift):
        rec = super().process(case, k, drift)
        if (case.id, k) not in self.stalls:
            return replace(rec, cpu_wait=(0.0,) * len(rec.samples_s))
        return replace(rec, samples_s=tuple(100 * t for t in rec.samples_s), median_s=100 * rec.median_s,
                       cpu_wait=(1.0,) * len(rec.samples_s))


def test_a_case_whose_process_a_spell_covered_is_not_placed_until_two_rounds_pair_it_with_its_rival(
        tmp_path, fake_clock):
    """numpy 1 ms; torch 30× behind, placed at the first look where both its processes were clean (two
    rounds: as their processes read apart place it, bracket.MIN_RIVAL_ROUNDS). Here its first stalled:
    read apart, its one clean process would place it, but the report reads two rivals of one run
    paired, or apart only once two kept rounds pair them, so it takes the planned third round."""
    numpy, torch = plan = [Case("elementwise_add", (("n", 1000),), b, "eager", "float32", 2)
                           for b in ("numpy", "torch")]
    true = {numpy.id: 1e-3, torch.id: 30e-3}
    for stalls, third in (((), False), ({(torch.id, 0)}, True)):
        path = tmp_path / f"results-{len(stalls)}.jsonl"
        writer = ResultsWriter(path, {**HEADER, "environments": None})
        runner = StallingRunner(writer, true, fake_clock, dict.fromkeys(true, 0.01), stalls=stalls)
        runner.run(plan)
        stopped = more_rounds(runner, plan, path, writer, budget_s=0.0, planned=3, clock=fake_clock)
        writer.close()
        res = load_results(path)
        rec = res.latest()[torch.id]
        assert (rec.n_processes == 3) == third and stopped[torch.id] == "decided"
        assert sorted(res.reading.rounds(rec)) == ([1, 2] if third else [0, 1])


def test_a_case_a_spell_covered_in_every_process_is_read_as_bounds_within_the_runs_spell_reach(
        tmp_path, fake_clock):
    """torch's every process stalled (100× slower, its threads waiting throughout): it has no round of its
    own, only what each process took at most (`slowed`), and the stop rule keeps its question open. A
    spell slowed numpy's first process about as much, which the run's spell reach says: torch is behind a
    rival only beyond it. 3000× behind numpy by its stalled numbers, it is behind numpy; against a rival
    within that reach of them, it is behind nothing."""
    numpy, torch = plan = [Case("elementwise_add", (("n", 1000),), b, "eager", "float32", 2)
                           for b in ("numpy", "torch")]
    true = {numpy.id: 1e-3, torch.id: 30e-3}
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, {**HEADER, "environments": None})
    runner = StallingRunner(writer, true, fake_clock, dict.fromkeys(true, 0.01),
                            stalls={(numpy.id, 0)} | {(torch.id, k) for k in range(12)})
    runner.run(plan)
    stopped = more_rounds(runner, plan, path, writer, budget_s=0.0, planned=3, clock=fake_clock)
    writer.close()
    res = load_results(path)
    rec, first = res.latest()[torch.id], res.latest()[numpy.id]
    assert res.reading.covered(rec) and res.reading.rounds(rec) == {}
    assert sorted(res.reading.slowed(rec)) == [0, 1, 2] and stopped[torch.id] != "decided"
    assert res.reading.spell_reach > 20 and res.reading.reach(rec) == res.reading.spell_reach
    assert bracket.side(res.reading.point(first), res.reading.point(rec)) == -1
    assert bracket.side(res.reading.point(first).times(100), res.reading.point(rec)) == 0


def test_rivals_paired_in_two_rounds_that_agree_take_the_planned_third(tmp_path, fake_clock, monkeypatch):
    """numpy 1 ms, torch 1.3× behind, each process within 0.01 % of its true time in a round's shared drift:
    their two rounds pair them tightly, and at two rounds' degrees of freedom that once placed torch and
    spared both the planned third process. A paired order rests on bracket.MIN_RIVAL_ROUNDS, as the report
    reads it (two rounds that agree by chance ordered a pair opposite ways in two identical runs), and
    read apart two processes a side are too few to place them: the third round runs."""
    from arraybench.execution import more_rounds as module

    numpy, torch = plan = [Case("elementwise_add", (("n", 1000),), b, "eager", "float32", 2)
                           for b in ("numpy", "torch")]
    true = {numpy.id: 1e-3, torch.id: 1.3e-3}
    for least, processes in ((2, 2), (3, 3)):
        monkeypatch.setattr(module, "MIN_RIVAL_ROUNDS", least)
        _, stopped, latest = planned_run(tmp_path, fake_clock, plan, true, noise=1e-4, name=f"results-{least}.jsonl")
        rec = latest[torch.id]
        assert rec.n_processes == processes and stopped[torch.id] == "decided"


def test_rivals_two_rounds_pair_stay_open_while_the_report_leaves_them_unordered(tmp_path, fake_clock, monkeypatch):
    """Two kept rounds place two rivals only where the report orders them (bracket.side): their processes
    read apart, with the run's prior, said more than the report's intervals in a make bench, which
    stopped four pairs ×1.22-1.65 apart at two processes and left them unordered. Torch 30× behind is
    placed at two processes; were the report to leave it unordered, it would take the planned third.
    (The stub's cases have no prior to read them apart with, so a pair that only the report leaves
    unordered is the report's side stubbed.)"""
    from arraybench.execution import more_rounds as module

    numpy, torch = plan = [Case("elementwise_add", (("n", 1000),), b, "eager", "float32", 2)
                           for b in ("numpy", "torch")]
    true = {numpy.id: 1e-3, torch.id: 30e-3}
    for unordered, processes in ((False, 2), (True, 3)):
        if unordered:
            monkeypatch.setattr(module, "side", lambda a, b: 0)
        _, stopped, latest = planned_run(tmp_path, fake_clock, plan, true, name=f"results-{unordered}.jsonl")
        # A third round pairs them in three: decided either way.
        assert latest[torch.id].n_processes == processes and stopped[torch.id] == "decided"


def test_a_case_placed_early_whose_question_reopens_gets_its_planned_processes_without_budget(
        tmp_path, fake_clock, monkeypatch):
    """numpy 1 ms, jax 30× behind, placed at the first look (two processes); torch 1.2 ms open against numpy,
    so the planned third round runs for those two. After it jax's question opens again (here: its estimate
    stubbed open, as a run's reading moved in two `make bench` runs). With no budget left it still gets the
    third process the plan would have given it, once; it then ends open at `budget`, as it is."""
    import math

    from arraybench.execution import more_rounds as module
    from arraybench.stats.student import LogRatio

    plan = rivals_of(1, 1.2, 30)
    numpy, torch, jax = plan
    true = {numpy.id: 1e-3, jax.id: 30e-3, torch.id: 1.2e-3}
    real, looks = module.questions, []

    def reopened(records, env_order=(), reading=None):
        out = real(records, env_order, reading)
        looks.append(len(looks))
        if len(looks) > 1:
            for cid in list(out):
                out[cid] = [(o, LogRatio(e.value, math.inf, 1) if jax.id in (cid, o) else e) for o, e in out[cid]]
        return out

    monkeypatch.setattr(module, "questions", reopened)
    runner, stopped, latest = planned_run(tmp_path, fake_clock, plan, true)
    assert latest[jax.id].n_processes == 3 and stopped[jax.id] == "budget"
    assert latest[torch.id].n_processes == 3


def test_a_decided_case_whose_question_reopens_without_budget_ends_saying_so(tmp_path, fake_clock):
    """As in the test above it: jax's third process, after the rounds, lands in another state and opens its
    place again; with no budget left it cannot go on, and its line says the budget ended it, not that its
    place was decided."""
    numpy, jax = plan = [Case("elementwise_add", (("n", 1000),), b, "eager", "float32", 1) for b in ("numpy", "jax")]
    true = {numpy.id: 1e-3, jax.id: 2.5e-3}
    runner, stopped, latest = stamped(tmp_path, fake_clock, plan, true, cost=1.0, budget_s=0.5,
                                      later={jax.id: 0.8e-3})
    assert runner.calls[1] == (3, sorted(true))  # the process for spread, then nothing
    assert len(runner.calls) == 2
    assert stopped[jax.id] == stopped[numpy.id] == "budget"
    assert latest[jax.id].stopped == "budget" and latest[jax.id].n_processes == 3


def test_a_budget_for_one_pair_goes_to_the_pair_a_spell_left_unpaired_before_a_noisy_near_tie(tmp_path, fake_clock):
    """At n = 1000 torch's first process stalled, so no two kept rounds pair it with numpy's yet; at
    n = 2000 the two are 8 % apart with processes spread 40 %, paired and far from decided. The budget buys
    one round of one size: the next round may pair the first (`to_decide` counts it one round), which
    ranked last (its error infinite) waited behind every paired question however far from decided."""
    plan = [Case("elementwise_add", (("n", n),), b, "eager", "float32", 2)
            for n in (1000, 2000) for b in ("numpy", "torch")]
    small = sorted(c.id for c in plan if c.params == (("n", 1000),))
    true = {c.id: 1e-3 * (1.08 if c.backend == "torch" else 1.0) for c in plan}
    noise = {c.id: 0.01 if c.id in small else 0.4 for c in plan}
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, {**HEADER, "environments": None})
    torch_small = next(c.id for c in plan if c.id in small and c.backend == "torch")
    runner = StallingRunner(writer, true, fake_clock, noise, stalls={(torch_small, 0)})
    runner.run(plan)
    more_rounds(runner, plan, path, writer, budget_s=2.5, clock=fake_clock)
    writer.close()
    assert runner.calls[1] == (3, small)


def test_a_small_budget_goes_to_the_pair_cheaper_to_decide_counting_the_degrees_of_freedom_rounds_add():
    """Two open questions after 4 rounds: rivals ×2 apart whose paired ratios spread widely, four more
    rounds of 1 s to decide; and rivals 10 % apart, quiet, one more round of 6 s. Projected with the t
    quantile held at 3 degrees of freedom, the wide pair looked 14 rounds away and the budget went to the
    6-s round, while JAX's and Numba's adds beside the neighbour, ×2 apart, ended the run unordered."""
    rule = StopRule(THRESHOLD, first_round=2, max_rounds=12)
    wide, quiet = LogRatio(math.log(2), 0.25, 3), LogRatio(math.log(1.1), 0.02, 3)
    assert (to_decide(rule, [wide], 4), to_decide(rule, [quiet], 4)) == (4.0, 1.0)
    assert to_decide(rule, [wide], 4) * 1.0 < to_decide(rule, [quiet], 4) * 6.0
    assert rule.rounds_to_decide([wide], 4) * 1.0 > rule.rounds_to_decide([quiet], 4) * 6.0  # as it was ranked


def test_a_round_is_bought_for_both_sides_of_a_question_or_neither():
    """Two rivals open against each other, 1 s a round each, and a budget of 1.9 s: a round of one side
    alone pairs with nothing (per case, the budget bought the first and refused the second), so neither
    is bought; at 2 s both are. A case a spell covered is bought a round alone, after them here: one round
    of it costs 2.5 s against their 2 s."""
    from arraybench.execution.more_rounds import spend
    from arraybench.stats.sequential import Budget

    rule = StopRule(THRESHOLD, first_round=2, max_rounds=12)
    e = LogRatio(math.log(1.4), math.inf, 1)
    wants = [(["a"], [e], 1.0), (["b"], [e], 1.0), (["c"], [], 2.5)]
    asked = {"a": [("b", e)], "b": [("a", e)]}
    assert spend(rule, 4, wants, {2}, asked, {"a"}, Budget(1.9, lambda: 0.0)) == set()
    assert spend(rule, 4, wants, {2}, asked, {"a"}, Budget(2.0, lambda: 0.0)) == {0, 1}
    assert spend(rule, 4, wants, {2}, asked, {"a"}, Budget(2.6, lambda: 0.0)) == {0, 1}  # the cheaper first
    assert spend(rule, 4, wants, {2}, asked, {"a"}, Budget(4.5, lambda: 0.0)) == {0, 1, 2}
    # Within the plan's rounds (cost 0) nothing is refused, whatever the budget's clock says.
    free = [(g, f, 0.0) for g, f, _ in wants]
    assert spend(rule, 2, free, {2}, asked, {"a"}, Budget(0.0, lambda: 5.0)) == {0, 1, 2}


def test_the_winners_question_is_bought_before_a_lopsided_pair_and_a_near_tie():
    """Three open questions after 4 rounds, one pair's round affordable: the fastest at a size against its
    runner-up, ×1.44 apart and unpaired (a spell set aside the rounds that would pair them); at another size
    the fastest against a rival ×1.03 behind, unpaired too; two others ×2.5 apart, paired and a round
    from a decision. Beside the neighbour the budget bought rounds for the ×1.03 tie (counted one round, as
    every unpaired question was) and half of the ×1.44 pair, and that size was left without a winner.
    Projected with the run's paired spread, the tie needs dozens of rounds and goes last; the winner's
    question goes before the lopsided pair, whose order names no winner."""
    from arraybench.execution.more_rounds import spend
    from arraybench.stats.pooling import VariancePrior
    from arraybench.stats.sequential import Budget

    rule = StopRule(THRESHOLD, first_round=2, max_rounds=12)
    spread = VariancePrior(variance=0.0016, df=1.4, cases=135)
    win, tie = LogRatio(math.log(1.44), math.inf, 1), LogRatio(math.log(1.03), math.inf, 1)
    lop = LogRatio(math.log(2.5), 0.1, 3)
    wants = [(["fast"], [win], 0.4), (["runner"], [win], 0.4), (["fast2"], [tie], 0.3), (["tied"], [tie], 0.3),
             (["x"], [lop], 0.5), (["y"], [lop], 0.5)]
    asked = {"fast": [("runner", win)], "runner": [("fast", win)], "fast2": [("tied", tie)],
             "tied": [("fast2", tie)], "x": [("y", lop)], "y": [("x", lop)]}
    lead = {"fast", "fast2"}
    assert to_decide(rule, [win], 4, spread) == 1.0
    assert to_decide(rule, [tie], 4, spread) > rule.max_rounds
    assert to_decide(rule, [tie], 4) == to_decide(rule, [win], 4) == 1.0  # no spread: one round each
    assert spend(rule, 4, wants, set(), asked, lead, Budget(1.0, lambda: 0.0), spread) == {0, 1}
    assert spend(rule, 4, wants, set(), asked, lead, Budget(1.9, lambda: 0.0), spread) == {0, 1, 4, 5}
    assert spend(rule, 4, wants, set(), asked, lead, Budget(2.5, lambda: 0.0), spread) == set(range(6))


def test_a_pair_two_times_apart_left_open_may_overdraw_the_budget_by_its_reserve():
    """The budget is spent. Two open questions: rivals ×2.4 apart that one kept round pairs (a spell covered
    the others), and rivals ×1.3 apart. Only the first may overdraw it, by the reserve, and only as far as
    the reserve goes: a report that leaves a pair 2× apart unordered says less than a glance at its table."""
    from arraybench.execution.more_rounds import spend
    from arraybench.stats.sequential import Budget

    rule = StopRule(THRESHOLD, first_round=2, max_rounds=12)
    wide, near = LogRatio(math.log(2.4), math.inf, 1), LogRatio(math.log(1.3), math.inf, 1)
    wants = [(["numba"], [wide], 0.6), (["jax"], [wide], 0.3), (["numpy"], [near], 0.2), (["torch"], [near], 0.2)]
    asked = {"numba": [("jax", wide)], "jax": [("numba", wide)], "numpy": [("torch", near)],
             "torch": [("numpy", near)]}
    def spent() -> Budget:
        now = [0.0]
        budget = Budget(10.0, lambda: now[0])
        now[0] = 10.0
        return budget

    assert spend(rule, 4, wants, set(), asked, {"numba", "numpy"}, spent()) == set()
    assert spend(rule, 4, wants, set(), asked, {"numba", "numpy"}, spent(), wide=1.0) == {0, 1}
    assert spend(rule, 4, wants, set(), asked, {"numba", "numpy"}, spent(), wide=0.8) == set()


def test_the_default_budget_pays_for_the_time_its_first_rounds_spent_waiting_out_spells():
    """Waiting out a spell (TimerConfig.spell_wait) and a further round both buy a case a round no spell
    covered: the default budget is a share of the first rounds' time, less their waiting."""
    case = Case("w", (("n", 10),), "numpy", "eager", "float64", 1)
    waited = replace(blank_record(case, "ok"), wall_s=60.0,
                     replicates=(ProcessRecord(outlasted_s=0.5), ProcessRecord(), ProcessRecord(outlasted_s=1.5)))
    alone = replace(blank_record(case, "ok"), wall_s=40.0, outlasted_s=1.0)  # one process, no replicates
    assert further_budget([waited, alone], 0.15) == pytest.approx(0.15 * 100 - 3.0)
    assert further_budget([replace(alone, wall_s=None)], 0.15) == 0.0  # never below nothing
    assert further_budget([replace(waited, replicates=())], 0.15) == pytest.approx(9.0)
