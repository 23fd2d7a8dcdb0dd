"""Plots (SVG + PNG, matplotlib without a display): per-workload bars, scaling, speedup heatmap, roofline."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arraybench.core.device_tokens import kind_of
from arraybench.core.palette import FAILED_GREY, FAILED_RED, NOT_RUN_GREY, colour
from arraybench.report import bound, devices, memory_section, vmap, winners
from arraybench.report.crossovers import Crossover, sweeps
from arraybench.report.data import NOT_RUN, ReportData, status_word
from arraybench.report.table import size_text
from arraybench.report.view import CaseView, quartiles, timed
from arraybench.results import atomic_path
from arraybench.results.speedups import size_sort_key
from arraybench.units import format_seconds

RC = {
    "svg.fonttype": "none",  # text stays text: searchable, selectable, small
    "svg.hashsalt": "arraybench",  # stable ids, so an unchanged report gives unchanged files
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
}


@dataclass(frozen=True)
class Plot:
    """One figure written as `<name>.svg` and `<name>.png` in the plots folder."""

    name: str
    title: str
    caption: str
    svg: Path
    png: Path


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "workload"


def seconds_axis(ax: Any, axis: str = "y") -> None:
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _pos: format_seconds(v) if v > 0 else "")
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(fmt)


def write_plots(data: ReportData, found: list[Crossover], out_dir: Path) -> list[Plot]:
    """Every plot the data supports, written to `out_dir/plots`; returns them in reading order."""
    import matplotlib

    plots_dir = out_dir / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    made: list[Plot] = []

    def save(name: str, title: str, caption: str, fig: Any) -> None:
        plot = Plot(name, title, caption, plots_dir / f"{name}.svg", plots_dir / f"{name}.png")
        # The layout and the tight box are solved once, for both files: `bbox_inches="tight"` draws the
        # figure twice a file (once to solve, once to write) and measures every text again each time.
        # With the box given and no layout engine left, each file is one draw: the report of a run of
        # 19 workloads at one size (26 figures) took 12.0-12.6 s instead of 13.4-13.5 s on the 2-core VM.
        fig.draw_without_rendering()
        box = fig.get_tightbbox().padded(matplotlib.rcParams["savefig.pad_inches"])
        fig.set_layout_engine(None)
        for path, kw in ((plot.svg, {"metadata": {"Date": None}}), (plot.png, {"dpi": 110})):
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=path.suffix[1:], bbox_inches=box, **kw)
        made.append(plot)

    with matplotlib.rc_context(RC):
        if glance := winners.rows(data):  # first: the picture the report opens with
            save("winners", "Winners map", winners.CAPTION, winners.figure(glance, data.labels()))
        if least := winners.memory_rows(data):  # the same map, by the memory each case needs
            save("winners-memory", "Memory map", winners.MEMORY_CAPTION,
                 winners.figure(least, data.labels(), winners.MEMORY_TITLE))
        dtypes = sorted({r.dtype for r in data.records})
        swept = sweeps(data)
        for wl, all_recs in data.by_workload().items():  # per workload: its scaling, then its bars
            for (wl_, machine, dtype, name, fixed), series in swept.items():
                if wl_ != wl:
                    continue
                one = sum(k[0] == wl for k in swept) == 1
                suffix = "" if one else "-" + slug(f"{machine}-{dtype}" + _fixed(fixed))
                here = [c for c in found if (c.workload, c.machine, c.dtype, c.fixed) == (wl, machine, dtype, fixed)]
                problem = data.problem(next(iter(next(iter(series.values())).values())))
                save(f"scaling-{slug(wl)}{suffix}", f"{wl}{f' ({problem})' if problem else ''}: scaling with {name}",
                     f"Median time per call against {name}, log-log. Numbered rings mark where the fastest "
                     "backend·mode changes, the grey bar the two measured sizes that bracket it; every "
                     "crossover between any two backend·modes is in crossovers.csv.",
                     scaling_figure(data, wl, name, series, here, f"{dtype}, {machine}" + _fixed(fixed)))
                if memory_section.measured(series):  # beside the time: the memory each backend·mode needs
                    save(f"memory-{slug(wl)}{suffix}",
                         f"{wl}{f' ({problem})' if problem else ''}: memory with {name}",
                         memory_section.CAPTION.format(name=name),
                         memory_section.figure(data, wl, name, series, f"{dtype}, {machine}" + _fixed(fixed)))
            for dtype in dtypes:
                # Backends unavailable here are one line at the top of the report, not a bar each.
                recs = [r for r in all_recs if r.dtype == dtype and r.status != "unavailable"]
                suffix = f"-{dtype}" if len(dtypes) > 1 else ""
                if recs:
                    save(f"bars-{slug(wl)}{suffix}", f"{wl}{suffix.replace('-', ' ')}: time per call",
                         "Median time per call (bars, IQR as error bars) beside the first call, which "
                         "holds tracing and compilation; log scale. Smallest and largest size side by side "
                         "(of each problem, where the cases differ in more than the size).",
                         bars_figure(data, wl, recs))
        if heatmap_rows(data):
            save("speedup-heatmap", "Speedup over NumPy",
                 "numpy·eager's median over each backend·mode's, per workload at its smallest and largest "
                 "size (the sizes between are in its scaling plot; rows without a correct numpy·eager case "
                 "are left out); blue is faster than NumPy, red slower. "
                 "Hatched grey cells failed or were wrong and are not ranked.",
                 heatmap_figure(data))
        vmap.plots(data, save)
        devices.plots(data, save)
        for machine in data.machines:
            for dtype in dtypes:
                cases = [r for r in data.records if r.machine == machine and r.dtype == dtype]
                pts = [r for r in cases if r.intensity]
                if not pts:
                    continue
                left_out = sorted({f"{r.workload} ({r.no_rate.split(':')[0]})"
                                   for r in cases if r.no_rate})
                where = f"-{slug(machine)}" if len(data.machines) > 1 else ""
                save(f"roofline-{dtype}{where}", f"Roofline, {dtype}" + (f" @{machine}" if where else ""),
                     "Achieved GFLOP/s against arithmetic intensity (FLOPs per byte moved), log-log; one "
                     "point per correct case, colour by backend·mode, marker by workload, bigger for larger "
                     "sizes. The roofs are this machine's measured peaks: BLAS matmul (compute), a streaming "
                     "copy (memory) and, dotted, a copy that stays in cache (256 KiB). Points above the memory "
                     "roof have working sets that fit in cache; points far below every roof are dispatch-bound "
                     "(the answer above names what each such backend pays per call). Cases that do no floating-point "
                     "work or move no bytes (sort, rng, transfers on the CPU) are not drawn.",
                     roofline_figure(data, machine, dtype, pts, left_out))
    return made


def _fixed(fixed: tuple) -> str:
    return "".join(f", {k}={v}" for k, v in fixed)


def _figure(width: float, height: float, ncols: int = 1, sharey: bool = False) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, sharey=sharey, squeeze=False)[0]
    return fig, axes


def bar_panels(data: ReportData, wl: str,
               recs: Sequence[CaseView]) -> list[tuple[str, list[CaseView]]]:
    """(title, records) per panel of a bar plot: each problem's smallest and largest size, in the
    tables' order of points; two problems that share a size get a panel each."""
    pts = data.points(wl)
    problems: dict[tuple, list[CaseView]] = defaultdict(list)
    for r in recs:
        problems[pts.fixed(r)].append(r)
    panels = []
    for group in problems.values():
        sizes = sorted({r.size for r in group}, key=size_sort_key)
        panels += [[r for r in group if r.size == size] for size in dict.fromkeys((sizes[0], sizes[-1]))]
    panels.sort(key=lambda panel: pts.order(panel[0]))
    return [(f"{pts.size_param} = {panel[0].size}"
             + (f" ({problem})" if (problem := data.problem(panel[0])) else ""), panel) for panel in panels]


