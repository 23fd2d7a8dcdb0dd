"""The devices section of a report: one computation over 1, 2, 4... devices of a kind, with time,
speedup, efficiency and the share spent communicating, and where adding a device stops paying."""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arraybench.core.case import label as case_label
from arraybench.core.device_tokens import kind_of
from arraybench.core.palette import colour
from arraybench.report.data import ReportData
from arraybench.report.view import timed
from arraybench.results.record import CaseRecord
from arraybench.stats import bracket
from arraybench.units import format_seconds

# Below this efficiency (speedup over the device count) a further device costs more than half its
# worth: the usual line where scaling stops paying.
MIN_EFFICIENCY = 0.5
# The case that is a multi-device case's communication alone, and the parameter they share.
COMMUNICATION = {"dp_grad": ("allreduce", "d"), "dp_grad_pmap": ("allreduce", "d")}
COPY_WORKLOAD = "device_copy"
HOST_COPIES = ("transfer_to_host", "transfer_to_device")


@dataclass(frozen=True)
class Point:
    """One device count of a series: its case, and the figures against the series' one-device case."""

    n: int
    record: CaseRecord
    speedup: float | None
    efficiency: float | None
    communication: float | None  # share of the call the all-reduce alone takes, where measured
    separated: bool | None  # faster than the previous count beyond both intervals (None: first)
    limit: int  # the most speedup its devices can give: their count, or the cores they share where fewer
    suspect: bool  # more than `limit` times faster than one device beyond both intervals: not a speedup

    def beyond(self) -> str:
        """Why the point is suspect, in words."""
        cores = _cores_shared(self.record)
        devices = f"{self.n} devices" + (f" sharing {cores} cores" if cores else "")
        return (f"{_x(self.speedup)} at {self.n} devices is beyond noise above the {self.limit}× that "
                f"{devices} can give (efficiency {_f((self.speedup or 0.0) / self.limit)})")


@dataclass(frozen=True)
class Series:
    """A workload at one parameter point, on one backend·mode, dtype, machine and kind, over device counts."""

    workload: str
    label: str
    kind: str
    size: Any
    fixed: tuple[tuple[str, Any], ...]  # its problem: the parameters other than the size
    problem: str  # 'm=128' where the workload's cases differ in more than the size, else ''
    points: tuple[Point, ...]

    @property
    def point(self) -> str:
        """'256', or '256, m=128' where the size alone does not say which problem."""
        return f"{self.size}, {self.problem}" if self.problem else str(self.size)

    @property
    def suspect(self) -> Point | None:
        """The first count faster than the hardware allows; None where none is. Its speedups rest on
        a one-device case slowed by something else (a compile, another process): none is claimed."""
        return next((p for p in self.points if p.suspect), None)

    @property
    def stops_at(self) -> Point | None:
        """The first count where adding devices stops paying: efficiency below MIN_EFFICIENCY, or no
        faster than the count before it by the intervals; None where every count paid."""
        return next((p for p in self.points[1:] if (p.efficiency is not None and p.efficiency < MIN_EFFICIENCY)
                     or p.separated is False), None)


def _ok(r: CaseRecord) -> bool:
    return r.status == "ok" and bool(r.median_s)


def _n(r: CaseRecord) -> int:
    return int(r.n_devices or 1)


def series(data: ReportData) -> list[Series]:
    """Every workload·backend·mode measured at two or more device counts of one kind, one-device baseline first."""
    groups: dict[tuple, list[CaseRecord]] = defaultdict(list)
    for r in data.records:
        if _ok(r) and r.workload != COPY_WORKLOAD:
            key = (r.machine, r.workload, r.dtype, r.backend, r.mode,
                   kind_of(r.device), tuple(sorted(r.params.items())), r.env or "")
            groups[key].append(r)
    out = []
    for key, recs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        by_n = {_n(r): r for r in recs}
        if len(by_n) < 2:
            continue
        base = by_n.get(1)
        points: list[Point] = []
        for n in sorted(by_n):
            case = by_n[n]
            speedup = timed(base) / timed(case) if base else None
            separated = bracket.order(case, points[-1].record) == -1 if points else None
            limit = min(n, _cores_shared(case) or n)
            suspect = base is not None and bracket.order(case, base, limit) == -1
            points.append(Point(n, case, speedup, speedup / n if speedup else None, _communication(data, case),
                                separated, limit, suspect))
        machine, workload, dtype, backend, mode, kind, *_ = key
        label = case_label(recs[0], machine=len(data.machines) > 1)
        label += f" ({dtype})" if len({r.dtype for r in data.records}) > 1 else ""
        out.append(Series(workload, label, kind, recs[0].size, data.points(workload).fixed(recs[0]),
                          data.problem(recs[0]), tuple(points)))
    return out


