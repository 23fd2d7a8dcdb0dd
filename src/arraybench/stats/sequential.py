"""When an undecided case has been measured enough: the stop rule for adding rounds.

A case whose verdict is still open (between environments, or which backend·mode is fastest)
gets another round, one more process of each side; a decided one stops. Looking after every
round and stopping at the first verdict would give false verdicts far more often than the
nominal rate: every look is one more chance for noise to cross the line (tests/stats/test_sequential.py:
8 looks at 5 % each gave 14 % false verdicts on identical sides, the rule 0.8 %). So the looks are
bounded: a case is looked at with `first_round` rounds, then each time its rounds have grown by
half (3, 5, 8, 12, 18, … rounds) and at `max_rounds`, K looks at most, and each look reads its
intervals at level α/K (Bonferroni over the looks). Whatever the truth, the chance that any look's
interval misses it is at most K·α/K = α, and every false verdict needs such a miss: faster or
slower with no change, same with a change beyond the threshold. The price is wider intervals at
each look; a case that is clear early still stops early. Looks spaced by a factor, not after every
round, let a noisy case run from 3 rounds to 12 for 4 looks (3, 5, 8, 12), where a look a round
paid 5 looks to reach 7; a look after one more round of 12 barely moves the interval anyway.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arraybench.errors import UsageError
from arraybench.stats.student import LogRatio, t_isf
from arraybench.stats.verdicts import ALPHA, decide

# Between two looks a case's rounds grow by at least this factor.
LOOK_GROWTH = 1.5
# Why a case's rounds ended (or why it goes on).
OPEN, DECIDED, BUDGET, MAX_ROUNDS = "undecided", "decided", "budget", "max rounds"
NEAR = "near tie"
# A near tie (StopRule.futile): at a look after the first, every open question of a case would need
# more than FUTILE × the maximum rounds to be decided, if its point stays and its error shrinks as
# 1/√rounds, and none of its intervals reaches NEAR_TIE× either way. Replayed on twelve runs of the
# noisy benchmark's subset on the 2-core VM (2026-11-26/27: five pairs beside the neighbour and quiet,
# one of main before pairing): it stopped 56 cases, whose further rounds had taken 5-42 s of each
# run of 128-210 s that had such rounds, and none that a later look decided.
# At the first look (2-3 rounds) projections are too rough: cases projected to need 34-700 rounds there
# were decided at 3 or 5; from the second look, without the NEAR_TIE bound, three projected to need
# 45-163 were decided at 8 (JAX and Numba's 100² matmul in a run beside the neighbour).
FUTILE = 2.0
NEAR_TIE = 1.5
# A projection of more rounds than this (StopRule.rounds_to_answer) is as good as never.
MAX_PROJECTED = 1 << 20


class Budget:
    """The seconds of measurement further rounds may take, over every case of a run, read off a
    clock (injectable: tests pass a fake one). A case going on claims its next round's cost, so the
    cases of one round cannot together overrun what is left."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self.clock = seconds, clock
        self.start = clock()
        self.claimed = 0.0

    def restart(self) -> None:
        """The clock counts from now: what ran before (rounds that claim nothing) is not the budget's."""
        self.start = self.clock()

    def left(self) -> float:
        """Seconds not yet spent (by the clock) nor claimed for the round about to run."""
        return self.seconds - (self.clock() - self.start) - self.claimed

    def claim(self, seconds: float, beyond: float = 0.0) -> bool:
        """Reserve `seconds` of the next round for one case, if they fit in what is left, overdrawn by
        at most `beyond` seconds."""
        if seconds > self.left() + beyond:
            return False
        self.claimed += seconds
        return True

    def settle(self) -> None:
        """The round ran: the clock now counts what it cost, so its claims are let go."""
        self.claimed = 0.0


