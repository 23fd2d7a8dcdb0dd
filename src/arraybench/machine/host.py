"""The host: what the machine and its software were, recorded with every run (the results header's
`environment`: results.header.MachineEnvironment)."""

from __future__ import annotations

import glob
import importlib.metadata
import os
import platform
import shutil
import socket
import subprocess
from collections.abc import Mapping
from typing import Any

from arraybench.machine import nvidia
from arraybench.machine.caches import last_level_cache_bytes

FRAMEWORKS = {
    "numpy": ("numpy",),
    "numba": ("numba",),
    "llvmlite": ("llvmlite",),
    "scipy": ("scipy",),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "tensorflow": ("tensorflow-cpu", "tensorflow", "tensorflow-gpu"),
    "torch": ("torch",),
    "cupy": ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy"),
    "array-api-compat": ("array-api-compat",),
}

# The environment variables that change how frameworks thread, compile, allocate or round: every
# one set when a run starts is recorded (a stray KMP_AFFINITY or NUMBA_OPT explains a number), and
# no other. The rule: a prefix where every name under it is one library's setting (OpenMP, a BLAS,
# Numba, XLA, JAX, PyTorch, CUDA, CuPy, glibc's allocator), plus the exact names below.
ENV_PREFIXES = (
    "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "GOTO_", "BLIS_", "VECLIB_", "NUMEXPR_", "TBB_",
    "ONEDNN_", "DNNL_", "NUMBA_", "XLA_", "JAX_", "PJRT_", "TORCH", "PYTORCH_", "CUDA_",
    "CUBLAS_", "NVIDIA_", "CUPY_", "MALLOC_",
)
# Names where the prefix is shared: TF_ is TensorFlow's and Terraform's (TF_CLI_CONFIG_FILE,
# TF_VAR_*, TF_LOG), and most of TensorFlow's own only log or dump; these are the ones TensorFlow
# reads (its libraries' strings, 2.x) that set its threads, kernels, precision, allocator or JIT.
ENV_NAMES = frozenset({
    "GLIBC_TUNABLES", "LD_PRELOAD",
    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "TF_OVERRIDE_GLOBAL_THREADPOOL",
    "TF_ENABLE_ONEDNN_OPTS", "TF_SET_ONEDNN_FPMATH_MODE", "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS",
    "TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD", "TF_ONEDNN_USE_SYSTEM_ALLOCATOR", "TF_ENABLE_ZENDNN_OPTS",
    "TF_XLA_FLAGS", "TF_CPU_ALLOCATOR_USE_BFC", "TF_GPU_ALLOCATOR",
    "TF_FORCE_GPU_ALLOW_GROWTH", "TF_FORCE_UNIFIED_MEMORY", "TF_GPU_THREAD_MODE", "TF_GPU_THREAD_COUNT",
    "TF_DETERMINISTIC_OPS", "TF_CUDNN_USE_AUTOTUNE", "TF_MATMUL_AUTOTUNE_ENABLE", "TF_USE_CUBLASLT",
    "TF_FP16_MATMUL_USE_FP32_COMPUTE",
})
# The instruction-set extensions that decide which kernels a BLAS or a JIT can use.
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
              "avx512_fp16", "amx_tile", "amx_bf16", "asimd", "sve", "sve2")


# What the environment measured rather than how the machine is set up (dotted keys; a list's
# elements each): it differs between any two runs of one machine, so it is no difference between
# two runs' setups. `peaks` are measured at the start of a run, the current clocks read at it.
MEASURED = ("peaks", "cpu_frequency.current_mhz", "gpus.sm_clock_mhz")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    """The SIMD extensions this CPU has (of SIMD_FLAGS), from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    have = set(line.split(":", 1)[1].split())
                    return [flag for flag in SIMD_FLAGS if flag in have]
    except OSError:
        pass
    return []


def cpu_frequency() -> dict[str, Any]:
    """Current, minimum and maximum clock (MHz) and the frequency governor, where Linux says.

    A `powersave` governor or a current clock far below the maximum makes every number slower.
    """
    import psutil

    out: dict[str, Any] = {"governor": None, "current_mhz": None, "min_mhz": None, "max_mhz": None}
    try:
        freq = psutil.cpu_freq()
    except (OSError, NotImplementedError):
        freq = None
    if freq is not None:
        out.update(current_mhz=round(freq.current), min_mhz=round(freq.min) or None,
                   max_mhz=round(freq.max) or None)
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") as f:
            out["governor"] = f.read().strip() or None
    except OSError:
        pass
    return out


def settings_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables of `environ` (default: this process's) that change results (ENV_PREFIXES, ENV_NAMES)."""
    environ = dict(os.environ) if environ is None else environ
    return {k: v for k, v in sorted(environ.items()) if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}


