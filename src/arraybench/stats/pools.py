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
compare calls it too noisy to say (comparison/cases.py) and says why. Within one run, a case of several
threads that the host kept waiting in half its processes or more, and that moved with it where its
processes met both states, may have run up to POOL_REACH× faster in a run that met the pool ready: no
claim has it behind a rival by less than its `reach` (bracket.side).
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
# How many times faster a case of several threads may run in a run that met its pool ready than in one
# that kept it waiting: on the VM NumPy's 2-thread 100² matmul read 14 and 31 µs (2.2×), Numba's 15 and
# 32, PyTorch's 14 and 21, while the pool reference read 12.5 and 19.5 µs; JAX's (its own pool) 15-16 µs
# in both. Ten orders of JAX against the first three, ×1.2-2.0 in a run in the waiting state, came out
# the other way (×0.87-0.96) in an identical run in the ready one.
POOL_REACH = 2.5
# ...and how far its wait can slow one call, in excess pool references: NumPy's matmul gained 17 µs where
# the reference read 7 µs over its fastest.
POOL_WAKES = 2.5
# A case whose processes met the pool in both states moved with it where those that met it waiting ran
# this much slower than those that met it ready: a quiet process's median varies by a few per cent
# (NumPy's `a + b`, which splits nothing, read 28 and 29 µs), PyTorch's 2-thread matmul 14 and 20 µs.
MOVED = 1.1
# A case is in the waiting state when this share of its processes or more read their pool unready: in
# runs that met the pool ready the first process of a run often read it waiting (a quarter of a case's
# processes); in those that did not, half or more did.
WAITING_SHARE = 0.5


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




def reach(readings: Sequence[float] | None, best: float | None, threads: int, median: float,
          medians: Sequence[float] = ()) -> float:
    """How many times faster a case of `threads` whose call took `median` might have run had the host kept
    its pool ready: 1 unless WAITING_SHARE of its processes' pool references (`readings`, stalls set
    aside) or more read unready against the run's `best` (`fastest`). Then the wait cost each call that
    split its work the pool reference's excess over `best`, up to POOL_WAKES times; a call no longer
    than `best` (a ready pool's own split 100² matmul) is too short to split, and the answer is at most
    POOL_REACH. Where its processes (`medians`, one per reading) met both states, those that met a
    waiting pool must have run MOVED× slower than those that met it ready for the state to be theirs:
    NumPy's `a + b`, which splits nothing, ran 28-29 µs in either. A pool kept waiting only slows a
    call: a case ahead of its rival in that state is ahead in the other, one behind by less than its
    reach may not be."""
    if threads < 2 or best is None or not readings or median <= best:
        return 1.0
    states = [(x, m) for x, m in zip(readings, medians or [median] * len(readings), strict=False)
              if x > 0 and not stalled(x, best)]
    waiting = [(x, m) for x, m in states if unready(x, best)]
    ready = [m for x, m in states if not unready(x, best)]
    if not states or len(waiting) < WAITING_SHARE * len(states):
        return 1.0
    if medians and ready and statistics.median(m for _, m in waiting) < MOVED * statistics.median(ready):
        return 1.0
    cost = POOL_WAKES * (statistics.median(x for x, _ in waiting) - best)
    return min(POOL_REACH, median / max(median - cost, best))
