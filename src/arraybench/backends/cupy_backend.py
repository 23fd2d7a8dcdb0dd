"""CuPy: NumPy's API on a CUDA GPU; kernels queue on a stream, so every timed call syncs it."""

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from arraybench.backends.base import Backend, Unavailable, to_host_tree


class CupyBackend(Backend):
    name = "cupy"
    module = "cupy"
    distribution = "cupy-cuda12x"
    extra = "cupy"
    devices_supported = ("gpu",)
    jit_modes = ("jit",)
    jit_name = "cupy.fuse"
    cold_method = "CUDA events around one call (cupy.cuda.Event)"

    def env(self) -> dict[str, str]:
        env = super().env()
        env["CUPY_TF32"] = "0"  # float32 matmuls in full precision unless the user asks (recorded)
        return env

    @classmethod
    def version(cls) -> str | None:
        import importlib.metadata

        for dist in ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy"):
            try:
                return importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
        return None

    def load(self) -> None:
        try:
            import cupy
        except ImportError as e:
            raise Unavailable(
                f"{e} (pip install 'arraybench[cupy-cuda12]', or 'arraybench[cupy-cuda13]' for CUDA 13)"
            ) from e
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as e:
            raise Unavailable(f"no CUDA device: {e}") from e
        if count == 0:
            raise Unavailable("no CUDA device")
        import cupyx

        self.cupy, self.cupyx = cupy, cupyx
        self.dev = cupy.cuda.Device(0)
        self.dev.use()

    def info(self) -> dict[str, Any]:
        info = super().info()
        props = self.cupy.cuda.runtime.getDeviceProperties(0)
        info["device_name"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        info["cuda_runtime"] = self.cupy.cuda.runtime.runtimeGetVersion()
        info["compute_capability"] = f"{props['major']}.{props['minor']}"
        info["cuda_driver"] = self.cupy.cuda.runtime.driverGetVersion()
        info["tf32"] = os.environ.get("CUPY_TF32", "0") != "0"
        info["threads_verified"] = None
        return info

    def devices(self) -> list[str]:
        return [f"cuda:{i}" for i in range(self.cupy.cuda.runtime.getDeviceCount())]

    def upload(self, a: np.ndarray) -> Any:
        return self.cupy.asarray(a)

    def to_host(self, out: Any) -> Any:
        return to_host_tree(out, self.cupy.asnumpy)

    @property
    def asynchronous(self) -> bool:
        return True

    def sync(self, out: Any) -> None:
        self.cupy.cuda.get_current_stream().synchronize()

    def flush_l2(self, nbytes: int) -> None:
        if self._flush_buffer is None or self._flush_buffer.nbytes < nbytes:
            self._flush_buffer = self.cupy.empty(nbytes // 4, dtype=self.cupy.float32)
        self._flush_buffer.fill(0)

    def time_cold(self, fn: Callable[..., Any], args: tuple[Any, ...], l2_bytes: int) -> float:
        cuda = self.cupy.cuda
        start, end = cuda.Event(), cuda.Event()
        self.flush_l2(2 * l2_bytes)  # queued ahead of `start`, so the launch below is hidden behind it
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        return cuda.get_elapsed_time(start, end) / 1e3

    takes_host_arrays = False

    def jit(self, fn: Callable[..., Any], mode: str, *, any_shape: bool = False) -> Callable[..., Any]:
        # cupy.fuse names the CUDA kernel after the function: a lambda's "<lambda>" does not compile.
        name = getattr(fn, "__name__", "")
        return self.cupy.fuse(kernel_name=name if name.isidentifier() else "arraybench_fused")(fn)

    @property
    def xp(self) -> Any:
        return self.cupy

    def peak_memory(self) -> int | None:
        return int(self.cupy.get_default_memory_pool().total_bytes())

    def start_case(self) -> None:
        # The pool only grows, so its size after a case is that case's peak once it starts empty.
        self.cupy.get_default_memory_pool().free_all_blocks()
