"""Complex 1-D forward FFT (document 002): O(n log n), a code path unlike linear algebra.

The input is complex64 for float32 runs and complex128 for float64 ones. Numba cannot compile
np.fft; CuPy's cuFFT call is one library call, so there is nothing for cupy.fuse to fuse.
"""

from typing import Any

import numpy as np

from arraybench.workloads.common import eps, norm_check, register_everywhere
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import Workload

fft = Workload(
    name="fft",
    description="complex 1-D forward FFT (document 002)",
    defaults={"n": 1_000},
    size_param="n",
    presets={"small": {"n": 1_000}, "large": {"n": 1_000_000}, "sweep": log_sweep("n", 100, 1_000_000)},
    flops=lambda n: 5.0 * n * np.log2(n),  # the customary count for a complex radix-2 FFT
    bytes=lambda n, itemsize: 4.0 * n * itemsize,  # complex in and out: two reals each
)


@fft.inputs
def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    complex_type = np.result_type(dtype, np.complex64)
    return ((rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(complex_type),)


fft.reference(lambda x, n: np.fft.fft(x))
# FFT rounding error grows like log₂(n)·eps in the relative L2 norm.
fft.check_with(norm_check(lambda dtype, params: 8.0 * max(np.log2(params["n"]), 1.0) * eps(dtype)))


def _fft_op(be: Any) -> Any:
    op = be.fft_op()
    return lambda x: op(x)


register_everywhere(fft, _fft_op, no_numba="Numba does not support np.fft inside @njit", cupy_jit=False)
