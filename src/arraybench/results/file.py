"""A results file: reading it (load_results: every problem a one-line UsageError, older schemas upgraded,
the run read as reading.py reads it), appending to it as a run measures (ResultsWriter, one line a
record, flushed and locked), and the run it holds (Results). The format and its schema history:
results/__init__.py; the upgrades: upgrades.py.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, overload

from arraybench.errors import UsageError
from arraybench.results.display import results_html, short_repr
from arraybench.results.header import HeaderSettings, MachineEnvironment, RunHeader
from arraybench.results.reading import Reading, read
from arraybench.results.record import FIELDS, FLAT_FIELDS, REQUIRED, STATUSES, CaseRecord
from arraybench.results.run_ids import run_id
from arraybench.results.upgrades import SCHEMA, upgrade, upgrade_header
from arraybench.stats import spells
from arraybench.stats.measurement import Replicated
from arraybench.stats.pooling import NO_PRIOR, VariancePrior
from arraybench.units import finite

# A case's status: it ran and was right; it failed (never ranked); or it could not run here.
# The fields a case line must have, and their types: what loading checks before it builds a record.
# The timings only where a case ran.
CASE_FIELDS: dict[str, type | tuple[type, ...]] = {
    name: dict if next(f for f in FIELDS if f.name == name).type.startswith("dict") else str for name in REQUIRED
}
TIMED_FIELDS: dict[str, type | tuple[type, ...]] = {"median_s": (int, float), "iqr_s": (int, float)}
# What a line holds besides a record's fields: its kind and, on a replicate line, the process's round.
LINE_FIELDS = ("type", "replicate")
KNOWN_KEYS = frozenset(f.name for f in FIELDS) | set(LINE_FIELDS)


@dataclass(frozen=True)
class Planned:
    """How many of its run's planned cases a results file (or a stored run) holds."""

    held: int
    planned: int

    @classmethod
    def of(cls, header: RunHeader, cases: int) -> Planned | None:
        """`cases` distinct cases of the run whose header is `header` against its `plan_size`; None
        when the header does not say (a file made by hand). Refinement adds cases only after every
        planned case has its record, so more cases than planned means all of them."""
        size = header.planned
        if size is None:
            return None
        return cls(min(cases, size), size)

    @property
    def complete(self) -> bool:
        return self.held >= self.planned

    def __str__(self) -> str:
        return f"{self.held} of {self.planned} planned cases"


