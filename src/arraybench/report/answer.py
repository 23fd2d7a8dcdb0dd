"""The answer first: one short paragraph per workload in plain words — who is fastest where, by how much, and why."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arraybench.core.device_tokens import kind_of
from arraybench.report import bound, devices, memory_section
from arraybench.report.crossovers import Crossover
from arraybench.report.data import ReportData
from arraybench.report.table import held_by_reach, listed, size_text, tie_seen
from arraybench.report.view import CaseView, timed
from arraybench.stats import bracket, modes
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
    machine and Python environment where there are several) and its one-line why."""

    workload: str
    dtype: str
    machine: str
    verdict: str
    why: str
    problem: str = ""  # 'm=128' where the workload's cases differ in more than the size
    unmeasured: str = ""  # "No GPU was measured: …", where every case of a device kind was unavailable
    fixed: tuple[tuple[str, Any], ...] = ()  # the problem's parameters other than the size, all of them
    env: str = ""  # the Python environment (--env) whose backend·modes it ranks, in a run of several

    @property
    def title(self) -> str:
        return (f"{self.workload} ({self.dtype}{'; ' + self.problem if self.problem else ''})"
                + (f" in environment {self.env}" if self.env else ""))

    def text(self) -> str:
        return f"{self.verdict} {self.why}".strip()


def answers(data: ReportData, found: list[Crossover]) -> list[Answer]:
    """Every problem with a correct case, in the report's order: a series over the size is answered
    size by size; cases that differ in another parameter are another problem, answered apart."""
    scaling = devices.series(data)
    out = []
    for (wl, dtype, machine, fixed, env), every in data.problems(data.records).items():
        recs = [r for r in every if r.status != "unavailable"]
        ok = [r for r in recs if r.status == "ok" and r.median_s]
        unmeasured = _unmeasured(every, _asked(data, machine))
        if not ok:
            if unmeasured:
                out.append(Answer(wl, dtype, machine, unmeasured, "", data.problem(every[0]), unmeasured, fixed, env))
            continue
        here = [c for c in found
                if (c.workload, c.dtype, c.machine, c.fixed, c.env) == (wl, dtype, machine, fixed, env)]
        name = data.size_param(wl)
        verdict = _verdict(data, name, ok, _complete_sizes(data, recs), here)
        # A multi-device workload's answer also says where adding a device stops paying.
        spread = devices.in_words([s for s in scaling if s.workload == wl and s.points[0].record.dtype == dtype
                                   and s.points[0].record.machine == machine and s.fixed == fixed
                                   and (s.points[0].record.env or "") == env])
        open_sizes = _open_sizes(ok)
        said = (_why(data, name, ok), memory_section.sentence(data, name, ok), spread,
                _spells(data, name, ok, open_sizes), _modes(data, name, open_sizes), _pools(data, name, open_sizes),
                unmeasured)
        out.append(Answer(wl, dtype, machine, verdict, " ".join(t for t in said if t),
                          data.problem(every[0]), unmeasured, fixed, env))
    return out


def _asked(data: ReportData, machine: str) -> set[str] | None:
    """The device kinds the run on `machine` asked for (`--devices`); None where its header does not say."""
    header = data.headers.get(machine)
    devices = header.settings.devices if header is not None else None
    return {kind_of(d) for d in devices} if devices else None


# A tie is put down to the host's spells where they reached at least this share of its cases' processes.
SPELLS_OPEN = 1 / 3


def _open_sizes(recs: Sequence[CaseView]) -> list[tuple[Any, list[CaseView]]]:
    """Each size with no winner beyond noise, with its fastest and the cases within noise of it."""
    out = []
    for s in _sizes(recs):
        ranked = _at(recs, s)
        if len(ranked) >= 2 and bracket.order(ranked[0], _rival(ranked)) != -1:
            out.append((s, _within_noise(ranked)))
    return out


