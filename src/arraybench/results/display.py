"""How a run shows itself: its one-line repr, its environments in one line, and the notebook's HTML table
per workload, coloured as a heatmap (Results.__repr__ and _repr_html_).

It draws on what the report shares (the speedups and the order of sizes: speedups.py; the label and
the palette: core/), all below the results file, so results.Results shows itself with them.
"""

from __future__ import annotations

import html
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from arraybench.core.case import label as case_label
from arraybench.core.palette import colour
from arraybench.results.header import PythonEnvironment, RunHeader
from arraybench.results.record import FAILED, CaseRecord
from arraybench.results.speedups import size_sort_key, speedups
from arraybench.units import format_seconds

# Speedups over NumPy eager beyond these saturate the heatmap's colour.
HEAT_RANGE = 10.0


def short_repr(header: RunHeader, records: Sequence[CaseRecord], path: Any) -> str:
    """`<Results run ID: 12 cases (10 ok, 2 wrong) of linreg, matmul in environments old, new; FILE>`,
    never the samples."""
    counts = Counter(r.status for r in records)
    statuses = ", ".join(f"{n} {s}" for s, n in counts.most_common())
    workloads = ", ".join(dict.fromkeys(r.workload for r in records)) or "no workload"
    where = f"; {path}" if path is not None else ""
    run = _or_unknown(header.run_id)
    envs = header.environments
    measured_in = f" in environments {', '.join(envs)}" if envs else ""
    return f"<Results run {run}: {len(records)} cases ({statuses or 'none'}) of {workloads}{measured_in}{where}>"


def described(envs: Mapping[str, PythonEnvironment]) -> str:
    """The run's environments (its header's) in one line, each with what it was made from: "old:
    jax==0.9.2; new: jax==0.10.2 with XLA_FLAGS=…"; '' for a run in one environment."""
    def one(name: str, info: PythonEnvironment) -> str:
        variables = " ".join(f"{k}={v}" for k, v in sorted(info.variables.items()))
        return f"{name}: {info.spec or '?'}" + (f" with {variables}" if variables else "")

    return "; ".join(one(name, info) for name, info in envs.items())


def _or_unknown(value: Any) -> Any:
    """A header's field, or '?' where it has none."""
    return "?" if value is None else value


def _heat(speedup: float) -> str:
    """Green for faster than NumPy eager, red for slower, white for the same (log scale)."""
    x = max(-1.0, min(1.0, math.log(speedup) / math.log(HEAT_RANGE)))
    fade = int(255 * (1 - abs(x) * 0.6))
    return f"rgb({fade},255,{fade})" if x > 0 else f"rgb(255,{fade},{fade})"


def results_html(header: RunHeader, records: Sequence[CaseRecord]) -> str:
    """Per workload and dtype: rows backend·mode, columns sizes, the median per call in each cell,
    its background the speedup over NumPy eager. WRONG and failed cells are never coloured as fast."""
    speedup = speedups(records)
    groups: dict[tuple[str, str], list[CaseRecord]] = defaultdict(list)
    for r in records:
        groups[(r.workload, r.dtype)].append(r)
    parts = [f"<p><b>arraybench run {html.escape(str(_or_unknown(header.run_id)))}</b> · "
             f"{len(records)} cases · started {html.escape(str(_or_unknown(header.started)))} · "
             "cell: median per call; colour: speedup over numpy·eager</p>"]
    if envs := header.environments:  # each row's [NAME] is one of these
        parts.append(f"<p>environments {html.escape(described(envs))}</p>")
    for (workload, dtype), recs in groups.items():
        sizes = sorted({r.size for r in recs}, key=size_sort_key)
        rows: dict[str, dict[Any, CaseRecord]] = defaultdict(dict)
        for r in recs:
            rows[case_label(r, device=r.device != "cpu")][r.size] = r
        head = "".join(f"<th>{html.escape(str(s))}</th>" for s in sizes)
        body = []
        for label in sorted(rows):
            cells = []
            for s in sizes:
                cell = rows[label].get(s)
                if cell is None:
                    cells.append("<td></td>")
                elif cell.status == "ok":
                    sp = speedup.get((cell.id, cell.machine))
                    style = f' style="background:{_heat(sp)}"' if sp else ""
                    extra = f" ({sp:.2f}×)" if sp else ""
                    cells.append(f"<td{style}>{format_seconds(cell.median_s)}{extra}</td>")
                else:
                    status = cell.status.upper() if cell.status in FAILED else cell.status
                    style = ' style="background:repeating-linear-gradient(45deg,#fdd,#fdd 4px,#fff 4px,#fff 8px)"' \
                        if cell.status in FAILED else ' style="color:#888"'
                    cells.append(f'<td{style} title="{html.escape(str(cell.error or ""))}">{status}</td>')
            # The backend·mode's colour, as in the report's plots and its winners map.
            swatch = f'<span style="display:inline-block;width:.8em;height:.8em;margin-right:.3em;' \
                     f'background:{colour(label)}"></span>'
            body.append(f"<tr><th>{swatch}{html.escape(label)}</th>{''.join(cells)}</tr>")
        parts.append(f"<table><caption>{html.escape(workload)} ({html.escape(dtype)})</caption>"
                     f"<tr><th>backend·mode \\ size</th>{head}</tr>{''.join(body)}</table>")
    return "\n".join(parts)
