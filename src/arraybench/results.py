"""Results: the versioned JSON Lines format on disk (a header line, then one line per case).

Schema history (keep old fixtures in tests/fixtures so the loader never silently breaks):
  1 — first version: header {"type": "header", "schema": 1, ...}; case lines {"type": "case", ...}.
  2 — each case is measured in several worker processes. Each process's result is written the
      moment it exists as a {"type": "replicate", "replicate": k, ...} line (read back only by
      --resume); the case line follows the last one and holds every process's samples in
      `samples_s`, one summary per process in `replicates` (its `n_samples` say which samples
      are its), `n_processes`, and statistics over processes (median_s, ci95_s: see
      measurement.Replicated). New per-process fields: minor_faults_per_call, half_width, stop.
      A schema-1 case line loads as one process (upgrade_1_to_2).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import secrets
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from arraybench.errors import UsageError
from arraybench.measurement import Replicated

SCHEMA = 2
# A case's status: it ran and was right; it failed (never ranked); or it could not run here.
FAILED = ("wrong", "error", "timeout", "crashed")
STATUSES = ("ok", *FAILED, "unavailable", "unsupported")
# What every reader may rely on in a case line (schema 1); the timings only where a case ran.
CASE_FIELDS: dict[str, type | tuple[type, ...]] = {
    "id": str, "workload": str, "params": dict, "backend": str, "mode": str, "dtype": str, "status": str,
}
TIMED_FIELDS: dict[str, type | tuple[type, ...]] = {"median_s": (int, float), "iqr_s": (int, float)}


@dataclass
class Results:
    """One results file: its header (run settings and environment) and its case records."""

    header: dict[str, Any]
    records: list[dict[str, Any]]
    path: Path | None = None
    warnings: list[str] = field(default_factory=list)
    machine_lines: dict[str, dict[str, Any]] = field(default_factory=dict)
    replicate_lines: list[dict[str, Any]] = field(default_factory=list)

    @property
    def settings(self) -> dict[str, Any]:
        return self.header.get("settings", {})

    @property
    def environment(self) -> dict[str, Any]:
        return self.header.get("environment", {})

    @property
    def machines(self) -> dict[str, dict[str, Any]]:
        """Each machine's environment: a cluster run's machine lines, else the header's one machine."""
        return self.machine_lines or {self.environment.get("hostname", "?"): self.environment}

    def latest(self) -> dict[str, dict[str, Any]]:
        """The last record of each case id (a resumed run may have retried a case)."""
        return {r["id"]: r for r in self.records}

    def __repr__(self) -> str:
        from arraybench.notebook import short_repr

        return short_repr(self.header, list(self.latest().values()), self.path)

    def _repr_html_(self) -> str:
        """What Jupyter shows: a table per workload, a heatmap of the speedup over NumPy."""
        from arraybench.notebook import results_html

        return results_html(self.header, list(self.latest().values()))

    def to_dataframe(self) -> Any:
        """A pandas DataFrame, one row per case (its latest record), in flat columns.

        Parameters become `param.NAME` columns and the backend's version and verified threads
        are lifted out of `backend_info`; each row names its run and machine and keeps its raw
        samples as a list.
        """
        try:
            import pandas as pd
        except ImportError:
            raise UsageError("to_dataframe needs pandas (pip install 'arraybench[report]')") from None
        from arraybench.environment import fingerprint
        from arraybench.run_ids import run_id

        rid, machine = run_id(self.header), fingerprint(self.environment)
        return pd.DataFrame(
            [{"run_id": rid, "machine": machine, **flat_record(r)} for r in self.latest().values()]
        )


def flat_record(r: dict[str, Any]) -> dict[str, Any]:
    """A record's scalar fields, its parameters as `param.NAME`, and its backend's version."""
    row = {k: v for k, v in r.items() if k != "type" and not isinstance(v, dict | list)}
    row["samples_s"] = r.get("samples_s", [])  # the raw samples, for statistics of one's own
    row.update({f"param.{k}": v for k, v in r.get("params", {}).items()})
    info = r.get("backend_info") or {}
    row["version"] = info.get("version")
    row["threads_verified"] = info.get("threads_verified")
    return row


