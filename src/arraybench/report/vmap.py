"""The vmap section of a report: per framework, the Python loop over examples, the framework's
vectorising map and the hand-batched form of one per-example function, side by side."""

from __future__ import annotations

import html
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arraybench.report.data import ReportData, status_word
from arraybench.report.view import CaseView, timed
from arraybench.stats import bracket
from arraybench.units import format_seconds
from arraybench.workloads import WORKLOADS
from arraybench.workloads.vmap_family import BATCHED, FORMS, HOW, LOOP, VMAP

EXPLANATION = (
    "One per-example function, written once per framework, run three ways over a batch of b examples: "
    "**loop** calls it in a Python loop and stacks the results; **vmap** is the framework's vectorising "
    "map of the same function (jax.vmap, torch.func.vmap, tf.vectorized_map, a Numba prange); "
    "**batched** is the batched form an expert writes by hand. jit compiles the per-example function "
    "(loop) or the whole map. All three forms are checked against one NumPy float64 reference. "
    "vmap *beats* the loop at a batch size only where their 95 % intervals separate; otherwise the two "
    "are *within noise*. vmap / batched is the map's time over the hand-written form's: 1× is as good "
    "as writing it by hand."
)
BEATS, LOSES, NOISE = "beats", "loses", "within noise"
# One colour per form in every panel (Paul Tol's high-contrast scheme), a style per form too.
FORM_STYLE = {LOOP: ("#bb5566", "o:"), VMAP: ("#004488", "s-"), BATCHED: ("#ddaa33", "^--")}


@dataclass(frozen=True)
class Series:
    """One family on one backend·mode (dtype, fixed parameters): its forms' records by batch size."""

    family: str
    label: str
    dtype: str
    fixed: tuple[tuple[str, Any], ...]
    cells: Mapping[int, Mapping[str, CaseView]]  # b -> form -> record (any status)

    @property
    def sizes(self) -> list[int]:
        return sorted(self.cells)

    def ok(self, b: int, form: str) -> CaseView | None:
        r = self.cells[b].get(form)
        return r if r is not None and r.status == "ok" and r.median_s else None

    def verdict(self, b: int) -> str | None:
        """Whether vmap beats the loop at `b` by the intervals; None where either has no correct time."""
        loop, vmap = self.ok(b, LOOP), self.ok(b, VMAP)
        if loop is None or vmap is None:
            return None
        return compare(vmap, loop)

    def ratio(self, b: int, form: str, other: str) -> float | None:
        """`form`'s median over `other`'s at `b`; None where either has no correct time."""
        a, z = self.ok(b, form), self.ok(b, other)
        return timed(a) / timed(z) if a and z else None

    @property
    def not_run(self) -> dict[str, str]:
        """Why a form did not run (its `cannot` reason or the framework's absence), by form."""
        return {form: r.error or r.status for cell in self.cells.values()
                for form, r in cell.items() if r.status in ("unsupported", "unavailable")}


def compare(a: CaseView, b: CaseView) -> str:
    """BEATS where `a` is faster than `b` beyond noise, LOSES where slower, else NOISE (bracket.order:
    the test behind every claim of the report)."""
    return {-1: BEATS, 1: LOSES, 0: NOISE}[bracket.order(a, b)]


def family_of(r: CaseView) -> tuple[str, str] | None:
    wl = WORKLOADS.get(r.workload)
    return wl.family if wl is not None else None


def series(data: ReportData) -> list[Series]:
    """Every family·backend·mode the data holds, in a stable order (family, fixed params, dtype, label)."""
    groups: dict[tuple, dict[int, dict[str, CaseView]]] = defaultdict(lambda: defaultdict(dict))
    for r in data.records:
        fam = family_of(r)
        if fam is None or r.status == "unavailable":  # a missing framework is one line atop the report
            continue
        fixed = tuple(sorted((k, v) for k, v in r.params.items() if k != "b"))
        groups[(fam[0], fixed, r.dtype, data.label(r))][int(r.params["b"])][fam[1]] = r
    order = {lab: i for i, lab in enumerate(data.labels())}
    keys = sorted(groups, key=lambda k: (k[0], str(k[1]), k[2], order.get(k[3], len(order)), k[3]))
    return [Series(k[0], k[3], k[2], k[1], {b: dict(c) for b, c in groups[k].items()}) for k in keys]


def _sizes_text(sizes: Sequence[int]) -> str:
    return ", ".join(f"b = {b}" for b in sizes)


