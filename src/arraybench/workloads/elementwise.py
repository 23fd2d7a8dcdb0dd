"""Element-wise add, multiply and sine (document 002): memory-bound, dispatch-bound when small.

Three workloads rather than an `op` parameter: tables put one workload per table with sizes as
columns, so cases that differ in anything but size would share a cell; separate names also let
`--workloads elementwise_sin` pick one. Each op is written as users write it, allocation of its
result included, the same on every framework.
"""

from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.workloads.common import register_everywhere
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import Preset, Workload

SIZES: dict[str, Preset] = {"small": {"n": 1_000}, "large": {"n": 1_000_000}, "sweep": log_sweep("n", 100, 1_000_000)}


def _make(op: str, arrays: int) -> Workload:
    return Workload(
        name=f"elementwise_{op}",
        description=f"element-wise {op} of float vectors, one op per call (document 002)",
        defaults={"n": 1_000},
        size_param="n",
        presets=dict(SIZES),
        flops=lambda n: float(n),
        # Reads `arrays` inputs, writes one output.
        bytes=lambda n, itemsize: float((arrays + 1) * n * itemsize),
        rtol={"float32": 1e-5, "float64": 1e-12},
    )


add, mul, sin = _make("add", 2), _make("mul", 2), _make("sin", 1)


@add.inputs
@mul.inputs
def _two(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)


@sin.inputs
def _one(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return (rng.standard_normal(n).astype(dtype),)


add.reference(lambda a, b, n: a + b)
mul.reference(lambda a, b, n: a * b)
sin.reference(lambda a, n: np.sin(a))


def _sin(be: Backend) -> Any:
    """The framework's own sine (Backend.sin_op: TensorFlow's, not its slower NumPy layer)."""
    op = be.sin_op()
    return lambda a: op(a)


for wl, fn_for in ((add, lambda be: lambda a, b: a + b), (mul, lambda be: lambda a, b: a * b), (sin, _sin)):
    register_everywhere(wl, fn_for, numba_elements=lambda params: params["n"])
