"""What every report output is drawn from: the latest record of each case on each machine, with derived numbers."""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

from arraybench.core.case import label as case_label
from arraybench.core.device_tokens import kind_of
from arraybench.machine import packages
from arraybench.report import bound, environments
from arraybench.report.table import Points, points_by_workload
from arraybench.report.view import CaseView
from arraybench.results import Results
from arraybench.results.header import Analysis, Peaks, RunHeader, machine_names
from arraybench.results.reading import pool_readings
from arraybench.results.record import FAILED, CaseRecord
from arraybench.results.run_ids import run_id
from arraybench.results.speedups import speedups
from arraybench.stats import pools, spells
from arraybench.stats.measurement import Measurement
from arraybench.stats.paired import Pairing
from arraybench.stats.spells import reached
from arraybench.units import format_seconds

NOT_RUN = ("unsupported", "unavailable")
# Below this, the Python call the harness makes per timed call is a visible share: say how much.
SUB_MICROSECOND_S = 1e-6


class ProblemKey(NamedTuple):
    """ReportData.problem_key: what one answer is about."""

    workload: str
    dtype: str
    machine: str
    fixed: tuple[tuple[str, Any], ...]
    env: str


@dataclass
class ReportData:
    """Records of one or more results files, keyed by (machine, case id), plus each machine's header."""

    records: list[CaseView]  # each one's `machine` is its machine's name here (machine_names)
    headers: dict[str, RunHeader]  # machine name -> results header (settings, environment, the analysis)
    # One line per results file that holds fewer cases than its run planned (partial_line).
    partial: tuple[str, ...] = ()
    # A sentence per environment of a run of several (`--env`), against its first (environments.py).
    env_pairs: tuple[str, ...] = ()

    @classmethod
    def from_results(cls, results: Sequence[Results]) -> ReportData:
        # Machines are told apart by Results.machine_key (as the site and the store do), and named
        # by their host where no other machine here shares it.
        hosts: dict[str, str] = {}
        for res in results:
            hosts[res.machine_key()] = res.host()
            hosts.update({env.fingerprint: host for host, env in res.machine_lines.items()})
            for r in res.records:
                hosts.setdefault(res.machine_key(r), res.host(r))
        name = machine_names(hosts)
        latest = {(r.machine, r.id): r for res in results
                  for r in (dataclasses.replace(r, machine=name[res.machine_key(r)]) for r in res.records)}
        # Each case's log point by round and its run's pairing, what pairs it with its rivals
        # (bracket.side), how many of its processes a slow spell reached, its reach, its slowed rounds and how
        # much a spell may have slowed them (Reading.spell_of).
        paired = {(name[res.machine_key(r)], r.id): (tuple(sorted(res.reading.rounds(r).items())), res.reading.pairing,
                                                     sum(reached(p.sifted, p.measured)
                                                         for p in res.reading.processes(r)), res.reading.reach(r),
                                                     tuple(sorted(res.reading.slowed(r).items())),
                                                     res.reading.spell_of(r))
                  for res in results for r in res.records if r.status == "ok"}
        headers = {name[res.machine_key()]: dataclasses.replace(res.header, analysis=analysis(res)) for res in results}
        for res in results:  # a cluster run records each machine its cases ran on
            for env in res.machine_lines.values():
                headers.setdefault(name[env.fingerprint], dataclasses.replace(res.header, environment=env))
        label = cls([], headers).label_in(list(latest.values()))
        partial = tuple(line for res in results if (line := partial_line(res)))
        return cls(records=_derive(list(latest.values()), headers, label, paired), headers=headers, partial=partial,
                   env_pairs=tuple(environments.pair_lines(results)))

    @property
    def machines(self) -> list[str]:
        return sorted({r.machine for r in self.records})

    def label(self, r: CaseRecord) -> str:
        """backend·mode, plus the device and machine only where the data has more than one."""
        return self._label(r)

    @cached_property
    def _label(self) -> Callable[[CaseRecord], str]:
        # Counting the devices and machines once: per call, it made a table of 300 cases take seconds.
        return self.label_in(self.records)

    @staticmethod
    def label_in(records: Sequence[CaseRecord]) -> Callable[[CaseRecord], str]:
        """ReportData.label among `records` (before their views exist)."""
        devices = len({x.device for x in records})
        machines = len({x.machine for x in records})

        def label(r: CaseRecord) -> str:
            return case_label(r, device=devices > 1, machine=machines > 1)

        return label

    def labels(self, records: Sequence[CaseRecord] | None = None) -> list[str]:
        """Labels in a stable order: by backend as registered, then mode, then machine."""
        recs = self.records if records is None else records
        return sorted({self.label(r) for r in recs}, key=lambda lab: (_backend_rank(lab), lab))

    def by_workload(self) -> dict[str, list[CaseView]]:
        out: dict[str, list[CaseView]] = defaultdict(list)
        for r in self.records:
            out[r.workload].append(r)
        return dict(sorted(out.items()))

    @cached_property
    def _points(self) -> dict[str, Points]:
        return points_by_workload(self.records)

    def points(self, workload: str) -> Points:
        """How the workload's cases differ: its size parameter, and the other parameters that set
        its problems apart (one series per problem)."""
        return self._points[workload]

    def size_param(self, workload: str) -> str:
        return self.points(workload).size_param

    def point(self, r: CaseRecord) -> str:
        """The record's point as the tables' columns name it: 'n=64', or 'n=64, m=128'."""
        return self.points(r.workload).text(r)

    def problem(self, r: CaseRecord) -> str:
        """The parameters that set the record's problem apart from its workload's others ('m=128'), or ''."""
        return self.points(r.workload).problem(r)

    def problem_key(self, r: CaseView) -> ProblemKey:
        """What one answer (and one row of the map) is about: a workload's series over the size at one
        dtype, machine, set of other parameters, and Python environment. The backend·modes of one
        environment are the rivals; an environment is not a rival of another (compare RUN@A RUN@B and
        the report's Environments line say how two environments differ)."""
        return ProblemKey(r.workload, r.dtype, r.machine, self.points(r.workload).fixed(r), r.env or "")

    def problems(self, records: Sequence[CaseView]) -> dict[ProblemKey, list[CaseView]]:
        """`records` by problem_key, in the written answer's order (a workload's problems by their
        smallest point; environments as the run listed them)."""
        groups: dict[ProblemKey, list[CaseView]] = defaultdict(list)
        for r in records:
            groups[self.problem_key(r)].append(r)
        rank = {env: i for i, env in enumerate(self.envs)}

        def first(kv: tuple[ProblemKey, list[CaseView]]) -> tuple:
            k = kv[0]
            return (k.workload, k.dtype, k.machine, min(self.points(k.workload).order(r) for r in kv[1]),
                    rank.get(k.env, len(rank)), k.env)

        return dict(sorted(groups.items(), key=first))

    @cached_property
    def envs(self) -> list[str]:
        """The Python environments of the records (`--env`), in first-seen order; [] for a run of one."""
        return list(dict.fromkeys(r.env for r in self.records if r.env))

    def peaks(self, machine: str) -> Peaks:
        """The peaks of `machine` (none measured: a machine without a header here)."""
        header = self.headers.get(machine)
        return header.peaks if header is not None else Peaks()