def summary(s: Series) -> str:
    """In words: from which batch size vmap beats the loop, and how close it comes to the hand-batched form."""
    if VMAP in s.not_run and not any(s.ok(b, VMAP) for b in s.sizes):
        return f"no vmap form: {s.not_run[VMAP]}"
    verdicts = [(b, v) for b in s.sizes if (v := s.verdict(b)) is not None]
    if not verdicts:
        return "no batch size has a correct time for both the loop and vmap, so they are not compared"
    start = len(verdicts)
    while start > 0 and verdicts[start - 1][1] == BEATS:
        start -= 1
    if start == 0 and len(verdicts) == 1:
        text = f"vmap beats the loop at b = {verdicts[0][0]}, the one batch size measured"
    elif start == 0:
        text = f"vmap beats the loop at every measured batch size (from b = {verdicts[0][0]})"
    elif start < len(verdicts):
        below_b, below = verdicts[start - 1]
        text = (f"vmap beats the loop from b = {verdicts[start][0]} on (at b = {below_b}, the size measured "
                f"below it: {'the loop is faster' if below == LOSES else 'within noise'})")
    else:
        beats = [b for b, v in verdicts if v == BEATS]
        noise = [b for b, v in verdicts if v == NOISE]
        loses = [b for b, v in verdicts if v == LOSES]
        parts = ([f"within noise at {_sizes_text(noise)}"] if noise else []) + \
                ([f"the loop is faster at {_sizes_text(loses)}"] if loses else [])
        text = (f"vmap beats the loop at {_sizes_text(beats)} only: " if beats else "vmap never beats the loop: ") \
            + "; ".join(parts)
    close = [b for b in s.sizes if s.ratio(b, VMAP, BATCHED) is not None]
    if close:
        b = close[-1]
        ratio = s.ratio(b, VMAP, BATCHED)
        vmap, batched = s.ok(b, VMAP), s.ok(b, BATCHED)
        assert ratio is not None and vmap is not None and batched is not None
        tied = " (within noise of it)" if compare(vmap, batched) == NOISE else ""
        text += f"; at b = {b} vmap takes {ratio:.2g}× the hand-batched form's time{tied}"
    elif BATCHED in s.not_run:
        text += f"; no hand-batched form: {s.not_run[BATCHED]}"
    return text


HEADER = ["backend·mode", "b", "loop", "vmap", "batched", "vmap vs loop", "vmap / batched"]


def _cell(s: Series, b: int, form: str) -> str:
    r = s.cells[b].get(form)
    if r is None:
        return ""
    if r.status != "ok" or not r.median_s:
        return status_word(r) or r.status
    return format_seconds(r.median_s)


def _versus(s: Series, b: int) -> str:
    verdict = s.verdict(b)
    if verdict is None:
        return ""
    ratio = s.ratio(b, LOOP, VMAP)
    assert ratio is not None
    if verdict == BEATS:
        return f"beats it, {ratio:.2g}× faster"
    if verdict == LOSES:
        return f"loop faster, {1 / ratio:.2g}×"
    return NOISE


def rows(s: Series) -> list[list[str]]:
    """One table row per batch size: the three forms' medians, vmap against the loop and the hand-batched form."""
    out = []
    for b in s.sizes:
        ratio = s.ratio(b, VMAP, BATCHED)
        out.append([s.label, str(b), *(_cell(s, b, form) for form in FORMS), _versus(s, b),
                    f"{ratio:.2g}×" if ratio is not None else ""])
    return out


def _title(s: Series) -> str:
    wl = next(w for w in WORKLOADS.values() if w.family == (s.family, LOOP))
    what = wl.description.removesuffix(f": {HOW[LOOP]}")
    params = ", ".join(f"{k} = {v}" for k, v in s.fixed)
    return f"{s.family}: {what} ({params}{', ' if params else ''}{s.dtype})"


def _by_title(data: ReportData) -> dict[str, list[Series]]:
    out: dict[str, list[Series]] = defaultdict(list)
    for s in series(data):
        out[_title(s)].append(s)
    return dict(out)


