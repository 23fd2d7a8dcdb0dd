"""CuPy: NumPy's API on a CUDA GPU, one or several (one process driving each device in turn);
kernels queue on a stream, so every timed call syncs it (on every device the case spans)."""

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from arraybench.backends.backend import Backend, Unavailable, to_host_tree
from arraybench.errors import install_hint


class CupyBackend(Backend):
    name = "cupy"
    module = "cupy"
    distribution = "cupy-cuda12x"
    extra = "cupy"
    devices_supported = ("gpu",)
    spans_devices = True
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
                f"{e} ({install_hint(repr('arraybench[cupy-cuda12]'))}, or 'arraybench[cupy-cuda13]' for CUDA 13)"
            ) from e
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as e:
            raise Unavailable(f"no CUDA device: {e}") from e
        if count == 0:
            raise Unavailable("no CUDA device")
        ids = self.spec.ids if self.spec.ids is not None else tuple(range(count))
        if max(ids) >= count:
            raise Unavailable(f"CuPy sees {count} CUDA device(s); {self.device} needs ids {', '.join(map(str, ids))}")
        import cupyx

        self.cupy, self.cupyx = cupy, cupyx
        self.devs = [cupy.cuda.Device(i) for i in ids]
        self.dev = self.devs[0]
        self.n_devices = len(self.devs)
        self.dev.use()
        # Several GPUs: NCCL's all-reduce over one communicator per device (what an expert uses), or,
        # where this CuPy was built without NCCL, the partial results copied to the first device,
        # summed there and copied back (recorded as `allreduce` in the backend info).
        self.comms = None
        if self.n_devices > 1:
            try:
                from cupy.cuda import nccl
            except ImportError:
                return
            if nccl.available:
                self.nccl, self.comms = nccl, nccl.NcclCommunicator.initAll([d.id for d in self.devs])

    def info(self) -> dict[str, Any]:
        info = super().info()
        props = self.cupy.cuda.runtime.getDeviceProperties(0)
        info["device_name"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        info["cuda_runtime"] = self.cupy.cuda.runtime.runtimeGetVersion()
        info["compute_capability"] = f"{props['major']}.{props['minor']}"
        info["cuda_driver"] = self.cupy.cuda.runtime.driverGetVersion()
        info["tf32"] = os.environ.get("CUPY_TF32", "0") != "0"
        info["threads_verified"] = None
        if self.n_devices > 1:
            info["allreduce"] = "nccl" if self.comms is not None else "peer copies through the first device"
        return info

    def devices(self) -> list[str]:
        return [f"cuda:{i}" for i in range(self.cupy.cuda.runtime.getDeviceCount())]

    def devices_used(self) -> list[str]:
        return [f"cuda:{d.id}" for d in self.devs]

    # --- several GPUs: a list of arrays, one per device, in the case's device order -------------
    def to_devices(self, a: np.ndarray, how: str) -> Any:
        """`split`: each device's rows, `copy`: the whole of `a` on each device, `first`: one array
        on the first device. One device: the plain array, as every single-device case has it."""
        if self.n_devices == 1 or how == "first":
            return self.to_device(a)
        n = self.n_devices
        if how == "split" and a.shape[0] % n:
            raise Unavailable(f"{a.shape[0]} rows do not split evenly over {n} devices")
        pieces = np.split(a, n) if how == "split" else [a] * n
        out = []
        for dev, piece in zip(self.devs, pieces, strict=True):
            with dev:
                out.append(self.to_device(piece))
        return out

    def gather(self, out: Any, how: str) -> Any:
        if self.n_devices == 1 or how == "first":
            return self.to_host(out)
        parts = [self.cupy.asnumpy(x) for x in out]
        return np.concatenate(parts) if how == "split" else parts[0]

    def on_each(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> list[Any]:
        """`fn` on every device, each on its own pieces of `args` (lists from to_devices), queued
        one device after the other: the calls run on the GPUs at once."""
        out = []
        for i, dev in enumerate(self.devs):
            with dev:
                out.append(fn(*(a[i] for a in args)))
        return out

    def allreduce(self, parts: list[Any]) -> list[Any]:
        """The sum of the devices' `parts`, on every device (in place where NCCL does it)."""
        cupy = self.cupy
        if self.comms is not None:
            nccl = self.nccl
            kind = nccl.NCCL_FLOAT64 if parts[0].dtype == np.float64 else nccl.NCCL_FLOAT32
            nccl.groupStart()
            for comm, dev, x in zip(self.comms, self.devs, parts, strict=True):
                with dev:
                    comm.allReduce(x.data.ptr, x.data.ptr, x.size, kind, nccl.NCCL_SUM,
                                   cupy.cuda.get_current_stream().ptr)
            nccl.groupEnd()
            return parts
        with self.dev:
            total = parts[0]
            for x in parts[1:]:
                total = total + cupy.copy(x)  # cupy.copy: onto the current device, from any other
        out = [total]
        for dev in self.devs[1:]:
            with dev:
                out.append(cupy.copy(total))
        return out

    def upload(self, a: np.ndarray) -> Any:
        return self.cupy.asarray(a)

    def to_host(self, out: Any) -> Any:
        return to_host_tree(out, self.cupy.asnumpy)

    @property
    def asynchronous(self) -> bool:
        return True

    def sync(self, out: Any) -> None:
        if self.n_devices == 1:
            self.cupy.cuda.get_current_stream().synchronize()
            return
        for dev in self.devs:
            with dev:
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

    memory_method = ("CuPy's default memory pool, emptied of its free blocks before a phase: its size after "
                     "the phase is the phase's peak (blocks round up to 512 B, so a little above it)")

    def settle_memory(self) -> int | None:
        pool = self.cupy.get_default_memory_pool()
        pool.free_all_blocks()
        return int(pool.used_bytes())

    def peak_memory(self) -> int | None:
        # The pool grows only when no free block fits, so emptied before a phase, its size is the phase's peak.
        return int(self.cupy.get_default_memory_pool().total_bytes())

    def reserved_memory(self) -> int | None:
        return int(self.cupy.get_default_memory_pool().total_bytes())

    def start_case(self) -> None:
        # The pool only grows, so its size after a case is that case's peak once it starts empty.
        self.cupy.get_default_memory_pool().free_all_blocks()
