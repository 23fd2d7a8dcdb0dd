"""Refining crossovers: after a plan is measured, measure more sizes where the fastest backend·mode changes.

A plan measures each workload at a few sizes, often orders of magnitude apart (n = 10³ and 10⁶).
Where the fastest backend·mode at one planned size is not the fastest at the next, the answer a
user wants ("from which size on is torch faster than NumPy?") lies somewhere in between. This
module proposes the cases that narrow it: the two rivals at the geometric midpoint of the widest
gap of their bracket (`bracket.brackets`), round after round, until the crossover is bracketed by
measured sizes at most `bracket.MAX_RATIO` apart whose intervals separate, or the two tie within
noise there, or `rounds` run out. Only winner changes are refined, not every pair that swaps
places: that is the claim the report leads with, and it keeps the extra measuring small.

A round is costly beyond its cases: every case is measured in fresh worker processes, whose
framework imports take seconds. So a round does not bisect one gap at a time (a 1000× gap
needs four bisections): it splits each gap wider than `STEP`× into a geometric grid of steps at
most `STEP`× wide, and the next round bisects the step that holds the crossover. Any gap is
bracketed within `MAX_RATIO`× after two rounds.

Pure over cases and records, so the run layer calls it between rounds and tests feed it fakes.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from arraybench.core.case import Case
from arraybench.core.case import label as case_label
from arraybench.stats import bracket
from arraybench.workloads import resolve_workload
from arraybench.workloads.sizes import fixed_params

# Rounds of refinement after the plan: a grid, then a bisection, bracket any gap (see above);
# the rest are for crossovers that the grid shows are not where the planned sizes said.
ROUNDS = 4
# A gap wider than this is split into a grid of steps no wider than this in one round.
STEP = 4.0

GroupKey = tuple[str, str | None, str, str, int, tuple[tuple[str, Any], ...], str]  # ..., environment


def size_param(case: Case) -> str | None:
    """The workload's size parameter, when the case has an integer value for it (else None)."""
    try:
        name = resolve_workload(case.workload, case.source).size_param
    except Exception:  # an unloadable user workload is not refined
        return None
    value = case.params_dict.get(name)
    return name if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _group(case: Case, name: str) -> GroupKey:
    """Cases that differ only in backend, mode and size: one sweep whose order can flip (in one environment)."""
    return (case.workload, case.source, case.dtype, case.device, case.threads, fixed_params(case.params_dict, name),
            case.env)


Series = dict[GroupKey, dict[str, dict[float, bracket.Point]]]


class Measured(Protocol):
    """What refinement reads of a measured case: its record's fields (results.record.CaseRecord)."""

    @property
    def id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def median_s(self) -> float | None: ...
    @property
    def ci95_s(self) -> tuple[float, float] | None: ...


R = TypeVar("R", bound=Measured)


def _points(records: Iterable[R], ids: dict[str, tuple[GroupKey, str, int]],
            point: Callable[[R], bracket.Point] | None = None) -> Series:
    """Correct, timed records as bracket points (`point`: as the run's reading makes them, paired with
    their rivals by round; else from their intervals): group -> label -> size -> point."""
    out: Series = defaultdict(lambda: defaultdict(dict))
    for r in records:
        where = ids.get(r.id)
        ci, median = r.ci95_s, r.median_s
        if where is None or r.status != "ok" or not median or not ci or None in ci:
            continue
        key, lab, size = where
        found = point(r) if point is not None else bracket.Point(size, median, ci[0], ci[1])
        out[key][lab][size] = dataclasses.replace(found, size=size)
    return out


def winner_changes(planned: dict[str, dict[float, bracket.Point]]) -> set[tuple[str, str]]:
    """Pairs (fastest at one planned size, fastest at the next) where the two differ and one of them
    is ahead beyond noise at its own end (their intervals separate there).

    A change of winner within noise at both ends is no crossover that more sizes could find: the
    two tie as far as this run can tell, which crossovers.csv says already.
    """
    sizes = sorted({s for series in planned.values() for s in series})
    winners = []
    for s in sizes:
        here = {lab: series[s].median for lab, series in planned.items() if s in series}
        if here:
            winners.append((s, min(here, key=lambda lab: here[lab])))
    out = set()
    for (s0, a), (s1, b) in zip(winners, winners[1:], strict=False):
        if a == b or s0 not in planned[b] or s1 not in planned[a]:
            continue
        if bracket.side(planned[a][s0], planned[b][s0]) == -1 or bracket.side(planned[b][s1], planned[a][s1]) == -1:
            out.add((a, b) if a < b else (b, a))
    return out


def proposals(plan: Sequence[Case], extra: Sequence[Case], records: Iterable[R],
              point: Callable[[R], bracket.Point] | None = None) -> list[Case]:
    """The cases to measure next: both rivals of each open winner change at its next size.

    `plan` holds the planned cases (their sizes decide the winners), `extra` the cases refinement
    already added (measured or not: none is proposed twice), `records` what was measured, `point`
    how a record is a bracket point (the run's reading: results.reading.Reading.point).
    """
    ids: dict[str, tuple[GroupKey, str, int]] = {}
    templates: dict[tuple[GroupKey, str], Case] = {}
    for case in (*plan, *extra):
        name = size_param(case)
        if name is None:
            continue
        key = _group(case, name)
        ids[case.id] = (key, case_label(case), case.params_dict[name])
        templates.setdefault((key, case_label(case)), case)
    planned_ids = {c.id for c in plan}
    records = list(records)
    every = _points(records, ids, point)
    planned = _points((r for r in records if r.id in planned_ids), ids, point)
    known = set(ids)
    envs = sorted({c.env for c in plan})
    out: list[Case] = []
    for key, series in planned.items():
        for a, b in sorted(winner_changes(series)):
            for br in bracket.brackets(a, every[key][a], b, every[key][b]):
                if br.next_size is None:
                    continue
                both = sorted(set(every[key][a]) & set(every[key][b]))
                for size in grid([s for s in both if br.lo <= s <= br.hi]):
                    for lab in (a, b):
                        # In every environment of the run (--env), not only the one whose winner
                        # changed: a size measured in one of two could not be compared paired.
                        for env in envs:
                            case = dataclasses.replace(at_size(templates[(key, lab)], size), env=env)
                            if case.id not in known:
                                known.add(case.id)
                                out.append(case)
    return out


def grid(sizes: Sequence[float]) -> list[int]:
    """Integer sizes that split every gap of `sizes` wider than MAX_RATIO: a gap up to STEP× wide
    at its geometric midpoint, a wider one into equal steps of at most STEP×."""
    out: list[int] = []
    for lo, hi in zip(sizes, sizes[1:], strict=False):
        ratio = hi / lo
        if ratio <= bracket.MAX_RATIO:
            continue
        parts = 2 if ratio <= STEP else math.ceil(math.log(ratio) / math.log(STEP))
        points = {round(lo * ratio ** (i / parts)) for i in range(1, parts)}
        out += sorted(p for p in points if lo < p < hi)
    return out


def at_size(template: Case, size: int) -> Case:
    """`template` at another value of its workload's size parameter."""
    name = size_param(template)
    assert name is not None
    params = tuple(sorted({**template.params_dict, name: size}.items()))
    return dataclasses.replace(template, params=params)
