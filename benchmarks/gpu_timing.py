"""Checks of arraybench's GPU timing on a real GPU; needs CUDA torch and/or CuPy (and JAX for its parts).

1. arraybench's Timer (pipelined: one sync per block) against CUDA events, for kernels of about
   10 µs, 1 ms and 100 ms on torch and CuPy: the medians must agree within ±5 %.
2. Launch/dispatch cost per call of each framework: a one-element `x + 1`, timed back to back
   (what a loop of launches costs) and one call with its sync alone (what a caller waiting on
   each result pays).
3. TF32 stays off: a float32 matmul passes arraybench's matmul check in full precision and fails
   it with TF32 on (torch's allow_tf32, JAX's default precision), proving the check would notice.
4. JAX device-to-host: `np.asarray` of the same array a second time is a cache hit; arraybench's
   transfer_to_host case copies on every call (its GB/s is set beside torch's and CuPy's).

Usage: PYTHONPATH=src python3 benchmarks/gpu_timing.py [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from arraybench.measure.timing import Timer, TimerConfig

# JAX shares the GPU with torch and CuPy here: no grabbing 75 % of its memory at start-up.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

TARGETS = (10e-6, 1e-3, 100e-3)
TOLERANCE = 0.05
CONFIG = TimerConfig(min_time=0.3, max_time=5.0, min_samples=10)


def events_median(framework: str, fn, blocks: int = 15, target_s: float = 0.02) -> float:
    """Per-call device time from CUDA events around blocks of back-to-back calls."""
    if framework == "torch":
        import torch

        def new_event():
            return torch.cuda.Event(enable_timing=True)

        def elapsed(a, b):
            return a.elapsed_time(b) / 1e3

        sync = torch.cuda.synchronize
    else:
        import cupy

        new_event = cupy.cuda.Event

        def elapsed(a, b):
            return cupy.cuda.get_elapsed_time(a, b) / 1e3

        def sync():
            cupy.cuda.get_current_stream().synchronize()

    def block(k: int) -> float:
        start, end = new_event(), new_event()
        start.record()
        for _ in range(k):
            fn()
        end.record()
        end.synchronize()
        return elapsed(start, end) / k

    one = block(3)
    k = max(1, int(target_s / max(one, 1e-7)))
    sync()
    return statistics.median(block(k) for _ in range(blocks))


def kernel(framework: str, target: float):
    """A float32 matmul (or an element-wise op for the smallest target) sized to take ~`target`."""
    if framework == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False

        def make(n: int, elementwise: bool):
            if elementwise:
                x = torch.randn(n, device="cuda")
                return (lambda: torch.sin(x)), f"sin of {n} float32"
            a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
            return (lambda: a @ b), f"matmul {n}² float32"

        sync = torch.cuda.synchronize
    else:
        import cupy

        def make(n: int, elementwise: bool):
            if elementwise:
                x = cupy.random.standard_normal(n, dtype="float32")
                return (lambda: cupy.sin(x)), f"sin of {n} float32"
            a = cupy.random.standard_normal((n, n), dtype="float32")
            b = cupy.random.standard_normal((n, n), dtype="float32")
            return (lambda: a @ b), f"matmul {n}² float32"

        def sync():
            cupy.cuda.get_current_stream().synchronize()

    elementwise = target < 1e-4
    n = 2**22 if elementwise else 1024
    for _ in range(4):  # scale n towards the target: linear for sin, cubic for matmul
        fn, what = make(n, elementwise)
        t = events_median(framework, fn, blocks=3, target_s=0.005)
        ratio = target / t
        if 0.7 < ratio < 1.4:
            break
        n = int(n * ratio) if elementwise else int(n * ratio ** (1 / 3))
        n = max(256, n - n % 256)
    return fn, sync, what


def hidden_launch_time(framework: str, fn, busy, repeats: int = 21) -> float:
    """Device time of one call alone: events around it while a long `busy` kernel queued just
    before keeps the GPU occupied, so the host's launch cost is hidden (what nvbench does)."""
    if framework == "torch":
        import torch

        def new_event():
            return torch.cuda.Event(enable_timing=True)

        def elapsed(a, b):
            return a.elapsed_time(b) / 1e3
    else:
        import cupy

        new_event = cupy.cuda.Event

        def elapsed(a, b):
            return cupy.cuda.get_elapsed_time(a, b) / 1e3
    times = []
    for _ in range(repeats):
        start, end = new_event(), new_event()
        busy()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(elapsed(start, end))
    return statistics.median(times)


