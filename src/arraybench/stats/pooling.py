"""Pooling the variation between processes over the cases of a run (empirical Bayes).

A case measured in R = 3 processes knows its own spread between processes from 2 degrees of
freedom: Student's t(2) then asks for ±4.3 standard errors where a known spread asks for ±1.96,
and the estimate itself can be off by ×3 either way. Yet the cases of one run share the
machine, the allocator set-up and the harness, so their spreads are alike. Smyth's moderated
variance (limma, 2004) borrows from them: the log variances of a run's cases are fitted to a
scaled inverse-χ² prior with `df` degrees of freedom around `variance`, and each case's own
variance is shrunk toward it,

    s̃² = (df·variance + d·s²) / (df + d),   with df + d degrees of freedom.

When the cases agree the prior carries many degrees of freedom and intervals narrow to what
the run really knows; when they differ it carries few and each case mostly speaks for itself.
The fit is by moments (Smyth 2004, section 6.2) and needs no SciPy: a run does not import it.

A case far noisier than its run is not shrunk (`moderate`): where its own variance lies beyond what
the prior allows (the upper tail of F(d, df) below HYPERVARIABLE), it speaks for itself, with its
own d degrees of freedom, as limma's robust fit protects its hypervariable genes (Phipson et al.,
2016). Otherwise a run of cases agreeing to 4 % lent PyTorch's 2-thread FFT at n = 10⁶ their
spread: its eight processes read 2.4 to 3.3 ms (13 % a process), its interval came out ±6 %, and
two identical runs beside a noisy neighbour disagreed by ×0.82.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

# A case's own variance further above the prior than F(d, df) allows at this upper-tail probability is
# no draw from it (its framework's pool, a size at a cache's edge): it is not shrunk.
HYPERVARIABLE = 0.01
# Below this many cases the prior's own spread is too uncertain to lean on.
MIN_CASES = 8
# A prior worth more than this many degrees of freedom is taken as this many: a case that is
# noisier than its run still widens its own interval.
MAX_PRIOR_DF = 60.0
# A prior worth fewer than this many degrees of freedom is weak: its cases' variances lie so far apart
# (at 4, one standard deviation of their logs is ×2.2; the rivals of a run beside a neighbour fit 0.9 to
# 2.9) that they are no draws from one spread, and one far above its centre is no outlier of it.
WEAK_DF = 4.0


def digamma(x: float) -> float:
    """ψ(x) for x > 0: recurrence up to x ≥ 10, then the asymptotic series."""
    out = 0.0
    while x < 10:
        out -= 1 / x
        x += 1
    f = 1 / (x * x)
    return out + math.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))


def trigamma(x: float) -> float:
    """ψ′(x) for x > 0: recurrence up to x ≥ 10, then the asymptotic series."""
    out = 0.0
    while x < 10:
        out += 1 / (x * x)
        x += 1
    f = 1 / (x * x)
    return out + 1 / x + f / 2 + (f / x) * (1 / 6 - f * (1 / 30 - f * (1 / 42 - f / 30)))


def trigamma_inverse(y: float) -> float:
    """The x with ψ′(x) = y (y > 0), by Newton's method on 1/ψ′ as in Smyth (2004)."""
    if y > 1e7:
        return 1 / math.sqrt(y)
    if y < 1e-6:
        return 1 / y
    x = 0.5 + 1 / y
    for _ in range(50):
        tri = trigamma(x)
        # d/dx of ψ′ is ψ″; estimate it by a central difference (ψ′ is smooth and x is not tiny).
        h = 1e-5 * x
        tetra = (trigamma(x + h) - trigamma(x - h)) / (2 * h)
        step = tri * (1 - tri / y) / tetra
        x += step  # ψ″ < 0: the step is negative while ψ′(x) > y
        if -step / x < 1e-8:
            break
    return x


def t975(df: float) -> float:
    """The 97.5th percentile of Student's t with `df` (not necessarily whole) degrees of freedom.

    Whole df up to 10 from the table, fractional ones interpolated in 1/df (on which the
    quantile is nearly linear), larger df from the Cornish–Fisher series.
    """
    if df <= 0:
        raise ValueError("t975 needs positive degrees of freedom")
    if df > len(T975):
        z = 1.959963984540054
        return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
                + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))
    lo = max(1, math.floor(df))
    if lo == df:
        return T975[lo - 1]
    w = (1 / lo - 1 / df) / (1 / lo - 1 / (lo + 1))  # linear in 1/df between the table's neighbours
    return T975[lo - 1] + w * (T975[lo] - T975[lo - 1])


