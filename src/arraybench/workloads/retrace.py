"""What a compiled function costs when called with a shape it has not seen (document 004).

`retrace_cached` calls one function with the same length-n vector every time; `retrace_new_shape`
calls it with a vector of a length it has not been called with yet (n−1, n−2, ... from the
same host data), so a framework that specialises on shapes traces and compiles again on every
call. Both start from host NumPy data (`host_args`), so each call moves its few KB to the device
the same way and the two differ only in the shape. The function, 2·sin(x) + 1, is cheap on
purpose: what is left is dispatch, tracing and compiling.

Numba and CuPy compile per dtype and rank, not per shape; torch.compile's default marks a
dimension dynamic after its second shape and stops recompiling. Their new-shape cost is
therefore close to their cached cost, which is what a user of each would see. After n−1 calls
the lengths repeat; a framework that recompiles needs milliseconds per call, far beyond n−1
calls in a case's sampling time.
"""

from itertools import count
from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.workloads.workload import Check, Workload, leaves, relative_check


def _make(name: str, description: str) -> Workload:
    return Workload(
        name=name,
        description=description,
        defaults={"n": 1_000},
        size_param="n",
        presets={"small": {"n": 1_000}},
        default_presets=("small",),
        flops=lambda n: 3.0 * n,
        bytes=lambda n, itemsize: 2.0 * n * itemsize,
        rtol={"float32": 1e-5, "float64": 1e-12},
        host_args=True,
    )


cached = _make("retrace_cached", "a compiled function called again with the same shape (document 004)")
new_shape = _make("retrace_new_shape", "a compiled function called with a shape it has not seen (document 004)")


def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return (rng.standard_normal(n).astype(dtype),)


def _prefix_check(out: Any, ref: Any, dtype: str, params: dict[str, Any]) -> Check:
    """The output of a call on the first m elements equals the reference's first m."""
    (got,), (want,) = leaves(out), leaves(ref)
    return relative_check(got, want[: got.size], cached.tolerance(dtype))


for wl in (cached, new_shape):
    wl.inputs(_inputs)
    wl.reference(lambda x, n: 2.0 * np.sin(x) + 1.0)
    wl.check_with(_prefix_check)


def _calls(f: Any, convert: Any, same_shape: bool) -> Any:
    """The timed function: `f` on `convert(host slice)`, the slice a new length on every call."""
    if same_shape:
        return lambda x: f(convert(x))
    lengths = count()

    def call(x: np.ndarray) -> Any:
        m = x.size - 1 - next(lengths) % (x.size - 1)
        return f(convert(x[:m]))

    return call


def _function(be: Backend) -> Any:
    sin = be.sin_op()
    return lambda x: 2 * sin(x) + 1


def _compiled(be: Backend) -> Any:
    # any_shape: compiled as a user's function that meets many shapes would be (torch.compile's
    # default dynamic shapes), not per shape up to the recompile limit and then silently eager.
    return be.jit(_function(be), "jit", any_shape=True)


def _convert(be: Backend) -> Any:
    """Host slice to what the function takes: JAX, TF and NumPy take NumPy arrays and move them."""
    return (lambda x: x) if be.takes_host_arrays else be.upload


def _builders(same_shape: bool) -> tuple[Any, Any]:
    """(eager builder, jit builder) for calls with the same shape or a new one each time."""

    def eager(be: Backend, n: int) -> Any:
        f = be.run_on_device(_function(be))
        return _calls(f, _convert(be), same_shape)

    def jit(be: Backend, n: int) -> Any:
        return _calls(_compiled(be), _convert(be), same_shape)

    return eager, jit


for wl, same in ((cached, True), (new_shape, False)):
    eager, jit = _builders(same)
    for backend in ("numpy", "jax", "tensorflow", "torch", "cupy"):
        wl.impl(backend)(eager)
    for backend in ("numba", "jax", "tensorflow", "torch", "cupy"):
        wl.impl(backend, "jit")(jit)
