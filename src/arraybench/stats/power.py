"""The smallest change a comparison could have detected: what "too noisy to say" could have seen.

An undecided verdict is only as good as the change it could have caught. Compare calls a case
slower when its test is significant at the level its FDR correction applies and its ratio is
beyond the threshold (verdicts.decide); for an estimate with standard error `se` on `df` degrees
of freedom, the true change that gets that verdict four times in five is the detectable change
at 80 % power: "no change larger than 7 % (80 % power)". It is at least the threshold, since a
smaller change is never called.
"""

from __future__ import annotations

import functools
import math

from arraybench.stats import bracket
from arraybench.stats.student import NORMAL_DF, bounded_exp, t_isf
from arraybench.stats.verdicts import ALPHA

POWER = 0.8
# Up to this many degrees of freedom the power is integrated over the estimate's likely values
# (± SPAN standard errors around the true change, at NODES Gauss–Legendre points), where it is a
# normal density times a χ² distribution function; with more, that function turns into a step
# (the error is nearly known) and the power is integrated over the error instead, at NODES
# Gauss–Hermite points of Wilson–Hilferty's normal approximation of χ². Against 3000 points of the
# first, either is within 2·10⁻⁴ of the power from 1 to 10⁵ degrees of freedom.
EXACT_DF = 20
NODES = 24
SPAN = 8.5


def bh_level(discoveries: int, tests: int, alpha: float = ALPHA) -> float:
    """The p-value below which Benjamini–Hochberg would also have called one more case of a
    comparison that made `discoveries` of `tests`: (R + 1)·α/m. With none found among 300 cases a
    case must reach α/300; with every other one found, α."""
    return min(alpha, alpha * (discoveries + 1) / max(tests, 1))


