"""Slow spells of the host: the samples a spell reached, told by what was timed beside each.

On a shared machine a core drops to a fraction of its speed for 0.2-0.7 s at a time (another
tenant), or another process takes one of the cores for a while (a noisy neighbour): every kernel
timed then is slower. A process's median over samples half of which fell in a spell is a spell's
number, and one such process among a case's three moved its interval ×4 (issue 41: numpy's add at
n = 1000, processes of 0.78, 1.50 and 0.84 µs). Two things timed beside each sample see spells:

- the host reference (measure/hostspeed.py), a one-thread pure-Python loop timed just before and
  after it: slower with its core (log-times correlated with a 1 µs add at 0.96-0.99);
- the run delay of the process's threads during it (hostspeed.ThreadWaits, `cpu_wait`): how long
  they were runnable and waited for a CPU, over the sample's time. The reference runs on whichever
  core is free, so a neighbour busy on one of two cores leaves it at full speed while a 2-thread
  kernel loses half its cores (3.3× slower on the 2-core VM); its threads' wait says so.

The memory reference (a copy through DRAM before and after a process's samples) is no third signal:
over eight runs, with the neighbour and without it, the processes whose copy read slow (over 1.5× the
other copy, or 1.5-2× the window's fastest) ran 0.90-1.04× their case's other processes at the
median, memory-bound cases too, where the unflagged ones ran 0.96-1.00× theirs
(docs/how-a-number-is-made.md §9).

A sample is judged by its reference against its *window* (the samples measured together: one round
of one workload at one parameter point, its rivals one after the other; a process alone is a
window of its own), whose level is the WINDOW_QUANTILE of its references, the host at its best
while they were taken; and by its threads' wait, which counts only waits of another process's
timeslice (a framework's own threads handing work to each other wait microseconds and are not
counted). It was taken in a spell when its reference ran more than SPELL_FACTOR times its window's
level, or its threads waited WAIT_BAR of its time or more. Such samples are set aside where enough
of the process's samples were not (`enough`); a process with fewer is *covered* by its spell, and
is set aside itself where its case has a process that is not (results/reading.py), so that it
pairs with no rival either: one process of two rivals hit 6× and the other 1.9× in one burst (a
2-thread matmul in PyTorch and in JAX) is no ratio of theirs. A case every process of which a
spell covered has no number a spell did not reach: further rounds go to it, and compare calls no
change of it, nor of one a spell covered in most of its processes (results.reading.Reading.outnumbered:
the one left of several ran on a host in spells most of the time). A covered process still bounds its
case from above, since a spell only slows: a claim that the case is ahead of a rival may read it at
what it took (bracket.ahead_though_slowed). What neither signal sees reaches rivals measured seconds
apart nearly alike, and a paired ratio reads it as the round's (stats/paired.py). A spell therefore
moves a point or a ratio by no more than the share of the data it reached, and none where it was seen.

The reference is judged relative to its window, not to the run: a host that runs at one slower
speed for minutes is slower for every case of those minutes alike, and setting aside everything
slower than the run's fastest tenth would leave a run on such a host (68 % of processes "slow" on
issue 41's day) nothing to read.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

# A window's level, and a run's full speed over all its references (nominal): this quantile of them.
WINDOW_QUANTILE = 0.1
# A sample whose reference ran more than this many times its window's level was taken in a spell.
# The reference itself varies by a few per cent between timings of a quiet host (it keeps the fastest
# of three); the spells on the 2-core VM read 1.4-1.8×.
SPELL_FACTOR = 1.2
# A sample whose threads waited this share of its time for a CPU another process held was taken beside
# a neighbour: on the 2-core VM such samples waited 69 % of their time (median), the rest 0. Against a
# case's own usual wait instead, a case whose every process a neighbour stalled (PyTorch's 2-thread
# pool, 100-250× slow, waiting a whole core's worth throughout) read as its own usual, and two runs
# of it were called 250× apart.
WAIT_BAR = 0.1
# At least this many of a process's samples, and half of them, must lie outside spells for the rest to
# be set aside (one when it had one or two): fewer clean samples than that say less than all of them.
MIN_CLEAN = 3


def window_level(refs: Sequence[float]) -> float | None:
    """The host's best speed over a window's reference timings: their WINDOW_QUANTILE; None without any."""
    good = sorted(r for r in refs if r > 0 and math.isfinite(r))
    if not good:
        return None
    return good[min(len(good) - 1, int(WINDOW_QUANTILE * len(good)))]


def host_level(processes: Iterable[Sequence[float] | None]) -> float | None:
    """How fast the host ran beside a case's samples, as the case's time is read: over its processes (each
    one's references, `host_ref_s`), the median of each one's median; None without any. Not the median of
    every sample's, where the process that sampled longest speaks for the rest (comparison.cases.host_level).
    Within a run every rival of a window shares it; between two runs it says whether the host ran at one
    speed in both (comparison.cases.hosted)."""
    levels = [statistics.median(good) for refs in processes
              if (good := [r for r in refs or () if r > 0 and math.isfinite(r)])]
    return statistics.median(levels) if levels else None


def explains(ratio: float, base: float | None, new: float | None) -> bool:
    """Whether the host's reference level moving from `base` to `new` (host_level of two runs' sides)
    may be all of a change of `ratio` (new over base): SPELL_FACTOR× or more, the way the case moved
    (as wakes.explains and pools.explains judge their references)."""
    if base is None or new is None:
        return False
    shift = new / base
    return max(shift, 1 / shift) >= SPELL_FACTOR and (shift > 1) == (ratio > 1)


def stalled(waits: Sequence[float] | None) -> bool:
    """Whether a process's threads waited WAIT_BAR or more of a sample for a CPU another process held, or
    their waits were not read: a spell may then have stalled its thread pool, which slows a call far
    more than the host's speed does (a 2-thread add of 10⁶ floats 50× beside the neighbour, stats/pools),
    where a spell its reference alone saw slowed the run's cases at most 2.1-3.0× (results.reading.spell_reach)."""
    return waits is None or any(w >= WAIT_BAR for w in waits)


