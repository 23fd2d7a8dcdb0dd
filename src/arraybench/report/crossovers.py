"""Crossovers: the sizes between which one backend·mode overtakes another, bracketed by measured sizes."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations

from arraybench.report.data import ReportData
from arraybench.report.view import CaseView
from arraybench.stats import bracket
from arraybench.units import format_seconds

CSV_COLUMNS = ("workload", "dtype", "faster_below", "faster_above", "estimate", "bracket_lo", "bracket_hi",
               "state", "size_param", "params", "machine", "next_size")


@dataclass(frozen=True)
class Crossover:
    """Below `size` `faster_below` wins; above it `faster_above` does (both correct there).

    `lo` and `hi` are the measured sizes that hold it; `state` says whether they are close and
    separated (bracketed), too far apart yet (open: `next_size` would narrow it), or the two are
    within noise of each other there (tie). `separated` says whether the two are apart beyond noise
    at `lo` and `hi`: an open one that is not only swapped places by their medians.
    """

    workload: str
    machine: str
    dtype: str
    fixed: tuple  # the other parameters, the same along the sweep
    size_param: str
    faster_below: str
    faster_above: str
    size: float
    time_s: float
    lo: float
    hi: float
    state: str
    separated: bool
    next_size: int | None = None
    problem: str = ""  # the parameters that set this series apart from the workload's others, if any
    env: str = ""  # the Python environment (--env) both backend·modes ran in: a crossover is within one

    @property
    def where(self) -> str:
        """'heat (float32)', or 'heat (float32; m=128)' where the workload has several problems."""
        return f"{self.workload} ({self.dtype}{'; ' + self.problem if self.problem else ''})"

    @property
    def verb(self) -> str:
        """What `faster_above` does to `faster_below`, as far as the intervals decide it."""
        if self.state == bracket.TIE:
            return "ties with"
        return "overtakes" if self.separated else "may overtake"

    def describe(self) -> str:
        where = self.where
        span = f"{self.size_param} = {self.lo:g} and {self.hi:g}"
        if self.state == bracket.TIE:
            return f"{where}: {self.faster_above} and {self.faster_below} tie within noise between {span}"
        text = (f"{where}: {self.faster_above} {self.verb} {self.faster_below} at {self.size_param} ≈ "
                f"{self.size:.3g} ({format_seconds(self.time_s)} per call), measured between {span}")
        if not self.separated:
            text += " (their medians swap places there, their intervals do not: not beyond noise)"
        if self.state == bracket.OPEN:
            text += f"; not bracketed yet: measure {self.size_param} = {self.next_size} to narrow it"
        return text


def sweeps(data: ReportData) -> dict[tuple, dict[str, dict[float, CaseView]]]:
    """Correct records with a numeric size, per series: (workload, machine, dtype, size parameter,
    the other parameters) -> label -> size -> record. Only cases that differ in nothing but the
    size are one series (workloads/sizes.fixed_params); a series needs two sizes."""
    out: dict[tuple, dict[str, dict[float, CaseView]]] = defaultdict(lambda: defaultdict(dict))
    for wl, recs in data.by_workload().items():
        pts = data.points(wl)
        for r in recs:
            size = r.size
            if r.status != "ok" or not isinstance(size, int | float) or size <= 0 or not r.median_s:
                continue
            out[(wl, r.machine, r.dtype, pts.size_param, pts.fixed(r))][data.label(r)][size] = r
    return {k: v for k, v in out.items() if len({s for series in v.values() for s in series}) >= 2}


def points(series: dict[float, CaseView]) -> dict[float, bracket.Point]:
    """A label's records as bracket points, by size."""
    return {s: bracket.point(r) for s, r in series.items()}


def crossovers(data: ReportData) -> list[Crossover]:
    """Every change of order between two backend·modes along a sweep, with its measured bracket."""
    found = []
    for (wl, machine, dtype, name, fixed), series in sweeps(data).items():
        problem = data.problem(next(iter(next(iter(series.values())).values())))
        for a, b in combinations(sorted(series), 2):
            env = next(iter(series[a].values())).env or ""
            if (next(iter(series[b].values())).env or "") != env:
                continue  # a crossover is within one environment; environments are compared apart (--env)
            for br in bracket.brackets(a, points(series[a]), b, points(series[b])):
                below, above = series[br.faster_below], series[br.faster_above]
                separated = (bracket.order(below[br.lo], above[br.lo]) == -1
                             and bracket.order(above[br.hi], below[br.hi]) == -1)
                found.append(Crossover(wl, machine, dtype, fixed, name, br.faster_below, br.faster_above,
                                       br.estimate, br.time_s, br.lo, br.hi, br.state, separated, br.next_size,
                                       problem, env))
    return sorted(found, key=lambda c: (c.workload, c.machine, c.dtype, c.size, c.faster_above))


def csv_text(found: list[Crossover]) -> str:
    """crossovers.csv: one row per crossover, its estimate and the measured sizes that bracket it."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for c in found:
        params = ";".join(f"{k}={v}" for k, v in c.fixed)
        w.writerow([c.workload, c.dtype, c.faster_below, c.faster_above, f"{c.size:.4g}", f"{c.lo:g}",
                    f"{c.hi:g}", c.state, c.size_param, params, c.machine,
                    "" if c.next_size is None else c.next_size])
    return buf.getvalue()


def render_text(data: ReportData, found: list[Crossover]) -> str:
    """Lines for the terminal and report.md: each crossover, or why a sweep has none."""
    if not found:
        swept = sorted({k[0] for k in sweeps(data)})
        # A workload measured at several sizes but no two of one problem: say why it has no series.
        why = [f"{wl}: {data.points(wl).apart()}" for wl in data.by_workload()
               if wl not in swept and data.points(wl).apart()]
        if not swept:
            return ("Crossovers: none (no workload was measured at two or more sizes of one problem"
                    + "".join(f"; {w}" for w in why) + ")")
        return (f"Crossovers: none; the order of backends does not change over the sizes of {', '.join(swept)}"
                + (f" ({'; '.join(why)})" if why else ""))
    counts = {s: sum(c.state == s for c in found) for s in (bracket.BRACKETED, bracket.OPEN, bracket.TIE)}
    head = (f"Crossovers ({counts[bracket.BRACKETED]} bracketed by measured sizes at most "
            f"{bracket.MAX_RATIO:g}× apart, {counts[bracket.OPEN]} not yet, {counts[bracket.TIE]} ties within noise):")
    return "\n".join([head, *[f"  {c.describe()}" for c in found]])
