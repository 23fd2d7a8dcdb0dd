"""A store's history: each machine's runs in time order, each case's time over them, and its lasting changes."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from arraybench.planning.case import label
from arraybench.report.table import size_param, size_text
from arraybench.results.record import CaseRecord
from arraybench.site.model import machine_names
from arraybench.stats.changes import Series, Step, steps
from arraybench.store import Store


@dataclass(frozen=True)
class RunPoint:
    """One run of a machine, as the history places it: its id, start and framework versions."""

    id: str
    started: str
    versions: Mapping[str, str | None]


@dataclass
class SeriesHistory:
    """One case on one machine: its median seconds and 95 % interval in each of the machine's runs
    (None where the run did not measure it correctly), and its latest record's spec, for its name."""

    case_id: str
    spec: Mapping[str, Any]
    medians: list[float | None]
    lows: list[float | None]
    highs: list[float | None]


@dataclass
class MachineHistory:
    """One machine's runs, oldest first, and every case measured there."""

    key: str  # environment.fingerprint, as `history` and the site key machines
    name: str  # "H100", as the site names it
    runs: list[RunPoint]
    series: dict[str, SeriesHistory] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
    """A lasting step in one case's time on one machine, in words a person reads."""

    machine: MachineHistory
    series: SeriesHistory
    step: Step
    size: str  # the workload's size parameter, "n"

    @property
    def run(self) -> RunPoint:
        """The first run at the new level."""
        return self.machine.runs[self.step.at]

    @property
    def slower(self) -> bool:
        return self.step.slower

    @property
    def versions(self) -> tuple[str, str] | None:
        """The case's framework version in the run before the step and in its first run, where they differ."""
        backend = str(self.series.spec.get("backend"))
        before = self.machine.runs[self.step.at - 1].versions.get(backend)
        after = self.run.versions.get(backend)
        return (str(before), str(after)) if before != after and before and after else None

    @property
    def what(self) -> str:
        """'torch·eager sort (float32) at n=10⁶ on the H100'."""
        return f"{series_name(self.series.spec, self.size)} on the {self.machine.name}"

    @property
    def change(self) -> str:
        """'12 % slower (95 %: 9–15 %)' or '15 % faster (…)': the time's change and its interval."""
        s = self.step
        if s.slower:
            return f"{(s.ratio - 1) * 100:.0f} % slower (95 %: {(s.low - 1) * 100:.0f}–{(s.high - 1) * 100:.0f} %)"
        return f"{(1 - s.ratio) * 100:.0f} % faster (95 %: {(1 - s.high) * 100:.0f}–{(1 - s.low) * 100:.0f} %)"

    @property
    def why(self) -> str:
        """'torch 2.12 → 2.13', or '' where the framework's version did not change there."""
        v = self.versions
        return f"{self.series.spec.get('backend')} {v[0]} → {v[1]}" if v else ""

    def text(self) -> str:
        """'torch·eager sort (float32) at n=10⁶ on the H100: 12 % slower (95 %: 9–15 %) from run X (torch 2.12 →
        2.13)'."""
        return f"{self.what}: {self.change} from run {self.run.id}" + (f" ({self.why})" if self.why else "")

    def to_json(self) -> dict[str, Any]:
        s = self.step
        return {"machine": self.machine.key, "machine_name": self.machine.name, "case": self.series.case_id,
                "run": self.run.id, "started": self.run.started, "slower": s.slower, "ratio": s.ratio,
                "ratio_low": s.low, "ratio_high": s.high, "before_s": s.before_s, "after_s": s.after_s,
                "versions": list(self.versions) if self.versions else None, "text": self.text()}


def series_name(spec: Mapping[str, Any], size: str) -> str:
    """'torch·eager sort (float32) at n=10⁶': a case by its backend·mode (and device, off the CPU),
    workload, dtype and other parameters, and its size parameter `size`'s value."""
    value = spec.get("size")
    shown = size_text(value) if isinstance(value, int | float) else str(value)
    others = ", ".join(f"{k}={v}" for k, v in sorted((spec.get("params") or {}).items()) if k != size)
    apart = f"{spec.get('dtype')}; {others}" if others else str(spec.get("dtype"))
    device = spec.get("device") not in (None, "cpu")
    return f"{label(spec, device=device)} {spec.get('workload')} ({apart}) at {size}={shown}"


