"""Peaks: this machine's BLAS matmul GFLOP/s, streaming GB/s and the timer's own per-call cost.

Measured in a short-lived subprocess with the run's thread settings applied before NumPy is
imported (as in a worker), so neither this process's thread pools nor its imports matter.
`ARRAYBENCH_PEAKS=skip` leaves them out (tests, or a machine where 2 s matter);
`ARRAYBENCH_PEAKS='{"matmul_gflops": {...}, "bandwidth_gbs": ...}'` states them instead.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from arraybench.errors import UsageError

MATMUL_N = 1024
STREAM_BYTES = 64 * 2**20
BUDGET_S = 0.3  # of repeats per measurement; the best repeat is kept
METHOD = (
    f"best of repeats over {BUDGET_S:g} s each: numpy float32/float64 matmul of {MATMUL_N}×{MATMUL_N} "
    f"matrices (2·n³ FLOPs); np.copyto of a {STREAM_BYTES // 2**20} MiB array (read + write bytes); "
    "the timer's median for a two-argument function that does nothing (harness call)"
)


def _best(fn: Any) -> float:
    fn()  # first call pays page faults and BLAS start-up
    best = float("inf")
    deadline = time.perf_counter() + BUDGET_S
    while True:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if time.perf_counter() > deadline:
            return best


def _measure_here() -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    gflops = {}
    for dtype in ("float32", "float64"):
        a = rng.standard_normal((MATMUL_N, MATMUL_N)).astype(dtype)
        b = rng.standard_normal((MATMUL_N, MATMUL_N)).astype(dtype)
        out = np.empty_like(a)
        gflops[dtype] = 2.0 * MATMUL_N**3 / _best(lambda a=a, b=b, out=out: np.matmul(a, b, out=out)) / 1e9
    src = np.ones(STREAM_BYTES // 8)
    dst = np.empty_like(src)
    bandwidth = 2.0 * STREAM_BYTES / _best(lambda: np.copyto(dst, src)) / 1e9
    return {"matmul_gflops": gflops, "bandwidth_gbs": bandwidth, "harness_call_s": _harness_call()}


def _harness_call() -> float:
    """What arraybench's timer reports for a function that does nothing: its own per-call cost."""
    from arraybench.timing import Timer, TimerConfig

    def noop(a: object, b: object) -> None:
        return None

    config = TimerConfig(warmup_time=0.01, min_time=BUDGET_S / 3, max_time=BUDGET_S)
    return Timer(noop, (1.0, 2.0), config=config).run().measurement.median


def measure(threads: int) -> dict[str, Any]:
    """The peaks at `threads` threads, with how they were obtained; {"method": "skipped"} if off."""
    setting = os.environ.get("ARRAYBENCH_PEAKS", "")
    if setting == "skip":
        return {"method": "skipped (ARRAYBENCH_PEAKS=skip)"}
    if setting:
        try:
            stated = json.loads(setting)
        except json.JSONDecodeError:
            raise UsageError("ARRAYBENCH_PEAKS must be 'skip' or a JSON object of peaks") from None
        return {**stated, "method": "stated by ARRAYBENCH_PEAKS"}
    from arraybench.backends.base import child_env, thread_env

    env = child_env(thread_env(threads))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "arraybench.peaks", "--threads", str(threads)],
            capture_output=True, text=True, env=env, timeout=120, check=True,
        )
        peaks = json.loads(proc.stdout)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
        return {"method": f"failed: {type(e).__name__}"}
    return {**peaks, "threads": threads, "method": METHOD}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="arraybench.peaks")
    p.add_argument("--threads", type=int, required=True)
    args = p.parse_args(argv)
    from arraybench.worker import pin_threads

    pin_threads(args.threads)  # before NumPy starts its BLAS threads, as in a worker
    print(json.dumps(_measure_here()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