def _spells(data: ReportData, name: str, recs: Sequence[CaseView], open_sizes: list[tuple[Any, list[CaseView]]]
            ) -> str:
    """'Open at n = 1000 while slow spells of the host reached 4 of the 6 processes of its leaders (18 %
    of this run's): more rounds (--budget) or a quieter host would decide it.', where the host's spells
    are why sizes have no winner (`open_sizes`: _open_sizes; they reached SPELLS_OPEN of the tied cases'
    processes); else ''."""
    sizes, reached, processes = [], 0, 0
    for s, tied in open_sizes:
        hit, total = sum(r.spelled for r in tied), sum(r.n_processes or 1 for r in tied)
        if total and hit >= SPELLS_OPEN * total:
            sizes.append(s)
            reached, processes = reached + hit, processes + total
    if not sizes:
        return ""
    header = data.headers.get(recs[0].machine)
    run = header.analysis.spells if header is not None and header.analysis is not None else None
    share = (run.touched + run.covered) / run.processes if run is not None and run.processes else None
    where = listed([_size(s) for s in sizes])
    of_run = f" ({100 * share:.0f} % of this run's)" if share is not None else ""
    return (f"Open at {name} = {where} while slow spells of the host reached {reached} of the {processes} "
            f"processes of the backend·modes tied there{of_run}: more rounds (--budget) or a quieter host "
            "would decide it.")


def _modes(data: ReportData, name: str, open_sizes: list[tuple[Any, list[CaseView]]]) -> str:
    """'At n = 1000 the processes of jax·jit fell into two speeds, 5.09-5.41 µs in 4 processes and
    27.9-58.9 µs in 2 processes, which leaves its place open: more processes (--processes or --budget)
    would decide it.', where a size has no winner and one of the cases tied there has processes in two
    modes (stats/modes.two_modes; `open_sizes`: _open_sizes); else ''.
    Such a case's median moves with the share of its processes that landed in each mode, so no number of
    rounds that a spell would need settles it quickly."""
    found = []
    for s, tied in open_sizes:
        for r in tied:
            split = modes.two_modes([math.exp(x) for _, x in r.rounds])  # each process's, spells set aside
            if split is not None:
                found.append((s, r, split))
    if not found:
        return ""
    s, r, (fast, slow) = found[0]
    others = len(found) - 1
    more = f" (so did {others} more case{'s' if others > 1 else ''} tied at its size)" if others else ""
    return (f"At {name} = {_size(s)} the processes of {data.label(r)} fell into two speeds, {_speed(fast)} and "
            f"{_speed(slow)}{more}, which leaves its place open: more processes (--processes or --budget) would "
            "decide it.")


def _pools(data: ReportData, name: str, open_sizes: list[tuple[Any, list[CaseView]]]) -> str:
    """'Open at n = 100 while the host kept the thread pools of numpy·eager and numba·jit waiting: in a run
    that meets them ready they may run up to 2.4× faster, so no order within that is claimed; a quieter
    host would decide it.', where a size has no winner because a case tied there may have run `reach`×
    faster (stats/pools.reach; bracket.held); else ''. More rounds in the same state would not decide it."""
    sizes, names, most = [], [], 1.0
    for s, tied in open_sizes:
        held = held_by_reach(tied[0], tied[1:])
        if waiting := [r for r in (tied[0], *held) if held and r.reach > 1]:
            sizes.append(_size(s))
            names += [label for r in waiting if (label := data.label(r)) not in names]
            most = max(most, *(r.reach for r in waiting))
    if not sizes:
        return ""
    pools, them = ("thread pools", "them") if len(names) > 1 else ("thread pool", "it")
    return (f"Open at {name} = {listed(sizes)} while the host kept the {pools} of {listed(names)} waiting: in a run "
            f"that meets {them} ready {them} may run up to {most:.1f}× faster, so no "
            "order within that is claimed; a quieter host would decide it.")


def _speed(medians: Sequence[float]) -> str:
    """'5.09-5.52 µs in 4 processes'."""
    lo, hi = format_seconds(min(medians)), format_seconds(max(medians))
    (low, unit), (_, same) = lo.split(" ", 1), hi.split(" ", 1)
    span = lo if lo == hi else f"{low}-{hi}" if unit == same else f"{lo}-{hi}"
    return f"{span} in {len(medians)} processes"


