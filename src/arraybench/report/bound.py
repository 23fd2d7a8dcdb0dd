"""Why a case is as fast as it is: one word per case (dispatch, memory, compute, page-faults, transfer)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from arraybench.core.device_tokens import kind_of
from arraybench.results.header import Peaks
from arraybench.results.record import CaseRecord
from arraybench.stats import bracket
from arraybench.stats.measurement import fault_dominated

DISPATCH, MEMORY, COMPUTE, PAGE_FAULTS, TRANSFER = "dispatch", "memory", "compute", "page-faults", "transfer"

# Within this factor of the backend·mode's empty call, the call costs more than the work.
DISPATCH_FACTOR = 2.0
# Along a sweep, t = c + k·w (a fixed cost c per call, k per unit of work w). If a call with at
# least 4× the work takes at most 2.5× as long, (c + 4kw) ≤ 2.5 (c + kw) gives c ≥ kw: the fixed
# cost is at least half of this call's time.
MORE_WORK, AT_MOST_SLOWER = 4.0, 2.5
# Without a measured empty call, the cheapest call in the run stands in for it, unless it is
# slower than this (then it was no near-empty call): that backend·mode gets no dispatch floor.
DISPATCH_FLOOR_MAX_S = 1e-4
# A case with no FLOP count that streams at least this share of the memory roof is memory-bound.
STREAMING_SHARE = 0.5
# On a CPU a framework's "device" is host memory: it may copy or hand back a view.
TRANSFER_WORKLOADS = frozenset({"transfer_to_device", "transfer_to_host", "transfer_to_device_pinned",
                                "transfer_to_host_pinned"})

MEANING = {
    DISPATCH: "per-call overhead (Python, framework dispatch, kernel launch) outweighs the work: measured as a "
              "time within 2× of the backend·mode's empty call (x + x on one element, measured by its "
              "worker), or one that hardly grows with 4× the work",
    MEMORY: "moving bytes limits it: its arithmetic intensity (FLOPs per byte) is left of the roofline's ridge",
    COMPUTE: "arithmetic limits it: right of the ridge, under the compute roof (or, without FLOPs, it streams "
             "under half the memory roof)",
    PAGE_FAULTS: "the kernel mapping fresh pages takes most of the time (minor page faults per call, "
                 "at measurement.FAULT_COST_S each)",
    TRANSFER: "the copy between host and device is the time",
}


def roofs(peaks: Peaks, device: str, dtype: str) -> tuple[float | None, float | None]:
    """(peak GFLOP/s, peak GB/s) of the machine the case ran on: the GPU's where it ran on one."""
    here = (peaks.gpu or Peaks()) if kind_of(device) == "gpu" else peaks
    return here.matmul_gflops.get(dtype), here.bandwidth_gbs


def cache_roof(peaks: Peaks, device: str) -> tuple[float | None, int | None]:
    """(GB/s, bytes) of the CPU's cache roof: a copy whose data stay in one core's cache (peaks.py);
    None on a GPU, or where the peaks did not measure it."""
    if kind_of(device) != "cpu":
        return None, None
    return peaks.cache_bandwidth_gbs, peaks.cache_bytes


def moved_bytes(r: CaseRecord, peaks: Peaks) -> float | None:
    """The bytes one call moves, or None where they are not known to move: a transfer on the CPU,
    or a GPU transfer faster than the GPU's own memory, which no copy over a bus can be (it handed
    back a copy it had). The host's copy loop is no such bound: a DMA from pinned memory outruns it."""
    if r.workload not in TRANSFER_WORKLOADS:
        return r.bytes
    if kind_of(r.device) == "cpu":
        return None
    device_bw = peaks.gpu.bandwidth_gbs if peaks.gpu is not None else None
    if r.median_s and device_bw and r.bytes and r.bytes / r.median_s / 1e9 > device_bw:
        return None
    return r.bytes


