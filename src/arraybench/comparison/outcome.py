"""What a comparison found: each case's verdict (CaseComparison) and the two runs side by side
(Comparison), and the table `arraybench compare` prints of them as text or Markdown (render), which is
also a Comparison's repr. `cases` makes them (compare), `rendering` shows them in the other formats."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from arraybench.comparison import memory_change
from arraybench.output import formats
from arraybench.results import Planned
from arraybench.results.record import CaseRecord
from arraybench.stats.between_runs import RunSpread
from arraybench.stats.two_sample import SampleComparison
from arraybench.stats.verdicts import ALPHA, FASTER, NOISY, SAME, SLOWER
from arraybench.units import format_seconds

BROKEN, NOT_COMPARED = "broken", "not compared"
VERDICTS = (SLOWER, BROKEN, FASTER, SAME, NOISY, NOT_COMPARED)

# A run-to-run spread worth less than this many degrees of freedom is not added: its t quantile is
# unbounded (two earlier runs whose cases shift together gave τ ±2.2 % worth 0.06 df on the 2-core
# VM), so every interval would be infinite; the comparison says so and goes on without it.
MIN_SPREAD_DF = 1.0
# What marks an interval that carries the spread between runs (RunSpread) in the case table.
RUN_MARK = "†"


@dataclass(frozen=True)
class CaseComparison:
    """One case present in both runs; `result` is None when either side has no valid time."""

    label: str
    row: str
    base: CaseRecord
    new: CaseRecord
    result: SampleComparison | None
    verdict: str
    note: str
    memory: memory_change.MemoryChange | None = None  # its memory, new over base (comparison/memory_change.py)
    # Where a side's processes spread beyond its run's prior: the words that say it was judged on its own
    # spread (comparison/cases.judged_alone), found where the sides were measured; "" where none.
    alone: str = ""


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side: the cases both ran, those only one ran, and how their setups differ."""

    base_name: str
    new_name: str
    cases: list[CaseComparison]
    only_base: list[str]
    only_new: list[str]
    differences: list[str]
    threshold: float
    run_spread: RunSpread | None = None  # from earlier runs of the machine; None: no history
    # From the two runs' own cases (between_runs.pair_spread); None: paired, or too few cases to tell.
    pair_spread: RunSpread | None = None
    paired: bool = False  # two environments of one run (compare's `paired`): no history applies
    # How many of its planned cases each side holds (Results.planned); None: its header does not say.
    planned: tuple[Planned | None, Planned | None] = (None, None)

    def partial_sides(self) -> list[str]:
        """A sentence for each side that holds fewer cases than its run planned."""
        sides = zip((self.base_name, self.new_name), self.planned, strict=True)
        return [f"{name} holds only {p} (its run was interrupted, is still running or was stored in part)"
                for name, p in sides if p is not None and not p.complete]

    def __repr__(self) -> str:
        """The table `arraybench compare` prints (a notebook shows this, not every record)."""
        return render(self, None)

    def geometric_means(self) -> list[tuple[str, float, int]]:
        """Per backend·mode: the geometric mean of new/base over its compared cases, and their count."""
        logs: dict[str, list[float]] = defaultdict(list)
        for c in self.cases:
            if c.result is not None:
                logs[c.row].append(math.log(c.result.ratio))
        return [(row, math.exp(sum(v) / len(v)), len(v)) for row, v in sorted(logs.items())]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(VERDICTS, 0)
        for c in self.cases:
            out[c.verdict] += 1
        return out

    def regressions(self, limit: float) -> list[CaseComparison]:
        """Significant slowdowns beyond `limit`, and cases that worked in base and fail in new."""
        return [c for c in self.cases if c.verdict == BROKEN
                or (c.verdict == SLOWER and c.result is not None and c.result.ratio > 1 + limit)]


def _case_rows(cmp: Comparison) -> list[list[str]]:
    rows = []
    order = {v: i for i, v in enumerate(VERDICTS)}
    for c in sorted(cmp.cases, key=lambda c: (order[c.verdict], c.label, c.row)):
        if c.result is None:
            rows.append([c.label, c.row, _median(c.base), _median(c.new), "", "", f"{c.verdict}: {c.note}"])
            continue
        lo, hi = c.result.ci95
        mark = RUN_MARK if c.result.run_variance > 0 else ""
        rows.append([c.label, c.row, _median(c.base), _median(c.new),
                     f"{c.result.ratio:.3f} [{lo:.3f}, {hi:.3f}]{mark}", f"{c.result.q_value:.2g}",
                     f"{c.verdict} ({c.note})" if c.note else c.verdict])
    return rows


def _median(r: CaseRecord) -> str:
    return format_seconds(r.median_s) if r.status == "ok" else r.status.upper()


CASE_HEADER = ["case", "backend·mode", "base median", "new median", "new/base [95% CI]", "q (BH)", "verdict"]
GEO_HEADER = ["backend·mode", "geometric mean new/base", "cases"]


def summary(cmp: Comparison) -> str:
    parts = [f"{n} {v}" for v, n in cmp.counts().items() if n]
    return (f"{cmp.new_name} vs {cmp.base_name}: cases on both sides: {len(cmp.cases)}"
            + (f" ({', '.join(parts)})" if parts else "")
            + f"; threshold {100 * cmp.threshold:g}%, false discovery rate {100 * ALPHA:g}% (Benjamini–Hochberg)")


