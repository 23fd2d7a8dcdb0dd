"""Each compiled linreg implementation of arraybench against hand-written versions for its framework.

Runs one subprocess per framework (thread settings applied before import, as in a worker);
inside it, arraybench's implementation and the hand-written ones take turns for ROUNDS rounds
on the same inputs, timed by the same Timer. Prints per-round-median times and the ratio of
arraybench's implementation to the fastest hand-written one (target ≤ 1.3).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

ROUNDS = 3
SIZES = (2, 100)
DTYPE = "float64"
N, ITERS, LR = 10_000, 1_000, 1e-3
C = LR * 2.0 / N


def hand_numba() -> dict[str, Any]:
    import numba
    import numpy as np

    @numba.njit
    def dots(X, y, w0, b0):
        w, b = w0.copy(), b0.copy()
        for _ in range(ITERS):
            err = X @ w + b[0] - y
            w -= C * (err @ X)
            b[0] -= C * err.sum()
        return w, b

    @numba.njit(fastmath=False)
    def one_pass(X, y, w0, b0):
        # Fused: each row's error and its gradient contribution in one pass over X.
        n, d = X.shape
        w, b = w0.copy(), b0.copy()
        g = np.empty(d)
        for _ in range(ITERS):
            g[:] = 0.0
            gb = 0.0
            for i in range(n):
                e = b[0] - y[i]
                for j in range(d):
                    e += X[i, j] * w[j]
                for j in range(d):
                    g[j] += e * X[i, j]
                gb += e
            for j in range(d):
                w[j] -= C * g[j]
            b[0] -= C * gb
        return w, b

    return {"njit np.dot": dots, "njit one pass over X": one_pass}


def hand_jax() -> dict[str, Any]:
    import jax

    def step(w, b, X, y):
        err = X @ w + b - y
        return w - C * (err @ X), b - C * err.sum()

    @jax.jit
    def fori(X, y, w, b):
        return jax.lax.fori_loop(0, ITERS, lambda _, wb: step(*wb, X, y), (w, b))

    @jax.jit
    def scan(X, y, w, b):
        (w, b), _ = jax.lax.scan(lambda wb, _: (step(*wb, X, y), None), (w, b), None, length=ITERS)
        return w, b

    @jax.jit
    def fori_unroll(X, y, w, b):
        return jax.lax.fori_loop(0, ITERS, lambda _, wb: step(*wb, X, y), (w, b), unroll=8)

    return {"jit fori_loop": fori, "jit scan": scan, "jit fori_loop unroll=8": fori_unroll}


def hand_tensorflow() -> dict[str, Any]:
    import tensorflow as tf

    def step(w, b, X, y):
        err = tf.linalg.matvec(X, w) + b - y
        return w - C * tf.linalg.matvec(X, err, transpose_a=True), b - C * tf.reduce_sum(err)

    @tf.function(jit_compile=True)
    def while_loop(X, y, w, b):
        _, w, b = tf.while_loop(lambda i, w, b: i < ITERS, lambda i, w, b: (i + 1, *step(w, b, X, y)), (0, w, b))
        return w, b

    @tf.function(jit_compile=False)
    def graph_only(X, y, w, b):
        for _ in tf.range(ITERS):
            w, b = step(w, b, X, y)
        return w, b

    return {"XLA tf.while_loop": while_loop, "tf.function without XLA": graph_only}


def hand_torch() -> dict[str, Any]:
    import torch

    @torch.no_grad()
    def eager_addmv(X, y, w0, b0):
        w, b = w0.clone(), b0.clone()
        for _ in range(ITERS):
            err = torch.addmv(b - y, X, w)
            w.sub_(err @ X, alpha=C)
            b.sub_(C * err.sum())
        return w, b

    def step(X, y, w, b):
        err = X @ w + b - y
        return w - C * (err @ X), b - C * err.sum()

    def step_mv(X, y, w, b):
        err = torch.addmv(b - y, X, w)
        return w - C * torch.mv(X.T, err), b - C * err.sum()

    step_mv_c = torch.compile(step_mv, fullgraph=True, dynamic=False)

    @torch.no_grad()
    def compiled_mv(X, y, w, b):
        for _ in range(ITERS):
            w, b = step_mv_c(X, y, w, b)
        return w, b

    step10 = torch.compile(lambda X, y, w, b: _repeat(step, 10, X, y, w, b), fullgraph=True, dynamic=False)
    step1 = torch.compile(step, fullgraph=True, dynamic=False)

    @torch.no_grad()
    def compiled_10(X, y, w, b):
        for _ in range(ITERS // 10):
            w, b = step10(X, y, w, b)
        return w, b

    @torch.no_grad()
    def compiled_1(X, y, w, b):
        for _ in range(ITERS):
            w, b = step1(X, y, w, b)
        return w, b

    return {"eager addmv": eager_addmv, "compile 1 step": compiled_1, "compile 10 steps": compiled_10,
            "compile 1 step addmv/mv": compiled_mv}


def _repeat(step, k, X, y, w, b):
    for _ in range(k):
        w, b = step(X, y, w, b)
    return w, b


HAND = {"numba": hand_numba, "jax": hand_jax, "tensorflow": hand_tensorflow, "torch": hand_torch}


def child(backend: str) -> None:
    """Inside the framework's own process: time arraybench's version and the hand-written ones."""
    from arraybench.backends import backend_class
    from arraybench.measure.timing import Timer, TimerConfig
    from arraybench.workloads.linreg import linreg

    be = backend_class(backend)(int(os.environ["OMP_NUM_THREADS"]), DTYPE)
    be.load()
    mode = "jit"
    cfg = TimerConfig(min_time=1.0, min_samples=5, max_time=15.0)
    out = {}
    for d in SIZES:
        params = {"n": N, "d": d, "iters": ITERS, "lr": LR}
        host = linreg.host_inputs(0, DTYPE, params)
        args = tuple(be.to_device(a) for a in host)
        ref = linreg.expected(host, params)
        fns = {"arraybench": linreg.builder(backend, mode)(be, **params)}
        fns.update(HAND[backend]())
        sync = be.sync if be.asynchronous else None
        times: dict[str, list[float]] = {k: [] for k in fns}
        for name, fn in fns.items():
            res = Timer(fn, args, sync=sync, config=TimerConfig(min_time=0.0, min_samples=1, max_samples=1)).run()
            check = linreg.check(be.to_host(res.last_output), ref, DTYPE, params)
            assert check.correct, (backend, name, check)
        for _ in range(ROUNDS):
            for name, fn in fns.items():
                times[name].append(Timer(fn, args, sync=sync, config=cfg).run().measurement.median)
        out[d] = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps(out))


def main() -> None:
    from arraybench.core.case import Case
    from arraybench.execution.parent import worker_env

    threads = len(os.sched_getaffinity(0))
    worst = 0.0
    for backend in sys.argv[1:] or HAND:
        env = worker_env(Case("linreg", (), backend, "jit", DTYPE, threads))
        proc = subprocess.run([sys.executable, __file__, "--child", backend], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{backend}: failed\n{proc.stderr[-2000:]}")
            continue
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        for d, times in result.items():
            ours = times.pop("arraybench")
            best_name = min(times, key=times.get)
            ratio = ours / times[best_name]
            worst = max(worst, ratio)
            hands = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in times.items())
            print(f"{backend:<10} d={d:<4} arraybench {ours * 1e3:8.1f} ms | {hands} | ratio to best {ratio:.2f}")
    print(f"\nworst ratio: {worst:.2f} (target ≤ 1.3)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main()
