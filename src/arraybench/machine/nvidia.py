"""NVIDIA GPU facts without importing a framework: NVML (nvidia-ml-py) first, nvidia-smi else.

Used by the environment (model, driver, CUDA, compute capability, clocks, L2) and by GPU workers
to read the SM clock before and after each case, so a case timed while the GPU throttled is
flagged rather than trusted.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from typing import Any

# Clock-event reasons that mean the GPU ran slower than it could (NVML's bit masks). Idle and
# application-clock settings are left out: they are not a slowdown during a case.
SLOWDOWN_REASONS = {
    0x04: "SW power cap",
    0x08: "HW slowdown",
    0x20: "SW thermal slowdown",
    0x40: "HW thermal slowdown",
    0x80: "HW power brake",
}
# A case whose SM clock ends this far below the clock it started at is flagged as throttled.
CLOCK_DROP = 0.10
CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38
# NVML's topology levels (nvmlDeviceGetTopologyCommonAncestor): what a PCIe path between two GPUs
# crosses, nearest first.
PCIE_LEVELS = {
    0: "PCIe, same board",
    10: "PCIe, through one switch",
    20: "PCIe, through several switches",
    30: "PCIe, through the host bridge",
    40: "PCIe, across host bridges of one CPU",
    50: "PCIe, across CPUs (the SMP interconnect)",
}
NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS where pynvml does not say (Hopper has 18)


def _nvml() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # no package, no driver, no GPU: the caller falls back
        return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def l2_bytes(index: int = 0) -> int | None:
    """The L2 cache size of GPU `index`, from the CUDA driver library (there wherever a driver is)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, value = ctypes.c_int(), ctypes.c_int()
        if cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(dev), index):
            return None
        if cuda.cuDeviceGetAttribute(ctypes.byref(value), CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev):
            return None
        return int(value.value)
    except (OSError, AttributeError):
        return None


def devices() -> list[dict[str, Any]]:
    """Every NVIDIA GPU: name, memory, driver, CUDA driver version, compute capability, clocks."""
    nv = _nvml()
    if nv is None:
        return _devices_from_smi()
    try:
        return _devices_from_nvml(nv)
    except Exception:  # an NVML call this driver lacks: nvidia-smi still answers
        return _devices_from_smi()


def _devices_from_nvml(nv: Any) -> list[dict[str, Any]]:
    out = []
    driver = _text(nv.nvmlSystemGetDriverVersion())
    cuda = nv.nvmlSystemGetCudaDriverVersion_v2()
    for i in range(nv.nvmlDeviceGetCount()):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        major, minor = nv.nvmlDeviceGetCudaComputeCapability(h)
        out.append({
            "index": i,
            "name": _text(nv.nvmlDeviceGetName(h)),
            "uuid": _text(nv.nvmlDeviceGetUUID(h)),
            "pci_bus_id": _text(nv.nvmlDeviceGetPciInfo(h).busId),
            "memory": f"{nv.nvmlDeviceGetMemoryInfo(h).total // 2**20} MiB",
            "driver": driver,
            "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}",
            "compute_capability": f"{major}.{minor}",
            "sm_clock_max_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
            "mem_clock_max_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM),
            "sm_clock_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
            "power_limit_w": nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000,
            "persistence_mode": bool(nv.nvmlDeviceGetPersistenceMode(h)),
            "l2_bytes": l2_bytes(i),
            "source": "nvml",
        })
    return out


def links() -> list[dict[str, Any]]:
    """How each pair of NVIDIA GPUs is connected, from NVML: `NVLink ×k` (k links between them)
    or the PCIe path (PCIE_LEVELS); [] with fewer than two GPUs or without NVML."""
    nv = _nvml()
    if nv is None:
        return []
    try:
        return _links_from_nvml(nv)
    except Exception:  # an NVML call this driver or GPU lacks: the link stays unknown
        return []


def _links_from_nvml(nv: Any) -> list[dict[str, Any]]:
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
    bus = [_text(nv.nvmlDeviceGetPciInfo(h).busId).lower() for h in handles]
    nvlinks: dict[tuple[int, int], int] = {}
    for i, h in enumerate(handles):
        for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", NVLINK_MAX_LINKS)):
            try:
                if not nv.nvmlDeviceGetNvLinkState(h, link):
                    continue
                remote = _text(nv.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId).lower()
            except Exception:  # NVMLError: no such link on this GPU (PCIe-only boards have none)
                continue
            if remote in bus and bus.index(remote) > i:
                pair = (i, bus.index(remote))
                nvlinks[pair] = nvlinks.get(pair, 0) + 1
    out = []
    for i in range(len(handles)):
        for j in range(i + 1, len(handles)):
            if (i, j) in nvlinks:
                out.append({"gpus": [i, j], "link": "NVLink", "nvlinks": nvlinks[(i, j)],
                            "text": f"NVLink ×{nvlinks[(i, j)]}"})
                continue
            level = int(nv.nvmlDeviceGetTopologyCommonAncestor(handles[i], handles[j]))
            out.append({"gpus": [i, j], "link": "PCIe", "nvlinks": 0,
                        "text": PCIE_LEVELS.get(level, f"PCIe (NVML topology level {level})")})
    return out


def _devices_from_smi() -> list[dict[str, Any]]:
    if shutil.which("nvidia-smi") is None:
        return []
    fields = "name,memory.total,driver_version,compute_cap,clocks.max.sm,clocks.max.mem,clocks.sm"
    try:
        text = subprocess.run(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    out = []
    for i, line in enumerate(text.strip().splitlines()):
        row = [c.strip() for c in line.split(",")]
        if len(row) != 7:
            continue
        out.append({
            "index": i, "name": row[0], "memory": f"{row[1]} MiB", "driver": row[2], "compute_capability": row[3],
            "sm_clock_max_mhz": _int(row[4]), "mem_clock_max_mhz": _int(row[5]), "sm_clock_mhz": _int(row[6]),
            "l2_bytes": l2_bytes(i), "source": "nvidia-smi",
        })
    return out


def _int(text: str) -> int | None:
    try:
        return int(float(text))
    except ValueError:
        return None


class ClockWatch:
    """Reads GPU `index`'s SM clock and slowdown reasons before and after a timed region."""

    def __init__(self, index: int = 0) -> None:
        self.nv = _nvml()
        self.handle = self.nv.nvmlDeviceGetHandleByIndex(index) if self.nv else None
        self.before: int | None = None

    def _sm(self) -> int | None:
        return self.nv.nvmlDeviceGetClockInfo(self.handle, self.nv.NVML_CLOCK_SM) if self.nv else None

    def start(self) -> None:
        self.before = self._sm()

    def stop(self) -> dict[str, Any] | None:
        """{sm_mhz_before, sm_mhz_after, reasons, throttled}, or None without NVML."""
        if self.nv is None:
            return None
        try:
            after = self._sm()
            mask = self.nv.nvmlDeviceGetCurrentClocksEventReasons(self.handle)
        except Exception:  # an NVML error must not cost the case its result
            return None
        reasons = [name for bit, name in SLOWDOWN_REASONS.items() if mask & bit]
        dropped = bool(self.before and after and after < (1 - CLOCK_DROP) * self.before)
        return {
            "sm_mhz_before": self.before,
            "sm_mhz_after": after,
            "reasons": reasons,
            "throttled": dropped or bool(reasons),
        }
