"""Plots (SVG + PNG, matplotlib without a display): per-workload bars, scaling, speedup heatmap, efficiency."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arraybench.report.crossovers import Crossover, sweeps
from arraybench.report.model import NOT_RUN, ReportData, status_word
from arraybench.report.table import size_sort_key
from arraybench.results import atomic_path
from arraybench.runner import format_seconds

BACKEND_COLOURS = {
    "numpy": "#4477aa", "numba": "#228833", "jax": "#aa3377",
    "tensorflow": "#ee7733", "torch": "#cc3311", "cupy": "#009988",
}
OTHER_COLOURS = ("#666666", "#bbbb33", "#66ccee", "#994455")
FAILED_GREY, NOT_RUN_GREY = "#9a9a9a", "#e4e4e4"
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


def colour(label: str) -> str:
    """Same colour for a backend everywhere; eager is a lighter shade of its backend's jit."""
    backend, _, rest = label.partition("·")
    base = BACKEND_COLOURS.get(backend) or OTHER_COLOURS[sum(map(ord, backend)) % len(OTHER_COLOURS)]
    if rest.startswith("eager"):
        r, g, b = (int(base[i:i + 2], 16) for i in (1, 3, 5))
        return "#" + "".join(f"{int(c + (255 - c) * 0.45):02x}" for c in (r, g, b))
    return base


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
        for path, kw in ((plot.svg, {"metadata": {"Date": None}}), (plot.png, {"dpi": 110})):
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=path.suffix[1:], bbox_inches="tight", **kw)
        made.append(plot)

    with matplotlib.rc_context(RC):
        dtypes = sorted({r["dtype"] for r in data.records})
        for wl, all_recs in data.by_workload().items():
            for dtype in dtypes:
                recs = [r for r in all_recs if r["dtype"] == dtype]
                suffix = f"-{dtype}" if len(dtypes) > 1 else ""
                if recs:
                    save(f"bars-{slug(wl)}{suffix}", f"{wl}{suffix.replace('-', ' ')}: time per call",
                         "Median time per call (bars, IQR as error bars) beside the first call, which "
                         "holds tracing and compilation; log scale. Smallest and largest size side by side.",
                         bars_figure(data, wl, recs))
        swept = sweeps(data)
        for (wl, machine, dtype, name, fixed), series in swept.items():
            one = sum(k[0] == wl for k in swept) == 1
            suffix = "" if one else "-" + slug(f"{machine}-{dtype}" + _fixed(fixed))
            here = [c for c in found if (c.workload, c.machine, c.dtype, c.fixed) == (wl, machine, dtype, fixed)]
            save(f"scaling-{slug(wl)}{suffix}", f"{wl}: scaling with {name}",
                 f"Median time per call against {name}, log-log; circles mark crossovers.",
                 scaling_figure(data, wl, name, series, here, f"{dtype}, {machine}" + _fixed(fixed)))
        if heatmap_rows(data):
            save("speedup-heatmap", "Speedup over NumPy",
                 "numpy·eager's median over each backend·mode's, per workload and size (rows without "
                 "a correct numpy·eager case are left out); blue is faster than NumPy, red slower. "
                 "Hatched grey cells failed or were wrong and are not ranked.",
                 heatmap_figure(data))
        if any(r.get("gflops") or r.get("gbs") for r in data.records):
            save("efficiency", "Efficiency against this machine's peaks",
                 "Achieved GFLOP/s and GB/s of each correct case; dashed lines are the peaks "
                 "arraybench measured on the machine (BLAS matmul, streaming copy). Inputs small "
                 "enough to stay in cache can beat the streaming peak: bytes are counted per pass.",
                 efficiency_figure(data))
    return made


def _fixed(fixed: tuple) -> str:
    return "".join(f", {k}={v}" for k, v in fixed)


def _figure(width: float, height: float, ncols: int = 1, sharey: bool = False) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, sharey=sharey, squeeze=False)[0]
    return fig, axes


