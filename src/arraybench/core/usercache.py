"""The user's arraybench cache directory: what outlives a run and is shared by the user's runs.

$ARRAYBENCH_CACHE, else $XDG_CACHE_HOME/arraybench, else ~/.cache/arraybench. It holds the built
environments (envs/) and the frameworks' once-per-machine set-up (setup/<backend>, e.g. the C++
toolchain probes torch's Inductor compiles before its first graph): nothing a case's number depends
on. A run's own compile caches stay in the run's directory (measure/compilecache.py).
Imports no framework.
"""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """The root of the user's arraybench cache (not created here)."""
    if os.environ.get("ARRAYBENCH_CACHE"):
        return Path(os.environ["ARRAYBENCH_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "arraybench"


def setup_dir(backend_name: str) -> Path:
    """Where `backend_name` keeps its once-per-machine compiler set-up, shared by the user's runs."""
    return user_cache_dir() / "setup" / backend_name
