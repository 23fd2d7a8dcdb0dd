"""Timer: measures one prepared callable, its sync inside the timed region, with an injectable clock."""

from __future__ import annotations

import gc
import math
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from arraybench.stats.measurement import Measurement
from arraybench.stats.spells import sift, window_level

Clock = Callable[[], float]
FaultCounter = Callable[[], int]


@dataclass(frozen=True)
class Turn:
    """What a Timer that takes turns says as its turn ends: whether its own stopping rule is met
    (`done`: it would stop here alone) and its median so far (None before its first sample)."""

    done: bool
    median_s: float | None


# Called between turns: True to take the next turn, False to stop sampling there (the parent's word).
Pause = Callable[[Turn], bool]


class Crowding(Protocol):
    """What reads how crowded the CPUs were around a sample (hostspeed.ThreadWaits): a reading now,
    and the share of the time between two readings that another process took from this one."""

    def __call__(self) -> Any: ...

    def crowded(self, before: Any, after: Any) -> float: ...


# The phases a MemoryWatch brackets: the first call, and one steady call (Timer.run).
FIRST_CALL, CALL = "first_call", "call"


class MemoryWatch(Protocol):
    """What brackets the memory of a phase of calls (measure/call_memory.Phases): `start` before it, outside
    the timed region, and `stop(phase)` after it."""

    def start(self) -> None: ...

    def stop(self, phase: str) -> None: ...
# Seconds of one turn of sampling where a Timer with a `pause` takes turns with another process
# (execution.parent.WorkerPool.run_group): well under the host's slow spells on the 2-core VM
# (0.2-0.7 s), so that a spell covers turns of both; long enough that the switch (a pipe's round
# trip and one untimed block to warm the caches again) stays a few per cent of a turn.
VISIT_S = 0.05


