"""The site's history: the changes found, on the first screen, and each case's time over the runs of its
machine as a plot, one page per machine and workload."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from arraybench.site.pages import e, page, run_href, slug
from arraybench.store import Store
from arraybench.store.history import (
    Change,
    MachineHistory,
    SeriesHistory,
    found,
    read_history,
    series_name,
    size_params,
)
from arraybench.units import format_seconds

# Changes listed on the index page's first screen, each kind; the rest are on history/index.html.
FIRST_SCREEN = 5
# A plot's size in px, and its margins (left for the time axis' labels, bottom for the dates').
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 760, 170, 64, 20, 16
FOLDER = "history"


@dataclass(frozen=True)
class SiteHistory:
    """Every machine's history and the changes found in it, as the site shows them."""

    machines: list[MachineHistory]
    changes: list[Change]

    @classmethod
    def read(cls, st: Store) -> SiteHistory:
        """From an open store: inside the snapshot the rest of a publish reads (site.site_data.read_site)."""
        machines = read_history(st)
        return cls(machines, found(machines))

    @property
    def pointed(self) -> set[str]:
        """The runs a change points at (each its first run at the new level)."""
        return {c.run.id for c in self.changes}

    def pages(self) -> dict[str, str]:
        """Each page's path under the site's folder and its HTML: history/index.html (every change and
        every page) and history/MACHINE-WORKLOAD.html (each case of a workload on a machine, plotted)."""
        groups: dict[tuple[str, str], list[SeriesHistory]] = defaultdict(list)
        for h in self.machines:
            for s in h.series.values():
                groups[(h.key, str(s.spec.get("workload")))].append(s)
        machines = {h.key: h for h in self.machines}
        out = {f"{FOLDER}/{page_name(machines[key], workload)}": workload_history(machines[key], workload, series,
                                                                                  self.changes)
               for (key, workload), series in groups.items()}
        out[f"{FOLDER}/index.html"] = self.index(sorted(groups, key=lambda g: (machines[g[0]].name, g[1])))
        return out

    def index(self, groups: list[tuple[str, str]]) -> str:
        machines = {h.key: h for h in self.machines}
        links = "".join(f'<li><a href="{e(page_name(machines[k], w))}">{e(w)} on the {e(machines[k].name)}</a></li>'
                        for k, w in groups)
        body = (f"{changes_list(self.changes, None, depth=1)}"
                f'<section id="series"><h2>Each case over time</h2><ul>{links}</ul></section>')
        return page("Changes over time", f"{len(self.changes)} lasting changes in {len(groups)} workload·machine "
                    "histories", body, depth=1)

    def section(self) -> str:
        """The index page's first screen: the newest regressions and improvements."""
        return changes_list(self.changes, FIRST_SCREEN, depth=0)


def page_name(machine: MachineHistory, workload: str) -> str:
    return f"{slug(f'{machine.name}-{workload}')}.html"


def series_id(s: SeriesHistory) -> str:
    return slug(s.case_id)


METHOD = ("A change is a lasting step in a case's median time over the runs of its machine: at least 5 % in size, "
          "beyond noise at a 1 % false-alarm level over all of a machine's cases, with 5 runs or more on each "
          "side, after each run's slowness common to all its cases (a slow host) is divided out "
          "(docs/shared-store.md, Changes over time).")


def changes_list(changes: list[Change], limit: int | None, depth: int) -> str:
    """Regressions, then improvements, newest first; `limit` each, with a link to the rest."""
    up = "../" * depth
    parts = []
    for title, cls, part in (("Slower", "slower", [c for c in changes if c.slower]),
                             ("Faster", "faster", [c for c in changes if not c.slower])):
        shown = part if limit is None else part[:limit]
        items = "".join(
            f'<li><a href="{up}{FOLDER}/{e(page_name(c.machine, str(c.series.spec.get("workload"))))}'
            f'#{e(series_id(c.series))}">{e(c.what)}</a>: <b class="{cls}">{e(c.change)}</b> from run '
            f'<a href="{e(run_href(c.run.id, depth))}">{e(c.run.id)}</a> <span class="muted">{e(c.run.started[:10])}'
            f"{e(f' · {c.why}' if c.why else '')}</span></li>" for c in shown)
        more = (f'<li><a href="{up}{FOLDER}/index.html">{len(part) - len(shown)} more</a></li>'
                if len(shown) < len(part) else "")
        parts.append(f"<h3>{title}: {len(part)}</h3><ul>{items}{more}</ul>" if part else "")
    said = "".join(parts) or "<p>No lasting change in any case on any machine.</p>"
    # The index keeps it short, so that the answer below stays on the first screen; the method is on history/.
    method = f'<p class="muted">{e(METHOD)}</p>' if limit is None else ""
    return (f'<section id="changes"><h2>Changes over time</h2>{said}{method}<p class="muted">'
            f'<a href="{up}{FOLDER}/index.html">Every case over time</a></p></section>')


