"""Terminal and Markdown tables: rows backend·mode, columns sizes, one table per workload and dtype."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from arraybench import bracket
from arraybench.results import FAILED
from arraybench.units import format_seconds

SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def listed(names: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


def row_label(r: Mapping[str, Any], devices: set[str], machines: frozenset[str] = frozenset()) -> str:
    label = f"{r['backend']}·{r['mode']}"
    label = f"{label}·{r.get('device', 'cpu')}" if len(devices) > 1 else label
    return f"{label} @{r.get('machine') or '?'}" if len(machines) > 1 else label


def speedups(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str | None], float]:
    """Per (record id, machine): NumPy's median over this one's, at the same workload, params,
    dtype and machine."""
    recs = list(records)
    base = {
        (r["workload"], _params_key(r), r["dtype"], r.get("machine")): r["median_s"]
        for r in recs
        if r["backend"] == "numpy" and r["mode"] == "eager" and r["status"] == "ok"
    }
    out = {}
    for r in recs:
        b = base.get((r["workload"], _params_key(r), r["dtype"], r.get("machine")))
        if b and r["status"] == "ok" and r.get("median_s"):
            out[(r["id"], r.get("machine"))] = b / r["median_s"]
    return out


def _params_key(r: Mapping[str, Any]) -> tuple:
    return tuple(sorted(r["params"].items()))


def size_sort_key(v: Any) -> tuple:
    """Numeric sizes in order, then named ones (user workloads may use strings)."""
    return (0, v, "") if isinstance(v, int | float) else (1, 0, str(v))


def size_text(v: float, estimate: bool = False) -> str:
    """1000 → '1000', 1000000 → '10⁶', 21000 → '2.1·10⁴'; an estimate keeps two significant digits."""
    if v < 1e4:
        return f"{float(f'{v:.2g}'):g}" if estimate else f"{v:g}"
    exp = math.floor(math.log10(v))
    mant = f"{v / 10**exp:.2g}"
    if mant == "10":
        exp, mant = exp + 1, "1"
    power = "10" + str(exp).translate(SUPERSCRIPT)
    return power if mant == "1" else f"{mant}·{power}"


def cell(r: Mapping[str, Any], speedup: float | None) -> str:
    status = r["status"]
    if status == "ok":
        iqr = 100 * r["iqr_s"] / r["median_s"] if r["median_s"] else 0.0
        time = format_seconds(r["median_s"])
        if r.get("harness_s"):
            time += f" (harness {format_seconds(r['harness_s'])})"
        parts = [f"{time} ±{iqr:.0f}%"]
        if speedup is not None:
            parts.append(f"{speedup:.2f}×")
        if r.get("first_call_s") is not None:
            parts.append(f"1st {format_seconds(r['first_call_s'])}")
        if r.get("bound"):
            parts.append(r["bound"])
        return " · ".join(parts) + (" (noisy)" if r.get("noisy") else "")
    if status == "wrong":
        err = r.get("rel_err")  # null in the file when the output held NaN or inf
        return f"WRONG (rel err {err:.1e})" if err is not None else "WRONG (rel err not finite)"
    return status.upper() if status in FAILED else status


def unavailable(records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Backend -> why it could not run here: said once, not in a row per case."""
    out: dict[str, str] = {}
    for r in records:
        if r["status"] == "unavailable":
            out.setdefault(r["backend"], r.get("error") or "unavailable")
    return dict(sorted(out.items()))


def unavailable_line(records: Iterable[Mapping[str, Any]]) -> str:
    gone = unavailable(records)
    return "Not available here: " + "; ".join(f"{b} ({why})" for b, why in gone.items()) if gone else ""


def tables(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """Per workload and dtype: (title, header, rows, notes). Notes carry every failure's reason, once
    per backend·mode; backends unavailable on this machine get no row (see `unavailable_line`)."""
    by_wl: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if r["status"] != "unavailable":
            by_wl[(r["workload"], r["dtype"])].append(r)
    sp = speedups(records)
    out = []
    for wl, dtype in sorted(by_wl):
        recs = by_wl[(wl, dtype)]
        devices = {r.get("device", "cpu") for r in recs}
        # Several machines (a cluster run, or files merged): their rows side by side.
        machines = frozenset(r["machine"] for r in recs if r.get("machine"))
        sizes = sorted({r.get("size") for r in recs}, key=size_sort_key)
        rows_by_label: dict[str, dict[Any, Mapping[str, Any]]] = defaultdict(dict)
        for r in recs:
            rows_by_label[row_label(r, devices, machines)][r.get("size")] = r
        header = ["backend·mode", *[f"size {s}" for s in sizes]]
        rows = []
        for label in sorted(rows_by_label):
            cells = rows_by_label[label]
            shown = [cell(cells[s], sp.get((cells[s]["id"], cells[s].get("machine")))) if s in cells else ""
                     for s in sizes]
            rows.append([label, *shown])
        best = []
        for s in sizes:
            ok = [r for r in recs if r.get("size") == s and r["status"] == "ok"]
            if ok:
                fastest = min(ok, key=lambda r: r["median_s"])
                named = f"{row_label(fastest, devices, machines)} ({format_seconds(fastest['median_s'])})"
                tied = [row_label(r, devices, machines) for r in sorted(ok, key=lambda r: r["median_s"])
                        if r is not fastest and bracket.order(fastest, r) != -1]
                best.append(f"size {s}: no fastest correct case beyond noise: {listed([named, *tied])} are "
                            "within noise of each other" if tied else f"size {s}: fastest correct is {named}")
        reasons: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
        for r in recs:
            if r["status"] != "ok" and r.get("error"):
                reasons[(row_label(r, devices, machines), r["status"], r["error"])].append(r.get("size"))
        notes = best + [
            f"{label}{_at_sizes(at, sizes)}: {status} — {error}"
            for (label, status, error), at in sorted(reasons.items())
        ]
        title = f"{wl} ({dtype}; median per call ± IQR · speedup vs numpy · first call · bound)"
        out.append((title, header, rows, notes))
    return out


def _at_sizes(at: list[Any], sizes: list[Any]) -> str:
    """Where a failure happened: nothing when at every size of the table, else the sizes."""
    if len(at) == len(sizes):
        return ""
    return " at size " + ", ".join(map(str, sorted(at, key=size_sort_key)))


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell, the header underlined."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


def render_text(records: Sequence[Mapping[str, Any]],
                draw: Callable[[list[str], list[list[str]]], str] | None = None) -> str:
    """The tables for a terminal; `draw` renders each (default: the padded text table)."""
    draw = draw or text_table
    blocks = [line] if (line := unavailable_line(records)) else []
    for title, header, rows, notes in tables(records):
        blocks.append("\n".join([title, draw(header, rows), *[f"  {n}" for n in notes]]))
    return "\n\n".join(blocks)


def render_markdown(records: Sequence[Mapping[str, Any]]) -> str:
    blocks = []
    for title, header, rows, notes in tables(records):
        esc = [[c.replace("|", "\\|") for c in row] for row in rows]
        md = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        md += ["| " + " | ".join(row) + " |" for row in esc]
        if notes:
            md += [""] + [f"- {n}" for n in notes]
        blocks.append("\n".join(md))
    return "\n\n".join(blocks)
