"""Terminal and Markdown tables: rows backend·mode, columns sizes, one table per workload and dtype."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from arraybench.measurement import fault_dominated
from arraybench.results import FAILED
from arraybench.runner import format_seconds


def row_label(r: dict[str, Any], devices: set[str], machines: frozenset[str] = frozenset()) -> str:
    label = f"{r['backend']}·{r['mode']}"
    label = f"{label}·{r.get('device', 'cpu')}" if len(devices) > 1 else label
    return f"{label} @{r.get('machine') or '?'}" if len(machines) > 1 else label


def speedups(records: Iterable[dict[str, Any]]) -> dict[tuple[str, str | None], float]:
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


def _params_key(r: dict[str, Any]) -> tuple:
    return tuple(sorted(r["params"].items()))


def size_sort_key(v: Any) -> tuple:
    """Numeric sizes in order, then named ones (user workloads may use strings)."""
    return (0, v, "") if isinstance(v, int | float) else (1, 0, str(v))


def cell(r: dict[str, Any], speedup: float | None) -> str:
    status = r["status"]
    if status == "ok":
        iqr = 100 * r["iqr_s"] / r["median_s"] if r["median_s"] else 0.0
        parts = [f"{format_seconds(r['median_s'])} ±{iqr:.0f}%"]
        if speedup is not None:
            parts.append(f"{speedup:.2f}×")
        if r.get("first_call_s") is not None:
            parts.append(f"1st {format_seconds(r['first_call_s'])}")
        flags = [f for f, on in (("noisy", r.get("noisy")), ("page faults", page_fault_bound(r))) if on]
        return " · ".join(parts) + (f" ({', '.join(flags)})" if flags else "")
    if status == "wrong":
        return f"WRONG (rel err {r.get('rel_err', float('nan')):.1e})"
    return status.upper() if status in FAILED else status


def page_fault_bound(r: dict[str, Any]) -> bool:
    """Whether page faults take a large share of this case's time: it then times the kernel's
    memory mapping as much as the framework (see measurement.fault_dominated)."""
    return r["status"] == "ok" and fault_dominated(r.get("minor_faults_per_call"), r.get("median_s"))


def tables(records: list[dict[str, Any]]) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """Per workload and dtype: (title, header, rows, notes). Notes carry every failure's reason."""
    by_wl: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_wl[(r["workload"], r["dtype"])].append(r)
    sp = speedups(records)
    out = []
    for wl, dtype in sorted(by_wl):
        recs = by_wl[(wl, dtype)]
        devices = {r.get("device", "cpu") for r in recs}
        # Several machines (a cluster run, or files merged): their rows side by side.
        machines = frozenset(r["machine"] for r in recs if r.get("machine"))
        sizes = sorted({r.get("size") for r in recs}, key=size_sort_key)
        rows_by_label: dict[str, dict[Any, dict[str, Any]]] = defaultdict(dict)
        for r in recs:
            rows_by_label[row_label(r, devices, machines)][r.get("size")] = r
        header = ["backend·mode", *[f"size {s}" for s in sizes]]
        rows = []
        for label in sorted(rows_by_label):
            cells = rows_by_label[label]
            rows.append([label, *[cell(cells[s], sp.get((cells[s]["id"], cells[s].get("machine")))) if s in cells else "" for s in sizes]])
        best = []
        for s in sizes:
            ok = [r for r in recs if r.get("size") == s and r["status"] == "ok"]
            if ok:
                fastest = min(ok, key=lambda r: r["median_s"])
                best.append(f"size {s}: fastest correct is {row_label(fastest, devices, machines)} ({format_seconds(fastest['median_s'])})")
        notes = best + sorted(
            {f"{row_label(r, devices, machines)} at size {r.get('size')}: {r['status']} — {r['error']}"
             for r in recs if r["status"] not in ("ok",) and r.get("error")}
        )
        title = f"{wl} ({dtype}; median per call ± IQR · speedup vs numpy · first call)"
        out.append((title, header, rows, notes))
    return out


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell, the header underlined."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


def render_text(records: list[dict[str, Any]]) -> str:
    blocks = []
    for title, header, rows, notes in tables(records):
        blocks.append("\n".join([title, text_table(header, rows), *[f"  {n}" for n in notes]]))
    return "\n\n".join(blocks)


def render_markdown(records: list[dict[str, Any]]) -> str:
    blocks = []
    for title, header, rows, notes in tables(records):
        esc = [[c.replace("|", "\\|") for c in row] for row in rows]
        md = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        md += ["| " + " | ".join(row) + " |" for row in esc]
        if notes:
            md += [""] + [f"- {n}" for n in notes]
        blocks.append("\n".join(md))
    return "\n\n".join(blocks)
