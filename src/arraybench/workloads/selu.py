"""SELU activation λ·where(x > 0, x, α·eˣ − α) on an n×n matrix (document 004): eager vs JIT.

Document 004 re-created `jax.jit(selu)` inside the timed call; here every compiled version is
built once, before the timer, and its first call (the compile) is reported on its own.
"""

from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.backends.cupy_backend import CupyBackend
from arraybench.backends.tensorflow_backend import TensorflowBackend
from arraybench.backends.torch_backend import TorchBackend
from arraybench.workloads.common import numba_compiled
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import Workload

ALPHA, LAMBDA = 1.67, 1.05  # document 004's constants

selu = Workload(
    name="selu",
    description="SELU activation on an n×n matrix, eager vs JIT built once (document 004)",
    defaults={"n": 1_000},
    size_param="n",
    presets={"small": {"n": 1_000}, "large": {"n": 3_000}, "sweep": log_sweep("n", 32, 4096, 8)},
    flops=lambda n: 5.0 * n * n,  # compare, exp, multiply, subtract, scale
    bytes=lambda n, itemsize: 2.0 * n * n * itemsize,
    rtol={"float32": 1e-5, "float64": 1e-12},
)


@selu.inputs
def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return (rng.standard_normal((n, n)).astype(dtype),)


selu.reference(lambda x, n: LAMBDA * np.where(x > 0, x, ALPHA * np.exp(x) - ALPHA))


@selu.impl("numpy")
def _numpy(be: Backend, n: int) -> Any:
    return lambda x: LAMBDA * np.where(x > 0, x, ALPHA * np.exp(x) - ALPHA)


@selu.impl("numba", "jit")
def _numba(be: Backend, n: int) -> Any:
    import numba

    # One parallel loop, constants in the case's dtype: Numba would compute `1.05 * float32`
    # in float64 and return float64, and runs np.where as separate passes.
    lam, alpha = np.dtype(be.dtype).type(LAMBDA), np.dtype(be.dtype).type(ALPHA)

    def f(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        flat, res = x.ravel(), out.ravel()
        for i in numba.prange(flat.size):
            v = flat[i]
            res[i] = lam * v if v > 0 else lam * (alpha * np.exp(v) - alpha)
        return out

    return numba_compiled(f, n * n)


@selu.impl_eager_and_jit("jax")
def _jax(be: Backend, n: int) -> Any:
    jnp = be.xp
    return lambda x: LAMBDA * jnp.where(x > 0, x, ALPHA * jnp.exp(x) - ALPHA)


@selu.impl_eager_and_jit("tensorflow")
def _tf(be: TensorflowBackend, n: int) -> Any:
    tf = be.tf
    return be.run_on_device(lambda x: LAMBDA * tf.where(x > 0, x, ALPHA * tf.math.exp(x) - ALPHA))


@selu.impl_eager_and_jit("torch")
def _torch(be: TorchBackend, n: int) -> Any:
    torch = be.torch
    return lambda x: LAMBDA * torch.where(x > 0, x, ALPHA * torch.exp(x) - ALPHA)


@selu.impl("cupy")
def _cupy(be: CupyBackend, n: int) -> Any:
    cp = be.cupy
    return lambda x: LAMBDA * cp.where(x > 0, x, ALPHA * cp.exp(x) - ALPHA)


@selu.impl("cupy", "jit")
def _cupy_kernel(be: CupyBackend, n: int) -> Any:
    # A hand-written element-wise kernel rather than cupy.fuse, whose support for `where`
    # varies between CuPy versions; T is the input's type, so float32 stays float32.
    return be.cupy.ElementwiseKernel(
        "T x", "T y",
        f"y = x > (T)0 ? (T){LAMBDA} * x : (T){LAMBDA} * ((T){ALPHA} * exp(x) - (T){ALPHA})",
        "arraybench_selu",
    )