def partial_line(res: Results) -> str:
    """'… holds 4 of its 10 planned cases …' where a run stopped (or its file was torn) before every
    planned case had its record, else ''. Refinement's cases come after the plan's, so a file that
    holds the plan's count holds the whole plan."""
    planned, held = res.header.planned, len(res.latest())
    if planned is None or held >= planned:
        return ""
    where = str(res.path) if res.path is not None else f"run {run_id(res.header)}"
    rest = f"; `arraybench run --resume {res.path.parent}` measures the rest" if res.path is not None else ""
    return (f"{where} holds {held} of its {planned} planned cases: the run stopped early, and the tables, "
            f"crossovers and answer cover only those{rest}")


def _backend_rank(label: str) -> int:
    from arraybench.backends import BACKENDS

    names = list(BACKENDS)
    backend = label.split("·", 1)[0]
    return names.index(backend) if backend in names else len(names)


def run_views(res: Results) -> dict[str, CaseView]:
    """Each case of one run (its latest record) by id, with the figures the report derives for it."""
    return {view.record.id: view for view in ReportData.from_results([res]).records}


def _derive(records: Sequence[CaseRecord], headers: dict[str, RunHeader], label: Any,
            paired: Mapping[tuple[str, str], tuple[Any, Any, int, float, Any, float]] | None = None) -> list[CaseView]:
    """Each record's view: speedup vs NumPy (same machine), quartiles, the 95 % interval, GFLOP/s,
    GB/s, % of that machine's peaks, arithmetic intensity, the bound, the harness's own per-call cost,
    and (`paired`, by machine and id) its rounds and its run's pairing."""
    def peaks_of(machine: str | None) -> Peaks:
        header = headers.get(machine or "")
        return header.peaks if header is not None else Peaks()

    groups: dict[str | None, list[CaseRecord]] = defaultdict(list)
    for r in records:
        groups[r.machine].append(r)
    speedup: dict[tuple[str, str | None], float] = {}
    for group in groups.values():
        speedup.update(speedups(group))
    floors = bound.dispatch_floors(records, label)
    # By work, not size: a workload's cases compare whatever else differs between them.
    sweeps: dict[tuple, list[CaseRecord]] = defaultdict(list)
    for r in records:
        sweeps[(r.machine, label(r), r.workload, r.dtype)].append(r)
    flat = set().union(*map(bound.fixed_cost_dominates, sweeps.values()))
    paired = paired or {}
    unpaired = ((), None, 0, 1.0, (), math.inf)
    return [_view(r, speedup.get((r.id, r.machine)), floors.get((r.machine, label(r))), peaks_of(r.machine),
                  r.id in flat, *paired.get((r.machine or "", r.id), unpaired)) for r in records]


