"""The site's pages: the answer across machines first, then per workload, per framework version and per run.

Every page is static HTML with its style inline and no script: it opens from file:// with no
network. Every string that comes from results is escaped (`e`), and each page's content security
policy forbids scripts too, so a hostile name in a results file renders as text and runs nothing.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from html import escape
from typing import Any

from arraybench.core.palette import colour
from arraybench.report.answer import answers, leads
from arraybench.report.crossovers import crossovers
from arraybench.report.data import CaseView, ReportData, environment_rows
from arraybench.report.table import Points, size_text
from arraybench.report.view import timed
from arraybench.results import Results
from arraybench.results.speedups import size_sort_key
from arraybench.site.across_machines import Across
from arraybench.site.site_data import Machine, Run, SiteData, VersionTable
from arraybench.stats import bracket
from arraybench.units import format_seconds
from arraybench.version import __version__

GENERATOR = f"arraybench {__version__} publish"
# The runs the index lists itself; the rest are a click away, by month.
LATEST_RUNS = 12
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """
:root { --ink: #1d2330; --muted: #5b6474; --line: #dde1e8; --bg: #f6f7f9; --ok: #1b7a3d; --bad: #b00020; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--ink); background: var(--bg); }
header { background: #1d2330; color: #fff; padding: 1.2rem 2rem 1rem; }
header h1 { margin: 0 0 .2rem; font-size: 1.5rem; font-weight: 650; }
header p { margin: 0; color: #c5cbd6; }
nav { background: #fff; border-bottom: 1px solid var(--line); padding: .5rem 2rem; }
nav a { margin-right: 1.2rem; color: var(--ink); font-weight: 550; }
main { max-width: 1280px; margin: 0 auto; padding: 1rem 2rem 3rem; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.4rem; margin: 1.2rem 0; }
h2 { margin: .2rem 0 .8rem; font-size: 1.2rem; }
h3 { margin: 1rem 0 .4rem; font-size: 1.05rem; }
ul.answer li { margin: .35rem 0 .6rem; max-width: 70rem; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: .88rem; }
th, td { padding: .3rem .55rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #f0f2f5; }
.muted, .figs { color: var(--muted); }
.figs { font-size: .82rem; }
.tie { background: #fff4d1; }
.swatch { display: inline-block; width: .8em; height: .8em; margin-right: .35em; border: 1px solid #0003; }
.faster { color: var(--ok); } .slower { color: var(--bad); }
"""


def e(value: Any) -> str:
    """Any value as HTML text: results come from files anyone may have written."""
    return escape(str(value), quote=True)


def swatch(label: str) -> str:
    """A square of the backend·mode's colour, the one its plots and the report's winners map give it."""
    return f'<span class="swatch" style="background:{colour(label)}"></span>'


def slug(name: str) -> str:
    """A file name for `name` that is safe on every file system and in a URL; distinct names stay distinct."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip(".-")[:60]
    if safe == name:
        return safe
    return f"{safe}-{hashlib.sha1(name.encode()).hexdigest()[:8]}".lstrip("-")


def run_href(run_id: str, depth: int = 0) -> str:
    """A run's own page: its answer, its table and its environment (the full report beside it, where kept)."""
    return f"{'../' * depth}runs/{slug(run_id)}/index.html"


def month_href(month: str, depth: int = 0) -> str:
    return f"{'../' * depth}runs/{slug(month)}.html"


def month(run: Run) -> str:
    """'2026-03': the month a run started in, by which the site lists its runs."""
    return run.started[:7] if re.fullmatch(r"\d{4}-\d{2}", run.started[:7]) else "undated"


def page(title: str, subtitle: str, body: str, depth: int = 0) -> str:
    """A whole page; `depth` is how many folders below the site's index it lies."""
    up = "../" * depth
    nav = "".join(f'<a href="{up}index.html{anchor}">{text}</a>' for text, anchor in (
        ("Answer", "#answer"), ("Machines", "#machines"), ("Workloads", "#workloads"),
        ("Frameworks", "#frameworks"), ("Runs", "#runs")))
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<meta name="generator" content="{e(GENERATOR)}">\n<title>{e(title)}</title>\n'
            f"<style>{STYLE}</style>\n</head>\n<body>\n<header><h1>{e(title)}</h1><p>{e(subtitle)}</p></header>\n"
            f"<nav>{nav}</nav>\n<main>\n{body}\n</main>\n</body>\n</html>\n")


def index_page(site: SiteData, said: list[Across], rule: str, changes: str = "") -> str:
    """The first page: `changes` (site/history_pages.py's list of the changes found) first, on the first screen,
    then the answer, the machines, workloads and frameworks, and the latest runs."""
    cases = sum(run.cases for run in site.runs)
    subtitle = (f"{len(site.runs)} runs on {len(site.machines)} machines, {cases} case records · "
                f"published {time.strftime('%Y-%m-%d %H:%M %Z')}")
    items = [f'<li><a href="workloads/{slug(a.workload)}.html"><b>{e(a.title)}</b></a>'
             f"{e(' ' + a.where() if a.where() else '')}: {e(a.verdicts_text())}.</li>" for a in said]
    answer = (f'<ul class="answer">{"".join(items)}</ul>' if items
              else "<p>No case was correct on any machine: nothing to rank.</p>")
    body = [
        changes,
        '<section id="answer"><h2>The answer</h2>'
        '<p class="muted">Per workload, the fastest correct backend·mode on each machine at the largest size '
        "all of them measured, its median per call with its 95 % interval, and its lead over the runner-up "
        "there; a lead within noise is written as a tie. Each workload's page has every size.</p>"
        f"{answer}</section>",
        machines_html(site),
        '<section id="workloads"><h2>Workloads</h2><ul>'
        + "".join(f'<li><a href="workloads/{slug(w)}.html">{e(w)}</a></li>' for w in site.workloads)
        + "</ul></section>",
        frameworks_html(site),
        runs_html(site, rule),
    ]
    return page("arraybench: the answer across machines", subtitle, "\n".join(body))


def machines_html(site: SiteData) -> str:
    rows = []
    for m in site.machines:
        env = m.environment
        runs = [r for r in site.runs if r.machine.key == m.key]
        latest = runs[-1].id if runs else ""
        gpus = ", ".join(str(g.get("name")) for g in env.gpus) or "none"
        rows.append(f"<tr><td><b>{e(m.name)}</b></td><td>{e(env.cpu_model)} ×{e(env.cpu_logical)}"
                    f"</td><td>{e(gpus)}</td><td>{e(env.os)}</td><td>{len(runs)}</td>"
                    f'<td><a href="{e(run_href(latest))}">{e(latest)}</a></td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ("machine", "CPU", "GPU", "OS", "runs", "latest run"))
    return (f'<section id="machines"><h2>Machines</h2><div class="table-wrap"><table><thead><tr>{head}</tr>'
            f"</thead><tbody>{''.join(rows)}</tbody></table></div></section>")


def frameworks_html(site: SiteData) -> str:
    items = []
    for fw in site.frameworks:
        versions = {key: table.versions for key, table in site.versions(fw).items()}
        said = "; ".join(f"{site.machine(k).name}: {', '.join(v)}" for k, v in versions.items())
        items.append(f'<li><a href="frameworks/{slug(fw)}.html">{e(fw)}</a> <span class="muted">'
                     f"{e(said or 'no correct case')}</span></li>")
    return ('<section id="frameworks"><h2>Frameworks</h2><p class="muted">Each framework\'s speed across the '
            "versions that were run, machine by machine: did the last upgrade help?</p>"
            f"<ul>{''.join(items)}</ul></section>")


def runs_html(site: SiteData, rule: str) -> str:
    """The latest runs, and every month's: a thousand runs listed here would outweigh the answer."""
    latest = "".join(run_rows(site.runs[-LATEST_RUNS:][::-1]))
    months: dict[str, list[Run]] = defaultdict(list)
    for run in site.runs:
        months[month(run)].append(run)
    listed = ", ".join(f'<a href="{e(month_href(m))}">{e(m)}</a> ({len(runs)})' for m, runs in sorted(months.items()))
    return (f'<section id="runs"><h2>Runs</h2><p>{len(site.runs)} runs; every run by month: {listed}. '
            f'<a href="runs/index.html">All months</a>.</p><p class="muted">{e(rule)}</p>'
            f"{runs_table(latest)}</section>")


def run_rows(runs: Sequence[Run], depth: int = 0) -> list[str]:
    return [f'<tr><td><a href="{e(run_href(run.id, depth))}">{e(run.id)}</a></td><td>{e(run.started)}</td>'
            f"<td>{e(run.machine.name)}</td><td>{run.cases}</td><td>{run.failed}</td>"
            f"<td>{e(', '.join(run.environments))}</td></tr>" for run in runs]


def runs_table(rows: str) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("run (its page)", "started", "machine", "cases", "failed or wrong",
                                             "environments"))
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>')


def months_pages(site: SiteData, rule: str) -> dict[str, str]:
    """runs/index.html (every month, its runs per machine) and runs/MONTH.html (its runs, newest first)."""
    months: dict[str, list[Run]] = defaultdict(list)
    for run in site.runs:
        months[month(run)].append(run)
    out = {}
    for m, runs in months.items():
        out[f"{slug(m)}.html"] = page(f"Runs of {m}", f"{len(runs)} runs", f'<section id="runs"><p class="muted">'
                                      f"{e(rule)}</p>{runs_table(''.join(run_rows(runs[::-1], 1)))}</section>", 1)
    items = "".join(f'<li><a href="{e(slug(m))}.html">{e(m)}</a>: '
                    + e(", ".join(f"{n} on the {name}" for name, n in
                                  sorted(Counter(r.machine.name for r in runs).items())))
                    + "</li>" for m, runs in sorted(months.items(), reverse=True))
    out["index.html"] = page("Every run, by month", f"{len(site.runs)} runs",
                             f'<section id="runs"><p class="muted">{e(rule)}</p><ul>{items}</ul></section>', 1)
    return out


def run_page(run: Run, res: Results, full: bool, rule: str) -> str:
    """A run's own page, small at any number of runs: its answer, a line per case and its environment;
    the full report (with its plots) beside it where `full`, else how to build it."""
    data = ReportData.from_results([res])
    said = answers(data, crossovers(data))
    items = [f"<li><b>{e(a.title)}</b>: {e(a.text())}</li>" for a in said]
    envs = [f"<li>{e(line)}.</li>" for line in data.env_pairs]
    report = ('<p><a href="report.html">The full report</a> (plots, correctness, crossovers; '
              '<a href="results.csv">results.csv</a>).</p>' if full else
              f'<p class="muted">{e(rule)} For this run: <code>arraybench report {e(run.id)} --store STORE</code>.</p>')
    body = [f'<section id="answer"><h2>The answer of this run</h2>{report}'
            + (f'<h3>Environments side by side</h3><ul class="answer">{"".join(envs)}</ul>' if envs else "")
            + (f'<ul class="answer">{"".join(items)}</ul>' if items else "<p>No case was correct: nothing to rank.</p>")
            + "</section>",
            f'<section id="cases"><h2>Every case</h2>{cases_table(data)}</section>']
    for machine, header in data.headers.items():
        rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in
                       environment_rows(header, [r for r in data.records if r.machine == machine]))
        body.append(f'<section id="environment"><h2>Environment: {e(machine)}</h2><div class="table-wrap"><table>'
                    f"<tbody>{rows}</tbody></table></div></section>")
    subtitle = f"on the {run.machine.name} · started {run.started} · {run.cases} cases, {run.failed} failed or wrong"
    return page(f"run {run.id}", subtitle, "\n".join(body), depth=2)


def cases_table(data: ReportData) -> str:
    """One line per case: what it is, its status, its median [95 % interval] and why it is as fast as it is."""
    shown = [r for r in data.records if r.status != "unavailable"]
    rows = []
    for r in sorted(shown, key=lambda r: (r.workload, size_sort_key(r.size), data.label(r))):
        problem = data.problem(r)
        time_ = (f"{e(format_seconds(r.median_s))} <span class=\"muted\">[{e(interval_text(r))}]</span>"
                 if r.status == "ok" and r.median_s else "")
        size = f"{_size(r.size)}{f' ({problem})' if problem else ''}"
        rows.append(f"<tr><td>{e(r.workload)}</td><td>{e(size)}</td><td>{e(data.label(r))}</td><td>{e(r.dtype)}</td><td>{e(r.status)}</td>"
                    f'<td>{time_}</td><td class="figs">{e(figures_text(r))}</td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ("workload", "size", "backend·mode", "dtype", "status",
                                             "median / call [95 % interval]", "figures"))
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
            "</table></div>")


def figures_text(view: CaseView) -> str:
    """The report's derived figures of one case, as the site shows them beside its time."""
    f = view
    parts = [f"{f.bound}-bound" if f.bound else ""]
    parts.append(f"{f.speedup:.2f}× numpy" if f.speedup else "")
    parts.append(f"{f.gflops:.3g} GFLOP/s" if f.gflops else "")
    parts.append(f"{f.pct_flop_peak:.2g} % of peak FLOP/s" if f.pct_flop_peak else "")
    parts.append(f"{f.gbs:.3g} GB/s" if f.gbs else "")
    parts.append(f"{f.pct_bw_peak:.2g} % of peak GB/s" if f.pct_bw_peak else "")
    return " · ".join(p for p in parts if p)


def interval_text(view: CaseView) -> str:
    low, high = view.ci_low_s, view.ci_high_s
    return f"{format_seconds(low)}–{format_seconds(high)}" if low and high else ""


def workload_page(site: SiteData, workload: str) -> str:
    """Per dtype and problem: a row per size, a column per machine, each cell the fastest correct
    backend·mode there."""
    body = []
    machines = [m for m in site.machines if m.key in site.latest
                and any(r.workload == workload for r in site.latest[m.key].records)]
    problems = [p for p in site.problems() if p.workload == workload]
    name = site.points[workload].size_param
    for problem in problems:
        cells: dict[tuple[Any, str], str] = {}
        sizes: set[Any] = set()
        for m in machines:
            data = site.latest[m.key]
            for lead in leads(data, problem.cases.get(m.key, [])):
                best = lead.best
                assert isinstance(best, CaseView)  # ReportData's records are views
                sizes.add(lead.size)
                cls = ' class="tie"' if lead.tied else ""
                cells[(lead.size, m.key)] = (
                    f"<td{cls}>{swatch(data.label(best))}<b>{e(data.label(best))}</b> "
                    f"{e(format_seconds(best.median_s))}"
                    f' <span class="muted">[{e(interval_text(best))}]</span><br>{e(lead.margin)}'
                    f'<br><span class="figs">{e(figures_text(best))}</span></td>')
        head = "".join(f"<th>{e(m.name)}</th>" for m in machines)
        rows = "".join(f"<tr><th>{e(name)} = {e(_size(s))}</th>"
                       + "".join(cells.get((s, m.key), "<td></td>") for m in machines) + "</tr>"
                       for s in sorted(sizes, key=size_sort_key))
        body.append(f"<section><h2>{e(problem.apart)}: the fastest correct backend·mode on each machine</h2>"
                    '<p class="muted">Its median per call, [its 95 % interval], its lead over the runner-up on '
                    "that machine (a tie where they are within noise: marked), and the report's figures for it. "
                    "Sizes where only a crossover's two rivals were measured are left out.</p>"
                    f'<div class="table-wrap"><table><thead><tr><th>{e(name)}</th>{head}</tr></thead>'
                    f"<tbody>{rows}</tbody></table></div></section>")
    # Titled by the site's problems, not each machine's own: one that ran only m=128 still names it.
    said = [f"<li><b>the {e(m.name)} ({e(p.apart)})</b>: {e(a.text())}</li>"
            for m in machines for p in problems for a in site.answers[m.key]
            if (a.workload, a.dtype, a.fixed) == (workload, p.dtype, p.fixed)]
    last = {r.machine.key: r for r in site.runs}
    body.insert(0, '<section id="answer"><h2>The answer, machine by machine</h2>'
                   f'<ul class="answer">{"".join(said)}</ul><p>Each machine\'s latest run: '
                   + ", ".join(f'<a href="{e(run_href(last[m.key].id, 1))}">{e(last[m.key].id)}</a> (the {e(m.name)})'
                               for m in machines if m.key in last)
                   + '; <a href="../runs/index.html">every run, by month</a>.</p></section>')
    return page(f"{workload}", f"on {len(machines)} machine(s)", "\n".join(body), depth=1)


def framework_page(site: SiteData, backend: str) -> str:
    """Per machine: each case's time under every version of `backend` that ran it, and the last change."""
    body = []
    paired = site.paired.get(backend, {})
    if paired:
        items = "".join(f'<li><b>the {e(side.machine.name)}</b>, run <a href="{e(run_href(side.run, 1))}">'
                        f"{e(side.run)}</a>: {e(side.sentence)}.</li>" for side in paired.values())
        body.append('<section id="side-by-side"><h2>Versions measured side by side in one run</h2>'
                    '<p class="muted">Each version in its own Python environment of one run, their processes '
                    "interleaved round by round and compared pair by pair, where the host's drift cancels "
                    "(docs/environments.md): the verdicts counted.</p>"
                    f'<ul class="answer">{items}</ul></section>')
    for key, table in site.versions(backend).items():
        body.append(version_section(site.machine(key), table, backend, site.points))
    if not body:
        body.append(f"<section><p>No correct case of {e(backend)} was stored.</p></section>")
    return page(f"{backend} across its versions", "per machine: did the last upgrade help?", "\n".join(body), depth=1)


def version_section(machine: Machine, table: VersionTable, backend: str, points: dict[str, Points]) -> str:
    """One machine's table of `backend`'s cases by version; `points` names each case's problem where
    its workload has several."""
    versions = table.versions
    counts = {"faster": 0, "slower": 0, "within noise": 0}
    rows = []

    def order(by_version: dict[str, CaseView]) -> tuple[Any, ...]:
        v = next(iter(by_version.values()))
        return (v.workload, v.dtype, points[v.workload].order(v), v.mode, v.device)

    for case in sorted(table.cases, key=lambda c: order(table.cases[c])):
        by_version = table.cases[case]
        cells = "".join(
            f"<td>{e(format_seconds(by_version[v].median_s))} <span class=\"muted\">"
            f"[{e(interval_text(by_version[v]))}]</span></td>" if v in by_version else "<td></td>" for v in versions)
        change = ""
        measured = [v for v in versions if v in by_version]
        if len(measured) > 1:
            word, text = _change(by_version[measured[-2]], by_version[measured[-1]])
            counts[word] += 1
            change = f'<span class="{word.split()[0]}">{e(text)}</span> <span class="muted">' \
                     f"({e(measured[-2])} → {e(measured[-1])})</span>"
        view = next(iter(by_version.values()))
        problem = points[view.workload].problem(view)
        label = (f"{view.workload} {_size(view.size)}{f' ({problem})' if problem else ''} · "
                 f"{view.mode} · {view.device} · {view.dtype} · {view.threads} threads")
        rows.append(f"<tr><td>{e(label)}</td>{cells}<td>{change}</td></tr>")
    head = "".join(f'<th><a href="{e(run_href(table.runs[v], 1))}">{e(v)}</a></th>' for v in versions)
    if len(versions) > 1:
        summary = (f"From {backend} {versions[-2]} to {versions[-1]}, on the cases measured under both: "
                   f"{counts['faster']} faster beyond noise, {counts['slower']} slower, "
                   f"{counts['within noise']} within noise.")
    else:
        summary = f"Only {backend} {versions[0]} was run on this machine: nothing to compare yet."
    return (f"<section><h2>the {e(machine.name)}</h2><p>{e(summary)}</p>"
            '<p class="muted">Median per call [95 % interval] under each version (the heading links the latest '
            "run of that version); the last column compares a case's last two versions.</p>"
            f'<div class="table-wrap"><table><thead><tr><th>case</th>{head}<th>change</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div></section>")


def _change(before: CaseView, after: CaseView) -> tuple[str, str]:
    """('faster', '1.3× faster'), ('slower', …) or ('within noise', …): the 95 % intervals decide."""
    ratio = timed(before) / timed(after)
    side = bracket.order(after, before)
    if side == -1:
        return "faster", f"{ratio:.2g}× faster"
    if side == 1:
        return "slower", f"{1 / ratio:.2g}× slower"
    return "within noise", f"within noise ({ratio:.2f}×)"


def _size(size: Any) -> str:
    return size_text(size) if isinstance(size, int | float) else str(size)
