"""The Backend interface: one adapter per array framework, imported only inside a worker."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from arraybench.core.device_tokens import DeviceSpec, kind_of
from arraybench.errors import install_hint


class Unavailable(Exception):
    """The framework cannot run here; the message says why and how to fix it."""


def thread_env(threads: int) -> dict[str, str]:
    """Variables every native thread pool reads at import; must be set before any import."""
    n = str(threads)
    return {
        "OMP_NUM_THREADS": n,
        "OPENBLAS_NUM_THREADS": n,
        "MKL_NUM_THREADS": n,
        "BLIS_NUM_THREADS": n,
        "VECLIB_MAXIMUM_THREADS": n,
        "NUMEXPR_NUM_THREADS": n,
        "NUMBA_NUM_THREADS": n,
        # JAX's CPU client sizes its pool from PJRT_NPROC (XLA_FLAGS' intra_op setting is ignored).
        "PJRT_NPROC": n,
        "TF_NUM_INTRAOP_THREADS": n,
        "TF_NUM_INTEROP_THREADS": "1",
    }


# Our import path and home are for this interpreter: another one must find its own packages.
OWN_VARIABLES = ("PYTHONPATH", "PYTHONHOME")


def child_env(settings: dict[str, str], foreign: bool = False) -> dict[str, str]:
    """Environment for a child process: ours, plus `settings`, with this arraybench first on
    PYTHONPATH so the child imports the same code as its parent (a source tree, a worktree).

    A `foreign` child runs another Python environment's interpreter (`--env`): our import path
    and home would hand it this environment's frameworks, so it gets neither, and this
    arraybench's source only where that is a checkout, not a directory of installed packages."""
    env = {**os.environ, **settings}
    src = Path(__file__).resolve().parents[2]
    if foreign:
        for name in OWN_VARIABLES:
            env.pop(name, None)
        if (src / "arraybench").is_dir() and src.name == "src" and (src.parent / "pyproject.toml").is_file():
            env["PYTHONPATH"] = str(src)
        return env
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH")) if p)
    return env


def blas_info() -> list[dict[str, Any]]:
    """The native thread pools loaded in this process, as threadpoolctl sees them."""
    from threadpoolctl import threadpool_info

    keep = ("user_api", "internal_api", "num_threads", "version", "architecture", "prefix")
    return [{k: pool.get(k) for k in keep} for pool in threadpool_info()]


def to_host_tree(out: Any, leaf: Callable[[Any], np.ndarray]) -> Any:
    """Apply `leaf` to every array in a (possibly nested) tuple/list/dict output."""
    if isinstance(out, tuple | list):
        return type(out)(to_host_tree(o, leaf) for o in out)
    if isinstance(out, dict):
        return {k: to_host_tree(v, leaf) for k, v in out.items()}
    return leaf(out)


