"""Floors: what a backend's call costs before it does any work.

A case's time includes costs no computation can avoid: the framework's dispatch of one operation
(`empty_call_s`: `x + x` on a one-element array of the case's dtype on the case's device, eager
and compiled, synced as a case is). The first worker of each configuration measures it, with the
Timer that times cases, for the modes the run's cases of that configuration use, and records it in
`backend_info`; the report calls a case dispatch-bound when its time is within a small factor of
its backend·mode's empty call. (The harness's own per-call cost, the same for
every backend, is measured with the machine's peaks: `peaks.harness_call_s`.)
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.measure.timing import Timer, TimerConfig

# A floor is a few microseconds at most: a short sampling pins it, and the worker's start-up
# pays it once (a compiled empty call's compilation dominates: see `measure`).
FLOOR_TIMER = TimerConfig(warmup_time=0.02, min_time=0.05, max_time=0.1, min_samples=5, processes=1)


def _add(x: Any) -> Any:
    return x + x


def empty_call_s(be: Backend, mode: str, config: TimerConfig = FLOOR_TIMER) -> float:
    """Median time of `x + x` on a one-element device array in `mode` (eager, or compiled by `be.jit`)."""
    x = be.to_device(np.ones(1, dtype=be.dtype))
    be.sync(x)
    sync = be.sync if be.asynchronous else None
    if mode != "eager":
        be.prepare_jit()  # the process's compiler set-up is not the floor's (and belongs in no run's cache)
    # Nor is the floor's compile: it is the same in every run, no record reports it, and in the run's
    # empty cache torch.compile built it with the C++ compiler in every run's first process (2-3 s of a
    # torch worker's start on the 2-core VM). Kept per machine, it loads in 0.3 s. (Eager compiles nothing.)
    with be.machine_cache():
        fn = _add if mode == "eager" else be.jit(_add, mode)
        return Timer(fn, (x,), sync=sync, config=config, pipelined=be.pipelined).run().measurement.median


def measure(be: Backend, modes: Collection[str], config: TimerConfig = FLOOR_TIMER) -> dict[str, Any]:
    """`empty_call_s` per mode of a loaded backend among `modes`, the modes its cases use: a compiled
    floor costs a compilation (torch.compile's first in a process: 10-30 s on a loaded 2-core
    machine), which a run of no compiled case never uses. A mode that fails is left out with its
    reason in `empty_call_errors` (a floor is context, never a reason to fail a run)."""
    calls: dict[str, float] = {}
    errors: dict[str, str] = {}
    for mode in (m for m in be.modes() if m in modes):
        try:
            calls[mode] = empty_call_s(be, mode, config)
        except Exception as e:  # recorded, not raised
            errors[mode] = f"{type(e).__name__}: {e}"[:200]
    out: dict[str, Any] = {"empty_call_s": calls}
    if errors:
        out["empty_call_errors"] = errors
    return out
