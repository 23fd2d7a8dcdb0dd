"""JAX: XLA-compiled arrays on CPU, GPU or TPU, one device or several (a Mesh); asynchronous, so every
timed call blocks on its result."""

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from arraybench.backends.backend import Backend, Unavailable, to_host_tree
from arraybench.errors import install_hint


class JaxBackend(Backend):
    name = "jax"
    module = "jax"
    distribution = "jax"
    extra = "jax"
    devices_supported = ("cpu", "gpu", "tpu")
    spans_devices = True
    jit_modes = ("jit",)
    jit_name = "jax.jit"
    async_dispatch: bool | None = None  # on the CPU: whether calls go to a pool thread (_set_cpu_dispatch)

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
            raise Unavailable(f"{e} ({install_hint(repr('arraybench[jax]'))})") from e
        jax.config.update("jax_enable_x64", self.dtype == "float64")
        jax.config.update("jax_default_matmul_precision", "highest")
        self.async_dispatch = self._set_cpu_dispatch(jax)
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

    def _set_cpu_dispatch(self, jax: Any) -> bool | None:
        """Run each call of a one-device CPU case on the calling thread; return whether dispatch stays
        asynchronous (None where the setting does not exist, or does not apply).

        On the CPU every call is synced inside the timed region (a CPU has no stream to queue on), so
        asynchronous dispatch buys no overlap there: it only hands each call to a pool thread and wakes
        the caller when it ends. On a shared VM that hand-off is a scheduler's wake-up, 5 to 25 µs, and
        a fresh process settles at one of two speeds and keeps it (jitted `grad` at n = 10⁴: 5 or 28 µs
        a call; `fft` at n = 1000: 21 µs against 7 µs run on the calling thread). XLA still runs a
        computation's own parallel work on its pool of `--threads`. Several forced host devices keep
        it: their computations run side by side only through it."""
        if self.kind != "cpu" or not self.spec.single:
            return None
        try:
            jax.config.update("jax_cpu_enable_async_dispatch", False)
        except AttributeError:  # a JAX older than the setting (before 0.4.31): async dispatch was not there
            return None
        return False

    def info(self) -> dict[str, Any]:
        info = super().info()
        info["device_name"] = str(self.dev.device_kind)
        info["x64"] = bool(self.jax.config.jax_enable_x64)
        info["matmul_precision"] = str(self.jax.config.jax_default_matmul_precision)
        info["cpu_async_dispatch"] = self.async_dispatch
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

    memory_method = ("JAX's device memory_stats: bytes_in_use, peak_bytes_in_use (never reset: before each phase "
                     "a block held on the device raises what is in use to the worker's peak so far, so that the "
                     "phase's own peak is a new high), pool_bytes")
    _peak_before: int | None = None  # peak_bytes_in_use when the phase began, the floor held (settle_memory)
    _in_use: int | None = None  # bytes_in_use when the phase began, without the floor
    _floor: Any = None  # the block that holds what is in use up to the peak so far, during a phase
    _floor_bytes = 0

    def _memory_stats(self) -> dict[str, Any] | None:
        return self.dev.memory_stats() if self.kind != "cpu" else None

    def _hold(self, nbytes: int) -> Any:
        """A block of `nbytes` on the device, made there (no copy from the host) and ready."""
        jnp = self.jax.numpy
        return jnp.zeros((nbytes,), dtype=jnp.uint8, device=self.dev).block_until_ready()

    def settle_memory(self) -> int | None:
        """What is in use now. XLA's peak cannot be reset, so a phase that needs less than an earlier one
        would leave it as it was: a block is held through the phase that brings what is in use up to
        the peak so far, and any allocation of the phase then sets a new high, less the block."""
        self._let_go()  # a block still held (a settle with no phase after it) is not in use
        stats = self._memory_stats()
        if not stats:
            return None
        in_use, peak = stats.get("bytes_in_use"), stats.get("peak_bytes_in_use")
        if in_use is not None and peak is not None and peak > in_use:
            try:
                self._floor = self._hold(peak - in_use)
                held = self._memory_stats() or {}
                self._floor_bytes = max(0, held.get("bytes_in_use", in_use) - in_use)
                peak = held.get("peak_bytes_in_use", peak)
            except Exception:  # no room for the block: the phase's peak is known only if it sets a new high
                self._let_go()
        self._in_use, self._peak_before = in_use, peak
        return in_use

    def _let_go(self) -> None:
        """Give the block back to the device, at once rather than when the array is collected."""
        if self._floor is not None and hasattr(self._floor, "delete"):
            self._floor.delete()
        self._floor, self._floor_bytes = None, 0

    def peak_memory(self) -> int | None:
        stats = self._memory_stats()
        held = self._floor_bytes
        self._let_go()
        peak = stats.get("peak_bytes_in_use") if stats else None
        if peak is None or self._peak_before is None:
            return None if peak is None else int(peak)
        if peak > self._peak_before:
            return int(peak) - held
        # No new high. With the block held up to the earlier peak, the phase never had more in use than
        # when it began; without it, its peak lies somewhere under an earlier case's: unknown.
        if self._in_use is not None and self._in_use + held >= self._peak_before:
            return self._in_use
        return None

    def reserved_memory(self) -> int | None:
        stats = self._memory_stats()
        return stats.get("pool_bytes") if stats else None
