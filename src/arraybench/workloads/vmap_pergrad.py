"""Per-example gradients of a small model, as a loop, a vmap and by hand (the reason people reach for vmap).

The model is one hidden tanh layer: for an example (x, y), loss = (v·tanh(Wᵀx) − y)², and the output
is each example's gradient with respect to W (d×h) and v (h): arrays of b×d×h and b×h. A framework
with autodiff writes the per-example gradient as the gradient of the per-example loss (`jax.grad`,
`torch.func.grad`, `tf.GradientTape`) and maps it; NumPy, Numba and CuPy, which have none, use the
analytic gradient, with rr = 2·(v·a − y) and a = tanh(Wᵀx):

    ∂loss/∂v = rr·a        ∂loss/∂W = x ⊗ rr·v·(1 − a²)

The batched form is that formula over all rows at once, as an expert writes it: one matrix product,
then broadcasting. The constants are written as sums (r + r, v − v·a²) so no Python float promotes
Numba's float32 arithmetic to float64.
"""

from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.backends.tensorflow_backend import TensorflowBackend
from arraybench.backends.torch_backend import TorchBackend
from arraybench.workloads.vmap_family import (
    BATCHED,
    LOOP,
    NO_FUSE_CUPY,
    NO_VMAP_CUPY,
    NO_VMAP_NUMPY,
    VMAP,
    family,
    register_loop,
)

FORMS = family(
    "pergrad",
    "per-example gradients of (v·tanh(Wᵀx) − y)² w.r.t. W and v",
    defaults={"b": 16, "d": 16, "h": 32},
    # Forward 2dh + 3h, backward dh + 5h, per example (tanh counted as one).
    flops=lambda b, d, h: float(b * (3 * d * h + 8 * h)),
    # Reads W, v, X, y; writes b gradients of W and of v.
    bytes=lambda b, d, h, itemsize: float(itemsize * (d * h + h + b * (d + 1) + b * (d * h + h))),
)
loop, vmap, batched = FORMS[LOOP], FORMS[VMAP], FORMS[BATCHED]
ALL = (loop, vmap, batched)


def _inputs(rng: np.random.Generator, dtype: type, b: int, d: int, h: int) -> tuple:
    # Weights scaled so that Wᵀx is O(1): tanh neither saturates nor stays linear.
    W = (rng.standard_normal((d, h)) / np.sqrt(d)).astype(dtype)
    v = (rng.standard_normal(h) / np.sqrt(h)).astype(dtype)
    return W, v, rng.standard_normal((b, d)).astype(dtype), rng.standard_normal(b).astype(dtype)


def _reference(W: np.ndarray, v: np.ndarray, X: np.ndarray, y: np.ndarray, b: int, d: int, h: int) -> tuple:
    """The analytic gradients of every example at once (in the inputs' dtype: float64 as the reference)."""
    A = np.tanh(X @ W)
    rr = 2 * (A @ v - y)
    return np.einsum("bd,bh->bdh", X, rr[:, None] * v * (1 - A * A)), rr[:, None] * A


for _wl in ALL:
    _wl.inputs(_inputs)
    _wl.reference(_reference)


# --- NumPy, CuPy, Numba: the analytic gradient, in the array namespace `xp` ---------------------
def _analytic_one(xp: Any) -> Any:
    """One example's gradients (gW, gv)."""

    def grads(W: Any, v: Any, x: Any, y: Any) -> tuple:
        a = xp.tanh(x @ W)
        r = a @ v - y
        rr = r + r
        return xp.outer(x, rr * (v - v * a * a)), rr * a

    return grads


def _analytic_batched(xp: Any) -> Any:
    """Every example's gradients at once: one matrix product, then broadcasting."""

    def grads(W: Any, v: Any, X: Any, y: Any) -> tuple:
        A = xp.tanh(X @ W)
        r = A @ v - y
        rr = (r + r)[:, None]
        return X[:, :, None] * (rr * (v - v * A * A))[:, None, :], rr * A

    return grads


register_loop(loop, "numpy", lambda be: _analytic_one(np), lambda be: np.stack, shared=2, modes=("eager",))
vmap.cannot("numpy", "eager", NO_VMAP_NUMPY)
batched.impl("numpy")(lambda be, **params: _analytic_batched(np))

register_loop(loop, "cupy", lambda be: _analytic_one(be.xp), lambda be: be.xp.stack, shared=2, modes=("eager",))
vmap.cannot("cupy", "eager", NO_VMAP_CUPY)
batched.impl("cupy")(lambda be, **params: _analytic_batched(be.xp))
for _wl in ALL:
    _wl.cannot("cupy", "jit", NO_FUSE_CUPY)

