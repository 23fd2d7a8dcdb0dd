"""The largest size that fits: each backend·mode's largest size of each workload under the run's memory limit."""

from __future__ import annotations

from collections.abc import Callable

from arraybench.output.formats import markdown_table, text_table
from arraybench.planning import fit
from arraybench.report.data import ReportData
from arraybench.report.table import size_text
from arraybench.units import format_size

HEADER = ["workload", "backend·mode", "largest size that fits", "it needs", "the next size measured"]


def limit(data: ReportData) -> int | None:
    """The memory limit of a `--sizes fit:BYTES` run among the report's; None where none was one."""
    found = [n for h in data.headers.values() if (n := fit.limit_of(h.settings.sizes)) is not None]
    return min(found) if found else None


def rows(data: ReportData, under: int) -> list[list[str]]:
    """A row per backend·mode of each problem: its largest size within `under` bytes and what it needs,
    and the smallest size above it that was measured, with why it does not fit."""
    out = []
    for f in sorted(fit.fits(data.records, under), key=lambda f: (f.workload, f.label)):
        name = data.size_param(f.workload)
        largest = f"{name} = {size_text(f.fits.size)}" if f.fits else "none, not even the first size"
        needs = format_size(round(fit.need(f.fits) or 0)) if f.fits else ""
        over = f"{name} = {size_text(f.over.size)}: {f.why_over()}" if f.over else "none above it (MAX_ROUNDS)"
        out.append([f.workload, f.label, largest, needs, over])
    return out


def title(under: int) -> str:
    return (f"The largest size under {format_size(under)} (--sizes fit): what each needs is the larger of its "
            "first call's memory and its steady call's, its inputs included (docs/memory.md)")


def render(data: ReportData, draw: Callable[[list[str], list[list[str]]], str] | None = None,
           markdown: bool = False) -> str:
    """The table, for a terminal (`draw`) or Markdown; '' for a report of given sizes."""
    under = limit(data)
    if under is None:
        return ""
    body = rows(data, under)
    if markdown:
        return f"## {title(under)}\n\n" + markdown_table(HEADER, body)
    return f"{title(under)}\n" + (draw or text_table)(HEADER, body)