def _unmeasured(recs: Sequence[CaseView], asked: set[str] | None = None) -> str:
    """'No GPU was measured: every gpu case was unavailable (jax sees no gpu here: cpu ×1).', per kind of
    device other than the CPU that the run asked for (`asked`; None: every kind) and whose every case
    was unavailable: no figure stands for it; '' where none. CuPy's cases sit on its GPU in a run that
    asked for the CPU only; a machine without CuPy does not make that run's answer about a GPU."""
    by_kind: dict[str, list[CaseView]] = defaultdict(list)
    for r in recs:
        by_kind[kind_of(r.device or "cpu")].append(r)
    out = []
    for kind, rs in sorted(by_kind.items()):
        if kind != "cpu" and (asked is None or kind in asked) and all(r.status == "unavailable" for r in rs):
            why = "; ".join(sorted({r.error or "unavailable" for r in rs}))
            out.append(f"No {kind.upper()} was measured: every {kind} case was unavailable ({why}).")
    return " ".join(out)


def _complete_sizes(data: ReportData, recs: Sequence[CaseView]) -> set[Any]:
    """Sizes at which the sweep's backend·modes were measured, not only two rivals: bisection adds
    sizes for the two backend·modes of one crossover (or a few, where crossovers share a size), and
    the fastest of two is not the fastest of all. A size counts when at least half as many
    backend·modes ran there as at the best-covered size (and at least three, where three ran
    anywhere). Refinement can add more sizes than were planned, so this counts backend·modes per
    size, never sizes per backend·mode."""
    at: dict[Any, set[str]] = defaultdict(set)
    for r in recs:
        at[r.size].add(data.label(r))
    most = max((len(labs) for labs in at.values()), default=0)
    need = max(min(3, most), -(-most // 2))
    return {s for s, labs in at.items() if len(labs) >= need}


def _at(recs: Sequence[CaseView], size: Any) -> Sequence[CaseView]:
    return sorted((r for r in recs if r.size == size), key=timed)


def _sizes(recs: Sequence[CaseView]) -> list[Any]:
    numeric = sorted({r.size for r in recs if isinstance(r.size, int | float)})
    return numeric or sorted({str(r.size) for r in recs})


def _lead(data: ReportData, ranked: Sequence[CaseView]) -> str:
    """'1.9× ahead of torch·eager' (and of numpy·eager where that is not the runner-up)."""
    if len(ranked) < 2:
        return "the only correct backend·mode"
    best, second = ranked[0], ranked[1]
    text = _ahead(data, best, second)
    numpy = next((r for r in ranked[2:] if r.backend == "numpy" and r.mode == "eager"), None)
    if numpy is not None:
        text += f" and {_ahead(data, best, numpy)}"
    return text


def _ahead(data: ReportData, best: CaseView, other: CaseView) -> str:
    """'1.9× ahead of torch·eager'; a tie where the two are not apart beyond noise (their intervals
    overlap: the test crossovers and refinement use) or the lead rounds to 0 %."""
    if tie := _tie(best, other):
        return f"tied with {data.label(other)} {tie}"
    return f"{_ratio(timed(other) / timed(best))} ahead of {data.label(other)}"


def _tie(best: CaseView, other: CaseView) -> str:
    """'within noise (no difference larger than 12 % (80 % power))' or 'within 0.5 %' where `best` is
    not ahead of `other` beyond either; else ''."""
    if bracket.order(best, other) != -1:
        return f"within noise ({tie_seen(best, [other])})"
    if timed(other) / timed(best) < TIED_BELOW:
        return f"within {100 * (TIED_BELOW - 1):g} %"
    return ""


@dataclass(frozen=True)
class Lead:
    """The fastest correct case at one size of a sweep, and its margin over the runner-up."""

    size: Any
    best: CaseView
    margin: str  # '1.9× ahead of torch·eager', 'tied with jax·jit within noise', 'the only correct backend·mode'
    tied: bool
    rival: CaseView | None = None  # the case the margin is over (_rival)


def leads(data: ReportData, recs: Sequence[CaseView]) -> list[Lead]:
    """At each size the verdict ranks (where the sweep's backend·modes were measured, not only a
    crossover's two), the fastest correct case among `recs`: one workload, dtype and machine."""
    ok = [r for r in recs if r.status == "ok" and r.median_s]
    complete = _complete_sizes(data, [r for r in recs if r.status != "unavailable"])
    out = []
    for s in [s for s in _sizes(ok) if s in complete] or _sizes(ok):
        ranked = _at(ok, s)
        if len(ranked) < 2:
            out.append(Lead(s, ranked[0], "the only correct backend·mode", False))
        else:
            rival = _rival(ranked)
            out.append(Lead(s, ranked[0], _ahead(data, ranked[0], rival), bool(_tie(ranked[0], rival)), rival))
    return out


def _rival(ranked: Sequence[CaseView]) -> CaseView:
    """What the fastest by its median at one size (`ranked`: _at, two cases or more) leads by: the first
    case it is not ahead of beyond noise, else the runner-up. Ahead of the runner-up is not ahead of all
    where a case further behind may have run `reach`× faster (stats/pools.reach)."""
    tied = _within_noise(ranked)[1:]
    return tied[0] if tied else ranked[1]


def _ratio(x: float) -> str:
    """1.9× for clear leads; a percentage where a × figure would round to 1."""
    if x < 1.1:
        return f"{100 * (x - 1):.0f} %"
    return f"{x:.2g}×" if x < 100 else f"{x:,.0f}×"


def _leader(data: ReportData, ranked: Sequence[CaseView]) -> str | None:
    """The fastest backend·mode at one size where it is ahead of every rival beyond noise (_rival); None
    where no one is."""
    if len(ranked) > 1 and bracket.order(ranked[0], _rival(ranked)) != -1:
        return None
    return data.label(ranked[0])


def _within_noise(ranked: Sequence[CaseView]) -> list[CaseView]:
    """The fastest by the medians at one size (`ranked`: _at) and every case within noise of it."""
    return [r for r in ranked if r is ranked[0] or bracket.order(ranked[0], r) != -1]


def _tied(data: ReportData, ranked: Sequence[CaseView]) -> list[str]:
    """The fastest by the medians at one size and every backend·mode within noise of it."""
    return [data.label(r) for r in _within_noise(ranked)]


def _tie_words(data: ReportData, ranked: Sequence[CaseView]) -> tuple[str, frozenset[str]]:
    """'numpy·eager and numba·jit are within noise of each other' at one size, naming only the fastest
    by its median and the backend·modes within noise of it; where two of those are apart beyond noise
    themselves, 'numba·jit and torch·eager are each within noise of numpy·eager'. With what it claims,
    which noise may order either way (the words differ only in the order of the names)."""
    tied = _within_noise(ranked)
    names = [data.label(r) for r in tied]
    if all(bracket.order(a, b) == 0 for i, a in enumerate(tied) for b in tied[i + 1:]):
        return f"{listed(names)} are within noise of each other", frozenset(names)
    return f"{listed(names[1:])} are each within noise of {names[0]}", frozenset([*names, f"of {names[0]}"])


def _verdict(data: ReportData, name: str, recs: Sequence[CaseView], complete: set[Any],
             found: list[Crossover]) -> str:
    """Who is fastest where, by how much, and where that changes; where no one is ahead beyond noise,
    which backend·modes are within noise of each other there, never a side."""
    sizes = [s for s in _sizes(recs) if s in complete] or _sizes(recs)
    runs: list[tuple[str | None, list[Any]]] = []  # the leader (None: no one beyond noise) and its sizes
    for s in sizes:
        who = _leader(data, _at(recs, s))
        if runs and runs[-1][0] == who:
            runs[-1][1].append(s)
        else:
            runs.append((who, [s]))
    runs = _fold(data, recs, runs, found)

    def within(run: list[Any]) -> str:
        """The ties of a stretch of sizes with no winner, stated size by size: one clause where every
        size ties the same backend·modes, else one per stretch of sizes that does."""
        parts: list[tuple[str, frozenset[str], list[Any]]] = []
        for s in run:
            words, claim = _tie_words(data, _at(recs, s))
            if parts and parts[-1][1] == claim:
                parts[-1][2].append(s)
            else:
                parts.append((words, claim, [s]))
        if len(parts) == 1:
            return parts[0][0]
        return "; ".join(f"at {name} = {_span(sizes)}, {words}" for words, _, sizes in parts)

    def span_said(run: list[Any]) -> bool:
        """Whether `within(run)` names its sizes itself (its ties differ from size to size)."""
        return len({_tie_words(data, _at(recs, s))[1] for s in run}) > 1

    last, top = sizes[-1], _at(recs, sizes[-1])
    at_last = f"at {name} = {_size(last)}"
    if len(sizes) == 1 and runs[0][0] is None:
        ties = [r for r in top[1:] if bracket.order(top[0], r) != -1]
        text = (f"At {name} = {_size(last)}, no backend·mode is fastest beyond noise: {data.label(top[0])} "
                f"({format_seconds(top[0].median_s)} per call) and {listed(_tied(data, top)[1:])} are "
                f"within noise of each other ({tie_seen(top[0], ties)}).")
    elif len(sizes) == 1:
        text = (f"At {name} = {_size(last)}, {runs[0][0]} is fastest "
                f"({format_seconds(top[0].median_s)} per call), {_lead(data, top)}.")
    elif len(runs) == 1 and runs[0][0] is None:
        text = (f"No backend·mode is fastest beyond noise at any measured {name} ({_size(sizes[0])} to "
                f"{_size(last)}): {within(sizes)}.")
    elif len(runs) == 1:
        text = (f"{runs[0][0]} is fastest at every measured {name} ({_size(sizes[0])} to {_size(last)}); "
                f"{at_last} it is {_lead(data, top)}.")
    else:
        text = f"{runs[0][0]} is fastest" if runs[0][0] else within(runs[0][1])
        for i, ((a, sa), (b, sb)) in enumerate(zip(runs, runs[1:], strict=False)):
            if a and b:
                text += f" {_change(name, a, b, sa[-1], sb[0], found)}, {b}"
                continue
            # A tie at one size between two runs was introduced as "at n = …", and ties that differ from
            # size to size name their sizes: no "up to" closes either.
            if a or ((i == 0 or len(sa) > 1) and not span_said(sa)):
                text += f" up to {name} = {_size(sa[-1])}"
            if b is None and span_said(sb):
                text += f"; {within(sb)}"
                continue
            where = "at" if b is None and len(sb) == 1 and i + 2 < len(runs) else "from"
            text += f"; {where} {name} = {_size(sb[0])}, " + (f"{b} is fastest" if b else within(sb))
        text += f", {_lead(data, top)} {at_last}." if runs[-1][0] else "."
    return " ".join([text, *_costs(data, name, recs, sizes[0])])


def _tied_in(data: ReportData, recs: Sequence[CaseView], sizes: Sequence[Any]) -> list[str]:
    """Every backend·mode within noise of the fastest at any of `sizes`, in order of appearance."""
    return list(dict.fromkeys(lab for s in sizes for lab in _tied(data, _at(recs, s))))


def _fold(data: ReportData, recs: Sequence[CaseView], runs: list[tuple[str | None, list[Any]]],
          found: list[Crossover]) -> list[tuple[str | None, list[Any]]]:
    """Sizes where only the two leaders either side are within noise of each other, inside a crossover
    between them that is decided at its ends: that crossover says so ('within noise of each other at
    every size measured between'), so the sizes are no run of their own."""
    out: list[tuple[str | None, list[Any]]] = []
    for i, (who, sizes) in enumerate(runs):
        prev, after = out[-1][0] if out else None, runs[i + 1][0] if i + 1 < len(runs) else None
        if (who is None and prev and after and prev != after
                and set(_tied_in(data, recs, sizes)) <= {prev, after}
                and _crossing(prev, after, out[-1][1][-1], runs[i + 1][1][0], found) is not None):
            continue
        out.append((who, sizes))
    return out


def _size(v: Any) -> str:
    return size_text(v) if isinstance(v, int | float) else str(v)


def _span(sizes: Sequence[Any]) -> str:
    """'1000' or '1000 to 10⁶': the measured sizes of a stretch."""
    return _size(sizes[0]) if len(sizes) == 1 else f"{_size(sizes[0])} to {_size(sizes[-1])}"


def _crossing(a: str, b: str, s0: Any, s1: Any, found: list[Crossover]) -> Crossover | None:
    """The crossover between `a` and `b` that spans sizes s0 to s1 and is decided at its ends; None
    where there is none, or it is open."""
    c = next((c for c in found if {c.faster_below, c.faster_above} == {a, b} and c.lo < s1 and c.hi > s0), None)
    return c if c is not None and c.state != bracket.OPEN and c.separated else None


def _change(name: str, a: str, b: str, s0: float, s1: float, found: list[Crossover]) -> str:
    """'below n ≈ 3100; above': where the lead passes from a to b, as closely as measured."""
    c = _crossing(a, b, s0, s1, found)
    if c is None:
        return f"up to {name} = {size_text(s0)}; from {name} = {size_text(s1)} (not bracketed more closely)"
    if c.state == bracket.TIE:
        return (f"below {name} ≈ {size_text(c.size, True)} (ahead beyond noise at {name} = {size_text(c.lo)}, "
                f"behind at {size_text(c.hi)}, within noise of each other at every size measured between); above")
    return f"below {name} ≈ {size_text(c.size, True)}; above"


def _costs(data: ReportData, name: str, recs: Sequence[CaseView], smallest: Any) -> list[str]:
    """'jax·jit ~7 µs': backend·modes whose smallest case is dispatch-bound and costly per call.

    A GPU case's cost per call is one synced call alone (`latency_s`) where it was measured: what a
    caller that needs each result pays, launch included; its pipelined median hides the launch."""
    ranked = _at(recs, smallest)

    def cost(r: CaseView) -> float:
        return r.latency_s or timed(r)

    cheapest = min(ranked, key=cost)
    costly = [r for r in ranked if r.bound == bound.DISPATCH and cost(r) >= COSTLY_CALL * cost(cheapest)]
    costly = sorted(costly, key=lambda r: -cost(r))[:MAX_NAMED_COSTS]
    if not costly:
        return []
    named = ", ".join(f"{data.label(r)} ~{format_seconds(cost(r))}" for r in costly)
    where = size_text(smallest) if isinstance(smallest, int | float) else smallest
    return [f"Per call at {name} = {where}: {named}, against {format_seconds(cost(cheapest))} for "
            f"{data.label(cheapest)}."]


def _why(data: ReportData, name: str, recs: Sequence[CaseView]) -> str:
    """One line: what bounds the fastest case at the smallest and at the largest size (the words
    are explained once, beside the tables)."""
    sizes = _sizes(recs)
    shown = [sizes[0]] if len(sizes) == 1 else [sizes[0], sizes[-1]]
    said = []
    for s in shown:
        ranked = _at(recs, s)
        fastest = ranked[0]
        word = fastest.bound
        # Where several are within noise of the fastest, its bound is the answer's only if theirs agree.
        if not word or any(r.bound != word for r in ranked[1:] if bracket.order(fastest, r) != -1):
            continue
        flop_roof, bw_roof = bound.roofs(data.peaks(fastest.machine), fastest.device,
                                         fastest.dtype)
        detail = ""
        if word in (bound.MEMORY, bound.COMPUTE) and fastest.intensity and flop_roof and bw_roof:
            detail = f" ({_figure(fastest.intensity)} FLOP/byte, ridge {_figure(flop_roof / bw_roof)})"
        elif word == bound.COMPUTE and fastest.gbs and bw_roof:
            detail = f" (streams {_figure(fastest.gbs)} of {_figure(bw_roof)} GB/s: the work, not memory)"
        said.append((s, word, detail))
    if not said:
        return ""
    if len(said) == 1 or said[0][1] == said[1][1]:
        return f"Why: {said[-1][1]}-bound{said[-1][2]}" + (" at both ends." if len(said) == 2 else ".")
    return "Why: " + "; ".join(f"{w}-bound at {name} = {size_text(s)}{d}" for s, w, d in said) + "."


def _figure(x: float) -> str:
    return f"{x:.2g}" if x < 100 else f"{x:,.0f}"
