"""The Timer's calibration and stopping rules, checked exactly against a fake clock.

Costs are powers of two so the fake clock's sums are exact in floating point.
"""

import pytest

from arraybench.measure.timing import Timer, TimerConfig, Turn


def make_fn(clock, costs):
    """A function whose n-th call costs costs[n] seconds (the last value repeats)."""
    calls = []

    def fn(*args):
        cost = costs[min(len(calls), len(costs) - 1)]
        calls.append(cost)
        clock.advance(cost)
        return len(calls)

    return fn, calls


def test_first_call_is_timed_alone_and_kept_out_of_samples(fake_clock):
    fn, calls = make_fn(fake_clock, [5.0, 2**-7])
    cfg = TimerConfig(warmup_time=2**-5, min_sample_time=2**-10, min_time=2**-3, min_samples=5, max_time=1.0)
    t = Timer(fn, (), config=cfg, clock=fake_clock).run()
    assert t.first_call_s == 5.0
    assert set(t.measurement.samples) == {2**-7}
    assert t.measurement.loops == 1
    assert t.measurement.n == 16  # 1/8 s of sampling at 1/128 s a call


def test_fast_calls_are_grouped_so_a_sample_dwarfs_the_clock(fake_clock):
    fn, calls = make_fn(fake_clock, [2**-20])  # about 1 µs
    cfg = TimerConfig(warmup_time=2**-7, min_sample_time=2**-9, min_time=2**-4, min_samples=10, max_time=1.0)
    t = Timer(fn, (), config=cfg, clock=fake_clock).run()
    # The fake clock costs nothing to read, so the sample length is set by min_sample_time.
    assert t.measurement.loops == 2**11
    assert t.measurement.median == 2**-20
    assert t.measurement.n == 32  # 2^-4 s / (2^11 calls × 2^-20 s)


def test_sync_is_inside_the_timed_region_and_counts(fake_clock):
    fn, _ = make_fn(fake_clock, [2**-7])
    synced = []

    def sync(out):
        synced.append(out)
        fake_clock.advance(2**-9)  # the device finishes the work only here

    cfg = TimerConfig(warmup_time=0.0, min_warmup_calls=1, min_sample_time=2**-10, overhead_factor=0,
                      min_time=0.0, min_samples=4, max_time=1.0)
    t = Timer(fn, (), sync=sync, config=cfg, clock=fake_clock).run()
    assert t.first_call_s == 2**-7 + 2**-9
    assert t.measurement.samples == (2**-7 + 2**-9,) * 4
    assert len(synced) >= 1 + 1 + 4


def test_sync_overhead_raises_the_loop_count(fake_clock):
    fn, _ = make_fn(fake_clock, [2**-10 - 2**-16])

    def sync(out):
        fake_clock.advance(2**-16)

    cfg = TimerConfig(warmup_time=0.0, min_sample_time=2**-10, overhead_factor=2**8, min_time=0.0,
                      min_samples=3, max_time=10.0)
    t = Timer(fn, (), sync=sync, config=cfg, clock=fake_clock).run()
    # 256 × 2^-16 s of sync overhead = 2^-8 s per sample; a synced call costs 2^-10 s -> 4 loops
    assert t.overhead_s == 2**-16
    assert t.measurement.loops == 4


def test_a_long_call_gets_five_samples_past_max_time_or_stops_at_the_budget_and_says_so(fake_clock):
    fn, _ = make_fn(fake_clock, [2.0])
    cfg = TimerConfig(warmup_time=0.0, min_time=100.0, min_samples=50, max_time=1.0, budget_time=100.0)
    t = Timer(fn, (), config=cfg, clock=fake_clock).run()
    assert t.measurement.n == 5 and t.stop == "max_time"  # 2 s calls: max_time alone would stop at one
    assert t.warmup_calls == 1
    cfg = TimerConfig(warmup_time=0.0, min_time=100.0, min_samples=50, max_time=1.0, budget_time=5.0)
    short = Timer(fn, (), config=cfg, clock=fake_clock).run()
    assert short.measurement.n == 3 and short.stop == "budget"  # 3 × 2 s reach the 5 s budget


