"""The run's compile caches: each framework's persistent cache pointed at a directory of the run, so
that a case's later processes load the code its first process compiled, and how a worker tells
whether a first call compiled (cold) or was served from the cache (warm).

Imports no framework and no NumPy: a worker applies `compile_cache_env` before it loads its
framework. A directory per run, not the frameworks' defaults: torch's /tmp/torchinductor_$USER
would otherwise make even a later run's first process warm, and its first call no compile at all.
Only what holds no case's code is shared across runs (Backend.machine_cache, core/usercache.py): a
framework's once-per-machine set-up (TorchBackend.prepare_jit) and the jit floor (measure/floors.py).

Which frameworks have one (checked with jax 0.10 and torch 2.13): a hit adds no file to the cache,
so a first call that added files compiled and stored.
- JAX: the persistent compilation cache, one `<name>-<hash>-cache` file per executable.
- torch.compile: Inductor's FX graph and AOTAutograd caches, and the C++/Triton code they point to.
None for the others:
- TensorFlow (2.21) has one for `jit_compile=True` (TF_XLA_FLAGS=--tf_xla_persistent_cache_directory)
  and it works, but its key holds the function's traced name, numbered in the order the process
  traced functions: a process whose earlier cases differ (each round shuffles them; only the first
  process measures the floors) misses and compiles again. And each hit logs an ERROR line ("...could
  lead to execution errors such as SIGILL", about a tuning hint its host check does not list) that a
  worker dying later would report as its last output.
- Numba's cache is opt-in per function (`cache=True`) and keyed on the source file and the pickled
  contents of a closure's cells: a workload's closure over its input arrays would be pickled and
  hashed on every first call, and a function with no source file is not cached.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

FirstCall = Literal["cold", "warm"]


def compile_dir(cache: Path) -> Path:
    """Where a run's cache (session.cache_dir) keeps the frameworks' compile caches."""
    return cache / "compile"


def backend_dir(backend_name: str, root: Path) -> Path:
    """The directory of `backend_name`'s compile cache under `root` (compile_dir)."""
    return root / backend_name


def compile_cache_env(backend_name: str, root: Path) -> dict[str, str]:
    """Environment that points `backend_name`'s persistent compile cache at `root/<backend>` and has
    it store every entry; {} for a backend without one. Applied before the framework is imported."""
    d = backend_dir(backend_name, root)
    if backend_name == "jax":
        return {
            "JAX_COMPILATION_CACHE_DIR": str(d),
            # Defaults store only compiles over 1 s: most cases' compiles would never be cached.
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            # -1: no minimum size, and none that JAX may pick for the file system instead (what 0 allows).
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
        }
    if backend_name == "torch":
        return {
            "TORCHINDUCTOR_CACHE_DIR": str(d),
            "TRITON_CACHE_DIR": str(d / "triton"),
            # On by default in torch 2.13; forced, so that an older default or a user's 0 does not
            # leave every process cold.
            "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
            "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
        }
    return {}


def uses_compile_cache(backend_name: str, mode: str) -> bool:
    """Whether a case's first call in `mode` goes through `backend_name`'s compile cache."""
    return mode != "eager" and backend_name in ("jax", "torch")


def entries(directory: Path) -> int:
    """Files under `directory` (0 when it does not exist yet): a few hundred at most in a run."""
    return sum(len(files) for _, _, files in os.walk(directory))


def first_call_state(before: int, after: int, has_cache: bool) -> FirstCall | None:
    """How a first call met the compile cache, from its file count before and after the call:
    "cold" (it gained entries: a compile happened and was stored), "warm" (none: the compiled code
    came from the cache), None (no compile cache for this backend and mode)."""
    if not has_cache:
        return None
    return "cold" if after > before else "warm"
