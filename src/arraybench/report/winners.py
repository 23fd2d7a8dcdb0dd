"""The answer at a glance: a map of the fastest per workload and size, a line per workload, a terminal table.

Every cell rests on answer.leads, the ranking the written answer uses: the fastest correct case at
a size, and whether the runner-up is within noise of it (then the cell is a tie, never a win).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from arraybench.core.palette import FAILED_GREY, FAILED_RED, colour, ink
from arraybench.report import memory_section
from arraybench.report.answer import leads
from arraybench.report.crossovers import Crossover
from arraybench.report.data import ReportData, status_word
from arraybench.report.table import size_text, tie_seen
from arraybench.report.view import CaseView, timed
from arraybench.results.record import FAILED
from arraybench.results.speedups import size_sort_key
from arraybench.stats import bracket

CAPTION = ("A cell per measured size, smallest first: the fastest correct backend·mode and its median's lead "
           "over the runner-up's. ≈ and two colours: within noise, no winner. Grey: nothing correct; ✗: a case "
           "failed or was wrong (never ranked).")
MEMORY_TITLE = "Least memory per call per size, correct cases only (the runner-up's over it)"
MEMORY_CAPTION = ("The same map by memory: a cell per size where memory was measured, the correct backend·mode "
                  "whose steady call needs the least (its inputs included), and the runner-up's memory over "
                  "its. ≈ and two colours: within noise (memory is compared at 1 MiB and varies between "
                  "processes too), no one needs less.")
# A line under the map says a workload's answer in at most this many words; the rest is in the answer below.
MAX_WORDS = 25
# Lead changes a line names one by one; beyond this it counts the ones between the first and the last.
NAMED_CHANGES = 2


@dataclass(frozen=True)
class Cell:
    """One measured size of one workload: its fastest correct backend·mode and by how much."""

    size: Any
    best: str | None  # label of the fastest correct case; None where no case was correct
    tied: str | None  # the runner-up, where it is within noise of `best`: a tie, no winner
    lead: float | None  # the runner-up's median over the best's, where the lead is decided
    failed: tuple[str, ...]  # 'numba·jit WRONG': cases here that failed or were wrong (never ranked)
    bound: str | None  # what limits the fastest case (bound.MEANING)
    seen: str = ""  # a tie's "no difference larger than 12 % (80 % power)": what it could have seen

    def labels(self) -> tuple[str, ...]:
        """The backend·modes the cell names: the fastest, and the one tied with it."""
        return tuple(label for label in (self.best, self.tied) if label)

    def key(self) -> str:
        """What the cell claims, in words: a lead changes where this changes."""
        if self.best is None:
            return "no correct case"
        # A tie is the same claim whichever of the two has the smaller median: noise may swap them.
        return " ≈ ".join(sorted(self.labels()))

    def lead_text(self) -> str:
        """'2.3×', '1.04×', 'tie', 'only correct' (the rest failed here) or 'no rival' (nothing else ran)."""
        if self.best is None:
            return " ".join(sorted({w.rsplit(" ", 1)[1] for w in self.failed}))
        if self.tied:
            return "tie"
        if self.lead is None:
            return "only correct" if self.failed else "no rival"
        # Three digits below 2× (1.04×, where the written answer says 4 %), two above, none past 100×.
        digits = ".3g" if self.lead < 2 else ".2g" if self.lead < 100 else ",.0f"
        return f"{self.lead:{digits}}×"


@dataclass(frozen=True)
class Row:
    """One problem of a workload (per dtype, and machine where there are several) across its own
    measured sizes: a series, never two problems strung into one (workloads/sizes.fixed_params)."""

    workload: str
    dtype: str
    machine: str
    fixed: tuple[tuple[str, Any], ...]  # the parameters other than the size
    problem: str  # 'm=128' where the workload's cases differ in more than the size, else ''
    title: str
    size_name: str
    cells: tuple[Cell, ...]
    env: str = ""  # the Python environment (--env) whose backend·modes it ranks, in a run of several

    @property
    def anchor(self) -> str:
        return anchor(self)


class Problem(Protocol):
    """What names one problem: a map's Row and its written answer.Answer alike."""

    @property
    def workload(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def machine(self) -> str: ...
    @property
    def problem(self) -> str: ...
    @property
    def env(self) -> str: ...


def anchor(p: Problem) -> str:
    """The HTML id of a problem's written answer, which its line under the map links to."""
    return "answer-" + re.sub(r"[^A-Za-z0-9_.-]+", "-",
                              "-".join(filter(None, (p.workload, p.dtype, p.machine, p.problem, p.env))))


def rows(data: ReportData) -> list[Row]:
    """Every problem with a case that ran (correct or not), in the order of the written answer."""
    return _rows(data, [r for r in data.records if r.status == "ok" or r.status in FAILED], _cells)


def memory_rows(data: ReportData) -> list[Row]:
    """The map by memory: every problem with a correct case whose memory was measured, a cell per such size."""
    return _rows(data, [r for r in data.records if r.status == "ok" and r.memory_bytes is not None], _memory_cells)


def _rows(data: ReportData, records: Sequence[CaseView],
          cells: Callable[[ReportData, Sequence[CaseView]], tuple[Cell, ...]]) -> list[Row]:
    groups = data.problems(records)
    many_dtypes = len({k.dtype for k in groups}) > 1
    out = []
    for (wl, dtype, machine, fixed, env), recs in groups.items():
        problem = data.problem(recs[0])
        apart = "; ".join(filter(None, (dtype if many_dtypes else "", problem)))
        title = (wl + (f" ({apart})" if apart else "") + (f" @{machine}" if len(data.machines) > 1 else "")
                 + (f" [{env}]" if env else ""))
        out.append(Row(wl, dtype, machine, fixed, problem, title, data.size_param(wl), cells(data, recs), env))
    return out


def _memory_cells(data: ReportData, recs: Sequence[CaseView]) -> tuple[Cell, ...]:
    """Per size, the case that needs the least memory, and the runner-up: tied where it is within noise."""
    cells = []
    for size in sorted({r.size for r in recs}, key=size_sort_key):
        ranked = sorted((r for r in recs if r.size == size), key=lambda r: r.memory_bytes or 0)
        best, second = ranked[0], ranked[1] if len(ranked) > 1 else None
        tied = second is not None and memory_section.apart(best, second) != -1
        ratio = (second.memory_bytes or 0) / best.memory_bytes if second and best.memory_bytes and not tied else None
        cells.append(Cell(size, data.label(best), data.label(second) if tied and second else None, ratio, (), None))
    return tuple(cells)


def _cells(data: ReportData, recs: Sequence[CaseView]) -> tuple[Cell, ...]:
    """The sizes answer.leads ranks, and those where nothing was correct, small to large."""
    def failed(size: Any) -> tuple[str, ...]:
        return tuple(sorted(f"{data.label(r)} {status_word(r)}" for r in recs
                            if r.status in FAILED and r.size == size))

    cells = []
    for lead in leads(data, recs):
        rivals = sorted((r for r in recs if r.status == "ok" and r.median_s and r.size == lead.size
                         and r is not lead.best), key=timed)
        second = lead.rival or (rivals[0] if rivals else None)
        ratio = timed(second) / timed(lead.best) if second and not lead.tied else None
        noise = second is not None and bracket.order(lead.best, second) != -1  # not a lead under 0.5 %
        cells.append(Cell(lead.size, data.label(lead.best), data.label(second) if lead.tied and second else None,
                          ratio, failed(lead.size), lead.best.bound,
                          tie_seen(lead.best, [second]) if noise and second else ""))
    ranked = {c.size for c in cells}
    for size in {r.size for r in recs} - {r.size for r in recs if r.status == "ok"} - ranked:
        cells.append(Cell(size, None, None, None, failed(size), None))
    return tuple(sorted(cells, key=lambda c: size_sort_key(c.size)))


def _size(v: Any) -> str:
    return size_text(v) if isinstance(v, int | float) else str(v)


@dataclass(frozen=True)
class Stretch:
    """Consecutive sizes over which a row's cells claim the same (one winner, one tie or no correct case)."""

    key: str
    cells: tuple[Cell, ...]


def stretches(row: Row) -> list[Stretch]:
    """The row's cells, consecutive ones that claim the same joined."""
    out: list[Stretch] = []
    for c in row.cells:
        if out and out[-1].key == c.key():
            out[-1] = Stretch(c.key(), (*out[-1].cells, c))
        else:
            out.append(Stretch(c.key(), (c,)))
    return out


@dataclass(frozen=True)
class Change:
    """Where a row's claim changes: near `estimate` where a crossover holds it, bracketed by measured
    sizes; otherwise somewhere between the measured sizes `lo` and `hi`."""

    size_name: str
    lo: Any
    hi: Any
    estimate: float | None

    def text(self) -> str:
        """'n ≈ 9600' or 'n = 1000–10⁶'."""
        if self.estimate is not None:
            return f"{self.size_name} ≈ {size_text(self.estimate, True)}"
        return f"{self.size_name} = {_size(self.lo)}–{_size(self.hi)}"


def changes(row: Row, found: Sequence[Crossover]) -> list[Change]:
    """Each change of the claim along the row, with the crossover that brackets it where there is one."""
    parts = stretches(row)
    out = []
    for a, b in zip(parts, parts[1:], strict=False):
        s0, s1 = a.cells[-1].size, b.cells[0].size
        c = next((c for c in found if (c.workload, c.dtype, c.machine, c.fixed)
                  == (row.workload, row.dtype, row.machine, row.fixed) and c.state == bracket.BRACKETED
                  and c.faster_below in a.cells[0].labels() and c.faster_above in b.cells[0].labels()
                  and c.lo < s1 and c.hi > s0), None)
        out.append(Change(row.size_name, s0, s1, c.size if c else None))
    return out


def line(row: Row, found: Sequence[Crossover]) -> str:
    """'numpy·eager below n ≈ 5000, then numba·jit (2× at 10⁶); memory-bound throughout.': with the
    workload's name at most MAX_WORDS words; the clauses after the first are left out where they do not fit."""
    parts, moves, last = stretches(row), changes(row, found), row.cells[-1]
    if len(parts) == 1:
        text = f"{_name(parts[0], None)} " + (f"at every {row.size_name}" if len(row.cells) > 1
                                             else f"at {row.size_name} = {_size(last.size)}")
    elif len(parts) <= NAMED_CHANGES + 1:
        edges = [None, *moves, None]
        text = ", then ".join(_phrase(p, _name(p, parts[i - 1] if i else None), edges[i], edges[i + 1])
                              for i, p in enumerate(parts))
    else:
        text = ", then ".join([_phrase(parts[0], _name(parts[0], None), None, moves[0]),
                               f"{len(moves) - 2} more changes",
                               _phrase(parts[-1], _name(parts[-1], None), moves[-1], None)])
    if last.best is not None and not last.tied and last.lead_text() != "no rival":
        text += f" ({last.lead_text()}" + (f" at {_size(last.size)})" if len(row.cells) > 1 else ")")
    out = text
    for clause in (_failed_clause(row), _bound_clause(row)):
        if clause and len(f"{row.title} {out}; {clause}.".split()) <= MAX_WORDS:
            out += f"; {clause}"
    return out + "."


def _phrase(part: Stretch, name: str, left: Change | None, right: Change | None) -> str:
    """'numpy·eager below n ≈ 9600', 'torch·eager from 3162 up to 10⁴', 'tied with torch·eager at 3162':
    a stretch between two changes; where a change is bracketed its estimate says where, else the
    measured sizes do (the size's name at its first mention)."""
    start = part.cells[0].size if left is not None and left.estimate is None else None
    end = part.cells[-1].size if right is not None and right.estimate is None else None
    if start is not None and start == end:
        return f"{name} at {_size(start)}"
    words = [name, f"from {_size(start)}" if start is not None else ""]
    if right is not None:
        named = f"{right.size_name} = " if left is None else ""
        words.append(f"below {right.text()}" if right.estimate is not None else f"up to {named}{_size(end)}")
    return " ".join(w for w in words if w)


def _name(part: Stretch, before: Stretch | None) -> str:
    """A stretch in words: 'numba·jit', 'numpy·eager and torch·eager tied', or 'tied with torch·eager'
    right after numpy·eager's own stretch."""
    cell = part.cells[0]
    if cell.best is None or cell.tied is None:
        return part.key
    prev = before.cells[0] if before is not None else None
    if prev is not None and prev.tied is None and prev.best in cell.labels():
        return f"tied with {cell.tied if prev.best == cell.best else cell.best}"
    return f"{cell.best} and {cell.tied} tied"


def _failed_clause(row: Row) -> str:
    bad = sorted({w for c in row.cells for w in c.failed})
    if not bad:
        return ""
    return bad[0] if len(bad) == 1 else f"{len(bad)} cases wrong or failed"


def _bound_clause(row: Row) -> str:
    words = [(c.size, c.bound) for c in row.cells if c.bound]
    if not words:
        return ""
    if all(w == words[0][1] for _, w in words):
        return f"{words[0][1]}-bound" + (" throughout" if len(row.cells) > 1 else "")
    return f"{words[0][1]}-bound at {_size(words[0][0])}, {words[-1][1]}-bound at {_size(words[-1][0])}"


# Inches: a cell is at most CELL_W wide (a backend·mode·device label at 8 pt), narrower where many sizes
# would not fit the screen, never under MIN_CELL_W; a row is tall enough for two lines and its size.
CELL_W, MIN_CELL_W, CELL_H, TITLE_W = 1.5, 1.1, 0.5, 1.9
# What the report's page shows at its natural size below its header on a 1300×900 screen, in inches
# (96 px each): a map with few sizes and many workloads is laid out in panels side by side to fit.
SCREEN_W, PANEL_ROWS = 12.4, 10
# A label's width in DejaVu Sans, per character, as a share of its size in points (measured: 0.58).
CHAR_W = 0.6


def figure(grid: Sequence[Row], order: Sequence[str],
           title: str = "Fastest correct backend·mode per size (its lead over the runner-up)") -> Any:
    """The map: a row per workload, a cell per measured size (small to large), coloured by the
    fastest correct backend·mode (or the one that needs the least memory: memory_rows); two colours
    and hatching for a tie, grey hatching where no case was correct, a red ✗ where a case failed or
    was wrong. `order` is the legend's order of labels."""
    from matplotlib.figure import Figure

    ncols = max(len(r.cells) for r in grid)
    cell_w = max(MIN_CELL_W, min(CELL_W, (SCREEN_W - TITLE_W) / ncols))
    longest = max(len(text) for r in grid for c in r.cells for text in _texts(c))
    font = min(8.0, 0.9 * 72 * cell_w / (CHAR_W * longest))
    width = TITLE_W + cell_w * ncols
    panels = max(1, min(int(SCREEN_W // width), -(-len(grid) // PANEL_ROWS)))
    per = -(-len(grid) // panels)
    fig = Figure(figsize=(width * panels, 0.95 + CELL_H * per), layout="constrained")
    for k, ax in enumerate(fig.subplots(1, panels, squeeze=False)[0]):
        chunk = grid[k * per:(k + 1) * per]
        for i, row in enumerate(chunk):
            for j, cell in enumerate(row.cells):
                _draw_cell(ax, j, i, cell, row.size_name, font)
        ax.set_xlim(-0.5, ncols - 0.5)
        ax.set_ylim(per - 0.5, -0.5)
        ax.set_yticks(range(len(chunk)), [r.title for r in chunk], fontsize=9)
        ax.set_xticks([])
        ax.tick_params(length=0)
        ax.grid(False)
        for side in ax.spines.values():
            side.set_visible(False)
    fig.suptitle(title, fontsize=10)
    _legend(fig, grid, order)
    return fig


def _texts(cell: Cell) -> tuple[str, str]:
    """The cell's two lines: who, and by how much (or the tie's second, or what went wrong)."""
    if cell.best is None:
        return "no correct case", cell.lead_text()
    if cell.tied:
        return f"{cell.best} ≈", cell.tied
    return cell.best, cell.lead_text()


def _draw_cell(ax: Any, x: int, y: int, cell: Cell, size_name: str, font: float) -> None:
    from matplotlib.patches import Rectangle

    corner = (x - 0.48, y - 0.45)
    face = "#ffffff"  # under a plate: a tie's two colours or the grey of a cell with nothing correct
    if cell.best is None:
        ax.add_patch(Rectangle(corner, 0.96, 0.9, facecolor=FAILED_GREY, hatch="xx", edgecolor="white", linewidth=0))
    elif cell.tied:
        ax.add_patch(Rectangle(corner, 0.48, 0.9, facecolor=colour(cell.best), linewidth=0))
        ax.add_patch(Rectangle((x, y - 0.45), 0.48, 0.9, facecolor=colour(cell.tied), linewidth=0))
        ax.add_patch(Rectangle(corner, 0.96, 0.9, fill=False, hatch="//", edgecolor="#ffffffaa", linewidth=0))
    else:
        face = colour(cell.best)
        ax.add_patch(Rectangle(corner, 0.96, 0.9, facecolor=face, linewidth=0))
    plate = {"facecolor": face, "alpha": 0.85, "pad": 0.6, "linewidth": 0} if face == "#ffffff" else None
    first, second = _texts(cell)
    decided = cell.lead is not None  # only a lead is bold: not a tie, a lone case or a failure
    ax.text(x - 0.45, y - 0.41, f"{size_name} = {_size(cell.size)}", fontsize=min(7.0, font), va="top",
            ha="left", color=ink(face), bbox=plate)
    ax.text(x, y + 0.02, first, fontsize=font, ha="center", va="center", color=ink(face), bbox=plate)
    ax.text(x, y + 0.28, second, fontsize=font + 2 if decided else font, ha="center", va="center",
            fontweight="bold" if decided else None, color=ink(face), bbox=plate)
    if cell.failed and cell.best is not None:
        ax.text(x + 0.44, y - 0.36, "✗", fontsize=8, fontweight="bold", ha="right", va="top", color=FAILED_RED,
                bbox={"facecolor": "white", "pad": 0.3, "linewidth": 0, "boxstyle": "circle"})


def _legend(fig: Any, grid: Sequence[Row], order: Sequence[str]) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    cells = [c for r in grid for c in r.cells]
    shown = {label for c in cells for label in c.labels()}
    handles: list[Any] = [Patch(facecolor=colour(label), label=label) for label in order if label in shown]
    if any(c.tied for c in cells):
        handles.append(Patch(facecolor="#dddddd", hatch="//", edgecolor="white", label="≈ tie: within noise"))
    if any(c.best is None for c in cells):
        handles.append(Patch(facecolor=FAILED_GREY, hatch="xx", edgecolor="white", label="no correct case"))
    if any(c.failed and c.best for c in cells):
        handles.append(Line2D([], [], linestyle="", marker="$✗$", color=FAILED_RED,
                              label="a case here failed or was wrong (never ranked)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5), fontsize=8,
               handlelength=1.4, columnspacing=1.2)


def terminal_table(grid: Sequence[Row], found: Sequence[Crossover]) -> tuple[list[str], list[list[str]]]:
    """(header, rows): per workload the claim at its smallest and its largest size and where it changes,
    what the terminal prints instead of the paragraphs of report.md."""
    body = []
    for row in grid:
        first, last = row.cells[0], row.cells[-1]
        moves = ", ".join(m.text() for m in changes(row, found)) or "none"
        ends = [_cell_text(row, first)] + ([_cell_text(row, last)] if len(row.cells) > 1 else ["(one size)"])
        body.append([row.title, *ends, moves])
    return ["workload", "smallest size", "largest size", "the answer changes at"], body


def _cell_text(row: Row, cell: Cell) -> str:
    """'numba·jit 1.5× (n = 10⁶)', 'numpy·eager ≈ torch·eager (n = 10⁶; no difference larger than 9 %
    (80 % power))', 'no correct case: WRONG (d = 8)'."""
    if cell.best is None:
        what = f"no correct case: {cell.lead_text()}"
    elif cell.tied:
        what = f"{cell.best} ≈ {cell.tied}"
    else:
        what = f"{cell.best} {cell.lead_text()}"
    flag = f", ✗ {len(cell.failed)} failed or wrong" if cell.failed and cell.best else ""
    flag += f"; {cell.seen}" if cell.seen else ""
    return f"{what} ({row.size_name} = {_size(cell.size)}{flag})"
