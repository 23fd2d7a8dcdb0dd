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
import statistics
import time
from collections.abc import Callable, Sequence

REFERENCE_LOOP = 200  # iterations of the reference kernel's loop: ~8–15 µs a call on the VMs above
REFERENCE_CALLS = 3  # calls per timing; the faster of two timings is kept (an interrupt spoils one)
NOMINAL_QUANTILE = 0.1


def reference_kernel() -> int:
    """Integer arithmetic in the interpreter: no memory traffic, no allocation past small ints."""
    s = 0
    for i in range(REFERENCE_LOOP):
        s += i * i
    return s


def measure_reference(clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds one reference_kernel call takes now: the faster of two timings of REFERENCE_CALLS calls."""
    best = math.inf
    for _ in range(2):
        t0 = clock()
        for _ in range(REFERENCE_CALLS):
            reference_kernel()
        best = min(best, clock() - t0)
    return best / REFERENCE_CALLS


def nominal(refs: Sequence[float]) -> float | None:
    """The run's full-speed reference time: the NOMINAL_QUANTILE quantile of all its reference timings."""
    good = sorted(r for r in refs if r > 0 and math.isfinite(r))
    if not good:
        return None
    return good[min(len(good) - 1, int(NOMINAL_QUANTILE * len(good)))]


def slowdown(refs: Sequence[float], full_speed: float | None) -> float | None:
    """How much slower than full speed the host ran over `refs`: their median over `full_speed`."""
    if not refs or not full_speed:
        return None
    return statistics.median(refs) / full_speed
