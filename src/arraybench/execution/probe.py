"""In the arraybench process (`arraybench info`): the probe, which starts each backend's worker once to learn
its version, devices and verified settings."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from arraybench.backends import BACKENDS
from arraybench.backends.backend import child_env, thread_env
from arraybench.core.case import Case
from arraybench.execution.parent import STARTUP_TIMEOUT, RunConfig, Worker, WorkerDied, WorkerTimeout
from arraybench.machine import device_survey
from arraybench.measure.timing import TimerConfig


def probe(backends: list[str] | None = None, threads: int = 1, dtype: str = "float64",
          survey: bool = False) -> dict[str, dict[str, Any]]:
    """Per backend: {"available": bool, "reason": str, "info": {...}} — started in parallel.

    `survey`: also every device of every kind the framework sees (device_survey.py), as "devices"
    (a list of Device dicts) and, where the survey failed, "survey_problem".
    """
    names = backends or list(BACKENDS)
    # The workers' logs live as long as the probe: a failure's message already carries its tail.
    with tempfile.TemporaryDirectory(prefix="arraybench-probe-") as log_dir:
        out = _probe(names, threads, dtype, survey, Path(log_dir))
    return {name: out[name] for name in names}


def _probe(names: list[str], threads: int, dtype: str, survey: bool, log_dir: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    started: dict[str, Worker] = {}
    surveys: dict[str, subprocess.Popen[str]] = {}
    # A probe asks for no case: its timer and seed are never used.
    config = RunConfig(TimerConfig(), seed=0, timeout=STARTUP_TIMEOUT, log_dir=log_dir)
    for name in names:
        cls = BACKENDS[name]
        ok, reason = cls.installed()
        if not ok:
            out[name] = {"available": False, "reason": reason, "info": {"version": cls.version()}}
            continue
        device = cls.devices_supported[0]
        case = Case("probe", (), name, "eager", dtype, threads, device)
        started[name] = Worker(case, config)
        if survey:
            surveys[name] = device_survey.start(name, child_env(thread_env(threads)))
    for name, worker in started.items():
        try:
            worker.start()
            if worker.unavailable is not None:
                out[name] = {"available": False, "reason": worker.unavailable, "info": {}}
            else:
                out[name] = {"available": True, "reason": "", "info": worker.info or {}}
        except (WorkerDied, WorkerTimeout) as e:
            out[name] = {"available": False, "reason": f"failed to start: {e}", "info": {}}
        finally:
            worker.kill()
    for name, proc in surveys.items():
        found, problem = device_survey.result(proc)
        out[name]["devices"] = [asdict(d) for d in found]
        if problem:
            out[name]["survey_problem"] = problem
    return out