class HeaderField:
    """Results.header: always a RunHeader, set from one or from a header's JSON (a dict: a test's,
    or comparison.environment_side's, during the transition to the typed header)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = f"_{name}"

    @overload
    def __get__(self, obj: None, owner: type) -> HeaderField: ...
    @overload
    def __get__(self, obj: object, owner: type) -> RunHeader: ...
    def __get__(self, obj: object | None, owner: type) -> RunHeader | HeaderField:
        if obj is None:  # no default: dataclasses asks the class, and is told there is none
            raise AttributeError(self.name)
        header: RunHeader = getattr(obj, self.name)
        return header

    def __set__(self, obj: object, value: RunHeader | dict[str, Any]) -> None:
        setattr(obj, self.name, value if isinstance(value, RunHeader) else RunHeader.from_json(value))


@dataclass
class Results:
    """One results file: its header (run settings and environment) and its case records."""

    header: HeaderField = HeaderField()
    records: list[CaseRecord] = field(default_factory=list)
    path: Path | None = None
    warnings: list[str] = field(default_factory=list)
    machine_lines: dict[str, MachineEnvironment] = field(default_factory=dict)
    # (round, record) of each replicate line: one process's result, read back only by --resume.
    replicate_lines: list[tuple[int, CaseRecord]] = field(default_factory=list)
    # How the run was read (reading.py): spells set aside, the priors over its cases, its pairing of
    # rivals by round; records' median_s and ci95_s were read with it.
    reading: Reading = field(default_factory=Reading)

    @property
    def prior(self) -> VariancePrior:
        """What the run's cases say about the spread between processes (pooling.py)."""
        return self.reading.prior

    @property
    def full_speed_s(self) -> float | None:
        """The host's reference kernel at the run's full speed (hostspeed.py); None: not measured."""
        return self.reading.full_speed_s

    @property
    def settings(self) -> HeaderSettings:
        return self.header.settings

    @property
    def environment(self) -> MachineEnvironment:
        return self.header.environment

    @property
    def machines(self) -> dict[str, MachineEnvironment]:
        """Each machine's environment: a cluster run's machine lines, else the header's one machine."""
        return self.machine_lines or {self._hostname: self.environment}

    @property
    def _hostname(self) -> str:
        name = self.environment.hostname
        return name if name is not None else "?"

    def host(self, r: CaseRecord | None = None) -> str:
        """The host name `r` ran on (a cluster run's record names it), or the run's own (its header's)."""
        return (r.machine if r is not None else None) or self._hostname

    def machine_key(self, r: CaseRecord | None = None) -> str:
        """The machine `r` ran on (None: the run's own), as the report, the site and the store tell
        machines apart: its environment's fingerprint (host, CPU and cores, GPUs), so two hosts both
        called `vm` with other hardware are two machines. A host the run recorded no environment
        of is known by its name alone."""
        host = self.host(r)
        env = self.machines.get(host)
        if env is None or not env.to_json():  # no line for it, or one that recorded nothing of it
            env = self.environment if host == self.host() else MachineEnvironment(hostname=host)
        return env.fingerprint

    def latest(self) -> dict[str, CaseRecord]:
        """The last record of each case id (a resumed run may have retried a case)."""
        return {r.id: r for r in self.records}

    def planned(self) -> Planned | None:
        """How many of the run's planned cases (the header's `plan_size`) have a record here (None:
        the header does not say). An interrupted run, one still running, a torn last line or a
        store that stopped mid-run holds fewer."""
        return Planned.of(self.header, len(self.latest()))

    def __repr__(self) -> str:
        return short_repr(self.header, list(self.latest().values()), self.path)

    def _repr_html_(self) -> str:
        """What Jupyter shows: a table per workload, a heatmap of the speedup over NumPy (display.py)."""
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
        rid = run_id(self.header)
        return pd.DataFrame(
            [{"run_id": rid, "machine": self.machine_key(r), **flat_record(r)} for r in self.latest().values()]
        )


def flat_record(r: CaseRecord) -> dict[str, Any]:
    """A record's scalar fields (record.FLAT_FIELDS), its raw samples, its parameters as `param.NAME`,
    and its backend's version and verified threads."""
    row: dict[str, Any] = {name: getattr(r, name) for name in FLAT_FIELDS}
    row["samples_s"] = list(r.samples_s)  # the raw samples, for statistics of one's own
    row.update({f"param.{k}": v for k, v in r.params.items()})
    info = r.backend_info or {}
    row["version"] = info.get("version")
    row["threads_verified"] = info.get("threads_verified")
    return row


