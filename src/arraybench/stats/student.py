"""Student's t in pure Python, and the interval and test of a log ratio built on it."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist

# Past this many degrees of freedom t is the normal distribution to better than 1e-6: the
# continued fraction below would need about √df terms for nothing.
NORMAL_DF = 1e7
_EPS = 1e-15
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > _TINY else _TINY)
            c = 1 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1) < _EPS:
            break
    return h


def _beta_regularized(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 ≤ x ≤ 1."""
    if x <= 0 or x >= 1:
        return max(0.0, min(1.0, x))
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1 - math.exp(log_front) * _beta_fraction(b, a, 1 - x) / b


def t_sf(x: float, df: float) -> float:
    """P(T > x) for Student's t with `df` > 0 (not necessarily whole) degrees of freedom; inf: normal."""
    if df >= NORMAL_DF:
        return 0.5 * math.erfc(x / math.sqrt(2))
    tail = 0.5 * _beta_regularized(df / 2, 0.5, df / (df + x * x))
    return tail if x >= 0 else 1 - tail


def t_pdf(x: float, df: float) -> float:
    """The density of Student's t at x."""
    if df >= NORMAL_DF:
        return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))


@functools.lru_cache(maxsize=4096)
def t_isf(q: float, df: float) -> float:
    """The x with P(T > x) = q, for 0 < q < 1: Newton's method from the normal quantile, kept
    inside a bracket by bisection (t_sf is monotone, its slope −t_pdf). Cached: a comparison and
    the stop rule ask for the same few levels and degrees of freedom over and over."""
    if df >= NORMAL_DF:
        return -NormalDist().inv_cdf(q)
    if q >= 0.5:
        return -t_isf(1 - q, df) if q > 0.5 else 0.0
    lo, hi = 0.0, max(1.0, -NormalDist().inv_cdf(q))
    while t_sf(hi, df) > q:
        lo, hi = hi, 2 * hi
    x = hi
    for _ in range(200):
        excess = t_sf(x, df) - q
        if excess > 0:
            lo = x
        else:
            hi = x
        step = excess / t_pdf(x, df)
        if abs(step) <= 1e-12 * x or hi - lo <= 1e-12 * hi:
            break
        x = x + step if lo < x + step < hi else 0.5 * (lo + hi)
    return x


def bounded_exp(x: float) -> float:
    """exp, 0 or inf past a float's range: a t quantile of few degrees of freedom can be vast."""
    if x > 709.0:
        return math.inf
    return math.exp(x) if x > -745.0 else 0.0


@dataclass(frozen=True)
class LogRatio:
    """The log of a ratio of times (new over old), its standard error and that error's degrees of
    freedom: what an interval, a test and a detectable change are made of. `df` may be inf (the
    error taken as known)."""

    value: float
    se: float
    df: float

    @property
    def ratio(self) -> float:
        return math.exp(self.value)

    @property
    def ci95(self) -> tuple[float, float]:
        return self.interval(0.05)

    def interval(self, level: float) -> tuple[float, float]:
        """The two-sided 1 − `level` interval of the ratio (level 0.05: the 95 % interval)."""
        half = t_isf(level / 2, self.df) * self.se
        return bounded_exp(self.value - half), bounded_exp(self.value + half)

    @property
    def p_value(self) -> float:
        """Two-sided p of "the ratio is 1"."""
        if self.se == 0:
            return 1.0 if self.value == 0 else 0.0
        return min(1.0, 2 * t_sf(abs(self.value) / self.se, self.df))
