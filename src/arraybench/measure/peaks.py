"""Peaks: this machine's BLAS matmul GFLOP/s, streaming GB/s and the timer's own per-call cost.

Measured in a short-lived subprocess with the run's thread settings applied before NumPy is
imported (as in a worker), so neither this process's thread pools nor its imports matter.
`ARRAYBENCH_PEAKS=skip` leaves them out (tests, or a machine where 2 s matter);
`ARRAYBENCH_PEAKS='{"matmul_gflops": {...}, "bandwidth_gbs": ...}'` states them instead.
A run on the GPU adds the GPU's peaks under "gpu", measured the same way through CUDA events.
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
from arraybench.measure.limits import pin_threads

MATMUL_N = 1024
STREAM_BYTES = 64 * 2**20
# A block that stays in each core's L2 (256 KiB: every x86 server core of the last decade has at
# least that much), copied over and over: the cache roof of the roofline, for cases whose data fit.
CACHE_BYTES = 256 * 2**10
CACHE_REPEATS = 64
BUDGET_S = 0.3  # of repeats per measurement; the best repeat is kept
METHOD = (
    f"best of repeats over {BUDGET_S:g} s each: numpy float32/float64 matmul of {MATMUL_N}×{MATMUL_N} "
    f"matrices (2·n³ FLOPs); np.copyto of a {STREAM_BYTES // 2**20} MiB array (read + write bytes), and "
    f"{CACHE_REPEATS} copies of a {CACHE_BYTES // 2**10} KiB one, which stays in cache (the cache roof); "
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
    src, dst = copy_pair(STREAM_BYTES)
    bandwidth = 2.0 * STREAM_BYTES / _best(lambda: np.copyto(dst, src)) / 1e9
    return {"matmul_gflops": gflops, "bandwidth_gbs": bandwidth, **_cache_bandwidth(),
            "harness_call_s": _harness_call()}


def copy_pair(nbytes: int) -> tuple[Any, Any]:
    """A source of ones and a destination of `nbytes` each, half a page apart modulo 4 KiB.

    Two arrays allocated one after the other often start at the same offset within a page (a
    malloc header past a page boundary), and a copy between them then stalls on 4K aliasing:
    every load looks like it depends on the store 4 KiB before it. Measured here: a 256 KiB
    copy at 74 GB/s, or at 5.5 GB/s when the two happened to be 256 KiB + 16 bytes apart; the
    cache roof of a run came out below its DRAM roof. Both views of one buffer, placed so that
    they differ by 2 KiB modulo 4 KiB, cannot alias.
    """
    import numpy as np

    n = nbytes // 8
    buf = np.empty(2 * n + 1024)  # 8 KiB to spare for the placement
    start = (-buf.ctypes.data % 4096) // 8  # the first element on a page boundary
    src = buf[start:start + n]
    dst = buf[start + n + 256:start + 2 * n + 256]  # 2 KiB past the next page multiple
    src[:] = 1.0
    return src, dst


def _cache_bandwidth() -> dict[str, Any]:
    """GB/s of a copy whose source and destination stay in cache (read + write bytes), and its size.

    Copied CACHE_REPEATS times a timing, so that the clock's own cost is no share of the figure.
    Measured on one core, as the streaming figure is: a core's own cache is what a case's small
    arrays sit in.
    """
    import numpy as np

    src, dst = copy_pair(CACHE_BYTES)

    def copies() -> None:
        for _ in range(CACHE_REPEATS):
            np.copyto(dst, src)

    return {"cache_bandwidth_gbs": 2.0 * CACHE_BYTES * CACHE_REPEATS / _best(copies) / 1e9,
            "cache_bytes": CACHE_BYTES}


def _harness_call() -> float:
    """What arraybench's timer reports for a function that does nothing: its own per-call cost."""
    from arraybench.measure.timing import Timer, TimerConfig

    def noop(a: object, b: object) -> None:
        return None

    config = TimerConfig(warmup_time=0.01, min_time=BUDGET_S / 3, max_time=BUDGET_S)
    return Timer(noop, (1.0, 2.0), config=config).run().measurement.median


