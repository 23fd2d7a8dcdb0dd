"""Loads workloads defined in a user's Python file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from arraybench.errors import UsageError
from arraybench.workloads.base import Workload

# Per file: its modification time when imported, and its workloads.
_loaded: dict[str, tuple[int, dict[str, Workload]]] = {}


def load_workload_file(path: str) -> dict[str, Workload]:
    """Import `path` and return the Workloads it defines at module level, by name.

    A file is imported again only once it has changed, so a notebook that edits it and runs
    again plans with what the worker processes will import.
    """
    key = str(Path(path).resolve())
    if not Path(key).is_file():
        raise UsageError(f"workload file {path!r} does not exist")
    mtime = Path(key).stat().st_mtime_ns
    if key in _loaded and _loaded[key][0] == mtime:
        return _loaded[key][1]
    spec = importlib.util.spec_from_file_location(f"arraybench_user_{len(_loaded)}", key)
    if spec is None or spec.loader is None:
        raise UsageError(f"workload file {path!r} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise UsageError(f"workload file {path!r} failed to import: {type(e).__name__}: {e}") from e
    found = {}
    for value in vars(module).values():
        if isinstance(value, Workload):
            value.source = key
            found[value.name] = value
    if not found:
        raise UsageError(f"workload file {path!r} defines no workload")
    for wl in found.values():
        if wl.make_inputs is None:
            raise UsageError(f"workload {wl.name!r} in {path!r} has no inputs: add @{wl.name}.inputs")
        if wl.make_reference is None:
            raise UsageError(f"workload {wl.name!r} in {path!r} has no reference: add @{wl.name}.reference")
    _loaded[key] = (mtime, found)
    return found
