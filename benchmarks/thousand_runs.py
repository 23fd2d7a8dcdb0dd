"""A results store of a year of nightly runs from three machines, built from real records, with planted steps.

The committed GPU results (docs/gpu/*/results.jsonl: 311 cases measured on an H100 host) are copied
into N runs (default 1 000, about 300 records each), round-robin over three machines whose
environments come from real headers: the H100 host, a 16-core Xeon (the same host's CPU, no GPU) and
a 2-core EPYC (tests/fixtures/results-schema2.jsonl). On the CPU machines a case the source measured
on the GPU stands in for the same backend on the CPU, slower by a fixed factor per machine, and CuPy
is left out. Each machine runs once a night, from a year before today; along the way:

- framework versions advance a few times (the CPU machines upgrade a few days after the H100), so
  a series has "torch 2.12 → 2.13" moments;
- host drift: slow spells of 1-3 nights in which every case of a run is 1.2-1.6x slower (the host
  reference kernel too, as a busy host would show);
- per-case noise, lognormal, its size the record's own 95 % interval, floored at NOISE_FLOOR;
- PLANTED steps: a few series (machine, case) change by a known factor from a known run on, some
  at a framework's version change and some not. They are written to --planted as JSON:
  [{"machine": FINGERPRINT, "case": CASE_ID, "run": FIRST_RUN_AT_THE_NEW_LEVEL, "factor": 1.12}, ...]

Each run is stored with Store.add_results (one transaction a run, its figures derived as an import
derives them). Deterministic by --seed.

    .venv/bin/python benchmarks/thousand_runs.py --store /tmp/year.db [--runs 1000] [--seed 0]
    .venv/bin/python benchmarks/thousand_runs.py --store postgresql://USER@HOST/DB --planted planted.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from arraybench.core.case import Case
from arraybench.machine.host import fingerprint
from arraybench.results import SCHEMA, Results, load_results
from arraybench.results.record import CaseRecord
from arraybench.store import Store
from arraybench.store.postgres import is_url, redact

ROOT = Path(__file__).resolve().parents[1]
GPU_SOURCES = [ROOT / "docs/gpu" / d / "results.jsonl" for d in ("float32", "float64", "float64-large")]
EPYC_SOURCE = ROOT / "tests/fixtures/results-schema2.jsonl"
FIRST_NIGHT = datetime(2025, 11, 26, tzinfo=UTC)
# Between-run noise is larger than a record's own interval (which only sees one run's processes).
NOISE_FLOOR = 0.03
NOISE_CAP = 0.15
# Times a record holds of its computation: scaled by drift, noise and a planted step alike.
TIMED = ("samples_s", "median_s", "ci95_s", "iqr_s", "min_s", "mean_s", "std_s", "cold_samples_s", "cold_median_s",
         "first_call_s", "first_call_warm_s", "latency_s")
PROCESS_TIMED = ("median_s", "first_call_s", "latency_s")
# The host's reference kernels: they see a slow host (drift), not a case's own change.
HOST_TIMED = ("host_ref_s", "memory_ref_s")
# (night it reaches the H100; the CPU machines follow `lag` nights later), framework -> version.
RELEASES: list[tuple[int, dict[str, str]]] = [
    (0, {"numpy": "2.4.6", "jax": "0.10.2", "jaxlib": "0.10.2", "torch": "2.12.0", "cupy": "14.1.0"}),
    (61, {"torch": "2.12.1"}),
    (97, {"jax": "0.11.2", "jaxlib": "0.11.2"}),
    (122, {"numpy": "2.5.2"}),
    (153, {"torch": "2.13.0"}),
    (201, {"cupy": "14.2.0"}),
    (243, {"jax": "0.12.0", "jaxlib": "0.12.0"}),
    (281, {"torch": "2.14.0"}),
    (302, {"numpy": "2.6.0"}),
]


@dataclass(frozen=True)
class MachineSpec:
    """One of the three machines: its environment, how much slower its cases run than the source's
    (GPU-measured cases apart), and how many nights after the H100 it takes a new release."""

    environment: dict[str, Any]
    cpu_factor: float
    gpu_stand_in_factor: float  # a GPU-measured case, run on this machine's CPU
    lag: int


@dataclass(frozen=True)
class Step:
    """A planted step: series (machine index, backend wanted) from night on (or from the release of
    `release` on that machine), times `factor`."""

    machine: int
    backend: str
    factor: float
    night: int | None = None
    release: str | None = None


STEPS = [
    Step(0, "torch", 1.12, release="torch 2.13.0"),
    Step(0, "jax", 1.25, night=71),
    Step(2, "numpy", 0.85, release="numpy 2.5.2"),
    Step(1, "torch", 1.10, night=188),
    Step(2, "jax", 1.15, night=262),
    Step(1, "numpy", 1.20, release="numpy 2.6.0"),
]


def machines() -> list[MachineSpec]:
    """The H100 host, a 16-core Xeon and a 2-core EPYC, from real headers."""
    h100 = load_results(GPU_SOURCES[0]).environment.to_json()
    epyc = load_results(EPYC_SOURCE).environment.to_json()
    return [MachineSpec({**h100, "hostname": "gpu-h100"}, 1.0, 1.0, 0),
            MachineSpec({**h100, "hostname": "ci-xeon", "gpus": []}, 1.0, 6.0, 3),
            MachineSpec({**epyc, "hostname": "ci-epyc"}, 3.5, 25.0, 7)]


def base_records(spec: MachineSpec) -> list[dict[str, Any]]:
    """The source records as this machine would hold them (JSON objects), each with its time factor."""
    out: dict[str, dict[str, Any]] = {}
    on_gpu = bool(spec.environment.get("gpus"))
    threads = int(spec.environment.get("cpu_logical") or 1)
    for path in GPU_SOURCES:
        for rec in load_results(path).records:
            obj = rec.to_json()
            factor = spec.cpu_factor
            if rec.device != "cpu" and not on_gpu:
                if rec.backend == "cupy":
                    continue
                factor = spec.gpu_stand_in_factor
                obj.update(device="cpu", n_devices=1, gpu_clock=None, l2_bytes=None)
            if not on_gpu:
                obj["threads"] = threads
                obj["id"] = Case.from_dict(obj).id
            obj["machine"] = spec.environment["hostname"]
            scale(obj, factor, factor)
            out[obj["id"]] = obj
    return list(out.values())


def scale(obj: dict[str, Any], case: float, host: float) -> dict[str, Any]:
    """`obj` with its computation's times times `case` and the host references' times `host` (in place)."""
    for names, f in ((TIMED, case), (HOST_TIMED, host)):
        for name in names:
            value = obj.get(name)
            if isinstance(value, float):
                obj[name] = value * f
            elif isinstance(value, list):
                obj[name] = [v * f for v in value]
    obj["replicates"] = [{**p, **{k: p[k] * case for k in PROCESS_TIMED if isinstance(p.get(k), float)}}
                         for p in obj.get("replicates") or []]
    return obj


def noise_size(obj: dict[str, Any]) -> float:
    """The lognormal sigma of a case's run-to-run noise: its own 95 % interval, relative, floored."""
    ci, median = obj.get("ci95_s"), obj.get("median_s")
    if not ci or not median:
        return NOISE_FLOOR
    return min(NOISE_CAP, max(NOISE_FLOOR, (ci[1] - ci[0]) / (2 * median)))


