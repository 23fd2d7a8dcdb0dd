"""The store: every run and its records in a database of either engine (SQLite: sqlite.py; PostgreSQL:
postgres.py), its schema migrated in place (MIGRATIONS), each record beside the report's figures of it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from arraybench.errors import UsageError
from arraybench.results import SCHEMA as RESULTS_SCHEMA
from arraybench.results import (
    Planned,
    Results,
    analysed,
    finite,
    upgrade,
    upgrade_header,
)
from arraybench.results.header import RunHeader
from arraybench.results.record import FAILED, CaseRecord
from arraybench.results.run_ids import run_id
from arraybench.store.postgres import PostgresDB, is_url, one_line, redact
from arraybench.store.sqlite import BUSY_TIMEOUT_S, SQLiteDB


@dataclass(frozen=True)
class Spelled:
    """One statement of a migration spelled for each engine, where their SQL differs.

    None: nothing to do on that engine (no PostgreSQL store predates schema 3, so none holds
    rows an older migration must fill).
    """

    sqlite: str
    postgres: str | None


# MIGRATIONS[i] takes a store from schema version i to i + 1, on either engine: SQLite (PRAGMA
# user_version) and PostgreSQL (table arraybench_schema) run the same list. Never edit one that
# has been released: append the next. tests/fixtures keeps a SQLite store of every older version,
# so opening an old store is always tested.
MIGRATIONS: list[tuple[str | Spelled | Callable[[Store], object], ...]] = [
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
        Spelled(
            sqlite="""UPDATE cases SET backend = json_extract(record, '$.backend'),
                            mode = json_extract(record, '$.mode'),
                            status = json_extract(record, '$.status')""",
            postgres="""UPDATE cases SET backend = record::json ->> 'backend',
                            mode = record::json ->> 'mode',
                            status = record::json ->> 'status'""",
        ),
        "CREATE INDEX cases_run ON cases(run_id)",
    ),
    # 3: seq, a record's place in its run (0, 1, ...): the order that SQLite's rowid kept, which
    #    PostgreSQL has no equivalent of and which a copy between stores must carry. Unique per
    #    run, so two machines pushing one run at once cannot store a record twice.
    (
        "ALTER TABLE cases ADD COLUMN seq INTEGER",
        Spelled(
            sqlite="""UPDATE cases SET seq = ordered.n FROM (
                          SELECT rowid AS r, ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY rowid) - 1 AS n
                          FROM cases) AS ordered
                      WHERE ordered.r = cases.rowid""",
            postgres=None,
        ),
        "DROP INDEX cases_run",
        "CREATE UNIQUE INDEX cases_run_seq ON cases(run_id, seq)",
    ),
    # 4: figures, the report's derived figures of a case (report.view.FIGURES: bound, speedup,
    #    GFLOP/s, GB/s, intensity, % of peak) as a JSON object on the latest record of each case of
    #    a run, so a user's SQL and the published site read them without recomputing. They depend
    #    on the whole run (speedup is against its NumPy case), so they are filled per run: here for
    #    the runs already stored, then whenever a run completes, is imported or is copied.
    (
        "ALTER TABLE cases ADD COLUMN figures TEXT",
        lambda st: [st.fill_figures(rid) for (rid,) in st.db.execute("SELECT id FROM runs").fetchall()],
    ),
    # 5: incomplete, the mark of a run the store holds only part of: the path of the results file
    #    it is stored from while it runs, kept when its store fails mid-run (a server stopped, a
    #    full disk) and cleared once the store holds every record of that file (the run's end,
    #    `import`, `push` from a store that holds it whole). NULL: whole. Earlier runs count as whole.
    ("ALTER TABLE runs ADD COLUMN incomplete TEXT",),
    # 6: median_s and its 95 % interval (ci_low_s, ci_high_s) as columns, in an index with each
    #    record's run, seq and case, so the history of every series (store/history.py) is read from
    #    that index alone, in its order: reading them out of 300 000 records' JSON took 11 s on a
    #    1 000-run SQLite store.
    #    The same index holds what `history`, `answer` and a run's figures read of every record (its
    #    case, backend and status): without it each read the table's rows, records and all (1.3 GB
    #    for a year of nightly runs). runs_machine: a machine's runs, for compare's history.
    (
        Spelled(sqlite="ALTER TABLE cases ADD COLUMN median_s REAL",
                postgres="ALTER TABLE cases ADD COLUMN median_s DOUBLE PRECISION"),
        Spelled(sqlite="ALTER TABLE cases ADD COLUMN ci_low_s REAL",
                postgres="ALTER TABLE cases ADD COLUMN ci_low_s DOUBLE PRECISION"),
        Spelled(sqlite="ALTER TABLE cases ADD COLUMN ci_high_s REAL",
                postgres="ALTER TABLE cases ADD COLUMN ci_high_s DOUBLE PRECISION"),
        Spelled(
            sqlite="""UPDATE cases SET median_s = json_extract(record, '$.median_s'),
                            ci_low_s = json_extract(record, '$.ci95_s[0]'),
                            ci_high_s = json_extract(record, '$.ci95_s[1]')""",
            postgres="""UPDATE cases SET median_s = (record::json ->> 'median_s')::double precision,
                            ci_low_s = (record::json -> 'ci95_s' ->> 0)::double precision,
                            ci_high_s = (record::json -> 'ci95_s' ->> 1)::double precision""",
        ),
        "CREATE INDEX cases_summary ON cases(run_id, seq, case_id, backend, status, median_s, ci_low_s, ci_high_s)",
        "CREATE INDEX runs_machine ON runs(machine)",
    ),
    # 7: memory_bytes (a steady call's memory, docs/memory.md) as a column in the summary index, so
    #    `history --changes` reads each series' memory as it reads its time, from the index alone.
    (
        Spelled(sqlite="ALTER TABLE cases ADD COLUMN memory_bytes REAL",
                postgres="ALTER TABLE cases ADD COLUMN memory_bytes DOUBLE PRECISION"),
        Spelled(sqlite="UPDATE cases SET memory_bytes = json_extract(record, '$.memory_bytes')",
                postgres="UPDATE cases SET memory_bytes = (record::json ->> 'memory_bytes')::double precision"),
        "DROP INDEX cases_summary",
        "CREATE INDEX cases_summary ON cases(run_id, seq, case_id, backend, status, median_s, ci_low_s, ci_high_s, "
        "memory_bytes)",
    ),
]
SCHEMA = len(MIGRATIONS)
RUN_COLUMNS = "id, started, machine, arraybench_version, environment, settings, header, incomplete"
CASE_COLUMNS = ("run_id, seq, case_id, record, backend, mode, status, figures, median_s, ci_low_s, ci_high_s, "
                "memory_bytes")


@dataclass(frozen=True)
class RunSummary:
    """One line of `arraybench history`."""

    id: str
    started: str
    machine: str
    backends: tuple[str, ...]
    cases: int
    failed: int
    planned: Planned | None = None  # how many of its planned cases the store holds; None: not recorded
    incomplete: str | None = None  # the results file it is stored in part from (migration 5); None: whole


class Database(Protocol):
    """What Store needs of an engine: sqlite.SQLiteDB, or postgres.PostgresDB for PostgreSQL."""

    dialect: str
    errors: tuple[type[Exception], ...]
    conn: Any

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...
    def transaction(self) -> AbstractContextManager[None]: ...
    def snapshot(self) -> AbstractContextManager[None]: ...
    def lock_schema(self) -> None: ...
    def lock_run(self, rid: str) -> None: ...
    def version(self) -> int: ...
    def set_version(self, version: int) -> None: ...
    def close(self) -> None: ...


class Store:
    """One results store, migrated to the current schema when opened: a SQLite file, or a
    PostgreSQL database named by a postgresql:// URL (a team's store, shared by many machines).

    Several runs may write into one store at once; each record is its own transaction, so a
    crash loses nothing that was already stored. Messages name the store by `name`, which
    never holds a password.
    """

    def __init__(self, location: str | os.PathLike[str], *, create: bool = True) -> None:
        self.name = redact(location)
        self.db: Database
        if is_url(location):
            self.db = PostgresDB(str(location))
            try:
                if not create and self.db.version() == 0:
                    raise UsageError(f"no results store at {self.name} (arraybench run --store or push --to "
                                     "creates it)")
                self._migrate()
            except BaseException as e:
                self.db.close()
                if isinstance(e, self.db.errors):
                    raise UsageError(f"cannot use results store {self.name}: {one_line(e)}") from None
                raise
            return
        path = Path(location)
        if not create and not path.exists():
            raise UsageError(f"no results store at {self.name!r} "
                             "(arraybench run creates it; --store names another)")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._open(path)
        except sqlite3.DatabaseError as e:
            raise UsageError(f"cannot use results store {self.name!r}: {e}") from None
        except OSError as e:
            raise UsageError(f"cannot create results store {self.name!r}: {e.strerror}") from None

    def _open(self, path: Path) -> None:
        """Connect, switch to WAL and migrate. Two processes creating one store at the same moment
        can see "database is locked" at once from the switch to WAL (SQLite does not call the busy
        handler there: 8 of 120 simultaneous openings failed so), so that is retried until the
        busy timeout has passed."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        delay = 0.01
        while True:
            try:
                self.db = SQLiteDB(path)
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
            else:
                try:
                    self._migrate()
                    return
                except sqlite3.OperationalError as e:
                    self.db.close()
                    if "locked" not in str(e) or time.monotonic() > deadline:
                        raise
            time.sleep(delay)
            delay = min(0.5, 2 * delay)

    @property
    def conn(self) -> Any:
        """The engine's own connection (sqlite3 or psycopg), for a user's SQL."""
        return self.db.conn

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """What the engine raises when the database fails under a command (a lost connection, a full disk)."""
        return self.db.errors

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def version(self) -> int:
        return self.db.version()

    def snapshot(self) -> AbstractContextManager[None]:
        """`with store.snapshot(): ...`: every read of this store in the block sees it as it was at
        the block's first read, so a reader of many runs (publish, answer) draws one consistent
        picture while machines push: a run that lands meanwhile is not seen at all, never in part.
        Reads only: PostgreSQL refuses a write in it; on SQLite, write with another Store."""
        return self.db.snapshot()

    def _migrate(self) -> None:
        if self.version() > SCHEMA:
            raise UsageError(
                f"results store {self.name!r} has schema {self.version()}, newer than this "
                f"arraybench reads ({SCHEMA}); upgrade arraybench"
            )
        while self.version() < SCHEMA:
            with self.db.transaction():
                self.db.lock_schema()
                # Read again under the lock: another process may have just migrated.
                current = self.db.version()
                if current >= SCHEMA:
                    break
                for statement in MIGRATIONS[current]:
                    if callable(statement):  # a step SQL cannot say, run in the same transaction
                        statement(self)
                        continue
                    sql = getattr(statement, self.db.dialect) if isinstance(statement, Spelled) else statement
                    if sql is not None:
                        self.db.execute(sql)
                self.db.set_version(current + 1)

    def add_run(self, header: RunHeader, incomplete: str | None = None) -> str:
        """Register a run by its results-file header (again is a no-op); returns its id.
        `incomplete`: its results file, while the store holds only part of it (migration 5)."""
        rid = run_id(header)
        rest = {k: v for k, v in header.to_json().items() if k not in ("type", "environment", "settings")}
        rest["run_id"] = rid
        with self.db.transaction():
            self._insert_run((rid, str(header.started or ""), header.environment.fingerprint,
                              header.arraybench_version, _dumps(header.environment.to_json()),
                              _dumps(header.settings.to_json()), _dumps(rest), incomplete))
        return rid

    def _insert_run(self, row: Sequence[Any]) -> None:
        self.db.execute(f"INSERT INTO runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT (id) DO NOTHING", row)

    def incomplete(self, rid: str) -> str | None:
        """The results file that run `rid` is stored in part from; None when the store holds it whole."""
        row = self.db.execute("SELECT incomplete FROM runs WHERE id = ?", (rid,)).fetchone()
        return None if row is None else row[0]

    def _mark(self, rid: str, incomplete: str | None) -> None:
        self.db.execute("UPDATE runs SET incomplete = ? WHERE id = ?", (incomplete, rid))

    def add_record(self, rid: str, record: CaseRecord) -> None:
        with self.db.transaction():
            self.db.lock_run(rid)
            self._insert_cases([_case_row(rid, self._count(rid), record)])

    def _count(self, rid: str) -> int:
        """How many records of run `rid` the store holds: the next one's seq."""
        return int(self.db.execute("SELECT COUNT(*) FROM cases WHERE run_id = ?", (rid,)).fetchone()[0])

    def _insert_cases(self, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self.db.executemany(f"INSERT INTO cases ({CASE_COLUMNS}) VALUES ({', '.join('?' * len(rows[0]))})", rows)

    def add_results(self, results: Results, *, running: bool = False) -> tuple[str, int]:
        """Store a results file's run and whichever of its records the store lacks.

        A stored run's records are always a prefix of its file's (both are appended in the
        same order), so importing twice, or resuming a run that was stored only in part,
        adds exactly the missing tail. The store then holds the whole file: the run's
        incomplete mark is cleared and its figures filled, unless it is `running` (its file
        still grows), when it is marked with the file's path instead. Returns the run id and
        how many records were added.
        """
        mark = str(Path(results.path or "results.jsonl").resolve()) if running else None
        rid = self.add_run(results.header, mark)
        with self.db.transaction():
            self.db.lock_run(rid)
            have, was = self._count(rid), self.incomplete(rid)
            self._insert_cases([_case_row(rid, seq, rec) for seq, rec in enumerate(results.records) if seq >= have])
            if not running and (len(results.records) > have or was is not None):
                # From the file when the store now holds exactly its records, else as stored.
                self.fill_figures(rid, results if have <= len(results.records) else None)
            self._mark(rid, mark)
        return rid, max(0, len(results.records) - have)

    def fill_figures(self, rid: str, results: Results | None = None) -> int:
        """Write the report's derived figures of run `rid` onto the latest record of each of its
        cases (and clear them from a case's earlier attempts); returns how many rows changed.
        `results`: the run as loaded already (the same records as stored), to spare loading it again."""
        from arraybench.report.data import run_views  # the report is heavier than the store

        latest = dict(self.db.execute("SELECT case_id, MAX(seq) FROM cases WHERE run_id = ? GROUP BY case_id",
                                      (rid,)).fetchall())
        views = run_views(results if results is not None else self.load(rid))
        want: dict[int, str | None] = {latest[cid]: _dumps(view.figures()) for cid, view in views.items()
                                       if cid in latest}
        return self._set_figures(rid, want)

    def _set_figures(self, rid: str, want: dict[int, str | None]) -> int:
        """Set the figures column of run `rid`'s rows to `want` (by seq; NULL for the rest), touching
        only the rows whose figures differ."""
        have = dict(self.db.execute("SELECT seq, figures FROM cases WHERE run_id = ?", (rid,)).fetchall())
        rows = [(want.get(seq), rid, seq) for seq, figures in have.items() if figures != want.get(seq)]
        if rows:
            self.db.executemany("UPDATE cases SET figures = ? WHERE run_id = ? AND seq = ?", rows)
        return len(rows)

    def copy_from(self, source: Store, rid: str) -> tuple[int, int]:
        """Copy run `rid` of `source` into this store, row for row (its machine, environment and
        records exactly as `source` holds them): what push and pull do. Only the records this store
        lacks are read and written, in one transaction, so copying again adds nothing. Returns how
        many records were added and how many the run has.
        """
        row = source.db.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (rid,)).fetchone()
        total = source._count(rid)
        with self.db.transaction():
            self._insert_run(tuple(row))  # a new copy carries the source's incomplete mark
            self.db.lock_run(rid)
            if row[-1] is None:  # incomplete, RUN_COLUMNS' last: the source holds the run whole, and so will this
                self._mark(rid, None)
            have = self._count(rid)
            rows = source.db.execute(f"SELECT {CASE_COLUMNS} FROM cases WHERE run_id = ? AND seq >= ? ORDER BY seq",
                                     (rid, have)).fetchall()
            self._insert_cases([tuple(r) for r in rows])
            # A run copied while it ran had no figures yet, or older ones: bring them up to date.
            self._set_figures(rid, dict(source.db.execute(
                "SELECT seq, figures FROM cases WHERE run_id = ? AND figures IS NOT NULL", (rid,)).fetchall()))
        return len(rows), total

    def runs(self) -> list[RunSummary]:
        """Every run, oldest first; a case a resumed run retried counts once, by its last record.
        Each says how many of its planned cases the store holds, and whether it is marked incomplete."""
        latest: dict[str, dict[str, tuple[str, str]]] = {}
        for rid, case_id, backend, status in self.db.execute(
                "SELECT run_id, case_id, backend, status FROM cases ORDER BY run_id, seq"):
            latest.setdefault(rid, {})[case_id] = (backend, status)
        out = []
        # Ordered here, not by SQL: PostgreSQL sorts text by the database's collation, SQLite by code point.
        for started, rid, machine, rest, incomplete in sorted(
                self.db.execute("SELECT started, id, machine, header, incomplete FROM runs")):
            cases = latest.get(rid, {}).values()
            out.append(RunSummary(rid, started, machine, tuple(sorted({b for b, _ in cases})), len(cases),
                                  sum(status in FAILED for _, status in cases),
                                  Planned.of(RunHeader.from_json(json.loads(rest)), len(cases)), incomplete))
        return out

    def headers(self) -> dict[str, RunHeader]:
        """Every run's results-file header by id, oldest first, without reading any record."""
        rows = sorted(self.db.execute("SELECT started, id, environment, settings, header FROM runs"))
        return {rid: _header(env, settings, rest) for _, rid, env, settings, rest in rows}

    def record_index(self) -> list[tuple[str, str, str, str]]:
        """Every record's (run id, case id, backend, status), each run's in the order stored, no
        record read: what a reader of many runs (publish) picks the few it loads whole by."""
        return [(rid, case_id, backend, status) for rid, case_id, backend, status in self.db.execute(
            "SELECT run_id, case_id, backend, status FROM cases ORDER BY run_id, seq")]

    def resolve(self, ref: str) -> str:
        """A run id from an exact id, a unique prefix of one, or `latest`."""
        if ref == "latest":
            newest = max(self.db.execute("SELECT started, id FROM runs"), default=None)
            if newest is None:
                raise UsageError(f"results store {self.name!r} holds no runs yet")
            return str(newest[1])
        ids = sorted(r[0] for r in self.db.execute("SELECT id FROM runs WHERE substr(id, 1, ?) = ?", (len(ref), ref)))
        if ref in ids:
            return ref
        if len(ids) == 1:
            return str(ids[0])
        if ids:
            raise UsageError(f"run {ref!r} is ambiguous: it starts {', '.join(ids[:5])}")
        raise UsageError(f"no run {ref!r} in results store {self.name!r} (arraybench history lists them)")

    def load(self, ref: str) -> Results:
        """A stored run as a Results object, exactly as its results file would load."""
        rid = self.resolve(ref)
        env, settings, rest = self.db.execute(
            "SELECT environment, settings, header FROM runs WHERE id = ?", (rid,)).fetchone()
        header = _header(env, settings, rest)
        records, reading = analysed(self._records(rid, header), header)
        return Results(header=header, records=records, reading=reading)

    def runs_on(self, machine: str, case_ids: Collection[str], keep: Callable[[Results], bool] = lambda res: True,
                latest: int | None = None) -> list[Results]:
        """The stored runs on `machine` (environment.fingerprint) that `keep` accepts (the latest
        `latest` of them when given), oldest first, each holding only its records of `case_ids`:
        what compare reads for the spread between runs of a machine. `keep` sees each run's header
        (its records empty) before any record is read: a year of nightly runs holds 100 000 records
        per machine, of which compare needs the few runs like the two it compares.

        The records are as stored, not analysed: a few cases of a run cannot fit its prior, and
        reading every case of every run would cost compare seconds per run.
        """
        rows = self.db.execute("SELECT started, id, environment, settings, header FROM runs WHERE machine = ?",
                               (machine,)).fetchall()
        headers = [(rid, Results(header=_header(env, settings, rest), records=[]))
                   for _, rid, env, settings, rest in sorted(rows)]
        kept = [(rid, res) for rid, res in headers if keep(res)]
        out = dict(kept[-latest:] if latest else kept)
        wanted = set(case_ids)
        if out and wanted:
            marks = ", ".join("?" * len(out))
            for rid, case_id, record in self.db.execute(
                    f"SELECT run_id, case_id, record FROM cases WHERE run_id IN ({marks}) ORDER BY run_id, seq",
                    list(out)):
                if case_id in wanted:
                    out[rid].records.append(_record(record, out[rid].header))
        return list(out.values())

    def _records(self, rid: str, header: RunHeader) -> list[CaseRecord]:
        """A run's records in the order stored."""
        return [_record(record, header) for (record,) in self.db.execute(
            "SELECT record FROM cases WHERE run_id = ? ORDER BY seq", (rid,))]


