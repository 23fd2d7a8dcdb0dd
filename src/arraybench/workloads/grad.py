"""Gradient ∇w of L(w) = Σ (w·x)² (document 003): autodiff against the analytic and FD answers.

JAX (`jax.grad`), TensorFlow (`tf.GradientTape`) and PyTorch (`torch.autograd`) differentiate
eagerly and compiled; NumPy gives the analytic 2·w·x² (mode `eager`) and, as document 003 did,
central finite differences with one pair of forward passes per parameter (mode `fd`, O(n²)).
The loss is quadratic in each wᵢ, so central differences are exact for any step and h = 1
leaves only rounding error: FD at its most accurate. Work counts are those of one gradient
(forward and backward, 6n), so the O(n²) method shows up as low GFLOP/s, which is its cost.
"""

from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.backends.tensorflow_backend import TensorflowBackend
from arraybench.backends.torch_backend import TorchBackend
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import Workload

grad = Workload(
    name="grad",
    description="∇w of Σ(w·x)² by autodiff, analytically, or by finite differences (document 003)",
    defaults={"n": 100},
    size_param="n",
    presets={"small": {"n": 100}, "large": {"n": 10_000}, "sweep": log_sweep("n", 10, 10_000)},
    flops=lambda n: 6.0 * n,
    bytes=lambda n, itemsize: 3.0 * n * itemsize,
    # Sized for finite differences: rounding in the float32 loss (≈ n·eps) over the step h = 1.
    rtol={"float32": 2e-4, "float64": 1e-12},
)


@grad.inputs
def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)


grad.reference(lambda w, x, n: 2.0 * w * x * x)


@grad.impl("numpy")
def _numpy_analytic(be: Backend, n: int) -> Any:
    return lambda w, x: 2.0 * w * x * x


@grad.impl("numpy", "fd")
def _numpy_fd(be: Backend, n: int) -> Any:
    def loss(w: np.ndarray, x: np.ndarray) -> Any:
        return np.sum((w * x) ** 2)

    def fd(w: np.ndarray, x: np.ndarray) -> np.ndarray:
        g = np.empty_like(w)
        wp = w.copy()
        for i in range(w.size):
            wi = wp[i]
            wp[i] = wi + 1.0
            up = loss(wp, x)
            wp[i] = wi - 1.0
            down = loss(wp, x)
            wp[i] = wi
            g[i] = (up - down) / 2.0
        return g

    return fd


grad.cannot("numba", "jit", "Numba has no autodiff; numpy eager is the analytic gradient, numpy fd finite differences")
grad.cannot("cupy", "eager", "CuPy has no autodiff")


def _jax_grad(be: Backend) -> Any:
    import jax

    return jax.grad(lambda w, x: be.xp.sum((w * x) ** 2))


@grad.impl("jax")
def _jax_eager(be: Backend, n: int) -> Any:
    return _jax_grad(be)


@grad.impl("jax", "jit")
def _jax_jit(be: Backend, n: int) -> Any:
    import jax

    return jax.jit(_jax_grad(be))


def _tf_grad(be: TensorflowBackend) -> Any:
    tf = be.tf

    def g(w: Any, x: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch(w)
            loss = tf.reduce_sum(tf.square(w * x))
        return tape.gradient(loss, w)

    return g


@grad.impl("tensorflow")
def _tf_eager(be: TensorflowBackend, n: int) -> Any:
    return be.run_on_device(_tf_grad(be))


@grad.impl("tensorflow", "jit")
def _tf_jit(be: TensorflowBackend, n: int) -> Any:
    return be.jit(_tf_grad(be), "jit")


@grad.impl("torch")
def _torch_eager(be: TorchBackend, n: int) -> Any:
    torch = be.torch

    def g(w: Any, x: Any) -> Any:
        # A fresh leaf each call, as document 003 does, so gradients never accumulate.
        leaf = w.detach().requires_grad_(True)
        (gw,) = torch.autograd.grad(((leaf * x) ** 2).sum(), leaf)
        return gw

    return g


@grad.impl("torch", "jit")
def _torch_compile(be: TorchBackend, n: int) -> Any:
    torch = be.torch

    # torch.func.grad is functional, so the whole backward pass lands in one compiled graph.
    return torch.compile(torch.func.grad(lambda w, x: ((w * x) ** 2).sum()), fullgraph=True, dynamic=False)
