"""Terminal and Markdown tables: rows backend·mode, columns parameter points, one table per workload and dtype."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from arraybench.core.case import label
from arraybench.output import formats
from arraybench.output.formats import text_table
from arraybench.report.view import CaseView, timed
from arraybench.results.record import FAILED, CaseRecord
from arraybench.results.speedups import size_sort_key, speedups
from arraybench.stats import bracket, power
from arraybench.units import format_seconds, format_size
from arraybench.workloads.sizes import fixed_params

SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def listed(names: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


def tie_seen(best: CaseRecord, tied: Sequence[CaseRecord]) -> str:
    """What a tie within noise could have seen: "no difference larger than 12 % (80 % power)", for
    the least certain of the cases tied with `best`; where the host kept the pool of one of them
    waiting (a report view's `reach`: stats/pools.reach), how far that may move them instead."""
    if held := held_by_reach(best, tied):
        return f"the host's thread pools may move them up to {max(r.reach for r in (best, *held)):.1f}×"
    return power.phrase(max(power.detectable_gap(best, r) for r in tied), noun="difference")


def held_by_reach(best: CaseRecord, tied: Sequence[CaseRecord]) -> list[Any]:
    """The report views among `tied` that only a reach leaves unordered against `best` (bracket.held;
    stats/pools.reach); none where `best` is a record, not a view."""
    if not isinstance(best, bracket.Viewed):
        return []
    first = bracket.point(best)
    return [r for r in tied if isinstance(r, bracket.Viewed) and bracket.held(first, bracket.point(r))]


def row_label(r: CaseRecord, devices: set[str], machines: frozenset[str] = frozenset()) -> str:
    return label(r, device=len(devices) > 1, machine=len(machines) > 1)


def size_param(records: Sequence[CaseRecord]) -> str:
    """The parameter whose value is each record's size (records do not name it)."""
    keys = [k for k in records[0].params if all(r.params.get(k) == r.size for r in records)]
    return keys[0] if len(keys) == 1 else "size"


@dataclass(frozen=True)
class Points:
    """What tells the cases of one workload apart: its size parameter and every parameter whose
    value differs between them (`names`, the size first). A problem is the cases that share all
    but the size (workloads/sizes.fixed_params); where the others vary too, `problem` names them."""

    size_param: str
    names: tuple[str, ...]

    @classmethod
    def of(cls, records: Sequence[CaseRecord]) -> Points:
        name = size_param(records)
        keys = sorted({k for r in records for k in r.params})
        moving = [k for k in keys if len({repr(r.params.get(k)) for r in records}) > 1 and k != name]
        has_size = any(name in r.params for r in records)
        return cls(name, (name, *moving) if has_size else tuple(moving))

    def fixed(self, r: CaseRecord) -> tuple[tuple[str, Any], ...]:
        """The record's problem: its parameters other than the size."""
        return fixed_params(r.params, self.size_param)

    def text(self, r: CaseRecord) -> str:
        """'n=64', or 'n=64, m=128' where m varies too: a column of the tables."""
        if not self.names:
            return f"size {r.size}"
        return ", ".join(f"{k}={r.params.get(k)}" for k in self.names)

    def problem(self, r: CaseRecord) -> str:
        """'m=128' where the workload's cases differ in more than the size; '' where they do not."""
        return ", ".join(f"{k}={r.params.get(k)}" for k in self.names if k != self.size_param)

    def order(self, r: CaseRecord) -> tuple:
        """Columns by size, then by the other parameters that vary."""
        others = (size_sort_key(r.params.get(k)) for k in self.names if k != self.size_param)
        return (size_sort_key(r.size), *others)

    def apart(self) -> str:
        """Where the cases differ in more than the size: that, and what it means; else ''."""
        others = " and ".join(k for k in self.names if k != self.size_param)
        if not others:
            return ""
        if self.size_param not in self.names:
            return f"its cases differ in {others}: each point is a problem of its own, answered apart"
        return (f"its cases differ in {others} as well as {self.size_param}: a case with another {others} is "
                f"another problem, answered apart, never one series over {self.size_param}")


def size_text(v: float, estimate: bool = False) -> str:
    """1000 → '1000', 1000000 → '10⁶', 21000 → '2.1·10⁴'; an estimate keeps two significant digits."""
    if v < 1e4:
        return f"{float(f'{v:.2g}'):g}" if estimate else f"{v:g}"
    exp = math.floor(math.log10(v))
    mant = f"{v / 10**exp:.2g}"
    if mant == "10":
        exp, mant = exp + 1, "1"
    power = "10" + str(exp).translate(SUPERSCRIPT)
    return power if mant == "1" else f"{mant}·{power}"


def cell(r: CaseRecord, speedup: float | None) -> str:
    status = r.status
    if status == "ok":
        iqr = 100 * (r.iqr_s or 0.0) / r.median_s if r.median_s else 0.0
        time = format_seconds(r.median_s)
        # A view carries the report's derived figures; a bare record (`arraybench show`) has none.
        view = r if isinstance(r, CaseView) else None
        if view and view.harness_s:
            time += f" (harness {format_seconds(view.harness_s)})"
        parts = [f"{time} ±{iqr:.0f}%"]
        if speedup is not None:
            parts.append(f"{speedup:.2f}×")
        if r.first_call_s is not None:
            parts.append(f"1st {format_seconds(r.first_call_s)}")
        if r.memory_bytes is not None:
            parts.append(format_size(r.memory_bytes))
        if view and view.bound:
            parts.append(view.bound)
        return " · ".join(parts) + (" (noisy)" if r.noisy else "")
    if status == "wrong":
        detail = check_detail(r)
        return f"WRONG ({detail})" if detail else f"WRONG (rel err {check_text(r)})"
    return status.upper() if status in FAILED else status


# What the case executor puts before the check's own words in a wrong case's `error`.
WRONG_PREFIX = "wrong result: "


def check_detail(r: CaseRecord) -> str:
    """Why a wrong case is wrong, where its error does not exceed a tolerance (a wrong shape, NaN in
    the output: `rel_err` is null; a workload's own check): the check's own words; else ''."""
    err, tol = r.rel_err, r.tolerance
    if r.status != "wrong" or (err is not None and tol is not None and err > tol):
        return ""
    return (r.error or "").removeprefix(WRONG_PREFIX) or ("rel err not finite" if err is None else "")


def check_text(r: CaseRecord) -> str:
    """A checked case's error against its tolerance ('3.1e-07 ≤ 1.0e-04'), or check_detail."""
    if detail := check_detail(r):
        return detail
    err, tol = r.rel_err, r.tolerance
    if err is None:
        return ""
    return f"{err:.1e}" if tol is None else f"{err:.1e} {'≤' if err <= tol else '>'} {tol:.1e}"


def unavailable(records: Iterable[CaseRecord]) -> dict[str, str]:
    """Backend -> why it could not run here: said once, not in a row per case."""
    out: dict[str, str] = {}
    for r in records:
        if r.status == "unavailable":
            out.setdefault(r.backend, r.error or "unavailable")
    return dict(sorted(out.items()))


def unavailable_line(records: Iterable[CaseRecord]) -> str:
    gone = unavailable(records)
    return "Not available here: " + "; ".join(f"{b} ({why})" for b, why in gone.items()) if gone else ""


def _by_table(records: Iterable[CaseRecord]) -> dict[tuple[str, str], list[CaseRecord]]:
    """The records of each table, by (workload, dtype); a backend unavailable here has no row."""
    out: dict[tuple[str, str], list[CaseRecord]] = defaultdict(list)
    for r in records:
        if r.status != "unavailable":
            out[(r.workload, r.dtype)].append(r)
    return dict(sorted(out.items()))


def points_by_workload(records: Iterable[CaseRecord]) -> dict[str, Points]:
    """Each workload's Points, over all its records (every dtype, machine and status)."""
    recs: dict[str, list[CaseRecord]] = defaultdict(list)
    for r in records:
        recs[r.workload].append(r)
    return {wl: Points.of(rs) for wl, rs in recs.items()}


def _grid(recs: Sequence[CaseRecord], pts: Points, shown: Callable[[CaseRecord], str]
          ) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, column texts): a row per backend·mode, a column per point, `shown` in each cell."""
    devices = {r.device for r in recs}
    # Several machines (a cluster run, or files merged): their rows side by side.
    machines = frozenset(r.machine for r in recs if r.machine)
    columns = [pts.text(r) for r in sorted({pts.text(r): r for r in recs}.values(), key=pts.order)]
    rows_by_label: dict[str, dict[str, CaseRecord]] = defaultdict(dict)
    for r in recs:
        rows_by_label[row_label(r, devices, machines)][pts.text(r)] = r
    rows = [[label, *[shown(cells[c]) if c in cells else "" for c in columns]]
            for label, cells in sorted(rows_by_label.items())]
    return ["backend·mode", *columns], rows, columns


def tables(records: Sequence[CaseRecord]) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """Per workload and dtype: (title, header, rows, notes). A column is a point of the workload's
    parameters, named by those that vary; notes carry the fastest correct case per point, and every
    failure's reason, once per backend·mode; backends unavailable on this machine get no row (see
    `unavailable_line`)."""
    sp = speedups(records)
    points = points_by_workload(records)
    out = []
    for (wl, dtype), recs in _by_table(records).items():
        pts = points[wl]
        devices = {r.device for r in recs}
        machines = frozenset(r.machine for r in recs if r.machine)
        header, rows, columns = _grid(recs, pts, lambda r: cell(r, sp.get((r.id, r.machine))))
        best = []
        # A run's environments (--env) are ranked apart: each one's fastest, never one against another.
        envs = list(dict.fromkeys(r.env or "" for r in recs))
        for c, env in ((c, env) for c in columns for env in envs):
            ok = [r for r in recs if pts.text(r) == c and r.status == "ok" and (r.env or "") == env]
            at = f"{c} [{env}]" if len(envs) > 1 else c
            if ok:
                fastest = min(ok, key=timed)
                named = f"{row_label(fastest, devices, machines)} ({format_seconds(fastest.median_s)})"
                ties = [r for r in sorted(ok, key=timed)
                        if r is not fastest and bracket.order(fastest, r) != -1]
                tied = [row_label(r, devices, machines) for r in ties]
                best.append(f"{at}: no fastest correct case beyond noise: {listed([named, *tied])} are "
                            f"within noise of each other ({tie_seen(fastest, ties)})" if tied
                            else f"{at}: fastest correct is {named}")
        reasons: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for r in recs:
            if r.status != "ok" and r.error:
                reasons[(row_label(r, devices, machines), r.status, r.error)].append(pts.text(r))
        notes = [pts.apart()] if pts.apart() else []
        notes += best + [
            f"{label}{_at_points(at, columns)}: {status} — {error}"
            for (label, status, error), at in sorted(reasons.items())
        ]
        numpy = " · speedup vs numpy" if any((r.id, r.machine) in sp for r in recs) else ""
        memory = " · memory of a call" if any(r.memory_bytes is not None for r in recs) else ""
        title = f"{wl} ({dtype}; median per call ± IQR{numpy} · first call{memory} · bound)"
        out.append((title, header, rows, notes))
    return out


def _at_points(at: list[str], columns: list[str]) -> str:
    """Where a failure happened: nothing when at every point of the table, else the points."""
    if len(at) == len(columns):
        return ""
    return " at " + "; ".join(c for c in columns if c in at)


def checks(records: Sequence[CaseRecord]) -> list[tuple[str, list[str], list[list[str]]]]:
    """Per workload and dtype: (title, header, rows) of each checked case's error against its tolerance."""
    points = points_by_workload(records)
    out = []
    for (wl, dtype), recs in _by_table(records).items():
        header, rows, _ = _grid(recs, points[wl], check_text)
        if any(any(row[1:]) for row in rows):
            out.append((f"{wl} ({dtype}; relative error against the float64 reference, and its tolerance)",
                        header, rows))
    return out


def render_text(records: Sequence[CaseRecord],
                draw: Callable[[list[str], list[list[str]]], str] | None = None) -> str:
    """The tables for a terminal; `draw` renders each (default: the padded text table)."""
    draw = draw or text_table
    blocks = [line] if (line := unavailable_line(records)) else []
    for title, header, rows, notes in tables(records):
        blocks.append("\n".join([title, draw(header, rows), *[f"  {n}" for n in notes]]))
    return "\n\n".join(blocks)


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of one Markdown table (formats.markdown_table's)."""
    return formats.markdown_table(header, rows).splitlines()


def render_markdown(records: Sequence[CaseRecord]) -> str:
    blocks = []
    for title, header, rows, notes in tables(records):
        md = [f"### {title}", "", *markdown_table(header, rows)]
        if notes:
            md += [""] + [f"- {n}" for n in notes]
        blocks.append("\n".join(md))
    return "\n\n".join(blocks)


def render_checks_markdown(records: Sequence[CaseRecord]) -> str:
    """Each checked case's error against its tolerance, a table per workload and dtype."""
    return "\n\n".join("\n".join([f"### {title}", "", *markdown_table(header, rows)])
                        for title, header, rows in checks(records))