def gamma_lower(a: float, x: float) -> float:
    """P(a, x), the regularized lower incomplete gamma function: the series below a + 1, the
    continued fraction (modified Lentz) above, as in Numerical Recipes."""
    if x <= 0:
        return 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1 / a
        n = a
        while abs(term) > 1e-15 * abs(total):
            n += 1
            term *= x / n
            total += term
        return total * math.exp(log_front)
    b, c, d = x + 1 - a, 1 / 1e-300, 1 / (x + 1 - a)
    h = d
    for i in range(1, 100_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1 / (d if abs(d) > 1e-300 else 1e-300)
        c = b + an / c
        c = c if abs(c) > 1e-300 else 1e-300
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return 1 - math.exp(log_front) * h


def detection_power(change: float, se: float, df: float, floor: float, crit: float) -> float:
    """The chance that a true log change `change` > 0 is called slower: the estimate L ~ N(change, se²)
    is beyond the threshold (L > `floor`, its log) and significant (L > t·s = `crit`·s/se, s the
    standard error estimated on `df` degrees of freedom: s²/se² ~ χ²_df/df). Given L = l, the
    second holds with probability P(χ²_df < df·(l/crit)²), integrated over l past the threshold;
    or, given s, both hold with probability Φ((change − max(floor, crit·s/se))/se), integrated
    over s (see EXACT_DF). The wrong-way verdict (faster) counts as not seen."""
    if se == 0:
        return 1.0 if change > floor else 0.0

    def seen(bar: float) -> float:  # P(L > bar)
        return 0.5 * math.erfc((bar - change) / (se * math.sqrt(2)))

    if df >= NORMAL_DF:
        return seen(max(floor, crit))
    if df > EXACT_DF:
        k = 2 / (9 * df)
        return sum(w * seen(max(floor, crit * max(0.0, 1 - k + z * math.sqrt(k)) ** 1.5))
                   for z, w in zip(*_nodes("hermite"), strict=True))
    lo, hi = max(floor, change - SPAN * se), change + SPAN * se
    if lo >= hi:
        return 0.0
    total = 0.0
    for x, w in zip(*_nodes("legendre"), strict=True):
        z = lo + (hi - lo) * x
        density = math.exp(-0.5 * ((z - change) / se) ** 2) / (se * math.sqrt(2 * math.pi))
        total += w * density * gamma_lower(df / 2, df / 2 * (z / crit) ** 2)
    return total * (hi - lo)


@functools.cache
def _nodes(rule: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """NODES points and weights: Gauss–Legendre on [0, 1], or Gauss–Hermite for a standard normal."""
    import numpy as np

    if rule == "legendre":
        x, w = np.polynomial.legendre.leggauss(NODES)
        return tuple((x + 1) / 2), tuple(w / 2)
    x, w = np.polynomial.hermite_e.hermegauss(NODES)
    return tuple(x), tuple(w / w.sum())


def detectable_change(se: float, df: float, threshold: float, level: float = ALPHA, power: float = POWER) -> float:
    """The smallest slowdown (as a fraction: 0.07 is 7 %) that the verdict would catch with
    probability `power`, for an estimate of log ratio with standard error `se` on `df` degrees of
    freedom, tested at `level` with `threshold`. A speedup of the same log size (1 − 1/1.07) is the
    smaller fraction, so "no change larger than" the figure holds both ways."""
    floor = math.log1p(threshold)
    if se == 0:
        return threshold
    crit = t_isf(level / 2, df) * se

    def short(change: float) -> float:  # how far its power falls short of `power`
        return power - detection_power(change, se, df, floor, crit)

    # Regula falsi (Illinois) from a bracket around the textbook figure (t_{α/2} + t_{1−power})·se.
    guess = max(floor + se * t_isf(1 - power, math.inf), crit + t_isf(1 - power, df) * se)
    lo, hi = max(floor, 0.9 * guess), 1.1 * guess
    f_lo, f_hi = short(lo), short(hi)
    while f_lo < 0:
        hi, f_hi = lo, f_lo
        lo = max(floor, lo - (hi - floor) / 2 - se)
        f_lo = short(lo)
    while f_hi > 0:
        lo, f_lo = hi, f_hi
        hi = 2 * hi
        f_hi = short(hi)
    side = 0
    while hi - lo > 1e-5 * hi:
        mid = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        f_mid = short(mid)
        if f_mid == 0:
            return bounded_exp(mid) - 1
        if f_mid > 0:
            lo, f_lo = mid, f_mid
            f_hi, side = (f_hi / 2, -1) if side == -1 else (f_hi, -1)
        else:
            hi, f_hi = mid, f_mid
            f_lo, side = (f_lo / 2, 1) if side == 1 else (f_lo, 1)
    return bounded_exp(hi) - 1


def interval_se(r: bracket.Case, low: float, high: float) -> float:
    """The standard error of a case's log median, from its 95 % interval [`low`, `high`] (bracket.point).
    With several processes that interval is where a repeat run's median falls, ±z·√2·se
    (measurement.Replicated.ci95); with one, the median's own, ±z·se. z is the normal quantile, not
    Student's t of the case's unrecorded degrees of freedom: never smaller than the se was, so what
    the figure below says could be seen is, if anything, more than was needed."""
    z = t_isf(0.025, math.inf) * (math.sqrt(2) if (r.n_processes or 1) > 1 else 1.0)
    return math.log(high / low) / (2 * z) if low > 0 and math.isfinite(high) else math.inf


def detectable_gap(a: bracket.Case, b: bracket.Case, power: float = POWER) -> float:
    """The smallest difference between two cases (as a fraction: 0.12 is 12 %) that the report's test
    of which is faster (bracket.order: their 95 % intervals apart) would have found with probability
    `power`: what a tie "within noise" could have seen.

    In logs, the slower case's interval clears the faster's when the difference of their medians L
    exceeds c, the faster's upper half-width plus the slower's lower one; L ~ N(D, se_a² + se_b²), so
    a true difference D is found with probability Φ((D − c)/σ) and D = c + z_power·σ. Either may be
    the faster: the figure is the larger of the two ways round.

    Where the two are paired (one run measured them side by side: bracket.paired), the test is their
    paired interval's, and D = (t₀.₉₇₅ + t_power)·se with its degrees of freedom."""
    pa, pb = bracket.point(a), bracket.point(b)
    both = bracket.paired(pa, pb)
    if both is not None:
        return bounded_exp((t_isf(0.025, both.df) + t_isf(1 - power, both.df)) * both.se) - 1
    sigma = math.hypot(interval_se(a, pa.low, pa.high), interval_se(b, pb.low, pb.high))
    if not math.isfinite(sigma):
        return math.inf

    def needs(fast: bracket.Point, slow: bracket.Point) -> float:  # the c above, in logs
        return math.log(fast.high / fast.median) + math.log(slow.median / slow.low)

    c = max(needs(pa, pb), needs(pb, pa))
    return bounded_exp(c + t_isf(1 - power, math.inf) * sigma) - 1


# A change it could miss past ×1000 is any change: a side of 2 processes judged on its own spread (one
# degree of freedom) sees only vast ones, and ×3,354,366,091 says nothing more than that.
BEYOND_SEEING = 999.0


def phrase(fraction: float, power: float = POWER, noun: str = "change") -> str:
    """What an undecided verdict could have seen: "no change larger than 7 % (80 % power)" (`noun`:
    "difference" for two cases tied within noise); past ×10 the change is a factor (a case of 2
    processes a side and 1 degree of freedom can see only vast ones). A change of 100 % or more is a
    factor: "no difference larger than ×8", never "701 %"."""
    seen = f"({100 * power:.0f} % power)"
    if math.isinf(fraction) or fraction >= BEYOND_SEEING:
        return f"it could have missed a {noun} of any size {seen}"
    percent = 100 * fraction
    if percent >= 100:
        factor = 1 + fraction  # written as the report writes a lead: 26×, 4,920×, never 4.92e+03
        return f"no {noun} larger than ×{f'{factor:.2g}' if factor < 100 else f'{factor:,.0f}'} {seen}"
    figure = f"{percent:.0f}" if percent >= 9.95 else f"{percent:.1f}".removesuffix(".0")
    return f"no {noun} larger than {figure} % {seen}"