def markdown(data: ReportData) -> list[str]:
    """Lines of report.md's vmap section; none where the run has no vmap family case."""
    groups = _by_title(data)
    if not groups:
        return []
    md = ["## Loop, vmap or batched by hand", "", EXPLANATION, ""]
    for title, group in groups.items():
        md += [f"### {title}", ""]
        md += [f"- **{s.label}**: {summary(s)}." for s in group]
        md += ["", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        md += ["| " + " | ".join(row) + " |" for s in group for row in rows(s)]
        md += [""]
    return md


def _emphasis(text: str) -> str:
    """Markdown's **bold** and *italic* as HTML, in text already escaped."""
    return re.sub(r"\*(.+?)\*", r"<i>\1</i>", re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text))


def html_section(data: ReportData) -> str:
    """The HTML report's vmap section; "" where the run has no vmap family case."""
    groups = _by_title(data)
    if not groups:
        return ""
    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in HEADER)
    parts = ['<section id="vmap"><h2>Loop, vmap or batched by hand</h2>',
             f"<p>{_emphasis(esc(EXPLANATION))}</p>"]
    for title, group in groups.items():
        items = "".join(f"<li><b>{esc(s.label)}</b>: {esc(summary(s))}.</li>" for s in group)
        body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                       for s in group for row in rows(s))
        parts.append(f"<h3>{esc(title)}</h3><ul>{items}</ul>"
                     f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    return "".join(parts) + "</section>"


def plots(data: ReportData, save: Callable[[str, str, str, Any], None]) -> None:
    """Draw the section's plots with `save(name, title, caption, figure)` (plots.write_plots's):
    per family, time against batch size, one panel per backend·mode with its three forms."""
    groups = _by_title(data)
    if not groups:
        return
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    per_family: dict[str, int] = defaultdict(int)
    for group in groups.values():
        per_family[group[0].family] += 1
    for title, group in groups.items():
        drawn = [s for s in group if any(s.ok(b, f) for b in s.sizes for f in FORMS)]
        if not drawn:
            continue
        cols = min(4, len(drawn))
        nrows = -(-len(drawn) // cols)
        fig = Figure(figsize=(3.2 * cols + 0.6, 2.8 * nrows + 0.8), layout="constrained")
        axes = fig.subplots(nrows, cols, sharex=True, sharey=True, squeeze=False).ravel()
        for ax, s in zip(axes, drawn, strict=False):
            for form in FORMS:
                pts = [(b, r) for b in s.sizes if (r := s.ok(b, form)) is not None]
                if not pts:
                    continue
                ys = [r.median_s for _, r in pts]
                # The interval need not hold the median (it is the pooled one, the median weighs each
                # process alike): the bars are drawn from the median outward, no shorter than nothing.
                lo = [max(0.0, timed(r) - (r.ci_low_s or timed(r))) for _, r in pts]
                hi = [max(0.0, (r.ci_high_s or timed(r)) - timed(r)) for _, r in pts]
                colour, fmt = FORM_STYLE[form]
                ax.errorbar([b for b, _ in pts], ys, yerr=[lo, hi], fmt=fmt, ms=4, capsize=2, color=colour,
                            label=form)
            ax.set_title(s.label, fontsize=10)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_seconds(v) if v > 0 else ""))
        sizes = [b for s in drawn for b in s.sizes]
        axes[0].set_xlim(min(sizes) / 1.5, max(sizes) * 1.5)  # shared; one size alone would leave no width
        for ax in axes[len(drawn):]:
            ax.set_visible(False)
        for ax in axes[-cols:]:
            ax.set_xlabel("batch size b (log scale)")
        for ax in axes[::cols]:
            ax.set_ylabel("median time per call")
        legend = {label: handle for ax in axes[:len(drawn)] for handle, label in zip(*ax.get_legend_handles_labels(),
                                                                                   strict=True)}
        fig.legend([legend[f] for f in FORMS if f in legend], [f for f in FORMS if f in legend],
                   loc="outside lower center", ncols=3)
        fig.suptitle(title, fontsize=11)
        family = group[0].family
        name = f"vmap-{family}" if per_family[family] == 1 else \
            f"vmap-{family}-{group[0].dtype}-" + "-".join(f"{k}{v}" for k, v in group[0].fixed)
        save(name, f"{family}: loop, vmap and batched by hand",
             "Median time per call against the batch size b, log-log, one panel per backend·mode: the Python "
             "loop over examples, the framework's vectorising map of the same per-example function, and the "
             "batched form written by hand (error bars: 95 % intervals). Where the vmap line falls below the "
             "loop's with the bars apart, vmap beats the loop; the gap to the batched line is what a "
             "hand-written batched form still gains.", fig)
