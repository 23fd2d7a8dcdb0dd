"""CuPy: NumPy's API on a CUDA GPU; kernels queue on a stream, so every timed call syncs it."""

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
    jit_name = "cupyx.jit.rawkernel / cupy.fuse"

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
            raise Unavailable(f"{e} (pip install 'arraybench[cupy]')") from e
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as e:
            raise Unavailable(f"no CUDA device: {e}") from e
        if count == 0:
            raise Unavailable("no CUDA device")
        self.cupy = cupy
        self.dev = cupy.cuda.Device(0)
        self.dev.use()

    def info(self) -> dict[str, Any]:
        info = super().info()
        props = self.cupy.cuda.runtime.getDeviceProperties(0)
        info["device_name"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        info["cuda_runtime"] = self.cupy.cuda.runtime.runtimeGetVersion()
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

    def jit(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        return self.cupy.fuse(fn)

    @property
    def xp(self) -> Any:
        return self.cupy

    def peak_memory(self) -> int | None:
        return int(self.cupy.get_default_memory_pool().total_bytes())

    def start_case(self) -> None:
        # The pool only grows, so its size after a case is that case's peak once it starts empty.
        self.cupy.get_default_memory_pool().free_all_blocks()
