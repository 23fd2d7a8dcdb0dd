"""JAX: XLA-compiled arrays on CPU, GPU or TPU, one device or several (a Mesh); asynchronous, so every
timed call blocks on its result."""

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
    devices_supported = ("cpu", "gpu", "tpu")
    spans_devices = True
    jit_modes = ("jit",)
    jit_name = "jax.jit"

    def env(self) -> dict[str, str]:
        env = super().env()
        env["JAX_PLATFORMS"] = "cuda" if self.kind == "gpu" else self.kind
        if self.kind == "cpu" and not self.spec.single:
            # N CPU "devices" are N XLA host clients over the same cores; set before import, added
            # to any XLA_FLAGS the user had. `cpu:all`: one per core the worker is given.
            count = max(self.spec.ids) + 1 if self.spec.ids else self.threads
            flag = f"--xla_force_host_platform_device_count={count}"
            env["XLA_FLAGS"] = " ".join(f for f in (os.environ.get("XLA_FLAGS"), flag) if f)
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
        try:
            seen = jax.devices(self.kind)
        except RuntimeError as e:
            raise Unavailable(f"JAX sees no {self.kind} device: {e}") from e
        ids = self.spec.ids if self.spec.ids is not None else tuple(range(len(seen)))
        if max(ids) >= len(seen):
            raise Unavailable(f"JAX sees {len(seen)} {self.kind} device(s); {self.device} needs ids "
                              f"{', '.join(map(str, ids))}")
        self.devs = [seen[i] for i in ids]
        self.dev = self.devs[0]
        self.n_devices = len(self.devs)
        # One mesh axis, "d", over the case's devices: what the multi-device workloads shard along.
        self.mesh = jax.sharding.Mesh(np.array(self.devs), ("d",)) if self.n_devices > 1 else None
        self.jax = jax

    def info(self) -> dict[str, Any]:
        info = super().info()
        info["device_name"] = str(self.dev.device_kind)
        info["x64"] = bool(self.jax.config.jax_enable_x64)
        info["matmul_precision"] = str(self.jax.config.jax_default_matmul_precision)
        if self.kind == "gpu":
            info["compute_capability"] = getattr(self.dev, "compute_capability", None)
        info["jaxlib"] = self.jax.lib.__version__ if hasattr(self.jax.lib, "__version__") else None
        # XLA's CPU pool follows PJRT_NPROC and the affinity mask; neither can be read back from JAX.
        info["threads_verified"] = min(
            int(os.environ.get("PJRT_NPROC", info["cpu_affinity"])), info["cpu_affinity"]
        )
        return info

    def devices(self) -> list[str]:
        return [str(d) for d in self.jax.devices()]

    def devices_used(self) -> list[str]:
        return [str(d) for d in self.devs]

    def sharding(self, how: str) -> Any:
        """The NamedSharding of a Spread placement over the case's mesh: `split` rows, or a `copy`."""
        from jax.sharding import NamedSharding, PartitionSpec

        return NamedSharding(self.mesh, PartitionSpec("d") if how == "split" else PartitionSpec())

    def to_devices(self, a: np.ndarray, how: str) -> Any:
        if self.mesh is None:
            return self.to_device(a)
        if how == "first":
            x = self.jax.device_put(np.ascontiguousarray(a), self.dev)
        else:
            if how == "split" and a.shape[0] % self.n_devices:
                raise Unavailable(f"{a.shape[0]} rows do not split evenly over {self.n_devices} devices")
            x = self.jax.device_put(np.ascontiguousarray(a), self.sharding(how))
        self.check_dtype(x)
        return x

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
        stats = self.dev.memory_stats() if self.kind == "gpu" else None
        return stats.get("peak_bytes_in_use") if stats else None
