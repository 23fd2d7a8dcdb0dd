"""Session: one benchmark run from settings to a results file — shared by the CLI and the Python API."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arraybench import __version__, environment, peaks
from arraybench.errors import UsageError
from arraybench.plan import RunSettings, build_plan
from arraybench.results import SCHEMA, Results, ResultsWriter, load_results, writable_dir
from arraybench.run_ids import new_run_id
from arraybench.runner import CaseRunner, Runner
from arraybench.store import Store, recording


def new_header(settings: RunSettings, plan_size: int, run_id: str | None = None) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "run_id": run_id or new_run_id(),
        "arraybench_version": __version__,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git": environment.git_commit(),
        "settings": settings.to_dict(),
        "environment": {**environment.collect(), "peaks": peaks.measure(settings.threads, gpu="gpu" in settings.devices)},
        "plan_size": plan_size,
    }


def resume_settings(out_dir: Path) -> tuple[RunSettings, set[str]]:
    """The settings of the interrupted run in `out_dir` and the ids it already finished."""
    previous = load_results(out_dir)
    try:
        settings = RunSettings.from_dict(previous.settings) if previous.settings else None
    except (TypeError, ValueError):
        settings = None
    if settings is None:
        raise UsageError(f"results file {str(previous.path)!r} holds no run settings to resume with")
    return settings, {r["id"] for r in previous.records}


def execute(
    settings: RunSettings | None,
    out_dir: Path,
    *,
    resume: bool = False,
    on_start: Callable[[int], Callable[[dict[str, Any]], None]] = lambda n: (lambda r: None),
    store: Path | None = None,
    make_runner: Callable[..., CaseRunner] = Runner,
    run_id: str | None = None,
) -> Results:
    """Plan, run and record; return the results file's contents.

    `on_start(number of cases)` returns the per-record callback (the progress bar). On Ctrl-C
    the KeyboardInterrupt propagates after the workers are killed; every finished record is
    already on disk. With `store`, each record is also added to that results store as it lands.
    `make_runner` is called like Runner: cluster.ClusterRunner runs the cases on Dask workers.
    `run_id` names a new run (the CLI names its output directory after it).
    """
    done: set[str] = set()
    if resume:
        settings, done = resume_settings(out_dir)
    if settings is None:
        raise ValueError("execute() needs settings unless it resumes")
    plan = build_plan(settings)
    todo = [c for c in plan if c.id not in done]
    header = None if resume else new_header(settings, len(plan), run_id)
    if store is not None:
        Store(store).close()  # an unusable --store fails here, before the results file exists
    writer = ResultsWriter(writable_dir(out_dir) / "results.jsonl", header)
    on_record = on_start(len(todo))
    if store is not None:
        on_record = recording(store, writer.path, on_record)
    runner = make_runner(writer, settings.timer, settings.seed, settings.timeout, out_dir / "logs",
                         on_record=on_record, memory_limit=settings.memory_limit)
    try:
        runner.run(todo)
    finally:
        writer.close()
    return load_results(out_dir)
