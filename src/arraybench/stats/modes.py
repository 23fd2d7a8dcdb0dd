"""Process modes: a framework whose fresh processes each settle at one of two speeds.

On the 2-core VM, JAX's small calls run at one of two speeds per process and keep it for the
process's life: a jitted `grad` at n = 10⁴ at 5 µs or 28 µs, an `fft` at n = 1000 at 21 µs or 61 µs,
with neither the host reference nor the threads' wait for a CPU telling which (stats/spells.py). Two
runs whose few processes of a case happened to land in different modes differ ×2-5 where nothing
changed: three false verdicts of `compare` in three pairs of identical runs, all of them such cases.

A single run shows whether its frameworks do this: some of a family's cases (one backend·mode on one
device) have processes that disagree by far more than a process's noise. Modes are a matter of a
call's time scale (JAX's show in calls of microseconds, where a thread's wakeup is much of the call,
not in a 1 ms gradient or a 10 ms matmul), so a case is judged by its *neighbours*: its family's cases
whose point lies within NEIGHBOURHOOD× of its own. They show modes where two of them or more have
processes MODE_SPREAD apart (one stall of one case is not a mode), and the case's *mode spread* is
then the largest spread between a neighbour's processes: how far apart the modes lie differs from case
to case (5 against 28 µs for `grad`, 21 against 54 µs for `fft`).

Between two runs, a change of a case that its mode spread in either run covers (or its own processes'
spread, where they fell into modes) may be the two runs
landing in different modes (or in different mixtures of them): it is no change that two runs can
show, and compare calls it too noisy to say (comparison/cases.py). Its note says so, and that more
processes a side would tell.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# Processes of one case this far apart (slowest over fastest median) are in different modes: a quiet
# process's median varies by a few per cent, a spell set aside (spells.py) moves it no further.
MODE_SPREAD = 1.5
# A case's neighbours in its family: the cases whose points are within this factor of its own.
NEIGHBOURHOOD = 10.0


def two_modes(medians: Sequence[float]) -> tuple[list[float], list[float]] | None:
    """A case's processes (their medians) split into two speeds: at the largest step between neighbours
    in speed, where each side has two processes or more and the slowest is MODE_SPREAD× the fastest
    (one slow process is a stall, not a mode); else None."""
    xs = sorted(m for m in medians if m > 0)
    if len(xs) < 4 or xs[-1] / xs[0] < MODE_SPREAD:
        return None
    cut = max(range(1, len(xs)), key=lambda i: xs[i] / xs[i - 1])
    return (xs[:cut], xs[cut:]) if 2 <= cut <= len(xs) - 2 else None


def mode_spread(point: float, family: Iterable[tuple[float, float]]) -> float:
    """The mode spread of a case whose point is `point`, from its family's cases as (point, spread):
    the largest spread of its neighbours where two of them or more reach MODE_SPREAD; else 1."""
    near = sorted((s for p, s in family if point / NEIGHBOURHOOD <= p <= point * NEIGHBOURHOOD), reverse=True)
    return near[0] if len(near) >= 2 and near[1] >= MODE_SPREAD else 1.0


def explained(ratio: float, spread: float) -> bool:
    """Whether a change of `ratio` between two runs of a case may be the runs landing in different
    modes: its mode spread (in either run) covers it."""
    change = max(ratio, 1 / ratio) if ratio > 0 else float("inf")
    return spread >= MODE_SPREAD and change <= spread