def _communication(data: ReportData, r: CaseRecord) -> float | None:
    """The all-reduce alone over the call, for a case whose communication was measured as its own case."""
    if r.workload == "allreduce":
        return 1.0 if _n(r) > 1 else None
    if r.workload not in COMMUNICATION or _n(r) == 1:
        return None
    alone, shared = COMMUNICATION[r.workload]
    for c in data.records:
        if (c.workload == alone and _ok(c) and c.machine == r.machine and c.dtype == r.dtype
                and c.backend == r.backend and c.mode == r.mode and c.device == r.device
                and c.params.get(shared) == r.params.get(shared)):
            return min(1.0, timed(c) / timed(r))
    return None


def verdict(s: Series) -> str:
    """In words: up to which count adding a device paid, and why it stopped; or why its speedups are suspect."""
    stop = s.stops_at
    paid = last_paid(s)
    what = f"{s.workload} [{s.point}] {s.label} on {s.kind}"
    if (odd := s.suspect) is not None:
        return f"{what}: suspect, no scaling claimed: {odd.beyond()}."
    if stop is None:
        best = s.points[-1]
        return (f"{what}: every device paid, up to {best.n} (speedup {_x(best.speedup)}, "
                f"efficiency {_f(best.efficiency)}).")
    why = (f"efficiency {_f(stop.efficiency)} < {MIN_EFFICIENCY:g}" if stop.efficiency is not None
           and stop.efficiency < MIN_EFFICIENCY else "not faster than the count before it beyond the intervals")
    if paid is None:
        more = "a second device does not pay" if stop.n == 2 else "adding devices does not pay"
        return f"{what}: {more}: at {stop.n}, {why} (speedup {_x(stop.speedup)})."
    return (f"{what}: adding devices pays up to {paid.n} (speedup {_x(paid.speedup)}); "
            f"at {stop.n} it stops: {why}.")


def last_paid(s: Series) -> Point | None:
    """The largest device count up to which adding devices paid; None where a second did not, or
    where the series is suspect."""
    if s.suspect is not None:
        return None
    stop = s.stops_at
    paid = [p for p in s.points[1:] if stop is None or p.n < stop.n]
    return paid[-1] if paid else None


def can_gain(found: Sequence[Series]) -> list[Series]:
    """The series that adding devices could speed up: all but the all-reduce alone, which is all
    communication (its verdict would say the obvious)."""
    return [s for s in found if s.workload != "allreduce"]


