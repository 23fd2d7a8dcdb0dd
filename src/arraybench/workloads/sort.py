"""Ascending sort of a float vector (document 002): branchy, data-dependent memory access."""

from typing import Any

import numpy as np

from arraybench.workloads.common import exact_check, register_everywhere
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import Workload

sort = Workload(
    name="sort",
    description="ascending sort of a random float vector (document 002)",
    defaults={"n": 1_000},
    size_param="n",
    presets={"small": {"n": 1_000}, "large": {"n": 1_000_000}, "sweep": log_sweep("n", 100, 1_000_000)},
    # No FLOP count: a sort compares and moves elements, and n·log₂(n) comparisons are not
    # floating-point operations; the report leaves its GFLOP/s empty and says why.
    bytes=lambda n, itemsize: 2.0 * n * itemsize,
)


@sort.inputs
def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return (rng.standard_normal(n).astype(dtype),)


sort.reference(lambda x, n: np.sort(x))
sort.check_with(exact_check)  # float32 values sort the same in float64


def _sort_op(be: Any) -> Any:
    op = be.sort_op()
    return lambda x: op(x)


register_everywhere(sort, _sort_op, cupy_jit=False)
