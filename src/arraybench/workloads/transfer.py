"""Host↔device copies of an n×n matrix (document 004), each direction timed on its own.

`transfer_to_device` starts from the host NumPy array (the workload's `host_args`) and times
the backend's own upload; `transfer_to_host` starts from the device array and times the copy
back. On a CPU a framework may share the host's memory and copy nothing; that is its honest
cost. NumPy and Numba work on host arrays, so there is nothing for them to transfer.
"""

from typing import Any

import numpy as np

from arraybench.backends.backend import Backend, Unavailable
from arraybench.backends.cupy_backend import CupyBackend
from arraybench.backends.jax_backend import JaxBackend
from arraybench.backends.torch_backend import TorchBackend
from arraybench.workloads.common import exact_check
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import Workload


def _make(name: str, description: str, host_args: bool) -> Workload:
    return Workload(
        name=name,
        description=description,
        defaults={"n": 1_000},
        size_param="n",
        presets={"small": {"n": 1_000}, "large": {"n": 3_000}, "sweep": log_sweep("n", 32, 4096, 8)},
        # No arithmetic, so no FLOP count: the figure that matters is GB/s.
        bytes=lambda n, itemsize: float(n * n * itemsize),
        host_args=host_args,
    )


to_device = _make("transfer_to_device", "pageable host NumPy array to the framework's device (document 004)", True)
to_host = _make("transfer_to_host", "device array back to a pageable host NumPy array (document 004)", False)
to_device_pinned = _make(
    "transfer_to_device_pinned", "page-locked (pinned) host array to the GPU: what DMA runs at", True
)
to_host_pinned = _make("transfer_to_host_pinned", "GPU array into a page-locked (pinned) host buffer", False)
ALL = (to_device, to_host, to_device_pinned, to_host_pinned)
PINNED_NEEDS_GPU = "pinned host memory is a CUDA notion: there is no device copy on the CPU"


def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return (rng.standard_normal((n, n)).astype(dtype),)


for wl in ALL:
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
for wl in (to_device_pinned, to_host_pinned):
    wl.cannot("tensorflow", "eager", "TensorFlow offers no way to place a host tensor in pinned memory")


@to_host.impl("jax")
def _jax_download(be: Backend, n: int) -> Any:
    from jax._src.array import ArrayImpl

    def download(x: Any) -> np.ndarray:
        # jaxlib keeps the first host copy of an array and hands it out again (np.asarray,
        # device_get): timing the same array twice would time a cache hit. A new jax.Array over
        # the same device buffer (~3 µs, no device work) has no such copy, so each call really
        # copies; `did_copy` proves it on a GPU (on the CPU, NumPy may view JAX's buffer).
        fresh = ArrayImpl(x.aval, x.sharding, x._arrays, committed=True, _skip_checks=True)
        host, did_copy = fresh._single_device_array_to_np_array_did_copy()
        if not did_copy and be.kind == "gpu":
            raise RuntimeError("jaxlib returned a cached host copy; the copy was not timed")
        return host

    return download


def _gpu_only(be: Backend) -> None:
    if be.kind != "gpu":
        raise Unavailable(PINNED_NEEDS_GPU)


@to_device_pinned.impl("torch")
def _torch_upload_pinned(be: TorchBackend, n: int) -> Any:
    _gpu_only(be)
    torch = be.torch
    staged: dict[int, Any] = {}

    def upload(x: np.ndarray) -> Any:
        # The caller's data lives in pinned memory (put there once, by the first, untimed-as-
        # steady-state call); each call then is one asynchronous DMA, synced by the timer.
        src = staged.get(id(x))
        if src is None:
            src = staged[id(x)] = torch.from_numpy(x).pin_memory()
        return src.to(be.dev, non_blocking=True)

    return upload


@to_host_pinned.impl("torch")
def _torch_download_pinned(be: TorchBackend, n: int) -> Any:
    _gpu_only(be)
    torch = be.torch
    buf: dict[str, Any] = {}

    def download(x: Any) -> np.ndarray:
        dst = buf.get("out")
        if dst is None:
            dst = buf["out"] = torch.empty(x.shape, dtype=x.dtype, pin_memory=True)
        dst.copy_(x, non_blocking=True)
        torch.cuda.current_stream(be.dev).synchronize()  # the host may read dst only after this
        return dst.numpy()

    return download


@to_device_pinned.impl("cupy")
def _cupy_upload_pinned(be: CupyBackend, n: int) -> Any:
    _gpu_only(be)
    cp = be.cupy
    staged: dict[int, Any] = {}

    def upload(x: np.ndarray) -> Any:
        src = staged.get(id(x))
        if src is None:
            src = staged[id(x)] = be.cupyx.empty_pinned(x.shape, x.dtype)
            src[...] = x
        out = cp.empty(x.shape, x.dtype)
        out.set(src)  # asynchronous from pinned memory; the timer syncs the stream
        return out

    return upload


@to_host_pinned.impl("cupy")
def _cupy_download_pinned(be: CupyBackend, n: int) -> Any:
    _gpu_only(be)
    buf: dict[str, np.ndarray] = {}

    def download(x: Any) -> np.ndarray:
        dst = buf.get("out")
        if dst is None:
            dst = buf["out"] = be.cupyx.empty_pinned(x.shape, x.dtype)
        x.get(out=dst)
        be.cupy.cuda.get_current_stream().synchronize()
        return dst

    return download


def _jax_memory(be: JaxBackend, kind: str) -> Any:
    from jax.sharding import SingleDeviceSharding

    return SingleDeviceSharding(be.dev, memory_kind=kind)


@to_device_pinned.impl("jax")
def _jax_upload_pinned(be: JaxBackend, n: int) -> Any:
    _gpu_only(be)
    jax, host, device = be.jax, _jax_memory(be, "pinned_host"), _jax_memory(be, "device")
    staged: dict[int, Any] = {}

    def upload(x: np.ndarray) -> Any:
        src = staged.get(id(x))
        if src is None:  # a jax.Array in JAX's pinned_host memory space
            src = staged[id(x)] = jax.block_until_ready(jax.device_put(x, host))
        return jax.device_put(src, device)

    return upload


@to_host_pinned.impl("jax")
def _jax_download_pinned(be: JaxBackend, n: int) -> Any:
    _gpu_only(be)
    jax, host = be.jax, _jax_memory(be, "pinned_host")

    def download(x: Any) -> Any:
        return jax.device_put(x, host)  # a new array in pinned host memory each call

    return download