def _record(text: str, header: RunHeader) -> CaseRecord:
    """A stored record as its run's results file would load it."""
    # A record is stored as its results file held it: a run's older records in its header's
    # schema (a resumed run's newer ones in the current one), upgraded here as a file is.
    schema = header.schema if header.schema is not None else RESULTS_SCHEMA
    return CaseRecord.from_json(upgrade(json.loads(text), schema))


def _case_row(rid: str, seq: int, record: CaseRecord) -> tuple[Any, ...]:
    """A record as a row of the cases table (CASE_COLUMNS)."""
    low, high = record.ci95_s or (None, None)
    return (rid, seq, record.id, _dumps(record.to_json()), record.backend, record.mode, record.status, None,
            *finite([record.median_s, low, high]), record.memory_bytes)


def _header(env: str, settings: str, rest: str) -> RunHeader:
    """A run's results-file header from the runs table's columns, upgraded as a file's is."""
    obj = {"type": "header", **json.loads(rest), "settings": json.loads(settings), "environment": json.loads(env)}
    schema = obj.get("schema")
    return upgrade_header(obj, schema if isinstance(schema, int) and not isinstance(schema, bool) else RESULTS_SCHEMA)


def _dumps(obj: Any) -> str:
    """`obj` as JSON, NaN and infinities as null. Most records hold none, so the copy that replaces
    them (finite) is made only when the first try finds one: it cost a third of storing a record."""
    try:
        return json.dumps(obj, default=_plain, allow_nan=False)
    except ValueError:
        return json.dumps(finite(obj), default=str, allow_nan=False)


def _plain(obj: Any) -> Any:
    """What json.dumps cannot write, as finite() would give it: NumPy values as Python's, the rest as text."""
    return obj.tolist() if hasattr(obj, "tolist") else str(obj)
