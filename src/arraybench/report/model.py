"""What every report output is drawn from: the latest record of each case on each machine, with derived numbers."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arraybench.measurement import Measurement
from arraybench.report import bound
from arraybench.report.table import speedups
from arraybench.results import FAILED, Results, merge
from arraybench.units import format_seconds

NOT_RUN = ("unsupported", "unavailable")
# Below this, the Python call the harness makes per timed call is a visible share: say how much.
SUB_MICROSECOND_S = 1e-6


@dataclass
class ReportData:
    """Records of one or more results files, keyed by (machine, case id), plus each machine's header."""

    records: list[dict[str, Any]]
    headers: dict[str, dict[str, Any]]  # machine -> results header (settings, environment)

    @classmethod
    def from_results(cls, results: Sequence[Results]) -> ReportData:
        latest = {(r["machine"], r["id"]): r for r in merge(results)}
        headers = {res.environment.get("hostname", "?"): res.header for res in results}
        for res in results:  # a cluster run records each machine its cases ran on
            for machine, env in res.machine_lines.items():
                headers.setdefault(machine, {**res.header, "environment": env})
        data = cls(records=list(latest.values()), headers=headers)
        _derive(data)
        return data

    @property
    def machines(self) -> list[str]:
        return sorted({r["machine"] for r in self.records})

    def label(self, r: dict[str, Any]) -> str:
        """backend·mode, plus the device and machine only where the data has more than one."""
        label = f"{r['backend']}·{r['mode']}"
        if len({x.get("device", "cpu") for x in self.records}) > 1:
            label += f"·{r.get('device', 'cpu')}"
        if len(self.machines) > 1:
            label += f" @{r['machine']}"
        return label

    def labels(self, records: Sequence[dict[str, Any]] | None = None) -> list[str]:
        """Labels in a stable order: by backend as registered, then mode, then machine."""
        recs = self.records if records is None else records
        return sorted({self.label(r) for r in recs}, key=lambda lab: (_backend_rank(lab), lab))

    def by_workload(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in self.records:
            out[r["workload"]].append(r)
        return dict(sorted(out.items()))

    def size_param(self, workload: str) -> str:
        return size_param(self.by_workload()[workload])

    def peaks(self, machine: str) -> dict[str, Any]:
        return self.headers.get(machine, {}).get("environment", {}).get("peaks", {})


def _backend_rank(label: str) -> int:
    from arraybench.backends import BACKENDS

    names = list(BACKENDS)
    backend = label.split("·", 1)[0]
    return names.index(backend) if backend in names else len(names)


def size_param(records: Sequence[dict[str, Any]]) -> str:
    """The parameter whose value is each record's size (records do not name it)."""
    keys = [k for k in records[0]["params"] if all(r["params"].get(k) == r.get("size") for r in records)]
    return keys[0] if len(keys) == 1 else "size"


def _derive(data: ReportData) -> None:
    """Add speedup vs NumPy (same machine), quartiles, the 95 % interval, GFLOP/s, GB/s, % of that
    machine's peaks, arithmetic intensity, the bound and the harness's own per-call cost."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in data.records:
        groups[r["machine"]].append(r)
    for group in groups.values():
        sp = speedups(group)
        for r in group:
            r["speedup"] = sp.get((r["id"], r.get("machine")))
    floors = bound.dispatch_floors(data.records, data.label)
    sweeps: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in data.records:
        sweeps[(r["machine"], data.label(r), r["workload"], r["dtype"])].append(r)
    flat = set().union(*map(bound.fixed_cost_dominates, sweeps.values()))
    for r in data.records:
        ok = r["status"] == "ok" and bool(r.get("median_s"))
        samples = r.get("samples_s") or []
        if ok and samples:
            m = Measurement(tuple(samples))
            # median_s weighs each process alike (measurement.Replicated); pooled quartiles of
            # processes with unequal sample counts need not bracket it.
            r["q25_s"], r["q75_s"] = min(m.quantile(0.25), r["median_s"]), max(m.quantile(0.75), r["median_s"])
            r["ci_low_s"], r["ci_high_s"] = r.get("ci95_s") or m.ci95
        elif ok:
            half = (r.get("iqr_s") or 0.0) / 2
            r["q25_s"], r["q75_s"] = r["median_s"] - half, r["median_s"] + half
            r["ci_low_s"], r["ci_high_s"] = r.get("ci95_s") or (r["q25_s"], r["q75_s"])
        peaks = data.peaks(r["machine"])
        r["no_rate"] = bound.no_rate_reason(r, peaks) if ok else ""
        moved = bound.moved_bytes(r, peaks) if ok else None
        r["gflops"] = r["flops"] / r["median_s"] / 1e9 if ok and r.get("flops") else None
        r["gbs"] = moved / r["median_s"] / 1e9 if moved else None
        r["intensity"] = r["flops"] / r["bytes"] if r["gflops"] and r["gbs"] else None
        flop_peak, bw_peak = bound.roofs(peaks, r.get("device", "cpu"), r.get("dtype"))
        r["pct_flop_peak"] = 100 * r["gflops"] / flop_peak if r["gflops"] and flop_peak else None
        r["pct_bw_peak"] = 100 * r["gbs"] / bw_peak if r["gbs"] and bw_peak else None
        r["dispatch_floor_s"] = floors.get((r["machine"], data.label(r)))
        r["bound"] = bound.classify(r, r["dispatch_floor_s"], peaks, r["id"] in flat)
        harness = peaks.get("harness_call_s")
        shown = ok and harness and r.get("device", "cpu") == "cpu" and r["median_s"] < SUB_MICROSECOND_S
        r["harness_s"] = harness if shown else None


def status_word(r: dict[str, Any]) -> str:
    """What a cell shows instead of a number when a case has none worth ranking."""
    if r["status"] in FAILED:
        return r["status"].upper()
    if r["status"] in NOT_RUN:
        return "n/a"
    return ""


def environment_rows(header: dict[str, Any], records: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The machine, software and settings of one results file, as (name, text) rows."""
    from arraybench.environment import fingerprint

    env, s = header.get("environment", {}), header.get("settings", {})
    gib = (env.get("memory_bytes") or 0) / 2**30
    rows = [
        ("machine", fingerprint(env)),
        ("cpu", f"{env.get('cpu_model')}; {env.get('cpu_logical')} logical, {env.get('cpu_physical')} "
                f"physical, {env.get('cpu_affinity')} usable"),
        ("memory", f"{gib:.1f} GiB"),
        ("os", f"{env.get('os')}; Python {env.get('python')}"),
        ("run", f"arraybench {header.get('arraybench_version')}, started {header.get('started')}"),
        ("frameworks", ", ".join(f"{k} {v}" for k, v in sorted(env.get("versions", {}).items()) if v)),
        ("peaks", peaks_text(env.get("peaks", {}))),
        ("settings", f"dtype {s.get('dtype')}; threads {s.get('threads')}; devices "
                     f"{','.join(s.get('devices') or [])}; seed {s.get('seed')}; timeout {s.get('timeout')} s"),
        ("timer", "; ".join(f"{k} {v}" for k, v in (s.get("timer") or {}).items())),
    ]
    for g in env.get("gpus", []):
        rows.append(("gpu", f"{g.get('name')} {g.get('memory')} driver {g.get('driver')}"))
    if env.get("env"):
        rows.append(("environment variables", " ".join(f"{k}={v}" for k, v in sorted(env["env"].items()))))
    seen: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.get("backend_info") and r["backend"] not in seen:
            seen[r["backend"]] = r["backend_info"]
    for name, info in sorted(seen.items()):
        extras = [f"{k} {info[k]}" for k in ("x64", "tf32", "matmul_precision", "float32_matmul_precision",
                                               "synchronous_execution", "threading_layer") if k in info]
        blas = [f"{b.get('internal_api')} {b.get('version')} ×{b.get('num_threads')}" for b in info.get("blas", [])]
        rows.append((f"backend {name}", "; ".join([f"{info.get('version')}, threads verified "
                                                   f"{info.get('threads_verified')}", *extras, *blas])))
    return rows


def peaks_text(peaks: dict[str, Any]) -> str:
    parts = []
    for where, p in (("", peaks), ("GPU ", peaks.get("gpu") or {})):
        parts += [f"{where}matmul {dt} {v:.3g} GFLOP/s" for dt, v in sorted((p.get("matmul_gflops") or {}).items())]
        if p.get("bandwidth_gbs"):
            parts.append(f"{where}streaming {p['bandwidth_gbs']:.3g} GB/s")
    if peaks.get("harness_call_s"):
        parts.append(f"harness call {format_seconds(peaks['harness_call_s'])}")
    how = peaks.get("method", "not recorded (results from before peaks were measured)")
    return "; ".join(parts) + f" ({how})" if parts else how
