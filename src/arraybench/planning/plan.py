"""Plan: turns run settings (workloads, backends, modes, sizes, dtype, threads) into Cases."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from arraybench.backends import backend_class
from arraybench.backends.backend import Backend
from arraybench.core.case import Case
from arraybench.core.device_tokens import DeviceSpec, kind_of
from arraybench.errors import UsageError, unknown
from arraybench.planning import fit
from arraybench.planning.settings import RunSettings
from arraybench.planning.suites import suite_parts
from arraybench.workloads import WORKLOADS, resolve_workload
from arraybench.workloads.workload import Workload


def build_plan(s: RunSettings) -> list[Case]:
    """Every (workload, point, backend, mode, device) the settings ask for, in a stable order.

    Combinations a workload declares impossible (`Workload.cannot`) stay in the plan so the
    report says why; combinations with neither an implementation nor a reason are left out.
    """
    s.validate()
    if s.envs:  # the same plan in each environment, its cases told apart by `@NAME`
        one = build_plan(replace(s, envs=()))
        return [replace(c, env=spec.name) for c in one for spec in s.envs]
    if s.suite is not None:
        return suite_plan(s, s.suite)
    workloads = chosen_workloads(s)
    cases = [case for wl in workloads for params in points(wl, s) for case in cases_at(wl, params, s)]
    if not cases:
        if all(not DeviceSpec.parse(d).single for d in s.devices):
            spanning = sorted(name for name, wl in WORKLOADS.items() if wl.spread is not None)
            raise UsageError(f"nothing to run: {', '.join(s.devices)} spans several devices and only the "
                             f"multi-device workloads run there ({', '.join(spanning)}); add a one-device token "
                             "such as cpu for the others")
        raise UsageError("nothing to run: no workload has an implementation for these backends and modes")
    return cases


def points(wl: Workload, s: RunSettings) -> list[dict[str, Any]]:
    """The parameter points of `wl` that the settings plan: its sizes, or under `--sizes fit:BYTES` the
    smallest of its default ones, where the search for the largest that fits starts (fit.py)."""
    if fit.limit_of(s.sizes) is None:
        return wl.points(s.sizes, s.params)
    return [fit.start(wl, s.params)]


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
            for device in planned_devices(cls, s.devices, spans=wl.spread is not None):
                cases.append(Case(workload=wl.name, params=tuple(sorted(params.items())), backend=backend,
                                  mode=mode, dtype=s.dtype, threads=s.threads, device=device, source=wl.source))
    return cases


def planned_devices(cls: type[Backend], wanted: list[str], spans: bool = False) -> list[str]:
    """The device tokens asked for that `cls` runs on. A GPU-only framework asked for on the CPU (the
    default) is planned on its GPU, so the report says "no CUDA device" instead of silently leaving it
    out. Any other framework asked only for kinds it does not run on is planned on them, and recorded
    unavailable with why (`Backend.runs_on`), never measured on another kind in their place: NumPy
    asked for a GPU does not answer from the CPU.

    A token of several devices is planned only where the computation can span them (`spans`: a
    multi-device workload, devices.py) and the framework can spread it (`Backend.spans_devices`).
    Every other workload runs on one device, and planning it on `cpu:4` would only repeat "runs
    on one device" once per case in the report, so it is left out there.
    """
    supported = [d for d in wanted if kind_of(d) in cls.devices_supported] or wanted
    if all(kind_of(d) == "cpu" for d in supported) and "cpu" not in cls.devices_supported:
        return [cls.devices_supported[0]]
    return [d for d in supported if DeviceSpec.parse(d).single or (spans and cls.spans_devices)]
