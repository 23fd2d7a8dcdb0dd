"""The host's state for a pool of threads: whether it leaves their threads ready between calls, a state
that moves multi-threaded calls between runs.

A framework's pool keeps its threads spinning between back-to-back calls, so a call hands them work at
once. On the 2-core VM the host kept them from it for minutes at a time: NumPy's 2-thread 100² matmul
took 14-15 µs, or 31-33 µs in every process of a stretch of rounds (as slow as a pool made to sleep
after every call, and slower than one thread alone); Numba's and PyTorch's matmuls moved with it, and
PyTorch's 2-thread FFTs by 10-15 %. Two identical runs in the two states disagreed on all of them, and
no interval of either run could see it, nor could the CPU-bound host reference or the wake-up round
trip (stats/wakes.py: 1.04-1.14× apart while the matmuls doubled).

Each worker times NumPy's 2-thread matmul once as it starts (`pool_ref_s`,
hostspeed.measure_pool_reference). Between two runs, a case of several threads whose runs' pool
references differ by POOL_SHIFT or more in the direction of its change is no change two runs can show:
compare calls it too noisy to say (comparison/cases.py) and says why.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from arraybench.stats.spells import window_level

# The runs' pool references this far apart (their medians over a case's processes) are two states of the
# host: the VM's lay 2.1× apart, and a state's own readings 12.3-15.5 µs.
POOL_SHIFT = 1.3
# A reading this many times another is no state of the pool's: the probe ran while a neighbour held a
# CPU its threads needed, and the pool stalled (16 ms a call on the VM, against 12-20 µs in either
# state); the threads' wait and the host reference set such spells aside (stats/spells.py).
POOL_STALL = 4.0


def level(readings: Sequence[float] | None) -> float | None:
    """The pool reference over a case's processes (their median, stalls set aside), or None."""
    xs = [x for x in readings or () if x > 0]
    if not xs:
        return None
    return statistics.median([x for x in xs if not stalled(x, min(xs))])


def stalled(reading: float, best: float) -> bool:
    """Whether a reading is a stall beside a busy CPU, not a state of the pool: POOL_STALL× `best` or more."""
    return reading >= POOL_STALL * best


def fastest(readings: Iterable[float]) -> float | None:
    """A run's pool reference at its best: the level of all its readings, as a window's is (spells.py)."""
    return window_level(list(readings))


def unready(reading: float | None, best: float | None) -> bool:
    """Whether a process's pool reference says the host kept its pool waiting: POOL_SHIFT× the run's best
    or more."""
    return reading is not None and best is not None and POOL_SHIFT * best <= reading < POOL_STALL * best


def explains(ratio: float, threads: int, base: float | None, new: float | None) -> bool:
    """Whether the pool reference moving from `base` to `new` (seconds a call) may be all of a change of
    `ratio` (new over base) of a call on `threads` threads. Not bounded by the call's length: a pool
    whose threads must be woken costs every call that splits its work, and a long call splits it often."""
    if threads < 2 or base is None or new is None:
        return False
    shift = new / base
    return POOL_SHIFT <= max(shift, 1 / shift) < POOL_STALL and (shift > 1) == (ratio > 1)
