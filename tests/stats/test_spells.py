"""A slow spell of the host decides nothing (issue 41): rivals measured back to back on a fake clock
whose host runs slow for a stretch, or beside a neighbour that takes a core; the reference and the
threads' wait beside each sample see it, and the run's reading sets it aside."""

import random
import threading
from dataclasses import replace

import pytest

from arraybench.core.case import Case
from arraybench.execution.parent import LOCKSTEP, finished, merge_processes
from arraybench.execution.protocol import PausedReply
from arraybench.measure.timing import Timer, TimerConfig, Turn
from arraybench.results.reading import read
from arraybench.stats import bracket
from arraybench.stats.spells import SPELL_FACTOR, sift, window_level
from arraybench.workloads import blank_record

# spell_wait=0: these processes stop at their rule in a spell, as a spell longer than the wait leaves them
# (measure/test_hostspeed.py tests the wait itself): the reading of what a spell covered is tested here.
CFG = TimerConfig(warmup_time=0.0, min_warmup_calls=1, min_sample_time=2**-10, overhead_factor=0,
                  min_time=2**-5, min_samples=8, target_half_width=0.01, max_time=2**-3, spell_wait=0.0)
REF_S = 1e-5  # the host reference kernel at full speed


class Host:
    """A fake clock and the host's speed: within `spells` (start, end) it runs `slowdown`× slow, and so
    does everything timed then, the reference kernel included. Within `neighbour` (start, end) a
    neighbour holds one of two cores: the reference (one thread, on the free core) runs at full speed,
    a 2-thread kernel at `hit`× its time (each framework's own), and its threads wait for a CPU 70 %
    of the time (`waits`, cumulative, as hostspeed.ThreadWaits counts)."""

    def __init__(self, spells=(), slowdown=1.6, neighbour=()):
        self.now, self.spells, self.slowdown, self.neighbour = 0.0, spells, slowdown, neighbour
        self.waited = 0.0

    def __call__(self) -> float:
        return self.now

    def factor(self) -> float:
        return self.slowdown if any(a <= self.now < b for a, b in self.spells) else 1.0

    def crowded(self) -> bool:
        return any(a <= self.now < b for a, b in self.neighbour)

    def work(self, seconds: float, hit: float = 1.0) -> None:
        dt = seconds * self.factor() * (hit if self.crowded() else 1.0)
        self.waited += 0.7 * dt if self.crowded() else 0.0
        self.now += dt

    def reference(self) -> float:
        return REF_S * self.factor()


