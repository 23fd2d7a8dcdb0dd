"""The host's reference kernel: a core slowed by a GPU wait is not a slow host; a slow host still is.

Costs are powers of two so the fake clock's sums are exact in floating point.
"""

import statistics
from dataclasses import replace

import pytest

from arraybench.measure import hostspeed
from arraybench.measure.timing import Timer, TimerConfig
from arraybench.report.data import BUSY_HOST
from arraybench.stats import spells

STEADY, COLD, RAMP = 2**-17, 2**-16, 2**-14  # ~8 µs a call warm, twice that for the first ~60 µs


class FakeCore:
    """One core on the fake clock. The reference kernel costs STEADY seconds a call once the core
    has worked RAMP seconds since it last waited, COLD before that (idle states, a lowered clock,
    cold caches after a GPU wait); `slow` multiplies every call (other tenants, throttling)."""

    def __init__(self, clock):
        self.clock = clock
        self.working_since = 0.0
        self.slow = 1.0

    def wait(self, seconds):
        """The core idles (a sync waiting on the GPU)."""
        self.clock.advance(seconds)
        self.working_since = self.clock()

    def kernel(self):
        warm = self.clock() - self.working_since >= RAMP
        self.clock.advance(self.slow * (STEADY if warm else COLD))

    def reference(self):
        return hostspeed.measure_reference(clock=self.clock, kernel=self.kernel)


def test_the_reference_is_the_warm_cores_speed_and_cheap(fake_clock):
    core = FakeCore(fake_clock)
    core.wait(1e-3)
    t0 = fake_clock()
    assert core.reference() == STEADY  # timed at once, as before, it read (COLD + 2·STEADY) / 3 at best
    assert fake_clock() - t0 <= 2e-4  # it runs before every sample
    core.slow = 2.0
    core.wait(1e-3)
    assert core.reference() == 2 * STEADY


CFG = TimerConfig(warmup_time=2**-8, min_sample_time=2**-8, overhead_factor=0, min_time=2**-6, min_samples=5,
                  max_time=1.0)


def host_refs(core, cases):
    """The reference timings of a run of cases: 'gpu' waits on the device, 'cpu' keeps the core
    working; `slow` is the host's speed through each case's samples."""
    refs = []
    for kind, slow in cases:
        core.slow = slow
        if kind == "gpu":
            timer = Timer(lambda: None, (), sync=lambda out: core.wait(2**-10), config=CFG, clock=core.clock,
                          pipelined=True, reference=core.reference)
        else:
            timer = Timer(lambda: core.clock.advance(2**-10), (), config=CFG, clock=core.clock,
                          reference=core.reference)
        refs += timer.run().host_ref_s
    return refs


def slowdown(refs):
    return spells.slowdown(refs, spells.nominal(refs))


def test_a_core_slow_after_a_gpu_wait_is_not_a_slow_host(fake_clock):
    """A GPU machine's run: most cases wait on the device before every reference, a few CPU cases
    keep the core working. The run's full speed and its median are the same warm core's."""
    refs = host_refs(FakeCore(fake_clock), [("cpu", 1.0)] * 2 + [("gpu", 1.0)] * 6)
    assert set(refs) == {STEADY}
    assert slowdown(refs) == 1.0


def test_a_host_slow_through_its_samples_is_still_reported(fake_clock):
    refs = host_refs(FakeCore(fake_clock), [("cpu", 1.0), ("gpu", 1.0)] + [("gpu", 2.0), ("cpu", 2.0)] * 2)
    assert min(refs) == STEADY and max(refs) == 2 * STEADY
    assert slowdown(refs) == pytest.approx(2.0) and slowdown(refs) > BUSY_HOST


MiB, GiB = 2**20, 2**30


@pytest.mark.parametrize(("cache", "memory", "limit", "each", "spills"), [
    (32 * MiB, 24 * GiB, None, 32 * MiB, True),  # the 2-core EPYC VM: through DRAM, as before
    (260 * MiB, 24 * GiB, None, 64 * MiB, False),  # the Xeon VM whose make test failed
    (GiB, 24 * GiB, None, 64 * MiB, False),  # a 3D V-Cache part
    (GiB, 24 * GiB, 256 * MiB, 16 * MiB, False),  # ... under --memory-limit 256M: 1/8 of it
    (4 * MiB, GiB, None, 16 * MiB, True),  # a small machine: 1/32 of its memory
    (None, None, None, 32 * MiB, True),  # nothing known: the floor, said to be DRAM
])
def test_the_memory_reference_stays_within_a_share_of_memory_and_of_any_limit(cache, memory, limit, each, spills):
    ref = hostspeed.plan_memory_reference(cache, memory, limit)
    assert ref.buffer_bytes == each and ref.spills_cache is spills
    assert 2 * ref.buffer_bytes <= 2 * hostspeed.MAX_MEMORY_BYTES
    if limit:
        assert 2 * ref.buffer_bytes <= limit * hostspeed.LIMIT_SHARE
    assert ("through DRAM" in ref.what()) is spills
    assert spills or f"within the {cache // MiB} MiB last-level cache" in ref.what()


