"""The SQLite engine of a store: one file on one machine, shared by the runs that write into it at once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

# Two runs writing at once take turns; a writer waits this long for the other's insert.
BUSY_TIMEOUT_S = 60.0


class SQLiteDB:
    """One connection to a SQLite results store, in autocommit: transactions are explicit.

    WAL journal and a busy timeout let several runs write into one store at once; BEGIN
    IMMEDIATE takes the file's write lock, so a transaction never sees another's half.
    """

    dialect = "sqlite"
    errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error:
            self.conn.close()
            raise

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def transaction(self) -> AbstractContextManager[None]:
        return self._within("BEGIN IMMEDIATE")

    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: under WAL it sees the file as it was at its first read, whatever
        others commit meanwhile (and keeps them from checkpointing past it until it ends)."""
        return self._within("BEGIN DEFERRED")

    @contextmanager
    def _within(self, begin: str) -> Iterator[None]:
        """A transaction opened by `begin`: committed when the block ends, rolled back when it raises."""
        self.conn.execute(begin)
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def lock_schema(self) -> None:
        """BEGIN IMMEDIATE already holds the write lock."""

    def lock_run(self, rid: str) -> None:
        """BEGIN IMMEDIATE already holds the write lock."""

    def version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def set_version(self, version: int) -> None:
        self.conn.execute(f"PRAGMA user_version = {int(version)}")

    def close(self) -> None:
        self.conn.close()