def bars_figure(data: ReportData, wl: str, recs: list[dict[str, Any]]) -> Any:
    from matplotlib.patches import Patch

    sizes = sorted({r.get("size") for r in recs}, key=size_sort_key)
    shown = sizes if len(sizes) <= 2 else [sizes[0], sizes[-1]]
    labels = data.labels(recs)
    name = data.size_param(wl)
    fig, axes = _figure(max(6.0, 1.0 + 0.75 * len(labels) * len(shown)), 4.6, len(shown), sharey=True)
    for ax, size in zip(axes, shown, strict=True):
        cell = {data.label(r): r for r in recs if r.get("size") == size}
        for i, label in enumerate(labels):
            r = cell.get(label)
            if r is None:
                continue
            if r["status"] != "ok":
                ax.text(i, 0.02, status_word(r) or r["status"], transform=ax.get_xaxis_transform(),
                        rotation=90, ha="center", va="bottom", fontsize=9,
                        color="#b00020" if r["status"] not in NOT_RUN else "#777777")
                continue
            med = r["median_s"]
            err = [[med - r["q25_s"]], [r["q75_s"] - med]]
            ax.bar(i - 0.2, med, 0.4, color=colour(label), yerr=err, capsize=3, ecolor="#333333")
            if r.get("first_call_s"):
                ax.bar(i + 0.2, r["first_call_s"], 0.4, color="white", edgecolor=colour(label),
                       hatch="///", linewidth=1)
            if r.get("noisy"):
                ax.annotate("noisy", (i - 0.2, r["q75_s"]), textcoords="offset points", xytext=(0, 3),
                            ha="center", fontsize=7, color="#8a6d00")
        ax.set_yscale("log")
        ax.set_xlim(-0.6, len(labels) - 0.4)  # room for the status words of cases without bars
        ax.set_xticks(range(len(labels)), labels, rotation=35, ha="right")
        ax.set_title(f"{name} = {size}")
        ax.grid(axis="x", visible=False)
        seconds_axis(ax)
    axes[0].set_ylabel("time per call (log scale)")
    dtypes = ", ".join(sorted({r["dtype"] for r in recs}))
    fig.suptitle(f"{wl} ({dtypes}): median time per call and first call", fontsize=12)
    fig.legend(handles=[Patch(color="#777777", label="median per call, IQR bars (steady state)"),
                        Patch(facecolor="white", edgecolor="#777777", hatch="///",
                              label="first call (trace + compile + run)")],
               loc="outside lower center", ncols=2)
    return fig