@dataclass(frozen=True)
class Step:
    """What the rule says at one look: `go_on` (one more round) or stop, and why (`reason`), with
    the rounds the case had, the level its intervals were read at and their verdicts."""

    go_on: bool
    reason: str
    rounds: int
    level: float
    verdicts: tuple[str, ...]


@dataclass(frozen=True)
class StopRule:
    """Further rounds for the cases whose verdict is open, within `max_rounds` and a Budget.

    `first_round` is the rounds every case gets before its first look (the run's processes);
    `threshold` the change below which a case is the same (compare's --threshold).
    """

    threshold: float
    first_round: int
    max_rounds: int
    alpha: float = ALPHA
    # None: no near-tie stop (a run's environments: a change of a few per cent is the question there).
    near_tie: float | None = NEAR_TIE

    def __post_init__(self) -> None:
        if not 2 <= self.first_round <= self.max_rounds:
            raise UsageError(f"more rounds need at least 2 processes a case and a maximum of rounds no smaller "
                             f"(got {self.first_round} and {self.max_rounds})")

    @property
    def look_rounds(self) -> tuple[int, ...]:
        """The rounds after which the rule looks: the first, then each ≥ 1.5 × the one before, and the last."""
        out = [self.first_round]
        while out[-1] < self.max_rounds:
            out.append(min(self.max_rounds, max(out[-1] + 1, math.ceil(out[-1] * LOOK_GROWTH))))
        return tuple(out)

    @property
    def looks(self) -> int:
        return len(self.look_rounds)

    @property
    def level(self) -> float:
        """The two-sided level of each look's intervals: α over the looks."""
        return self.alpha / self.looks

    def verdicts(self, estimates: Sequence[LogRatio]) -> tuple[str, ...]:
        """Each estimate's verdict at this rule's level (verdicts.decide, as compare gives it)."""
        return tuple(decide(e.ratio, e.interval(self.level), e.p_value, self.threshold, self.level)
                     for e in estimates)

    def answered(self, e: LogRatio) -> bool:
        """Whether more rounds would not change what the case says: its interval at this rule's level
        excludes no change (the direction is known: slower or faster, by a figure the interval gives,
        even where that is under the threshold and compare calls it the same or too noisy at
        that threshold), or lies within the threshold (the same). A planted 5 % change read at a 5 %
        threshold is neither beyond it nor within it at any number of rounds: called open, it took
        the budget from the cases that were open (benchmarks/planted.py: 6 of 17 cases)."""
        lo, hi = e.interval(self.level)
        up = 1 + self.threshold
        return lo > 1 or hi < 1 or (1 / up <= lo and hi <= up)

    def room(self, e: LogRatio) -> float:
        """How wide `e`'s interval (on the log scale, half of it) may be and still answer it, its point
        staying where it is: the larger of its distance from no change (significance) and from the
        threshold (sameness), whichever a narrowing interval reaches first. A change that sits on the
        threshold is still found by a compare at a smaller one (planted.py: 5 % at 2 %). The
        projections of the rounds a case needs share it."""
        floor = math.log1p(self.threshold)
        return max(abs(e.value), floor - abs(e.value))

    def rounds_to_decide(self, estimates: Sequence[LogRatio], rounds: int) -> float:
        """About how many more rounds a case needs before every one of its `estimates` is decided, if
        each point stays where it is and its error shrinks as 1/√rounds: which open case a budget too
        small for all of them is spent on first. 0 for a decided case; inf where a point sits on
        the threshold. A ranking only: the rule's error bound does not depend on it."""
        need = 1.0
        for e in estimates:
            reach = t_isf(self.level / 2, e.df) * e.se
            room = self.room(e)
            need = max(need, reach / room if room > 0 else math.inf)
        return rounds * (need ** 2 - 1)

    def rounds_to_answer(self, estimates: Sequence[LogRatio], rounds: int) -> float:
        """About how many more rounds a case needs before every one of its `estimates` is decided, if each
        point stays where it is, its error shrinks as 1/√rounds and its degrees of freedom grow by one a
        round, as a paired estimate's do: which open case a budget too small for all of them is spent on
        first (more_rounds.to_decide). 0 for a decided case; inf past MAX_PROJECTED rounds.

        rounds_to_decide holds the degrees of freedom where they are. At the few rounds a run has, their
        growth narrows an interval more than the rounds' √n does: at this rule's level over five looks the
        t quantile is 5.8 at 3 degrees of freedom and 3.5 at 7. Beside the neighbour, Numba's and JAX's
        jitted adds of 10⁶ floats, 1.8×, 4.0× and 2.1× apart in three paired rounds, were projected 11.5
        rounds from a decision that 3 would make, and ranked behind near ties and 6-s processes until the
        budget ran out with the pair ×2 apart and unordered. A ranking only, as rounds_to_decide, which the
        near-tie stop (`futile`, replayed with it) keeps."""
        q, n = self.level / 2, max(1, rounds)
        most = 0
        for e in estimates:
            room = self.room(e)
            if room <= 0 or not math.isfinite(e.se):
                return math.inf

            def reaches(k: int, e: LogRatio = e, room: float = room) -> bool:
                return t_isf(q, e.df + k) * e.se * math.sqrt(n / (n + k)) <= room

            if reaches(0):
                continue
            lo, hi = 0, 1  # reaches(lo) is false; double hi until it holds, then halve the gap
            while not reaches(hi):
                lo, hi = hi, 2 * hi
                if hi > MAX_PROJECTED:
                    return math.inf
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if reaches(mid) else (mid, hi)
            most = max(most, hi)
        return float(most)

    def futile(self, estimates: Sequence[LogRatio], rounds: int) -> bool:
        """Whether the open questions among `estimates`, after `rounds` rounds, are a near tie that the
        rounds left cannot decide (FUTILE, `near_tie`): never at the first look, nor with nothing open.
        A pair whose point is 1.18× apart or more is never one: its error would have to exceed its
        distance from no change by 1.4× (twice the maximum rounds) and stay under NEAR_TIE× beside it.
        Stopping such a case early adds no false verdict (it stops undecided); it gives up only a
        decision of a difference under NEAR_TIE× that more than twice the maximum rounds might make."""
        open_ = [e for e in estimates if not self.answered(e)]
        near = self.near_tie
        if near is None or rounds <= self.first_round or not open_:
            return False
        if rounds + self.rounds_to_decide(open_, rounds) <= FUTILE * self.max_rounds:
            return False
        return all(1 / near < lo and hi < near for lo, hi in (e.interval(self.level) for e in open_))

    def step(self, estimates: Sequence[LogRatio], rounds: int, budget: Budget, next_round_s: float) -> Step:
        """One look at a case after `rounds` rounds: its `estimates` (one per question it answers:
        the two environments' ratio, or the fastest over each other candidate) decide it when every
        one is answered (a known direction, or the same within the threshold). An open case goes on
        if it is below max_rounds and its next round, costing `next_round_s`, fits the budget (which
        it then claims)."""
        if not self.first_round <= rounds <= self.max_rounds:
            raise ValueError(f"a look after {rounds} rounds is outside {self.first_round}..{self.max_rounds}")
        verdicts = self.verdicts(estimates)
        if rounds not in self.look_rounds:  # between looks: no verdict is read, the case goes on if it can
            reason = BUDGET if not budget.claim(next_round_s) else OPEN
            return Step(reason == OPEN, reason, rounds, self.level, verdicts)
        if all(self.answered(e) for e in estimates):
            reason = DECIDED
        elif rounds == self.max_rounds:
            reason = MAX_ROUNDS
        elif self.futile(estimates, rounds):
            reason = NEAR
        elif not budget.claim(next_round_s):
            reason = BUDGET
        else:
            return Step(True, OPEN, rounds, self.level, verdicts)
        return Step(False, reason, rounds, self.level, verdicts)