class Backend:
    """Adapter for one framework.

    Class attributes and classmethods work without importing the framework (the main process
    uses them to plan); `load()` imports it inside a worker whose environment `env()` set first.
    """

    name: ClassVar[str]
    module: ClassVar[str]
    distribution: ClassVar[str]
    extra: ClassVar[str]
    devices_supported: ClassVar[tuple[str, ...]] = ("cpu",)
    # Whether the framework can spread one computation over several devices of a kind (a device
    # token such as cpu:4 or gpu:2): the multi-device workloads are planned on such tokens only here.
    spans_devices: ClassVar[bool] = False
    jit_modes: ClassVar[tuple[str, ...]] = ()
    jit_name: ClassVar[str | None] = None
    # Whether its worker gets a temporary directory of its own, removed with it (parent.Worker): for a
    # framework that leaves files there that only an exit handler would remove. Not for one that keeps a
    # cache there: PyTorch's Inductor builds its precompiled header (147 MB, 8-10 s on the 2-core VM) in
    # the system's temporary directory, once a machine, and once a worker where each has its own.
    private_tmp: ClassVar[bool] = False

    def __init__(self, threads: int, dtype: str, device: str = "cpu") -> None:
        self.threads = threads
        self.dtype = dtype
        self.device = device  # the normalised token (devices.py): cpu, cpu:4, gpu:1,3, gpu:all
        self.spec = DeviceSpec.parse(device)
        self.kind = kind_of(device)
        # How many devices a case's computation spans; load() sets it where the token says `all`.
        self.n_devices = self.spec.count or 1

    # --- without importing the framework -------------------------------------------------
    @classmethod
    def installed(cls) -> tuple[bool, str]:
        """Whether the framework can be imported, with the reason and the fix when not."""
        if importlib.util.find_spec(cls.module) is None:
            return False, f"{cls.module} is not installed ({install_hint(repr(f'arraybench[{cls.extra}]'))})"
        return True, ""

    @classmethod
    def runs_on(cls, device: str) -> tuple[bool, str]:
        """Whether this adapter drives the framework on `device`'s kind, with the reason when not:
        NumPy asked for a GPU is not run on the CPU in its place."""
        kind = kind_of(device)
        if kind in cls.devices_supported:
            return True, ""
        return False, f"{cls.name} runs on {' or '.join(cls.devices_supported)} only, not {kind}"

    @classmethod
    def version(cls) -> str | None:
        try:
            return importlib.metadata.version(cls.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None

    @classmethod
    def modes(cls) -> tuple[str, ...]:
        return ("eager", *cls.jit_modes)

    def env(self) -> dict[str, str]:
        """Environment for the worker process, applied before the framework is imported."""
        return thread_env(self.threads)

    # --- inside the worker ---------------------------------------------------------------
    def load(self) -> None:
        """Import the framework and apply thread and precision settings; raise Unavailable."""
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """Version, device, verified threads and precision settings, recorded with each case."""
        return {
            "version": self.version(),
            "device": self.device,
            "threads_requested": self.threads,
            "cpu_affinity": len(os.sched_getaffinity(0)),
            "blas": blas_info(),
            "n_devices": self.n_devices,
            "devices_used": self.devices_used(),
            # Several CPU "devices" are slices of the same cores: 4 forced host devices on 2 cores
            # share those 2 cores, and a speedup over them cannot exceed what the cores give.
            "cores_shared": len(os.sched_getaffinity(0)) if self.kind == "cpu" and self.n_devices > 1 else None,
        }

    def devices_used(self) -> list[str]:
        """The devices a case's computation runs on, as the framework names them (after load)."""
        return [self.device]

    def devices(self) -> list[str]:
        return ["cpu"]

    def to_device(self, a: np.ndarray) -> Any:
        """`a` on this backend's device, checked: the inputs of a case, copied before timing."""
        x = self.upload(np.ascontiguousarray(a))
        self.check_dtype(x)
        return x

    def to_devices(self, a: np.ndarray, how: str) -> Any:
        """`a` laid over this backend's devices for a multi-device workload (workloads.workload.Spread):
        `split` along its leading axis, a `copy` on every device, or on the `first` device only.
        On one device this is `to_device`: the plain single-device case, the scaling baseline."""
        if self.n_devices == 1:
            return self.to_device(a)
        raise Unavailable(f"{self.name} cannot spread a computation over {self.n_devices} devices")

    def gather(self, out: Any, how: str) -> Any:
        """A multi-device workload's output on the host, whole: its `split` pieces joined, one of
        its `copy` replicas, or the array on whichever device it is (`first`)."""
        return self.to_host(out)

    def upload(self, a: np.ndarray) -> Any:
        """The copy alone, with no checks: what a transfer workload times (contiguous input)."""
        return a

    def to_host(self, out: Any) -> Any:
        return to_host_tree(out, np.asarray)

    @property
    def asynchronous(self) -> bool:
        """Whether a call can return before its result exists (then the Timer syncs each call)."""
        return False

    @property
    def pipelined(self) -> bool:
        """Whether calls queue on a device stream in order, so one sync at the end of a block of
        calls waits for all of them (the Timer then syncs per block, as CUDA events time)."""
        return self.asynchronous and self.kind == "gpu"

    def sync(self, out: Any) -> None:
        """Block until `out` is computed. Called inside the timed region."""

    # --- GPU: L2-cold timing --------------------------------------------------------------
    # How `time_cold` times a call: CUDA events where the framework exposes them.
    cold_method: ClassVar[str] = "wall clock around one call and its sync"
    _flush_buffer: Any = None

    def flush_l2(self, nbytes: int) -> None:
        """Write `nbytes` of device memory so that nothing of the previous call stays in L2."""
        raise NotImplementedError

    def time_cold(self, fn: Callable[..., Any], args: tuple[Any, ...], l2_bytes: int) -> float:
        """Seconds of one call of `fn` with L2 flushed before it (nvbench's default figure)."""
        self.flush_l2(2 * l2_bytes)  # returns once the buffer is written
        t0 = time.perf_counter()
        self.sync(fn(*args))
        return time.perf_counter() - t0

    def run_on_device(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, with every op it creates placed on this backend's device.

        Frameworks whose ops follow their inputs need nothing; TensorFlow overrides this,
        since it places ops by scope, not by where their inputs live.
        """
        return fn

    def jit(self, fn: Callable[..., Any], mode: str, *, any_shape: bool = False) -> Callable[..., Any]:
        """Compile `fn` the framework's idiomatic way (used by write-once workloads).

        `any_shape`: the function will see many shapes, and the framework should compile the way
        it does for that (torch.compile's automatic dynamic shapes) rather than per shape.
        """
        raise Unavailable(f"{self.name} has no {mode} mode")

    # --- the operations workloads ask for, where a framework's own spelling differs ----------
    # Each returns the callable, looked up once when a case is built, never inside the timer.
    takes_host_arrays: ClassVar[bool] = True  # its functions accept NumPy arrays as they are

    def sin_op(self) -> Callable[[Any], Any]:
        return self.xp.sin

    def sort_op(self) -> Callable[[Any], Any]:
        return self.xp.sort

    def fft_op(self) -> Callable[[Any], Any]:
        return self.xp.fft.fft

    @property
    def xp(self) -> Any:
        """The array namespace user workloads compute with."""
        raise NotImplementedError

    # --- memory on a device: the framework's own counters (measure/call_memory.py reads them) -------
    # How the counters below measure, in a few words; None: no counter of the framework's (on the
    # CPU, measure/call_memory.py reads the process's resident set instead).
    memory_method: ClassVar[str | None] = None

    def settle_memory(self) -> int | None:
        """Before a phase of calls: reset the framework's peak and return the bytes in use now on the
        case's device; None where the framework keeps no such count (the CPU, for every framework)."""
        return None

    def peak_memory(self) -> int | None:
        """The most bytes in use at once on the device since settle_memory (or start_case); None where
        the framework cannot tell (JAX, whose peak cannot be reset, where no new high was reached)."""
        return None

    def reserved_memory(self) -> int | None:
        """The bytes the framework's pool holds from the device now, in use or not; None: no pool count."""
        return None

    def prepare_jit(self) -> None:
        """Pay the framework's once-per-process compiler set-up, before a process's first compiled
        call (the jit floor's, else the first JIT case's, whose `build_s` then holds it), so that no
        case's first call holds it. Called before every JIT case: does its work once per process."""

    @contextlib.contextmanager
    def machine_cache(self) -> Iterator[None]:
        """Compiles made inside go to the user's set-up cache (core/usercache.py), shared by every run
        on this machine, not to the run's compile cache (measure/compilecache.py): for code that holds
        no case's, whose compile no record reports (prepare_jit's throw-away graph, the jit floor).
        A backend whose compiles no persistent cache keeps has nothing to redirect."""
        yield

    def start_case(self) -> None:
        """Called before each case: forget what an earlier case in this worker left behind that
        would change this one's numbers (its peak memory, a compiler's per-function state)."""

    def check_dtype(self, x: Any) -> None:
        """Refuse silent down-casts (JAX without x64 turns float64 into float32)."""
        got = str(getattr(x, "dtype", self.dtype)).replace("torch.", "").replace("<dtype: '", "").rstrip("'>")
        if got != self.dtype and got in ("float32", "float64"):
            raise Unavailable(f"{self.name} made a {got} array from {self.dtype} input")