def versions_on(night: int) -> dict[str, str]:
    """Every framework's version on a machine `night` nights (its lag taken off) into the year."""
    out: dict[str, str] = {}
    for at, released in RELEASES:
        if night >= at:
            out.update(released)
    return out


def release_night(release: str, lag: int) -> int:
    """The first night a machine of `lag` runs `release` ("torch 2.13.0")."""
    name, version = release.split()
    return next(at for at, released in RELEASES if released.get(name) == version) + lag


def slow_spells(rng: np.random.Generator, nights: int, keep_clear: set[int]) -> dict[int, float]:
    """Nights of a machine that run slow on every case (1.2-1.6x), in spells of 1-3 nights, about
    one spell every 40 nights, none within 3 nights of `keep_clear` (a planted step's first night)."""
    out: dict[int, float] = {}
    night = int(rng.integers(10, 40))
    while night < nights:
        length, factor = int(rng.integers(1, 4)), float(rng.uniform(1.2, 1.6))
        if all(abs(night - k) > 3 and abs(night + length - 1 - k) > 3 for k in keep_clear):
            out.update({n: factor for n in range(night, min(nights, night + length))})
        night += length + int(rng.integers(25, 55))
    return out


def choose_series(rng: np.random.Generator, records: list[list[dict[str, Any]]]) -> list[tuple[Step, str]]:
    """Each planted step's case: an ok case of its backend on its machine, none chosen twice."""
    out = []
    for step in STEPS:
        ok = sorted(r["id"] for r in records[step.machine] if r["backend"] == step.backend and r["status"] == "ok"
                    and r.get("median_s") and noise_size(r) <= 0.05)
        taken = {case for _, case in out}
        out.append((step, str(rng.choice([c for c in ok if c not in taken]))))
    return out


