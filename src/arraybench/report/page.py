"""report.html: one self-contained page (plots inline, sortable tables, no network); every result string escaped."""

from __future__ import annotations

import base64
import json
import time
from html import escape
from pathlib import Path
from string import Template
from typing import Any

from arraybench.report import bound, devices, fits, gpu, vmap, winners
from arraybench.report.answer import NOTHING_CORRECT, Answer
from arraybench.report.crossovers import Crossover, render_text
from arraybench.report.data import NOT_RUN, ReportData, environment_rows, host_line
from arraybench.report.plots import Plot
from arraybench.report.table import size_text, unavailable_line
from arraybench.results.record import FAILED
from arraybench.results.speedups import size_sort_key
from arraybench.units import format_seconds, format_size
from arraybench.version import __version__

TEMPLATE = Path(__file__).with_name("template.html")


def e(value: Any) -> str:
    """Any value as HTML text: results come from files anyone may have written."""
    return escape(str(value), quote=True)


def num_cell(value: float | None, text: str) -> str:
    if value is None:
        return '<td class="num" data-sort=""></td>'
    return f'<td class="num" data-sort="{value:.6g}">{e(text)}</td>'


def status_badge(status: str) -> str:
    return f'<span class="status s-{e(status)}">{e(status)}</span>'


def render_html(data: ReportData, found: list[Crossover], plots: list[Plot], said: list[Answer],
                rate_notes: list[str], warnings: tuple[str, ...] = (), linked: bool = False) -> str:
    """report.html; `linked`: its plots shown from plots/ beside it, not embedded (plot_html)."""
    counts = {s: sum(r.status == s for r in data.records)
              for s in ("ok", "wrong", *[f for f in FAILED if f != "wrong"], *NOT_RUN)}
    noisy = sum(bool(r.noisy) for r in data.records)
    machines = ", ".join(data.machines)
    overview = [p for p in plots if p.name == "speedup-heatmap" or p.name.startswith("roofline")]
    glance = [p for p in plots if p.name == "winners"]
    notes = [f'<p class="muted">{e(w)}</p>' for w in warnings]
    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        version=e(__version__),
        title="arraybench report",
        subtitle=e(f"{len(data.records)} cases on {machines} · generated {time.strftime('%Y-%m-%d %H:%M %Z')}"),
        glance=glance_html(data, found, glance, said, linked),
        answer=answer_html(data, said, counts, noisy),
        overview="\n".join([*notes, *(plot_html(p, linked) for p in overview)])
        or '<p class="muted">No plots: nothing was measured.</p>',
        crossovers=crossovers_html(data, found),
        plots="\n".join(plot_html(p, linked) for p in plots if p not in overview + glance)
        or '<p class="muted">No plots per workload.</p>',
        bounds=bounds_html(rate_notes),
        gpu=gpu.html_section(data.records),
        vmap=vmap.html_section(data),
        devices=devices.html_section(data),
        results=results_table(data),
        problems=problems_html(data),
        environment=environment_html(data),
    )


def glance_html(data: ReportData, found: list[Crossover], glance: list[Plot], said: list[Answer],
                linked: bool = False) -> str:
    """The winners map, then a line per workload whose name links to its answer in words."""
    written = {winners.anchor(a) for a in said}
    items = [f'<li><a href="#{row.anchor if row.anchor in written else "problems"}"><b>{e(row.title)}</b></a> — '
             f"{e(winners.line(row, found))}</li>" for row in winners.rows(data)]
    pairs = [f'<p class="envs"><b>Environments:</b> {e(line)}.</p>' for line in data.env_pairs]
    pairs += [f'<p class="envs">{e(line)}</p>' for line in host_line(data).splitlines()]
    listed = f'<ul class="glance">{"".join(items)}</ul>' if items else '<p class="muted">Nothing was measured.</p>'
    return "\n".join([*pairs, *(plot_html(p, linked) for p in glance), listed])


def answer_html(data: ReportData, said: list[Answer], counts: dict[str, int], noisy: int) -> str:
    out = []
    if line := unavailable_line(data.records):
        out.append(f'<p class="unavailable">{e(line)}</p>')
    many = len(data.machines) > 1
    for a in said:
        where = f" @{a.machine}" if many else ""
        why = f' <span class="why">{e(a.why)}</span>' if a.why else ""
        out.append(f'<p class="answer" id="{e(winners.anchor(a))}">'
                   f"<b>{e(a.title + where)}.</b> {e(a.verdict)}{why}</p>")
    if not said:
        out.append(f"<p>No answer: {e(NOTHING_CORRECT)}.</p>")
    if fitted := fits_html(data):
        out.append(fitted)
    cards = [(n, s) for s, n in counts.items() if n] + [(noisy, "noisy")]
    out += ['<ul class="cards">', *[f"<li><b>{n}</b>{e(s)}</li>" for n, s in cards], "</ul>"]
    return "\n".join(out)


