"""What the published site is drawn from: every stored run's cases with the report's figures, by machine."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from arraybench.errors import UsageError
from arraybench.machine.environment import fingerprint
from arraybench.output.exports import benchmark_name
from arraybench.report.answer import Answer, answers
from arraybench.report.crossovers import crossovers
from arraybench.report.model import CaseView, ReportData
from arraybench.report.table import Points, points_by_workload
from arraybench.results import Results
from arraybench.results.run_ids import run_id
from arraybench.store import Store

# Words a CPU or GPU model name carries that tell no two machines apart.
NOISE_WORDS = re.compile(r"\((R|TM)\)|\b(NVIDIA|AMD|Intel|Tesla|GeForce|CPU|Processor)\b|@.*$", re.I)
# A GPU name's memory and packaging ("80GB HBM3", "-40GB"): the model is what people call it by.
GPU_MEMORY = re.compile(r"[\s-]*\b\d+\s*[GM]i?B\b.*$", re.I)


@dataclass(frozen=True)
class Machine:
    """One machine as the site names it: its fingerprint (host · CPU · GPUs) and a short name."""

    key: str  # environment.fingerprint: what `history` shows and tells runs' machines apart by
    name: str  # "H100", "2-core EPYC": the answer says "on the H100"
    environment: Mapping[str, Any]


@dataclass(frozen=True)
class Run:
    """One stored run: its results (for its own report) and its cases' views, each on its machine."""

    id: str
    started: str
    results: Results
    views: tuple[tuple[Machine, CaseView], ...]

    @property
    def machines(self) -> list[Machine]:
        return list({m.key: m for m, _ in self.views}.values())


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

    @classmethod
    def from_runs(cls, results: Sequence[Results]) -> SiteData:
        """`results` oldest first: a later run's record of a case replaces an earlier one's."""
        envs: dict[str, Mapping[str, Any]] = {}
        for res in results:
            for env in res.machines.values():
                envs.setdefault(fingerprint(env), env)
        names = machine_names(envs)
        machines = {key: Machine(key, names[key], env) for key, env in envs.items()}
        runs: list[Run] = []
        latest: dict[str, dict[str, CaseView]] = defaultdict(dict)
        headers: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        for res in results:
            # A cluster run records each machine its cases ran on; another, the one in its header.
            on = {host: (machines[fingerprint(env)], {**res.header, "environment": env})
                  for host, env in res.machines.items()}
            views = []
            for view in ReportData.from_results([res]).records:
                m, header = on.get(view["machine"]) or (machines[fingerprint(res.environment)], res.header)
                views.append((m, view))
                latest[m.key][view.record.id] = view
                headers[m.key][view["machine"]] = header
            runs.append(Run(run_id(res.header), str(res.header.get("started", "")), res, tuple(views)))
        # A machine a cluster run named but gave no case is left out.
        ordered = sorted((m for m in machines.values() if latest.get(m.key)), key=lambda m: m.name)
        return cls(runs, ordered, {m.key: ReportData(list(latest[m.key].values()), headers[m.key]) for m in ordered})

    @property
    def workloads(self) -> list[str]:
        return sorted({r["workload"] for data in self.latest.values() for r in data.records})

    @property
    def frameworks(self) -> list[str]:
        return sorted({v["backend"] for run in self.runs for _, v in run.views if v["status"] != "unavailable"})

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
                pts = self.points[r["workload"]]
                groups[(r["workload"], r["dtype"], pts.fixed(r))].setdefault(key, []).append(r)

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
        out: dict[str, VersionTable] = {}
        for run in self.runs:
            for m, v in run.views:
                version = (v.get("backend_info") or {}).get("version")
                if v["backend"] != backend or v["status"] != "ok" or not v.get("median_s") or not version:
                    continue
                table = out.setdefault(m.key, VersionTable(m, {}, {}))
                table.cases.setdefault(benchmark_name(v.record, env=False), {})[str(version)] = v
                table.runs[str(version)] = run.id  # the latest run of each version
        return {key: out[key] for key in sorted(out, key=lambda k: self.machine(k).name)}


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


def short_name(env: Mapping[str, Any]) -> str:
    """'H100' for a machine with one NVIDIA H100 80GB HBM3; '2-core EPYC' for a 2-vCPU AMD EPYC."""
    gpus = [g.get("name") or "" for g in env.get("gpus") or []]
    if gpus:
        names = [GPU_MEMORY.sub("", " ".join(NOISE_WORDS.sub(" ", g).split())).strip(" -") or g for g in gpus]
        kinds = sorted(set(names))
        return " + ".join(f"{names.count(k)}× {k}" if names.count(k) > 1 else k for k in kinds)
    cpu = " ".join(NOISE_WORDS.sub(" ", str(env.get("cpu_model") or "")).split())
    cores = env.get("cpu_logical")
    if not cpu:
        return str(env.get("hostname") or "unknown machine")
    return f"{cores}-core {cpu}" if cores else cpu


def machine_names(envs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Each fingerprint's short name; machines that would share one get their host name (or a number) added."""
    base = {key: short_name(env) for key, env in envs.items()}
    out = {}
    for key, name in base.items():
        same = sorted(k for k, n in base.items() if n == name)
        if len(same) > 1:
            hosts = [str(envs[k].get("hostname")) for k in same]
            tag = hosts[same.index(key)] if len(set(hosts)) == len(hosts) else str(same.index(key) + 1)
            name = f"{name} ({tag})"
        out[key] = name
    return out


def load_store(location: str) -> SiteData:
    """Every run in the results store at `location` (a file, or a database URL), oldest first."""
    with Store(location, create=False) as st:
        loaded = [st.load(r.id) for r in st.runs()]
    if not loaded:
        # The location is not repeated: a URL may carry what must not be printed.
        raise UsageError("the results store holds no runs yet (arraybench run or import adds them; "
                         "--store names another)")
    return SiteData.from_runs(loaded)