class ResultsWriter:
    """Appends records to a results file, each flushed to disk the moment it exists.

    It holds an exclusive lock on the file while open, so a second run into the same output
    directory is refused instead of interleaving its cases; the kernel drops the lock when the
    process dies, however it dies.
    """

    def __init__(self, path: Path, header: dict[str, Any] | None) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = path.open("a", encoding="utf-8")
        try:
            fcntl.flock(self._f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._refuse(f"another arraybench run is writing {path}; wait for it or use another --output-dir")
        if path.stat().st_size > 0:
            if header is not None:
                self._refuse(f"{path} already exists; use --resume {path.parent} or another --output-dir")
            _drop_torn_tail(path)
        elif header is None:
            self._refuse(f"{path} is empty; nothing to resume")
        else:
            self._write({"type": "header", **header})

    def _refuse(self, message: str) -> NoReturn:
        self._f.close()
        raise UsageError(message)

    def _write(self, obj: dict[str, Any]) -> None:
        self._f.write(json.dumps(finite(obj), default=str, allow_nan=False) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def append(self, record: dict[str, Any]) -> None:
        self._write({"type": "case", **record})

    def append_replicate(self, record: dict[str, Any], replicate: int) -> None:
        """One process's result for a case, kept so --resume need not measure it again."""
        self._write({**record, "type": "replicate", "replicate": replicate})

    def add_machine(self, machine: str, environment: dict[str, Any]) -> None:
        """Record the environment of a machine that cases of this run ran on (a cluster run)."""
        self._write({"type": "machine", "machine": machine, "environment": environment})

    def close(self) -> None:
        self._f.close()


def finite(obj: Any) -> Any:
    """`obj` with NaN and infinities as None: JSON has no token for them, and readers expect null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    if hasattr(obj, "tolist"):  # NumPy scalars and arrays
        return finite(obj.tolist())
    return obj


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line that a kill left half-written, so appends start on a clean line."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def writable_dir(path: Path) -> Path:
    """`path`, created if needed and checked writable; a UsageError naming it otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as e:
        raise UsageError(f"cannot write to output directory {str(path)!r}: {e.strerror}") from None
    return path


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path`; when the block succeeds it replaces `path` in one step.

    A reader, or a crash, sees the old file or the new one. The temporary file sits in the same
    directory (a rename is atomic only within one file system) under a unique name, so two runs
    writing the same report cannot mix their bytes; it keeps `path`'s suffix so tools that
    choose a format by extension (matplotlib's savefig) still work.
    """
    tmp = path.with_name(f".{path.stem}.{secrets.token_hex(4)}.tmp{path.suffix}")
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself survives a power cut
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one step (see atomic_path)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: Path, text: str) -> None:
    """atomic_write_bytes for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def load_results(path: str | os.PathLike[str]) -> Results:
    """Read and validate a results file; every problem is a one-line UsageError."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.jsonl"
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"results file {str(p)!r} does not exist") from None
    except OSError as e:
        raise UsageError(f"cannot read results file {str(p)!r}: {e.strerror}") from None
    if not raw.strip():
        raise UsageError(f"results file {str(p)!r} is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"results file {str(p)!r} is not text (not a results file)") from None
    lines = text.split("\n")
    warnings: list[str] = []
    if lines[-1] == "":
        lines.pop()
    elif len(lines) == 1:
        raise UsageError(f"results file {str(p)!r} is truncated inside its header line: "
                         "nothing was measured; delete it and run again")
    else:
        # No final newline: the writer was killed mid-line. Never parse the fragment as data.
        lines.pop()
        warnings.append(f"{p}: dropped a torn last line (the run was interrupted while writing it)")
    objs = []
    for i, line in enumerate(lines, 1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            raise UsageError(f"results file {str(p)!r} line {i} is not JSON") from None
        if not isinstance(obj, dict):
            raise UsageError(f"results file {str(p)!r} line {i} is not a JSON object")
        objs.append(obj)
    header = objs[0]
    if header.get("type") != "header" or "schema" not in header:
        raise UsageError(f"results file {str(p)!r} has no arraybench header on line 1")
    schema = header["schema"]
    if not isinstance(schema, int) or schema < 1:
        raise UsageError(f"results file {str(p)!r} has an invalid schema {schema!r}")
    if schema > SCHEMA:
        raise UsageError(
            f"results file {str(p)!r} has schema {schema}, newer than this arraybench reads ({SCHEMA}); upgrade arraybench"
        )
    records = []
    machines = {}
    replicates = []
    for i, obj in enumerate(objs[1:], 2):
        if obj.get("type") == "machine" and isinstance(obj.get("environment"), dict):
            machines[str(obj.get("machine"))] = obj["environment"]
        if obj.get("type") == "replicate" and isinstance(obj.get("id"), str):
            replicates.append(obj)
        if obj.get("type") != "case":
            continue
        problem = _case_problem(obj)
        if problem:
            raise UsageError(f"results file {str(p)!r} line {i} {problem}")
        records.append(upgrade_1_to_2(obj) if schema == 1 else obj)
    return Results(header=header, records=records, path=p, warnings=warnings, machine_lines=machines,
                   replicate_lines=replicates)


def upgrade_1_to_2(record: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 case line as schema 2: its samples came from one process."""
    out = dict(record)
    samples = out.get("samples_s") or []
    out["n_processes"] = 1 if samples else 0
    out["replicates"] = [{"n_samples": len(samples), "loops": out.get("loops") or 1,
                          "median_s": out.get("median_s"), "first_call_s": out.get("first_call_s")}] if samples else []
    return out


def measured(record: dict[str, Any]) -> Replicated | None:
    """A record's samples as Replicated (one Measurement per process), or None when it has none.

    A record without `replicates` (a cluster run's, or one built by hand) is one process.
    """
    samples = record.get("samples_s") or []
    if not samples:
        return None
    reps = record.get("replicates") or [{"n_samples": len(samples), "loops": record.get("loops") or 1}]
    return Replicated.from_counts(samples, [r["n_samples"] for r in reps], [r.get("loops") or 1 for r in reps])


def _case_problem(obj: dict[str, Any]) -> str:
    """Why a case line breaks schema 1, or "" when it does not."""
    fields = CASE_FIELDS | (TIMED_FIELDS if obj.get("status") == "ok" else {})
    missing = [k for k in fields if k not in obj]
    if missing:
        return f"lacks {', '.join(missing)}"
    for key, kind in fields.items():
        # bool is an int to Python, never a time to us.
        if not isinstance(obj[key], kind) or isinstance(obj[key], bool):
            return f"has {key} {obj[key]!r} of the wrong type"
    if obj["status"] not in STATUSES:
        return f"has an unknown status {obj['status']!r}"
    return ""


def merge(results: Iterable[Results]) -> list[dict[str, Any]]:
    """All records of several files, each tagged with the machine it ran on."""
    out = []
    for res in results:
        machine = res.environment.get("hostname", "?")
        for r in res.records:
            out.append({**r, "machine": r.get("machine", machine)})
    return out