GPU_MATMUL_N = 8192
GPU_COPY_BYTES = 2**30
GPU_METHOD = (
    f"best of CUDA-event-timed repeats over {BUDGET_S:g} s each: float32 (TF32 off) and float64 "
    f"matmul of {GPU_MATMUL_N}² matrices (2·n³ FLOPs); device-to-device copy of "
    f"{GPU_COPY_BYTES // 2**20} MiB (read + write bytes)"
)


def _measure_gpu_here() -> dict[str, Any]:
    """GPU peaks through torch (or CuPy where torch has no CUDA), each timed by CUDA events."""
    try:
        import torch

        if not torch.cuda.is_available():
            raise ImportError
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")

        def timer(fn: Any) -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

            def once() -> None:
                start.record()
                fn()
                end.record()
                end.synchronize()
                timings.append(start.elapsed_time(end) / 1e3)

            timings: list[float] = []
            _best(once)
            return min(timings[1:])

        zeros, randn, via = torch.empty, torch.randn, "torch"
        dtypes = {"float32": torch.float32, "float64": torch.float64}
        dev = {"device": "cuda"}
    except ImportError:
        import cupy

        def timer(fn: Any) -> float:
            start, end = cupy.cuda.Event(), cupy.cuda.Event()

            def once() -> None:
                start.record()
                fn()
                end.record()
                end.synchronize()
                timings.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)

            timings: list[float] = []
            _best(once)
            return min(timings[1:])

        def randn(*shape: int, dtype: Any, **_: Any) -> Any:
            return cupy.random.standard_normal(shape, dtype=dtype)

        def zeros(*shape: int, dtype: Any, **_: Any) -> Any:
            return cupy.empty(shape, dtype=dtype)

        via, dtypes, dev = "cupy", {"float32": "float32", "float64": "float64"}, {}
    gflops = {}
    n = GPU_MATMUL_N
    for name, dtype in dtypes.items():
        a, b = randn(n, n, dtype=dtype, **dev), randn(n, n, dtype=dtype, **dev)
        gflops[name] = 2.0 * n**3 / timer(lambda a=a, b=b: a @ b) / 1e9
        del a, b
    src = zeros(GPU_COPY_BYTES // 4, dtype=dtypes["float32"], **dev)
    dst = zeros(GPU_COPY_BYTES // 4, dtype=dtypes["float32"], **dev)
    copy = (lambda: dst.copy_(src)) if via == "torch" else (lambda: dst.__setitem__(Ellipsis, src))
    bandwidth = 2.0 * GPU_COPY_BYTES / timer(copy) / 1e9
    return {"matmul_gflops": gflops, "bandwidth_gbs": bandwidth, "via": via, "method": GPU_METHOD}


def measure(threads: int, gpu: bool = False) -> dict[str, Any]:
    """The peaks at `threads` threads, with how they were obtained; {"method": "skipped"} if off.

    With `gpu`, the first GPU's peaks too, under the key "gpu" (same fields as the CPU's)."""
    setting = os.environ.get("ARRAYBENCH_PEAKS", "")
    if setting == "skip":
        return {"method": "skipped (ARRAYBENCH_PEAKS=skip)"}
    if setting:
        try:
            stated = json.loads(setting)
        except json.JSONDecodeError:
            raise UsageError("ARRAYBENCH_PEAKS must be 'skip' or a JSON object of peaks") from None
        return {**stated, "method": "stated by ARRAYBENCH_PEAKS"}
    from arraybench.backends.backend import child_env, thread_env

    env = child_env(thread_env(threads))

    def probe(*flags: str) -> dict[str, Any]:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "arraybench.measure.peaks", "--threads", str(threads), *flags],
                capture_output=True, text=True, env=env, timeout=120, check=True,
            )
            return json.loads(proc.stdout)
        except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
            return {"method": f"failed: {type(e).__name__}"}

    peaks = probe()
    out = {**peaks, "threads": threads, "method": peaks.get("method", METHOD)}
    if gpu:
        out["gpu"] = probe("--gpu")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="arraybench.measure.peaks")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--gpu", action="store_true", help="the first GPU's peaks instead of the CPU's")
    args = p.parse_args(argv)
    pin_threads(args.threads)  # before NumPy starts its BLAS threads, as in a worker
    print(json.dumps(_measure_gpu_here() if args.gpu else _measure_here()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
