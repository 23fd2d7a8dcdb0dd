"""Workload registry: the built-in workloads by name, plus user workloads loaded from files."""

from arraybench.errors import unknown
from arraybench.workloads import (
    elementwise,
    fft,
    grad,
    matmul,
    multidevice,
    poly,
    retrace,
    rng,
    selu,
    sort,
    transfer,
    vmap_convolve,
    vmap_pergrad,
)
from arraybench.workloads.base import Check, Workload
from arraybench.workloads.linreg import linreg, linreg_autodiff

# The source documents' operations. (Every workload's check demands the case's dtype.)
OPERATIONS = (
    elementwise.add, elementwise.mul, elementwise.sin,
    *matmul.ALL,
    grad.grad, fft.fft, sort.sort, poly.poly, poly.poly_as_written, selu.selu,
    *transfer.ALL,
    rng.rng,
    retrace.cached, retrace.new_shape,
)

# One computation over several devices (device tokens such as cpu:4): multidevice.py.
WORKLOADS: dict[str, Workload] = {w.name: w for w in (linreg, linreg_autodiff, *OPERATIONS, *multidevice.ALL,
                                                 *vmap_pergrad.ALL, *vmap_convolve.ALL)}


def get_workload(name: str) -> Workload:
    """The built-in workload `name`; a UsageError naming the closest one if there is none."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise unknown("workload", name, WORKLOADS) from None


def resolve_workload(name: str, source: str | None = None) -> Workload:
    """A built-in workload, or one defined in the user's file `source`."""
    if source is None:
        return get_workload(name)
    from arraybench.userfile import load_workload_file

    found = load_workload_file(source)
    try:
        return found[name]
    except KeyError:
        # A user's file and the built-ins can share a run: compare your kernel with linreg.
        if name in WORKLOADS:
            return WORKLOADS[name]
        raise unknown(f"workload in {source}", name, {**WORKLOADS, **found}) from None


__all__ = ["WORKLOADS", "Check", "Workload", "get_workload", "resolve_workload"]
