"""Host speed: a reference kernel timed beside every sample, to say how fast the host ran.

On a shared virtual machine a core does not run at one speed: on the 2-core VMs arraybench is
developed on, a pure-Python loop ran at 7.5 µs or 14.5 µs per call, switching between the two
within seconds, on either core, with no CPU steal reported (other tenants share the physical
core). Over 24 fresh processes, NumPy's `a + b` on 1 000 elements and the loop below had
log-times correlated at 0.96–0.99, their spread between processes 26 %.

So the Timer times this reference kernel before every sample and after the last one (outside
the timed region), and keeps, beside each sample, the geometric mean of the two (`host_ref_s`).
A run's full speed is a low quantile of all its reference timings (`nominal`); `slowdown` says
how much slower than that the host ran while a case, or the whole run, was measured.

The reference is timed right after a sample's sync, and a core that has just waited on a GPU
(spinning or yielding in the driver, or idle: a lowered clock, cold caches) is slow for its first
calls. Timed at once, as the faster of two timings of 3 calls, the reference made every run on a
dedicated 16-vCPU H100 machine warn of a host 1.32× to 1.58× slower than its full speed: the run's
10th percentile came from references taken on a warm core, its median from cold ones. So the
kernel first runs untimed for REFERENCE_WARMUP_S, then the fastest of REFERENCE_TIMINGS timings is
kept: the speed of a working core, which a shared or throttled host lowers and a GPU wait does
not. A host slow through the whole sample is still slow after the warm-up, and still reported.
The warm-up's length is chosen to keep the reference cheap (~0.15 ms before every sample), not
yet checked against a GPU machine's cores.

It is a diagnostic, not a correction. Scaling samples to full speed, t · (nominal / ref)^β,
was tried on two identical runs of 64 cases (every CPU backend, small and large): with β fitted
per case (the slope of log t on log ref within its processes) the same case's β came out 1.00
in one run and 0.28 in the next, and the run-to-run difference grew (rms of log ratio 0.19 →
0.24); with β = 1 for all (memory-bound and multi-threaded kernels follow a one-core loop only in
part: 0.36 for a 10⁶-element add) it stayed at 0.19, at 0.5 it was 0.18. Samples stay the
clock's; intervals carry the host's spread instead (pooling.py narrows them honestly).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arraybench.machine.caches import last_level_cache_bytes

REFERENCE_LOOP = 200  # iterations of the reference kernel's loop: ~8–15 µs a call on the VMs above
# Before timing, the kernel runs untimed this long: the reference is timed right after a sample's
# sync, when a core that waited on a GPU is still slow (see above). About 7–12 calls.
REFERENCE_WARMUP_S = 1e-4
REFERENCE_CALLS = 2  # calls per timing...
REFERENCE_TIMINGS = 3  # ...and the fastest of these timings is kept (an interrupt spoils one)


def reference_kernel() -> int:
    """Integer arithmetic in the interpreter: no memory traffic, no allocation past small ints."""
    s = 0
    for i in range(REFERENCE_LOOP):
        s += i * i
    return s


def measure_reference(clock: Callable[[], float] = time.perf_counter,
                      kernel: Callable[[], object] = reference_kernel) -> float:
    """Seconds one `kernel` call takes now, on a warm core: after REFERENCE_WARMUP_S of untimed calls,
    the fastest of REFERENCE_TIMINGS timings of REFERENCE_CALLS calls (about 0.15 ms in all)."""
    start = clock()
    while clock() - start < REFERENCE_WARMUP_S:
        kernel()
    best = math.inf
    for _ in range(REFERENCE_TIMINGS):
        t0 = clock()
        for _ in range(REFERENCE_CALLS):
            kernel()
        best = min(best, clock() - t0)
    return best / REFERENCE_CALLS


# The memory reference: a copy between two buffers, timed once before a process's samples and once
# after (CaseExecutor), which spells of seconds do not miss. Measured on the 2-core EPYC VM (32 MiB
# L3, buffers of 32 MiB each, ~2.5 ms): another process streaming memory on the other vCPU made this
# copy 2.3× slower while the CPU-bound loop above read 1.00× and a DRAM latency probe (random
# cache-line reads) 1.02–1.05×; that probe also read 16–209 µs depending on the case timed before it.
#
# Each buffer is as large as the last-level cache, so the copy streams through DRAM, within bounds:
# the cache of cpu0 reads 32 MiB on one VM, 260 MiB on another, over 1 GiB on AMD's 3D V-Cache parts,
# and buffers of that size (two per worker) failed every case of a run under `--memory-limit 256M`.
# So both buffers together stay within MEMORY_SHARE of the machine's memory, LIMIT_SHARE of the
# worker's memory limit and 2 × MAX_MEMORY_BYTES. Where that is smaller than the cache the copy runs
# within the cache: it then measures the shared cache's bandwidth, which another tenant's traffic
# lowers too, but less than DRAM's, and the report says which of the two it measured.
MIN_MEMORY_BYTES = 32 * 2**20  # each buffer at least this: a small cache's copy would be too short to time
MAX_MEMORY_BYTES = 64 * 2**20  # each buffer at most this: ~5–10 ms a copy, two copies a process
MEMORY_SHARE = 1 / 32  # both buffers within this share of the machine's memory...
LIMIT_SHARE = 1 / 8  # ...and of a worker's memory limit (RLIMIT_DATA, limits.py)
_memory: list[Any] = []  # the two buffers, made at the first call; [None] where they could not be made


@dataclass(frozen=True)
class MemoryReference:
    """How large the memory reference's two buffers are, and what their copy therefore measures."""

    buffer_bytes: int  # each of the two
    cache_bytes: int | None  # the last-level cache it was sized against, None where unknown

    @property
    def spills_cache(self) -> bool:
        """Whether the copy streams through DRAM (each buffer at least the cache), as intended."""
        return self.cache_bytes is None or self.buffer_bytes >= self.cache_bytes

    def what(self) -> str:
        """What one copy measures, in words."""
        size = f"2 × {self.buffer_bytes / 2**20:.0f} MiB"
        if self.cache_bytes is None or self.spills_cache:
            return f"a copy through DRAM ({size})"
        return (f"a copy within the {self.cache_bytes / 2**20:.0f} MiB last-level cache ({size}: the most "
                "memory it may take; it sees contention for the shared cache, less than for DRAM)")