def beta_regularized(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, by its continued fraction (modified Lentz)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast below this point: use the symmetry
        return 1.0 - beta_regularized(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    out = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            out *= c * d
        if abs(c * d - 1) < 1e-12:
            break
    return front * out


def f_upper_tail(f: float, d1: float, d2: float) -> float:
    """P(F ≥ f) for Snedecor's F with (d1, d2) degrees of freedom."""
    if f <= 0:
        return 1.0
    return beta_regularized(d2 / 2, d1 / 2, d2 / (d2 + d1 * f))


# Student's t, 97.5th percentile, for 1..10 degrees of freedom.
T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281)


@dataclass(frozen=True)
class VariancePrior:
    """What a run's cases say about the variance of one case's log point estimate.

    `variance` is the typical variance (s0²), `df` how many degrees of freedom it is worth
    (d0), `cases` how many cases it was fitted to. df = 0 is no prior: each case alone.
    """

    variance: float
    df: float
    cases: int

    def moderate(self, variance: float, df: float, robust: bool = True,
                 floor: bool = False) -> tuple[float, float]:
        """A case's own (variance, df) shrunk toward the prior: the pooled variance and its df; its own,
        where it is hypervariable (`robust`); and with `floor`, where the prior is `weak`, never below its
        own: the prior then lends degrees of freedom, not narrowness (the paired rounds of a run's rivals,
        stats/paired.py)."""
        if self.df <= 0 or not math.isfinite(self.variance):
            return variance, df
        if robust and self.hypervariable(variance, df):
            return variance, df
        pooled = (self.df * self.variance + df * variance) / (self.df + df)
        return (max(pooled, variance) if floor and self.weak else pooled), self.df + df

    @property
    def weak(self) -> bool:
        """Whether the prior is worth fewer than WEAK_DF degrees of freedom. Its cases' variances then
        spread so far that the test of `hypervariable` cannot tell a case far above the centre from a
        draw: at F(2, 1.2) a case 25× above it is in the upper tenth. Beside a neighbour, JAX's eager and
        jitted add of 10⁶ floats read per-round log differences of 0.39, 0.41 and 0.00 against a prior
        of 0.002 on 1.2 degrees of freedom; shrunk to a third of its own spread, the pair was ordered
        eager-first at ×1.48, and an identical run ordered it the other way."""
        return self.df < WEAK_DF

    def hypervariable(self, variance: float, df: float) -> bool:
        """Whether a case's own variance (from `df` degrees of freedom) is further above the prior's
        than its spread allows: F = variance / prior's, in the upper tail of F(df, prior's df) below
        HYPERVARIABLE."""
        if self.df <= 0 or df <= 0 or not (self.variance > 0) or not variance > self.variance:
            return False
        return f_upper_tail(variance / self.variance, df, self.df) < HYPERVARIABLE

    def to_json(self) -> dict[str, float | int]:
        return {"variance": self.variance, "df": self.df, "cases": self.cases}


NO_PRIOR = VariancePrior(math.nan, 0.0, 0)


def fit_prior(estimates: Iterable[tuple[float, float]]) -> VariancePrior:
    """The scaled inverse-χ² prior that (variance, df) estimates of many cases were drawn from.

    Smyth's moment method: log s² has mean log s0² + ψ(d/2) − log(d/2) + (the prior's part) and
    variance ψ′(d/2) + ψ′(d0/2); the excess variance over the sampling part gives d0. Cases with
    a zero variance (identical processes: a timer's resolution) carry no log and are left out.
    With fewer than MIN_CASES cases there is no prior. A d0 beyond MAX_PRIOR_DF is capped there.
    """
    usable = [(v, d) for v, d in estimates if v > 0 and math.isfinite(v) and d > 0]
    if len(usable) < MIN_CASES:
        return VariancePrior(math.nan, 0.0, len(usable))
    e = [math.log(v) - digamma(d / 2) + math.log(d / 2) for v, d in usable]
    mean_e = statistics.fmean(e)
    excess = statistics.variance(e) - statistics.fmean(trigamma(d / 2) for _, d in usable)
    df = MAX_PRIOR_DF if excess <= 0 else min(MAX_PRIOR_DF, 2 * trigamma_inverse(excess))
    variance = math.exp(mean_e + digamma(df / 2) - math.log(df / 2))
    return VariancePrior(variance, df, len(usable))
