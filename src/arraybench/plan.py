"""Plan: turns run settings (workloads, backends, modes, sizes, dtype, threads) into Cases."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from arraybench.backends import backend_class
from arraybench.backends.base import Backend
from arraybench.case import Case
from arraybench.errors import UsageError, unknown
from arraybench.settings import RunSettings
from arraybench.suites import suite_parts
from arraybench.workloads import resolve_workload
from arraybench.workloads.base import Workload


def build_plan(s: RunSettings) -> list[Case]:
    """Every (workload, point, backend, mode, device) the settings ask for, in a stable order.

    Combinations a workload declares impossible (`Workload.cannot`) stay in the plan so the
    report says why; combinations with neither an implementation nor a reason are left out.
    """
    s.validate()
    if s.suite is not None:
        return suite_plan(s, s.suite)
    cases = [case for wl in chosen_workloads(s) for params in wl.points(s.sizes, s.params)
             for case in cases_at(wl, params, s)]
    if not cases:
        raise UsageError("nothing to run: no workload has an implementation for these backends and modes")
    return cases


def suite_plan(s: RunSettings, suite: str) -> list[Case]:
    """A suite's parts, each planned like a plain run with the part's workloads, sizes and dtype;
    a case two parts share is planned once."""
    cases: list[Case] = []
    for part in suite_parts(suite, s.dtype):
        sub = replace(s, suite=None, workloads=list(part.workloads), sizes=list(part.sizes),
                      dtype=part.dtype, params={**dict(part.params), **s.params})
        cases += [c for c in build_plan(sub) if c not in cases]
    return cases


def chosen_workloads(s: RunSettings) -> list[Workload]:
    """The workloads the settings name; an unknown name, or a parameter none of them has, is refused."""
    workloads = [resolve_workload(name, s.workload_file) for name in s.workloads]
    known = {p for wl in workloads for p in wl.defaults}
    for name in sorted(set(s.params) - known):
        raise unknown("parameter", name, known)
    return workloads


def cases_at(wl: Workload, params: dict[str, Any], s: RunSettings) -> list[Case]:
    """The cases of one parameter point: every backend, mode and device that `wl` runs or explains."""
    cases = []
    for backend in s.backends:
        cls = backend_class(backend)
        for mode in s.modes:
            if (backend, mode) not in wl.impls and (backend, mode) not in wl.unsupported:
                continue
            for device in planned_devices(cls, s.devices):
                cases.append(Case(workload=wl.name, params=tuple(sorted(params.items())), backend=backend,
                                  mode=mode, dtype=s.dtype, threads=s.threads, device=device, source=wl.source))
    return cases


def planned_devices(cls: type[Backend], wanted: list[str]) -> list[str]:
    """The devices asked for that `cls` runs on. A GPU-only framework asked for on the CPU is planned
    on its GPU, so the report says "no CUDA device" instead of silently leaving it out."""
    return [d for d in wanted if d in cls.devices_supported] or [cls.devices_supported[0]]