# Said under two separate runs' verdicts where no earlier run gave the spread between runs: what
# their intervals cannot see. Measured on the 2-core VM (2026-11-27): NumPy's 10⁶ `a + b` ran
# 125-127 µs in both processes of one run of `benchmarks/reproducibility.py aa` and 104-109 µs in all
# three of the other, over 69 s and 200 s, while 83 other cases agreed; the same case was ×1.26
# between the two runs of a `benchmarks/noisy.py` pair, a verdict that 16 earlier runs of that plan
# took away (their spread between runs: ±8.3 %).
NO_HISTORY = ("No earlier runs of this machine: each interval holds what varied within its run, not a state "
              "of the host that outlasts a run (on a shared VM one case of 84 moved 15 % so between two "
              "identical runs). With 2 earlier stored runs of these cases compare adds that spread; two "
              "builds measured side by side in one run (--env, docs/environments.md) need none.")


def history_line(cmp: Comparison) -> str | None:
    """What the earlier runs of this machine, and the two runs' own cases, added to the intervals;
    without either, what the intervals of two separate runs cannot see, where a case was found slower or
    faster; else None."""
    spread, pair = cmp.run_spread, cmp.pair_spread
    lines = [line for line in (earlier_line(cmp), pair_line(pair)) if line]
    if lines:
        return "\n".join(lines)
    decided = any(c.verdict in (SLOWER, FASTER) for c in cmp.cases)
    return None if cmp.paired or not decided or spread is not None or pair is not None else NO_HISTORY


def earlier_line(cmp: Comparison) -> str | None:
    """What the earlier runs of this machine added to the intervals (None: no history)."""
    spread, pair = cmp.run_spread, cmp.pair_spread
    if spread is None:
        return None
    source = f"{spread.runs} earlier runs of this machine ({spread.cases} cases)"
    added = sorted(math.expm1(math.sqrt(c.result.run_variance)) for c in cmp.cases
                   if c.result is not None and c.result.run_variance > 0
                   and (pair is None or c.result.run_variance != pair.variance))
    if spread.df < MIN_SPREAD_DF:
        machine = (f"as one figure for the machine, ±{100 * spread.relative:.1f}% is worth {spread.df:.2g} degrees of "
                   f"freedom (its cases shift together, so it is known from {spread.runs - 1} difference(s) "
                   "between runs)")
    else:
        df = f" ({spread.df:.0f} df)" if math.isfinite(spread.df) else ""
        machine = f"±{100 * spread.relative:.1f}%{df} over the machine's cases"
    if not added:
        return (f"Run-to-run spread from {source}: {machine}; no case's own beyond its processes' spread"
                f"{' and the two runs' if pair is not None and pair.variance > 0 else ''}, nothing added from it.")
    own = (f"±{100 * added[0]:.1f}%" if len(added) == 1 else
           f"±{100 * added[0]:.1f}% to ±{100 * added[-1]:.1f}%, median ±{100 * added[len(added) // 2]:.1f}%")
    return (f"{RUN_MARK} Run-to-run spread from {source}: each case's own ({own}) added to both sides of the "
            f"{len(added)} intervals so marked; {machine} (--no-history leaves it out).")


def pair_line(pair: RunSpread | None) -> str | None:
    """What the two runs' own cases say of the spread between them (between_runs.pair_spread)."""
    if pair is None:
        return None
    if pair.variance <= 0:
        return (f"The two runs' {pair.cases} cases scatter between them no more than their processes do: "
                "no spread between the runs added.")
    return (f"{RUN_MARK} The two runs' {pair.cases} cases scatter between them ±{100 * pair.relative:.1f}% "
            f"beyond their processes ({pair.df:.0f} df): added to both sides of every interval marked so "
            "that history does not widen more, for a state of the host that outlasts a run moves all of its "
            "processes alike.")


def render(cmp: Comparison, note: str | None, markdown: bool = False,
           table: Callable[[list[str], list[list[str]]], str] = formats.text_table) -> str:
    """The comparison for a terminal (`table` draws its tables), or as Markdown for a pull request."""
    table = formats.markdown_table if markdown else table
    blocks = ["## arraybench compare", summary(cmp)] if markdown else [summary(cmp)]
    blocks += [f"**{line}.**" if markdown else f"{line}." for line in cmp.partial_sides()]
    history = history_line(cmp)
    if history:
        blocks.append(history)
    if note:
        diffs = [f"> - `{d}`" if markdown else f"  {d}" for d in cmp.differences]
        blocks.append("\n".join([f"> **{note}**\n>" if markdown else note, *diffs]))
    if cmp.cases:
        blocks.append(table(CASE_HEADER, _case_rows(cmp)))
        geo = [[row, f"{g:.3f}", str(k)] for row, g, k in cmp.geometric_means()]
        if geo:
            blocks.append(table(GEO_HEADER, geo))
        held = memory_change.table_rows([(c.label, c.row, c.memory) for c in cmp.cases if c.memory is not None])
        if held:
            blocks += ["Memory of a call (docs/memory.md)", table(memory_change.HEADER, held)]
    for side, only in ((cmp.base_name, cmp.only_base), (cmp.new_name, cmp.only_new)):
        if only:
            items = [f"- `{x}`" if markdown else f"  {x}" for x in only]
            blocks.append("\n".join([f"Only in {side}:\n" if markdown else f"only in {side}:", *items]))
    return "\n\n".join(blocks) + "\n"