def bars_figure(data: ReportData, wl: str, recs: Sequence[CaseView]) -> Any:
    from matplotlib.patches import Patch

    shown = bar_panels(data, wl, recs)
    labels = data.labels(recs)
    fig, axes = _figure(max(6.0, 1.0 + 0.75 * len(labels) * len(shown)), 4.6, len(shown), sharey=True)
    for ax, (title, panel) in zip(axes, shown, strict=True):
        cell = {data.label(r): r for r in panel}
        for i, label in enumerate(labels):
            r = cell.get(label)
            if r is None:
                continue
            if r.status != "ok":
                ax.text(i, 0.02, status_word(r) or r.status, transform=ax.get_xaxis_transform(),
                        rotation=90, ha="center", va="bottom", fontsize=9,
                        color=FAILED_RED if r.status not in NOT_RUN else "#777777")
                continue
            med, (q25, q75) = timed(r), quartiles(r)
            err = [[med - q25], [q75 - med]]
            ax.bar(i - 0.2, med, 0.4, color=colour(label), yerr=err, capsize=3, ecolor="#333333")
            if r.first_call_s:
                ax.bar(i + 0.2, r.first_call_s, 0.4, color="white", edgecolor=colour(label),
                       hatch="///", linewidth=1)
            if r.noisy:
                ax.annotate("noisy", (i - 0.2, q75), textcoords="offset points", xytext=(0, 3),
                            ha="center", fontsize=7, color="#8a6d00")
        ax.set_yscale("log")
        ax.set_xlim(-0.6, len(labels) - 0.4)  # room for the status words of cases without bars
        ax.set_xticks(range(len(labels)), labels, rotation=35, ha="right")
        ax.set_title(title)
        ax.grid(axis="x", visible=False)
        seconds_axis(ax)
    axes[0].set_ylabel("time per call (log scale)")
    dtypes = ", ".join(sorted({r.dtype for r in recs}))
    fig.suptitle(f"{wl} ({dtypes}): median time per call and first call", fontsize=12)
    fig.legend(handles=[Patch(color="#777777", label="median per call, IQR bars (steady state)"),
                        Patch(facecolor="white", edgecolor="#777777", hatch="///",
                              label="first call (trace + compile + run)")],
               loc="outside lower center", ncols=2)
    return fig