# Numba: the analytic per-example function under @njit; its map is a prange over the examples.
register_loop(loop, "numba", lambda be: _analytic_one(np), lambda be: np.stack, shared=2, modes=("jit",))


@vmap.impl("numba", "jit")
def _numba_prange(be: Backend, **params: Any) -> Any:
    import numba

    one = be.jit(_analytic_one(np), "jit")

    @numba.njit(parallel=True)
    def grads(W: Any, v: Any, X: Any, y: Any) -> tuple:
        gW = np.empty((X.shape[0], W.shape[0], W.shape[1]), dtype=W.dtype)
        gv = np.empty((X.shape[0], W.shape[1]), dtype=W.dtype)
        for i in numba.prange(X.shape[0]):
            gWi, gvi = one(W, v, X[i], y[i])
            gW[i] = gWi
            gv[i] = gvi
        return gW, gv

    return grads


batched.impl("numba", "jit")(lambda be, **params: be.jit(_analytic_batched(np), "jit"))


# --- JAX: jax.grad of the per-example loss, jax.vmap over the examples -----------------------
def _jax_one(be: Backend) -> Any:
    import jax

    jnp = be.xp

    def loss(W: Any, v: Any, x: Any, y: Any) -> Any:
        return (jnp.dot(v, jnp.tanh(x @ W)) - y) ** 2

    return jax.grad(loss, argnums=(0, 1))


def _jax_vmap(be: Backend, **params: Any) -> Any:
    import jax

    return jax.vmap(_jax_one(be), in_axes=(None, None, 0, 0))


register_loop(loop, "jax", _jax_one, lambda be: be.xp.stack, shared=2)
vmap.impl_eager_and_jit("jax")(_jax_vmap)
batched.impl_eager_and_jit("jax")(lambda be, **params: _analytic_batched(be.xp))


# --- PyTorch: torch.func.grad of the per-example loss, torch.func.vmap over the examples -----
def _torch_one(be: TorchBackend) -> Any:
    torch = be.torch

    def loss(W: Any, v: Any, x: Any, y: Any) -> Any:
        return (torch.dot(v, torch.tanh(x @ W)) - y) ** 2

    return torch.func.grad(loss, argnums=(0, 1))


def _torch_vmap(be: TorchBackend, **params: Any) -> Any:
    return be.torch.func.vmap(_torch_one(be), in_dims=(None, None, 0, 0))


register_loop(loop, "torch", _torch_one, lambda be: be.torch.stack, shared=2)
vmap.impl_eager_and_jit("torch")(_torch_vmap)
batched.impl_eager_and_jit("torch")(lambda be, **params: _analytic_batched(be.torch))


# --- TensorFlow: tf.GradientTape per example, tf.vectorized_map over the examples ------------
def _tf_one(be: TensorflowBackend) -> Any:
    tf = be.tf

    def grads(W: Any, v: Any, x: Any, y: Any) -> tuple:
        with tf.GradientTape() as tape:
            tape.watch((W, v))
            loss = (tf.reduce_sum(v * tf.tanh(tf.linalg.matvec(W, x, transpose_a=True))) - y) ** 2
        return tuple(tape.gradient(loss, (W, v)))

    return grads


def _tf_vmap(be: TensorflowBackend, **params: Any) -> Any:
    tf, one = be.tf, _tf_one(be)

    def grads(W: Any, v: Any, X: Any, y: Any) -> Any:
        return tf.vectorized_map(lambda example: one(W, v, *example), (X, y))

    return be.run_on_device(grads)


def _tf_batched(be: TensorflowBackend, **params: Any) -> Any:
    """The analytic batched form in TensorFlow's ops (its `@` takes matrices only: matvec for A·v)."""
    tf = be.tf

    def grads(W: Any, v: Any, X: Any, y: Any) -> tuple:
        A = tf.tanh(X @ W)
        r = tf.linalg.matvec(A, v) - y
        rr = (r + r)[:, None]
        return X[:, :, None] * (rr * (v - v * A * A))[:, None, :], rr * A

    return be.run_on_device(grads)


register_loop(loop, "tensorflow", _tf_one, lambda be: be.tf.stack, shared=2)
vmap.impl_eager_and_jit("tensorflow")(_tf_vmap)
batched.impl_eager_and_jit("tensorflow")(_tf_batched)
