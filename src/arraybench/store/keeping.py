"""A results store as the keeper of a run (execution/session.Keeper): the CLI and the Python API make one for
the store they name and hand it to the run, which itself knows no store."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from arraybench.results.record import CaseRecord
from arraybench.store.database import Store
from arraybench.store.recording import Recording, StoredRun


class StoreKeeper:
    """Adds a run's records to the store at `location` as they land (store.Recording); at the end,
    `on_stored` hears how much of the run the store holds."""

    def __init__(self, location: str | os.PathLike[str],
                 on_stored: Callable[[StoredRun], None] = lambda stored: None) -> None:
        self.location, self.on_stored = location, on_stored
        self.recording: Recording | None = None

    def check(self) -> None:
        Store(self.location).close()

    def start(self, results_path: Path, then: Callable[[CaseRecord], None]) -> Callable[[CaseRecord], None]:
        self.recording = Recording(self.location, results_path, then)
        return self.recording

    def finish(self) -> None:
        if self.recording is not None:
            self.on_stored(self.recording.finish())
