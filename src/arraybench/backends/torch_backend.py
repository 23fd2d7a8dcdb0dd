"""PyTorch: eager tensors and torch.compile (Inductor) on CPU or CUDA."""

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from arraybench.backends.base import Backend, Unavailable, to_host_tree


class TorchBackend(Backend):
    name = "torch"
    module = "torch"
    distribution = "torch"
    extra = "torch"
    devices_supported = ("cpu", "gpu")
    jit_modes = ("jit",)
    jit_name = "torch.compile"
    cold_method = "CUDA events around one call (torch.cuda.Event)"

    def env(self) -> dict[str, str]:
        env = super().env()
        env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # no compile-worker pool beside the timed process
        if self.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        return env

    def load(self) -> None:
        try:
            import torch
        except ImportError as e:
            raise Unavailable(f"{e} (pip install 'arraybench[torch]')") from e
        torch.set_num_threads(self.threads)
        torch.set_num_interop_threads(1)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        if self.device == "gpu":
            if not torch.cuda.is_available():
                raise Unavailable("torch sees no CUDA device (CPU build, or no driver)")
            self.dev = torch.device("cuda", 0)
        else:
            self.dev = torch.device("cpu")
        self.torch = torch

    def info(self) -> dict[str, Any]:
        info = super().info()
        t = self.torch
        info["threads_verified"] = t.get_num_threads()
        info["interop_threads"] = t.get_num_interop_threads()
        info["tf32"] = bool(t.backends.cuda.matmul.allow_tf32)
        info["float32_matmul_precision"] = t.get_float32_matmul_precision()
        info["mkldnn"] = bool(t.backends.mkldnn.is_available())
        info["cudnn_tf32"] = bool(t.backends.cudnn.allow_tf32)
        if self.device == "gpu":
            props = t.cuda.get_device_properties(self.dev)
            info["device_name"] = props.name
            info["compute_capability"] = f"{props.major}.{props.minor}"
            info["cuda"] = t.version.cuda
            info["reduced_precision_reduction"] = {
                "float16": bool(t.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
                "bfloat16": bool(t.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
            }
        return info

    def devices(self) -> list[str]:
        t = self.torch
        return ["cpu"] + [f"cuda:{i} {t.cuda.get_device_name(i)}" for i in range(t.cuda.device_count())]

    def upload(self, a: np.ndarray) -> Any:
        x = self.torch.from_numpy(a).to(self.dev)
        # On the CPU `.to` is a no-op: the copy that makes a tensor own its memory is the clone.
        return x.clone() if self.device == "cpu" else x

    def to_host(self, out: Any) -> Any:
        return to_host_tree(out, lambda t: t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t))

    @property
    def asynchronous(self) -> bool:
        return self.device == "gpu"

    def sync(self, out: Any) -> None:
        if self.device == "gpu":
            self.torch.cuda.synchronize(self.dev)

    def flush_l2(self, nbytes: int) -> None:
        if self._flush_buffer is None or self._flush_buffer.numel() * 4 < nbytes:
            self._flush_buffer = self.torch.empty(nbytes // 4, dtype=self.torch.float32, device=self.dev)
        self._flush_buffer.zero_()

    def time_cold(self, fn: Callable[..., Any], args: tuple[Any, ...], l2_bytes: int) -> float:
        cuda = self.torch.cuda
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        self.flush_l2(2 * l2_bytes)  # queued ahead of `start`, so the launch below is hidden behind it
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    takes_host_arrays = False

    def jit(self, fn: Callable[..., Any], mode: str, *, any_shape: bool = False) -> Callable[..., Any]:
        # dynamic=False compiles one graph per shape; for a function that sees many shapes the
        # default (None) is what a user gets: a graph per shape until the second one seen, then
        # one dynamic graph. Forcing False there would hit the recompile limit and run eagerly.
        return self.torch.compile(fn, dynamic=None if any_shape else False)

    def sort_op(self) -> Callable[[Any], Any]:
        sort = self.torch.sort
        return lambda x: sort(x).values

    @property
    def xp(self) -> Any:
        return self.torch

    def peak_memory(self) -> int | None:
        if self.device != "gpu":
            return None
        return int(self.torch.cuda.max_memory_allocated(self.dev))

    def prepare_jit(self) -> None:
        # The first torch.compile in a process loads Inductor and checks its C++ toolchain: 1.3-3 s
        # even from a warm cache, after which a cached graph loads in ~0.1 s. Paid here once, a
        # warm first call (first_call_warm_s) is the cache's figure, not the process's set-up.
        self.torch.compile(lambda x: x + 1, dynamic=False)(self.torch.ones(1))

    def start_case(self) -> None:
        # Dynamo keeps per-function guards and counts recompilations across calls of one lambda:
        # without a reset, a case's compile depends on which case ran before, and after the
        # recompile limit (8) "jit" silently runs eagerly. The on-disk Inductor cache stays: it is
        # the run's (compilecache.py), and a first call it serves is reported as warm. Only once
        # something compiled: importing dynamo to reset it costs an eager-only worker ~1 s.
        if "torch._dynamo" in sys.modules:
            self.torch._dynamo.reset()
        if self.device == "gpu":
            self.torch.cuda.reset_peak_memory_stats(self.dev)
