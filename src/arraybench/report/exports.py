"""Exports: a run in the formats continuous-benchmarking dashboards read (pytest-benchmark, Bencher BMF).

Only correct cases are exported: a wrong or failed case has no time worth tracking, and a
dashboard that plotted it would rank it. Each benchmark is named by its case id without the
digest (`linreg[d=2,iters=20,n=200]/jax-jit/float64/cpu/t1`), the same in every run, so a
dashboard follows one case across commits. Each carries the figures the report derives for it
(report.view.FIGURES: bound, speedup, GFLOP/s, GB/s, intensity, % of peak) and its memory
(MEMORY_FIGURES, docs/memory.md): pytest-benchmark in `extra_info`, BMF as measures of their own (all
but `bound`, a word where BMF takes numbers).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from arraybench.report.data import run_views
from arraybench.results import Results
from arraybench.results.record import CaseRecord

EXPORT_FORMATS = ("jsonl", "pytest-benchmark", "bmf")  # `export --format`: what dashboards read
# The file version pytest-benchmark (4.x and 5.x) writes; its readers key on the fields below.
PYTEST_BENCHMARK_VERSION = "4.0.0"
NS_PER_S = 1e9
# BMF measure (Bencher's slug) for each numeric derived figure.
BMF_MEASURES = {"speedup": "speedup", "gflops": "gflops", "gbs": "gbs", "intensity": "intensity",
                "pct_flop_peak": "pct-flop-peak", "pct_bw_peak": "pct-bw-peak"}
# A case's memory in bytes (record fields), each a BMF measure of its own: a dashboard follows it as it does time.
MEMORY_FIGURES = {"memory_bytes": "memory", "first_call_memory_bytes": "first-call-memory",
                  "peak_memory_bytes": "peak-memory"}


def memory_figures(r: CaseRecord) -> dict[str, int | None]:
    """A record's memory figures that the exports carry (MEMORY_FIGURES' fields), by field name."""
    return {"memory_bytes": r.memory_bytes, "first_call_memory_bytes": r.first_call_memory_bytes,
            "peak_memory_bytes": r.peak_memory_bytes}


def benchmark_name(rec: CaseRecord, env: bool = True) -> str:
    """The case id without its digest, with its environment (`…/cpu/t1@new`) unless `env` is False:
    the site's framework pages set one case's versions side by side, whichever environment ran each."""
    return str(rec.id).rsplit("/", 1)[0] + (f"@{rec.env}" if env and rec.env else "")


def correct_records(res: Results) -> list[CaseRecord]:
    return [r for r in res.latest().values() if r.status == "ok" and r.samples_s]


def records_with_figures(res: Results) -> list[dict[str, Any]]:
    """The run's latest records as JSON objects, each with the figures the report derives for it
    (report.view.FIGURES) beside its own fields: what `show --format json` prints."""
    views = run_views(res)
    return [{**r.to_json(), **views[r.id].figures()} for r in res.latest().values()]


def _quartiles(samples: Sequence[float]) -> tuple[float, float]:
    if len(samples) < 2:
        return samples[0], samples[0]
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return q1, q3


def pytest_benchmark_stats(samples: Sequence[float], iterations: int) -> dict[str, Any]:
    """pytest-benchmark's `stats` block from per-call samples (seconds), computed as it does."""
    data = sorted(samples)
    mean = statistics.fmean(data)
    std = statistics.stdev(data) if len(data) > 1 else 0.0
    q1, q3 = _quartiles(data)
    iqr = q3 - q1
    low, high = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    inside = [x for x in data if low <= x <= high]
    std_out = (sum(x < mean - std for x in data), sum(x > mean + std for x in data))
    iqr_out = (sum(x < low for x in data), sum(x > high for x in data))
    return {
        "min": data[0], "max": data[-1], "mean": mean, "stddev": std, "rounds": len(data),
        "median": statistics.median(data), "iqr": iqr, "q1": q1, "q3": q3,
        "iqr_outliers": sum(iqr_out), "stddev_outliers": sum(std_out),
        "outliers": f"{sum(std_out)};{sum(iqr_out)}",
        "ld15iqr": inside[0] if inside else data[0], "hd15iqr": inside[-1] if inside else data[-1],
        "ops": 1.0 / mean if mean > 0 else 0.0, "total": sum(data) * iterations,
        "iterations": iterations, "data": list(samples),
    }


def pytest_benchmark(res: Results) -> dict[str, Any]:
    """The run as a pytest-benchmark JSON file (what `pytest --benchmark-json` writes)."""
    env, header = res.environment, res.header
    git = header.git or {}
    timer = res.settings.timer or {}
    benchmarks = []
    views = run_views(res)
    envs = header.environments
    for r in correct_records(res):
        name = benchmark_name(r)
        # Which Python environment measured it, and that environment's framework versions.
        where = {"env": r.env, "env_versions": envs[r.env].versions if r.env in envs else {}} if r.env else {}
        benchmarks.append({
            "group": r.workload, "name": name, "fullname": name,
            "params": r.params, "param": ",".join(f"{k}={v}" for k, v in r.params.items()),
            "extra_info": {"backend": r.backend, "mode": r.mode, "dtype": r.dtype,
                           "device": r.device, "threads": r.threads,
                           "first_call_s": r.first_call_s, "case_id": r.id, **where, **views[r.id].figures(),
                           **memory_figures(r)},
            "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": timer.get("min_samples"),
                        "max_time": timer.get("max_time"), "min_time": timer.get("min_time"), "warmup": True},
            "stats": pytest_benchmark_stats(r.samples_s, int(r.loops or 1)),
        })
    return {
        "machine_info": {
            "node": env.hostname, "processor": env.cpu_model, "system": env.os,
            "python_implementation": env.python_implementation, "python_version": env.python,
            "cpu": {"brand_raw": env.cpu_model, "count": env.cpu_logical},
        },
        "commit_info": {"id": git.get("commit"), "dirty": git.get("dirty")} if git else {},
        "benchmarks": benchmarks,
        "datetime": header.started,
        "version": PYTEST_BENCHMARK_VERSION,
    }


def bmf(res: Results) -> dict[str, Any]:
    """The run in the Bencher Metric Format: per benchmark, `latency` in nanoseconds, and each
    numeric derived figure the case has as a measure of its own (BMF_MEASURES).

    value is the median per call; lower and upper the 95 % interval of the median where the
    run computed one, else the fastest and slowest sample.
    """
    out: dict[str, Any] = {}
    views = run_views(res)
    for r in correct_records(res):
        ci = r.ci95_s
        lo, hi = ci if ci and None not in ci else (min(r.samples_s), max(r.samples_s))
        assert r.median_s is not None  # a correct record was timed
        figures, memory = views[r.id].figures(), memory_figures(r)
        out[benchmark_name(r)] = {"latency": {"value": r.median_s * NS_PER_S,
                                              "lower_value": lo * NS_PER_S, "upper_value": hi * NS_PER_S},
                                  **{measure: {"value": figures[name]} for name, measure in BMF_MEASURES.items()
                                     if figures[name] is not None},
                                  **{measure: {"value": memory[name]} for name, measure in MEMORY_FIGURES.items()
                                     if memory[name] is not None}}
    return out