def scaling_figure(data: ReportData, wl: str, name: str, series: dict[str, dict[float, dict[str, Any]]],
                   found: list[Crossover], subtitle: str) -> Any:
    from matplotlib.ticker import FuncFormatter

    fig, (ax,) = _figure(8.0, 5.0)
    for label in data.labels([r for s in series.values() for r in s.values()]):
        pts = sorted(series[label].items())
        xs = [s for s, _ in pts]
        ys = [r["median_s"] for _, r in pts]
        lo = [r["median_s"] - r["q25_s"] for _, r in pts]
        hi = [r["q75_s"] - r["median_s"] for _, r in pts]
        style = "--" if "·eager" in label else "-"
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o" + style, ms=4, capsize=2, color=colour(label), label=label)
    for c in found:
        ax.plot(c.size, c.time_s, "o", ms=9, mfc="none", mec="black", mew=1.4, zorder=5)
        ax.annotate(f"{c.faster_above} > {c.faster_below}\n{name} ≈ {c.size:.3g}", (c.size, c.time_s),
                    textcoords="offset points", xytext=(7, 5), fontsize=7,
                    bbox={"facecolor": "white", "alpha": 0.75, "pad": 1, "linewidth": 0})
    if found:
        ax.plot([], [], "o", ms=9, mfc="none", mec="black", mew=1.4, label="crossover")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: f"{v:g}" if str(f"{v:g}")[0] in "25" else ""))
    ax.set_xlabel(f"{name} (log scale)")
    ax.set_ylabel("median time per call (log scale)")
    seconds_axis(ax)
    ax.set_title(f"{wl}: time per call vs {name} ({subtitle})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return fig


def heatmap_rows(data: ReportData) -> list[tuple[str, dict[str, dict[str, Any]]]]:
    """(row title, label -> record) per workload·size (and machine, dtype where they vary).

    Rows without a correct numpy·eager case have nothing to compare with and are left out.
    """
    many_machines = len(data.machines) > 1
    many_dtypes = len({r["dtype"] for r in data.records}) > 1
    rows: dict[tuple, dict[str, dict[str, Any]]] = {}
    for r in data.records:
        key = (r["workload"], size_sort_key(r.get("size")), r["dtype"], r["machine"])
        rows.setdefault(key, {})[data.label(r)] = r
    out = []
    for (wl, _size, dtype, machine), cells in sorted(rows.items()):
        if not any(r.get("speedup") for r in cells.values()):
            continue
        size_text = next(iter(cells.values())).get("size")
        title = f"{wl} · {data.size_param(wl)}={size_text}"
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
            if r["status"] == "ok" and r.get("speedup"):
                grid[i, j] = math.log2(r["speedup"])
                ax.text(j, i, f"{r['speedup']:.2g}×" + ("*" if r.get("noisy") else ""), ha="center",
                        va="center", fontsize=8, color="white" if abs(grid[i, j]) > 2.5 else "black")
            else:
                failed = r["status"] not in NOT_RUN
                word = status_word(r) or r["status"]
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=FAILED_GREY if failed else NOT_RUN_GREY,
                                       hatch="xx" if failed else None, edgecolor="white", linewidth=0))
                ax.text(j, i, word, ha="center", va="center", fontsize=7, fontweight="bold" if failed else None,
                        color="black", bbox={"facecolor": "white", "pad": 1, "linewidth": 0} if failed else None)
    geo_row = len(rows)
    for j in range(len(labels)):
        vals = grid[:geo_row, j][~np.isnan(grid[:geo_row, j])]
        if vals.size:
            grid[geo_row, j] = vals.mean()
            ax.text(j, geo_row, f"{2 ** vals.mean():.2g}×" + (f"\n({vals.size}/{geo_row})" if vals.size < geo_row else ""),
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


def efficiency_figure(data: ReportData) -> Any:
    ok = [r for r in data.records if r.get("gflops") or r.get("gbs")]
    many_dtypes = len({r["dtype"] for r in ok}) > 1
    cats = sorted({(r["workload"], size_sort_key(r.get("size")), r.get("size"), r["dtype"]) for r in ok})
    cat_index = {(wl, size, dtype): i for i, (wl, _k, size, dtype) in enumerate(cats)}
    labels = data.labels(ok)
    width = 0.8 / max(len(labels), 1)
    fig, axes = _figure(min(15.0, max(8.0, 2.0 + 0.3 * len(cats) * max(len(labels), 2))), 5.0, 2)
    panels = (("gflops", "achieved GFLOP/s", "matmul_gflops", "BLAS matmul peak", "GFLOP/s"),
              ("gbs", "achieved GB/s", "bandwidth_gbs", "streaming copy peak", "GB/s"))
    for ax, (field, ylabel, peak_key, peak_name, unit) in zip(axes, panels, strict=True):
        for k, label in enumerate(labels):
            pts = [(cat_index[(r["workload"], r.get("size"), r["dtype"])], r[field]) for r in ok
                   if data.label(r) == label and r.get(field)]
            if pts:
                ax.bar([x - 0.4 + width * (k + 0.5) for x, _ in pts], [v for _, v in pts], width,
                       color=colour(label), label=label)
        for machine in data.machines:
            peak = data.peaks(machine).get(peak_key)
            values = peak.items() if isinstance(peak, dict) else [("", peak)] if peak else []
            for dtype, v in values:
                if dtype and dtype not in {r["dtype"] for r in ok}:
                    continue
                ax.axhline(v, linestyle="--", color="black", linewidth=1)
                where = f" @{machine}" if len(data.machines) > 1 else ""
                ax.annotate(f"{peak_name} {dtype} {v:.3g} {unit}{where}".replace("  ", " "), (0, v),
                            xycoords=("axes fraction", "data"), textcoords="offset points",
                            xytext=(4, 3), fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel(ylabel + " (log scale)")
        ax.set_xticks(range(len(cats)), [f"{wl} · {size}" + (f" · {dtype}" if many_dtypes else "")
                                         for wl, _k, size, dtype in cats], rotation=30, ha="right")
        ax.grid(axis="x", visible=False)
    measured = [m for m in data.machines if data.peaks(m).get("matmul_gflops")]
    note = "" if measured else " (peaks not measured for this run)"
    fig.suptitle(f"Achieved throughput against this machine's peaks{note}", fontsize=12)
    handles, names = axes[0].get_legend_handles_labels()
    if not handles:
        handles, names = axes[1].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncols=min(len(names), 5), fontsize=8)
    return fig
