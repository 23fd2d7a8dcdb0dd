"""Memory in the report: a case's figure, whether one case needs less than another beyond noise, the answer's
sentence and the memory-against-size plot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arraybench.core.palette import colour
from arraybench.report.data import ReportData
from arraybench.report.table import size_text
from arraybench.report.view import CaseView, timed
from arraybench.results.reading import memory_by_round
from arraybench.stats import bracket
from arraybench.stats import memory_order as claims
from arraybench.units import format_size

# The answer names the fastest's memory against the runner-up's where one needs this many times the other's.
WORTH_SAYING = 2.0
CAPTION = ("Memory of one steady call against {name}, log-log: its inputs plus the most it held at once beyond "
           "them (filled markers), and the first call's, which holds tracing and compilation (hollow). "
           "Read from each framework's own counter where it keeps one, else from the worker's resident set "
           "(docs/memory.md).")


def point(r: CaseView) -> bracket.Point | None:
    """`r`'s memory as a claim compares it (stats/memory_order.py), paired by round with its run's rivals."""
    size = r.size if isinstance(r.size, int | float) else 0.0
    return claims.point(size, memory_by_round(r), r.pairing.run if r.pairing is not None else None)


def apart(a: CaseView, b: CaseView, factor: float = 1.0) -> int:
    """-1 where `a` needs less than 1/`factor` of `b`'s memory beyond noise, +1 where `b` needs less than
    1/`factor` of `a`'s, 0 where the data cannot tell (or either was not measured)."""
    pa, pb = point(a), point(b)
    if pa is None or pb is None:
        return 0
    return -1 if claims.less(pa, pb, factor) else 1 if claims.less(pb, pa, factor) else 0


def shown(r: CaseView) -> str:
    """'48 MiB': a case's memory as tables show it; '' where it was not measured."""
    return format_size(r.memory_bytes) if r.memory_bytes is not None else ""


def sentence(data: ReportData, name: str, recs: Sequence[CaseView]) -> str:
    """'At n = 10⁶ jax·jit needs 3.1× less memory than torch·eager (48 MiB a call against 150 MiB, inputs
    included).': the fastest correct case at the largest size against the runner-up, where one needs
    WORTH_SAYING times the other's memory beyond noise; else ''."""
    sizes = sorted({r.size for r in recs if isinstance(r.size, int | float)})
    if not sizes:
        return ""
    ranked = sorted((r for r in recs if r.size == sizes[-1]), key=timed)
    if len(ranked) < 2:
        return ""
    best, second = ranked[0], ranked[1]
    side = apart(best, second, WORTH_SAYING)
    if side == 0 or best.memory_bytes is None or second.memory_bytes is None:
        return ""
    ratio = max(best.memory_bytes, second.memory_bytes) / min(best.memory_bytes, second.memory_bytes)
    how = f"{ratio:.2g}× less memory than" if side < 0 else f"{ratio:.2g}× the memory of"
    return (f"At {name} = {size_text(sizes[-1])}, {data.label(best)} needs {how} {data.label(second)} "
            f"({shown(best)} a call against {shown(second)}, inputs included).")


def measured(series: dict[str, dict[float, CaseView]]) -> bool:
    """Whether any case of a sweep has a memory figure to plot."""
    return any(r.memory_bytes is not None for s in series.values() for r in s.values())


def figure(data: ReportData, wl: str, name: str, series: dict[str, dict[float, CaseView]], subtitle: str) -> Any:
    """Memory against size: a line per backend·mode through its steady call's figure, hollow markers at
    its first call's."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator

    fig = Figure(figsize=(8.0, 5.0), layout="constrained")
    ax = fig.subplots()
    for label in data.labels([r for s in series.values() for r in s.values()]):
        pts = sorted((s, r) for s, r in series[label].items() if r.memory_bytes is not None)
        if not pts:
            continue
        style = "--" if "·eager" in label else "-"
        ax.plot([s for s, _ in pts], [r.memory_bytes or 0 for _, r in pts], "o" + style, ms=4, color=colour(label),
                label=label)
        first = [(s, r.first_call_memory_bytes) for s, r in pts if r.first_call_memory_bytes]
        ax.plot([s for s, _ in first], [m for _, m in first], "o", ms=7, mfc="none", color=colour(label))
    ax.plot([], [], "o", ms=7, mfc="none", color="#777777", label="first call (trace + compile + run)")
    ax.set_xscale("log")
    ax.set_yscale("log", base=2)  # ticks at whole KiB, MiB, GiB and powers of two between
    ax.yaxis.set_major_locator(LogLocator(base=2, numticks=8))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_text(v)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_size(int(v)) if v >= 1 else ""))
    ax.set_xlabel(f"{name} (log scale)")
    ax.set_ylabel("memory of one call, inputs included (log scale)")
    ax.set_title(f"{wl}: memory vs {name} ({subtitle})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return fig
