"""A run's records beside each other: each one's speedup over NumPy eager at its point, and the order its
sizes are shown in. What every table, plot and map of the report and the notebook's display read off the
records, kept here, below them all."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from arraybench.results.record import CaseRecord


def speedups(records: Iterable[CaseRecord]) -> dict[tuple[str, str | None], float]:
    """Per (record id, machine): NumPy's median over this one's, at the same workload, params,
    dtype, machine and Python environment."""
    recs = list(records)
    base = {
        (r.workload, _params_key(r), r.dtype, r.machine, r.env): r.median_s
        for r in recs
        if r.backend == "numpy" and r.mode == "eager" and r.status == "ok"
    }
    out = {}
    for r in recs:
        b = base.get((r.workload, _params_key(r), r.dtype, r.machine, r.env))
        if b and r.status == "ok" and r.median_s:
            out[(r.id, r.machine)] = b / r.median_s
    return out


def _params_key(r: CaseRecord) -> tuple:
    return tuple(sorted(r.params.items()))


def size_sort_key(v: Any) -> tuple:
    """Numeric sizes in order, then named ones (user workloads may use strings)."""
    return (0, v, "") if isinstance(v, int | float) else (1, 0, str(v))
