"""PyTorch: eager tensors and torch.compile (Inductor) on CPU or CUDA; several devices as one process
each under torch.distributed (gloo on the CPU), the worker being rank 0 and driving the others."""

import contextlib
import datetime
import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from arraybench.backends.backend import Backend, Unavailable, to_host_tree
from arraybench.core.usercache import setup_dir
from arraybench.errors import install_hint

# The command rank 0 broadcasts to its peers (execution/torch_peer.py), one int32 each: run the
# built function once more on your inputs; read a message (broadcast_object_list) next; exit;
# nothing (what timing the command alone sends).
CALL, MESSAGE, STOP, PROBE = 1, 2, 0, 3
PEER_START_TIMEOUT = datetime.timedelta(seconds=120)


class TorchBackend(Backend):
    name = "torch"
    module = "torch"
    distribution = "torch"
    extra = "torch"
    devices_supported = ("cpu", "gpu")
    spans_devices = True
    rank = 0  # this process's rank when a case spans several devices; peers are 1..N-1
    jit_modes = ("jit",)
    jit_name = "torch.compile"
    cold_method = "CUDA events around one call (torch.cuda.Event)"
    _jit_prepared = False

    def env(self) -> dict[str, str]:
        env = super().env()
        env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # no compile-worker pool beside the timed process
        if self.kind == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        return env

    def load(self) -> None:
        try:
            import torch
        except ImportError as e:
            raise Unavailable(f"{e} ({install_hint(repr('arraybench[torch]'))})") from e
        # N processes share the worker's cores: each gets its share of the threads, not all of them.
        torch.set_num_threads(max(1, self.threads // self.n_devices))
        torch.set_num_interop_threads(1)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        if self.spec.ids is None:
            raise Unavailable(f"{self.device}: torch runs one process per device, whose number must be given "
                              f"({self.kind}:N)")
        self.ids = self.spec.ids
        if self.kind == "gpu":
            if not torch.cuda.is_available():
                raise Unavailable("torch sees no CUDA device (CPU build, or no driver)")
            if max(self.ids) >= torch.cuda.device_count():
                raise Unavailable(f"torch sees {torch.cuda.device_count()} CUDA device(s); {self.device} needs "
                                  f"ids {', '.join(map(str, self.ids))}")
            self.dev = torch.device("cuda", self.ids[self.rank])
        else:
            self.dev = torch.device("cpu")
        self.torch = torch
        self._peers: list[subprocess.Popen[bytes]] = []
        self.command_s: float | None = None
        if self.n_devices > 1 and self.rank == 0:
            self.spread()

    # --- several devices: one process each ---------------------------------------------------
    def spread(self) -> None:
        """Start the N-1 peer processes and join them in a process group (gloo on the CPU, NCCL on
        GPUs); then time the per-call command they wait on, which every timed call includes."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        for rank in range(1, self.n_devices):
            cmd = [sys.executable, "-m", "arraybench.execution.torch_peer", "--rank", str(rank),
                   "--port", str(port), "--threads", str(self.threads), "--dtype", self.dtype,
                   "--device", self.device, "--parent", str(os.getpid())]
            # The peers write to the worker's log (its fd 2) and die with it (torch_peer).
            self._peers.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=2, stderr=2))
        self.join(port)
        t0, calls = time.perf_counter(), 200
        for _ in range(calls):
            self._broadcast_code(PROBE)
        self.command_s = (time.perf_counter() - t0) / calls

    def join(self, port: int) -> None:
        """Join the case's process group as `self.rank` (rank 0 rendezvous at 127.0.0.1:`port`)."""
        dist = self.torch.distributed
        if not dist.is_available():
            raise Unavailable("this torch build has no torch.distributed")
        dist.init_process_group("nccl" if self.kind == "gpu" else "gloo", init_method=f"tcp://127.0.0.1:{port}",
                                rank=self.rank, world_size=self.n_devices, timeout=PEER_START_TIMEOUT)
        self._code = self.torch.zeros(1, dtype=self.torch.int32, device=self.dev)

    def _broadcast_code(self, code: int) -> int:
        """Rank 0: send `code` to the peers; a peer: wait for it and return it."""
        if self.rank == 0:
            self._code.fill_(code)
        self.torch.distributed.broadcast(self._code, src=0)
        return int(self._code.item())

    def command(self, code: int, message: Any = None) -> None:
        """Rank 0: tell the peers what to do next (a MESSAGE is followed by `message`, a tuple)."""
        self._broadcast_code(code)
        if code == MESSAGE:
            self.torch.distributed.broadcast_object_list([message], src=0)

    def built_everywhere(self, workload: str, mode: str, params: dict[str, Any],
                         make: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
        """`make()` on this rank; on rank 0 of several, on every peer too (they build the same
        workload from its name), and the result wrapped so that each call first tells the peers to
        run theirs. A peer's failure to build is raised here, so no rank waits on a collective."""
        if self.n_devices == 1 or self.rank != 0:
            return make()
        self.command(MESSAGE, ("build", workload, mode, params))
        mine: Exception | None = None
        try:
            fn = make()
        except Exception as e:  # noqa: BLE001 - raised below, after the peers said theirs
            mine = e
        errors: list[Any] = [None] * self.n_devices
        self.torch.distributed.gather_object("", errors, dst=0)
        if mine is not None:
            raise mine
        failed = [f"rank {r}: {e}" for r, e in enumerate(errors) if e]
        if failed:
            raise RuntimeError(f"a peer could not build the case: {failed[0]}")

        def call(*args: Any) -> Any:
            self._broadcast_code(CALL)
            return fn(*args)

        return call

    def to_devices(self, a: np.ndarray, how: str) -> Any:
        """This rank's part of `a`, the peers sent theirs: a `split` scatters its rows over the ranks,
        a `copy` is broadcast to every one; `first` stays on rank 0."""
        if self.n_devices == 1:
            return self.to_device(a)
        if how == "split" and a.shape[0] % self.n_devices:
            raise Unavailable(f"{a.shape[0]} rows do not split evenly over {self.n_devices} devices")
        dist, x = self.torch.distributed, self.to_device(a)
        self.command(MESSAGE, ("input", how, tuple(a.shape), str(a.dtype)))
        if how == "first":
            return x
        if how == "copy":
            dist.broadcast(x, src=0)
            return x
        parts = list(x.chunk(self.n_devices))
        mine = self.torch.empty_like(parts[0])
        dist.scatter(mine, parts, src=0)
        return mine

    def gather(self, out: Any, how: str) -> Any:
        """The output whole on the host: the ranks' `split` parts gathered to rank 0 and joined."""
        if self.n_devices == 1 or how != "split":
            return self.to_host(out)
        self.command(MESSAGE, ("gather", how))
        parts = [self.torch.empty_like(out) for _ in range(self.n_devices)]
        self.torch.distributed.gather(out, parts, dst=0)
        return self.to_host(self.torch.cat(parts))

    def devices_used(self) -> list[str]:
        where = "cuda:{}" if self.kind == "gpu" else "cpu (rank {})"
        return [where.format(i) for i in (self.ids if self.kind == "gpu" else range(self.n_devices))]

    def info(self) -> dict[str, Any]:
        info = super().info()
        t = self.torch
        if self.n_devices > 1:
            info["processes"] = self.n_devices
            info["command_s"] = self.command_s  # each timed call includes one: rank 0 telling the peers to go
        info["threads_verified"] = t.get_num_threads()
        info["interop_threads"] = t.get_num_interop_threads()
        info["tf32"] = bool(t.backends.cuda.matmul.allow_tf32)
        info["float32_matmul_precision"] = t.get_float32_matmul_precision()
        info["mkldnn"] = bool(t.backends.mkldnn.is_available())
        info["cudnn_tf32"] = bool(t.backends.cudnn.allow_tf32)
        if self.kind == "gpu":
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
        return x.clone() if self.kind == "cpu" else x

    def to_host(self, out: Any) -> Any:
        return to_host_tree(out, lambda t: t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t))

    @property
    def asynchronous(self) -> bool:
        return self.kind == "gpu"

    def sync(self, out: Any) -> None:
        if self.kind == "gpu":
            self.torch.cuda.synchronize(self.dev)
            # A copy to another GPU (device_copy) ends there; a copy to the host (transfer_to_host)
            # is a CPU tensor, done once `.cpu()` returns, and `synchronize` refuses a CPU device.
            where = getattr(out, "device", None)
            if getattr(where, "type", None) == "cuda" and where != self.dev:
                self.torch.cuda.synchronize(where)

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

    memory_method = ("torch.cuda: memory_allocated, max_memory_allocated since reset_peak_memory_stats (in use), "
                     "max_memory_reserved (its caching allocator's pool)")

    def settle_memory(self) -> int | None:
        if self.kind != "gpu":
            return None
        self.torch.cuda.reset_peak_memory_stats(self.dev)
        return int(self.torch.cuda.memory_allocated(self.dev))

    def peak_memory(self) -> int | None:
        if self.kind != "gpu":
            return None
        return int(self.torch.cuda.max_memory_allocated(self.dev))

    def reserved_memory(self) -> int | None:
        if self.kind != "gpu":
            return None
        return int(self.torch.cuda.max_memory_reserved(self.dev))

    def prepare_jit(self) -> None:
        # The first torch.compile in a process loads Inductor and checks its toolchain: 3 s even
        # from a warm cache, after which a cached graph loads in ~0.1 s. Paid here once, a warm
        # first call (first_call_warm_s) is the cache's figure, not the process's set-up.
        # The throw-away graph compiles on the worker's own device (a GPU worker's cases go through
        # Triton, never the C++ toolchain) and in the user's set-up cache, not the run's: in an
        # empty cache Inductor first builds its ISA probes and this kernel with the C++ compiler,
        # 7-8 s on the 2-core VM in every run's first process. They hold nothing of a case, so the
        # run's cache, where the cases' graphs go and which says whether a first call compiled
        # (compilecache.py), starts as empty as before.
        if self._jit_prepared:
            return
        self._jit_prepared = True
        with self.machine_cache():
            if self.kind == "cpu":
                IsaProbes.install(self.torch)
            self.torch.compile(lambda x: x + 1, dynamic=False)(self.torch.ones(1, device=self.dev))

    @contextlib.contextmanager
    def machine_cache(self) -> Iterator[None]:
        run_cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(setup_dir("torch"))
        try:
            yield
        finally:
            if run_cache is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = run_cache

    def start_case(self) -> None:
        if self.n_devices > 1 and self.rank == 0:
            self.command(MESSAGE, ("reset",))
        # Dynamo keeps per-function guards and counts recompilations across calls of one lambda:
        # without a reset, a case's compile depends on which case ran before, and after the
        # recompile limit (8) "jit" silently runs eagerly. The on-disk Inductor cache stays: it is
        # the run's (compilecache.py), and a first call it serves is reported as warm. Only once
        # something compiled: importing dynamo to reset it costs an eager-only worker ~1 s.
        if "torch._dynamo" in sys.modules:
            self.torch._dynamo.reset()
        if self.kind == "gpu":
            # An earlier case's cached blocks would count in this one's pool (reserved_memory).
            self.torch.cuda.empty_cache()
            self.torch.cuda.reset_peak_memory_stats(self.dev)


class IsaProbes:
    """Inductor's vector-ISA probes, answered once per machine instead of once per process.

    Before its first CPU kernel, each process's Inductor builds a test library for each vector ISA
    the CPU's flags name (AVX2, AVX-512 and its bf16 extension, VNNI, AMX and AMX-FP16) and loads
    each in a fresh Python (`VecISA.check_build`). Up to torch 2.12 that Python imports torch:
    with the CUDA build on a 16-core H200 host, 69 s of every torch·jit·cpu worker's start
    (2026-11-27), so each process of such a case cost a minute. The answer depends on the machine
    alone, so the first process's answers are kept in the user's set-up cache (core/usercache.py)
    under this machine's torch, interpreter, CPU flags and compiler, and later processes read them:
    Inductor picks the same ISA and extensions, with no probe run. A probe not answered before is
    run as torch runs it; anything of Inductor's that has moved leaves torch to probe as it does."""

    def __init__(self, memo: Path) -> None:
        self.memo = memo
        try:
            self.answers: dict[str, bool] = json.loads(memo.read_text())
        except (OSError, ValueError):
            self.answers = {}

    @classmethod
    def install(cls, torch: Any) -> None:
        """Answer this process's probes from the memo (once per process; nothing if torch moved)."""
        try:
            from torch._inductor import cpu_vec_isa
            from torch._inductor.cpp_builder import get_cpp_compiler

            isa_class = cpu_vec_isa.VecISA
            compiler = get_cpp_compiler()
            cxx = shutil.which(compiler) or compiler
            flags = next((ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")), "")
            key = "|".join([torch.__version__, sys.executable, platform.machine(), flags, cxx,
                            str(os.stat(cxx).st_mtime_ns) if os.path.exists(cxx) else ""])
        except Exception:  # Inductor's internals moved, or no compiler: torch probes as it always did
            return
        real = isa_class.check_build
        if getattr(real, "memo", None) is not None:
            return
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        probes = cls(setup_dir("torch") / f"vec-isa-{digest}.json")

        def check_build(isa: Any, code: str) -> bool:
            return probes.answer(isa, code, real)

        check_build.memo = probes  # type: ignore[attr-defined]
        isa_class.check_build = check_build

    def answer(self, isa: Any, code: str, probe: Callable[[Any, str], bool]) -> bool:
        what = hashlib.sha256(f"{type(isa).__name__}|{isa.build_arch_flags()}|{code}".encode()).hexdigest()[:16]
        if what not in self.answers:
            self.answers[what] = bool(probe(isa, code))
            try:  # a cache that cannot be written costs the next process its probes, never this compile
                self.memo.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.memo.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(self.answers, indent=0, sort_keys=True))
                os.replace(tmp, self.memo)
            except OSError:
                pass
        return self.answers[what]