def _view(r: CaseRecord, speedup: float | None, floor: float | None, peaks: Peaks, flat: bool,
          rounds: tuple[tuple[int, float], ...] = (), pairing: Pairing | None = None, spelled: int = 0,
          reach: float = 1.0, slowed: tuple[tuple[int, float], ...] = (), spell: float = math.inf) -> CaseView:
    """One record's derived numbers (see CaseView)."""
    d: dict[str, Any] = {"speedup": speedup, "rounds": rounds, "pairing": pairing, "spelled": spelled,
                         "reach": reach, "slowed": slowed, "spell": spell}
    ok = r.status == "ok" and bool(r.median_s)
    median = r.median_s or 0.0
    if ok and r.samples_s:
        m = Measurement(tuple(r.samples_s))
        # median_s weighs each process alike (measurement.Replicated); pooled quartiles of
        # processes with unequal sample counts need not bracket it.
        d["q25_s"], d["q75_s"] = min(m.quantile(0.25), median), max(m.quantile(0.75), median)
        d["ci_low_s"], d["ci_high_s"] = r.ci95_s or m.ci95
    elif ok:
        half = (r.iqr_s or 0.0) / 2
        d["q25_s"], d["q75_s"] = median - half, median + half
        d["ci_low_s"], d["ci_high_s"] = r.ci95_s or (d["q25_s"], d["q75_s"])
    d["no_rate"] = bound.no_rate_reason(r, peaks) if ok else ""
    moved = bound.moved_bytes(r, peaks) if ok else None
    d["gflops"] = r.flops / median / 1e9 if ok and r.flops else None
    d["gbs"] = moved / median / 1e9 if moved else None
    d["intensity"] = r.flops / r.bytes if d["gflops"] and d["gbs"] and r.flops and r.bytes else None
    flop_peak, bw_peak = bound.roofs(peaks, r.device, r.dtype)
    d["pct_flop_peak"] = 100 * d["gflops"] / flop_peak if d["gflops"] and flop_peak else None
    d["pct_bw_peak"] = 100 * d["gbs"] / bw_peak if d["gbs"] and bw_peak else None
    d["dispatch_floor_s"] = floor
    d["bound"] = bound.classify(r, floor, peaks, flat)
    harness = peaks.harness_call_s
    shown = ok and harness and kind_of(r.device) == "cpu" and median < SUB_MICROSECOND_S
    d["harness_s"] = harness if shown else None
    return CaseView.of(r, **d)


