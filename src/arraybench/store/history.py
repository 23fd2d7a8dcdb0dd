"""A store's history: each machine's runs in time order, each case's time and memory, their lasting changes."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from arraybench.core.case import label
from arraybench.report.table import size_param, size_text
from arraybench.results.header import MachineEnvironment, model_names
from arraybench.results.record import CaseRecord
from arraybench.stats.changes import Series, Step, steps
from arraybench.store.database import Store
from arraybench.units import format_size

# What a Change is a change of: a case's time per call, or the memory of one call (docs/memory.md).
TIME, MEMORY = "time", "memory"


@dataclass(frozen=True)
class RunPoint:
    """One run of a machine, as the history places it: its id, start and framework versions."""

    id: str
    started: str
    versions: Mapping[str, str | None]


@dataclass
class SeriesHistory:
    """One case on one machine: its median seconds and 95 % interval in each of the machine's runs
    (None where the run did not measure it correctly), its memory of a call there (None where not
    measured), and its latest record's spec, for its name."""

    case_id: str
    spec: Mapping[str, Any]
    medians: list[float | None]
    lows: list[float | None]
    highs: list[float | None]
    memory: list[float | None] = field(default_factory=list)


@dataclass
class MachineHistory:
    """One machine's runs, oldest first, and every case measured there."""

    key: str  # host.fingerprint, as `history` and the site key machines
    name: str  # "H100", as the site names it
    runs: list[RunPoint]
    series: dict[str, SeriesHistory] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
    """A lasting step in one case's time (or memory: `kind`) on one machine, in words a person reads."""

    machine: MachineHistory
    series: SeriesHistory
    step: Step
    size: str  # the workload's size parameter, "n"
    kind: str = TIME

    @property
    def run(self) -> RunPoint:
        """The first run at the new level."""
        return self.machine.runs[self.step.at]

    @property
    def slower(self) -> bool:
        """A lasting slowdown: what `history --changes` exits 3 for (a memory change does not)."""
        return self.kind == TIME and self.step.slower

    @property
    def grew(self) -> bool:
        """A lasting growth of the memory a call needs."""
        return self.kind == MEMORY and self.step.slower

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
        """'12 % slower (95 %: 9–15 %)' or '15 % faster (…)': the time's change and its interval; of memory,
        '40 % more memory (95 %: 38–42 %; 48 MiB → 67 MiB)' or '… less memory …'."""
        s, memory = self.step, self.kind == MEMORY
        more, less = ("more memory", "less memory") if memory else ("slower", "faster")
        levels = f"; {format_size(round(s.before_s))} → {format_size(round(s.after_s))}" if memory else ""
        if s.slower:
            low, high = (s.low - 1) * 100, (s.high - 1) * 100
            return f"{(s.ratio - 1) * 100:.0f} % {more} (95 %: {low:.0f}–{high:.0f} %{levels})"
        low, high = (1 - s.high) * 100, (1 - s.low) * 100
        return f"{(1 - s.ratio) * 100:.0f} % {less} (95 %: {low:.0f}–{high:.0f} %{levels})"

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
        s, time = self.step, self.kind == TIME
        return {"machine": self.machine.key, "machine_name": self.machine.name, "case": self.series.case_id,
                "run": self.run.id, "started": self.run.started, "kind": self.kind, "slower": self.slower,
                "grew": self.grew, "ratio": s.ratio, "ratio_low": s.low, "ratio_high": s.high,
                "before_s": s.before_s if time else None, "after_s": s.after_s if time else None,
                "before_bytes": None if time else s.before_s, "after_bytes": None if time else s.after_s,
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
    envs: dict[str, MachineEnvironment] = {}
    runs_of: dict[str, list[RunPoint]] = defaultdict(list)
    machine_of: dict[str, str] = {}
    # Ordered here, not by SQL: PostgreSQL sorts text by the database's collation, SQLite by code point.
    for started, rid, machine, environment in sorted(rows):
        env = MachineEnvironment.from_json(json.loads(environment))
        envs.setdefault(machine, env)
        runs_of[machine].append(RunPoint(rid, started, dict(env.versions)))
        machine_of[rid] = machine
    names = model_names(envs)
    out = {key: MachineHistory(key, names[key], runs) for key, runs in runs_of.items()}
    where = {run.id: (out[m], i) for m, h in out.items() for i, run in enumerate(h.runs)}
    for rid, case_id, median, low, high, memory in store.db.execute(
            "SELECT run_id, case_id, median_s, ci_low_s, ci_high_s, memory_bytes FROM cases "
            "WHERE status = 'ok' AND median_s IS NOT NULL ORDER BY run_id, seq"):
        history, i = where[rid]
        series = history.series.get(case_id)
        if series is None:
            n = len(history.runs)
            series = history.series[case_id] = SeriesHistory(case_id, {}, [None] * n, [None] * n, [None] * n,
                                                              [None] * n)
        # A case a resumed run retried counts once, by its last record: the later seq overwrites.
        series.medians[i], series.lows[i], series.highs[i], series.memory[i] = median, low, high, memory
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


def memory_found(machines: list[MachineHistory]) -> list[Change]:
    """Every lasting change in the memory a call needs, by the same method as time's but with no host
    factor (a slow host does not move memory), newest first."""
    out = []
    for h in machines:
        sizes = size_params(h)
        measured = [Series(k, s.memory) for k, s in h.series.items() if any(m is not None for m in s.memory)]
        for step in steps(measured, len(h.runs), host=False):
            series = h.series[step.key]
            out.append(Change(h, series, step, sizes[str(series.spec.get("workload"))], MEMORY))
    return sorted(out, key=lambda c: (c.run.started, c.machine.name, c.what), reverse=True)


def changes(store: Store, since: str | None = None) -> list[Change]:
    """Every lasting change in the store's history, of time and of memory, newest first; with `since` (a
    run id, prefix or `latest`), only those from runs started no earlier than that run."""
    start = None
    if since is not None:
        rid = store.resolve(since)
        start = str(store.db.execute("SELECT started FROM runs WHERE id = ?", (rid,)).fetchone()[0])
    machines = read_history(store)
    every = sorted(found(machines) + memory_found(machines), key=lambda c: (c.run.started, c.machine.name, c.what),
                   reverse=True)
    return [c for c in every if start is None or c.run.started >= start]
