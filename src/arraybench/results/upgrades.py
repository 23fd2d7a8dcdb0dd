"""The upgrades of a results file's lines, one schema version to the next (the schema history:
results/__init__.py). A line of an older file is upgraded as it is read, by the file and by the store;
never edit a released upgrade: add the next.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from arraybench.results.header import RunHeader
from arraybench.results.record import FIELDS, PROCESS_FIELDS, CaseRecord

SCHEMA = 3


def upgrade_1_to_2(record: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 case line as schema 2: its samples came from one process.

    A line that has `replicates` is newer already (a resumed run appends in the current schema),
    so every upgrade leaves such a line as it is.
    """
    if "replicates" in record:
        return record
    out = dict(record)
    samples = out.get("samples_s") or []
    out["n_processes"] = 1 if samples else 0
    out["replicates"] = [{"n_samples": len(samples), "loops": out.get("loops") or 1,
                          "median_s": out.get("median_s"), "first_call_s": out.get("first_call_s")}] if samples else []
    return out


def upgrade_2_to_3(record: dict[str, Any]) -> dict[str, Any]:
    """A schema-2 case or replicate line as schema 3: every field present, null where it did not apply.

    Schema 2 wrote only the fields that applied to a line (no `traceback` unless an error, no
    `cold_*` off the GPU, no `replicates` on a failed case) and `replicates` entries with the
    fields that process had.
    """
    out: dict[str, Any] = {f.name: record.get(f.name, dataclasses.MISSING) for f in FIELDS}
    defaults = {f.name: f.default for f in dataclasses.fields(CaseRecord)}
    out = {k: (defaults[k] if v is dataclasses.MISSING else v) for k, v in out.items()}
    out["samples_s"] = list(out["samples_s"] or [])
    out["replicates"] = [{f.name: p.get(f.name, None if f.name != "n_samples" else 0) for f in PROCESS_FIELDS}
                         for p in out["replicates"] or []]
    return out


# UPGRADES[v] takes a case or replicate line from schema v to v + 1; never edit a released one.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: upgrade_1_to_2, 2: upgrade_2_to_3}


def upgrade(line: dict[str, Any], schema: int) -> dict[str, Any]:
    """A line of a schema-`schema` file in the current schema: each version's upgrade in turn."""
    out = line
    for version in range(schema, SCHEMA):
        out = UPGRADES[version](out)
    return out


def header_1_to_2(header: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 header as schema 2: the same keys (schema 2 changed case lines only)."""
    return header


def header_2_to_3(header: dict[str, Any]) -> dict[str, Any]:
    """A schema-2 header as schema 3: the same keys (schema 3 typed the case lines; the fields a header
    has gained since, `git`, `environments`, the peaks, load at their declared default where it lacks
    them, so they needed no new version)."""
    return header


# HEADER_UPGRADES[v] takes a header from schema v to v + 1, as UPGRADES does a case line; never edit a
# released one. An upgrade that changes keys changes what an export of an older run writes back.
HEADER_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: header_1_to_2, 2: header_2_to_3}


def upgrade_header(header: dict[str, Any], schema: int) -> RunHeader:
    """The header of a schema-`schema` file, typed, in the current schema: each version's upgrade in turn."""
    out = header
    for version in range(schema, SCHEMA):
        out = HEADER_UPGRADES[version](out)
    return RunHeader.from_json(out)
