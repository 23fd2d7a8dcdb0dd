"""Helpers the built-in workloads share: one function registered on every framework, and checks."""

from collections.abc import Callable
from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.workloads.workload import Check, Workload, leaves

NO_FUSE = "cupy.fuse fuses element-wise kernels only; this op is already one library call"


def register_everywhere(
    wl: Workload,
    fn_for: Callable[[Backend], Callable[..., Any]],
    *,
    numba_elements: Callable[[dict[str, Any]], int] | None = None,
    no_numba: str | None = None,
    cupy_jit: bool = True,
) -> None:
    """Register `fn_for(backend)`, a Python function of device arrays, on every framework.

    For computations whose code reads the same everywhere (operators, or the framework's own
    namespace picked inside `fn_for`): NumPy runs it eagerly; Numba under `@njit`
    (`parallel=True` where `numba_elements(params)`, the elements of its input, make splitting
    over NUMBA_NUM_THREADS pay); JAX,
    TensorFlow, PyTorch and CuPy eagerly and through `Backend.jit`, built once per case.
    A Python function rather than a bare ufunc, because torch.compile and cupy.fuse trace code.
    `no_numba` is the reason Numba cannot compile it, where it cannot.
    """
    wl.impl("numpy")(lambda be, **params: fn_for(be))

    def numba_jit(be: Backend, **params: Any) -> Any:
        return numba_compiled(fn_for(be), numba_elements(params) if numba_elements else 0)

    if no_numba:
        wl.cannot("numba", "jit", no_numba)
    else:
        wl.impl("numba", "jit")(numba_jit)
    for backend in ("jax", "torch"):
        wl.impl_eager_and_jit(backend)(lambda be, **params: fn_for(be))
    wl.impl_eager_and_jit("tensorflow")(lambda be, **params: be.run_on_device(fn_for(be)))
    if cupy_jit:
        wl.impl_eager_and_jit("cupy")(lambda be, **params: fn_for(be))
    else:
        wl.impl("cupy")(lambda be, **params: fn_for(be))
        wl.cannot("cupy", "jit", NO_FUSE)


# Starting a parallel region costs microseconds to tens of them; below this many elements one
# thread finishes first, so an expert would not go parallel there.
PARALLEL_MIN_ELEMENTS = 1 << 16


def numba_compiled(fn: Callable[..., Any], elements: int) -> Callable[..., Any]:
    """`fn` under @njit: the `parallel=True` build for inputs of PARALLEL_MIN_ELEMENTS or more,
    the serial one below. Chosen here, when the case is built, so no Python code picks a build
    inside the timed calls (the other frameworks' calls pay no such dispatch)."""
    import numba

    return numba.njit(parallel=elements >= PARALLEL_MIN_ELEMENTS)(fn)


def eps(dtype: str) -> float:
    return float(np.finfo(dtype).eps)


def norm_check(tolerance: Callable[[str, dict[str, Any]], float]) -> Callable[..., Check]:
    """Relative L2 (Frobenius) error ‖out − ref‖ / ‖ref‖ against `tolerance(dtype, params)`."""

    def check(out: Any, ref: Any, dtype: str, params: dict[str, Any]) -> Check:
        tol = float(tolerance(dtype, params))
        (got,), (want,) = leaves(out), leaves(ref)
        if got.shape != want.shape:
            return Check(False, float("inf"), float("inf"), tol, f"shape {got.shape}, expected {want.shape}")
        diff = got.astype(want.dtype) - want
        if not np.all(np.isfinite(diff)):
            return Check(False, float("inf"), float("inf"), tol, "output has NaN or inf")
        rel = float(np.linalg.norm(diff) / np.linalg.norm(want))
        return Check(bool(rel <= tol), float(np.max(np.abs(diff))), rel, tol)

    return check


def exact_check(out: Any, ref: Any, dtype: str, params: dict[str, Any]) -> Check:
    """Bit-for-bit equality with the reference (sorting and copying round nothing)."""
    (got,), (want,) = leaves(out), leaves(ref)
    if got.shape != want.shape:
        return Check(False, float("inf"), float("inf"), 0.0, f"shape {got.shape}, expected {want.shape}")
    if got.dtype != np.dtype(dtype):
        return Check(False, float("inf"), float("inf"), 0.0, f"dtype {got.dtype}, expected {dtype}")
    wrong = int(np.count_nonzero(got.astype(want.dtype) != want))
    err = float(np.max(np.abs(got.astype(want.dtype) - want))) if wrong else 0.0
    scale = float(np.max(np.abs(want))) or 1.0
    return Check(wrong == 0, err, err / scale, 0.0, f"{wrong} of {want.size} elements differ" if wrong else "")
