"""What the published site is drawn from: every stored run, and each machine's latest cases per framework version."""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from arraybench.comparison import compare, environment_side
from arraybench.errors import UsageError
from arraybench.report.answer import Answer, answers
from arraybench.report.crossovers import crossovers
from arraybench.report.data import CaseView, ReportData
from arraybench.report.environments import sentence
from arraybench.report.exports import benchmark_name
from arraybench.report.table import Points, points_by_workload
from arraybench.results import Results
from arraybench.results.header import MachineEnvironment, RunHeader, model_names
from arraybench.results.record import FAILED
from arraybench.results.run_ids import run_id
from arraybench.store import Store


@dataclass(frozen=True)
class Machine:
    """One machine as the site names it: its fingerprint (host · CPU · GPUs) and a short name."""

    key: str  # host.fingerprint: what `history` shows and tells runs' machines apart by
    name: str  # "H100", "2-core EPYC": the answer says "on the H100"
    environment: MachineEnvironment


@dataclass(frozen=True)
class Run:
    """One stored run as the site lists it, read from the store's index of records: none of them loaded."""

    id: str
    started: str
    machine: Machine
    cases: int  # its cases, one a resumed run retried counted once
    failed: int  # of those, failed or wrong
    records: int  # every attempt stored: a run only ever gains records, so a changed run has more
    backends: tuple[str, ...]  # those with a case that was available to run
    environments: tuple[str, ...]  # the Python environments measured side by side in it (--env); () for one


@dataclass(frozen=True)
class Problem:
    """One workload, dtype and problem (its parameters besides the size) across machines: a series
    over the size on each, never two problems strung into one (workloads/sizes.fixed_params)."""

    workload: str
    dtype: str
    fixed: tuple[tuple[str, Any], ...]
    problem: str  # 'm=128' where the workload's cases differ in more than the size on some machine, else ''
    cases: dict[str, list[CaseView]]  # machine key -> its latest cases of the problem

    @property
    def apart(self) -> str:
        """'float32', or 'float32; m=128': what sets it apart from the workload's other problems."""
        return f"{self.dtype}; {self.problem}" if self.problem else self.dtype

    @property
    def title(self) -> str:
        """'sort (float32)', or 'matvec (float32; m=128)', as the report titles its answer."""
        return f"{self.workload} ({self.apart})"


