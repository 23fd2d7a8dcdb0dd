"""Environment: what the machine and software were, recorded with every run."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
from typing import Any

from arraybench import gpu

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


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpus() -> list[dict[str, Any]]:
    """NVIDIA GPUs (model, driver, CUDA, compute capability, clocks, L2), without a framework."""
    return gpu.devices()


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
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_logical": os.cpu_count(),
        "cpu_physical": psutil.cpu_count(logical=False),
        "cpu_affinity": len(os.sched_getaffinity(0)),
        "memory_bytes": mem,
        "os": platform.platform(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "versions": versions(),
        "gpus": gpus(),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "OMP_", "MKL_", "XLA_", "JAX_", "TF_", "CUDA_", "PJRT_"))},
    }


def fingerprint(env: dict[str, Any]) -> str:
    """A short name for the hardware, to tell machines apart in history and reports."""
    gpu = "+".join(g["name"] for g in env.get("gpus", [])) or "no GPU"
    return f"{env.get('hostname')} · {env.get('cpu_model')} ×{env.get('cpu_logical')} · {gpu}"
