"""Linear regression by full-batch gradient descent (document 001), analytic and autodiff gradients.

y = X·w_true + b_true + noise, n = 10 000 samples, d features; MSE loss; a fixed number of
iterations with no early stopping; the same learning rate and starting point on every backend.
The learning rate is small enough that 1 000 iterations do not converge, so an implementation
that runs the wrong number of steps fails the check instead of landing on the same optimum.
"""

from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.workloads.workload import Workload

SIZES = [2, 3, 5, 10, 20, 30, 50, 100]  # the sweep: document 001 went from 2 to 100 features


def _make(name: str, description: str) -> Workload:
    return Workload(
        name=name,
        description=description,
        # 100 steps a call: enough that the loop, not the call, is what is timed (a step is
        # ≥ 40 000 multiply-adds). Document 001 states no step count; `--suite seeds` runs 1 000.
        defaults={"n": 10_000, "d": 2, "iters": 100, "lr": 1e-3},
        size_param="d",
        presets={"small": {"d": 2}, "large": {"d": 100}, "sweep": [{"d": d} for d in SIZES]},
        # Per iteration: X·w and Xᵀ·err (2·n·d multiply-adds each) plus O(n) vector work.
        flops=lambda n, d, iters, lr: iters * (4.0 * n * d + 6.0 * n + 2.0 * d),
        bytes=lambda n, d, iters, lr, itemsize: iters * itemsize * (2.0 * n * d + 4.0 * n),
        rtol={"float32": 1e-4, "float64": 1e-10},
    )


linreg = _make("linreg", "gradient-descent linear regression, analytic gradient (document 001)")
linreg_autodiff = _make(
    "linreg_autodiff", "gradient-descent linear regression, gradient by each framework's autodiff"
)


def _inputs(rng: np.random.Generator, dtype: type, n: int, d: int, iters: int, lr: float) -> tuple:
    X = rng.standard_normal((n, d))
    w_true = rng.standard_normal(d)
    y = X @ w_true + 0.5 + 0.1 * rng.standard_normal(n)
    return X.astype(dtype), y.astype(dtype), np.zeros(d, dtype), np.zeros(1, dtype)


def _reference(X: np.ndarray, y: np.ndarray, w: np.ndarray, b: np.ndarray, *, n: int, d: int,
               iters: int, lr: float) -> tuple[np.ndarray, np.ndarray]:
    w, b = w.copy(), b.copy()
    c = lr * 2.0 / n
    for _ in range(iters):
        err = X @ w + b - y
        w -= c * (err @ X)
        b -= c * err.sum()
    return w, b


for wl in (linreg, linreg_autodiff):
    wl.inputs(_inputs)
    wl.reference(_reference)


# --- analytic gradient -------------------------------------------------------------------