def check_against_events(frameworks: list[str], rounds: int = 5) -> list[dict]:
    """arraybench's median against events, measured in alternation (ABAB...) so the host's drift
    falls on both alike; plus each kernel's device time with its launch hidden."""
    rows = []
    for fw in frameworks:
        busy, _, _ = kernel(fw, 2e-3)
        for target in TARGETS:
            fn, sync, what = kernel(fw, target)
            ab_runs, ev_runs, latencies = [], [], []
            for _ in range(rounds if target < 0.05 else 2):
                t = Timer(fn, (), sync=lambda _, sync=sync: sync(), config=CONFIG, pipelined=True).run()
                ab_runs.append(t.measurement.median)
                latencies.append(t.latency_s)
                ev_runs.append(events_median(fw, fn))
            ab, ev = statistics.median(ab_runs), statistics.median(ev_runs)
            rows.append({
                "framework": fw, "kernel": what, "arraybench_s": ab, "events_s": ev, "ratio": ab / ev,
                "arraybench_rounds_s": ab_runs, "events_rounds_s": ev_runs,
                "device_time_launch_hidden_s": hidden_launch_time(fw, fn, busy),
                "latency_s": statistics.median(latencies), "within_5pct": abs(ab / ev - 1) <= TOLERANCE,
            })
    return rows


def dispatch_costs(frameworks: list[str]) -> list[dict]:
    """Per-call cost of a one-element add, back to back and alone with its sync."""
    cases = []
    if "torch" in frameworks:
        import torch

        x = torch.ones(1, device="cuda")
        compiled = torch.compile(lambda v: v + 1)
        cases += [("torch eager", lambda: x + 1, lambda _: torch.cuda.synchronize()),
                  ("torch.compile", lambda: compiled(x), lambda _: torch.cuda.synchronize())]
    if "cupy" in frameworks:
        import cupy

        y = cupy.ones(1, dtype="float32")
        cases.append(("cupy", lambda: y + 1, lambda _: cupy.cuda.get_current_stream().synchronize()))
    if "jax" in frameworks:
        import jax
        import jax.numpy as jnp

        z = jnp.ones(1)
        jitted = jax.jit(lambda v: v + 1)
        cases += [("jax eager", lambda: z + 1, jax.block_until_ready),
                  ("jax.jit", lambda: jitted(z), jax.block_until_ready)]
    rows = []
    for name, fn, sync in cases:
        t = Timer(fn, (), sync=sync, config=TimerConfig(min_time=0.5), pipelined=True).run()
        rows.append({"call": name, "back_to_back_s": t.measurement.median, "alone_synced_s": t.latency_s})
    return rows