def in_words(found: Sequence[Series]) -> str:
    """The answer's sentence on a workload's scaling: which series gained from more devices, up to how
    many, that the others did not, and which gained more than the hardware allows (suspect, not claimed)."""
    found = can_gain(found)
    if not found:
        return ""
    sound = [s for s in found if s.suspect is None]
    paid = [(s, p) for s in sound if (p := last_paid(s)) is not None]
    counts = sorted({p.n for s in found for p in s.points[1:]})
    shared = sorted({c for s in found for p in s.points if (c := _cores_shared(p.record))})
    listed = " and ".join(filter(None, (", ".join(map(str, counts[:-1])), str(counts[-1])))) if counts else ""
    cores = f" ({listed} CPU devices here share {shared[0]} cores)" if shared else ""
    odd = "; ".join(f"{s.label} [{s.point}] on {s.kind}: {p.beyond()}" for s in found if (p := s.suspect))
    suspect = f"; suspect, so not claimed: {odd}" if odd else ""
    if not sound:
        return f"No scaling is claimed{cores}: {odd}."
    if not paid:
        best = max(((s, p) for s in sound for p in s.points[1:] if p.speedup),
                   key=lambda sp: sp[1].speedup or 0.0, default=None)
        text = f"Adding devices paid for none of its {len(sound)} backend·mode·size series{cores}"
        if best is not None:
            s, p = best
            text += f"; the closest: {s.label} [{s.point}] at {p.n}, speedup {_x(p.speedup)}"
        return text + suspect + "."
    named = ", ".join(f"{s.label} [{s.point}] on {s.kind} up to {p.n} ({_x(p.speedup)})" for s, p in paid)
    rest = len(sound) - len(paid)
    return (f"Adding devices pays for {named}" + (f"; not for the other {rest} series" if rest else "")
            + f"{cores}{suspect}.")


def _cores_shared(r: CaseRecord) -> int | None:
    return (r.backend_info or {}).get("cores_shared")


def _x(v: float | None) -> str:
    return f"{v:.2f}×" if v is not None else "–"


def _f(v: float | None) -> str:
    return f"{v:.2f}" if v is not None else "–"


def _pct(v: float | None) -> str:
    return f"{100 * v:.0f} %" if v is not None else ""


def cores_note(data: ReportData) -> str:
    """What the CPU devices of the run shared: N "devices" on fewer cores are slices of the same cores."""
    shared = sorted({(_n(r), _cores_shared(r)) for r in data.records
                     if _n(r) > 1 and kind_of(r.device) == "cpu" and _cores_shared(r)})
    if not shared:
        return ""
    text = "; ".join(f"{n} devices on {cores} core(s)" for n, cores in shared)
    return (f"CPU devices here are forced host devices (JAX), logical devices (TensorFlow) or processes "
            f"(PyTorch) over the same cores: {text}. They share those cores, so no speedup beyond the core "
            f"count can come from more compute, and past it a device only adds its overhead.")


HEADER = ["workload", "size", "backend·mode", "kind", "devices", "median / call", "speedup", "efficiency",
          "communication"]


def rows(all_series: Sequence[Series]) -> list[list[str]]:
    return [[s.workload, s.point, s.label, s.kind, str(p.n), format_seconds(p.record.median_s),
             _x(p.speedup) + (" (suspect)" if p.suspect else ""), _f(p.efficiency), _pct(p.communication)]
            for s in all_series for p in s.points]


def copies(data: ReportData) -> list[str]:
    """Each device→device copy beside the host↔device copies of the same size and backend, in GB/s."""
    out = []
    for r in data.records:
        if r.workload != COPY_WORKLOAD or not _ok(r) or not r.bytes:
            continue
        line = f"{r.backend} {r.device} n={r.size}: device→device {_gbs(r)}"
        for other in data.records:
            if (other.workload in HOST_COPIES and _ok(other) and other.backend == r.backend
                    and other.size == r.size and other.dtype == r.dtype
                    and kind_of(other.device) == kind_of(r.device)):
                line += f"; {other.workload.replace('transfer_', '')} {_gbs(other)}"
        out.append(line)
    return sorted(out)


def _gbs(r: CaseRecord) -> str:
    return f"{(r.bytes or 0.0) / timed(r) / 1e9:.3g} GB/s ({format_seconds(r.median_s)})"


INTRO = ("One computation spread over 1, 2, 4... devices of a kind. Speedup is the one-device case's median "
         "over this one's; efficiency is speedup over the device count; communication is the all-reduce "
         "measured alone (`allreduce` at the same d) as a share of the call. Adding a device stops paying "
         f"where efficiency falls below {MIN_EFFICIENCY:g} or the time does not fall beyond both 95 % intervals. "
         "A speedup above what the devices can give (their count, or the cores they share where fewer) "
         "beyond both intervals is suspect, more likely a one-device case slowed by something else (a compile, "
         "another process) than a gain: no scaling is claimed for it.")


