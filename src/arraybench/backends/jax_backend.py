"""JAX: XLA-compiled arrays on CPU or GPU; asynchronous, so every timed call blocks on its result."""

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from arraybench.backends.base import Backend, Unavailable, to_host_tree


class JaxBackend(Backend):
    name = "jax"
    module = "jax"
    distribution = "jax"
    extra = "jax"
    devices_supported = ("cpu", "gpu")
    jit_modes = ("jit",)
    jit_name = "jax.jit"

    def env(self) -> dict[str, str]:
        env = super().env()
        env["JAX_PLATFORMS"] = "cuda" if self.device == "gpu" else "cpu"
        # Don't grab 75 % of the GPU at start-up: other frameworks' numbers would suffer.
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        env["JAX_ENABLE_X64"] = "1" if self.dtype == "float64" else "0"
        # float32 matmuls in full precision on GPU (no TF32); recorded in info().
        env["JAX_DEFAULT_MATMUL_PRECISION"] = "highest"
        return env

    def load(self) -> None:
        try:
            import jax
        except ImportError as e:
            raise Unavailable(f"{e} (pip install 'arraybench[jax]')") from e
        jax.config.update("jax_enable_x64", self.dtype == "float64")
        jax.config.update("jax_default_matmul_precision", "highest")
        platform = "gpu" if self.device == "gpu" else "cpu"
        try:
            self.dev = jax.devices(platform)[0]
        except RuntimeError as e:
            raise Unavailable(f"JAX sees no {platform} device: {e}") from e
        self.jax = jax

    def info(self) -> dict[str, Any]:
        info = super().info()
        info["device_name"] = str(self.dev.device_kind)
        info["x64"] = bool(self.jax.config.jax_enable_x64)
        info["matmul_precision"] = str(self.jax.config.jax_default_matmul_precision)
        if self.device == "gpu":
            info["compute_capability"] = getattr(self.dev, "compute_capability", None)
        info["jaxlib"] = self.jax.lib.__version__ if hasattr(self.jax.lib, "__version__") else None
        # XLA's CPU pool follows PJRT_NPROC and the affinity mask; neither can be read back from JAX.
        info["threads_verified"] = min(
            int(os.environ.get("PJRT_NPROC", info["cpu_affinity"])), info["cpu_affinity"]
        )
        return info

    def devices(self) -> list[str]:
        return [str(d) for d in self.jax.devices()]

    def upload(self, a: np.ndarray) -> Any:
        return self.jax.device_put(a, self.dev)

    def to_host(self, out: Any) -> Any:
        return to_host_tree(out, np.asarray)

    @property
    def asynchronous(self) -> bool:
        return True

    def sync(self, out: Any) -> None:
        self.jax.block_until_ready(out)

    def flush_l2(self, nbytes: int) -> None:
        # No in-place writes in JAX: a fresh buffer of `nbytes` written on the device does it.
        self.jax.block_until_ready(self.jax.numpy.zeros(nbytes // 4, dtype="float32", device=self.dev))

    def jit(self, fn: Callable[..., Any], mode: str, *, any_shape: bool = False) -> Callable[..., Any]:
        return self.jax.jit(fn)

    @property
    def xp(self) -> Any:
        return self.jax.numpy

    def peak_memory(self) -> int | None:
        stats = self.dev.memory_stats() if self.device == "gpu" else None
        return stats.get("peak_bytes_in_use") if stats else None