def tf32_check() -> list[dict]:
    """The matmul workload's own check on a float32 GPU product, TF32 off and on."""
    from arraybench.workloads import get_workload

    wl = get_workload("matmul")
    n = 1024
    params = {**wl.defaults, "n": n}
    a, b = wl.host_inputs(0, "float32", params)
    ref = wl.expected((a, b), params)
    rows = []
    import torch

    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        out = (torch.from_numpy(a).cuda() @ torch.from_numpy(b).cuda()).cpu().numpy()
        c = wl.check(out, ref, "float32", params)
        rows.append({"framework": "torch", "tf32": tf32, "rel_err": c.rel_err, "tolerance": c.tolerance,
                     "passes": c.correct})
    torch.backends.cuda.matmul.allow_tf32 = False
    # JAX in a child: its precision default is read at import; "default" means TF32 on Hopper.
    for precision in ("highest", "default"):
        code = (
            "import json,sys,numpy as np,jax,jax.numpy as jnp;"
            f"jax.config.update('jax_default_matmul_precision','{precision}');"
            "a,b=(np.load(p) for p in sys.argv[1:3]);np.save(sys.argv[3],np.asarray(jnp.asarray(a)@jnp.asarray(b)))"
        )
        np.save("/tmp/ab_a.npy", a)
        np.save("/tmp/ab_b.npy", b)
        try:
            subprocess.run([sys.executable, "-c", code, "/tmp/ab_a.npy", "/tmp/ab_b.npy", "/tmp/ab_c.npy"],
                           capture_output=True, text=True, check=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            rows.append({"framework": "jax", "precision": precision, "error": str(e)})
            continue
        c = wl.check(np.load("/tmp/ab_c.npy"), ref, "float32", params)
        rows.append({"framework": "jax", "precision": precision, "tf32": precision == "default",
                     "rel_err": c.rel_err, "tolerance": c.tolerance, "passes": c.correct})
    return rows


def jax_download_check() -> dict:
    """Seconds per np.asarray of one 3000² float32 jax.Array: first call, a repeat, and arraybench's."""
    import jax
    import jax.numpy as jnp

    from arraybench.backends.jax_backend import JaxBackend
    from arraybench.workloads.transfer import to_host

    x = jnp.ones((3000, 3000), dtype=jnp.float32)
    x.block_until_ready()
    t0 = time.perf_counter()
    np.asarray(x)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    np.asarray(x)
    repeat = time.perf_counter() - t0
    be = JaxBackend(threads=1, dtype="float32", device="gpu")
    be.load()
    download = to_host.builder("jax", "eager")(be, n=3000)
    y = jax.device_put(np.ones((3000, 3000), np.float32), be.dev)
    t = Timer(download, (y,), sync=None, config=TimerConfig(min_time=0.5)).run()
    nbytes = 3000 * 3000 * 4
    return {"first_np_asarray_s": first, "repeat_np_asarray_s": repeat,
            "arraybench_median_s": t.measurement.median, "arraybench_gbs": nbytes / t.measurement.median / 1e9}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--json", help="write the results here")
    p.add_argument("--parts", default="events,dispatch,tf32,jax", help="which checks to run")
    args = p.parse_args()
    parts = set(args.parts.split(","))
    frameworks = []
    for fw in ("torch", "cupy", "jax"):
        try:
            __import__(fw)
            frameworks.append(fw)
        except ImportError:
            pass
    report = {
        "events": check_against_events([f for f in frameworks if f in ("torch", "cupy")]) if "events" in parts else [],
        "dispatch": dispatch_costs(frameworks) if "dispatch" in parts else [],
        "tf32": tf32_check() if "torch" in frameworks and "tf32" in parts else [],
        "jax_download": jax_download_check() if "jax" in frameworks and "jax" in parts else {},
    }
    print("arraybench median vs CUDA events (pipelined timer):")
    for r in report["events"]:
        print(f"  {r['framework']:6} {r['kernel']:26} arraybench {r['arraybench_s'] * 1e6:10.2f} µs  "
              f"events {r['events_s'] * 1e6:10.2f} µs  ratio {r['ratio']:.3f}  "
              f"{'ok' if r['within_5pct'] else 'OUTSIDE ±5%'}  (device time, launch hidden: "
              f"{r['device_time_launch_hidden_s'] * 1e6:.2f} µs; one call alone, synced: "
              f"{r['latency_s'] * 1e6:.1f} µs)")
    print("dispatch cost of a one-element add:")
    for r in report["dispatch"]:
        print(f"  {r['call']:14} back to back {r['back_to_back_s'] * 1e6:7.2f} µs/call; "
              f"alone with its sync {r['alone_synced_s'] * 1e6:7.2f} µs")
    print("TF32 and arraybench's float32 matmul check (n=1024):")
    for r in report["tf32"]:
        print(f"  {r}")
    print(f"JAX device-to-host of 3000² float32: {report['jax_download']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    bad = [r for r in report["events"] if not r["within_5pct"]]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