def markdown(data: ReportData) -> list[str]:
    """Lines of report.md's devices section; none where the run has no multi-device case."""
    found, copied = series(data), copies(data)
    if not found and not copied:
        return []
    md = ["## Several devices", "", INTRO, ""]
    note = cores_note(data)
    md += [note, ""] if note else []
    if found:
        md += [f"- {verdict(s)}" for s in can_gain(found)] + [""]
        md += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        md += ["| " + " | ".join(row) + " |" for row in rows(found)]
        md += [""]
    if copied:
        md += ["Copies between devices, beside the host's (document 004):", ""] + [f"- {c}" for c in copied] + [""]
    return md


def html_section(data: ReportData) -> str:
    """The HTML report's devices section; "" where the run has no multi-device case."""
    found, copied = series(data), copies(data)
    if not found and not copied:
        return ""
    e = html.escape
    parts = [f'<section id="devices"><h2>Several devices</h2><p>{e(INTRO).replace("`", "")}</p>']
    note = cores_note(data)
    if note:
        parts.append(f"<p>{e(note)}</p>")
    if found:
        parts.append("<ul>" + "".join(f"<li>{e(verdict(s))}</li>" for s in can_gain(found)) + "</ul>")
        head = "".join(f"<th>{e(h)}</th>" for h in HEADER)
        body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows(found))
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    if copied:
        parts.append("<p>Copies between devices, beside the host's (document 004):</p><ul>"
                     + "".join(f"<li>{e(c)}</li>" for c in copied) + "</ul>")
    return "".join(parts) + "</section>"


# Sizes by line style; the colour is the backend·mode's, as in every plot (palette.py).
LINE_STYLES = ("-", "--", "-.", ":")


def plots(data: ReportData, save: Callable[[str, str, str, Any], None]) -> None:
    """Draw the section's plots with `save(name, title, caption, figure)` (plots.write_plots's)."""
    found = series(data)
    by_workload: dict[str, list[Series]] = defaultdict(list)
    for s in found:
        by_workload[s.workload].append(s)
    if not by_workload:
        return
    from matplotlib.figure import Figure

    for workload, group in sorted(by_workload.items()):
        fig = Figure(figsize=(7.2, 5.2), layout="constrained")
        ax = fig.subplots()
        counts = sorted({p.n for s in group for p in s.points})
        ax.plot(counts, counts, color="#999999", linestyle=":", label="ideal (speedup = devices)")
        ax.axhline(1.0, color="#cccccc", linewidth=0.8)
        cores = sorted({c for s in group for p in s.points if (c := _cores_shared(p.record))})
        if cores:
            ax.axhline(cores[0], color="#999999", linestyle="--", linewidth=0.8,
                       label=f"the {cores[0]} cores the CPU devices share")
        # One colour per backend·mode, one line style per parameter point (a size, of one problem): a
        # reader follows a framework across sizes, and two problems of one size are two lines.
        where = sorted({(s.size, s.point) for s in group}, key=lambda v: (str(type(v[0])), v))
        for s in group:
            pts = [(p.n, p.speedup) for p in s.points if p.speedup is not None]
            style = LINE_STYLES[where.index((s.size, s.point)) % len(LINE_STYLES)]
            ax.plot([n for n, _ in pts], [x for _, x in pts], marker="o", color=colour(s.label), linestyle=style,
                    label=f"{s.label} [{s.point}] {s.kind}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts, [str(c) for c in counts])
        ax.set_xlabel("devices")
        ax.set_ylabel("speedup over one device")
        fig.legend(fontsize="small", loc="outside lower center", ncols=3)
        save(f"devices-{workload}", f"{workload}: speedup over devices",
             "Speedup over the same computation on one device, per backend·mode (dotted: ideal). "
             f"Where a line falls below half the diagonal (efficiency {MIN_EFFICIENCY:g}) adding a device "
             "stopped paying; on CPU devices that share cores it cannot rise above the core count.", fig)
