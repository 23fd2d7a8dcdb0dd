"""What pairs two runs: which cases are the same (match_key), which earlier runs count as their
history, one environment of a run as a run of its own, and every setting and fact of the machine
in which the two differ."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from arraybench.core.case import label
from arraybench.errors import UsageError
from arraybench.machine import host, packages
from arraybench.results import Results
from arraybench.results.record import CaseRecord
from arraybench.results.run_ids import run_id
from arraybench.stats.measurement import Replicated

# Settings that change what a case's time means. The rest (workloads, backends, sizes...) only
# choose which cases exist, and the one-side-only lists already show that.
COMPARABLE_SETTINGS = ("dtype", "threads", "devices", "seed", "timer")

# The latest this many earlier runs that count are read, no more: τ² is pooled over the cases, so
# 30 runs already give it hundreds of degrees of freedom, while a year of nightly runs of one
# machine (333, 100 000 records) took compare 17 s to read; and the oldest say least of the host now.
MAX_EARLIER_RUNS = 30


def different_settings(a: Results, b: Results) -> list[str]:
    """The COMPARABLE_SETTINGS in which two runs differ (a list's order is no difference)."""
    return [k for k in COMPARABLE_SETTINGS if unordered(getattr(a.settings, k)) != unordered(getattr(b.settings, k))]


def like_for_like(a: Results, b: Results) -> bool:
    """Same machine and the same COMPARABLE_SETTINGS: runs whose spread is one machine's."""
    return a.environment.fingerprint == b.environment.fingerprint and not different_settings(a, b)


def counts_as_history(base: Results, new: Results) -> Callable[[Results], bool]:
    """Whether an earlier run counts in the spread between runs of `base` and `new`, from its header alone.

    A run counts when it is neither of the two, ran on their machine with their settings and
    with the framework versions of one of them: runs between which a framework changed would
    count a real change as spread. None counts when base and new are not like for like.
    """
    versions = (base.environment.versions, new.environment.versions)
    compared = {run_id(base.header), run_id(new.header)}
    alike = like_for_like(base, new)
    return lambda res: (alike and run_id(res.header) not in compared and like_for_like(res, base)
                        and res.environment.versions in versions)


def earlier_measurements(base: Results, new: Results, history: Sequence[Results]) -> dict[str, dict[str, Replicated]]:
    """Per case id, its measurement in each run of `history` that counts (counts_as_history)."""
    counts = counts_as_history(base, new)
    out: dict[str, dict[str, Replicated]] = defaultdict(dict)
    for res in history:
        if not counts(res):
            continue
        rid = run_id(res.header)
        for rec in res.latest().values():
            m = res.reading.measured(rec) if rec.status == "ok" else None
            if m is not None and m.processes > 1:
                out[rec.id][rid] = m
    return dict(out)


def environment_side(res: Results, env: str) -> Results:
    """The records of one environment (`--env NAME`) of a run, as a run of their own: its header's
    framework versions and `packages` are that environment's, so compare names what differs between two."""
    envs = res.header.environments
    if env not in envs:
        have = ", ".join(sorted(envs)) or "none: it was measured in one environment"
        raise UsageError(f"run {run_id(res.header)} has no environment {env!r} (its environments: {have})")
    plan_size = res.header.plan_size  # the plan, measured once in each environment
    header = dataclasses.replace(
        res.header, environment=dataclasses.replace(res.environment, versions=dict(envs[env].versions)),
        environments={env: envs[env]}, plan_size=plan_size // len(envs) if plan_size is not None else None)
    # Named by the side, not in every row: the records drop their environment's name.
    return dataclasses.replace(res, header=header, records=[dataclasses.replace(r, env=None)
                                                            for r in res.records if r.env == env])


def match_key(r: CaseRecord) -> tuple:
    """What makes two records the same case. Threads are left out so that runs on machines with
    different core counts still pair up; a thread difference is listed with the other settings."""
    params = tuple(sorted((k, json.dumps(v)) for k, v in r.params.items()))
    return (r.workload, params, r.backend, r.mode, r.dtype, r.device)


def case_label(r: CaseRecord) -> str:
    params = ",".join(f"{k}={v}" for k, v in sorted(r.params.items()))
    return f"{r.workload}[{params}]"


def row_label(r: CaseRecord) -> str:
    return label(r, device=r.device != "cpu")


def flatten(obj: Any, prefix: str = "") -> dict[str, str]:
    """Nested dicts and lists as dotted keys with string values, for a key-by-key diff."""
    if isinstance(obj, dict):
        out: dict[str, str] = {}
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(obj, list) and any(isinstance(v, dict | list) for v in obj):
        out = {}
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}.{i}"))
        return out
    return {prefix: json.dumps(obj) if isinstance(obj, list) else str(obj)}


def unordered(obj: Any) -> Any:
    """`obj` with every list in one canonical order: two runs that list the same BLAS libraries
    (threadpoolctl lists them in the order they were loaded) or devices in another order have
    the same setup, so a list is compared as the multiset it is."""
    if isinstance(obj, dict):
        return {k: unordered(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return sorted((unordered(v) for v in obj), key=lambda v: json.dumps(v, sort_keys=True, default=str))
    return obj


# What a worker measured about itself rather than how it was set up: these differ between any
# two runs (its start-up phases, its empty call, its layout pads) and are no setting.
MEASURED_INFO = ("version", "devices", "startup", "empty_call_s")


def backend_infos(res: Results) -> dict[str, Any]:
    """Each backend's info as its worker reported it: threads, BLAS, precision flags.

    Versions are left out (the environment lists them once), and so are device lists and what
    the worker measured of itself (MEASURED_INFO).
    """
    out: dict[str, Any] = {}
    for r in res.records:
        if r.backend_info and r.backend not in out:
            out[r.backend] = {k: v for k, v in r.backend_info.items() if k not in MEASURED_INFO}
    return out


def environment_differences(base: Results, new: Results) -> list[str]:
    """Every recorded fact about machine, software and settings that differs, as `key: base → new`.

    Facts, not measurements: what the environment and the workers measured (environment.MEASURED,
    MEASURED_INFO) differs between any two runs; a list differs only in its elements, not their
    order; an environment variable counts only where it changes results (host.settings_env,
    which also drops the others that files written before it recorded)."""

    infos = backend_infos(base), backend_infos(new)
    ran_in_both = infos[0].keys() & infos[1].keys()

    def facts(res: Results, info: dict[str, Any]) -> dict[str, str]:
        env = host.setup(res.environment.to_json())
        if "env" in env:
            env["env"] = host.settings_env(env["env"])
        settings = res.settings.to_json()  # those the file holds
        return {
            "arraybench": str(res.header.arraybench_version),
            **flatten(unordered(env)),
            **flatten(unordered({k: settings[k] for k in COMPARABLE_SETTINGS if k in settings}), "settings"),
            **flatten(unordered({b: info[b] for b in ran_in_both}), "backend_info"),
        }

    a, b = facts(base, infos[0]), facts(new, infos[1])
    missing = "—"
    differ = [k for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
    installed = package_sides(base, new)
    if installed is None:
        return [f"{k}: {a.get(k, missing)} → {b.get(k, missing)}" for k in differ]
    # Where both sides record their packages, those say what the framework versions say, and where from.
    return packages.changes(*installed) + [f"{k}: {a.get(k, missing)} → {b.get(k, missing)}"
                                           for k in differ if not k.startswith("versions.")]


def package_sides(base: Results, new: Results) -> tuple[dict[str, packages.Package], ...] | None:
    """The packages of two environments' sides (environment_side: each side's header holds its one
    environment), by name; None unless both are such sides and record them."""
    sides = [list(res.header.environments.values()) for res in (base, new)]
    if any(len(side) != 1 for side in sides):
        return None
    old, now = (packages.of_environment(side[0]) for side in sides)
    return None if old is None or now is None else (old, now)
