"""Host↔device copies of an n×n matrix (document 004), each direction timed on its own.

`transfer_to_device` starts from the host NumPy array (the workload's `host_args`) and times
the backend's own upload; `transfer_to_host` starts from the device array and times the copy
back. On a CPU a framework may share the host's memory and copy nothing; that is its honest
cost. NumPy and Numba work on host arrays, so there is nothing for them to transfer.
"""

from typing import Any

import numpy as np

from arraybench.backends.base import Backend
from arraybench.workloads.base import Workload
from arraybench.workloads.common import exact_check


def _make(name: str, description: str, host_args: bool) -> Workload:
    return Workload(
        name=name,
        description=description,
        defaults={"n": 1_000},
        size_param="n",
        presets={"small": {"n": 1_000}, "large": {"n": 3_000}},
        # No arithmetic, so no FLOP count: the figure that matters is GB/s.
        bytes=lambda n, itemsize: float(n * n * itemsize),
        host_args=host_args,
    )


to_device = _make("transfer_to_device", "host NumPy array to the framework's device (document 004)", True)
to_host = _make("transfer_to_host", "device array back to a host NumPy array (document 004)", False)


def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return (rng.standard_normal((n, n)).astype(dtype),)


for wl in (to_device, to_host):
    wl.inputs(_inputs)
    wl.reference(lambda x, n: x)
    wl.check_with(exact_check)  # a copy changes no bit
    wl.cannot("numpy", "eager", "NumPy arrays live on the host: there is nothing to transfer")
    wl.cannot("numba", "jit", "Numba computes on NumPy's host arrays: there is nothing to transfer")


def _upload(be: Backend, n: int) -> Any:
    return be.upload


def _download(be: Backend, n: int) -> Any:
    return be.to_host


for backend in ("tensorflow", "torch", "cupy"):
    to_device.impl(backend)(_upload)
    to_host.impl(backend)(_download)
to_device.impl("jax")(_upload)


@to_host.impl("jax")
def _jax_download(be: Backend, n: int) -> Any:
    def download(x: Any) -> np.ndarray:
        # np.asarray(x) keeps the host copy on the array after a real (GPU) copy, so timing the
        # same array again would time a cache hit; this is np.asarray's own copy, uncached.
        host, _ = x._single_device_array_to_np_array_did_copy()
        return host

    return download
