"""The CSV export of a report: one row per case."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from arraybench.report.model import ReportData

CSV_COLUMNS = (
    "machine", "workload", "size", "params", "backend", "mode", "device", "dtype", "threads",
    "status", "median_s", "iqr_s", "q25_s", "q75_s", "ci95_low_s", "ci95_high_s", "n_samples",
    "noisy", "first_call_s", "transfer_s", "speedup", "gflops", "gbs", "pct_flop_peak",
    "pct_bw_peak", "rel_err", "tolerance", "error", "id",
)


def csv_text(data: ReportData) -> str:
    """One row per case (the latest record of each case on each machine)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in sorted(data.records, key=lambda r: (r["machine"], r["workload"], r["id"])):
        ci = r.get("ci95_s") or [None, None]
        row: dict[str, Any] = {**r, "params": json.dumps(r.get("params", {}), sort_keys=True),
                               "ci95_low_s": ci[0], "ci95_high_s": ci[1]}
        w.writerow(["" if row.get(c) is None else row[c] for c in CSV_COLUMNS])
    return buf.getvalue()