@dataclass
class SiteData:
    """Every run of a store, oldest first, and per machine the latest record of each case."""

    runs: list[Run]
    machines: list[Machine]
    latest: dict[str, ReportData]  # machine key -> the latest record of each case there, as views
    tables: dict[str, dict[str, VersionTable]]  # backend -> machine key -> its cases by version
    # backend -> machine key -> the latest run there that measured two of its versions side by side (--env)
    paired: dict[str, dict[str, SideBySide]]

    @classmethod
    def from_runs(cls, runs: Sequence[Run], loaded: Sequence[Results]) -> SiteData:
        """`runs`: every run, oldest first. `loaded`: those runs whole, in the same order, or only
        the ones holding the latest record of a case on a machine, or of a framework version there
        (shown_runs): a later run's record of a case replaces an earlier one's."""
        by_id = {run.id: run for run in runs}
        latest: dict[str, dict[str, CaseView]] = defaultdict(dict)
        headers: dict[str, dict[str, RunHeader]] = defaultdict(dict)
        tables: dict[str, dict[str, VersionTable]] = defaultdict(dict)
        paired: dict[str, dict[str, SideBySide]] = defaultdict(dict)
        for res in loaded:
            run = by_id[run_id(res.header)]
            m = run.machine
            for side in side_by_side(res, m):
                paired[side.backend][m.key] = side
            for view in ReportData.from_results([res]).records:
                latest[m.key][view.record.id] = view
                headers[m.key][view.machine] = res.header
                version = (view.backend_info or {}).get("version")
                if view.status != "ok" or not view.median_s or not version:
                    continue
                table = tables[view.backend].setdefault(m.key, VersionTable(m, {}, {}))
                table.cases.setdefault(benchmark_name(view.record, env=False), {})[str(version)] = view
                table.runs[str(version)] = run.id  # the latest run of each version
        # A machine whose runs hold no case is left out.
        machines = sorted({run.machine.key: run.machine for run in runs if latest.get(run.machine.key)}.values(),
                          key=lambda m: m.name)
        return cls(list(runs), machines, {m.key: ReportData(list(latest[m.key].values()), headers[m.key])
                                          for m in machines}, dict(tables), dict(paired))

    @property
    def workloads(self) -> list[str]:
        return sorted({r.workload for data in self.latest.values() for r in data.records})

    @property
    def frameworks(self) -> list[str]:
        return sorted({b for run in self.runs for b in run.backends})

    @cached_property
    def points(self) -> dict[str, Points]:
        """Each workload's size parameter and the others that vary, over every machine's cases: a
        problem is named alike on every machine, whichever of them it ran on."""
        return points_by_workload(r for data in self.latest.values() for r in data.records)

    def problems(self) -> list[Problem]:
        """Every problem measured on some machine, by workload, dtype and its smallest point."""
        groups: dict[tuple[str, str, tuple], dict[str, list[CaseView]]] = defaultdict(dict)
        for key, data in self.latest.items():
            for r in data.records:
                pts = self.points[r.workload]
                groups[(r.workload, r.dtype, pts.fixed(r))].setdefault(key, []).append(r)

        def first(item: tuple[tuple, dict[str, list[CaseView]]]) -> tuple:
            pts = self.points[item[0][0]]
            return (*item[0][:2], min(pts.order(r) for recs in item[1].values() for r in recs))

        return [Problem(wl, dtype, fixed, self.points[wl].problem(next(iter(cases.values()))[0]), cases)
                for (wl, dtype, fixed), cases in sorted(groups.items(), key=first)]

    @cached_property
    def answers(self) -> dict[str, list[Answer]]:
        """Per machine key: the report's answer per workload and dtype (report.answer), from its latest cases."""
        return {key: answers(data, crossovers(data)) for key, data in self.latest.items()}

    def machine(self, key: str) -> Machine:
        return next(m for m in self.machines if m.key == key)

    def versions(self, backend: str) -> dict[str, VersionTable]:
        """Per machine key: `backend`'s correct cases by the framework version that ran them."""
        out = self.tables.get(backend, {})
        return {key: out[key] for key in sorted(out, key=lambda k: self.machine(k).name)}


@dataclass(frozen=True)
class SideBySide:
    """Two versions of one framework measured in one run, each in its own Python environment (--env),
    their processes interleaved round by round: compared pair by pair, where the host's drift cancels."""

    machine: Machine
    run: str
    backend: str
    sentence: str  # report.environments' sentence: "torch 2.13.0 against 2.12.0: faster in 3 of 40 cases, …"


