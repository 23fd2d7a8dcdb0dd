"""Fitting: the largest size of each workload that each backend·mode runs under a memory limit (`--sizes fit:BYTES`).

"How big a problem can I run on this 16 GB card with each framework?" A case fits when it ran
correctly and what it needs, the larger of its first call's memory and its steady call's (each its
inputs plus what the call held beyond them: docs/memory.md), is within the limit. The search starts
at each workload's smallest default size and, round after round, measures each backend·mode's next
size: up from the largest size that fits, to where its memory's growth between its last two fitting
sizes (log-log) says the limit lies, at most MAX_STEP times further and no further than a memory that
grew as the square of the size would need OVERSHOOT times the limit (small sizes understate growth:
a framework's fixed costs flatten it); then between the largest size that fits and the smallest that
does not (too much memory, or a failure: a MemoryError, a crash), where their memory says the limit
lies, until they are CLOSE apart. Each backend·mode takes one size a round, and the search stops after
MAX_ROUNDS rounds whatever is left open, so its time is bounded.

Pure over cases and records, as refine.py is: the run layer calls `probes` between rounds.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arraybench.core.case import Case
from arraybench.core.case import label as case_label
from arraybench.errors import UsageError
from arraybench.planning.refine import at_size, size_param
from arraybench.results.record import CaseRecord
from arraybench.units import format_size, memory_size
from arraybench.workloads.sizes import fixed_params
from arraybench.workloads.workload import Workload

PREFIX = "fit:"
# A probe is at most this many times the largest size that fitted...
MAX_STEP = 16.0
# ...and needs at most this many times the limit even where memory grows as the square of the size.
OVERSHOOT = 4.0
# The largest size that fits and the smallest that does not are found to within this ratio.
CLOSE = 1.25
# Rounds of probes at most: growth ×16 a round and then bisection reach a limit a billion times the
# starting size's need in about ten.
MAX_ROUNDS = 12
# How memory is taken to grow with the size where the two last sizes cannot tell (one size, or a
# need that has not yet outgrown what a framework holds whatever the size): linearly, and never slower
# than with its square root.
DEFAULT_GROWTH, MIN_GROWTH = 1.0, 0.5

GroupKey = tuple[Any, ...]  # workload, source, dtype, device, threads, other parameters, env, backend·mode


def limit_of(sizes: Sequence[str] | None) -> int | None:
    """The byte limit that `--sizes fit:BYTES` gives; None for ordinary sizes. A bad limit, or fit: among
    other sizes, is a UsageError."""
    asked = [s for s in sizes or () if s.startswith(PREFIX)]
    if not asked:
        return None
    if len(sizes or ()) > 1:
        raise UsageError(f"--sizes {asked[0]} stands alone: the search chooses the sizes (leave out "
                         f"{', '.join(s for s in sizes or () if s != asked[0])})")
    try:
        return memory_size(asked[0][len(PREFIX):])
    except ValueError as e:
        raise UsageError(f"bad --sizes {asked[0]!r}: {e}") from None


def start(wl: Workload, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Where the search starts: the smallest of the workload's default points (with `--params`)."""
    points = wl.points(None, dict(overrides))
    return min(points, key=lambda p: (not isinstance(p.get(wl.size_param), int), p.get(wl.size_param) or 0))


def need(r: CaseRecord) -> float | None:
    """What a case needs to run: the larger of its first call's memory and its steady call's; None where
    neither was measured."""
    found = [float(v) for v in (r.memory_bytes, r.first_call_memory_bytes) if v is not None]
    return max(found) if found else None


@dataclass(frozen=True)
class Fit:
    """One backend·mode of one problem against the limit: the largest size that ran correctly within it
    (`fits`: its record) and the smallest above it that did not (`over`: its record); either None where
    the search found none."""

    label: str
    workload: str
    fits: CaseRecord | None
    over: CaseRecord | None

    def why_over(self) -> str:
        """Why the smallest size above the largest that fits does not: its need, or its failure."""
        r = self.over
        if r is None:
            return ""
        if r.status != "ok":
            return f"{r.status}: {r.error or ''}".strip(": ")
        needed = need(r)
        return "its memory was not measured" if needed is None else f"needs {format_size(round(needed))}"


def verdict(r: CaseRecord, limit: int) -> bool | None:
    """Whether a measured case fits (True), does not (False), or cannot be told (None: correct, but its
    memory was not measured, as JAX's on a GPU where it set no new high)."""
    if r.status != "ok":
        return False
    needed = need(r)
    return None if needed is None else needed <= limit


