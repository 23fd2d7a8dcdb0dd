"""JAX on the CPU, each call synced: asynchronous dispatch on or off, in fresh processes taking turns.

    python benchmarks/jax_dispatch.py [--processes 4] [--seconds 0.6]

Every call arraybench times on the CPU is followed by its sync, so JAX's asynchronous dispatch buys
no overlap there: it hands the call to a pool thread and wakes the caller when it ends. This times,
in fresh processes under a worker's thread settings (`PJRT_NPROC` and the BLAS pools at the usable
cores), jitted calls from the small and large presets with `jax_cpu_enable_async_dispatch` on (JAX's
default) and off (what `JaxBackend` sets for a one-device CPU case), the two taking turns process by
process. It prints each process's median per call, and per call off/on: the ratio of the medians over
processes, and of the fastest processes (what the call costs where no other tenant slowed it). Target:
off is no slower at any size (fastest off/on ≤ 1.05; the medians' ratio moves with the host's spells
on a shared machine), and far faster where the hand-off is most of the call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

CALLS = [("grad", 10_000), ("fft", 1000), ("elementwise_mul", 1000), ("matmul", 100), ("sort", 1000),
         ("fft", 1_000_000), ("elementwise_mul", 1_000_000), ("matmul", 2000)]

CHILD = r"""
import statistics, sys, time
import jax, jax.numpy as jnp
jax.config.update("jax_cpu_enable_async_dispatch", sys.argv[1] == "on")
op, n, seconds = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
a = jax.random.normal(jax.random.PRNGKey(0), (n, n) if op == "matmul" else (n,), jnp.float32)
f, args = {
    "grad": (jax.jit(jax.grad(lambda w, x: jnp.sum((w * x) ** 2))), (a, a)),
    "fft": (jax.jit(jnp.fft.fft), (a,)),
    "elementwise_mul": (jax.jit(lambda x, y: x * y), (a, a)),
    "matmul": (jax.jit(jnp.matmul), (a, a)),
    "sort": (jax.jit(jnp.sort), (a,)),
}[op]
f(*args).block_until_ready()
per_call, end = [], time.perf_counter() + seconds
while time.perf_counter() < end or len(per_call) < 5:
    t0, calls = time.perf_counter(), 0
    while time.perf_counter() - t0 < 0.02:
        f(*args).block_until_ready()
        calls += 1
    per_call.append((time.perf_counter() - t0) / calls)
print(statistics.median(per_call))
"""


def worker_env() -> dict[str, str]:
    n = str(len(os.sched_getaffinity(0)))
    return {**os.environ, "JAX_PLATFORMS": "cpu", "PJRT_NPROC": n, "OMP_NUM_THREADS": n,
            "OPENBLAS_NUM_THREADS": n, "MKL_NUM_THREADS": n}


def one(dispatch: str, op: str, n: int, seconds: float) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, dispatch, op, str(n), str(seconds)], env=worker_env(),
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=0.6)
    args = parser.parse_args()
    print(f"{'call':24s} {'async on: per process (µs)':44s} {'async off: per process (µs)':44s} off/on: "
          "median fastest")
    worst = 0.0
    for op, n in CALLS:
        times: dict[str, list[float]] = {"on": [], "off": []}
        for _ in range(args.processes):
            for dispatch in times:
                times[dispatch].append(one(dispatch, op, n, args.seconds) * 1e6)
        ratio = statistics.median(times["off"]) / statistics.median(times["on"])
        fastest = min(times["off"]) / min(times["on"])
        worst = max(worst, fastest)
        cells = [" ".join(f"{t:.4g}" for t in times[d]) for d in ("on", "off")]
        print(f"{f'{op}[{n}]':24s} {cells[0]:44s} {cells[1]:44s} {ratio:6.2f} {fastest:6.2f}")
    print(f"worst fastest off/on: {worst:.2f} (target ≤ 1.05)")


if __name__ == "__main__":
    main()
