"""Heat equation on a periodic square: explicit 5-point-stencil steps on an n×n grid.

    arraybench run --workload-file examples/heat.py
"""

import numpy as np

import arraybench as ab

ALPHA = 0.1  # diffusion number: stable for an explicit step while below 0.25


@ab.workload(
    name="heat",
    presets={
        "small": {"n": 64, "steps": 20},
        "large": {"n": 1024, "steps": 20},
        "sweep": [{"n": n} for n in (64, 128, 256, 512, 1024, 2048)],
    },
    flops=lambda n, steps: 6.0 * n * n * steps,
    # One read and one write of the grid per step, when a framework fuses the stencil.
    bytes=lambda n, steps, itemsize: 2.0 * n * n * steps * itemsize,
)
def heat(xp, u, steps):
    """Heat equation, periodic 5-point stencil, explicit Euler steps"""
    for _ in range(steps):
        lap = (xp.roll(u, 1, axis=0) + xp.roll(u, -1, axis=0)
               + xp.roll(u, 1, axis=1) + xp.roll(u, -1, axis=1) - 4 * u)
        u = u + ALPHA * lap
    return u


@heat.inputs
def _(rng, n, dtype):
    return (rng.standard_normal((n, n)).astype(dtype),)


@heat.override("numba", "jit")
def heat_loops(u, steps):
    """The loop an expert would write for numba.njit: one pass per step, no temporaries."""
    n, m = u.shape
    u = u.copy()  # never write into the input: every timed call must see the same one
    new = np.empty_like(u)
    for _ in range(steps):
        for i in range(n):
            for j in range(m):
                lap = u[i - 1, j] + u[(i + 1) % n, j] + u[i, j - 1] + u[i, (j + 1) % m] - 4 * u[i, j]
                new[i, j] = u[i, j] + ALPHA * lap
        u, new = new, u
    return u