def scaling_figure(data: ReportData, wl: str, name: str, series: dict[str, dict[float, CaseView]],
                   found: list[Crossover], subtitle: str) -> Any:
    from matplotlib.ticker import FuncFormatter

    fig, (ax,) = _figure(8.0, 5.0)
    for label in data.labels([r for s in series.values() for r in s.values()]):
        pts = sorted(series[label].items())
        xs = [s for s, _ in pts]
        ys = [timed(r) for _, r in pts]
        lo = [timed(r) - quartiles(r)[0] for _, r in pts]
        hi = [quartiles(r)[1] - timed(r) for _, r in pts]
        style = "--" if "·eager" in label else "-"
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o" + style, ms=4, capsize=2, color=colour(label), label=label)
    key = lead_changes(series, found)
    lines = []
    for i, c in enumerate(key, 1):
        # The bracket (measured sizes that hold the crossing) as a bar, the estimate as a ring.
        ax.plot([c.lo, c.hi], [c.time_s, c.time_s], color="black", linewidth=3, alpha=0.5, zorder=5)
        ax.plot(c.size, c.time_s, "o", ms=9, mfc="none", mec="black", mew=1.4, zorder=6)
        ax.annotate(str(i), (c.size, c.time_s), textcoords="offset points", xytext=(0, 9 + 9 * ((i - 1) % 3)),
                    ha="center", fontsize=8, fontweight="bold",
                    bbox={"facecolor": "white", "alpha": 0.8, "pad": 0.5, "linewidth": 0})
        lines.append(f"{i}: {c.faster_above} {c.verb} {c.faster_below} at {name} ≈ {c.size:.3g} "
                     f"(measured between {c.lo:g} and {c.hi:g}: {c.state})")
    if key:
        ax.plot([], [], "o", ms=9, mfc="none", mec="black", mew=1.4, label="crossover (bar: bracket)")
    rest = len(found) - len(key)
    if rest:
        lines.append(f"{rest} more crossover{'s' if rest > 1 else ''} between slower backend·modes: crossovers.csv")
    if lines:
        ax.text(0.0, -0.16, "\n".join(lines), transform=ax.transAxes, va="top", ha="left", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_text(v)))
    sizes = [x for pts in series.values() for x in pts]
    if max(sizes) / min(sizes) <= 300:  # two decades or less: label 2 and 5 between the powers of ten
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: size_text(v) if f"{v:g}"[0] in "25" else ""))
    ax.set_xlabel(f"{name} (log scale)")
    ax.set_ylabel("median time per call (log scale)")
    seconds_axis(ax)
    ax.set_title(f"{wl}: time per call vs {name} ({subtitle})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return fig


def lead_changes(series: dict[str, dict[float, CaseView]], found: list[Crossover]) -> list[Crossover]:
    """The crossovers where the fastest backend·mode changes: the ones a reader acts on."""
    sizes = sorted({s for pts in series.values() for s in pts})
    fastest = [min((lab for lab in series if s in series[lab]), key=lambda lab: timed(series[lab][s]))
               for s in sizes]
    pairs = {frozenset(p) for p in zip(fastest, fastest[1:], strict=False) if p[0] != p[1]}
    return sorted((c for c in found if frozenset((c.faster_below, c.faster_above)) in pairs), key=lambda c: c.size)


def heatmap_rows(data: ReportData) -> list[tuple[str, dict[str, CaseView]]]:
    """(row title, label -> record) per problem of each workload at its smallest and largest size
    (and machine, dtype where they vary). Rows without a correct numpy·eager case have nothing to
    compare with and are left out.
    """
    many_machines = len(data.machines) > 1
    many_dtypes = len({r.dtype for r in data.records}) > 1
    rows: dict[tuple, dict[str, CaseView]] = {}
    for r in data.records:
        if r.status == "unavailable":
            continue
        key = (r.workload, data.points(r.workload).order(r), r.dtype, r.machine)
        rows.setdefault(key, {})[data.label(r)] = r
    compared = {k: cells for k, cells in rows.items() if any(r.speedup for r in cells.values())}
    # A sweep's ends only: the sizes between are in its scaling plot, and a row per size would
    # push the roofline below the first screens. A sweep is one problem (workloads/sizes.fixed_params).
    ends: dict[tuple, list[tuple]] = {}
    for key in sorted(compared):
        one = next(iter(compared[key].values()))
        ends.setdefault((key[0], key[2], key[3], data.points(key[0]).fixed(one)), []).append(key)
    shown = {k for keys in ends.values() for k in (keys[0], keys[-1])}
    out = []
    for key in sorted(shown):
        wl, _order, dtype, machine = key
        cells = compared[key]
        one = next(iter(cells.values()))
        title = f"{wl} · {data.size_param(wl)}={one.size}"
        title += f", {problem}" if (problem := data.problem(one)) else ""
        title += f" · {dtype}" if many_dtypes else ""
        title += f" @{machine}" if many_machines else ""
        out.append((title, cells))
    return out


def heatmap_figure(data: ReportData) -> Any:
    import matplotlib
    import numpy as np
    from matplotlib.colors import Normalize
    from matplotlib.patches import Rectangle

    rows = heatmap_rows(data)
    labels = data.labels([r for _t, cells in rows for r in cells.values()])
    grid = np.full((len(rows) + 1, len(labels)), np.nan)
    fig, (ax,) = _figure(max(6.0, 1.6 + 1.05 * len(labels)), 1.6 + 0.42 * (len(rows) + 1))
    limit = 4.0  # log2: colours saturate at 16× either way; the text still says the number
    for i, (_title, cells) in enumerate(rows):
        for j, label in enumerate(labels):
            r = cells.get(label)
            if r is None:
                continue
            if r.status == "ok" and r.speedup:
                grid[i, j] = math.log2(r.speedup)
                ax.text(j, i, f"{r.speedup:.2g}×" + ("*" if r.noisy else ""), ha="center",
                        va="center", fontsize=8, color="white" if abs(grid[i, j]) > 2.5 else "black")
            else:
                failed = r.status not in NOT_RUN
                word = status_word(r) or r.status
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=FAILED_GREY if failed else NOT_RUN_GREY,
                                       hatch="xx" if failed else None, edgecolor="white", linewidth=0))
                ax.text(j, i, word, ha="center", va="center", fontsize=7, fontweight="bold" if failed else None,
                        color="black", bbox={"facecolor": "white", "pad": 1, "linewidth": 0} if failed else None)
    geo_row = len(rows)
    for j in range(len(labels)):
        vals = grid[:geo_row, j][~np.isnan(grid[:geo_row, j])]
        if vals.size:
            grid[geo_row, j] = vals.mean()
            of = f"\n({vals.size}/{geo_row})" if vals.size < geo_row else ""
            ax.text(j, geo_row, f"{2 ** vals.mean():.2g}×" + of,
                    ha="center", va="center", fontsize=8, fontweight="bold",
                    color="white" if abs(grid[geo_row, j]) > 2.5 else "black")
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="white")
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=Normalize(-limit, limit), aspect="auto")
    ax.axhline(geo_row - 0.5, color="black", linewidth=1.5)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(rows) + 1), [t for t, _ in rows] + ["geometric mean (correct cases)"])
    ax.tick_params(length=0)
    ax.grid(False)
    for side in ax.spines.values():
        side.set_visible(False)
    bar = fig.colorbar(image, ax=ax, shrink=0.8, ticks=range(-int(limit), int(limit) + 1))
    bar.ax.set_yticklabels([f"{2.0 ** k:g}×" for k in range(-int(limit), int(limit) + 1)])
    bar.set_label("speedup vs numpy·eager (log scale)")
    ax.set_title("Speedup over numpy·eager (* noisy; hatched: failed or wrong, never ranked)")
    return fig