def _key(case: Case, name: str) -> GroupKey:
    return (case.workload, case.source, case.dtype, case.device, case.threads, fixed_params(case.params_dict, name),
            case.env, case_label(case))


def fits(records: Iterable[CaseRecord], limit: int) -> list[Fit]:
    """Per backend·mode of each problem the records hold, what the search found (`Fit`)."""
    groups = _measured(records)
    out = []
    for key, by_size in groups.items():
        ok = [s for s, r in by_size.items() if verdict(r, limit)]
        lo = max(ok) if ok else None
        above = [s for s, r in by_size.items() if verdict(r, limit) is False and (lo is None or s > lo)]
        out.append(Fit(key[-1], key[0], by_size[lo] if lo is not None else None,
                       by_size[min(above)] if above else None))
    return out


def _measured(records: Iterable[CaseRecord]) -> dict[GroupKey, dict[int, CaseRecord]]:
    """The latest record of every size measured, per group (a backend·mode of one problem)."""
    out: dict[GroupKey, dict[int, CaseRecord]] = defaultdict(dict)
    for r in records:
        if r.status in ("unavailable", "unsupported"):
            continue
        case = r.to_case()
        name = size_param(case)
        if name is not None:
            out[_key(case, name)][int(case.params_dict[name])] = r
    return dict(out)


def next_size(by_size: Mapping[int, CaseRecord], limit: int) -> int | None:
    """A group's next size to measure, from what it measured (size -> record); None where it is done."""
    ok = sorted(s for s, r in by_size.items() if verdict(r, limit))
    if any(verdict(r, limit) is None for r in by_size.values()) or not ok:
        return None  # memory not measured, or not even the first size fits: nothing to search
    lo = ok[-1]
    over = [s for s, r in by_size.items() if s > lo and verdict(r, limit) is False]
    if over:
        return _between(lo, min(over), by_size, limit)
    return _grown(lo, by_size, ok, limit)


def growth(small: CaseRecord, large: CaseRecord, ratio: float) -> float:
    """How a case's memory grows with its size between two sizes `ratio` apart (the exponent of a power
    law): from its steady calls' figures, which no framework's fixed first-call cost blurs, else from its
    needs; DEFAULT_GROWTH where they did not grow, never under MIN_GROWTH."""
    steady_a, steady_b = small.memory_bytes, large.memory_bytes
    a, b = (float(steady_a), float(steady_b)) if steady_a and steady_b else (need(small) or 1.0, need(large) or 1.0)
    return max(MIN_GROWTH, math.log(b / a) / math.log(ratio)) if b > a else DEFAULT_GROWTH


def _grown(lo: int, by_size: Mapping[int, CaseRecord], ok: Sequence[int], limit: int) -> int:
    """The size where the limit should lie, from how the memory grew between the two largest sizes that fit."""
    power = growth(by_size[ok[-2]], by_size[lo], lo / ok[-2]) if len(ok) > 1 else DEFAULT_GROWTH
    room = limit / (need(by_size[lo]) or 1.0)
    target = lo * min(room ** (1 / power), MAX_STEP, math.sqrt(OVERSHOOT * room))
    # Never a step under CLOSE: near the limit, the next size either fits or closes the search.
    return max(math.ceil(CLOSE * lo), round(target))


def _between(lo: int, hi: int, by_size: Mapping[int, CaseRecord], limit: int) -> int | None:
    """The next size between the largest that fits and the smallest that does not: where the memory's
    growth between the two says the limit lies (hi's failure gives none: their geometric midpoint), kept
    a tenth of the way (in log size) from either end so the gap closes; None once they are CLOSE."""
    if hi / lo <= CLOSE:
        return None
    small, large = by_size[lo], by_size[hi]
    at = 0.5
    if large.status == "ok" and (n_lo := need(small)) and (n_hi := need(large)) and n_hi > n_lo:
        at = min(0.9, max(0.1, math.log(limit / n_lo) / math.log(n_hi / n_lo)))
    size = round(lo * (hi / lo) ** at)
    return size if lo < size < hi else None


def probes(plan: Sequence[Case], records: Iterable[CaseRecord], limit: int) -> list[Case]:
    """The cases to measure next: each group's next size (next_size), none measured before."""
    records = list(records)
    templates = {_key(c, name): c for c in plan if (name := size_param(c)) is not None}
    measured = _measured(records)
    known = {r.id for r in records}
    out = []
    for key, template in templates.items():
        size = next_size(measured.get(key, {}), limit)
        if size is not None and (case := at_size(template, size)).id not in known:
            out.append(case)
    return out
