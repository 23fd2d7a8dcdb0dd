"""Store: every run kept in a local SQLite database, for history, show, export, import and compare."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arraybench import environment
from arraybench.errors import UsageError
from arraybench.record import CaseRecord
from arraybench.results import (
    FAILED,
    Results,
    analysed,
    finite,
    load_results,
    upgrade,
)
from arraybench.results import SCHEMA as RESULTS_SCHEMA
from arraybench.run_ids import run_id

DEFAULT_PATH = Path(".arraybench") / "results.db"
# Two runs writing at once take turns; a writer waits this long for the other's insert.
BUSY_TIMEOUT_S = 60.0

# MIGRATIONS[i] takes a store from schema version i to i + 1 (PRAGMA user_version). Never edit
# one that has been released: append the next. tests/fixtures keeps a store of every older
# version, so opening an old store is always tested.
MIGRATIONS: list[tuple[str, ...]] = [
    # 1: runs (the results-file header, split into the parts people query) and their records,
    #    each record the JSON object the results file holds, raw samples included.
    (
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            started TEXT NOT NULL,
            machine TEXT NOT NULL,
            arraybench_version TEXT,
            environment TEXT NOT NULL,
            settings TEXT NOT NULL,
            header TEXT NOT NULL
        )""",
        """CREATE TABLE cases (
            run_id TEXT NOT NULL REFERENCES runs(id),
            case_id TEXT NOT NULL,
            record TEXT NOT NULL
        )""",
    ),
    # 2: backend, mode and status as columns, so `history` (and a user's SQL) need not parse
    #    every record's JSON; existing rows are filled from their records.
    (
        "ALTER TABLE cases ADD COLUMN backend TEXT",
        "ALTER TABLE cases ADD COLUMN mode TEXT",
        "ALTER TABLE cases ADD COLUMN status TEXT",
        """UPDATE cases SET backend = json_extract(record, '$.backend'),
                            mode = json_extract(record, '$.mode'),
                            status = json_extract(record, '$.status')""",
        "CREATE INDEX cases_run ON cases(run_id)",
    ),
]
SCHEMA = len(MIGRATIONS)


@dataclass(frozen=True)
class RunSummary:
    """One line of `arraybench history`."""

    id: str
    started: str
    machine: str
    backends: tuple[str, ...]
    cases: int
    failed: int


