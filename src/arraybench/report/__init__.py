"""Report: what a person looks at — terminal tables, Markdown, CSV, plots and one self-contained HTML page."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arraybench.errors import UsageError
from arraybench.report import crossovers, table
from arraybench.report.files import csv_text
from arraybench.report.model import ReportData, environment_rows
from arraybench.report.table import size_sort_key
from arraybench.results import Results, atomic_write_text
from arraybench.runner import format_seconds

__all__ = ["Report", "publish", "write_all"]


@dataclass(frozen=True)
class Report:
    """The files one report consists of, and the text summary printed with it."""

    summary: str
    warnings: tuple[str, ...]
    markdown: Path
    csv: Path
    html: Path
    plots: tuple[Path, ...]


def summary_text(data: ReportData, found: list[crossovers.Crossover]) -> str:
    """Tables per machine, then the crossovers: what the terminal shows after a run."""
    blocks = []
    for machine in data.machines:
        recs = [r for r in data.records if r["machine"] == machine]
        heading = f"machine {machine}\n\n" if len(data.machines) > 1 else ""
        blocks.append(heading + table.render_text(recs))
    return "\n\n".join([*blocks, crossovers.render_text(data, found)])


def fastest_lines(data: ReportData) -> list[str]:
    """Per workload and size (and machine): the fastest correct backend·mode."""
    best: dict[tuple, dict] = {}
    for r in data.records:
        if r["status"] == "ok" and r.get("median_s"):
            key = (r["workload"], size_sort_key(r.get("size")), r["dtype"], r["machine"])
            if key not in best or r["median_s"] < best[key]["median_s"]:
                best[key] = r
    return [f"{r['workload']} {data.size_param(r['workload'])}={r.get('size')} ({r['dtype']}): "
            f"{data.label(r)}, {format_seconds(r['median_s'])} per call" for _, r in sorted(best.items())]


def markdown_text(data: ReportData, found: list[crossovers.Crossover], plots: Sequence[Path]) -> str:
    md = ["# arraybench report", ""]
    for machine in data.machines:
        recs = [r for r in data.records if r["machine"] == machine]
        md += [f"## {machine}", "", table.render_markdown(recs), ""]
    md += ["## Crossovers", "", crossovers.render_text(data, found), "", "## Plots", ""]
    md += [f"![{p.stem}](plots/{p.name})" for p in plots if p.suffix == ".svg"]
    md += ["", "## Environment and settings", ""]
    for machine in data.machines:
        if machine in data.headers:
            rows = environment_rows(data.headers[machine], [r for r in data.records if r["machine"] == machine])
            md += [f"### {machine}", "", *[f"- **{k}**: {v}" for k, v in rows], ""]
    return "\n".join(md)


def write_all(results: Sequence[Results], out_dir: Path) -> Report:
    """Write report.md, results.csv, plots/*.svg|png and report.html for one or more results files."""
    from arraybench.report.html import render_html
    from arraybench.report.plots import write_plots

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot write the report to {str(out_dir)!r}: {e.strerror}") from None
    data = ReportData.from_results(results)
    found = crossovers.crossovers(data)
    try:
        plots = write_plots(data, found, out_dir)
        warnings: tuple[str, ...] = ()
    except ModuleNotFoundError as e:
        if e.name != "matplotlib":
            raise
        plots, warnings = [], ("no plots: matplotlib is not installed (pip install 'arraybench[report]')",)
    files = tuple(p for plot in plots for p in (plot.svg, plot.png))
    report = Report(summary_text(data, found), warnings, out_dir / "report.md", out_dir / "results.csv",
                    out_dir / "report.html", files)
    atomic_write_text(report.markdown, markdown_text(data, found, files))
    atomic_write_text(report.csv, csv_text(data))
    atomic_write_text(report.html, render_html(data, found, plots, fastest_lines(data), warnings))
    return report


def publish(results: Sequence[Results], out_dir: Path) -> Report:
    """write_all, then print the summary on stdout and where the files are on stderr."""
    report = write_all(results, out_dir)
    print(report.summary)
    for w in report.warnings:
        print(f"arraybench: warning: {w}", file=sys.stderr)
    print(f"\nreport: {report.html}  ({report.markdown.name}, {report.csv.name}, "
          f"{len(report.plots)} plot files in {out_dir / 'plots'})", file=sys.stderr)
    return report
