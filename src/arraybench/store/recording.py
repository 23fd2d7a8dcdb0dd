"""A run's records into its store as they land (`run --store`): registered before the first case, each
record its own transaction, and how much of the run the store holds at its end (StoredRun)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from arraybench.errors import UsageError
from arraybench.results import load_results
from arraybench.results.record import CaseRecord
from arraybench.store.database import Store
from arraybench.store.postgres import one_line, redact


@dataclass(frozen=True)
class StoredRun:
    """How much of a run reached its results store by the run's end: `cases` of the results
    file's `total` (distinct cases); `error` says why the rest did not."""

    store: str  # as it may be printed (redact)
    run_id: str
    results_path: Path
    cases: int
    total: int
    error: str | None = None

    @property
    def complete(self) -> bool:
        return self.error is None

    def __str__(self) -> str:
        if self.complete:
            return f"stored as run {self.run_id} in {self.store}"
        fix = f"`arraybench import {self.results_path} --store {self.store}`"
        if self.cases == self.total:  # the store failed after the last record, before the mark was cleared
            return (f"stored every case of run {self.run_id} in {self.store}, but it stays marked incomplete there "
                    f"({self.error}) until {fix}")
        return (f"stored only {self.cases} of {self.total} cases of run {self.run_id} in {self.store} ({self.error}); "
                f"it is marked incomplete there until {fix} stores the rest")


class Recording:
    """A run's per-record callback that also adds each record to a store as it lands.

    The run is registered (with any records its file already holds, when resuming) before the
    first case, marked incomplete while it runs. Should the store fail mid-run, the results file
    stays complete: a warning says how to store it later, and the run goes on. `finish` tries once
    more to store whatever the store lacks, and clears the mark only when the store holds it all.
    """

    def __init__(self, store: str | os.PathLike[str], results_path: Path, then: Callable[[CaseRecord], None]) -> None:
        self.store, self.results_path, self.then = store, results_path, then
        results = load_results(results_path)
        with Store(store) as st:
            self.run_id, _ = st.add_results(results, running=True)
            self.errors: tuple[type[Exception], ...] = (UsageError, *st.errors)
        self.stored = len(results.records)  # records the store holds: a prefix of the file's
        self.error: str | None = None

    def __call__(self, rec: CaseRecord) -> None:
        if self.error is None:
            try:
                with Store(self.store) as st:
                    st.add_record(self.run_id, rec)
                self.stored += 1
            except self.errors as e:
                self.error = one_line(e)
                print(f"arraybench: warning: stopped storing run {self.run_id} in {redact(self.store)}: {self.error}; "
                      f"the results file is complete, `arraybench import {self.results_path} --store "
                      f"{redact(self.store)}` stores it later", file=sys.stderr)
        self.then(rec)

    def finish(self) -> StoredRun:
        """At the run's end (or its interruption): store what the store lacks, fill the run's figures
        and clear its incomplete mark; or, where the store still fails, say how much it holds."""
        results = load_results(self.results_path)
        try:
            with Store(self.store) as st:
                st.add_results(results)
            return StoredRun(redact(self.store), self.run_id, self.results_path, len(results.latest()),
                             len(results.latest()))
        except self.errors as e:
            held = len({r.id for r in results.records[:self.stored]})
            return StoredRun(redact(self.store), self.run_id, self.results_path, held, len(results.latest()),
                             one_line(e))