def status_word(r: CaseRecord) -> str:
    """What a cell shows instead of a number when a case has none worth ranking."""
    if r.status in FAILED:
        return r.status.upper()
    if r.status in NOT_RUN:
        return "n/a"
    return ""


# Above this median slowdown of the host's reference loop a run's report says its host was busy.
BUSY_HOST = 1.15
# Above this median slowdown of the memory reference (a copy through DRAM) the report says the
# memory system was contended: a stream on the other vCPU of the 2-core VM made it 2.3×.
BUSY_MEMORY = 1.25


def analysis(res: Results) -> Analysis:
    """What reading the run worked out beyond its records: the pooled prior, the host's speed."""
    from arraybench.measure import hostspeed

    latest = res.latest().values()
    refs = [x for r in latest for x in r.host_ref_s or ()]
    memory = [x for r in latest for x in r.memory_ref_s or ()]
    env = res.environment
    reference = hostspeed.plan_memory_reference(env.last_level_cache_bytes, env.memory_bytes,
                                                res.settings.memory_limit)
    pool_fastest, pool_share = pool_state(latest, res.reading.pool_fastest_s)
    return Analysis(prior=res.prior, full_speed_s=res.full_speed_s,
                    host_slowdown=spells.slowdown(refs, res.full_speed_s),
                    memory_full_speed_s=spells.nominal(memory),
                    memory_slowdown=spells.slowdown(memory, spells.nominal(memory)),
                    memory_reference=reference.what() if "last_level_cache_bytes" in env.to_json() else None,
                    fixed_layout=bool(res.settings.fixed_layout),
                    spells=res.reading.spells,
                    short_of_samples=sum(1 for r in latest for p in r.replicates if p.stop == "budget"),
                    bimodal_processes=sum(1 for r in latest for p in r.replicates if p.bimodal),
                    pool_fastest_s=pool_fastest, pool_slow_share=pool_share)


def pool_state(records: Iterable[CaseRecord], fastest: Mapping[str | None, float]
               ) -> tuple[float | None, float | None]:
    """The run's pool reference at its fastest over its processes of several threads (`fastest`, by machine:
    Reading.pool_fastest_s; the fastest machine's where a cluster has several), and the share of them whose
    worker read it pools.POOL_SHIFT× its own machine's fastest or more (stats/pools.py): a slower machine of a
    cluster is not a pool the host kept waiting."""
    readings = [(x, best) for r in records if (best := fastest.get(r.machine)) is not None
                for x in pool_readings(r) or ()]
    if not readings:
        return None, None
    states = [(x, best) for x, best in readings if not pools.stalled(x, best)]  # a stall is a spell's, not a state's
    share = sum(1 for x, best in states if pools.unready(x, best)) / len(states) if states else None
    return min(fastest.values()), share


# Below this share of processes reached by a slow spell (spells.REACHED), and below BUSY_HOST, a host was quiet.
QUIET_SPELLS = 0.05


def pool_clause(a: Analysis) -> str:
    """Words for the host keeping a pool's threads unready in QUIET_SPELLS of the processes of several
    threads or more (stats/pools.py), or ""."""
    share, fastest = a.pool_slow_share, a.pool_fastest_s
    if share is None or fastest is None or share < QUIET_SPELLS:
        return ""
    return (f"it kept thread pools waiting in {100 * share:.0f} % of the processes of several threads (NumPy's 100² "
            f"matmul, timed as each worker started, ran {pools.POOL_SHIFT:g}× its fastest {format_seconds(fastest)} "
            "or more): their cases can read slower in one run than the next, and compare of two runs discounts it")