def side_by_side(res: Results, machine: Machine) -> list[SideBySide]:
    """Per framework whose version differs between a run's first environment and another: the paired
    verdicts over that framework's cases (comparison.compare, paired), counted."""
    envs = res.header.environments
    first, *others = list(envs) or [""]
    out = []
    for other in others:
        a, b = envs[first].versions, envs[other].versions
        changed = [k for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
        if not changed:
            continue
        cmp = compare(environment_side(res, first), environment_side(res, other), paired=True)
        for backend in changed:
            mine = dataclasses.replace(cmp, cases=[c for c in cmp.cases if c.base.backend == backend])
            if mine.cases:
                what = f"{backend} {b.get(backend) or 'absent'} against {a.get(backend) or 'absent'}"
                out.append(SideBySide(machine, run_id(res.header), backend, sentence(what, mine)))
    return out


@dataclass
class VersionTable:
    """One framework on one machine: each case's latest correct view per framework version."""

    machine: Machine
    cases: dict[str, dict[str, CaseView]]  # case (id without its digest) -> version -> view
    runs: dict[str, str]  # version -> the latest run that measured it

    @property
    def versions(self) -> list[str]:
        return sorted(self.runs, key=version_key)


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """'2.13.0+cpu' after '2.9.1': numbers compare as numbers, words as words."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.+\-_]", version) if p)


def load_store(location: str) -> SiteData:
    """The site's one read of the results store at `location` (a file, or a database URL), in one
    consistent snapshot of it however many machines push meanwhile (read_site)."""
    with Store(location, create=False) as st, st.snapshot():
        return read_site(st)


def read_site(st: Store, versions: bool = True) -> SiteData:
    """Every run from the store's index of records, and whole only the runs whose records the pages
    show — at a year of nightly runs on three machines, a few dozen of a thousand; without
    `versions`, only those the answer across machines reads (`arraybench answer`: a handful). Call
    it inside `st.snapshot()`, with whatever else the same publish reads (site/history_pages.py)."""
    headers = st.headers()
    index = st.record_index()
    runs = run_list(headers, index)
    if not runs:
        # The location is not repeated: a URL may carry what must not be printed.
        raise UsageError("the results store holds no runs yet (arraybench run or import adds them; "
                         "--store names another)")
    loaded = [st.load(rid) for rid in shown_runs(runs, headers, index, versions)]
    return SiteData.from_runs(runs, loaded)


def stored_runs(location: str, ids: Sequence[str]) -> Iterator[Results]:
    """The runs `ids` of the store at `location`, whole, one at a time: a run's own page needs all of
    it, and a thousand runs at once do not fit in memory."""
    with Store(location, create=False) as st:
        for rid in ids:
            yield st.load(rid)


Index = Sequence[tuple[str, str, str, str]]  # Store.record_index: (run id, case id, backend, status)


def run_list(headers: Mapping[str, RunHeader], index: Index) -> list[Run]:
    """Every run of `headers` (oldest first), counted from `index`; a record of a run that landed
    after `headers` were read is left for the next publish."""
    cases: dict[str, dict[str, tuple[str, str]]] = {rid: {} for rid in headers}
    counts: dict[str, int] = defaultdict(int)
    for rid, case_id, backend, status in index:
        if rid in cases:
            cases[rid][case_id] = (backend, status)
            counts[rid] += 1
    envs: dict[str, MachineEnvironment] = {}
    for h in headers.values():  # a machine as its first run describes it
        envs.setdefault(h.environment.fingerprint, h.environment)
    names = model_names(envs)
    machines = {key: Machine(key, names[key], env) for key, env in envs.items()}
    return [Run(rid, str(h.started or ""), machines[h.environment.fingerprint],
                len(cases[rid]), sum(s in FAILED for _, s in cases[rid].values()), counts[rid],
                tuple(sorted({b for b, s in cases[rid].values() if s != "unavailable"})),
                tuple(h.environments))
            for rid, h in headers.items()]


def shown_runs(runs: Sequence[Run], headers: Mapping[str, RunHeader], index: Index,
               versions: bool = True) -> list[str]:
    """The runs, oldest first, holding some machine's latest record of a case, or (with `versions`)
    its latest correct record of a case under a framework version: all that the site's own pages
    are drawn from; without `versions`, all that the answer across machines is.

    A record's version is read from its run's header (the versions its environment recorded, which
    its records report too), not from the record: reading every record's JSON doubles the time of a
    publish. A run whose header names no version of a framework is loaded whole, to be safe.
    """
    at = {run.id: (i, run.machine.key) for i, run in enumerate(runs)}
    newest: dict[tuple[str, ...], int] = {}
    for rid, case_id, backend, status in index:
        if rid not in at:
            continue
        i, machine = at[rid]
        newest[(machine, case_id)] = i
        if versions and status == "ok":
            version = headers[rid].versions_of(case_id).get(backend)
            newest[(machine, backend, str(version) if version else f"unnamed in {rid}", case_id)] = i
    return [runs[i].id for i in sorted(set(newest.values()))]