def plan_memory_reference(cache_bytes: int | None, memory_bytes: int | None,
                          limit_bytes: int | None) -> MemoryReference:
    """The buffers for a machine with this cache and memory and a worker under this limit (None: none)."""
    size = max(cache_bytes or 0, MIN_MEMORY_BYTES)
    caps = [MAX_MEMORY_BYTES]
    if memory_bytes:
        caps.append(int(memory_bytes * MEMORY_SHARE) // 2)
    if limit_bytes:
        caps.append(int(limit_bytes * LIMIT_SHARE) // 2)
    size = min(size, *caps)
    return MemoryReference(buffer_bytes=size // 4096 * 4096, cache_bytes=cache_bytes)


def this_worker_memory_reference() -> MemoryReference:
    """plan_memory_reference for this process: its machine's cache and memory, its RLIMIT_DATA."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return plan_memory_reference(last_level_cache_bytes(), memory,
                                 None if limit == resource.RLIM_INFINITY else limit)


def memory_kernel() -> None:
    """One copy between the two buffers of this_worker_memory_reference (made once).

    Raises MemoryError where they cannot be made, and at every later call, without trying again."""
    if not _memory:
        import numpy as np

        try:
            size = this_worker_memory_reference().buffer_bytes
            _memory.extend([np.ones(size // 8), np.zeros(size // 8)])
        except MemoryError:
            _memory[:] = [None]
    if _memory[0] is None:
        raise MemoryError("no room for the memory reference's buffers")
    _memory[1][...] = _memory[0]


def measure_memory_reference(clock: Callable[[], float] = time.perf_counter,
                             kernel: Callable[[], object] = memory_kernel) -> float | None:
    """Seconds one memory_kernel call takes now (its buffers are made and touched before the clock
    starts), or None where its buffers do not fit: the reference never costs a case."""
    try:
        if kernel is memory_kernel and not _memory:
            kernel()
        t0 = clock()
        kernel()
        return clock() - t0
    except MemoryError:
        return None


# Round trips of one wake-up reference: about 2 ms on the 2-core VM (40-50 µs each), twice a process.
WAKE_TRIPS = 40


def measure_wake_reference(trips: int = WAKE_TRIPS, clock: Callable[[], float] = time.perf_counter) -> float | None:
    """Seconds of one round trip between two threads of this process on two of its CPUs (the median of
    `trips`): this thread on its first CPU writes a byte to a pipe, a helper on another CPU reads it and
    writes one back. Each trip wakes a thread on the other CPU and then this one, as a framework's
    pool wakes its threads on every call. None with one CPU, or where threads cannot be placed.

    On the 2-core VM the host keeps such wake-ups at one of two speeds for seconds at a time, and
    a 2-thread BLAS call of microseconds follows: NumPy's 100² matmul took 15 µs while a trip took
    30-46 µs (median 39.5) and 32 µs in every stretch where a trip took 50-62 µs (68 of 69 such
    readings over 150 s). The CPU-bound `host_ref_s` and the threads' wait (`cpu_wait`) saw neither."""
    import threading

    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    if len(cpus) < 2:
        return None
    here, there = cpus[0], cpus[1]
    to_helper, from_helper = os.pipe(), os.pipe()

    def helper() -> None:
        try:
            os.sched_setaffinity(0, {there})  # on Linux: this thread only
        except OSError:
            pass
        for _ in range(trips + 1):
            if not os.read(to_helper[0], 1):
                return
            os.write(from_helper[1], b"w")

    thread = threading.Thread(target=helper, name="arraybench-wake", daemon=True)
    times: list[float] = []
    try:
        os.sched_setaffinity(0, {here})
        thread.start()
        for k in range(trips + 1):  # the first trip starts the helper running: not counted
            t0 = clock()
            os.write(to_helper[1], b"w")
            os.read(from_helper[0], 1)
            if k:
                times.append(clock() - t0)
    except OSError:
        return None
    finally:
        os.close(to_helper[1])  # a helper still reading sees the end and returns
        thread.join(timeout=1.0)
        for fd in (*to_helper[:1], *from_helper):
            os.close(fd)
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            pass
    return statistics.median(times) if times else None


# A wait of a thread for a CPU this long on average (from its wakeup to its run) is another process's
# timeslice: the scheduler runs a thread that wakes within microseconds where a core is free, so a
# framework's own threads handing work to each other wait microseconds (JAX's: 5 µs at the 90th
# percentile of 2 ms samples on the 2-core VM), and a thread behind a neighbour on its core waits
# out the neighbour's slice (4 ms there).
LONG_WAIT_S = 5e-4


@dataclass(frozen=True)
class Threads:
    """A reading of this process's threads, summed over them since ThreadWaits began: the wall clock,
    the time they were runnable but waited for a CPU (seconds), and how many times they were run."""

    wall: float
    waited: float
    runs: int


class ThreadWaits:
    """This process's threads as the scheduler counts them (Linux: each thread's `schedstat`, its run
    delay in ns and its count of runs), to tell how much of a sample another process took from them.

    The reference kernel is one thread, and the kernel schedules it onto whichever core is free: a
    neighbour busy on one of two cores leaves it at full speed while a 2-thread kernel loses half its
    cores. Beside such a neighbour (a busy loop pinned to one CPU, in bursts) on the 2-core VM, a
    2-thread 200² matmul ran 3.3× slower in 8-9 % of its 2 ms samples (NumPy 224 µs against 69 µs;
    PyTorch alike) while the reference read 3.76 µs in them and 3.80 µs in the rest; the threads
    waited for a CPU 69 % of those samples' time, 4 ms a wait, and not at all in the others. A
    framework's own threads also wait on each other, briefly and often (JAX's, 0-20 % of a sample on
    a quiet host), which is no neighbour: `crowded` counts a sample's wait only where its waits were
    long (LONG_WAIT_S on average). On the VM that flagged 161 and 175 samples beside the neighbour,
    every one of them slow, and missed 1 and 2 slow ones; JAX's quiet samples, none of 2 000.

    Each thread's file is kept open and read again: a call took 7 µs in a NumPy or PyTorch worker (2
    threads), 17 µs in TensorFlow's (7) and 31 µs in JAX's (17) on the 2-core VM, twice a sample of
    2 ms or more, outside the timed region. A thread that ended drops out, and each counts only what
    it waited between calls."""

    def __init__(self) -> None:
        self.fds: dict[str, int] = {}
        self.last: dict[str, tuple[int, int]] = {}
        self.waited = self.runs = 0

    def __call__(self) -> Threads:
        for tid in os.listdir("/proc/self/task"):
            try:
                fd = self.fds.get(tid)
                if fd is None:
                    fd = self.fds[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
                waited, runs = (int(x) for x in os.pread(fd, 128, 0).split()[1:3])
            except (OSError, ValueError):
                self.forget(tid)
                continue
            waited0, runs0 = self.last.get(tid, (waited, runs))
            self.waited += max(0, waited - waited0)
            self.runs += max(0, runs - runs0)
            self.last[tid] = (waited, runs)
        return Threads(time.monotonic(), self.waited / 1e9, self.runs)

    @staticmethod
    def crowded(before: Threads, after: Threads) -> float:
        """The share of the time between two readings in which the threads waited for a CPU another
        process held: their wait over the time, where their waits were long (LONG_WAIT_S); else 0."""
        wall, waited, runs = after.wall - before.wall, after.waited - before.waited, after.runs - before.runs
        if wall <= 0 or waited < LONG_WAIT_S * max(1, runs):
            return 0.0
        return waited / wall

    def forget(self, tid: str) -> None:
        fd = self.fds.pop(tid, None)
        self.last.pop(tid, None)
        if fd is not None:
            os.close(fd)


def thread_waits() -> ThreadWaits | None:
    """This process's ThreadWaits, or None where the scheduler does not report run delays (not Linux,
    or a kernel without schedstat)."""
    try:
        waits = ThreadWaits()
        waits()
    except OSError:
        return None
    return waits if waits.fds else None


# The pool reference: NumPy's matmul of two POOL_N² float32 matrices, the median of POOL_CALLS calls
# after POOL_WARMUP (about 3 ms on the 2-core VM). Then the pool's threads spin on their CPUs before they
# sleep (OpenBLAS: 2^28 TSC cycles, 0.10-0.13 s on the VM); settle_pool waits that out.
POOL_N = 100
POOL_CALLS = 200
POOL_WARMUP = 20
# ...or fewer, where they take longer than this: a pool stalled beside a busy CPU takes 16 ms a call on
# the VM (its threads share one CPU's timeslices), and 200 such calls would cost a worker 3 s.
POOL_BUDGET_S = 0.05
POOL_MIN_CALLS = 5
SETTLE_POLL_S = 0.01
SETTLE_MAX_S = 0.5


def measure_pool_reference(threads: int, calls: int = POOL_CALLS,
                           clock: Callable[[], float] = time.perf_counter) -> float | None:
    """Seconds of one call of NumPy's 100² float32 matmul on this process's BLAS pool (the median of
    `calls`, or of those made within POOL_BUDGET_S, POOL_MIN_CALLS at least), or None with fewer than 2
    threads: whether the pool's threads were there, spinning, when a call handed them work.

    A pool's threads spin between back-to-back calls, so a small call never waits for one to wake. On
    the 2-core VM the host kept them from it for minutes at a time: NumPy's 2-thread call took 14-15 µs,
    or 31-33 µs in every process of a stretch of rounds, slower than its one thread alone (18.6 µs), as
    slow as a pool made to sleep after every call (OPENBLAS_THREAD_TIMEOUT=4: 34 µs). Numba's matmul (its
    own OpenBLAS) and PyTorch's (OpenMP) moved with it, and PyTorch's 2-thread FFTs by 10-15 %, while the
    CPU-bound host reference, the wake-up round trip through a pipe (measure_wake_reference) and the
    threads' wait for a CPU stayed as they were."""
    if threads < 2:
        return None
    import numpy as np

    a = np.linspace(0.0, 1.0, POOL_N * POOL_N, dtype=np.float32).reshape(POOL_N, POOL_N)
    b = a.T.copy()
    np.dot(a, b)
    start = clock()
    for _ in range(POOL_WARMUP - 1):
        if clock() - start > POOL_BUDGET_S / 2:
            break
        np.dot(a, b)
    times: list[float] = []
    start = clock()
    while len(times) < calls and (len(times) < POOL_MIN_CALLS or clock() - start < POOL_BUDGET_S):
        t0 = clock()
        np.dot(a, b)
        times.append(clock() - t0)
    return statistics.median(times)


def settle_pool(poll_s: float = SETTLE_POLL_S, longest_s: float = SETTLE_MAX_S,
                cpu: Callable[[], float] = time.process_time, sleep: Callable[[float], None] = time.sleep) -> float:
    """Wait until this process's other threads have stopped spinning: a poll of `poll_s` in which the
    process's CPU time grew by less than a tenth of it, or `longest_s`; returns the seconds waited. A pool
    reference's threads spinning on the other CPU would take it from whatever runs next."""
    waited = 0.0
    while waited < longest_s:
        before = cpu()
        sleep(poll_s)
        waited += poll_s
        if cpu() - before < poll_s / 10:
            break
    return waited