def enough(clean: int, samples: int) -> bool:
    """Whether `clean` samples outside spells, of a process's `samples`, speak for it without the rest."""
    return clean >= max(1, min(MIN_CLEAN, samples // 2))


@dataclass(frozen=True)
class Sifted:
    """One process's samples once its spells are set aside: those its point is read from, how many
    were taken in a spell, and whether the spell covered it (too few left: all were kept)."""

    samples: tuple[float, ...]
    in_spell: int
    covered: bool


def in_spell(ref: float | None, wait: float | None, level: float | None) -> bool:
    """Whether a sample with this reference (`ref`) and threads' wait (`wait`) was taken in a spell:
    its reference over SPELL_FACTOR × its window's `level`, or its wait WAIT_BAR or more."""
    slow = ref is not None and level is not None and ref > SPELL_FACTOR * level
    return slow or (wait is not None and wait >= WAIT_BAR)


def sift(samples: Sequence[float], refs: Sequence[float] | None, level: float | None,
         waits: Sequence[float] | None = None) -> Sifted:
    """`samples` less those taken in a spell (`in_spell`: `refs` and `waits` beside each sample, `level`
    the window's). Without either signal, all of them."""
    refs = refs if refs and len(refs) == len(samples) and level is not None else None
    waits = waits if waits and len(waits) == len(samples) else None
    if refs is None and waits is None:
        return Sifted(tuple(samples), 0, False)
    flags = [in_spell(refs[i] if refs else None, waits[i] if waits else None, level)
             for i in range(len(samples))]
    clean = tuple(s for s, spell in zip(samples, flags, strict=True) if not spell)
    spell = len(samples) - len(clean)
    if spell == 0:
        return Sifted(tuple(samples), 0, False)
    if enough(len(clean), len(samples)):
        return Sifted(clean, spell, False)
    return Sifted(tuple(samples), spell, True)


# A process counts as reached by a spell (SpellCount, the report's lines) where at least this share of
# its samples was set aside: on a quiet host one sample in thirty reads its reference 20 % slow now
# and then, and that is no spell of the process's.
REACHED = 0.25


def reached(s: Sifted, samples: int) -> bool:
    """Whether a spell reached a process: it covered it, or took REACHED of its samples."""
    return s.covered or s.in_spell >= REACHED * samples


@dataclass(frozen=True)
class SpellCount:
    """How far a run's slow spells reached: processes a spell reached (a quarter of their samples or
    more set aside: `touched`) and covered (too few samples outside it: read as measured, or set aside
    whole where the case has others), of all its timed processes, and samples."""

    processes: int = 0
    touched: int = 0
    covered: int = 0
    samples: int = 0
    in_spell: int = 0

    def add(self, s: Sifted, samples: int) -> SpellCount:
        return SpellCount(self.processes + 1, self.touched + (reached(s, samples) and not s.covered),
                          self.covered + s.covered, self.samples + samples, self.in_spell + s.in_spell)

    @property
    def share(self) -> float:
        """The share of processes a spell reached (touched or covered)."""
        return (self.touched + self.covered) / self.processes if self.processes else 0.0

    def to_json(self) -> dict[str, int]:
        return {"processes": self.processes, "touched": self.touched, "covered": self.covered,
                "samples": self.samples, "in_spell": self.in_spell}


def nominal(refs: Sequence[float]) -> float | None:
    """The run's full-speed reference time: the level of all its reference timings (measure/hostspeed.py
    times them), read as a window's is."""
    return window_level(refs)


def slowdown(refs: Sequence[float], full_speed: float | None) -> float | None:
    """How much slower than full speed the host ran over `refs`: their median over `full_speed`."""
    if not refs or not full_speed:
        return None
    return statistics.median(refs) / full_speed


# The parent's view of the host's full speed, which each process it starts takes along (measure.timing.Timer's
# `level`: it samples on through a spell that covers it): the level of the references of the processes
# that ended in the last RECENT_S seconds. Long enough to hold fast stretches between spells (0.2-0.7 s
# each, 70-85 % of the time on the worst days seen); short enough to follow the host as a window's level
# does (its round of one size: a few seconds). Over a `make bench` run's 959 processes, this level over
# the last 20 s read 1.00× its process's window level at the median, under 1/1.1× of it (stricter) for
# 14 % of them and over 1.1× for 12 %; over 10 s, 9 % and 13 %. Stricter served better: with 20 s (and a
# wait of 0.5 s) 18 % of `make bench`'s processes stayed covered, with 10 s (and 0.3 s) 28 %.
RECENT_S = 20.0


class RecentLevel:
    """The host reference's level over the processes of the last `span` seconds (`add` each one's)."""

    def __init__(self, span: float = RECENT_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.span, self.clock = span, clock
        self.seen: deque[tuple[float, tuple[float, ...]]] = deque()

    def add(self, refs: Sequence[float] | None) -> None:
        """A process's references (`host_ref_s`), as it ends."""
        if refs:
            self.seen.append((self.clock(), tuple(refs)))

    def level(self) -> float | None:
        """window_level over the references of the processes that ended within `span`; None without any."""
        now = self.clock()
        while self.seen and now - self.seen[0][0] > self.span:
            self.seen.popleft()
        return window_level([r for _, refs in self.seen for r in refs])