def fits_html(data: ReportData) -> str:
    """`--sizes fit:BYTES`: each backend·mode's largest size under the limit (report/fits.py); '' otherwise."""
    under = fits.limit(data)
    if under is None:
        return ""
    head = "".join(f'<th scope="col">{e(h)}</th>' for h in fits.HEADER)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in fits.rows(data, under))
    return f"<h3>{e(fits.title(under))}</h3><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def crossovers_html(data: ReportData, found: list[Crossover]) -> str:
    if not found:
        return f'<p class="muted">{e(render_text(data, found))}</p>'
    head = ("<p class=\"muted\">Where one backend·mode overtakes another as the size grows. <i>bracketed</i>: two "
            "measured sizes at most 2× apart hold it and the 95 % intervals separate at both; <i>open</i>: "
            "the measured sizes are further apart (the size to measure next is named); <i>tie</i>: "
            "the two are within noise of each other there. The same rows are in crossovers.csv.</p>")
    rows = "".join(f"<tr><td>{e(c.workload)}{e(f' ({c.problem})' if c.problem else '')}</td><td>{e(c.dtype)}</td>"
                   f"<td>{e(c.faster_below)}</td>"
                   f"<td>{e(c.faster_above)}</td>{num_cell(c.size, size_text(c.size, True))}"
                   f"{num_cell(c.lo, f'{c.lo:g}')}{num_cell(c.hi, f'{c.hi:g}')}<td>{e(c.state)}</td>"
                   f"<td>{e(c.next_size or '')}</td></tr>" for c in found)
    heads = "".join(f'<th scope="col">{h}</th>' for h in ("workload", "dtype", "faster below", "faster above",
                                                         "estimate", "bracket low", "bracket high", "state",
                                                         "measure next"))
    return (f'{head}<div class="table-wrap"><table class="sortable" id="crossovers"><thead><tr>{heads}</tr>'
            f"</thead><tbody>{rows}</tbody></table></div>")


def bounds_html(rate_notes: list[str]) -> str:
    items = "".join(f"<li><b>{e(w)}</b>: {e(m)}</li>" for w, m in bound.MEANING.items())
    out = [f"<ul>{items}</ul>"]
    if rate_notes:
        out.append("<p>Empty GFLOP/s or GB/s cells, and why:</p><ul>"
                   + "".join(f"<li>{e(n)}</li>" for n in rate_notes) + "</ul>")
    return "\n".join(out)


def plot_html(p: Plot, linked: bool = False) -> str:
    """One plot with its caption. Embedded, the page is whole on its own and 3 MB for a run of 300
    cases; `linked`, it shows plots/NAME.svg beside it, as the published site does (no page over 2 MB)."""
    src = f"plots/{p.svg.name}" if linked else \
        f"data:image/svg+xml;base64,{base64.b64encode(p.svg.read_bytes()).decode('ascii')}"
    # An <img> keeps each SVG's ids and any text in it apart from the page: nothing in a plot runs.
    return (f'<figure class="plot" id="plot-{e(p.name)}"><img alt="{e(p.title)}" '
            f'src="{e(src)}"><figcaption><b>{e(p.title)}.</b> {e(p.caption)} '
            f'<a href="plots/{e(p.svg.name)}">SVG</a> · <a href="plots/{e(p.png.name)}">PNG</a></figcaption></figure>')