def build(location: str, runs: int, seed: int) -> list[dict[str, Any]]:
    """Store `runs` runs into `location`; returns the planted steps as written to --planted."""
    rng = np.random.default_rng(seed)
    specs = machines()
    records = [base_records(spec) for spec in specs]
    nights = math.ceil(runs / len(specs))
    series = choose_series(rng, records)
    first_night = {(s.machine, case): s.night if s.night is not None else release_night(s.release or "",
                                                                                      specs[s.machine].lag)
                   for s, case in series}
    spells = [slow_spells(rng, nights, {n for (m, _), n in first_night.items() if m == k}) for k in range(len(specs))]
    planted: dict[tuple[int, str], dict[str, Any]] = {}
    started = time.perf_counter()
    with Store(location) as st:
        for i in range(runs):
            k, night = i % len(specs), i // len(specs)
            spec = specs[k]
            when = FIRST_NIGHT + timedelta(days=night, hours=2, minutes=17 * k)
            rid = f"{when:%Y%m%d-%H%M%S}-{int(rng.integers(1 << 24)):06x}"
            versions = versions_on(max(0, night - spec.lag))
            env = {**spec.environment, "versions": {**spec.environment.get("versions", {}), **versions}}
            header = {"type": "header", "schema": SCHEMA, "run_id": rid, "arraybench_version": "0.1.0",
                      "started": f"{when:%Y-%m-%dT%H:%M:%SZ}", "plan_size": len(records[k]),
                      "settings": {"dtype": "float32", "threads": spec.environment.get("cpu_logical"), "seed": 0},
                      "environment": env}
            drift = spells[k].get(night, 1.0)
            out = []
            for base in records[k]:
                factor = drift * float(np.exp(rng.normal(0.0, noise_size(base))))
                step = first_night.get((k, base["id"]))
                if step is not None and night >= step:
                    factor *= next(s.factor for s, c in series if c == base["id"])
                    planted.setdefault((k, base["id"]), {"machine": fingerprint(env), "case": base["id"], "run": rid,
                                                         "factor": next(s.factor for s, c in series
                                                                        if c == base["id"])})
                obj = scale({**base}, factor, drift)
                info = dict(obj.get("backend_info") or {})
                if info.get("version") and obj["backend"] in versions:
                    info["version"] = versions[obj["backend"]]
                obj["backend_info"] = info
                out.append(CaseRecord.from_json(obj))
            st.add_results(Results(header=header, records=out))
            if (i + 1) % 100 == 0:
                print(f"  {i + 1} runs stored ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return list(planted.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="a SQLite file or a postgresql:// URL (created)")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--planted", type=Path, help="where the planted steps go (default: STORE.planted.json "
                                                     "beside a SQLite store)")
    args = parser.parse_args()
    if args.planted is None and is_url(args.store):
        parser.error("a PostgreSQL store needs --planted FILE")
    planted_path = args.planted or Path(f"{args.store}.planted.json")
    start = time.perf_counter()
    planted = build(args.store, args.runs, args.seed)
    elapsed = time.perf_counter() - start
    planted_path.write_text(json.dumps(planted, indent=1, ensure_ascii=False) + "\n")
    print(f"{args.runs} runs stored in {redact(args.store)} in {elapsed:.1f} s; "
          f"{len(planted)} planted steps in {planted_path}")


if __name__ == "__main__":
    main()
