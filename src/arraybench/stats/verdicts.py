"""The verdict on a change of time: faster, slower, same or too noisy to say, from its interval and test."""

from __future__ import annotations

ALPHA = 0.05  # false discovery rate across all cases compared (Benjamini–Hochberg)

FASTER, SLOWER, SAME, NOISY = "faster", "slower", "same", "too noisy to say"


def decide(ratio: float, interval: tuple[float, float], q: float, threshold: float, alpha: float = ALPHA) -> str:
    """slower / faster: significant (q < `alpha`: after compare's FDR correction, or at one look of
    the sequential rule), the 1 − `alpha` interval excludes 1 and the ratio is beyond the
    threshold. same: the whole interval lies within the threshold. Anything else is too noisy to
    say: the data admit a change larger than the threshold but do not show one."""
    lo, hi = interval
    up, down = 1 + threshold, 1 / (1 + threshold)
    if q < alpha and lo > 1 and ratio > up:
        return SLOWER
    if q < alpha and hi < 1 and ratio < down:
        return FASTER
    if down <= lo and hi <= up:
        return SAME
    return NOISY