def minor_faults() -> int:
    """Minor page faults of this process so far (all its threads: a framework's pool included)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


@dataclass(frozen=True)
class TimerConfig:
    """How long and how often to sample. Defaults suit a desktop; tests shrink them.

    Sampling stops as soon as the median's 95 % interval is within ±target_half_width (after
    min_samples and min_time), or at max_samples, or at max_time: a 1 µs add reaches ±2 % in a
    fraction of a second, a noisy case gets up to max_time and says the width it reached.
    """

    warmup_time: float = 0.1  # seconds of untimed calls after the first call
    min_warmup_calls: int = 1
    min_sample_time: float = 2e-3  # one sample lasts at least this long...
    overhead_factor: float = 1000.0  # ...and at least this many times the clock+sync cost
    min_time: float = 0.2  # sample at least this long...
    min_samples: int = 10  # ...and this many samples (with fewer, the median's interval is the whole range)
    target_half_width: float = 0.02  # ...then stop once the median's 95 % interval is this narrow
    max_samples: int = 1000
    max_time: float = 1.0  # stop here (with min_samples_at_cap samples) even if the target is not met
    # Worker processes each case is measured in, one after another (the Runner's business, kept
    # here so that it is stored, resumed and compared with the rest of how a case is sampled).
    processes: int = 3
    # Samples a process takes at least, even past max_time: with one or two, a 0.5 s call that ran
    # 381 ms once and 820 ms once reported their average, 600 ms, beside another process's 388 ms;
    # with five the median is one of the modes, and a split into two modes can be seen.
    min_samples_at_cap: int = 5
    # ...unless sampling has lasted this long (a 4 s call): it stops short, and says so (stop `budget`).
    budget_time: float = 10.0
    # Where the rule is met while a slow spell of the host covers the process (too few of its samples
    # outside it to read it by: stats.spells.sift, against the host's level the parent last saw), it
    # samples on, at most this many seconds, for the spell to end: a spell lasts 0.2-0.7 s on the 2-core
    # VM, and a process's 0.03-0.1 s of samples (planning.suites.SUITE_TIMER) lay wholly in one in 32-44 %
    # of processes, leaving its case that round with no number a spell did not reach. In `make bench`
    # runs on that VM a wait of up to 0.5 s left 18 % of processes covered (83 s of waiting in a 992 s
    # run), one of up to 0.3 s 28 % (71 s; with the parent's level over 10 s, not 20). The waiting is
    # taken from the budget of further rounds (execution.session.further_budget). 0: stop at the rule.
    spell_wait: float = 0.5


@dataclass(frozen=True)
class Timing:
    """What the Timer saw: the first call alone, then the steady-state measurement."""

    first_call_s: float
    measurement: Measurement
    warmup_calls: int
    overhead_s: float
    last_output: Any
    latency_s: float | None = None  # one call + sync alone, median of a few (pipelined timers only)
    stop: str = "target"  # why sampling stopped: target, max_samples, max_time or budget
    minor_faults_per_call: float | None = None  # during the timed samples
    host_ref_s: tuple[float, ...] | None = None  # the host's reference kernel beside each sample (hostspeed.py)
    cpu_wait: tuple[float, ...] | None = None  # beside each sample, its threads' wait for a CPU another process held
    visits: int | None = None  # with a `pause`: the stretches of sampling, each after a pause (`visit_time`)
    paused_s: float = 0.0  # seconds spent in `pause`: another process's turn, not this one's
    outlasted_s: float = 0.0  # seconds sampled past the rule, waiting for a slow spell to end (`spell_wait`)


class Timer:
    """Times `fn(*args)` followed by `sync(output)`, both inside the timed region.

    The first call is timed on its own: for JIT frameworks it holds tracing and compilation,
    which must never leak into steady state. Warm-up calls then estimate the per-call time,
    and calls are grouped `loops` at a time so a sample dwarfs the clock and sync overhead
    (a 1 µs NumPy add is timed in blocks of hundreds; a 1 s solve one call at a time).

    `pipelined=True` (GPU backends) syncs once at the end of each block instead of after every
    call, as a program that launches kernels back to back runs: the median is then the device's
    time per call, what CUDA events measure, unless launching costs more than the kernel runs.
    The synced cost of one call alone (launch, kernel, sync: what a caller that needs each result
    at once pays) is then measured as well and returned as `latency_s`.

    `pause` with `visit_time`: sampling is cut into visits of about `visit_time` seconds, and
    `pause(turn)` is called before the first and between them (outside the timed region), while the
    other processes of a group take their turns: one case's environments alternate, A, B, A, B, so
    that a slow spell of the host, shorter than a process's sampling, falls on each of them alike
    (execution.parent.WorkerPool's `run_group`). Each `Turn` says whether this Timer's own stopping
    rule is met; it stops only when `pause` says so (False), which the group decides, so that
    processes close enough for a spell to swap them sample over the same stretch of time. After a pause one
    untimed block warms the caches again (unless one call outlasts a visit: then caches barely
    matter and the block would double its cost), the host reference is read anew, and the time away
    counts towards no time limit.

    `level`: the host reference's full-speed level as the parent last saw it (stats.spells.window_level
    over the processes of the last seconds). Where the stopping rule is met while a slow spell covers
    the samples so far (too few outside it, judged against the lower of `level` and their own level, as
    results/reading.py judges them against their window's), sampling goes on until it does not, for at
    most `spell_wait` seconds (TimerConfig): the samples the spell reached are kept, and set aside where
    the process is read. Only a Timer that samples alone does so (a group of environments taking turns
    shares its spells), and only where a sample is short enough for four of them to fit in the wait.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        sync: Callable[[Any], None] | None = None,
        config: TimerConfig | None = None,
        clock: Clock = time.perf_counter,
        pipelined: bool = False,
        faults: FaultCounter = minor_faults,
        reference: Callable[[], float] | None = None,
        pause: Pause | None = None,
        visit_time: float = VISIT_S,
        waits: Crowding | None = None,
        memory: MemoryWatch | None = None,
        level: float | None = None,
    ) -> None:
        self.fn, self.args, self.sync = fn, args, sync
        self.level, self.outlasted_s = level, 0.0
        self.memory = memory
        self.reference, self.waits = reference, waits
        self.pause, self.visit_time = pause, visit_time
        self.visits, self.paused_s = 0, 0.0
        self.config = config or TimerConfig()
        self.clock = clock
        self.faults = faults
        self.pipelined = pipelined and sync is not None

    def _block(self, loops: int) -> tuple[float, Any]:
        """Run `loops` synced calls; return the seconds they took and the last output.

        Synchronous frameworks (and asynchronous ones synced after every call): each output is
        dropped as soon as its call returns. Holding it until the next call returns would defeat
        the allocator's reuse of the block just freed, which inflates sub-microsecond calls by
        ~15 % compared with timeit.

        Pipelined: each output is kept until the next call has been dispatched, as in the plain
        loop `for _ in range(n): out = f(x)` then `out.block_until_ready()`. Such an output is
        still being computed when its call returns, and dropping it then is not free: JAX on an
        H100 read a constant ~25–30 µs per call (7–9 %) above that plain loop while this loop
        dropped each output at once; torch and CuPy agreed with CUDA events. The cause is
        inferred from that constant gap and PJRT's code path, not traced: releasing a buffer
        whose computation is pending waits on its usage events, or its block cannot go to the
        next call at once, so each dispatch queues behind the kernel before it, leaving the GPU
        idle for one dispatch a call. Not yet confirmed on a GPU: none was lent for this change.
        At most two of a block's outputs are alive at once (the newest and the one before it),
        whatever `loops` is.
        """
        fn, args, sync, clock = self.fn, self.args, self.sync, self.clock
        if sync is None:
            # No per-call no-op to inflate tiny timings.
            t0 = clock()
            for _ in range(loops - 1):
                fn(*args)
            out = fn(*args)
            return clock() - t0, out
        if self.pipelined:
            # The one sync at the end waits for every call of the block (one stream, in order).
            # `out` is rebound only once the next call has returned: the previous output lives
            # through that call's dispatch.
            t0 = clock()
            out = fn(*args)
            for _ in range(loops - 1):
                out = fn(*args)
            sync(out)
            return clock() - t0, out
        t0 = clock()
        for _ in range(loops - 1):
            sync(fn(*args))
        out = fn(*args)
        sync(out)
        return clock() - t0, out

    def overhead(self, out: Any) -> float:
        """Cost of one empty timed region: two clock reads plus a sync of a finished result."""
        clock, sync = self.clock, self.sync
        best = math.inf
        for _ in range(5):
            t0 = clock()
            if sync is not None:
                sync(out)
            best = min(best, clock() - t0)
        return max(best, 0.0)

    def latency(self, calls: int = 21, budget_s: float = 0.5) -> float:
        """Median wall time of one call followed by its sync, each call on its own: `calls` of
        them, or as many as `budget_s` allows (at least three), so a 4 s case stays affordable."""
        times: list[float] = []
        while len(times) < calls and (len(times) < 3 or sum(times) < budget_s):
            times.append(self._block(1)[0])  # a block of one call ends in its own sync
        return sorted(times)[len(times) // 2]

    def run(self) -> Timing:
        """First call, warm-up, samples; the garbage collector is off from warm-up to the last sample.

        As in timeit: a collection triggered by garbage of an earlier case (or of the harness)
        would land in one arbitrary sample. One collection runs before warm-up instead.

        No stage holds an earlier stage's output (the first call's used to stay alive through every
        sample): between blocks the Timer keeps only the last block's, finished, output.

        With a `memory` watch, the first call is one phase (`first_call`) and the second call, made
        alone before the warm-up while no earlier output is alive, the other (`call`): what one call
        needs once compiled. (Every later block runs while the block before's output is still held.)
        """
        if self.memory is not None:
            self.memory.start()
        first = self._block(1)[0]
        if self.memory is not None:
            self.memory.stop(FIRST_CALL)
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            loops, overhead, warm_calls = self._calibrate()
            samples, stop, faults_per_call, out, refs, waits = self._sample(loops)
        finally:
            if was_enabled:
                gc.enable()
        latency = self.latency() if self.pipelined else None
        return Timing(first, Measurement(tuple(samples), loops), warm_calls, overhead, out, latency,
                      stop, faults_per_call, refs, waits, self.visits if self.pause is not None else None,
                      self.paused_s, self.outlasted_s)

    def _calibrate(self) -> tuple[int, float, int]:
        """Warm-up doubles as calibration: the loop count that makes a sample dwarf the overhead
        (measured with warm-up's last output); returns it, the overhead and the warm-up calls."""
        cfg = self.config
        warm_calls, warm_time, loops, out = 0, 0.0, 1, None
        if self.memory is not None:
            # One call alone, no earlier output alive: its memory. Not a warm-up call: its watch ran
            # the allocator bare (memory.ResidentSet), whose steady state the warm-up brings back.
            self.memory.start()
            self._block(1)
            self.memory.stop(CALL)
        while warm_calls < cfg.min_warmup_calls or warm_time < cfg.warmup_time:
            dt, out = self._block(loops)
            warm_calls += loops
            warm_time += dt
            if dt < cfg.min_sample_time:
                loops *= 2
        per_call = warm_time / warm_calls
        overhead = self.overhead(out)
        target = max(cfg.min_sample_time, cfg.overhead_factor * overhead)
        loops = max(1, math.ceil(target / per_call)) if per_call > 0 else 1
        return loops, overhead, warm_calls

    def _stop(self, samples: list[float], loops: int, spent: float) -> str | None:
        """Why sampling would stop now, after `spent` seconds of it: its interval reached the target,
        or a cap; None: not yet."""
        cfg = self.config
        if (len(samples) >= cfg.min_samples and spent >= cfg.min_time
                and Measurement(tuple(samples), loops).half_width <= cfg.target_half_width):
            return "target"
        if len(samples) >= cfg.max_samples:
            return "max_samples"
        if spent >= cfg.max_time and len(samples) >= cfg.min_samples_at_cap:
            return "max_time"
        if spent >= cfg.budget_time:  # fewer than min_samples_at_cap: the record says so
            return "budget"
        return None

    def _sample(self, loops: int) -> tuple[list[float], str, float, Any, tuple[float, ...] | None,
                                           tuple[float, ...] | None]:
        """Samples until the median's interval reaches the target width, or a cap (with a `pause`: until
        the pause says to stop); page faults per call; with a `reference`, the host's speed beside
        each sample (the geometric mean of the reference timed just before and just after it; outside
        the timed region); with `waits`, how long the process's threads waited for a CPU that another
        process held during each sample, over its time (read just before and just after it, outside
        the timed region: hostspeed.ThreadWaits)."""
        clock, reference, waits = self.clock, self.reference, self.waits
        samples: list[float] = []
        refs: list[float] = []
        waited: list[float] = []
        faults0 = self.faults()
        before = reference() if reference is not None else 0.0
        started = visit = clock()
        away, last, stop = 0.0, 0.0, None  # away: paused, and warming up again after it: no sampling time
        met: float | None = None  # when the rule was first met in a spell (`spell_wait`)
        while True:
            if self.pause is not None and (not samples or clock() - visit >= self.visit_time):
                t0 = clock()
                stop = self._stop(samples, loops, t0 - started - away) if samples else None
                median = Measurement(tuple(samples), loops).median if samples else None
                go_on = self.pause(Turn(stop is not None, median))
                self.paused_s += clock() - t0
                if not go_on and samples:
                    break
                if last < self.visit_time:
                    self._block(loops)  # the other processes' turns left the caches cold
                before = reference() if reference is not None else 0.0
                self.visits += 1
                visit = clock()
                away += visit - t0
            w0 = waits() if waits is not None else None
            dt, out = self._block(loops)
            if waits is not None and w0 is not None:
                waited.append(waits.crowded(w0, waits()))
            last = dt
            samples.append(dt / loops)
            if reference is not None:
                after = reference()
                refs.append(math.sqrt(before * after))
                before = after
            if self.pause is None:
                stop = self._stop(samples, loops, clock() - started - away)
                if stop in ("target", "max_time") and self._in_spell(samples, refs, waited, last):
                    now = clock()
                    met = met if met is not None else now
                    self.outlasted_s = now - met
                    if self.outlasted_s < self.config.spell_wait:
                        continue
                if stop is not None:
                    break
        faults_per_call = (self.faults() - faults0) / (len(samples) * loops)
        return (samples, stop or "group", faults_per_call, out, tuple(refs) if reference is not None else None,
                tuple(waited) if waits is not None else None)

    def _in_spell(self, samples: list[float], refs: list[float], waits: list[float], last: float) -> bool:
        """Whether a slow spell covers the samples so far, and sampling on may outlast it (`spell_wait`):
        too few of them lie outside it (stats.spells.sift) against the lower of the parent's `level` and
        their own references' level, and a sample (`last`, seconds) fits four times in the wait."""
        wait = self.config.spell_wait
        if wait <= 0 or 4 * last > wait or not (refs or waits):
            return False
        own = window_level(refs)
        levels = [x for x in (self.level, own) if x is not None and x > 0]
        return sift(samples, refs or None, min(levels) if levels else None, waits or None).covered
