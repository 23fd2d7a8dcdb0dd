"""Bracketing crossovers: where two backend·modes change order, and which size to measure next to pin it down.

Pure functions over measured points, so the run layer can call them between rounds of
measurement and the report can call them on what was measured. A crossover is *bracketed* when
two measured sizes at most `MAX_RATIO` apart hold it and the two timing intervals separate at
both (one side is faster below, the other above, beyond noise). When every gap between measured
sizes inside the bracket is already that narrow and the intervals in between still overlap, more
sizes cannot separate them: the two are a *tie* within noise there. Otherwise the bracket is
*open* and `next_size` is the geometric midpoint of its widest gap.

The run layer refines crossovers with `brackets` (refine.py: only where the fastest backend·mode
changes, a grid of ≤4× steps and then a bisection). `proposals` bisects every pair at once, one
midpoint a round: what a caller with its own series of points (the report's synthetic test data)
uses to reach the same brackets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any, Protocol, runtime_checkable

from arraybench.stats.measurement import Measurement
from arraybench.stats.paired import MIN_PAIRED_ROUNDS, Pairing, paired_log_ratio
from arraybench.stats.student import LogRatio

# Two measured sizes at most this far apart bound a crossover tightly enough to act on.
MAX_RATIO = 2.0
# A paired order of two rivals rests on at least this many rounds that measured both (their own
# intervals still order them on fewer). Two rounds read a pair's own spread on one degree of freedom,
# and a run's rival prior, too weak to lend narrowness (pooling.VariancePrior.weak), cannot see that
# both happened to fall in one state of a process: over 276 pairs of 24 saved runs of the noisy
# benchmark, every one of the 7 pairs ordered opposite ways by two runs was ordered from two rounds
# (PyTorch's eager and jitted FFT of 10⁶ floats: −23 % and −19 % in one run, +8 to +15 % in four
# others). From three rounds on: none of 26 792.
MIN_RIVAL_ROUNDS = 3
# ...and on two, where their paired interval lies beyond this factor: further than one pair's ratio has
# been seen to swing between identical runs there (JAX's and PyTorch's jitted adds of 10⁶ floats, ×0.62
# to ×1.33), so that a state both rounds shared cannot have made the order. A run of two processes a case
# then still orders NumPy's add of 1000 floats (529 ns) ahead of PyTorch's jitted one (19.8 µs).
FEW_ROUNDS_MARGIN = 2.0

BRACKETED, TIE, OPEN = "bracketed", "tie", "open"


@dataclass(frozen=True)
class Point:
    """One measured case: its size, median time per call and an interval around the median; where its
    run measured it beside its rivals, its log point by round (`rounds`) and the run's `pairing`; and
    `reach`, how many times faster it might have run in a state of the host its run did not meet (1:
    none known; stats/pools.reach); and `slowed`, its log point in the rounds whose process a slow spell
    covered, which `rounds` leaves out: what it took at most there, since a spell only slows; and `spell`,
    how many times slower than it runs such a process may have read (results.reading.Reading.spell_of:
    inf where unknown), so that each of those rounds over it is what it took at least."""

    size: float
    median: float
    low: float
    high: float
    rounds: tuple[tuple[int, float], ...] = ()
    pairing: Pairing | None = None
    reach: float = 1.0
    slowed: tuple[tuple[int, float], ...] = ()
    spell: float = math.inf

    def times(self, factor: float) -> Point:
        """The same point `factor` times slower, interval and rounds and all: whether one case is more
        than `factor` times faster than another is `side` of it scaled by `factor` against the other."""
        shift = math.log(factor)
        return Point(self.size, self.median * factor, self.low * factor, self.high * factor,
                     tuple((k, x + shift) for k, x in self.rounds), self.pairing, self.reach,
                     tuple((k, x + shift) for k, x in self.slowed), self.spell)


@dataclass(frozen=True)
class Bracket:
    """A change of order between `a` and `b`: `faster_below` wins at `lo`, `faster_above` at `hi`.

    `estimate` is where the medians cross, interpolated on the log-log curve between the two
    measured sizes around the sign change; `next_size` is set only when `state` is OPEN.
    """

    faster_below: str
    faster_above: str
    lo: float
    hi: float
    estimate: float
    time_s: float
    state: str
    next_size: int | None = None


def side(a: Point, b: Point) -> int:
    """-1 where `a` is faster than `b` beyond noise, +1 where slower, 0 where the data cannot tell.

    The one rule of every claim: where both were measured in the same rounds of one run (one
    Pairing), from their paired per-round ratios (stats/paired.py: b/a's 95 % interval excludes 1),
    so the host's drift, which reaches both alike, decides nothing; where those cannot tell, or there
    are none (two runs, a record without rounds, fewer than MIN_RIVAL_ROUNDS rounds in common, where two
    still order a pair whose paired interval lies beyond FEW_ROUNDS_MARGIN), from their own intervals,
    which must lie apart. Pairing orders what drift blurs; it never unorders two cases
    whose own intervals are apart and whose every paired round puts them in that order: two rounds
    whose ratios differed in size (a pair judged on its own spread, one degree of freedom) left
    TensorFlow's jitted `poly` at n = 3000 (0.96 and 1.66 ms) unordered against Numba's (14.4 and
    9.9 ms), 8.8× apart with intervals [1.06, 1.50] and [9.9, 12.4] ms. A round that puts them the
    other way (a case whose processes fell into two speeds, one on either side of its rival) leaves
    the pair open, whatever the intervals of its medians say.

    A case that may have run `reach`× faster in a state of the host its run did not meet (a thread pool
    kept waiting: stats/pools.reach) is behind its rival only if it would be at that speed too: two
    identical runs in the two states ordered JAX's 2-thread 100² matmul against NumPy's both ways.

    A round whose process a slow spell covered is no number of its case's, but a spell only slows: a case
    ahead of its rival with those rounds read at what they took (`slowed`) is ahead (`ahead_though_slowed`),
    and one that was ahead in such a round is behind nowhere (`ahead_in_a_slowed_round`). One a spell covered
    in every round has only such bounds, and its `reach` is as much as a spell slowed any case of its run
    (results.reading.spell_reach): behind a rival only beyond it. Beside a
    neighbour, NumPy's sort of 1000 floats ran 6.7, 6.1 and 7.4 µs against PyTorch's 13.0, 13.7 and 18.1,
    all but three of the six processes in a spell, and read as their kept processes alone (NumPy's one, so
    paired in no round) the two were left unordered, 2.2× apart.
    """
    found = _held_side(a, b)
    if found == 0:
        found = -1 if ahead_though_slowed(a, b) else 1 if ahead_though_slowed(b, a) else 0
    if (found > 0 and ahead_in_a_slowed_round(a, b)) or (found < 0 and ahead_in_a_slowed_round(b, a)):
        return 0
    return found


def _held_side(a: Point, b: Point) -> int:
    """side of two points, each at its reach."""
    if a.reach == b.reach == 1.0:
        return _side(a, b)
    if _side(a.times(b.reach), b) < 0:
        return -1
    if _side(a, b.times(a.reach)) > 0:
        return 1
    return 0


def ahead_in_a_slowed_round(a: Point, b: Point) -> bool:
    """Whether `a` was faster than `b` in a round a spell covered for it, read at what it took there
    (`slowed`): then it was faster in that round, whatever the spell did, and no claim has it behind.
    Beside a neighbour, Numba's jitted 2000² matmul read 111 and 91 ms in the two processes kept and 80 ms
    in the one a spell covered, PyTorch's eager one 92, 82 and 84 ms in those rounds: read from the kept
    rounds alone Numba was behind (×1.17), and an identical run put it ahead (×1.31)."""
    theirs = dict(b.rounds)
    return any(k in theirs and x < theirs[k] for k, x in a.slowed)


def ahead_though_slowed(a: Point, b: Point) -> bool:
    """Whether `a` is faster than `b` by their paired per-round ratios, at `b`'s reach, with the rounds a
    spell covered read as bounds: `a`'s at what they took (`slowed`: at most what it takes), `b`'s at what
    they took over `b.spell` (at least what it takes: a spell slowed no process of its run more). Read at
    what they took, `b`'s would make it look slower than it is.

    As every paired order, it rests on MIN_RIVAL_ROUNDS rounds, or two beyond FEW_ROUNDS_MARGIN
    (paired_side): beside the neighbour, PyTorch's jitted FFT of 10⁶ floats, with the round a spell
    covered read at 16 ms, paired with its eager twin in their two kept rounds (−23 %, −19 %) and put
    itself ahead, where four identical runs put it behind by 8-15 %. With `b`'s bounds: in another run
    beside it PyTorch's eager sort of 10⁶ floats read 109-114 ms in four processes, three covered, and
    JAX's jitted sort 305 ms in the one process kept and 342 and 387 ms in two covered, where a spell the
    reference saw slowed no case of the run more than 2.37×: at least 144 and 163 ms. Read apart, one kept
    process each, their intervals overlapped 2.8× apart; by their bounds, paired, PyTorch is ahead."""
    floors = bool(b.slowed) and math.isfinite(b.spell)
    if not a.slowed and not floors:
        return False
    upper = replace(a, rounds=tuple(sorted({**dict(a.slowed), **dict(a.rounds)}.items())), slowed=()).times(b.reach)
    if a.slowed and paired_side(upper, b) < 0:
        return True
    if not floors:
        return False
    # `times(b.reach)` puts `b` at its reach in every round; a case covered in every round has the spell's
    # in it already (results.reading.Reading.reach), and is not cut by it twice. A bound is further from
    # the truth than a kept round, so `b`'s bounds are a second reading, not one that replaces the first.
    cut = math.log(b.spell) if b.rounds else 0.0
    lower = {**{k: x - cut for k, x in b.slowed}, **dict(b.rounds)}
    return paired_side(upper, replace(b, rounds=tuple(sorted(lower.items())), slowed=())) < 0


def held(a: Point, b: Point) -> bool:
    """Whether only a `reach` leaves the two unordered: side with every reach at 1 orders them (a pair a
    slowed round leaves open, `ahead_in_a_slowed_round`, is not one)."""
    return side(a, b) == 0 and _held_side(a, b) == 0 and _side(a, b) != 0


def _side(a: Point, b: Point) -> int:
    """side of two points as measured."""
    found = paired_side(a, b)
    if found != 0:
        return found
    if not one_way(a, b):
        return 0
    if a.high < b.low:
        return -1
    if b.high < a.low:
        return 1
    return 0


def paired_side(a: Point, b: Point) -> int:
    """side of two points as their paired per-round ratios alone read them: from MIN_RIVAL_ROUNDS rounds
    that measured both, where b/a's 95 % interval excludes 1; from two, where it lies beyond
    FEW_ROUNDS_MARGIN; else 0."""
    found, margin = paired(a, b), 1.0
    if found is None:
        found, margin = paired(a, b, least=MIN_PAIRED_ROUNDS), FEW_ROUNDS_MARGIN
    if found is None:
        return 0
    lo, hi = found.ci95
    return -1 if lo > margin else 1 if hi < 1 / margin else 0


def one_way(a: Point, b: Point) -> bool:
    """Whether every round that measured both puts them in one order."""
    theirs = dict(b.rounds)
    signs = {(theirs[k] > x) - (theirs[k] < x) for k, x in a.rounds if k in theirs}
    return len(signs) <= 1 and 0 not in signs


def paired(a: Point, b: Point, least: int = MIN_RIVAL_ROUNDS) -> LogRatio | None:
    """log(b/a) from their paired per-round differences, where one run measured both side by side in
    `least` rounds or more (one Pairing); else None."""
    if a.pairing is None or b.pairing is None or a.pairing.run != b.pairing.run:
        return None
    if len(dict(a.rounds).keys() & dict(b.rounds).keys()) < least:
        return None
    found = paired_log_ratio(dict(a.rounds), dict(b.rounds), a.pairing.prior)
    return None if found is None else found.estimate


class Case(Protocol):
    """What bracketing reads of a measured case: its record's fields (results.record.CaseRecord)."""

    @property
    def size(self) -> Any: ...
    @property
    def median_s(self) -> float | None: ...
    @property
    def ci95_s(self) -> tuple[float, float] | None: ...
    @property
    def samples_s(self) -> tuple[float, ...]: ...
    @property
    def iqr_s(self) -> float | None: ...
    @property
    def noisy(self) -> bool | None: ...
    @property
    def n_processes(self) -> int | None: ...


@runtime_checkable
class Viewed(Case, Protocol):
    """A case as a report views it (report.view.CaseView): its record, the interval and quartiles the
    report draws from it, and its rounds and its run's pairing."""

    @property
    def ci_low_s(self) -> float | None: ...
    @property
    def ci_high_s(self) -> float | None: ...
    @property
    def q25_s(self) -> float | None: ...
    @property
    def q75_s(self) -> float | None: ...
    @property
    def rounds(self) -> tuple[tuple[int, float], ...]: ...
    @property
    def pairing(self) -> Pairing | None: ...
    @property
    def reach(self) -> float: ...
    @property
    def slowed(self) -> tuple[tuple[int, float], ...]: ...
    @property
    def spell(self) -> float: ...


def point(r: Case) -> Point:
    """A case (its record, or its report view) as a point: its size, median and 95 % interval, and a
    view's rounds and pairing. A record written without an interval gets its samples' (as its report
    view does); one without samples either, an unbounded one: it decides nothing."""
    if not isinstance(r, Viewed):
        return _placed(r, *_interval(r), None, None)
    if r.ci_low_s and r.ci_high_s:
        low, high = r.ci_low_s, r.ci_high_s
    else:
        low, high = _interval(r)
    return _placed(r, low, high, r.q25_s, r.q75_s, r.rounds, r.pairing, r.reach, r.slowed, r.spell)


def _interval(r: Case) -> tuple[float, float]:
    samples = r.samples_s
    return r.ci95_s or (Measurement(tuple(samples)).ci95 if samples else (0.0, math.inf))


def _placed(r: Case, low: float, high: float, q25: float | None, q75: float | None,
            rounds: tuple[tuple[int, float], ...] = (), pairing: Pairing | None = None,
            reach: float = 1.0, slowed: tuple[tuple[int, float], ...] = (), spell: float = math.inf) -> Point:
    median = r.median_s
    if median is None:
        raise ValueError(f"a case of size {r.size} has no median to place")
    if (r.n_processes or 1) <= 1 and r.noisy:
        low, high = _noisy_single_process(median, r.iqr_s, q25, q75, low, high)
    return Point(r.size, median, low, high, rounds, pairing, reach, slowed, spell)


def _noisy_single_process(median: float, iqr: float | None, q25: float | None, q75: float | None,
                          low: float, high: float) -> tuple[float, float]:
    """A noisy case measured in one process: its median's interval knows nothing of how far the next
    process would land (issue 33: "vmap beats the loop at b = 1" from samples spread ±102 %, an
    interval of ±7 %), so a claim needs it apart from the other case by its samples' middle half too
    (its view's quartiles, else its median ± half its IQR)."""
    half = (iqr or 0.0) / 2
    q25, q75 = q25 or median - half, q75 or median + half
    return min(low, max(q25, 0.0)), max(high, q75)


def order(a: Case, b: Case, factor: float = 1.0) -> int:
    """`side` of two cases: -1 where `a` is more than `factor` times faster than `b` beyond noise
    (faster, at the default 1), +1 where it is less than that beyond noise, 0 where the data cannot
    tell (paired by round where one run measured both side by side: a report's views carry their
    `rounds` and `pairing`). Every claim the report makes about one case against another (fastest,
    ahead by, a crossover, vmap against the loop, one device count against another, a speedup beyond
    what the hardware allows) is decided here."""
    return side(point(a).times(factor), point(b))


def _gap_sign(a: Point, b: Point) -> int:
    return (a.median > b.median) - (a.median < b.median)


def _midpoint(lo: float, hi: float) -> int | None:
    """The integer size at the geometric middle of (lo, hi); None when no integer lies strictly between."""
    mid = round(math.sqrt(lo * hi))
    return mid if lo < mid < hi else None


def brackets(name_a: str, a: Mapping[float, Point], name_b: str, b: Mapping[float, Point]) -> list[Bracket]:
    """Every change of order between series `a` and `b` over the sizes both were measured at."""
    sizes = sorted(set(a) & set(b))
    signs = [(s, _gap_sign(a[s], b[s])) for s in sizes]
    signs = [(s, g) for s, g in signs if g != 0]  # an exact tie is not a side
    found: dict[tuple[float, float], Bracket] = {}
    for (s0, g0), (s1, g1) in zip(signs, signs[1:], strict=False):
        if g0 == g1:
            continue
        # Widen to the nearest sizes where the intervals separate on each side of the flip.
        below = [s for s in sizes if s <= s0 and side(a[s], b[s]) == g0]
        above = [s for s in sizes if s >= s1 and side(a[s], b[s]) == g1]
        lo = below[-1] if below else sizes[0]
        hi = above[0] if above else sizes[-1]
        if (lo, hi) in found:
            continue  # noise flipping the medians twice inside one bracket is one crossover
        inside = [s for s in sizes if lo <= s <= hi]
        widest = max(zip(inside, inside[1:], strict=False), key=lambda g: g[1] / g[0])
        separated = bool(below) and bool(above)
        nxt = _midpoint(*widest) if widest[1] / widest[0] > MAX_RATIO else None
        if nxt is not None:
            state = OPEN
        elif separated and (hi / lo <= MAX_RATIO or _midpoint(lo, hi) is None):
            state = BRACKETED
        else:
            state = TIE
        # Where the two lines cross: log-linear across the flip of the medians when they flip once
        # between lo and hi; where noise flips them back and forth (a tie), across lo and hi, since
        # the first flip then says nothing.
        inner = [g for s, g in signs if lo <= s <= hi]
        flips = sum(g != h for g, h in zip(inner, inner[1:], strict=False))
        ends_apart = _gap_sign(a[lo], b[lo]) == g0 and _gap_sign(a[hi], b[hi]) == g1
        e0, e1 = (lo, hi) if flips > 1 and ends_apart else (s0, s1)
        frac = math.log(a[e0].median / b[e0].median) / (
            math.log(a[e0].median / b[e0].median) - math.log(a[e1].median / b[e1].median))
        x = math.exp(math.log(e0) + frac * math.log(e1 / e0))
        t = math.exp(math.log(a[e0].median) + frac * math.log(a[e1].median / a[e0].median))
        below_name, above_name = (name_a, name_b) if g0 < 0 else (name_b, name_a)
        found[(lo, hi)] = Bracket(below_name, above_name, lo, hi, x, t, state, nxt)
    return list(found.values())


def proposals(series: Mapping[str, Mapping[float, Point]]) -> dict[int, set[str]]:
    """Sizes to measure next, each with the labels whose open brackets need it; empty when done."""
    out: dict[int, set[str]] = {}
    for name_a, name_b in combinations(sorted(series), 2):
        for br in brackets(name_a, series[name_a], name_b, series[name_b]):
            if br.next_size is not None:
                out.setdefault(br.next_size, set()).update((name_a, name_b))
    return out
