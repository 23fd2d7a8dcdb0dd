"""The Timer's calibration and stopping rules, checked exactly against a fake clock.

Costs are powers of two so the fake clock's sums are exact in floating point.
"""

import pytest

from arraybench.timing import Timer, TimerConfig


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


def test_max_time_stops_slow_cases_after_three_samples(fake_clock):
    fn, _ = make_fn(fake_clock, [2.0])
    cfg = TimerConfig(warmup_time=0.0, min_time=100.0, min_samples=50, max_time=5.0)
    t = Timer(fn, (), config=cfg, clock=fake_clock).run()
    assert t.measurement.n == 3
    assert t.warmup_calls == 1


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