def test_a_memory_reference_that_cannot_be_made_costs_no_case(fake_clock):
    def no_room():
        raise MemoryError("Unable to allocate 1.00 GiB")

    assert hostspeed.measure_memory_reference(fake_clock, no_room) is None


def test_a_worker_under_a_256m_limit_on_a_1_gib_cache_times_its_memory_reference(tmp_path):
    """The real kernel in a fresh process with its cache faked to 1 GiB and RLIMIT_DATA at 256 MiB
    (what `--memory-limit 256M` applies): before the bound, its 2 GiB of buffers failed every case."""
    import subprocess
    import sys

    code = """
import resource
from arraybench.measure import hostspeed, limits
hostspeed.last_level_cache_bytes = lambda: 2**30
limits.apply_memory_limit(256 * 2**20)
import numpy as np
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = hostspeed.measure_memory_reference()
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(t, hostspeed.this_worker_memory_reference().buffer_bytes, grew * 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    seconds, each, grew = float(out[0]), int(out[1]), int(out[2])
    assert 0 < seconds < 1
    assert each == 16 * MiB
    assert grew <= 2 * each + 8 * MiB


def test_a_threads_wait_counts_where_it_was_another_process_s_timeslice_not_its_own_threads_handoffs():
    from arraybench.measure.hostspeed import LONG_WAIT_S, Threads, ThreadWaits, thread_waits

    at = Threads(10.0, 1.0, 100)
    # 2 ms later: 1.4 ms waited in one wait of 4 ms-slice kind (a neighbour held the core)...
    assert ThreadWaits.crowded(at, Threads(10.002, 1.0014, 101)) == pytest.approx(0.7)
    # ...where 0.4 ms waited over 200 runs is a framework's threads handing work to each other.
    assert ThreadWaits.crowded(at, Threads(10.002, 1.0004, 300)) == 0.0
    assert ThreadWaits.crowded(at, Threads(10.002, 1.0 + 3 * LONG_WAIT_S, 103)) == pytest.approx(0.75)
    waits = thread_waits()  # this process, on Linux with schedstat: the readings only grow
    if waits is not None:
        a, b = waits(), waits()
        assert b.wall >= a.wall and b.waited >= a.waited and b.runs >= a.runs


def spell_until(core, until, slow=2.0):
    """A kernel of 2⁻¹⁰ s on `core` whose host runs `slow`× slower (kernel and reference alike) until the
    fake clock reads `until`: a slow spell."""
    def call():
        core.slow = slow if core.clock() < until else 1.0
        core.clock.advance(core.slow * 2**-10)
    return call


SPELL_CFG = TimerConfig(warmup_time=2**-8, min_sample_time=2**-8, overhead_factor=0, min_time=2**-5,
                        min_samples=5, max_time=2**-3, spell_wait=2**-1)


@pytest.mark.parametrize(("spell_s", "level", "wait", "outlasted"), [
    (2**-2, STEADY, 2**-1, True),  # the spell ends within the wait: sampling outlasts it
    (2**-2, None, 2**-1, False),  # the parent saw no level, and the samples' own read alike: no spell seen
    (2**-2, STEADY, 0.0, False),  # no wait asked for: it stops at its rule, covered
    (2.0, STEADY, 2**-1, False),  # the spell outlasts the wait: it stops there, covered
])
def test_a_process_a_spell_covers_samples_on_until_the_spell_ends(fake_clock, spell_s, level, wait, outlasted):
    """A host 2× slow for `spell_s` from the start, against the 0.03-0.1 s a process samples: the
    Timer that knows the host's full speed (`level`, the parent's) samples on past its rule while too
    few of its samples lie outside the spell, for at most `spell_wait`; the process is then read from
    the samples after the spell, at the kernel's full speed."""
    core = FakeCore(fake_clock)
    start = fake_clock()
    timer = Timer(spell_until(core, start + spell_s), (), config=replace(SPELL_CFG, spell_wait=wait),
                  clock=fake_clock, reference=core.reference, level=level)
    t = timer.run()
    sifted = spells.sift(t.measurement.samples, t.host_ref_s, level or STEADY)
    assert sifted.covered is not outlasted
    if outlasted:
        assert 0 < t.outlasted_s < wait and fake_clock() - start > spell_s
        assert statistics.median(sifted.samples) == pytest.approx(2**-10, rel=0.01)
        assert sifted.in_spell > 0  # the spell's samples are kept in the record, and set aside when read
    else:
        assert statistics.median(t.measurement.samples) == pytest.approx(2 * 2**-10, rel=0.01)
        assert t.outlasted_s < wait + 2**-5  # the wait, and the sample that passed it
        assert fake_clock() - start < spell_s + wait + 2**-4


def test_the_parent_level_follows_the_processes_of_the_last_seconds(fake_clock):
    recent = spells.RecentLevel(span=10.0, clock=fake_clock)
    assert recent.level() is None
    recent.add([1.0] * 10)
    fake_clock.advance(6.0)
    recent.add([3.0] * 10)
    assert recent.level() == 1.0  # the fastest tenth of all twenty
    fake_clock.advance(5.0)  # the first process is 11 s old: gone
    recent.add([4.0] * 10)
    assert recent.level() == 3.0
    recent.add(None)  # a process with no reference adds nothing
    assert recent.level() == 3.0
