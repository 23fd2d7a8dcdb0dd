"""Memory of a case's calls, inside a worker: the resident set on the CPU, the framework's counters on a device.

Two phases are bracketed (the Timer calls `start` and `stop` around them): the first call (tracing,
compilation and one run) and one steady call, the first after it, made with no earlier output alive.
Before each, the counter settles (returns what the allocator keeps unused, resets its peak) and reads
what is in use; after it, it reads the peak. A phase's figure is its peak above what was in use when it
began: the interpreter, the framework, the inputs, the reference and what compiling kept are in use
before the steady call and are not its figure. docs/memory.md says what each counter sees and does not.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Protocol

from arraybench.backends.backend import Backend
from arraybench.measure import allocator
from arraybench.measure.timing import CALL, FIRST_CALL

CLEAR_REFS = "/proc/self/clear_refs"
STATUS = "/proc/self/status"
# Writing this to clear_refs resets the process's peak resident set (VmHWM) to its resident set now
# (Linux ≥ 4.0, Documentation/admin-guide/mm/soft-dirty and proc.rst: "5" clears the peak RSS).
RESET_PEAK = "5"
RESIDENT_METHOD = ("the worker's resident set (Linux VmRSS, and VmHWM reset by writing 5 to /proc/self/clear_refs), "
                   "after glibc's malloc_trim returned the heap's free pages")


class Counter(Protocol):
    """What reads a device's memory around a phase of calls: `settle` before it (the bytes in use then,
    the peak reset), `peak` after it (the most in use at once since), `reserved` (a pool's size now);
    `open` before the first phase and `close` after the last (what the phases need of the allocator)."""

    @property
    def method(self) -> str: ...

    def open(self) -> None: ...

    def close(self) -> None: ...

    def settle(self) -> int | None: ...

    def peak(self) -> int | None: ...

    def reserved(self) -> int | None: ...


def status_kib(*keys: str) -> dict[str, int]:
    """Fields of /proc/self/status in bytes (the file says kB: KiB)."""
    out: dict[str, int] = {}
    with open(STATUS) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in keys:
                out[key] = int(value.split()[0]) * 1024
    return out


class ResidentSet:
    """The worker process's resident set: every page of it in memory, anonymous, file-backed and shared,
    every thread's; not a child process's (torch.compile's compile workers), nor what is swapped out.

    The kernel's high-water mark (VmHWM) is brought up to date wherever the resident set shrinks (an
    unmap, a madvise, reclaim), so it holds the peak between reads; writing 5 to clear_refs resets it
    to the resident set now. What glibc keeps of freed memory would be reused without raising the
    resident set: so for the phases the allocator is bare (allocator.BARE_*: a large block is a
    mapping of its own, a free at the top of a heap gives it back) and malloc_trim(0) returns every
    free page before each phase; the steady thresholds are back before the warm-up. The counters are
    per-CPU and read approximately: within 32 pages or more per CPU the worker ran on (docs/memory.md).
    """

    method = RESIDENT_METHOD

    def open(self) -> None:
        allocator.set_thresholds(allocator.BARE_MMAP_THRESHOLD, allocator.BARE_TRIM_THRESHOLD)

    def close(self) -> None:
        allocator.set_thresholds(allocator.STEADY_MMAP_THRESHOLD, allocator.STEADY_TRIM_THRESHOLD)

    def settle(self) -> int | None:
        allocator.trim()
        with open(CLEAR_REFS, "w") as f:
            f.write(RESET_PEAK)
        return status_kib("VmRSS")["VmRSS"]

    def peak(self) -> int | None:
        return status_kib("VmHWM")["VmHWM"]

    def reserved(self) -> int | None:
        return None


@dataclass(frozen=True)
class DeviceCounters:
    """A framework's own counters for its device (Backend.settle_memory, peak_memory, reserved_memory)."""

    backend: Backend

    @property
    def method(self) -> str:
        return self.backend.memory_method or self.backend.name

    def open(self) -> None:
        """The framework's counters need nothing of the allocator."""

    def close(self) -> None:
        """Nothing to give back."""

    def settle(self) -> int | None:
        return self.backend.settle_memory()

    def peak(self) -> int | None:
        return self.backend.peak_memory()

    def reserved(self) -> int | None:
        return self.backend.reserved_memory()


@dataclass(frozen=True)
class Larger:
    """Two counters that each see part of what a phase needs, read together: the resident set (`first`),
    which sees every page the process touches but not a framework's pool reusing its free blocks, and
    the framework's count of that pool (`second`: TensorFlow's oneDNN allocator on the CPU), which sees
    the reuse but not what is allocated outside it (compilation, the rest of the process). A phase needs
    at least the larger of the two; the absolute figures are the resident set's."""

    first: Counter
    second: Counter
    before: list[int | None]  # what each read as the phase began

    @property
    def method(self) -> str:
        return f"the larger of two readings: {self.first.method}; and {self.second.method}"

    def open(self) -> None:
        self.first.open()
        self.second.open()

    def close(self) -> None:
        self.first.close()
        self.second.close()

    def settle(self) -> int | None:
        self.before[:] = [self.first.settle(), self.second.settle()]
        return self.before[0]

    def peak(self) -> int | None:
        (b1, b2), p1, p2 = self.before, self.first.peak(), self.second.peak()
        if b1 is None or p1 is None:
            return None
        return b1 + max(p1 - b1, p2 - b2 if p2 is not None and b2 is not None else 0)

    def reserved(self) -> int | None:
        return self.second.reserved()


def resident_set_unreadable() -> str | None:
    """Why this process's resident set cannot be bracketed here; None where it can."""
    if not sys.platform.startswith("linux"):
        return f"{sys.platform} has no /proc/self/clear_refs"
    try:
        with open(CLEAR_REFS, "w") as f:
            f.write(RESET_PEAK)
        status_kib("VmHWM", "VmRSS")
    except OSError as e:
        return f"cannot reset the peak resident set ({e.strerror or e})"
    return None


def counter_for(backend: Backend) -> Counter | str:
    """How this worker reads the memory of `backend`'s cases, or why it cannot: on a device the framework's
    own counters; on the CPU the resident set, with the framework's count of its pool beside it where it
    keeps one (Larger)."""
    if backend.n_devices > 1:
        return f"not measured: the computation spans {backend.n_devices} devices"
    own = DeviceCounters(backend) if backend.settle_memory() is not None else None
    if backend.kind != "cpu":
        return own or f"not measured: {backend.name} keeps no memory counter on {backend.kind}"
    why = resident_set_unreadable()
    if why is not None:
        return own or f"not measured: {why}"
    return ResidentSet() if own is None else Larger(ResidentSet(), own, [None, None])


@dataclass(frozen=True)
class Phase:
    """One phase as its counter read it: in use when it began, and the most in use at once during it."""

    before: int | None
    peak: int | None

    @property
    def above(self) -> int | None:
        """The peak above what was in use before: what the phase's calls needed."""
        if self.before is None or self.peak is None:
            return None
        return max(0, self.peak - self.before)


class Phases:
    """The Timer's memory watch (timing.MemoryWatch): each phase's reading, by name. The counter is open
    from the first phase's start to the steady call's end (`close` again after a failure: idempotent)."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter
        self.seen: dict[str, Phase] = {}
        self._before: int | None = None
        self._open = False

    def start(self) -> None:
        if not self._open:
            self.counter.open()
            self._open = True
        self._before = self.counter.settle()

    def stop(self, phase: str) -> None:
        self.seen[phase] = Phase(self._before, self.counter.peak())
        if phase == CALL:
            self.close()

    def close(self) -> None:
        if self._open:
            self.counter.close()
            self._open = False


def _plus(inputs: int, above: int | None) -> int | None:
    return None if above is None else inputs + above


def figures(watch: Phases | str, inputs: int) -> dict[str, Any]:
    """The record's memory fields from a case's phases (or the reason it has none): `inputs`, the bytes
    of the inputs its calls read where they live (on its device), are added to each call's own need."""
    if isinstance(watch, str):
        return {"memory_method": watch}
    first, call = watch.seen.get(FIRST_CALL), watch.seen.get(CALL)
    peaks = [p.peak for p in (first, call) if p is not None and p.peak is not None]
    return {
        "memory_bytes": _plus(inputs, call.above) if call else None,
        "first_call_memory_bytes": _plus(inputs, first.above) if first else None,
        "memory_before_bytes": first.before if first else None,
        "peak_memory_bytes": max(peaks) if peaks else None,
        "reserved_memory_bytes": watch.counter.reserved(),
        "memory_method": watch.counter.method,
    }
