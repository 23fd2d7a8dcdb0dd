"""The catalogue of workloads: the built-in ones by name, a user's from their file, and what every
case needs of its workload (its size, its blank record)."""

from typing import Any

from arraybench.core.case import Case
from arraybench.errors import unknown
from arraybench.results.record import CaseRecord
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
from arraybench.workloads.linreg import linreg, linreg_autodiff
from arraybench.workloads.userfile import load_workload_file
from arraybench.workloads.workload import Workload

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
    found = load_workload_file(source)
    try:
        return found[name]
    except KeyError:
        # A user's file and the built-ins can share a run: compare your kernel with linreg.
        if name in WORKLOADS:
            return WORKLOADS[name]
        raise unknown(f"workload in {source}", name, {**WORKLOADS, **found}) from None


def case_size(case: Case) -> Any:
    """The value of the workload's size parameter: the x axis of tables and plots."""
    try:
        return case.params_dict.get(resolve_workload(case.workload, case.source).size_param)
    except Exception:  # an unloadable user workload still gets a record
        return None


def blank_record(case: Case, status: str, error: str = "") -> CaseRecord:
    """The record of a case that has not reached (or never will reach) the timer: made by the worker,
    and by the parent for a case no worker could take (unavailable, crashed, timed out)."""
    return CaseRecord.blank({"id": case.id, **case.to_dict()}, status, error, size=case_size(case))