def test_a_process_whose_samples_split_into_two_modes_reports_a_mode_never_their_average():
    from arraybench.stats.measurement import Measurement

    two = Measurement((0.381, 0.820))
    assert two.bimodal and two.median == 0.381  # a tie: the faster mode
    five = Measurement((0.381, 0.385, 0.820, 0.388, 0.825))
    assert five.bimodal and five.median == 0.385
    assert any("two modes" in w for w in five.warnings)
    # The interval goes with the median it reports: the larger mode's, not every sample's.
    assert five.ci95 == (0.381, 0.388)
    assert two.ci95 == (0.381, 0.820)  # a lone sample's mode: every sample's range
    one_outlier = Measurement((0.100, 0.101, 0.102, 0.103, 0.140))
    assert not one_outlier.bimodal and one_outlier.median == 0.102
    assert not Measurement((0.100, 0.110, 0.120)).bimodal


def test_max_samples_caps_the_run(fake_clock):
    fn, _ = make_fn(fake_clock, [0.01])
    cfg = TimerConfig(warmup_time=0.0, min_sample_time=1e-3, min_time=1000.0, min_samples=10,
                      max_samples=7, max_time=1000.0)
    t = Timer(fn, (), config=cfg, clock=fake_clock).run()
    assert t.measurement.n == 7


class FakeDevice:
    """A GPU stream on the fake clock: a launch costs the host `launch` seconds and queues a
    kernel of `kernel` seconds behind the ones before; a sync waits for the queue, then `sync`."""

    def __init__(self, clock, launch, kernel, sync):
        self.clock, self.launch_s, self.kernel_s, self.sync_s = clock, launch, kernel, sync
        self.free_at = 0.0

    def fn(self):
        start = max(self.clock(), self.free_at)
        self.free_at = start + self.kernel_s
        self.clock.advance(self.launch_s)

    def sync(self, out):
        self.clock.advance(max(0.0, self.free_at - self.clock()) + self.sync_s)


def test_pipelined_timer_reports_device_time_and_the_synced_latency_apart(fake_clock):
    dev = FakeDevice(fake_clock, launch=2**-20, kernel=2**-16, sync=2**-18)
    cfg = TimerConfig(warmup_time=2**-8, min_sample_time=2**-8, overhead_factor=0, min_time=2**-5,
                      min_samples=5, max_time=1.0)
    piped = Timer(dev.fn, (), sync=dev.sync, config=cfg, clock=fake_clock, pipelined=True).run()
    # Per call: the kernel, plus one sync shared by the block's calls.
    loops = piped.measurement.loops
    assert loops > 100
    assert piped.measurement.median == pytest.approx(2**-16 + 2**-18 / loops, rel=1e-12)
    assert piped.latency_s == 2**-16 + 2**-18
    synced = Timer(dev.fn, (), sync=dev.sync, config=cfg, clock=fake_clock).run()
    assert synced.measurement.median == 2**-16 + 2**-18  # every call waits for its own sync
    assert synced.latency_s is None


def test_sampling_stops_once_the_interval_reaches_the_target(fake_clock):
    # Costs alternate ±1 %: the median's interval is within ±2 % at once, so sampling stops at
    # min_samples and min_time, far before max_time.
    fn, _ = make_fn(fake_clock, [2**-10 * 1.01, 2**-10 * 0.99] * 10_000)
    cfg = TimerConfig(warmup_time=0.0, min_sample_time=2**-11, overhead_factor=0, min_time=2**-5,
                      min_samples=10, target_half_width=0.02, max_time=10.0)
    t = Timer(fn, (), config=cfg, clock=fake_clock).run()
    assert t.stop == "target"
    assert t.measurement.n == 32  # 2^-5 s of 2^-10 s calls: min_time decides
    assert t.measurement.half_width <= 0.02


