"""Plan: turns the user's choices (workloads, backends, modes, sizes, dtype, threads) into Cases."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from arraybench.backends import BACKENDS, backend_class
from arraybench.case import DTYPES, MODES, Case
from arraybench.errors import UsageError, unknown
from arraybench.timing import TimerConfig
from arraybench.workloads import WORKLOADS, resolve_workload

# The default suite: every built-in workload at its default presets (small and large).
DEFAULT_WORKLOADS = tuple(WORKLOADS)


def default_threads() -> int:
    return len(os.sched_getaffinity(0))


def parse_params(text: str | None) -> dict[str, Any]:
    """`n=1000,lr=0.01` -> {"n": 1000, "lr": 0.01}: numbers where they parse, else strings."""
    out: dict[str, Any] = {}
    for item in parse_list(text) or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise UsageError(f"bad --params item {item!r}: expected NAME=VALUE")
        value: Any = raw
        for conv in (int, float):
            try:
                value = conv(raw)
                break
            except ValueError:
                continue
        if isinstance(value, int | float) and value <= 0:
            raise UsageError(f"bad --params item {item!r}: values must be positive")
        out[key.strip()] = value
    return out


def parse_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    return items or None


@dataclass
class RunSettings:
    """Everything that decides what a run measures; stored in the results header for --resume."""

    workloads: list[str] = field(default_factory=lambda: list(DEFAULT_WORKLOADS))
    backends: list[str] = field(default_factory=lambda: list(BACKENDS))
    modes: list[str] = field(default_factory=lambda: list(MODES))
    sizes: list[str] | None = None
    dtype: str = "float32"
    threads: int = field(default_factory=default_threads)
    devices: list[str] = field(default_factory=lambda: ["cpu"])
    seed: int = 0
    timeout: float = 600.0
    timer: TimerConfig = field(default_factory=TimerConfig)
    workload_file: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    memory_limit: int | None = None  # bytes of writable memory per worker (limits.apply_memory_limit)
    suite: str | None = None  # a named suite (arraybench.suites) chooses workloads, sizes, dtypes

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSettings:
        d = dict(d)
        d["timer"] = TimerConfig(**d.get("timer", {}))
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})

    def validate(self) -> None:
        for b in self.backends:
            backend_class(b)
        for m in self.modes:
            if m not in MODES:
                raise unknown("mode", m, MODES)
        if self.dtype not in DTYPES:
            raise unknown("dtype", self.dtype, DTYPES)
        if self.threads < 1:
            raise UsageError(f"--threads must be at least 1, not {self.threads}")
        for d in self.devices:
            if d not in ("cpu", "gpu"):
                raise unknown("device", d, ("cpu", "gpu"))
        if self.timeout <= 0:
            raise UsageError(f"--timeout must be positive, not {self.timeout}")


def build_plan(s: RunSettings) -> list[Case]:
    """Every (workload, point, backend, mode, device) the settings ask for, in a stable order.

    Combinations a workload declares impossible (`Workload.cannot`) stay in the plan so the
    report says why; combinations with neither an implementation nor a reason are left out.
    """
    s.validate()
    if s.suite is not None:
        from arraybench.suites import suite_parts

        cases: list[Case] = []
        for part in suite_parts(s.suite, s.dtype):
            sub = replace(s, suite=None, workloads=list(part.workloads), sizes=list(part.sizes),
                          dtype=part.dtype, params={**dict(part.params), **s.params})
            cases += [c for c in build_plan(sub) if c not in cases]
        return cases
    workloads = [resolve_workload(name, s.workload_file) for name in s.workloads]
    known = {p for wl in workloads for p in wl.defaults}
    for name in sorted(set(s.params) - known):
        raise unknown("parameter", name, known)
    cases: list[Case] = []
    for wl in workloads:
        for params in wl.points(s.sizes, s.params):
            for backend in s.backends:
                cls = backend_class(backend)
                for mode in s.modes:
                    key = (backend, mode)
                    if key not in wl.impls and key not in wl.unsupported:
                        continue
                    # A GPU-only framework asked for on the CPU is planned on its GPU, so the
                    # report says "no CUDA device" instead of silently leaving it out.
                    devices = [d for d in s.devices if d in cls.devices_supported]
                    for device in devices or [cls.devices_supported[0]]:
                        cases.append(
                            Case(
                                workload=wl.name,
                                params=tuple(sorted(params.items())),
                                backend=backend,
                                mode=mode,
                                dtype=s.dtype,
                                threads=s.threads,
                                device=device,
                                source=wl.source,
                            )
                        )
    if not cases:
        raise UsageError("nothing to run: no workload has an implementation for these backends and modes")
    return cases

