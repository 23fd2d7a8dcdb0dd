"""Pairwise Euclidean distances between two point clouds of n points in d dimensions.

    arraybench run --workload-file examples/pairwise.py
"""

import numpy as np

import arraybench as ab


@ab.workload(
    name="pairwise",
    presets={
        "small": {"n": 500, "d": 3},
        "large": {"n": 5000, "d": 3},
        "sweep": [{"n": n} for n in (100, 300, 1000, 3000, 10000)],
    },
    flops=lambda n, d: 2.0 * n * n * d + 4.0 * n * n,
    bytes=lambda n, d, itemsize: (2.0 * n * d + n * n) * itemsize,
)
def pairwise(xp, X, Y):
    """Pairwise Euclidean distances, |x|² + |y|² − 2·x·y with one matrix product"""
    xx = xp.sum(X * X, axis=1)
    yy = xp.sum(Y * Y, axis=1)
    d2 = xx[:, None] + yy[None, :] - 2 * xp.tensordot(X, Y, axes=((1,), (1,)))
    # Rounding can make a tiny squared distance negative; clamp before the root.
    return xp.sqrt(xp.maximum(d2, 0.0))


@pairwise.inputs
def _(rng, n, d, dtype):
    return rng.standard_normal((n, d)).astype(dtype), rng.standard_normal((n, d)).astype(dtype)


@pairwise.reference
def _(X, Y):
    # The direct formula in float64: no cancellation, so it also checks the fast one's accuracy.
    return np.sqrt(((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=-1))


@pairwise.override("numba", "jit")
def pairwise_loops(X, Y):
    """The direct double loop numba.njit turns into tight machine code."""
    n, m, d = X.shape[0], Y.shape[0], X.shape[1]
    out = np.empty((n, m), dtype=X.dtype)
    for i in range(n):
        for j in range(m):
            s = 0.0
            for k in range(d):
                t = X[i, k] - Y[j, k]
                s += t * t
            out[i, j] = np.sqrt(s)
    return out