def size_params(machine: MachineHistory) -> dict[str, str]:
    """Each workload's size parameter, from its cases on `machine`."""
    by_workload: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for s in machine.series.values():
        by_workload[str(s.spec.get("workload"))].append(s.spec)
    return {w: size_param([CaseRecord.from_json(s) for s in specs]) for w, specs in by_workload.items()}


def read_history(store: Store) -> list[MachineHistory]:
    """Every machine's runs and series in a few queries whatever the store's size: the runs, the
    times of every correct record (from the index of migration 6, never the records' JSON), and the
    latest record of each case (one query per run that holds one), for its name."""
    rows = store.db.execute("SELECT started, id, machine, environment FROM runs").fetchall()
    envs: dict[str, Mapping[str, Any]] = {}
    runs_of: dict[str, list[RunPoint]] = defaultdict(list)
    machine_of: dict[str, str] = {}
    # Ordered here, not by SQL: PostgreSQL sorts text by the database's collation, SQLite by code point.
    for started, rid, machine, environment in sorted(rows):
        env = json.loads(environment)
        envs.setdefault(machine, env)
        runs_of[machine].append(RunPoint(rid, started, dict(env.get("versions") or {})))
        machine_of[rid] = machine
    names = machine_names(envs)
    out = {key: MachineHistory(key, names[key], runs) for key, runs in runs_of.items()}
    where = {run.id: (out[m], i) for m, h in out.items() for i, run in enumerate(h.runs)}
    for rid, case_id, median, low, high in store.db.execute(
            "SELECT run_id, case_id, median_s, ci_low_s, ci_high_s FROM cases "
            "WHERE status = 'ok' AND median_s IS NOT NULL ORDER BY run_id, seq"):
        history, i = where[rid]
        series = history.series.get(case_id)
        if series is None:
            n = len(history.runs)
            series = history.series[case_id] = SeriesHistory(case_id, {}, [None] * n, [None] * n, [None] * n)
        # A case a resumed run retried counts once, by its last record: the later seq overwrites.
        series.medians[i], series.lows[i], series.highs[i] = median, low, high
    _fill_specs(store, out.values())
    return sorted(out.values(), key=lambda h: h.name)


def _fill_specs(store: Store, machines: Collection[MachineHistory]) -> None:
    """Each series' spec from its case's latest correct record on any machine: one query per run that holds one."""
    latest: dict[str, tuple[str, str]] = {}  # case id -> the (started, id) of the latest run that measured it
    for h in machines:
        for case_id, s in h.series.items():
            last = max(i for i, m in enumerate(s.medians) if m is not None)
            latest[case_id] = max(latest.get(case_id, ("", "")), (h.runs[last].started, h.runs[last].id))
    by_run: dict[str, set[str]] = defaultdict(set)
    for case_id, (_, rid) in latest.items():
        by_run[rid].add(case_id)
    specs: dict[str, Mapping[str, Any]] = {}
    for rid, wanted in by_run.items():
        for case_id, record in store.db.execute(
                "SELECT case_id, record FROM cases WHERE run_id = ? AND status = 'ok' ORDER BY seq", (rid,)):
            if case_id in wanted:
                specs[case_id] = json.loads(record)
    for h in machines:
        for case_id, s in h.series.items():
            s.spec = specs[case_id]


def found(machines: list[MachineHistory]) -> list[Change]:
    """Every lasting change in every machine's series (stats.changes), newest first."""
    out = []
    for h in machines:
        sizes = size_params(h)
        for step in steps([Series(k, s.medians) for k, s in h.series.items()], len(h.runs)):
            series = h.series[step.key]
            out.append(Change(h, series, step, sizes[str(series.spec.get("workload"))]))
    return sorted(out, key=lambda c: (c.run.started, c.machine.name, c.what), reverse=True)


def changes(store: Store, since: str | None = None) -> list[Change]:
    """Every lasting change in the store's history, newest first; with `since` (a run id, prefix or
    `latest`), only those from runs started no earlier than that run."""
    start = None
    if since is not None:
        rid = store.resolve(since)
        start = str(store.db.execute("SELECT started FROM runs WHERE id = ?", (rid,)).fetchone()[0])
    return [c for c in found(read_history(store)) if start is None or c.run.started >= start]
