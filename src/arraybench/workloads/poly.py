"""Polynomial −4x³ + 9x² + 6x − 3 on an n×n matrix (document 002): what JIT fusion buys.

Written in Horner form, ((−4x + 9)·x + 6)·x − 3, everywhere: compiled, it is one fused pass over
memory; eager, each operator is its own pass. NumPy and PyTorch eager run it in place on one
buffer (what an expert writes without a compiler); JAX and TensorFlow arrays are immutable.
"""

from typing import Any

import numpy as np

from arraybench.backends.base import Backend
from arraybench.workloads.base import Workload
from arraybench.workloads.common import numba_compiled

poly = Workload(
    name="poly",
    description="−4x³+9x²+6x−3 element-wise on an n×n matrix, eager vs fused JIT (document 002)",
    defaults={"n": 1_000},
    size_param="n",
    presets={"small": {"n": 1_000}, "large": {"n": 10_000}},
    flops=lambda n: 6.0 * n * n,  # Horner: three multiplies, three adds
    bytes=lambda n, itemsize: 2.0 * n * n * itemsize,  # read x, write the result: the fused minimum
    rtol={"float32": 1e-5, "float64": 1e-12},
)


@poly.inputs
def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return (rng.standard_normal((n, n)).astype(dtype),)


poly.reference(lambda x, n: -4 * x * x * x + 9 * x * x + 6 * x - 3)


def horner(x: Any) -> Any:
    return ((-4 * x + 9) * x + 6) * x - 3


@poly.impl("numpy")
def _numpy(be: Backend, n: int) -> Any:
    def f(x: np.ndarray) -> np.ndarray:
        y = x * -4
        y += 9
        y *= x
        y += 6
        y *= x
        y -= 3
        return y

    return f


@poly.impl("numba", "jit")
def _numba(be: Backend, n: int) -> Any:
    return numba_compiled(horner, n * n)


@poly.impl_eager_and_jit("jax")
def _jax(be: Backend, n: int) -> Any:
    return horner


@poly.impl_eager_and_jit("tensorflow")
def _tf(be: Backend, n: int) -> Any:
    return be.run_on_device(horner)


@poly.impl("torch")
def _torch_eager(be: Backend, n: int) -> Any:
    return lambda x: x.mul(-4).add_(9).mul_(x).add_(6).mul_(x).sub_(3)


@poly.impl("torch", "jit")
def _torch_compile(be: Backend, n: int) -> Any:
    return be.jit(horner, "jit")


@poly.impl_eager_and_jit("cupy")
def _cupy(be: Backend, n: int) -> Any:
    return horner
