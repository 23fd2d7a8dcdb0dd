"""Workloads that do PLANTED times their work (a variable, 1 when unset): a slowdown of known size.

benchmarks/planted.py runs them in two environments of one run, the second with
`--env-var slow:PLANTED=1.05`, and counts how many cases compare finds slower: element-wise
(memory-bound), matmul (compute-bound), sort, and a chain of small operations (dispatch-bound).
Each scales its problem so that its work, not its size in the id, grows by PLANTED: the inputs and
the NumPy float64 reference are made in the same worker from the same size, so every case stays
correct. The run's cache keeps each environment's inputs apart (case_executor.cache_name).
"""

import os

import arraybench as ab


def planted() -> float:
    return float(os.environ.get("PLANTED", "1"))


def scaled(n: int, power: float = 1.0) -> int:
    """n grown so that work proportional to n**(1/power) grows by PLANTED."""
    return max(1, round(n * planted() ** (1.0 / power)))


@ab.workload(presets={"small": {"n": 1_000_000}, "large": {"n": 4_000_000}},
             flops=lambda n: float(n), bytes=lambda n, itemsize: 3.0 * n * itemsize)
def planted_add(xp, a, b):
    return a + b


@planted_add.inputs
def _(rng, n, dtype):
    m = scaled(n)
    return rng.standard_normal(m).astype(dtype), rng.standard_normal(m).astype(dtype)


@ab.workload(presets={"small": {"n": 256}, "large": {"n": 512}}, flops=lambda n: 2.0 * n**3)
def planted_matmul(xp, a, b):
    return a @ b


@planted_matmul.inputs
def _(rng, n, dtype):
    m = scaled(n, power=3.0)  # n³ work
    return rng.standard_normal((m, m)).astype(dtype), rng.standard_normal((m, m)).astype(dtype)


@ab.workload(presets={"small": {"n": 100_000}, "large": {"n": 1_000_000}})
def planted_sort(xp, x):
    return xp.sort(x)


@planted_sort.inputs
def _(rng, n, dtype):
    return (rng.standard_normal(scaled(n)).astype(dtype),)


@ab.workload(presets={"small": {"n": 1_000, "reps": 100}, "large": {"n": 1_000, "reps": 400}})
def planted_chain(xp, x, reps):
    """A chain of small element-wise steps: each a dispatch, so its cost is the number of steps."""
    for _ in range(round(reps * planted())):
        x = x * 0.999 + 0.001
    return x


@planted_chain.inputs
def _(rng, n, dtype):
    return (rng.standard_normal(n).astype(dtype),)
