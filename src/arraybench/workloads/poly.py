"""Polynomial −4x³ + 9x² + 6x − 3 on an n×n matrix (document 002): what JIT fusion buys, twice.

`poly` is the expert version: Horner form, ((−4x + 9)·x + 6)·x − 3, everywhere; compiled, it is
one fused pass over memory; eager, each operator is its own pass. NumPy and PyTorch eager run it
in place on one buffer (what an expert writes without a compiler); JAX and TensorFlow arrays are
immutable. `poly_as_written` is the expression exactly as document 002 wrote it,
`-4*x*x*x + 9*x*x + 6*x - 3`, on every framework: its eager versions allocate a temporary per
operator, which is where the document's "JIT is 6× faster than NumPy" comes from. Measuring both
lets a reader see the speedup over NumPy as the document wrote it and over NumPy written well.
"""

from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.workloads.common import numba_compiled, register_everywhere
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import Workload


def _make(name: str, description: str, flops_per_element: float) -> Workload:
    return Workload(
        name=name,
        description=description,
        defaults={"n": 1_000},
        size_param="n",
        # `large` is well past any cache (9·10⁶ elements); `huge` is document 002's 10000², which
        # takes seconds a call eager and is measured by `--suite seeds` (or `--sizes huge`).
        presets={"small": {"n": 1_000}, "large": {"n": 3_000}, "huge": {"n": 10_000},
                 "sweep": log_sweep("n", 32, 4096, 8)},
        flops=lambda n: flops_per_element * n * n,
        bytes=lambda n, itemsize: 2.0 * n * n * itemsize,  # read x, write the result: the fused minimum
        rtol={"float32": 1e-5, "float64": 1e-12},
    )


# Horner: three multiplies, three adds.
poly = _make("poly", "−4x³+9x²+6x−3 element-wise on an n×n matrix, Horner form in place, eager vs fused JIT "
             "(document 002, written well)", 6.0)
# Six multiplies and three additions, as written.
poly_as_written = _make("poly_as_written", "-4*x*x*x + 9*x*x + 6*x - 3 on an n×n matrix exactly as document "
                        "002 wrote it, on every framework", 9.0)


def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return (rng.standard_normal((n, n)).astype(dtype),)


def as_written(x: Any) -> Any:
    return -4 * x * x * x + 9 * x * x + 6 * x - 3


for _wl in (poly, poly_as_written):
    _wl.inputs(_inputs)
    _wl.reference(lambda x, n: as_written(x))

register_everywhere(poly_as_written, lambda be: as_written, numba_elements=lambda params: params["n"] ** 2)


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
