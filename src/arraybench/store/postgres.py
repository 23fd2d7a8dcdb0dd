"""The results store's PostgreSQL engine (psycopg 3), and store URLs as they may be printed."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from arraybench.errors import UsageError

SCHEMES = ("postgresql://", "postgres://")
INSTALL = "pip install 'arraybench[postgres]'"
# libpq waits for an unreachable host as long as TCP does (minutes); a URL's own connect_timeout wins.
CONNECT_TIMEOUT_S = 10
# One key for pg_advisory_xact_lock: two machines opening a new store migrate it one after the other.
MIGRATION_LOCK = 0x61726279  # "arby"


def is_url(location: str | os.PathLike[str]) -> bool:
    """Whether a --store value names a PostgreSQL database rather than a SQLite file."""
    return str(location).startswith(SCHEMES)


def redact(location: str | os.PathLike[str]) -> str:
    """A store as it may be printed: a URL without any password (in its user part or its query)."""
    text = str(location)
    if not is_url(text):
        return text
    try:
        parts = urlsplit(text)
    except ValueError:  # a malformed URL: nothing of it can be told from a password
        return text.partition("://")[0] + "://…"
    user, at, host = parts.netloc.rpartition("@")
    netloc = f"{user.partition(':')[0]}{at}{host}"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = urlencode([(k, v) for k, v in pairs if k != "password"]) if any(k == "password" for k, _ in pairs) \
        else parts.query
    return parts._replace(netloc=netloc, query=query).geturl()


def check_url(url: str) -> None:
    """Refuse a URL that carries a password: it would sit in shell history, `ps` and CI logs.

    libpq reads the password from PGPASSWORD or a pgpass file (~/.pgpass, PGPASSFILE) instead.
    """
    try:
        parts = urlsplit(url)
    except ValueError as e:
        raise UsageError(f"results store {redact(url)} is not a valid URL: {e}") from None
    if parts.password is not None or any(k == "password" for k, _ in parse_qsl(parts.query)):
        raise UsageError(f"results store {redact(url)} is given with a password; leave it out of the URL and "
                         "set PGPASSWORD or a ~/.pgpass line instead (libpq reads both)")


def one_line(error: BaseException) -> str:
    """A driver's message on one line (libpq's span several)."""
    return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())


class PostgresDB:
    """One connection to a PostgreSQL results store, in autocommit: transactions are explicit.

    Speaks the store's SQL as written for both engines: `?` placeholders become psycopg's `%s`
    (the store's SQL holds no literal `?` or `%`), the schema version lives in a one-row table
    (SQLite keeps it in PRAGMA user_version), and a run's row is locked while records are appended
    to it (SQLite's BEGIN IMMEDIATE locks the whole file).
    """

    dialect = "postgres"

    def __init__(self, url: str) -> None:
        check_url(url)
        try:
            import psycopg
        except ImportError:
            raise UsageError(f"results store {redact(url)} is PostgreSQL, which needs psycopg 3: {INSTALL}") from None
        self.errors: tuple[type[Exception], ...] = (psycopg.Error,)
        self.url = url
        self._lost_errors = (psycopg.OperationalError, psycopg.InterfaceError)
        extra: dict[str, Any] = {"application_name": "arraybench"}
        if "connect_timeout=" not in url:
            extra["connect_timeout"] = CONNECT_TIMEOUT_S
        try:
            self.conn = psycopg.connect(url, autocommit=True, **extra)
        except psycopg.Error as e:
            raise UsageError(f"cannot connect to results store {redact(url)}: {one_line(e)}") from None

    @contextmanager
    def _connected(self) -> Iterator[None]:
        """A connection lost mid-command (server gone, network down, session killed) is a one-line
        error, not a traceback: the transaction it was in is rolled back, nothing half-written stays."""
        try:
            yield
        except self._lost_errors as e:
            if not self.conn.closed and not self.conn.broken:
                raise
            raise UsageError(f"lost the connection to results store {redact(self.url)}: {one_line(e)}") from None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._connected():
            return self.conn.execute(sql.replace("?", "%s"), params or None)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._connected(), self.conn.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._connected(), self.conn.transaction():
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A REPEATABLE READ, READ ONLY transaction: every statement in it sees the database as its
        first did. Read only, it never fails on a concurrent writer (only a writer can)."""
        with self._connected(), self.conn.transaction():
            self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

    def lock_schema(self) -> None:
        """Inside a transaction: wait for any other migration, then make sure the version table exists."""
        self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        self.conn.execute("CREATE TABLE IF NOT EXISTS arraybench_schema (version INTEGER NOT NULL)")

    def lock_run(self, rid: str) -> None:
        """Inside a transaction: writers of one run take turns (the count of its records stays true)."""
        self.conn.execute("SELECT id FROM runs WHERE id = %s FOR UPDATE", (rid,))

    def version(self) -> int:
        if self.conn.execute("SELECT to_regclass('arraybench_schema')").fetchone()[0] is None:
            return 0
        row = self.conn.execute("SELECT version FROM arraybench_schema").fetchone()
        return 0 if row is None else int(row[0])

    def set_version(self, version: int) -> None:
        self.conn.execute("DELETE FROM arraybench_schema")
        self.conn.execute("INSERT INTO arraybench_schema VALUES (%s)", (version,))

    def close(self) -> None:
        self.conn.close()
