"""The CSV export of a report: one row per case."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from arraybench.report.data import ReportData
from arraybench.report.view import FIGURES, CaseView
from arraybench.results.record import FIELDS

# The columns of results.csv, in order: each a field of the record or of its report view (their
# unit and meaning are in those registries, and docs/results-format.md lists them from there). An
# interval field `X_s` (a pair) becomes two columns, `X_low_s` and `X_high_s`; `params` is JSON.
# Every derived figure (view.FIGURES) is a column.
CSV_FIELDS = (
    "machine", "workload", "size", "params", "backend", "mode", "device", "dtype", "threads",
    "status", "median_s", "iqr_s", "q25_s", "q75_s", "ci95_s", "n_samples",
    "noisy", "first_call_s", "transfer_s", *FIGURES, "memory_bytes", "first_call_memory_bytes", "input_bytes",
    "peak_memory_bytes", "reserved_memory_bytes", "rel_err", "tolerance", "error", "id",
)
PAIRS = {name for name in CSV_FIELDS if any(f.name == name and f.type.startswith("tuple[float, float]")
                                            for f in FIELDS)}


def csv_columns() -> tuple[str, ...]:
    """The header row: CSV_FIELDS with each pair split in two."""
    return tuple(c for name in CSV_FIELDS
                 for c in ((f"{name[:-2]}_low_s", f"{name[:-2]}_high_s") if name in PAIRS else (name,)))


def csv_cells(view: CaseView) -> list[Any]:
    """One row's values, in csv_columns order ("" for none)."""
    row: list[Any] = []
    for name in CSV_FIELDS:
        value = getattr(view, name)
        if name in PAIRS:
            row += list(value) if value else [None, None]
        else:
            row.append(json.dumps(value, sort_keys=True) if name == "params" else value)
    return ["" if v is None else v for v in row]


def csv_text(data: ReportData) -> str:
    """One row per case (the latest record of each case on each machine)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(csv_columns())
    for r in sorted(data.records, key=lambda r: (r.machine, r.workload, r.id)):
        w.writerow(csv_cells(r))
    return buf.getvalue()
