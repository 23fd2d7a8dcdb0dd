"""Which devices each framework sees, of every kind: run in a child process per framework
(`python -m arraybench.machine.device_survey BACKEND` prints JSON), since importing one pins it to a platform.

A worker is started for one device kind (JAX_PLATFORMS, CUDA_VISIBLE_DEVICES...), so what it sees
is not what the framework could use. The survey imports the framework as the user's environment
leaves it and asks it for every platform it knows. Kinds are the names `--devices` takes: the
framework's own platform name, with CUDA and ROCm GPUs both `gpu` (JAX and torch drive both
through one `gpu`/`cuda` device API); each device keeps its platform's own name too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from arraybench.core.device_tokens import DeviceSpec

# Platform names that `--devices` calls gpu.
GPU_PLATFORMS = ("gpu", "cuda", "rocm")
# JAX platforms to ask for by name where the installed JAX cannot list its backends.
JAX_PLATFORMS = ("cpu", "gpu", "tpu")
SURVEY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Device:
    """One device a framework sees."""

    kind: str  # the name --devices takes: cpu, gpu, tpu...
    platform: str  # the framework's own name for it: cuda, rocm, TPU...
    id: int
    name: str


def kind_of_platform(platform: str) -> str:
    """The --devices kind of a framework's platform name."""
    p = platform.lower()
    return "gpu" if p in GPU_PLATFORMS else p


def _numpy() -> list[Device]:
    return [Device("cpu", "cpu", 0, "host")]


def _numba() -> list[Device]:
    out = [Device("cpu", "cpu", 0, "host")]
    from numba import cuda

    if cuda.is_available():
        out += [Device("gpu", "cuda", i, str(g.name.decode() if isinstance(g.name, bytes) else g.name))
                for i, g in enumerate(cuda.gpus)]
    return out


def _jax() -> list[Device]:
    import jax

    try:
        from jax._src import xla_bridge

        platforms = list(xla_bridge.backends())
    except (ImportError, AttributeError, RuntimeError):
        platforms = list(JAX_PLATFORMS)
    out = []
    for platform in platforms:
        try:
            found = jax.devices(platform)
        except RuntimeError:  # a platform this install or machine does not have
            continue
        out += [Device(kind_of_platform(d.platform), d.platform, int(d.id), str(d.device_kind)) for d in found]
    return out


def _tensorflow() -> list[Device]:
    import tensorflow as tf

    out = []
    counts: dict[str, int] = {}
    for d in tf.config.list_physical_devices():
        platform = d.device_type
        i = counts[platform] = counts.get(platform, -1) + 1
        details = tf.config.experimental.get_device_details(d) if platform != "CPU" else {}
        out.append(Device(kind_of_platform(platform), platform, i, str(details.get("device_name", d.name))))
    return out


def _torch() -> list[Device]:
    import torch

    out = [Device("cpu", "cpu", 0, "host")]
    if torch.cuda.is_available():
        platform = "rocm" if getattr(torch.version, "hip", None) else "cuda"
        out += [Device("gpu", platform, i, torch.cuda.get_device_name(i)) for i in range(torch.cuda.device_count())]
    for platform in ("mps", "xpu"):
        module = getattr(torch, platform, None) if platform == "xpu" else getattr(torch.backends, platform, None)
        if module is not None and module.is_available():
            count = module.device_count() if hasattr(module, "device_count") else 1
            out += [Device(platform, platform, i, platform) for i in range(count)]
    return out


def _cupy() -> list[Device]:
    import cupy

    out = []
    for i in range(cupy.cuda.runtime.getDeviceCount()):
        name = cupy.cuda.runtime.getDeviceProperties(i)["name"]
        out.append(Device("gpu", "rocm" if cupy.cuda.runtime.is_hip else "cuda", i,
                          name.decode() if isinstance(name, bytes) else str(name)))
    return out


SURVEYS: dict[str, Callable[[], list[Device]]] = {
    "numpy": _numpy, "numba": _numba, "jax": _jax, "tensorflow": _tensorflow, "torch": _torch, "cupy": _cupy,
}


def start(backend: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """Start the survey of `backend` in a child process with environment `env`."""
    return subprocess.Popen([sys.executable, "-m", "arraybench.machine.device_survey", backend], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result(proc: subprocess.Popen[str]) -> tuple[list[Device], str]:
    """The devices a started survey found, or none and why (one line)."""
    try:
        out, err = proc.communicate(timeout=SURVEY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return [], f"the device survey took over {SURVEY_TIMEOUT_S:g} s"
    if proc.returncode != 0:
        last = (err.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return [], f"the device survey failed: {last}"
    return [Device(**d) for d in json.loads(out)], ""


def counts(devices: list[dict[str, Any]]) -> dict[str, int]:
    """How many devices of each kind (devices as probe() gives them), in the order first seen."""
    out: dict[str, int] = {}
    for d in devices:
        out[d["kind"]] = out.get(d["kind"], 0) + 1
    return out


def devices_text(devices: list[dict[str, Any]]) -> str:
    """`cpu ×1, gpu ×2 (cuda: NVIDIA H100 80GB HBM3)`: per kind, how many and what."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for d in devices:
        by_kind.setdefault(d["kind"], []).append(d)
    parts = []
    for kind, found in by_kind.items():
        what = sorted({f"{d['platform']}: {d['name']}" for d in found if kind != "cpu"})
        parts.append(f"{kind} ×{len(found)}" + (f" ({'; '.join(what)})" if what else ""))
    return ", ".join(parts)


def missing(backend: str, device: str, found: list[Device]) -> str | None:
    """Why `backend` cannot run on the devices of token `device`, given those a survey `found`, in one
    line (`jax sees no gpu here: cpu ×1`); None where it sees them all."""
    spec = DeviceSpec.parse(device)
    have = sum(1 for d in found if d.kind == spec.kind)
    seen = devices_text([asdict(d) for d in found]) or "no device"
    if have == 0:
        return f"{backend} sees no {spec.kind} here: {seen}"
    if spec.ids is not None and max(spec.ids) >= have:
        return (f"{backend} sees {have} {spec.kind} here ({seen}); {spec.token} needs {spec.kind} "
                f"{', '.join(map(str, spec.ids))}")
    return None


def main(argv: list[str]) -> int:
    (backend,) = argv
    found: list[Any] = [asdict(d) for d in SURVEYS[backend]()]
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
