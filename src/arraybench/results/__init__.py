"""Results: the typed record (`record`) and run header (`header`); the results file (`file`: reading it,
appending to it, the run it holds; `upgrades`: its older schemas; `atomic`: files written whole); how a
run is read (`reading`; `speedups`: its records beside NumPy's); how it shows itself (`display`); run
ids (`run_ids`).

The format on disk is versioned JSON Lines (a header line, then one line per case).

Schema history (keep old fixtures in tests/fixtures so the loader never silently breaks):
  1 — first version: header {"type": "header", "schema": 1, ...}; case lines {"type": "case", ...}.
  2 — each case is measured in several worker processes. Each process's result is written the
      moment it exists as a {"type": "replicate", "replicate": k, ...} line (read back only by
      --resume); the case line follows the last one and holds every process's samples in
      `samples_s`, one summary per process in `replicates` (its `n_samples` say which samples
      are its), `n_processes`, and statistics over processes (median_s, ci95_s: see
      measurement.Replicated). New per-process fields: minor_faults_per_call, half_width, stop.
      A schema-1 case line loads as one process (upgrade_1_to_2).
  3 — one typed record (record.CaseRecord, its fields declared in one registry): every case and
      replicate line holds every field of the registry, `null` where it does not apply, and each
      `replicates` entry every field of record.ProcessRecord. New per-process fields: wall_s
      (summed on the case line), inputs_s, reference_s, timer_s, check_s. A schema-2 line loads
      with its missing fields null (upgrade_2_to_3).
      Fields added since within schema 3 load with their declared default where a line lacks
      them, which is true of every older line: `n_devices` (1: before device counts, every case
      ran on one device); the memory figures `memory_bytes`, `first_call_memory_bytes`,
      `memory_before_bytes`, `reserved_memory_bytes` and `memory_method` (null: not measured; an
      older line's `peak_memory_bytes` is a GPU's, its largest over processes), so they need no
      new version.
      The header (header.RunHeader, its parts typed and its fields declared in one registry) is
      read through the same chain (upgrade_header): no version so far changed a header's keys, so
      its upgrades are the identity and an older header loads as written, a declared field it lacks
      at its default. It is written back as read, key for key.
"""

from arraybench.results.atomic import atomic_path, atomic_write_bytes, atomic_write_text, writable_dir
from arraybench.results.file import (
    CASE_FIELDS,
    KNOWN_KEYS,
    LINE_FIELDS,
    TIMED_FIELDS,
    HeaderField,
    Planned,
    Results,
    ResultsWriter,
    analysed,
    being_written,
    flat_record,
    load_results,
    measured,
)
from arraybench.results.upgrades import (
    HEADER_UPGRADES,
    SCHEMA,
    UPGRADES,
    header_1_to_2,
    header_2_to_3,
    upgrade,
    upgrade_1_to_2,
    upgrade_2_to_3,
    upgrade_header,
)
from arraybench.units import finite

__all__ = [
    "CASE_FIELDS",
    "HEADER_UPGRADES",
    "KNOWN_KEYS",
    "LINE_FIELDS",
    "SCHEMA",
    "TIMED_FIELDS",
    "UPGRADES",
    "HeaderField",
    "Planned",
    "Results",
    "ResultsWriter",
    "analysed",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "being_written",
    "finite",
    "flat_record",
    "header_1_to_2",
    "header_2_to_3",
    "load_results",
    "measured",
    "upgrade",
    "upgrade_1_to_2",
    "upgrade_2_to_3",
    "upgrade_header",
    "writable_dir",
]