@linreg.impl("numpy")
def _numpy(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    c = lr * 2.0 / n

    def fit(X: np.ndarray, y: np.ndarray, w0: np.ndarray, b0: np.ndarray) -> tuple:
        # Preallocated buffers and in-place updates: no temporaries inside the loop.
        w, b = w0.copy(), b0.copy()
        err = np.empty_like(y)
        grad = np.empty_like(w)
        for _ in range(iters):
            np.dot(X, w, out=err)
            err += b[0]
            err -= y
            np.dot(err, X, out=grad)
            grad *= c
            w -= grad
            b -= c * err.sum()
        return w, b

    return fit


@linreg.impl("numba", "jit")
def _numba(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import numba

    c = lr * 2.0 / n

    @numba.njit(cache=False)
    def fit(X: np.ndarray, y: np.ndarray, w0: np.ndarray, b0: np.ndarray) -> tuple:
        w, b = w0.copy(), b0.copy()
        for _ in range(iters):
            err = np.dot(X, w) + b[0] - y
            w -= c * np.dot(err, X)
            b[0] -= c * err.sum()
        return w, b

    return fit


@linreg.impl("jax", "eager")
def _jax_eager(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    c = lr * 2.0 / n

    def fit(X: Any, y: Any, w: Any, b: Any) -> tuple:
        for _ in range(iters):
            err = X @ w + b - y
            w = w - c * (err @ X)
            b = b - c * err.sum()
        return w, b

    return fit


@linreg.impl("jax", "jit")
def _jax_jit(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import jax

    c = lr * 2.0 / n

    def step(_: Any, wb: tuple) -> tuple:
        w, b, X, y = wb
        err = X @ w + b - y
        return w - c * (err @ X), b - c * err.sum(), X, y

    @jax.jit
    def fit(X: Any, y: Any, w: Any, b: Any) -> tuple:
        w, b, _, _ = jax.lax.fori_loop(0, iters, step, (w, b, X, y))
        return w, b

    return fit


@linreg.impl("tensorflow", "eager")
def _tf_eager(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import tensorflow as tf

    c = lr * 2.0 / n

    def fit(X: Any, y: Any, w: Any, b: Any) -> tuple:
        for _ in range(iters):
            err = tf.linalg.matvec(X, w) + b - y
            w = w - c * tf.linalg.matvec(X, err, transpose_a=True)
            b = b - c * tf.reduce_sum(err)
        return w, b

    return be.run_on_device(fit)


@linreg.impl("tensorflow", "jit")
def _tf_jit(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import tensorflow as tf

    c = lr * 2.0 / n

    def step(i: Any, w: Any, b: Any, X: Any, y: Any) -> tuple:
        err = tf.linalg.matvec(X, w) + b - y
        return i + 1, w - c * tf.linalg.matvec(X, err, transpose_a=True), b - c * tf.reduce_sum(err), X, y

    @tf.function(jit_compile=True)
    def fit(X: Any, y: Any, w: Any, b: Any) -> tuple:
        # An explicit while_loop: about 15 % faster than AutoGraph's `for _ in tf.range(iters)`.
        _, w, b, _, _ = tf.while_loop(lambda i, *_: i < iters, step, (0, w, b, X, y))
        return w, b

    return be.run_on_device(fit)


@linreg.impl("torch", "eager")
def _torch_eager(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import torch

    c = lr * 2.0 / n

    @torch.no_grad()
    def fit(X: Any, y: Any, w0: Any, b0: Any) -> tuple:
        w, b = w0.clone(), b0.clone()
        for _ in range(iters):
            err = torch.addmv(b - y, X, w)  # b - y + X·w in one BLAS call
            # Not w.addmv_(X.T, err, alpha=-c): in float32 that path loses 0.5 % of accuracy.
            w.sub_(err @ X, alpha=c)
            b.sub_(c * err.sum())
        return w, b

    return fit


@linreg.impl("torch", "jit")
def _torch_compile(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import torch

    c = lr * 2.0 / n

    def step(X: Any, y: Any, w: Any, b: Any) -> tuple:
        err = X @ w + b - y
        return w - c * (err @ X), b - c * err.sum()

    return _compiled_blocks(torch, step, iters)


def _compiled_blocks(torch: Any, step: Any, iters: int, block: int = 10) -> Any:
    """Run `iters` steps as compiled blocks of `block` unrolled steps, the loop in Python.

    Dynamo unrolls Python loops, so compiling all 1 000 steps would build a 1 000-step graph
    that takes minutes to compile; one compiled step per call pays torch.compile's per-call
    guard and dispatch cost 1 000 times, which at d=2 doubles the time. Blocks of ten steps
    were the fastest of the hand-written variants (benchmarks/linreg_handwritten.py).
    """

    def unrolled(k: int) -> Any:
        def run(X: Any, y: Any, w: Any, b: Any) -> tuple:
            for _ in range(k):
                w, b = step(X, y, w, b)
            return w, b

        return torch.compile(run, fullgraph=True, dynamic=False)

    block = min(block, iters)
    full, rest = divmod(iters, block) if block else (0, 0)
    many = unrolled(block)  # built lazily by torch.compile: nothing compiles when full == 0
    few = unrolled(rest) if rest else None

    @torch.no_grad()
    def fit(X: Any, y: Any, w: Any, b: Any) -> tuple:
        for _ in range(full):
            w, b = many(X, y, w, b)
        if few is not None:
            w, b = few(X, y, w, b)
        return w, b

    return fit


# --- gradient by autodiff ----------------------------------------------------------------

for backend, mode in (("numpy", "eager"), ("numba", "jit")):
    linreg_autodiff.cannot(backend, mode, f"{backend} has no autodiff; see linreg for the analytic gradient")


def _jax_loss() -> Any:
    import jax

    def loss(w: Any, b: Any, X: Any, y: Any) -> Any:
        err = X @ w + b - y
        return (err * err).mean()

    return jax.grad(loss, argnums=(0, 1))


@linreg_autodiff.impl("jax", "eager")
def _ad_jax_eager(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    grad = _jax_loss()

    def fit(X: Any, y: Any, w: Any, b: Any) -> tuple:
        for _ in range(iters):
            gw, gb = grad(w, b, X, y)
            w, b = w - lr * gw, b - lr * gb
        return w, b

    return fit


@linreg_autodiff.impl("jax", "jit")
def _ad_jax_jit(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import jax

    grad = _jax_loss()

    def step(_: Any, wb: tuple) -> tuple:
        w, b, X, y = wb
        gw, gb = grad(w, b, X, y)
        return w - lr * gw, b - lr * gb, X, y

    @jax.jit
    def fit(X: Any, y: Any, w: Any, b: Any) -> tuple:
        w, b, _, _ = jax.lax.fori_loop(0, iters, step, (w, b, X, y))
        return w, b

    return fit


def _tf_step(tf: Any, lr: float) -> Any:
    def step(X: Any, y: Any, w: Any, b: Any) -> tuple:
        with tf.GradientTape() as tape:
            tape.watch([w, b])
            err = tf.linalg.matvec(X, w) + b - y
            loss = tf.reduce_mean(err * err)
        gw, gb = tape.gradient(loss, [w, b])
        return w - lr * gw, b - lr * gb

    return step


@linreg_autodiff.impl("tensorflow", "eager")
def _ad_tf_eager(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import tensorflow as tf

    step = _tf_step(tf, lr)

    def fit(X: Any, y: Any, w: Any, b: Any) -> tuple:
        for _ in range(iters):
            w, b = step(X, y, w, b)
        return w, b

    return be.run_on_device(fit)


@linreg_autodiff.impl("tensorflow", "jit")
def _ad_tf_jit(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import tensorflow as tf

    step = _tf_step(tf, lr)

    @tf.function(jit_compile=True)
    def fit(X: Any, y: Any, w: Any, b: Any) -> tuple:
        _, w, b = tf.while_loop(
            lambda i, w, b: i < iters, lambda i, w, b: (i + 1, *step(X, y, w, b)), (0, w, b)
        )
        return w, b

    return be.run_on_device(fit)


@linreg_autodiff.impl("torch", "eager")
def _ad_torch_eager(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import torch

    def fit(X: Any, y: Any, w0: Any, b0: Any) -> tuple:
        w = w0.clone().requires_grad_(True)
        b = b0.clone().requires_grad_(True)
        for _ in range(iters):
            err = X @ w + b - y
            loss = (err * err).mean()
            gw, gb = torch.autograd.grad(loss, (w, b))
            with torch.no_grad():
                w -= lr * gw
                b -= lr * gb
        return w.detach(), b.detach()

    return fit


@linreg_autodiff.impl("torch", "jit")
def _ad_torch_compile(be: Backend, n: int, d: int, iters: int, lr: float) -> Any:
    import torch

    def loss(w: Any, b: Any, X: Any, y: Any) -> Any:
        err = X @ w + b - y
        return (err * err).mean()

    grad = torch.func.grad(loss, argnums=(0, 1))

    def step(X: Any, y: Any, w: Any, b: Any) -> tuple:
        gw, gb = grad(w, b, X, y)
        return w - lr * gw, b - lr * gb

    return _compiled_blocks(torch, step, iters)