def results_table(data: ReportData) -> str:
    many = len(data.machines) > 1
    shown = [r for r in data.records if r.status != "unavailable"]  # said once, above the answer
    numpy = any(r.speedup for r in shown)  # a speedup over numpy only where numpy ran
    apart = any(data.problem(r) for r in shown)  # a workload whose cases differ in more than the size
    memory = any(r.memory_bytes is not None for r in shown)  # figures only where a case was measured
    heads = (["machine"] if many else []) + [
        "workload", "size", *(["other parameters"] if apart else []), "backend", "mode", "device", "dtype",
        "threads", "status", "median / call", "IQR %", "harness / call", "bound",
        *(["speedup"] if numpy else []), "first call", *(["memory / call", "first call's memory"] if memory else []),
        "transfer", "FLOP/byte", "GFLOP/s", "% peak FLOP/s",
        "GB/s", "% peak GB/s", "rel. error", "tolerance", "notes",
    ]
    rows = []
    for r in sorted(shown, key=lambda r: (r.machine, r.workload, size_sort_key(r.size), data.label(r))):
        med = r.median_s if r.status == "ok" else None
        iqr = 100 * r.iqr_s / med if med and r.iqr_s is not None else None
        notes = []
        if r.noisy:
            notes.append('<span class="status noisy">noisy</span>')
        if r.bound == bound.PAGE_FAULTS:
            notes.append(f'<span class="status noisy" title="page faults take 30 % or more of the time">'
                         f'page faults: {r.minor_faults_per_call:.0f}/call</span>')
        if r.error:
            notes.append(e(r.error))
        cells = ([f"<td>{e(r.machine)}</td>"] if many else []) + [
            f"<td>{e(r.workload)}</td>",
            f'<td data-sort="{e(r.size)}">{e(r.size)}</td>',
            *([f"<td>{e(data.problem(r))}</td>"] if apart else []),
            f"<td>{e(r.backend)}</td>", f"<td>{e(r.mode)}</td>",
            f"<td>{e(r.device)}</td>", f"<td>{e(r.dtype)}</td>",
            f"<td>{e(r.threads)}</td>", f"<td>{status_badge(r.status)}</td>",
            num_cell(med, format_seconds(med)),
            num_cell(iqr, f"±{iqr:.0f}%" if iqr is not None else ""),
            num_cell(r.harness_s, format_seconds(r.harness_s)),
            f"<td>{e(r.bound or '')}</td>",
            *([num_cell(r.speedup, f"{r.speedup:.2f}×" if r.speedup else "")] if numpy else []),
            num_cell(r.first_call_s, format_seconds(r.first_call_s)),
            *([num_cell(m, format_size(m) if m is not None else "")
               for m in (r.memory_bytes, r.first_call_memory_bytes)] if memory else []),
            num_cell(r.transfer_s, format_seconds(r.transfer_s)),
            *[num_cell(v, f"{v:.3g}" if v else "")
              for v in (r.intensity, r.gflops, r.pct_flop_peak, r.gbs, r.pct_bw_peak)],
            num_cell(r.rel_err, f"{r.rel_err:.1e}" if r.rel_err is not None else ""),
            num_cell(r.tolerance, f"{r.tolerance:.1e}" if r.tolerance is not None else ""),
            f"<td class=\"notes\">{' '.join(notes)}</td>",
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f'<th scope="col">{e(h)}</th>' for h in heads)
    return f'<table class="sortable" id="cases"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def problems_html(data: ReportData) -> str:
    groups = [
        ("Failed or wrong (never ranked)", [r for r in data.records if r.status in FAILED]),
        ("Not run: no implementation in that mode", [r for r in data.records if r.status == "unsupported"]),
        ("Noisy (IQR over 10% of the median: close other programs or raise --min-time)",
         [r for r in data.records if r.noisy]),
    ]
    out = []
    for title, recs in groups:
        out.append(f"<h3>{e(title)}: {len(recs)}</h3>")
        if not recs:
            continue
        items = []
        for r in sorted(recs, key=lambda r: (r.workload, data.label(r), size_sort_key(r.size))):
            why = r.error or (f"IQR {100 * (r.iqr_s or 0.0) / r.median_s:.0f}% of the median"
                                     if r.noisy and r.median_s else "")
            where = f"{r.workload} {data.point(r)} · {data.label(r)}"
            items.append(f"<li>{status_badge(r.status)} <b>{e(where)}</b>: {e(why)}</li>")
        out.append("<ul>" + "".join(items) + "</ul>")
    return "\n".join(out)


def environment_html(data: ReportData) -> str:
    out = []
    for machine in data.machines:
        header = data.headers.get(machine)
        if header is None:  # records of a cluster run name workers that wrote no header
            out.append(f'<h3>{e(machine)}</h3><p class="muted">No environment recorded for this machine.</p>')
            continue
        recs = [r for r in data.records if r.machine == machine]
        rows = "".join(f'<tr><th scope="row">{e(k)}</th><td>{e(v)}</td></tr>'
                       for k, v in environment_rows(header, recs))
        out.append(f"<h3>{e(machine)}</h3><table class=\"kv\">{rows}</table>")
        settings = json.dumps(header.settings.to_json(), indent=1, sort_keys=True, default=str)
        out.append(f"<details><summary>All settings of this run</summary><pre>{e(settings)}</pre></details>")
    return "\n".join(out)
