"""In each Dask worker process of a `--cluster` run: its pool of the run's children, and the task that
runs one case there (the parent side of parent.py, as a local run's arraybench process is)."""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from distributed import WorkerPlugin, get_worker

from arraybench.core.case import Case
from arraybench.execution.parent import RunConfig, WorkerPool
from arraybench.machine import host
from arraybench.measure import peaks
from arraybench.version import __version__


class CasePool(WorkerPlugin):
    """One run's WorkerPool in one Dask worker: the worker processes a local run uses, started once.

    The case itself runs in those processes, never in the Dask worker's own, so Dask's threads
    and event loop do not share a process (or thread pools) with the framework being timed.
    """

    def __init__(self, config: RunConfig, cpu_slices: dict[str, list[int]], peaks_threads: int | None = None,
                 cases: Sequence[Case] = (), local: bool = False) -> None:
        self.config, self.cpu_slices, self.peaks_threads = config, cpu_slices, peaks_threads
        self.cases = cases  # the run's: whose modes' floors the workers measure (WorkerPool.expect)
        self.local = local  # a LocalCluster of this run's own, which ends with it

    def setup(self, worker: Any) -> None:
        # Logs and the case cache stay on the worker's machine (the run's own cache is a path on the
        # machine that started it); a crash's last stderr line travels in its record.
        here = Path(worker.local_directory)
        self.pool = WorkerPool(replace(self.config, log_dir=here / "arraybench-logs",
                                       cache_dir=here / "arraybench-cache"))
        self.pool.expect(self.cases)
        self.machine = socket.gethostname()
        self.worker_name = str(worker.name)
        self.cpus = self.cpu_slices.get(self.worker_name)
        self.environment: dict[str, Any] | None = None
        if self.local:
            for handler in (*logging.getLogger("distributed").handlers, *logging.getLogger().handlers):
                handler.addFilter(closed_connections)

    def teardown(self, worker: Any) -> None:
        self.pool.close()

    def machine_environment(self) -> dict[str, Any]:
        """This machine's environment, with its peaks where asked: measured once, in a task thread,
        because the peaks take seconds that the worker's event loop must not block for."""
        if self.environment is None:
            env = {**host.collect(), "arraybench_version": __version__}
            if self.peaks_threads:
                env["peaks"] = peaks.measure(self.peaks_threads)
            self.environment = env
        return self.environment


def closed_connections(record: logging.LogRecord) -> bool:
    """False for a log record of a connection that closed (Dask's CommClosedError, tornado's
    StreamClosedError), kept out of a local cluster's workers' stderr. A LocalCluster of the run's
    own closes with the run, on Ctrl-C too, and a worker's heartbeat in flight when its scheduler
    went then logged a traceback that said nothing to the user (once in four CI runs of
    test_cluster's Ctrl-C test). A worker lost while the run goes on is still recorded, by the
    scheduler's side, as its cases' `crashed`."""
    exc = record.exc_info[1] if record.exc_info else None
    return type(exc).__name__ not in ("CommClosedError", "StreamClosedError")


def run_case(plugin_name: str, case: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run one case in this Dask worker's pool; return its record and this machine's environment."""
    plugin = get_worker().plugins[plugin_name]
    if plugin.cpus:
        # Affinity is per thread on Linux and a worker process inherits its starter's: this
        # keeps the cases of several local Dask workers on disjoint cores.
        os.sched_setaffinity(0, plugin.cpus)
    t0 = time.monotonic()
    record = plugin.pool.run_one(Case.from_dict(case))
    # wall_s as a local run records it: what measuring the case cost.
    record = replace(record, wall_s=time.monotonic() - t0, machine=plugin.machine, worker=plugin.worker_name)
    return record.to_json(), plugin.machine_environment()


def close_pool(plugin_name: str, dask_worker: Any = None) -> None:
    """End this Dask worker's child processes (`client.run` passes the worker): the next round of a
    run measures each case in fresh ones, as a local run's next round does."""
    worker = dask_worker or get_worker()
    worker.plugins[plugin_name].pool.close()