def workload_history(machine: MachineHistory, workload: str, series: list[SeriesHistory],
                     changes: list[Change]) -> str:
    """One page: each case of `workload` on `machine`, its time over the runs with its steps and versions."""
    steps = defaultdict(list)
    for c in changes:
        if c.machine.key == machine.key:
            steps[c.series.case_id].append(c)
    size = size_params(machine)[workload]
    versions = {b: version_changes(machine, b) for b in {str(s.spec.get("backend")) for s in series}}
    body = []
    for s in sorted(series, key=lambda s: (str(s.spec.get("backend")), str(s.spec.get("mode")),
                                           str(s.spec.get("dtype")), _number(s.spec.get("size")), s.case_id)):
        said = "".join(f'<li><b class="{"slower" if c.slower else "faster"}">{e(c.change)}</b> from run '
                       f"{e(c.run.id)}{e(f' ({c.why})' if c.why else '')}</li>" for c in steps[s.case_id])
        name = series_name(s.spec, size)
        drawn = plot(machine, s, steps[s.case_id], name, versions[str(s.spec.get("backend"))])
        body.append(f'<section id="{e(series_id(s))}"><h3>{e(name)}</h3>{drawn}'
                    f"{f'<ul>{said}</ul>' if said else ''}</section>")
    return page(f"{workload} over time on the {machine.name}",
                f"{len(series)} cases over {len(machine.runs)} runs: median per call and its 95 % interval (band), "
                "framework versions (grey), lasting changes (red slower, green faster)", "\n".join(body), depth=1)


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else math.inf


def plot(machine: MachineHistory, s: SeriesHistory, changes: list[Change], name: str,
         versions: list[tuple[int, str]]) -> str:
    """A static SVG: the median over runs (line), its interval (band), the framework's `versions` (each
    from the run it changed at) and the steps found marked."""
    n = len(machine.runs)
    median, low, high = (np.array([np.nan if v is None else v for v in values], dtype=float)
                         for values in (s.medians, s.lows, s.highs))
    if not np.isfinite(median).any():
        return ""
    with np.errstate(invalid="ignore", divide="ignore"):  # a missing or zero time is left out, not drawn
        logs = np.log(np.stack([median, low, high]))
    lo, hi = float(np.nanmin(logs)), float(np.nanmax(logs))
    hi = max(hi, lo + 1e-3)
    xs = LEFT + (WIDTH - LEFT - 8) * np.arange(n) / max(1, n - 1)
    ys = TOP + (HEIGHT - TOP - BOTTOM) * (1 - (logs - lo) / (hi - lo))

    def x(i: int) -> str:
        return f"{xs[i]:.1f}"

    def path(idx: np.ndarray, row: np.ndarray) -> str:
        return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs[idx].tolist(), row[idx].tolist(), strict=True))

    points = path(np.flatnonzero(np.isfinite(ys[0])), ys[0])
    band = np.flatnonzero(np.isfinite(ys[1]) & np.isfinite(ys[2]))
    outline = f"{path(band, ys[1])} {path(band[::-1], ys[2])}"
    marks = []
    for i, version in versions:
        marks.append(f'<line x1="{x(i)}" x2="{x(i)}" y1="{TOP}" y2="{HEIGHT - BOTTOM}" stroke="#999" '
                     f'stroke-dasharray="3 3"/><text x="{xs[i] + 2:.1f}" y="{TOP - 4}" font-size="10" '
                     f'fill="#666">{e(version)}</text>')
    for c in changes:
        colour = "#b00020" if c.slower else "#1b7a3d"
        marks.append(f'<line x1="{x(c.step.at)}" x2="{x(c.step.at)}" y1="{TOP}" y2="{HEIGHT - BOTTOM}" '
                     f'stroke="{colour}" stroke-width="2"><title>{e(c.change)} from run {e(c.run.id)}</title></line>')
    first, last = machine.runs[0].started[:10], machine.runs[-1].started[:10]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
            f'aria-label="{e(name)} over {n} runs">'
            + (f'<polygon points="{outline}" fill="#4c78a8" fill-opacity="0.2"/>' if len(band) else "")
            + f'<polyline points="{points}" fill="none" stroke="#1d2330" stroke-width="1.2"/>'
            + "".join(marks)
            + f'<text x="2" y="{TOP + 8}" font-size="10">{e(format_seconds(math.exp(hi)))}</text>'
            + f'<text x="2" y="{HEIGHT - BOTTOM}" font-size="10">{e(format_seconds(math.exp(lo)))}</text>'
            + f'<text x="{LEFT}" y="{HEIGHT - 4}" font-size="10">{e(first)}</text>'
            + f'<text x="{WIDTH - 8}" y="{HEIGHT - 4}" font-size="10" text-anchor="end">{e(last)}</text></svg>')


def version_changes(machine: MachineHistory, backend: str) -> list[tuple[int, str]]:
    """The runs (indices) where `backend`'s version on `machine` changed, and the version from there."""
    versions = [r.versions.get(backend) for r in machine.runs]
    return [(i, str(v)) for i, v in enumerate(versions) if i and v and v != versions[i - 1]]
