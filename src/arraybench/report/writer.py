"""A report's files and what the terminal shows of it: report.md, results.csv, crossovers.csv, the plots and
report.html written whole (write_all), the summary printed after a run and the warnings about its host."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from arraybench.errors import UsageError
from arraybench.report import answer, bound, crossovers, devices, fits, gpu, table, vmap, winners
from arraybench.report.data import BUSY_HOST, BUSY_MEMORY, ReportData, environment_rows, host_line, memory_reference
from arraybench.report.files import csv_text
from arraybench.results import Results
from arraybench.results.atomic import atomic_write_text
from arraybench.results.header import Analysis


@dataclass(frozen=True)
class Report:
    """The files one report consists of, and the text summary printed with it."""

    summary: str
    warnings: tuple[str, ...]
    markdown: Path
    csv: Path
    crossovers_csv: Path
    html: Path
    plots: tuple[Path, ...]


def summary_text(data: ReportData, found: list[crossovers.Crossover], said: Sequence[answer.Answer],
                 draw: Callable[[list[str], list[list[str]]], str] | None = None) -> str:
    """Tables per machine (drawn by `draw`), the crossovers, then the answer as a table: what the
    terminal shows after a run, its last lines the ones a reader sees without scrolling. What was
    not measured at all ("No GPU was measured …") follows it."""
    blocks = []
    for machine in data.machines:
        recs = [r for r in data.records if r.machine == machine]
        heading = f"machine {machine}\n\n" if len(data.machines) > 1 else ""
        blocks.append(heading + table.render_text(recs, draw))
    glance = "The answer at a glance (in words: report.md)\n" + (draw or table.text_table)(
        *winners.terminal_table(winners.rows(data), found))
    glance += "".join(f"\n{a.title}{_at(data, a)}: {a.unmeasured}" for a in said if a.unmeasured)
    glance += "".join(f"\nEnvironments: {line}." for line in data.env_pairs)
    if host := host_line(data):
        glance += f"\n{host}"
    fitted = [fitted] if (fitted := fits.render(data, draw)) else []
    return "\n\n".join([*blocks, crossovers.render_text(data, found), *fitted, glance])


def _at(data: ReportData, a: answer.Answer) -> str:
    return f" @{a.machine}" if len(data.machines) > 1 else ""


def markdown_text(data: ReportData, found: list[crossovers.Crossover], said: list[answer.Answer],
                  plots: Sequence[Path]) -> str:
    """report.md: the winners map and a line per workload, the answer in words, the overview plots,
    then tables, crossovers and details."""
    svgs = [p for p in plots if p.suffix == ".svg"]
    md = ["# arraybench report", "", *[f"![The answer at a glance](plots/{p.name})" for p in svgs
                                       if p.stem == "winners"], ""]
    md += [f"- **{row.title}** — {winners.line(row, found)}" for row in winners.rows(data)] + [""]
    md += [f"**Environments:** {line}.\n" for line in data.env_pairs]
    md += [f"{line}\n" for line in host_line(data).splitlines()]
    md += [f"**Partial:** {line}.\n" for line in data.partial]
    if line := table.unavailable_line(data.records):
        md += [line, ""]
    md += ["## The answer", ""]
    md += [f"**{a.title}{_at(data, a)}.** {a.text()}\n" for a in said] or [f"None: {answer.NOTHING_CORRECT}.", ""]
    if fitted := fits.render(data, markdown=True):
        md += [fitted, ""]
    first = [p for p in svgs if p.stem == "speedup-heatmap" or p.stem.startswith("roofline")]
    md += [*[f"![{p.stem}](plots/{p.name})" for p in first], ""]
    for machine in data.machines:
        recs = [r for r in data.records if r.machine == machine]
        md += [f"## {machine}", "", table.render_markdown(recs), ""]
    md += ["## Crossovers", "", crossovers.render_text(data, found), ""]
    md += ["## Correctness: each case's error against its tolerance", ""]
    md += [table.render_checks_markdown(data.records) or "No case was checked.", ""]
    md += ["## Why each case is as fast as it is", ""]
    md += [f"- **{word}**: {meaning}" for word, meaning in bound.MEANING.items()]
    md += [f"- {line}" for line in rate_notes(data)]
    md += ["", *gpu.markdown(data.records)]
    md += ["", *vmap.markdown(data), "", *devices.markdown(data)]
    md += ["", "## More plots", ""]
    md += [f"![{p.stem}](plots/{p.name})" for p in svgs if p not in first]
    md += ["", "## Environment and settings", ""]
    for machine in data.machines:
        if machine in data.headers:
            rows = environment_rows(data.headers[machine], [r for r in data.records if r.machine == machine])
            md += [f"### {machine}", "", *[f"- **{k}**: {v}" for k, v in rows], ""]
    return "\n".join(md)


def rate_notes(data: ReportData) -> list[str]:
    """Per workload (and device) whose GFLOP/s or GB/s is left empty: why."""
    notes = {(r.workload, r.device, r.no_rate) for r in data.records if r.no_rate}
    return [f"{wl} ({device}): no rate shown, {why}" for wl, device, why in sorted(notes)]


def host_warnings(data: ReportData) -> tuple[str, ...]:
    """One line per machine whose host ran slow or whose memory system was contended through the run
    (hostspeed.py), whose processes shared one layout, fell short of samples or split into two modes;
    none on a quiet run."""
    out = []
    for machine, header in sorted(data.headers.items()):
        a = header.analysis or Analysis()
        where = f"{machine}'s host" if len(data.headers) > 1 else "the host"
        slow, memory = a.host_slowdown, a.memory_slowdown
        if slow and slow > BUSY_HOST:
            out.append(f"{where} ran {slow:.2f}× slower than its full speed at the median of this run (a reference "
                       "loop timed beside every sample): a shared or throttled machine; its numbers move with it, "
                       "and the intervals are as wide as that makes them")
        if memory and memory > BUSY_MEMORY:
            out.append(f"{where}'s memory system ran {memory:.2f}× slower than its fastest at the median of this run "
                       f"({memory_reference(a)} timed before and after each process's samples): contended by another "
                       "tenant, which a CPU-bound loop does not see; memory-bound numbers move with it")
        if a.fixed_layout:
            out.append("--fixed-layout: every process placed its inputs and heap alike, so the intervals do not "
                       "include what memory layout moves (up to tens of per cent for some kernels); another run "
                       "may land outside them")
        if a.short_of_samples:
            out.append(f"{a.short_of_samples} process(es) stopped at the sampling budget with fewer than 5 "
                       "samples (calls of seconds): their medians are less certain (`stop` budget in the results)")
        if a.bimodal_processes:
            out.append(f"{a.bimodal_processes} process(es) saw their samples split into two modes more than 25 % "
                       "apart; each reports its larger mode's median, never a value between (`bimodal` in the "
                       "results)")
    return tuple(out)


def write_all(results: Sequence[Results], out_dir: Path,
              draw: Callable[[list[str], list[list[str]]], str] | None = None, linked_plots: bool = False) -> Report:
    """Write report.md, results.csv, crossovers.csv, plots/*.svg|png and report.html for one or more results files.
    `linked_plots`: report.html shows plots/ beside it instead of embedding them (the published site's)."""
    from arraybench.report.page import render_html
    from arraybench.report.plots import write_plots

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot write the report to {str(out_dir)!r}: {e.strerror}") from None
    data = ReportData.from_results(results)
    found = crossovers.crossovers(data)
    said = answer.answers(data, found)
    try:
        plots = write_plots(data, found, out_dir)
        warnings: tuple[str, ...] = ()
    except ModuleNotFoundError as e:
        if e.name != "matplotlib":
            raise
        plots, warnings = [], ("no plots: matplotlib is not installed (pip install 'arraybench[report]')",)
    warnings += data.partial + host_warnings(data)
    files = tuple(p for plot in plots for p in (plot.svg, plot.png))
    report = Report(summary_text(data, found, said, draw), warnings, out_dir / "report.md", out_dir / "results.csv",
                    out_dir / "crossovers.csv", out_dir / "report.html", files)
    atomic_write_text(report.markdown, markdown_text(data, found, said, files))
    atomic_write_text(report.csv, csv_text(data))
    atomic_write_text(report.crossovers_csv, crossovers.csv_text(found))
    atomic_write_text(report.html, render_html(data, found, plots, said, rate_notes(data), warnings,
                                                   linked_plots))
    return report


def publish(results: Sequence[Results], out_dir: Path,
            draw: Callable[[list[str], list[list[str]]], str] | None = None) -> Report:
    """write_all, then print the summary on stdout (its tables drawn by `draw`: coloured on a
    terminal, see terminal.table_renderer) and where the files are on stderr."""
    report = write_all(results, out_dir, draw)
    print(report.summary)
    for w in report.warnings:
        print(f"arraybench: warning: {w}", file=sys.stderr)
    print(f"\nreport: {report.html}  ({report.markdown.name}, {report.csv.name}, {report.crossovers_csv.name}, "
          f"{len(report.plots)} plot files in {out_dir / 'plots'})", file=sys.stderr)
    return report
