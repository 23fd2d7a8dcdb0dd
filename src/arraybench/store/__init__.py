"""Store: every run kept in a database (SQLite on one machine, PostgreSQL for a team), for history, show,
export, import, push, pull and compare. `database` is the store (Store) and its schema's migrations, one
engine per file (`sqlite`, `postgres`); `recording` adds a run's records as they land; `location` says
which store is meant when none is named, and loads a run from a file or a store (`arraybench.load`);
`history` reads each machine's runs over time and their lasting changes."""

from arraybench.store.database import (
    CASE_COLUMNS,
    MIGRATIONS,
    RUN_COLUMNS,
    SCHEMA,
    Database,
    RunSummary,
    Spelled,
    Store,
)
from arraybench.store.location import DEFAULT_PATH, STORE_ENV, Configured, default_store, load
from arraybench.store.recording import Recording, StoredRun
from arraybench.store.sqlite import BUSY_TIMEOUT_S, SQLiteDB

__all__ = [
    "BUSY_TIMEOUT_S",
    "CASE_COLUMNS",
    "DEFAULT_PATH",
    "MIGRATIONS",
    "RUN_COLUMNS",
    "SCHEMA",
    "STORE_ENV",
    "Configured",
    "Database",
    "Recording",
    "RunSummary",
    "SQLiteDB",
    "Spelled",
    "Store",
    "StoredRun",
    "default_store",
    "load",
]