def test_a_case_that_cannot_reach_the_target_stops_at_max_time_and_says_its_width(fake_clock):
    # Costs spread ±40 %: the median's interval stays wider than ±2 % for any affordable count.
    costs = [2**-10 * (0.6 + 0.8 * ((i * 37) % 101) / 100) for i in range(10_000)]
    fn, _ = make_fn(fake_clock, costs)
    cfg = TimerConfig(warmup_time=0.0, min_sample_time=2**-11, overhead_factor=0, min_time=2**-5,
                      min_samples=10, target_half_width=0.02, max_time=2**-3)
    t = Timer(fn, (), config=cfg, clock=fake_clock).run()
    assert t.stop == "max_time"
    assert t.measurement.half_width > 0.02
    assert 2**-3 <= sum(t.measurement.samples) < 2**-3 + 2**-8


def test_page_faults_are_counted_per_timed_call(fake_clock):
    faults = [0]

    def fn():
        faults[0] += 3  # every call maps three fresh pages
        fake_clock.advance(2**-10)

    cfg = TimerConfig(warmup_time=2**-6, min_sample_time=2**-8, overhead_factor=0, min_time=2**-5,
                      min_samples=5, max_time=1.0)
    t = Timer(fn, (), config=cfg, clock=fake_clock, faults=lambda: faults[0]).run()
    assert t.measurement.loops == 4
    assert t.minor_faults_per_call == 3.0


def test_garbage_collector_is_off_while_sampling_and_restored_after(fake_clock):
    import gc

    seen = []

    def fn():
        seen.append(gc.isenabled())
        fake_clock.advance(2**-10)

    cfg = TimerConfig(warmup_time=2**-6, min_sample_time=2**-10, overhead_factor=0, min_time=2**-6,
                      min_samples=5, max_time=1.0)
    assert gc.isenabled()
    Timer(fn, (), config=cfg, clock=fake_clock).run()
    assert seen[0] is True  # the first call (compilation) runs as the program would
    assert not any(seen[1:])
    assert gc.isenabled()


class FakeAsyncFramework:
    """Outputs that know whether they are alive: each call records which earlier outputs are still
    referenced when it is dispatched, and which have been synced (their computation finished)."""

    def __init__(self, clock):
        self.clock = clock
        self.alive: set[int] = set()
        self.synced: set[int] = set()
        self.dispatches: list[tuple[int, frozenset[int], frozenset[int]]] = []  # (call, alive, synced)

    def fn(self):
        i = len(self.dispatches)
        self.dispatches.append((i, frozenset(self.alive), frozenset(self.synced)))
        self.clock.advance(2**-12)
        return FakeOutput(self, i)

    def sync(self, out):
        self.synced.add(out.index)
        self.clock.advance(2**-16)


class FakeOutput:
    def __init__(self, framework, index):
        self.framework, self.index = framework, index
        framework.alive.add(index)

    def __del__(self):
        self.framework.alive.discard(self.index)


ALIVE_CFG = TimerConfig(warmup_time=2**-8, min_sample_time=2**-8, overhead_factor=0, min_time=2**-6,
                        min_samples=3, max_time=1.0)


def test_pipelined_calls_keep_the_previous_output_until_the_next_call_is_dispatched(fake_clock):
    """As `out = f(x)` in a plain loop: a pending output dropped at once stalls JAX's next dispatch."""
    fw = FakeAsyncFramework(fake_clock)
    t = Timer(fw.fn, (), sync=fw.sync, config=ALIVE_CFG, clock=fake_clock, pipelined=True).run()
    assert t.measurement.loops == 16
    # Every output still being computed is alive when the next call starts...
    dropped_pending = [i for i, alive, synced in fw.dispatches[1:] if i - 1 not in synced and i - 1 not in alive]
    assert dropped_pending == []
    assert sum(i - 1 not in synced for i, _, synced in fw.dispatches[1:]) > 50  # (most calls are pipelined)
    # ...and outputs do not pile up with `loops`: at a dispatch, the call before's and the last
    # block's last output (the Timer's, finished) at most.
    assert max(len(alive) for _, alive, _ in fw.dispatches) == 2