class Store:
    """One SQLite results database, migrated to the current schema when opened.

    WAL journal and a busy timeout let several runs write into one store at once; each record
    is its own transaction, so a crash loses nothing that was already stored.
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise UsageError(f"no results store at {str(self.path)!r} "
                             "(arraybench run creates it; --store names another)")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._open()
        except sqlite3.DatabaseError as e:
            raise UsageError(f"cannot use results store {str(self.path)!r}: {e}") from None
        except OSError as e:
            raise UsageError(f"cannot create results store {str(self.path)!r}: {e.strerror}") from None

    def _open(self) -> None:
        """Connect, switch to WAL and migrate. Two processes creating one store at the same moment
        can see "database is locked" at once from the switch to WAL (SQLite does not call the busy
        handler there: 8 of 120 simultaneous openings failed so), so that is retried until the
        busy timeout has passed."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        delay = 0.01
        while True:
            # Autocommit: transactions are opened explicitly (BEGIN IMMEDIATE) where they are needed.
            self.conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self._migrate()
                return
            except sqlite3.OperationalError as e:
                self.conn.close()
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(0.5, 2 * delay)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def _migrate(self) -> None:
        if self.version() > SCHEMA:
            raise UsageError(
                f"results store {str(self.path)!r} has schema {self.version()}, newer than this "
                f"arraybench reads ({SCHEMA}); upgrade arraybench"
            )
        while self.version() < SCHEMA:
            with self._transaction() as db:
                # Read again under the write lock: another process may have just migrated.
                current = self.version()
                if current >= SCHEMA:
                    break
                for statement in MIGRATIONS[current]:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {current + 1}")

    def add_run(self, header: dict[str, Any]) -> str:
        """Register a run by its results-file header (again is a no-op); returns its id."""
        rid = run_id(header)
        env = header.get("environment", {})
        rest = {k: v for k, v in header.items() if k not in ("type", "environment", "settings")}
        rest["run_id"] = rid
        with self._transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                (rid, str(header.get("started", "")), environment.fingerprint(env),
                 header.get("arraybench_version"), _dumps(env), _dumps(header.get("settings", {})),
                 _dumps(rest)),
            )
        return rid

    def add_record(self, rid: str, record: CaseRecord) -> None:
        with self._transaction() as db:
            self._insert(db, rid, record)

    @staticmethod
    def _insert(db: sqlite3.Connection, rid: str, record: CaseRecord) -> None:
        db.execute(
            "INSERT INTO cases (run_id, case_id, record, backend, mode, status) VALUES (?, ?, ?, ?, ?, ?)",
            (rid, record.id, _dumps(record.to_json()), record.backend, record.mode, record.status),
        )

    def add_results(self, results: Results) -> tuple[str, int]:
        """Store a results file's run and whichever of its records the store lacks.

        A stored run's records are always a prefix of its file's (both are appended in the
        same order), so importing twice, or resuming a run that was stored only in part,
        adds exactly the missing tail. Returns the run id and how many records were added.
        """
        rid = self.add_run(results.header)
        with self._transaction() as db:
            have = db.execute("SELECT COUNT(*) FROM cases WHERE run_id = ?", (rid,)).fetchone()[0]
            for rec in results.records[have:]:
                self._insert(db, rid, rec)
        return rid, max(0, len(results.records) - have)

    def runs(self) -> list[RunSummary]:
        """Every run, oldest first; a case a resumed run retried counts once, by its last record."""
        latest: dict[str, dict[str, tuple[str, str]]] = {}
        for rid, case_id, backend, status in self.conn.execute(
                "SELECT run_id, case_id, backend, status FROM cases ORDER BY rowid"):
            latest.setdefault(rid, {})[case_id] = (backend, status)
        out = []
        for rid, started, machine in self.conn.execute("SELECT id, started, machine FROM runs ORDER BY started, rowid"):
            cases = latest.get(rid, {}).values()
            out.append(RunSummary(rid, started, machine, tuple(sorted({b for b, _ in cases})), len(cases),
                                  sum(status in FAILED for _, status in cases)))
        return out

    def resolve(self, ref: str) -> str:
        """A run id from an exact id, a unique prefix of one, or `latest`."""
        if ref == "latest":
            row = self.conn.execute("SELECT id FROM runs ORDER BY started DESC, rowid DESC LIMIT 1").fetchone()
            if row is None:
                raise UsageError(f"results store {str(self.path)!r} holds no runs yet")
            return row[0]
        ids = [r[0] for r in self.conn.execute(
            "SELECT id FROM runs WHERE substr(id, 1, ?) = ? ORDER BY id", (len(ref), ref))]
        if ref in ids:
            return ref
        if len(ids) == 1:
            return ids[0]
        if ids:
            raise UsageError(f"run {ref!r} is ambiguous: it starts {', '.join(ids[:5])}")
        raise UsageError(f"no run {ref!r} in results store {str(self.path)!r} (arraybench history lists them)")

    def load(self, ref: str) -> Results:
        """A stored run as a Results object, exactly as its results file would load."""
        rid = self.resolve(ref)
        env, settings, rest = self.conn.execute(
            "SELECT environment, settings, header FROM runs WHERE id = ?", (rid,)).fetchone()
        header = _header(env, settings, rest)
        records, prior, full_speed = analysed(self._records(rid, header))
        return Results(header=header, records=records, prior=prior, full_speed_s=full_speed)

    def runs_on(self, machine: str, case_ids: Collection[str]) -> list[Results]:
        """Every stored run on `machine` (environment.fingerprint), oldest first, holding only its
        records of `case_ids`: what compare reads for the spread between runs of a machine.

        The records are as stored, not analysed: a few cases of a run cannot fit its prior, and
        reading every case of every run would cost compare seconds per run.
        """
        wanted = set(case_ids)
        out = []
        for rid, env, settings, rest in self.conn.execute(
                "SELECT id, environment, settings, header FROM runs WHERE machine = ? ORDER BY started, rowid",
                (machine,)).fetchall():
            header = _header(env, settings, rest)
            out.append(Results(header=header, records=self._records(rid, header, wanted)))
        return out

    def _records(self, rid: str, header: dict[str, Any], case_ids: Collection[str] | None = None) -> list[CaseRecord]:
        """A run's records in the order stored; only those of `case_ids` when given."""
        # A record is stored as its results file held it: a run's older records in its header's
        # schema (a resumed run's newer ones in the current one), upgraded here as a file is.
        schema = header.get("schema", RESULTS_SCHEMA)
        return [CaseRecord.from_json(upgrade(json.loads(record), schema)) for case_id, record in self.conn.execute(
            "SELECT case_id, record FROM cases WHERE run_id = ? ORDER BY rowid", (rid,))
            if case_ids is None or case_id in case_ids]


def _header(env: str, settings: str, rest: str) -> dict[str, Any]:
    """A run's results-file header from the runs table's columns."""
    return {"type": "header", **json.loads(rest), "settings": json.loads(settings), "environment": json.loads(env)}


def _dumps(obj: Any) -> str:
    return json.dumps(finite(obj), default=str, allow_nan=False)


def recording(store: Path, results_path: Path, then: Callable[[CaseRecord], None]) -> Callable[[CaseRecord], None]:
    """Wrap a run's per-record callback so that each record also lands in the store.

    The run is registered (with any records its file already holds, when resuming) before
    the first case. Should the store fail mid-run, the results file stays complete: a warning
    says how to store it later, and the run goes on.
    """
    with Store(store) as st:
        rid, _ = st.add_results(load_results(results_path))
    broken = False

    def on_record(rec: CaseRecord) -> None:
        nonlocal broken
        if not broken:
            try:
                with Store(store) as st:
                    st.add_record(rid, rec)
            except (sqlite3.Error, UsageError) as e:
                broken = True
                print(f"arraybench: warning: stopped storing run {rid} in {store}: {e}; the results "
                      f"file is complete, `arraybench import {results_path}` stores it later", file=sys.stderr)
        then(rec)

    return on_record


def load(ref: str | os.PathLike[str], store: str | os.PathLike[str] | None = None) -> Results:
    """A results file (or a directory holding one) or a stored run (id, unique prefix, `latest`)."""
    if Path(ref).exists() or "/" in str(ref) or str(ref).endswith(".jsonl"):
        return load_results(ref)  # a path: its own error (missing, empty...) says more
    path = Path(store) if store is not None else DEFAULT_PATH
    if not path.exists():
        raise UsageError(f"{str(ref)!r} is neither a results file nor a stored run (no results store at {str(path)!r})")
    with Store(path) as st:
        return st.load(str(ref))