def host_line(data: ReportData) -> str:
    """How noisy the host was, in one line per machine, for the first screen: the share of processes
    a slow spell reached (stats/spells.py) and the reference loop's median slowdown."""
    lines = []
    for machine, header in sorted(data.headers.items()):
        a = header.analysis or Analysis()
        spells, slow = a.spells, a.host_slowdown
        if spells is None or not spells.processes:
            continue
        share = (spells.touched + spells.covered) / spells.processes
        samples = spells.in_spell / spells.samples if spells.samples else 0.0
        whole = spells.covered / spells.processes
        where = f" ({machine})" if len(data.headers) > 1 else ""
        speed = f"; its reference loop ran {slow:.2f}× its full speed at the median" if slow else ""
        reach = (f"slow spells reached {100 * share:.0f} % of processes ({100 * whole:.0f} % whole) and "
                 f"{100 * samples:.0f} % of samples{speed}")
        pool = pool_clause(a)
        if share < QUIET_SPELLS and (slow or 1.0) <= BUSY_HOST:
            lines.append(f"Host{where}: quiet ({reach}){f', but {pool}' if pool else ''}.")
            continue
        lines.append(f"Host{where}: noisy: {reach}. The samples a spell reached are set aside where the reference "
                     "or the threads' wait beside them saw it, and each claim reads its rivals round by round."
                     + (f" Also, {pool}." if pool else ""))
    return "\n".join(lines)


def memory_reference(analysed: Analysis) -> str:
    """What the run's memory reference measured (a file from before its size was bounded: DRAM)."""
    return analysed.memory_reference or "a copy through DRAM"


def analysis_rows(header: RunHeader) -> list[tuple[str, str]]:
    """The host's speed during the run and how the intervals were pooled, in words."""
    a = header.analysis or Analysis()
    rows = []
    if a.full_speed_s and a.host_slowdown:
        rows.append(("host speed", f"a reference loop took {format_seconds(a.full_speed_s)} at the host's full "
                                   f"speed and {a.host_slowdown:.2f}× that at the median of this run"
                                   + (": a shared or throttled host, which moves every number with it"
                                      if a.host_slowdown > BUSY_HOST else "")))
    if a.memory_full_speed_s and a.memory_slowdown:
        rows.append(("memory speed", f"{memory_reference(a)} took {format_seconds(a.memory_full_speed_s)} at its "
                                     f"fastest and {a.memory_slowdown:.2f}× that at the median of this run"
                                     + (": the memory system was contended (another tenant?), which moves "
                                        "memory-bound numbers" if a.memory_slowdown > BUSY_MEMORY else "")))
    prior = a.prior
    if prior is not None and prior.df:
        rows.append(("intervals", f"pooled over {prior.cases} cases: the spread between processes is "
                                  f"{100 * math.sqrt(prior.variance):.0f} % of a case's time, typically, "
                                  f"worth {prior.df:.1f} degrees of freedom beside each case's own"))
    return rows