def no_rate_reason(r: CaseRecord, peaks: Peaks) -> str:
    """Why a case's GFLOP/s or GB/s is left empty ('' when both are real); the words before the colon
    are its short form."""
    if r.bytes and moved_bytes(r, peaks) is None:
        if kind_of(r.device) != "cpu":
            return ("no bytes moved: faster than the GPU's own memory, so the framework returned a copy it "
                    "already had; no GB/s is claimed")
        return ("no bytes moved: on the CPU a transfer stays in host memory (a framework may copy or "
                "return a view), so no GB/s is claimed")
    if r.flops is None and r.bytes:
        return "no FLOPs: its work is not floating-point arithmetic, so no GFLOP/s is claimed"
    return ""


def dispatch_floors(records: Iterable[CaseRecord], label: Any) -> dict[tuple, float]:
    """Per (machine, label): the backend·mode's empty call, as its worker measured it (floors.py,
    `backend_info.empty_call_s`). Results without that measurement fall back on the cheapest
    correct call in the run, the closest thing to an empty call they hold."""
    measured: dict[tuple, float] = {}
    cheapest: dict[tuple, float] = {}
    for r in records:
        key = (r.machine, label(r))
        empty = ((r.backend_info or {}).get("empty_call_s") or {}).get(r.mode)
        if empty:
            measured[key] = min(measured.get(key, empty), empty)
        if r.status == "ok" and r.median_s:
            cheapest[key] = min(cheapest.get(key, r.median_s), r.median_s)
    proxies = {k: v for k, v in cheapest.items() if v <= DISPATCH_FLOOR_MAX_S and k not in measured}
    return {**proxies, **measured}


def work(r: CaseRecord) -> float | None:
    """What grows with the size: FLOPs, else bytes, else the size itself."""
    size = r.size
    return r.flops or r.bytes or (float(size) if isinstance(size, int | float) else None)


def fixed_cost_dominates(series: Sequence[CaseRecord]) -> set[str]:
    """Ids of the cases of one backend·mode's sweep whose time hardly grows with their work: a call
    with MORE_WORK times the work is under AT_MOST_SLOWER times as slow beyond noise."""
    pts = [(w, r) for r in series if r.status == "ok" and r.median_s and (w := work(r))]
    return {r.id for w, r in pts
            if any(w2 >= MORE_WORK * w and bracket.order(r2, r, 1 / AT_MOST_SLOWER) == -1 for w2, r2 in pts)}


def classify(r: CaseRecord, floor_s: float | None, peaks: Peaks, flat: bool = False) -> str | None:
    """The bound of one correct case, or None when nothing measured says which.

    `floor_s` is the backend·mode's cheapest call in the run; `flat` says its time hardly grows
    along its sweep (`fixed_cost_dominates`)."""
    if r.status != "ok" or not r.median_s:
        return None
    median, device = r.median_s, kind_of(r.device)
    if fault_dominated(r.minor_faults_per_call, median):
        return PAGE_FAULTS
    if r.workload in TRANSFER_WORKLOADS and device != "cpu":
        return TRANSFER if moved_bytes(r, peaks) else DISPATCH  # a call that moved nothing
    latency = r.latency_s
    if device == "gpu" and latency and latency >= DISPATCH_FACTOR * median:
        return DISPATCH  # a synced call costs far more than the device's work in it
    if flat or (floor_s is not None and median <= DISPATCH_FACTOR * floor_s):
        return DISPATCH
    if r.workload in TRANSFER_WORKLOADS:
        return MEMORY  # a copy within host memory, slower than an empty call
    flop_roof, bw_roof = roofs(peaks, device, r.dtype)
    if r.flops and r.bytes and flop_roof and bw_roof:
        return COMPUTE if r.flops / r.bytes >= flop_roof / bw_roof else MEMORY
    if r.flops is None and r.bytes and bw_roof:
        streamed = r.bytes / median / 1e9
        return MEMORY if streamed >= STREAMING_SHARE * bw_roof else COMPUTE
    return None