class Waits:
    """hostspeed.ThreadWaits on a fake Host: the wait it counted, all of it another process's."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def __call__(self) -> tuple[float, float]:
        return self.host.now, self.host.waited

    def crowded(self, before: tuple[float, float], after: tuple[float, float]) -> float:
        return (after[1] - before[1]) / (after[0] - before[0])


def turns(host: Host, costs: dict[str, float], visit: float = 2**-8, hits: dict[str, float] | None = None
          ) -> dict[str, Timer]:
    """Each of `costs` (seconds a call at full speed) sampled by its own Timer, taking turns A, B, A,
    B as run_group has one case's environments do (threads, one running at a time, on one fake
    clock), each held while a process close to it still samples (parent.finished)."""
    names = list(costs)
    said: dict[str, PausedReply] = {}
    go = {n: threading.Event() for n in names}
    verdict: dict[str, bool] = {}
    live = list(names)
    timings = {}

    def pause_of(name):
        def pause(turn: Turn) -> bool:
            said[name] = PausedReply(turn.done, turn.median_s)
            i = live.index(name)
            nxt = live[(i + 1) % len(live)]
            go[name].clear()
            if nxt != name:
                go[nxt].set()
                go[name].wait()
            others = [said[n] for n in live if n != name and n in said]
            verdict[name] = not finished(said[name], others)
            if not verdict[name]:
                live.remove(name)
            return verdict[name]
        return pause

    def run(name):
        go[name].wait()
        call = lambda: host.work(costs[name], (hits or {}).get(name, 1.0))  # noqa: E731
        timings[name] = Timer(call, (), config=CFG, clock=host, reference=host.reference, pause=pause_of(name),
                              visit_time=visit, waits=Waits(host)).run()
        if live:
            go[live[0]].set()

    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    for t in threads:
        t.start()
    go[names[0]].set()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    return timings


def back_to_back(host: Host, costs: dict[str, float], hits: dict[str, float]) -> dict[str, Timer]:
    """Each of `costs` sampled by its own Timer in one stretch, one after the other (Rounds.order's
    rivals of one size), on one fake clock."""
    out = {}
    for name, cost in costs.items():
        hit = hits.get(name, 1.0)
        out[name] = Timer(lambda c=cost, h=hit: host.work(c, h), (), config=CFG, clock=host,
                          reference=host.reference, waits=Waits(host)).run()
    return out


def record(name: str, cost: float, timing_by_round: list) -> object:
    """A case record of `name` from its processes' Timings, one per round, as merge_processes makes it."""
    case = Case("w", (("n", 1000),), name, "eager", "float32", 2)
    procs = []
    for k, t in enumerate(timing_by_round):
        procs.append(replace(blank_record(case, "ok"), samples_s=t.measurement.samples, host_ref_s=t.host_ref_s,
                             cpu_wait=t.cpu_wait,
                             median_s=t.measurement.median, loops=t.measurement.loops, round=k, visits=t.visits,
                             machine="vm"))
    return merge_processes(procs)


def run_of(rounds: int, spell_round: int | None, spell: tuple[float, float], neighbour: bool = False) -> list:
    """Two rivals (a: 1 ms, b: 1.1 ms a call) measured back to back over `rounds` rounds; in
    `spell_round` the host runs 1.6× slow from `spell[0]` to `spell[1]` seconds into the round, or
    (`neighbour`) a neighbour takes a core then, which slows a 6× and b 1.9× (PyTorch's and JAX's
    2-thread matmul beside one on the VM)."""
    by_round = {"a": [], "b": []}
    for k in range(rounds):
        when = [spell] if k == spell_round else []
        host = Host(spells=[] if neighbour else when, neighbour=when if neighbour else [])
        got = back_to_back(host, {"a": 1e-3, "b": 1.1e-3}, hits={"a": 6.0, "b": 1.9})
        for n in by_round:
            by_round[n].append(got[n])
    return [record("numpy", 1e-3, by_round["a"]), record("torch", 1.1e-3, by_round["b"])]


# On a quiet host a's stretch of sampling (first call, warm-up, 32 samples) is the round's first 34 ms,
# b's the next 34 ms (the fake clock is exact).
HALF_OF_A = (0.018, 1.0)  # from half way through a's samples on
ALL_OF_B = (0.034, 1.0)  # b's whole stretch, none of a's
ROUND = (0.0, 1.0)  # both whole


def test_a_spell_seen_by_the_reference_is_set_aside_and_moves_nothing():
    quiet, _ = read(run_of(3, None, ROUND), "run", None)
    spelled, reading = read(run_of(3, 1, HALF_OF_A), "run", None)
    for q, s in zip(quiet, spelled, strict=True):
        assert s.median_s == pytest.approx(q.median_s, rel=1e-9)  # the same point: the spell set aside
    assert reading.spells.in_spell > 0