def environment_rows(header: RunHeader, records: Sequence[CaseRecord]) -> list[tuple[str, str]]:
    """The machine, software and settings of one results file, as (name, text) rows."""
    env, s = header.environment, header.settings
    gib = (env.memory_bytes or 0) / 2**30
    rows = [
        ("machine", env.fingerprint),
        ("cpu", f"{env.cpu_model}; {env.cpu_logical} logical, {env.cpu_physical} "
                f"physical, {env.cpu_affinity} usable"),
        ("memory", f"{gib:.1f} GiB"),
        ("os", f"{env.os}; Python {env.python}"),
        ("run", f"arraybench {header.arraybench_version}, started {header.started}"),
        *framework_rows(header),
        ("peaks", peaks_text(env.peaks)),
        ("settings", f"dtype {s.dtype}; threads {s.threads}; devices "
                     f"{','.join(s.devices or [])}; seed {s.seed}; timeout {s.timeout} s"),
        ("timer", "; ".join(f"{k} {v}" for k, v in (s.timer or {}).items())),
        *analysis_rows(header),
    ]
    for g in env.gpus:
        where = f" #{g['index']} (PCI {g.get('pci_bus_id', '?')})" if "index" in g else ""
        rows.append((f"gpu{where}", f"{g.get('name')} {g.get('memory')} driver {g.get('driver')}"))
    for link in env.gpu_links:
        rows.append((f"gpu {link['gpus'][0]} ↔ gpu {link['gpus'][1]}", link["text"]))
    if env.devices:
        rows.append(("devices", ", ".join(f"{d['kind']}:{d['id']} {d['name']}" for d in env.devices)))
    if env.env:
        rows.append(("environment variables", " ".join(f"{k}={v}" for k, v in sorted(env.env.items()))))
    seen: dict[str, dict[str, Any]] = {}
    empty: dict[str, float] = {}
    for r in records:
        info = r.backend_info or {}
        if info and r.backend not in seen:
            seen[r.backend] = info
        for mode, t in (info.get("empty_call_s") or {}).items():
            label = f"{r.backend}·{mode}"
            empty[label] = min(empty.get(label, t), t)
    if empty:
        rows.append(("empty call (x + x, one element)",
                     ", ".join(f"{k} {format_seconds(v)}" for k, v in sorted(empty.items(), key=lambda kv: kv[1]))))
    for name, info in sorted(seen.items()):
        extras = [f"{k} {info[k]}" for k in ("x64", "tf32", "matmul_precision", "float32_matmul_precision",
                                               "synchronous_execution", "threading_layer") if k in info]
        blas = [f"{b.get('internal_api')} {b.get('version')} ×{b.get('num_threads')}" for b in info.get("blas", [])]
        rows.append((f"backend {name}", "; ".join([f"{info.get('version')}, threads verified "
                                                   f"{info.get('threads_verified')}", *extras, *blas])))
    return rows


def framework_rows(header: RunHeader) -> list[tuple[str, str]]:
    """The frameworks' versions: this interpreter's, or in a run of several environments (`--env`) each
    one's, with the packages it got from elsewhere than an index (the user's own: git, a path)."""
    def versions(found: Mapping[str, str | None]) -> list[str]:
        return [f"{k} {v}" for k, v in sorted(found.items()) if v]

    envs = header.environments
    if not envs:
        return [("frameworks", ", ".join(versions(header.environment.versions)))]
    rows = []
    for name, info in envs.items():
        own = [f"{p.name} {p.describe()}" for p in (packages.of_environment(info) or {}).values()
               if p.source != "index" and p.name != "arraybench"]  # arraybench: the harness, the same in each
        rows.append((f"frameworks [{name}]", ", ".join(versions(info.versions) + own)))
    return rows


def peaks_text(peaks: Peaks) -> str:
    parts = []
    for where, p in (("", peaks), ("GPU ", peaks.gpu or Peaks())):
        parts += [f"{where}matmul {dt} {v:.3g} GFLOP/s" for dt, v in sorted(p.matmul_gflops.items())]
        if p.bandwidth_gbs:
            parts.append(f"{where}streaming {p.bandwidth_gbs:.3g} GB/s")
    if peaks.cache_bandwidth_gbs and peaks.cache_bytes:
        parts.append(f"in cache ({peaks.cache_bytes // 2**10} KiB) {peaks.cache_bandwidth_gbs:.3g} GB/s")
    if peaks.harness_call_s:
        parts.append(f"harness call {format_seconds(peaks.harness_call_s)}")
    how = peaks.method if peaks.method is not None else "not recorded (results from before peaks were measured)"
    return "; ".join(parts) + f" ({how})" if parts else how
