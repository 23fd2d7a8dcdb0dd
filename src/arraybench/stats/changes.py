"""Lasting step changes in each series of one machine's runs, told apart from the host's slow spells.

The method, for the runs of ONE machine in time order and each series (one case id) measured in them:

1. Log times. y[s, r] = log median_s of series s in run r (missing where the run did not measure it
   correctly).
2. The host factor of each run, divided out. h[r] = the median over the run's series of
   y[s, r] − (series s's median level), where the run measured at least HOST_MIN_SERIES series; else 0.
   A slow spell of the host moves every case of a run alike and so moves h, not one framework's
   series; a step of a few series moves the median of hundreds hardly at all. z[s, r] = y[s, r] − h[r].
   The levels are then taken again from the steps found (each series' median between its steps)
   and h read once more, so that many series stepping at one run (a framework upgrade) leak less
   into the others.
3. Noise. σ_s = 1.4826 · MAD(first differences of z_s) / √2: the run-to-run spread, which a step
   (one large difference) does not inflate. A lone outlier is pulled in to the series' running
   median (2·MIN_SIDE + 1 runs) ± WINSOR_SIGMAS · σ before the test, so one wild night is no step.
4. Binary segmentation. In a stretch of the series, every split with at least MIN_SIDE runs on each
   side is scored by t = |mean(after) − mean(before)| / (σ · √(1/n_before + 1/n_after)); the best
   split is kept if t passes the threshold, then both sides are searched again.
   The threshold is a two-sided normal test at family-wise level ALPHA, Bonferroni-corrected for
   every candidate split of every series of the machine: z = Φ⁻¹(1 − ALPHA / (2 · series · splits)),
   about 5.3 at 300 series × 330 runs.
5. Size. A step is reported only if it is also at least MIN_STEP (5 %) in size: steps are checked
   again between their final neighbours (the test and the size) and dropped until every one passes.
   Each step's place is then settled to the split between its neighbours that fits two medians best
   (least absolute deviation), which a single outlying night next to the step cannot move.

A step therefore shows once MIN_SIDE runs have measured the new level. Its ratio (after/before, > 1
slower) and the 95 % interval of that ratio are the means' of the host-corrected log times; its levels
are in seconds at the host's typical speed (the median host factor).

asv's step detection fits a piecewise-constant curve with a penalty per step (its noise weighted by
each point's interval); conbench's lookback z-score compares each new result with the spread of the
recent ones. Neither removes a slow spell that reaches every benchmark of a night; the host factor
here does, which the binary segmentation's test then needs not to absorb.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

# Each side of a step holds at least this many runs: a lasting change, not one slow night.
MIN_SIDE = 5
# Smaller steps are not reported however certain: a change of a few % is rarely worth anyone's time.
MIN_STEP = 0.05
# The chance that a machine's history shows any false change at all, where its noise is as measured.
ALPHA = 0.01
# The host factor needs this many series in a run to be told from one series' own change.
HOST_MIN_SERIES = 3
# A point further than this many σ from its running median is pulled in to that distance.
WINSOR_SIGMAS = 3.0
# The 95 % interval of a ratio.
Z95 = NormalDist().inv_cdf(0.975)
ROBUST_SD = 1.4826  # the median absolute deviation's factor to a normal standard deviation
# σ is never taken as smaller than this (0.1 %): a series of identical times would make any
# difference infinitely significant.
MIN_SIGMA = 1e-3


@dataclass(frozen=True)
class Series:
    """One case's median seconds per run of one machine, in the machine's run order (None: not measured)."""

    key: str  # the case id
    medians: Sequence[float | None]


@dataclass(frozen=True)
class Step:
    """A lasting change in one series: from run index `at` on, its time is `ratio` × before."""

    key: str
    at: int  # index (into the machine's runs) of the first run at the new level
    before_s: float
    after_s: float
    ratio: float  # after / before: > 1 slower
    low: float  # the ratio's 95 % interval
    high: float

    @property
    def slower(self) -> bool:
        return self.ratio > 1


def steps(series: Sequence[Series], runs: int, *, alpha: float = ALPHA, min_side: int = MIN_SIDE,
          min_step: float = MIN_STEP, host: bool = True) -> list[Step]:
    """Every lasting step of every series of one machine's `runs` runs (see the module's method).
    `host`: divide out each run's host factor (step 2); a series of memory figures, which a slow host
    does not move, is read without it (its levels are then in its own unit, bytes, not seconds)."""
    if not series:
        return []
    for s in series:
        if len(s.medians) != runs:
            raise ValueError(f"series {s.key} has {len(s.medians)} values for {runs} runs")
    raw = np.array([[np.nan if m is None else m for m in s.medians] for s in series], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.log(np.where(raw > 0, raw, np.nan))
    splits = max(1, runs - 2 * min_side + 1)
    threshold = NormalDist().inv_cdf(1 - alpha / (2 * len(series) * splits))
    levels = np.stack([_piecewise_median(row, []) for row in y])
    for _ in range(2):  # levels from the steps found, then the host factor read again
        factor = host_factor(y, levels) if host else np.zeros(runs)
        z = y - factor
        found = []
        for i in range(len(series)):
            prepared = _prepared(z[i], min_side)
            cuts = _segment(prepared, threshold, min_side, min_step)
            found.append((prepared, cuts))
            levels[i] = _piecewise_median(z[i], cuts)
    typical = float(np.median(factor))
    out = []
    for s, (prepared, cuts) in zip(series, found, strict=True):
        out.extend(_describe(s.key, prepared, cuts, typical))
    return out


def host_factor(y: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Each run's median log-ratio to its series' levels (0 where it measured too few series)."""
    dev = y - levels
    counts = np.isfinite(dev).sum(axis=0)
    out = np.zeros(y.shape[1])
    enough = counts >= HOST_MIN_SERIES
    if enough.any():
        out[enough] = np.nanmedian(dev[:, enough], axis=0)
    return out