def git_commit(cwd: str | None = None) -> dict[str, Any] | None:
    """The commit checked out in the working directory, and whether files differ from it.

    The code under test is usually the user's own checkout: a result without its commit
    cannot be matched to the code that produced it. None outside a git work tree.
    """
    if shutil.which("git") is None:
        return None
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def gpus() -> list[dict[str, Any]]:
    """NVIDIA GPUs (model, driver, CUDA, compute capability, clocks, L2), without a framework."""
    return nvidia.devices()


def devices(gpu_list: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every device of each kind this machine has, with its id, as read without a framework: the
    host CPU, each NVIDIA GPU (NVML or nvidia-smi), each TPU chip (/dev/accel*, /dev/vfio on TPU
    VMs). What each framework sees of them is `arraybench list` (device_survey.py)."""
    out: list[dict[str, Any]] = [{"kind": "cpu", "id": 0, "name": cpu_model(), "cores": os.cpu_count()}]
    out += [{"kind": "gpu", "id": g.get("index", i), "name": g["name"],
             **{k: g[k] for k in ("uuid", "pci_bus_id") if k in g}} for i, g in enumerate(gpu_list)]
    chips = sorted(glob.glob("/dev/accel[0-9]*"))
    out += [{"kind": "tpu", "id": i, "name": path} for i, path in enumerate(chips)]
    return out


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name, dists in FRAMEWORKS.items():
        out[name] = None
        for dist in dists:
            try:
                out[name] = importlib.metadata.version(dist)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    return out


def collect() -> dict[str, Any]:
    """Machine and software facts that can be read without importing a framework."""
    import psutil

    mem = psutil.virtual_memory().total
    found = gpus()
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_logical": os.cpu_count(),
        "cpu_physical": psutil.cpu_count(logical=False),
        "cpu_affinity": len(os.sched_getaffinity(0)),
        "memory_bytes": mem,
        "last_level_cache_bytes": last_level_cache_bytes(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "versions": versions(),
        "cpu_flags": cpu_flags(),
        "cpu_frequency": cpu_frequency(),
        "gpus": found,
        "gpu_links": nvidia.links() if len(found) > 1 else [],
        "devices": devices(found),
        "env": settings_env(),
    }


def setup(env: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded environment (its JSON, or results.header.MachineEnvironment) without what was measured
    in it (MEASURED): the machine's setup."""
    out: Any = dict(env)
    for key in MEASURED:
        out = _without(out, key.split("."))
    return dict(out)


def _without(obj: Any, path: list[str]) -> Any:
    """`obj` less the key at `path`, looked for in each element of a list on the way."""
    if isinstance(obj, list):
        return [_without(v, path) for v in obj]
    if not isinstance(obj, dict) or path[0] not in obj:
        return obj
    if len(path) == 1:
        return {k: v for k, v in obj.items() if k != path[0]}
    return {**obj, path[0]: _without(obj[path[0]], path[1:])}


def fingerprint(env: Mapping[str, Any]) -> str:
    """A short name for the hardware: the key that tells machines apart in history, the store, the
    site and reports (Results.machine_key gives a record's): results.header.MachineEnvironment's."""
    from arraybench.results.header import MachineEnvironment

    return (env if isinstance(env, MachineEnvironment) else MachineEnvironment.from_json(env)).fingerprint