# Legend rows (entries and titles) that fit beside the roofline's axes at font size 8.
ROOFLINE_LEGEND_ROWS = 26
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")


def roofline_figure(data: ReportData, machine: str, dtype: str, pts: Sequence[CaseView],
                    left_out: list[str]) -> Any:
    from matplotlib.lines import Line2D

    fig, (ax,) = _figure(9.5, 5.6)
    workloads = sorted({r.workload for r in pts})
    marker = {wl: MARKERS[i % len(MARKERS)] for i, wl in enumerate(workloads)}
    labels = data.labels(pts)
    xs = [x for r in pts if (x := r.intensity) is not None]  # the caller passes those with one
    lo_x, hi_x = min(xs) / 3, max(xs) * 3
    peaks = data.peaks(machine)
    roofs = []
    for device in sorted({kind_of(r.device) for r in pts}):
        flop_roof, bw_roof = bound.roofs(peaks, device, dtype)
        if flop_roof and bw_roof:
            roofs.append((device.upper(), flop_roof, bw_roof))
            lo_x, hi_x = min(lo_x, flop_roof / bw_roof / 3), max(hi_x, flop_roof / bw_roof * 3)
    cache_bw, cache_bytes = bound.cache_roof(peaks, "cpu")
    cpu_roof = next((r for r in roofs if r[0] == "CPU"), None)
    if cache_bw and cache_bytes and cpu_roof:
        # Above the memory roof: cases whose data fit in a core's cache can stream faster.
        ridge = cpu_roof[1] / cache_bw
        lo_x = min(lo_x, ridge / 3)
        ax.plot([lo_x, ridge], [lo_x * cache_bw, cpu_roof[1]], color="black", linewidth=1.0, linestyle=":", zorder=1)
        ax.annotate(f"CPU cache roof (data ≤ {cache_bytes // 2**10} KiB): {cache_bw:.3g} GB/s", (ridge, cpu_roof[1]),
                    textcoords="offset points", xytext=(-4, 2), ha="right", va="bottom", fontsize=8,
                    bbox={"facecolor": "white", "alpha": 0.8, "pad": 1, "linewidth": 0})
    for name, flop_roof, bw_roof in roofs:
        ridge = flop_roof / bw_roof
        ax.plot([lo_x, ridge, hi_x], [lo_x * bw_roof, flop_roof, flop_roof], color="black", linewidth=1.4,
                linestyle="-" if name == "CPU" else "--", zorder=1)
        ax.annotate(f"{name} compute roof: matmul {flop_roof:.3g} GFLOP/s", (hi_x, flop_roof),
                    textcoords="offset points", xytext=(-4, 4), ha="right", fontsize=8)
        at = ridge / 8  # along the slope, left of the ridge, clear of the points below it
        ax.annotate(f"{name} memory roof: {bw_roof:.3g} GB/s", (at, at * bw_roof), textcoords="offset points",
                    xytext=(-6, 4), ha="right", va="bottom", fontsize=8,
                    bbox={"facecolor": "white", "alpha": 0.8, "pad": 1, "linewidth": 0})
    sizes = [r.size for r in pts if isinstance(r.size, int | float) and r.size > 0]
    smallest, largest = (min(sizes), max(sizes)) if sizes else (1, 1)
    for r in pts:
        size = r.size
        frac = (math.log(size / smallest) / math.log(largest / smallest)
                if isinstance(size, int | float) and size > 0 and largest > smallest else 1.0)
        ax.scatter(r.intensity, r.gflops, s=18 + 70 * frac, marker=marker[r.workload],
                   color=colour(data.label(r)), edgecolors="black", linewidths=0.4, alpha=0.85, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo_x, hi_x)
    ax.set_xlabel("arithmetic intensity (FLOPs per byte moved, log scale)")
    ax.set_ylabel("achieved GFLOP/s (log scale)")
    note = "" if roofs else " — peaks not measured for this run: no roofs"
    ax.set_title(f"Roofline, {dtype}" + (f" @{machine}" if len(data.machines) > 1 else "") + note)
    backend_handles = [Line2D([], [], linestyle="", marker="o", color=colour(lab), label=lab) for lab in labels]
    workload_handles = [Line2D([], [], linestyle="", marker=marker[wl], color="#777777", label=wl)
                        for wl in workloads]
    # One legend above the other beside the axes; past ROOFLINE_LEGEND_ROWS rows together they would
    # overlap (10 backend·modes and 22 workloads did in the default run), so the longer goes to columns.
    rows_b, rows_w = len(backend_handles) + 1, len(workload_handles) + 1
    room = max(1, ROOFLINE_LEGEND_ROWS - rows_b - 1)  # entries per column left to the workloads
    cols_w = 1 if rows_b + rows_w <= ROOFLINE_LEGEND_ROWS else -(-(rows_w - 1) // room)
    first = ax.legend(handles=backend_handles, title="backend·mode", loc="upper left",
                      bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.add_artist(first)
    ax.legend(handles=workload_handles, title="workload (bigger: larger size)", loc="lower left",
              bbox_to_anchor=(1.01, 0.0), fontsize=8, ncols=min(cols_w, 3))
    if left_out:
        ax.text(0.0, -0.13, "Not drawn (no FLOP/s or no bytes moved): " + "; ".join(left_out),
                transform=ax.transAxes, va="top", fontsize=8, wrap=True)
    return fig