def _piecewise_median(z: np.ndarray, cuts: Sequence[int]) -> np.ndarray:
    """Per run, the median of z between the steps around it (NaN where z has no value at all)."""
    out = np.full_like(z, np.nan)
    bounds = [0, *cuts, len(z)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        part = z[a:b]
        if np.isfinite(part).any():
            out[a:b] = np.nanmedian(part)
    return out


def noise(z: np.ndarray) -> float:
    """σ of a series' run-to-run noise from its first differences, which a step hardly moves."""
    d = np.diff(z)
    if len(d) < 2:
        return MIN_SIGMA
    return max(MIN_SIGMA, ROBUST_SD * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2))


def _winsorized(z: np.ndarray, sigma: float, half: int) -> np.ndarray:
    """z with each point pulled in to its running median (2·half + 1 points) ± WINSOR_SIGMAS · σ."""
    padded = np.pad(z, half, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1)
    centre = np.partition(windows, half, axis=1)[:, half]  # the median of an odd count, without np.median's checks
    return np.clip(z, centre - WINSOR_SIGMAS * sigma, centre + WINSOR_SIGMAS * sigma)


# A series' measured runs (their indices), its values there winsorized, and its noise σ.
Prepared = tuple[np.ndarray, np.ndarray, float]


def _prepared(z_all: np.ndarray, min_side: int) -> Prepared:
    """A series' measured runs (indices), their values winsorized, and its noise σ."""
    where = np.flatnonzero(np.isfinite(z_all))
    z = z_all[where]
    sigma = noise(z)
    if len(z) < 3:
        return where, z, sigma
    w = _winsorized(z, sigma, min_side)
    # The test is on means of w, whose spread is that of w, not the normal σ its median absolute
    # deviation reads: with heavy tails (a few runs 20 % off), the mean's spread is larger. Read it from
    # w's differences, each clipped as w was (a step's one large difference is no noise).
    d = np.diff(w)
    bound = WINSOR_SIGMAS * math.sqrt(2) * sigma
    clipped = np.clip(d - np.median(d), -bound, bound)
    return where, w, max(sigma, float(np.sqrt(np.mean(clipped ** 2) / 2)))


