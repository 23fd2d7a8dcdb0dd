"""Output formats: what list, env, history, show and compare print, as text, Markdown, JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from arraybench.units import finite

FORMATS = ("text", "markdown", "json", "csv")


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell, the header underlined."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


def json_text(obj: Any) -> str:
    """Strict JSON (NaN and infinities become null), indented, with a final newline."""
    return json.dumps(finite(obj), indent=2, default=str, allow_nan=False) + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list | tuple):
        return json.dumps(finite(value), default=str, allow_nan=False)
    return str(value)


def columns(rows: list[dict[str, Any]]) -> list[str]:
    """Every key of every row, in order of first appearance."""
    return list(dict.fromkeys(k for r in rows for k in r))


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """One Markdown table, every `|` in a cell escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows])


def csv_table(header: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def render_rows(rows: list[dict[str, Any]], fmt: str) -> str:
    """One table, a row per dict, in `fmt`; JSON keeps the values' own types."""
    if fmt == "json":
        return json_text(rows)
    header = columns(rows)
    cells = [[_cell(r.get(k)) for k in header] for r in rows]
    if fmt == "csv":
        return csv_table(header, cells)
    if fmt == "markdown":
        return markdown_table(header, cells) + "\n"
    return text_table(header, cells) + "\n"