class ResultsWriter:
    """Appends records to a results file, each flushed to disk the moment it exists.

    It holds an exclusive lock on the file while open, so a second run into the same output
    directory is refused instead of interleaving its cases; the kernel drops the lock when the
    process dies, however it dies.
    """

    def __init__(self, path: Path, header: RunHeader | dict[str, Any] | None) -> None:
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
            self._write({"type": "header", **(header.to_json() if isinstance(header, RunHeader) else header)})

    def _refuse(self, message: str) -> NoReturn:
        self._f.close()
        raise UsageError(message)

    def _write(self, obj: dict[str, Any]) -> None:
        self._f.write(json.dumps(finite(obj), default=str, allow_nan=False) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def append(self, record: CaseRecord) -> None:
        self._write({"type": "case", **record.to_json()})

    def append_replicate(self, record: CaseRecord, replicate: int) -> None:
        """One process's result for a case, kept so --resume need not measure it again."""
        self._write({"type": "replicate", "replicate": replicate, **record.to_json()})

    def add_machine(self, machine: str, environment: MachineEnvironment | dict[str, Any]) -> None:
        """Record the environment of a machine that cases of this run ran on (a cluster run)."""
        env = environment.to_json() if isinstance(environment, MachineEnvironment) else environment
        self._write({"type": "machine", "machine": machine, "environment": env})

    def close(self) -> None:
        self._f.close()


def being_written(path: Path) -> bool:
    """Whether a run is appending to the results file at `path` now: its ResultsWriter holds the lock."""
    try:
        with path.open("rb") as f:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # gone or unreadable: nobody writes it
        return False
    return False


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line that a kill left half-written, so appends start on a clean line."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def load_results(path: str | os.PathLike[str]) -> Results:
    """Read and validate a results file; every problem is a one-line UsageError."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.jsonl"
    objs, warnings = _read_objects(p)
    schema = _header_schema(p, objs[0])
    header = upgrade_header(objs[0], schema)
    records, machines, replicates, unknown = [], {}, [], set()
    for i, obj in enumerate(objs[1:], 2):
        kind = obj.get("type")
        if kind == "machine" and isinstance(obj.get("environment"), dict):
            machines[str(obj.get("machine"))] = MachineEnvironment.from_json(obj["environment"])
        elif kind == "replicate" and isinstance(obj.get("id"), str):
            unknown |= obj.keys() - KNOWN_KEYS
            replicates.append((int(obj.get("replicate") or 0), CaseRecord.from_json(upgrade(obj, schema))))
        elif kind == "case":
            problem = _case_problem(obj)
            if problem:
                raise UsageError(f"results file {str(p)!r} line {i} {problem}")
            unknown |= obj.keys() - KNOWN_KEYS
            records.append(CaseRecord.from_json(upgrade(obj, schema)))
    if unknown:
        warnings.append(f"{p}: ignored fields this arraybench does not know: {', '.join(sorted(unknown))}")
    records, reading = analysed(records, header)
    return Results(header=header, records=records, path=p, warnings=warnings, machine_lines=machines,
                   replicate_lines=replicates, reading=reading)


def _read_objects(p: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every whole line of the file as a JSON object, and a warning where a torn last line was dropped."""
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
    return objs, warnings


def _header_schema(p: Path, header: dict[str, Any]) -> int:
    """The schema the header declares, if this arraybench reads it."""
    if header.get("type") != "header" or "schema" not in header:
        raise UsageError(f"results file {str(p)!r} has no arraybench header on line 1")
    schema = header["schema"]
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        raise UsageError(f"results file {str(p)!r} has an invalid schema {schema!r}")
    if schema > SCHEMA:
        raise UsageError(
            f"results file {str(p)!r} has schema {schema}, newer than this arraybench reads ({SCHEMA}); "
            "upgrade arraybench"
        )
    return schema


def measured(record: CaseRecord, prior: VariancePrior = NO_PRIOR) -> Replicated | None:
    """A record's samples as Replicated (one Measurement per process), or None when it has none.

    A record without `replicates` (one process's record, or one built by hand) is one process.
    `prior` is the run's (Results.prior): what its other cases say about the spread between processes.
    """
    samples = record.samples_s
    if not samples:
        return None
    counts = [p.n_samples for p in record.replicates] or [len(samples)]
    loops = [p.loops or 1 for p in record.replicates] or [record.loops or 1]
    return Replicated.from_counts(samples, counts, loops, prior)


def analysed(records: list[CaseRecord], header: RunHeader) -> tuple[list[CaseRecord], Reading]:
    """The records as a run reads them, and how (reading.py): every measured case's `median_s` and
    `ci95_s` from its samples, the slow spells of the host set aside, with the run's prior
    (pooling.py); its rivals paired by round. `header` names the run (its pairing's key)."""
    full_speed = spells.nominal([x for r in {r.id: r for r in records}.values() for x in r.host_ref_s or ()])
    return read(records, run_id(header), full_speed)


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
