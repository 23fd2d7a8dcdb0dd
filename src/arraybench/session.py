"""Session: one benchmark run from settings to a results file — shared by the CLI and the Python API."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arraybench import __version__, environment
from arraybench.errors import UsageError
from arraybench.plan import RunSettings, build_plan
from arraybench.results import Results, ResultsWriter, load_results
from arraybench.runner import CaseRunner, Runner

SCHEMA = 1


def new_header(settings: RunSettings, plan_size: int) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "arraybench_version": __version__,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "settings": settings.to_dict(),
        "environment": environment.collect(),
        "plan_size": plan_size,
    }


def resume_settings(out_dir: Path) -> tuple[RunSettings, set[str]]:
    """The settings of the interrupted run in `out_dir` and the ids it already finished."""
    previous = load_results(out_dir)
    return RunSettings.from_dict(previous.settings), {r["id"] for r in previous.records}


def execute(
    settings: RunSettings | None,
    out_dir: Path,
    *,
    resume: bool = False,
    on_start: Callable[[int], Callable[[dict[str, Any]], None]] = lambda n: (lambda r: None),
    make_runner: Callable[..., CaseRunner] = Runner,
) -> Results:
    """Plan, run and record; return the results file's contents.

    `on_start(number of cases)` returns the per-record callback (the progress bar). On Ctrl-C
    the KeyboardInterrupt propagates after the workers are killed; every finished record is
    already on disk. `make_runner` is called like Runner: cluster.ClusterRunner runs on Dask workers.
    """
    done: set[str] = set()
    if resume:
        settings, done = resume_settings(out_dir)
    if settings is None:
        raise ValueError("execute() needs settings unless it resumes")
    plan = build_plan(settings)
    todo = [c for c in plan if c.id not in done]
    header = None if resume else new_header(settings, len(plan))
    try:
        writer = ResultsWriter(out_dir / "results.jsonl", header)
    except OSError as e:
        raise UsageError(f"cannot write to output directory {str(out_dir)!r}: {e.strerror}") from None
    runner = make_runner(writer, settings.timer, settings.seed, settings.timeout, out_dir / "logs",
                         on_record=on_start(len(todo)))
    try:
        runner.run(todo)
    finally:
        writer.close()
    return load_results(out_dir)