@pytest.mark.parametrize("spell", [HALF_OF_A, ALL_OF_B, ROUND])
def test_a_neighbour_on_another_core_is_seen_by_the_threads_wait_and_decides_nothing(spell):
    """The reference never sees it (it runs on the free core). The threads' wait does: the samples it
    reached are set aside; a process it covered whole is set aside, its round with it, unless every
    process of its case was (then nothing is left to prefer, and a round of both goes)."""
    quiet, _ = read(run_of(3, None, ROUND), "run", None)
    crowded, reading = read(run_of(3, 1, spell, neighbour=True), "run", None)
    for q, c in zip(quiet, crowded, strict=True):
        assert c.median_s == pytest.approx(q.median_s, rel=1e-9)
    a, b = (reading.point(r) for r in crowded)
    # Two kept rounds where a spell covered one: too few to order them paired (bracket.MIN_RIVAL_ROUNDS), but
    # what they read is the quiet run's ratio.
    assert bracket.side(a, b) == -1 and bracket.paired(a, b, least=2).ratio == pytest.approx(1.1, rel=1e-6)
    if spell is ALL_OF_B:
        assert [k for k, _ in b.rounds] == [0, 2] and [k for k, _ in a.rounds] == [0, 1, 2]
        # Its covered process is read at what it took (bracket.ahead_though_slowed): slower than it runs.
        ((k, x),) = b.slowed
        assert k == 1 and x > max(v for _, v in b.rounds) and not a.slowed
    if spell is ROUND:
        assert reading.spells.covered == 2 and [k for k, _ in a.rounds] == [0, 2]
        assert [k for k, _ in a.slowed] == [k for k, _ in b.slowed] == [1]


def test_rivals_of_one_run_are_ordered_from_their_paired_rounds_where_the_host_drifts():
    """Round 1 runs 1.6× slow throughout (a host slower for a while, for both alike): no spell within
    it, so nothing is set aside; each case's own interval is far wider than their 10 % gap, and the
    paired rounds order them."""
    records, reading = read(run_of(3, 1, ROUND), "run", None)
    a, b = (reading.point(r) for r in records)
    assert reading.spells.in_spell == 0 and a.high > b.low
    assert bracket.side(a, b) == -1 and bracket.side(b, a) == 1
    assert bracket.paired(a, b).ratio == pytest.approx(1.1, rel=1e-6)


def test_processes_of_one_case_in_two_environments_take_turns_and_hold_each_other():
    """turns(): one case's environments alternate, and the one whose rule is met first samples on
    while the other, close to it, still does: both stop together, over the same stretch of time."""
    got = turns(Host(), {"old": 1e-3, "new": 1.02e-3})
    assert got["old"].visits == got["new"].visits >= 2


def test_two_points_of_two_runs_are_never_paired():
    records, reading = read(run_of(3, None, ROUND), "one", None)
    other, elsewhere = read(run_of(3, None, ROUND), "two", None)
    assert bracket.paired(reading.point(records[0]), elsewhere.point(other[1])) is None


def test_a_process_takes_turns_while_a_close_rival_still_samples():
    done, busy = PausedReply(True, 1e-3), PausedReply(False, 1e-3 * LOCKSTEP * 0.9)
    far = PausedReply(False, 1e-3 * LOCKSTEP * 1.5)
    assert not finished(done, [busy]) and finished(done, [far]) and finished(done, [])
    assert not finished(busy, []) and not finished(done, [PausedReply(False, None)])


@pytest.mark.parametrize(("in_spell", "samples", "set_aside"), [
    (0, 10, 0), (3, 10, 3), (7, 10, 7), (8, 10, 0), (1, 2, 1), (2, 2, 0), (1, 1, 0),
])
def test_a_process_keeps_all_its_samples_where_too_few_are_clean(in_spell, samples, set_aside):
    refs = [REF_S * 1.6] * in_spell + [REF_S] * (samples - in_spell)
    got = sift([1.0] * samples, refs, REF_S)
    assert samples - len(got.samples) == set_aside
    assert got.covered == (in_spell > 0 and set_aside == 0)


