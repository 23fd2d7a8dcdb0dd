"""How much does where arrays sit relative to a page move a kernel's time?

    python benchmarks/layout.py [--rounds 7] [--json OUT.json]

Times NumPy kernels with their arrays placed at fixed byte offsets within a 4 KiB page: the first
input at offset 0, the second at d, the output at 2d (mod 4096), for d = 0, 64, …, 4032. Two
arrays at the same page offset make loads and stores 4 KiB apart alias in the CPU's memory
disambiguation (4K aliasing); the same effect once made the cache roof read 5.5 GB/s instead of
74 GB/s here. Kernels: `a + b` at 251 189 float32 (the size of issue 23's false verdict) and
`a * b` at 10⁶ float32 (out of L2). Offsets are interleaved over rounds, so a slow spell of the
host lands on every offset alike; each offset's figure is the median over rounds of the best of
a few timings. The spread (slowest offset over fastest) is what a fixed layout can move a number
by between two runs whose allocator placed the arrays differently.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import numpy as np

from arraybench.measure.case_executor import LINE, PAGE, placed

OFFSETS = tuple(range(0, PAGE, LINE))


def timed(fn: Callable[[], object], target_s: float = 0.02, repeats: int = 5) -> float:
    """Seconds per call: the best of `repeats` timings of enough calls to last `target_s`."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    loops = max(1, int(target_s / one))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - t0) / loops)
    return best


def kernel_at(name: str, n: int, d: int) -> Callable[[], object]:
    rng = np.random.default_rng(0)
    zeros = np.zeros(n, dtype=np.float32)
    # The same placement the workers give a case's inputs (case_executor.placed).
    a, b, c = placed(zeros, 0), placed(zeros, d), placed(zeros, (2 * d) % PAGE)
    a[...] = rng.standard_normal(n)
    b[...] = rng.standard_normal(n)
    op = np.add if name == "add" else np.multiply
    return lambda: op(a, b, out=c)


KERNELS = (("add", 251_189), ("mul", 1_000_000))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    out = {}
    for name, n in KERNELS:
        fns = {d: kernel_at(name, n, d) for d in OFFSETS}
        per: dict[int, list[float]] = {d: [] for d in OFFSETS}
        for r in range(args.rounds):
            order = list(OFFSETS)
            np.random.default_rng(r).shuffle(order)
            for d in order:
                per[d].append(timed(fns[d]))
        med = {d: statistics.median(v) for d, v in per.items()}
        lo, hi = min(med.values()), max(med.values())
        fast = min(med, key=med.__getitem__)
        slow = max(med, key=med.__getitem__)
        print(f"\n{name} at {n} float32: offsets between arrays 0..4032 B, median over {args.rounds} rounds")
        for d in OFFSETS:
            bar = "#" * int(40 * (med[d] - lo) / (hi - lo)) if hi > lo else ""
            print(f"  {d:5d} B  {med[d] * 1e6:9.2f} µs  {bar}")
        print(f"  spread: slowest ({slow} B) / fastest ({fast} B) = {hi / lo:.3f}; "
              f"median offset {statistics.median(med.values()) * 1e6:.2f} µs; offset 0: {med[0] * 1e6:.2f} µs")
        out[f"{name}_{n}"] = {"median_s": {str(d): med[d] for d in OFFSETS}, "spread": hi / lo}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