@pytest.mark.parametrize("synced", [False, True])
def test_unpipelined_calls_drop_each_output_as_soon_as_it_returns(fake_clock, synced):
    """Synchronous frameworks (and asynchronous ones synced per call): only the Timer's last output
    of the previous block is alive at a dispatch, so the allocator can reuse the block just freed."""
    fw = FakeAsyncFramework(fake_clock)
    Timer(fw.fn, (), sync=fw.sync if synced else None, config=ALIVE_CFG, clock=fake_clock).run()
    assert len(fw.dispatches) > 50
    assert max(len(alive) for _, alive, _ in fw.dispatches) == 1
    if synced:
        assert all(i - 1 in done for i, _, done in fw.dispatches[1:])


def test_with_a_pause_sampling_takes_turns_and_the_time_away_counts_for_no_limit(fake_clock):
    fn, calls = make_fn(fake_clock, [2**-7])
    turns = []

    def pause(turn):  # a rival's turn: a quarter second of someone else's work; stop once done
        turns.append((len(calls), turn))
        fake_clock.advance(2**-2)
        return not turn.done

    cfg = TimerConfig(warmup_time=0.0, min_warmup_calls=1, min_sample_time=2**-10, overhead_factor=0,
                      min_time=2**-3, min_samples=4, target_half_width=1.0, max_time=1.0)
    t = Timer(fn, (), config=cfg, clock=fake_clock, pause=pause, visit_time=2**-5).run()
    # A pause before the first sample (nothing to say yet), then 1/8 s of sampling in turns of 1/32 s:
    # four turns, and the pause after the last one says stop.
    assert [turn for _, turn in turns[:1]] == [Turn(False, None)]
    assert t.visits == 4 and len(turns) == 5 and t.paused_s == 5 * 2**-2
    assert [turn.done for _, turn in turns] == [False, False, False, False, True]
    assert turns[-1][1].median_s == 2**-7 and t.stop == "target"
    assert t.measurement.n == 16  # the time away and the untimed block after each pause are no sampling time
    # Each pause falls between samples, and one untimed call warms up again after each of the four.
    assert len(calls) == 1 + 1 + 16 + 4
    assert set(t.measurement.samples) == {2**-7}


def test_a_process_taking_turns_samples_on_until_the_group_lets_it_stop(fake_clock):
    """Its own rule is met after a quarter second; the group holds it for three more turns (a close
    rival still samples), and it samples through them: the same stretch of time as its rival."""
    fn, _ = make_fn(fake_clock, [2**-7])
    said = []

    def pause(turn):
        said.append(turn.done)
        return said.count(True) < 4

    cfg = TimerConfig(warmup_time=0.0, min_warmup_calls=1, min_sample_time=2**-10, overhead_factor=0,
                      min_time=2**-3, min_samples=4, target_half_width=1.0, max_time=1.0)
    t = Timer(fn, (), config=cfg, clock=fake_clock, pause=pause, visit_time=2**-5).run()
    assert said == [False] * 4 + [True] * 4 and t.visits == 7 and t.measurement.n == 28
    assert t.stop == "target"  # its own reason: met, then held


def test_a_call_longer_than_a_turn_is_not_run_again_to_warm_up_after_a_pause(fake_clock):
    fn, calls = make_fn(fake_clock, [2**-3])  # one call outlasts a turn of 1/32 s
    cfg = TimerConfig(warmup_time=0.0, min_warmup_calls=1, min_sample_time=2**-10, overhead_factor=0,
                      min_time=0.0, min_samples=3, target_half_width=1.0, max_time=10.0)
    t = Timer(fn, (), config=cfg, clock=fake_clock, pause=lambda turn: not turn.done, visit_time=2**-5).run()
    # first call, warm-up, the untimed block before the first turn (caches), then a sample a turn
    assert t.measurement.n == 3 and t.visits == 3 and len(calls) == 1 + 1 + 1 + 3


def test_without_a_pause_there_is_one_stretch_of_sampling(fake_clock):
    fn, _ = make_fn(fake_clock, [2**-7])
    cfg = TimerConfig(warmup_time=0.0, min_sample_time=2**-10, overhead_factor=0, min_time=2**-3, min_samples=4)
    t = Timer(fn, (), config=cfg, clock=fake_clock).run()
    assert t.visits is None and t.paused_s == 0.0