def test_a_windows_level_is_the_host_at_its_best_and_a_spell_is_more_than_20_percent_over_it():
    rng = random.Random(0)
    refs = [REF_S * (1 + 0.03 * rng.random()) for _ in range(90)] + [REF_S * 1.5] * 10
    level = window_level(refs)
    assert level == pytest.approx(REF_S, rel=0.01)
    assert sift([1.0] * 100, refs, level).in_spell == 10
    assert SPELL_FACTOR * level < REF_S * 1.5 and window_level([]) is None


def test_a_report_view_carries_the_rounds_a_spell_covered_at_what_they_took(tmp_path):
    """What a report's claims read (report/data.py): the covered round of b, none of a."""
    from arraybench.report.data import ReportData
    from arraybench.results import load_results
    from tests.comparison.test_compare import results_file

    path = results_file(tmp_path / "r.jsonl", run_of(3, 1, ALL_OF_B, neighbour=True))
    views = {v.backend: v for v in ReportData.from_results([load_results(path)]).records}
    assert [k for k, _ in views["torch"].slowed] == [1] and views["numpy"].slowed == ()
    assert bracket.point(views["torch"]).slowed == views["torch"].slowed


def alone(cost: float, spell: bool = False, neighbour: bool = False, hit: float = 1.0) -> object:
    """One process of a `cost`-second call on a host of its own: in a spell the reference sees (1.6×) or
    beside a neighbour that slows it `hit`× and keeps its threads waiting, throughout; or neither."""
    host = Host(spells=[(0.0, 1e9)] if spell else [], neighbour=[(0.0, 1e9)] if neighbour else [])
    return Timer(lambda: host.work(cost, hit), (), config=CFG, clock=host, reference=host.reference,
                 waits=Waits(host)).run()


def test_a_case_a_spell_the_reference_saw_covered_everywhere_is_behind_beyond_what_such_a_spell_did():
    """Three rounds of four rivals. numpy (1 ms) ran in a spell the reference saw in round 1: 1.6× its
    kept rounds, what such a spell did in this run (`host_reach`). torch (1.1 ms) ran beside a neighbour
    in round 0 that stalled it 6× (`spell_reach`). jax (2.5 ms) ran in a spell the reference saw in every
    round, and tensorflow (0.5 ms) beside the neighbour in every round: each has only bounds (4 ms, 3 ms).
    Behind a rival only beyond its reach: jax, 4× behind numpy by its bounds, is behind it, for a spell the
    reference saw slowed no case more than 1.6×; tensorflow, whose stalled threads a spell may slow as much
    as torch's, is behind nothing within 6×."""
    everywhere = range(3)
    plan = {"numpy": (1e-3, {1: "spell"}), "torch": (1.1e-3, {0: "neighbour"}),
            "jax": (2.5e-3, dict.fromkeys(everywhere, "spell")),
            "tensorflow": (0.5e-3, dict.fromkeys(everywhere, "neighbour"))}
    records = [record(name, cost, [alone(cost, spell=hits.get(k) == "spell", neighbour=hits.get(k) == "neighbour",
                                         hit=6.0) for k in range(3)])
               for name, (cost, hits) in plan.items()]
    records, reading = read(records, "run", None)
    numpy, torch, jax, tf = records
    assert reading.host_reach == pytest.approx(1.6) and reading.spell_reach == pytest.approx(6.0)
    assert reading.covered(jax) and reading.reach(jax) == reading.host_reach
    # How far its covered rounds may have been slowed, each (bracket.ahead_though_slowed): as far as its reach.
    assert reading.spell_of(jax) == reading.point(jax).spell == reading.host_reach
    assert reading.spell_of(numpy) == reading.host_reach and reading.spell_of(torch) == reading.spell_reach
    assert reading.covered(tf) and reading.reach(tf) == reading.spell_reach
    assert bracket.side(reading.point(numpy), reading.point(jax)) == -1
    assert bracket.side(reading.point(jax), reading.point(numpy)) == 1
    first, stalled = reading.point(numpy), reading.point(tf)
    assert bracket.side(first, stalled) == bracket.side(stalled, first) == 0