def _segment(prepared: Prepared, threshold: float, min_side: int, min_step: float) -> list[int]:
    """The step positions (run indices of the first run at a new level) of one host-corrected series."""
    where, w, sigma = prepared
    if len(w) < 2 * min_side:
        return []
    cuts: list[int] = []
    todo = [(0, len(w))]
    while todo:
        a, b = todo.pop()
        k, t = _best_split(w[a:b], min_side)
        if k is not None and t / sigma > threshold:
            cuts.append(a + k)
            todo += [(a, a + k), (a + k, b)]
    cuts = _pruned(sorted(cuts), w, sigma, threshold, min_side, min_step)
    return [int(where[c]) for c in cuts]


def _best_split(w: np.ndarray, min_side: int) -> tuple[int | None, float]:
    """The split of w with the largest mean difference in σ units (σ = 1), and that difference."""
    n = len(w)
    if n < 2 * min_side:
        return None, 0.0
    csum = np.cumsum(w)
    k = np.arange(min_side, n - min_side + 1)
    left = csum[k - 1] / k
    right = (csum[-1] - csum[k - 1]) / (n - k)
    t = np.abs(right - left) / np.sqrt(1 / k + 1 / (n - k))
    best = int(np.argmax(t))
    return int(k[best]), float(t[best])


def _pruned(cuts: list[int], w: np.ndarray, sigma: float, threshold: float, min_side: int,
            min_step: float) -> list[int]:
    """The cuts that, between their final neighbours, pass the test and the size with MIN_SIDE runs
    each side, each settled where two medians fit best; the weakest failing one is dropped until every one
    passes."""
    while cuts:
        cuts = [_settled(w, c, lo, hi, min_side) for c, lo, hi in _neighbours(cuts, len(w))]
        scores = []
        for c, lo, hi in _neighbours(cuts, len(w)):
            before, after = w[lo:c], w[c:hi]
            diff = float(after.mean() - before.mean())
            t = abs(diff) / (sigma * math.sqrt(1 / len(before) + 1 / len(after)))
            passes = t > threshold and abs(math.expm1(diff)) >= min_step and min(len(before), len(after)) >= min_side
            scores.append((passes, t))
        if all(p for p, _ in scores):
            return cuts
        weakest = min((t, i) for i, (p, t) in enumerate(scores) if not p)[1]
        cuts = cuts[:weakest] + cuts[weakest + 1:]
    return cuts


def _neighbours(cuts: Sequence[int], n: int) -> list[tuple[int, int, int]]:
    bounds = [0, *cuts, n]
    return [(bounds[i], bounds[i - 1], bounds[i + 1]) for i in range(1, len(bounds) - 1)]


def _settled(w: np.ndarray, cut: int, lo: int, hi: int, min_side: int) -> int:
    """The split in [cut − min_side, cut + min_side] whose two medians leave the least absolute
    deviation: the step's place, robust to one odd night beside it. It may leave a side shorter than
    min_side (a step 3 runs before the end, found at 5 by the test), which then fails the pruning."""
    best, best_cost = cut, math.inf
    for k in range(max(lo + 1, cut - min_side), min(hi - 1, cut + min_side) + 1):
        before, after = w[lo:k], w[k:hi]
        cost = float(np.abs(before - np.median(before)).sum() + np.abs(after - np.median(after)).sum())
        if cost < best_cost - 1e-12:
            best, best_cost = k, cost
    return best


def _describe(key: str, prepared: Prepared, cuts: Sequence[int], typical: float) -> list[Step]:
    """Each cut of a series as a Step: levels, ratio and its interval, from its neighbours' means (of the
    winsorized values the test saw)."""
    where, w, sigma = prepared
    out = []
    for c, lo, hi in _neighbours([int(np.searchsorted(where, c)) for c in cuts], len(w)):
        before, after = w[lo:c], w[c:hi]
        diff = float(after.mean() - before.mean())
        half = Z95 * sigma * math.sqrt(1 / len(before) + 1 / len(after))
        out.append(Step(key, int(where[c]), math.exp(float(before.mean()) + typical),
                        math.exp(float(after.mean()) + typical), math.exp(diff), math.exp(diff - half),
                        math.exp(diff + half)))
    return out
