"""Synthetic results shaped like a real sweep: per-call cost plus work, so crossovers, bounds and the
roofline are known."""

import math

from tests.report.test_report import record, results_of

# This machine: 50 GFLOP/s float64 matmul, 20 GB/s streaming, a 55 ns harness call.
PEAKS = {"matmul_gflops": {"float32": 100.0, "float64": 50.0}, "bandwidth_gbs": 20.0,
         "cache_bandwidth_gbs": 80.0, "cache_bytes": 262144, "harness_call_s": 55e-9, "method": "test"}
HALF_DECADES = [100, 316, 1000, 3162, 10_000, 31_623, 100_000, 316_228, 1_000_000]
POWERS_OF_TWO = [16, 32, 64, 128, 256, 512, 1024, 2048]

# (workload, sizes, flops(n), bytes(n), {label: (per-call s, s per unit of work)}, work(n))
MODELS = [
    ("elementwise_add", HALF_DECADES, lambda n: float(n), lambda n: 24.0 * n,
     {"numpy·eager": (0.5e-6, 1.4e-9), "torch·eager": (3e-6, 0.6e-9), "jax·jit": (7e-6, 0.7e-9)},
     lambda n: n),
    ("matmul", POWERS_OF_TWO, lambda n: 2.0 * n**3, lambda n: 24.0 * n * n,
     {"numpy·eager": (2e-6, 1 / 50e9), "torch·eager": (6e-6, 1 / 48e9), "jax·jit": (9e-6, 1 / 45e9)},
     lambda n: 2.0 * n**3),
    ("sort", HALF_DECADES, lambda n: None, lambda n: 16.0 * n,
     {"numpy·eager": (1e-6, 4e-9), "torch·eager": (5e-6, 2e-9)}, lambda n: n * math.log2(n)),
]


def synthetic_records(dtype="float64"):
    recs = []
    for wl, sizes, flops, nbytes, labels, work in MODELS:
        for n in sizes:
            for label, (call, per_work) in labels.items():
                backend, mode = label.split("·")
                median = call + per_work * work(n)
                recs.append(record(wl, n, backend, mode, median, dtype=dtype, params={"n": n},
                                   flops=flops(n), bytes=nbytes(n),
                                   id=f"{wl}[n={n}]/{backend}-{mode}/{dtype}/cpu/t1/x"))
    for n in (256, 1024, 4096):  # on the CPU, torch hands back a view; jax copies
        for backend, median in (("torch", 2e-6), ("jax", 1e-6 + 8 * n * n / 10e9)):
            recs.append(record("transfer_to_host", n, backend, "eager", median, dtype=dtype, params={"n": n},
                               flops=None, bytes=8.0 * n * n,
                               id=f"transfer_to_host[n={n}]/{backend}-eager/{dtype}/cpu/t1/x"))
    for wl in ("elementwise_add", "matmul", "sort"):
        recs.append(record(wl, 100, "cupy", "eager", None, status="unavailable", dtype=dtype, params={"n": 100},
                           error="cupy is not installed (pip install 'arraybench[cupy]')",
                           id=f"{wl}[n=100]/cupy-eager/{dtype}/gpu/t1/x"))
    return recs


def synthetic_results():
    return results_of(synthetic_records(), peaks=PEAKS)


def bisected_records(dtype="float64"):
    """The synthetic sweep bisected to its brackets: measure what bracket.proposals asks until it asks nothing."""
    from arraybench.stats import bracket

    recs = synthetic_records(dtype)
    for wl, _sizes, flops, nbytes, labels, work in MODELS:
        for _round in range(10):
            mine = [r for r in recs if r["workload"] == wl and r["status"] == "ok"]
            series = {f"{r['backend']}·{r['mode']}": {} for r in mine}
            for r in mine:
                lo, hi = min(r["samples_s"]), max(r["samples_s"])  # five samples: the 95 % interval is their range
                series[f"{r['backend']}·{r['mode']}"][r["size"]] = bracket.Point(r["size"], r["median_s"], lo, hi)
            wanted = bracket.proposals(series)
            if not wanted:
                break
            for n, names in wanted.items():
                for label in sorted(names):
                    if n in series[label]:
                        continue  # measured already: the hook reuses it
                    backend, mode = label.split("·")
                    call, per_work = labels[label]
                    recs.append(record(wl, n, backend, mode, call + per_work * work(n), dtype=dtype,
                                       params={"n": n}, flops=flops(n), bytes=nbytes(n),
                                       id=f"{wl}[n={n}]/{backend}-{mode}/{dtype}/cpu/t1/x"))
    return recs
