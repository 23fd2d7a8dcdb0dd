"""The answer first: one short paragraph per workload in plain words — who is fastest where, by how much, and why."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arraybench import bracket
from arraybench.report import bound, devices
from arraybench.report.crossovers import Crossover, point
from arraybench.report.model import ReportData
from arraybench.report.table import size_text
from arraybench.units import format_seconds

# A per-call cost is worth naming when it is at least this many times the fastest call at that size.
COSTLY_CALL = 2.0
MAX_NAMED_COSTS = 3
# A lead beyond noise but under this ratio would read "0 % ahead": it is written as a tie.
TIED_BELOW = 1.005
# What the answer says where it has nothing to rank.
NOTHING_CORRECT = "no case was correct (the notes under the tables say why)"


@dataclass(frozen=True)
class Answer:
    """One problem's verdict (per workload, dtype, the parameters besides the size where they vary,
    and machine where there are several) and its one-line why."""

    workload: str
    dtype: str
    machine: str
    verdict: str
    why: str
    problem: str = ""  # 'm=128' where the workload's cases differ in more than the size

    @property
    def title(self) -> str:
        return f"{self.workload} ({self.dtype}{'; ' + self.problem if self.problem else ''})"

    def text(self) -> str:
        return f"{self.verdict} {self.why}".strip()


def answers(data: ReportData, found: list[Crossover]) -> list[Answer]:
    """Every problem with a correct case, in the report's order: a series over the size is answered
    size by size; cases that differ in another parameter are another problem, answered apart."""
    groups: dict[tuple[str, str, str, tuple], list[Mapping[str, Any]]] = defaultdict(list)
    for r in data.records:
        if r["status"] != "unavailable":
            groups[(r["workload"], r["dtype"], r["machine"], data.points(r["workload"]).fixed(r))].append(r)
    scaling = devices.series(data)
    out = []
    def first(kv: tuple[tuple, list[Mapping[str, Any]]]) -> tuple:  # problems by their smallest point
        return (*kv[0][:3], min(data.points(kv[0][0]).order(r) for r in kv[1]))

    for (wl, dtype, machine, fixed), recs in sorted(groups.items(), key=first):
        ok = [r for r in recs if r["status"] == "ok" and r.get("median_s")]
        if not ok:
            continue
        here = [c for c in found if (c.workload, c.dtype, c.machine, c.fixed) == (wl, dtype, machine, fixed)]
        name = data.size_param(wl)
        verdict = _verdict(data, name, ok, _complete_sizes(data, recs), here)
        # A multi-device workload's answer also says where adding a device stops paying.
        spread = devices.in_words([s for s in scaling if s.workload == wl and s.points[0].record["dtype"] == dtype
                                   and s.points[0].record["machine"] == machine])
        out.append(Answer(wl, dtype, machine, verdict, " ".join(t for t in (_why(data, name, ok), spread) if t),
                          data.problem(recs[0])))
    return out


def _complete_sizes(data: ReportData, recs: Sequence[Mapping[str, Any]]) -> set[Any]:
    """Sizes at which the sweep's backend·modes were measured, not only two rivals: bisection adds
    sizes for the two backend·modes of one crossover (or a few, where crossovers share a size), and
    the fastest of two is not the fastest of all. A size counts when at least half as many
    backend·modes ran there as at the best-covered size (and at least three, where three ran
    anywhere). Refinement can add more sizes than were planned, so this counts backend·modes per
    size, never sizes per backend·mode."""
    at: dict[Any, set[str]] = defaultdict(set)
    for r in recs:
        at[r.get("size")].add(data.label(r))
    most = max((len(labs) for labs in at.values()), default=0)
    need = max(min(3, most), -(-most // 2))
    return {s for s, labs in at.items() if len(labs) >= need}


def _at(recs: Sequence[Mapping[str, Any]], size: Any) -> Sequence[Mapping[str, Any]]:
    return sorted((r for r in recs if r.get("size") == size), key=lambda r: r["median_s"])


def _sizes(recs: Sequence[Mapping[str, Any]]) -> list[Any]:
    numeric = sorted({r["size"] for r in recs if isinstance(r.get("size"), int | float)})
    return numeric or sorted({str(r.get("size")) for r in recs})


def _lead(data: ReportData, ranked: Sequence[Mapping[str, Any]]) -> str:
    """'1.9× ahead of torch·eager' (and of numpy·eager where that is not the runner-up)."""
    if len(ranked) < 2:
        return "the only correct backend·mode"
    best, second = ranked[0], ranked[1]
    text = _ahead(data, best, second)
    numpy = next((r for r in ranked[2:] if r["backend"] == "numpy" and r["mode"] == "eager"), None)
    if numpy is not None:
        text += f" and {_ahead(data, best, numpy)}"
    return text


def _ahead(data: ReportData, best: Mapping[str, Any], other: Mapping[str, Any]) -> str:
    """'1.9× ahead of torch·eager'; a tie where the two are not apart beyond noise (their intervals
    overlap: the test crossovers and refinement use) or the lead rounds to 0 %."""
    if tie := _tie(best, other):
        return f"tied with {data.label(other)} {tie}"
    return f"{_ratio(other['median_s'] / best['median_s'])} ahead of {data.label(other)}"


def _tie(best: Mapping[str, Any], other: Mapping[str, Any]) -> str:
    """'within noise' or 'within 0.5 %' where `best` is not ahead of `other` beyond either; else ''."""
    if bracket.side(point(best), point(other)) != -1:
        return "within noise"
    if other["median_s"] / best["median_s"] < TIED_BELOW:
        return f"within {100 * (TIED_BELOW - 1):g} %"
    return ""


@dataclass(frozen=True)
class Lead:
    """The fastest correct case at one size of a sweep, and its margin over the runner-up."""

    size: Any
    best: Mapping[str, Any]
    margin: str  # '1.9× ahead of torch·eager', 'tied with jax·jit within noise', 'the only correct backend·mode'
    tied: bool


def leads(data: ReportData, recs: Sequence[Mapping[str, Any]]) -> list[Lead]:
    """At each size the verdict ranks (where the sweep's backend·modes were measured, not only a
    crossover's two), the fastest correct case among `recs`: one workload, dtype and machine."""
    ok = [r for r in recs if r["status"] == "ok" and r.get("median_s")]
    complete = _complete_sizes(data, [r for r in recs if r["status"] != "unavailable"])
    out = []
    for s in [s for s in _sizes(ok) if s in complete] or _sizes(ok):
        ranked = _at(ok, s)
        if len(ranked) < 2:
            out.append(Lead(s, ranked[0], "the only correct backend·mode", False))
        else:
            out.append(Lead(s, ranked[0], _ahead(data, ranked[0], ranked[1]), bool(_tie(ranked[0], ranked[1]))))
    return out


def _ratio(x: float) -> str:
    """1.9× for clear leads; a percentage where a × figure would round to 1."""
    if x < 1.1:
        return f"{100 * (x - 1):.0f} %"
    return f"{x:.2g}×" if x < 100 else f"{x:,.0f}×"


def _verdict(data: ReportData, name: str, recs: Sequence[Mapping[str, Any]], complete: set[Any],
             found: list[Crossover]) -> str:
    sizes = [s for s in _sizes(recs) if s in complete] or _sizes(recs)
    runs: list[tuple[str, list[Any]]] = []  # the fastest backend·mode and the sizes where it leads
    for s in sizes:
        label = data.label(_at(recs, s)[0])
        if runs and runs[-1][0] == label:
            runs[-1][1].append(s)
        else:
            runs.append((label, [s]))
    last, top = sizes[-1], _at(recs, sizes[-1])
    at_last = f"at {name} = {size_text(last) if isinstance(last, int | float) else last}"
    if len(sizes) == 1:
        text = (f"At {name} = {last}, {runs[0][0]} is fastest ({format_seconds(top[0]['median_s'])} per call), "
                f"{_lead(data, top)}.")
    elif len(runs) == 1:
        text = (f"{runs[0][0]} is fastest at every measured {name} ({size_text(sizes[0])} to {size_text(last)}); "
                f"{at_last} it is {_lead(data, top)}.")
    else:
        text = f"{runs[0][0]} is fastest"
        for (a, sa), (b, sb) in zip(runs, runs[1:], strict=False):
            text += f" {_change(name, a, b, sa[-1], sb[0], found)}, {b}"
        text += f", {_lead(data, top)} {at_last}."
    return " ".join([text, *_costs(data, name, recs, sizes[0])])


def _change(name: str, a: str, b: str, s0: float, s1: float, found: list[Crossover]) -> str:
    """'below n ≈ 3100; above': where the lead passes from a to b, as closely as measured."""
    c = next((c for c in found if {c.faster_below, c.faster_above} == {a, b} and c.lo < s1 and c.hi > s0), None)
    if c is None or c.state == bracket.OPEN:
        return f"up to {name} = {size_text(s0)}; from {name} = {size_text(s1)} (not bracketed more closely)"
    if c.state == bracket.TIE:
        return (f"below {name} ≈ {size_text(c.size, True)} (ahead beyond noise at {name} = {size_text(c.lo)}, "
                f"behind at {size_text(c.hi)}, within noise of each other at every size measured between); above")
    return f"below {name} ≈ {size_text(c.size, True)}; above"


def _costs(data: ReportData, name: str, recs: Sequence[Mapping[str, Any]], smallest: Any) -> list[str]:
    """'jax·jit ~7 µs': backend·modes whose smallest case is dispatch-bound and costly per call.

    A GPU case's cost per call is one synced call alone (`latency_s`) where it was measured: what a
    caller that needs each result pays, launch included; its pipelined median hides the launch."""
    ranked = _at(recs, smallest)

    def cost(r: Mapping[str, Any]) -> float:
        return r.get("latency_s") or r["median_s"]

    cheapest = min(ranked, key=cost)
    costly = [r for r in ranked if r.get("bound") == bound.DISPATCH and cost(r) >= COSTLY_CALL * cost(cheapest)]
    costly = sorted(costly, key=lambda r: -cost(r))[:MAX_NAMED_COSTS]
    if not costly:
        return []
    named = ", ".join(f"{data.label(r)} ~{format_seconds(cost(r))}" for r in costly)
    where = size_text(smallest) if isinstance(smallest, int | float) else smallest
    return [f"Per call at {name} = {where}: {named}, against {format_seconds(cost(cheapest))} for "
            f"{data.label(cheapest)}."]


def _why(data: ReportData, name: str, recs: Sequence[Mapping[str, Any]]) -> str:
    """One line: what bounds the fastest case at the smallest and at the largest size (the words
    are explained once, beside the tables)."""
    sizes = _sizes(recs)
    shown = [sizes[0]] if len(sizes) == 1 else [sizes[0], sizes[-1]]
    said = []
    for s in shown:
        fastest = _at(recs, s)[0]
        word = fastest.get("bound")
        if not word:
            continue
        flop_roof, bw_roof = bound.roofs(data.peaks(fastest["machine"]), fastest.get("device", "cpu"),
                                         fastest["dtype"])
        detail = ""
        if word in (bound.MEMORY, bound.COMPUTE) and fastest.get("intensity") and flop_roof and bw_roof:
            detail = f" ({_figure(fastest['intensity'])} FLOP/byte, ridge {_figure(flop_roof / bw_roof)})"
        elif word == bound.COMPUTE and fastest.get("gbs") and bw_roof:
            detail = f" (streams {_figure(fastest['gbs'])} of {_figure(bw_roof)} GB/s: the work, not memory)"
        said.append((s, word, detail))
    if not said:
        return ""
    if len(said) == 1 or said[0][1] == said[1][1]:
        return f"Why: {said[-1][1]}-bound{said[-1][2]}" + (" at both ends." if len(said) == 2 else ".")
    return "Why: " + "; ".join(f"{w}-bound at {name} = {size_text(s)}{d}" for s, w, d in said) + "."


def _figure(x: float) -> str:
    return f"{x:.2g}" if x < 100 else f"{x:,.0f}"
