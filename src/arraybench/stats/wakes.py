"""The host's thread wake-ups: a state of the host that moves small multi-threaded calls between runs.

A framework's pool wakes a thread on another CPU on every call it splits. On the 2-core VM the host
keeps such wake-ups at one of two speeds for seconds to minutes at a time: a round trip between two
threads on the two CPUs (hostspeed.measure_wake_reference) took 30-46 µs, or 50-62 µs, and NumPy's
100² matmul on 2 threads took 15 µs in the first state and 32 µs in the second (68 of 69 readings over
150 s). Neither the CPU-bound host reference nor the threads' wait for a CPU sees it (stats/spells.py),
and where it lasts through every process of a case in a run, no interval of that run can: two quiet
runs read NumPy's, Numba's and PyTorch's 100² matmuls 2.0×, 2.0× and 1.4× apart, each side's processes
agreeing to 1 %.

Each process times that round trip before its samples and after them (`wake_ref_s`). Between two runs,
a case of several threads whose call lasts no more than WAKE_BOUND round trips, where the two runs'
wake-ups differ by WAKE_SHIFT or more in the direction of its change, is no change two runs can show:
compare calls it too noisy to say (comparison/cases.py) and says why.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

# The runs' wake-ups this far apart (their medians over a case's processes) are two states of the
# host: a state's own readings scatter by a few per cent at the median of a case's 4-6 (the VM's two
# states lay 1.29× apart).
WAKE_SHIFT = 1.15
# A call of at most this many round trips feels its wake-ups (a 2-thread call wakes its pool at least
# once; the VM's 100² matmul doubled on a 1.29× slower wake-up, at under one round trip a call).
WAKE_BOUND = 100.0


def level(wakes: Sequence[float] | None) -> float | None:
    """The host's wake-up round trip over a case's processes, or None: the median over its processes of
    the faster of each one's two readings (`wake_ref_s`: before and after its samples, in order). A
    framework's own pool still spinning on the other CPU right after its first calls slows a reading
    (PyTorch's: 33-62 µs before its samples, 22-29 µs after, where NumPy's read 22-28 µs both times),
    and only ever slows it."""
    xs = list(wakes or ())
    pairs = [min(pair) for pair in zip(xs[::2], xs[1::2], strict=False) if min(pair) > 0]
    return statistics.median(pairs) if pairs else None


def explains(ratio: float, threads: int, median_s: float, base: float | None, new: float | None) -> bool:
    """Whether the host's wake-ups moving from `base` to `new` (seconds a round trip) may be all of a
    change of `ratio` (new over base) of a call of `median_s` on `threads` threads."""
    if threads < 2 or base is None or new is None or median_s > WAKE_BOUND * max(base, new):
        return False
    shift = new / base
    return max(shift, 1 / shift) >= WAKE_SHIFT and (shift > 1) == (ratio > 1)
