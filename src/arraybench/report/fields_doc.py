"""Writes the generated parts of docs/results-format.md from the field registries (record, report view, CSV).

`python -m arraybench.report.fields_doc docs/results-format.md` rewrites them in place; with
`--check` it only says whether the file is up to date (exit 1 when stale), which a test runs.
Each generated part sits between `<!-- generated: NAME -->` and `<!-- end generated -->`; the
prose around them is written by hand and kept.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from arraybench.report.files import CSV_FIELDS, PAIRS, csv_columns
from arraybench.report.view import DERIVED_FIELDS
from arraybench.results.record import CASE, FIELDS, PROCESS, PROCESS_FIELDS, FieldInfo

WHERE = {CASE: "case", PROCESS: "replicate", "both": "both"}
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n).*?(<!-- end generated -->)", re.S)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(fields: Sequence[FieldInfo], lines: bool) -> str:
    head = ["field", "type", "unit", *(["lines"] if lines else []), "meaning"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in fields:
        cells = [f"`{f.name}`", f"`{_cell(f.type)}`", f.unit, *([WHERE[f.scope]] if lines else []), _cell(f.meaning)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def _csv_table() -> str:
    known = {f.name: f for f in (*FIELDS, *DERIVED_FIELDS)}
    rows = ["| column | unit | meaning |", "|---|---|---|"]
    for name in CSV_FIELDS:
        f = known[name]
        if name in PAIRS:
            for end, column in zip(("lower", "upper"), (c for c in csv_columns() if c.startswith(name[:-2] + "_")),
                                   strict=True):
                rows.append(f"| `{column}` | {f.unit} | the {end} end of `{name}` |")
            continue
        meaning = f.meaning + (" (as JSON)" if name == "params" else "")
        where = "" if name in {g.name for g in FIELDS} else " (derived by the report, never stored)"
        rows.append(f"| `{name}` | {f.unit} | {_cell(meaning)}{where} |")
    return "\n".join(rows) + "\n"


GENERATORS = {
    "case-fields": lambda: _table(FIELDS, lines=True),
    "process-fields": lambda: _table(PROCESS_FIELDS, lines=False),
    "csv-columns": _csv_table,
}


def render(text: str) -> str:
    """`text` with each generated block rewritten from the registries."""
    def block(m: re.Match[str]) -> str:
        return m.group(1) + GENERATORS[m.group("name")]() + m.group(3)

    return BLOCK.sub(block, text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m arraybench.report.fields_doc")
    p.add_argument("path", type=Path, help="docs/results-format.md")
    p.add_argument("--check", action="store_true", help="only say whether it is up to date")
    args = p.parse_args(argv)
    text = args.path.read_text(encoding="utf-8")
    new = render(text)
    if args.check:
        if new != text:
            print(f"{args.path} is stale: run python -m arraybench.report.fields_doc {args.path}", file=sys.stderr)
            return 1
        return 0
    args.path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
