"""The case record: the frozen, typed result of one case (or of one of its processes), and its field registry.

Every field is declared once, here, with its type, unit and meaning; the results file's case and
replicate lines, docs/results-format.md and the CSV columns all come from these declarations. A
record is built in one place (`CaseRecord.blank`) and extended with `dataclasses.replace`; no
reader changes one. Numbers a report derives from records live in report.view.CaseView.

One class serves both a process's record (a replicate line) and the case's record over its
processes (a case line): they share all but a few fields, and a case that fails in its first
process *is* that process's record. The fields that differ say so in their `scope`:
PROCESS fields are per process (on a case line they sit in `replicates`, one ProcessRecord
each), CASE fields exist only over processes. A record is read by attribute (`r.median_s`), so a
renamed field is a type error; `to_json` gives its fields as a dict where one is needed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arraybench.core.case import Case
from arraybench.core.device_tokens import device_count

# A case's statuses: those that ran and failed (never ranked), and the rest.
FAILED = ("wrong", "error", "timeout", "crashed")
STATUSES = ("ok", *FAILED, "unavailable", "unsupported")
# Where a field appears: on case and replicate lines alike, only per process, or only over processes.
BOTH, PROCESS, CASE = "both", "process", "case"
# How a case line's field comes from its processes' (merge_processes): their median. Fields of
# scope PROCESS have no value over processes; the rest are set by merge_processes itself.
MEDIAN = "median"


def described(unit: str, meaning: str, default: Any = None, scope: str = BOTH, required: bool = False,
              merge: str | None = None) -> Any:
    """A dataclass field with its registry entry: unit, meaning, where it appears, whether loading
    requires it, and how a case line merges it over processes (`merge`)."""
    return dataclasses.field(default=default, metadata={"unit": unit, "meaning": meaning, "scope": scope,
                                                         "required": required, "merge": merge})


@dataclass(frozen=True)
class FieldInfo:
    """One registry entry: what a field of a record is."""

    name: str
    type: str
    unit: str
    meaning: str
    scope: str
    required: bool
    merge: str | None = None


def registry(cls: type) -> tuple[FieldInfo, ...]:
    """The registry of a dataclass whose fields were declared with `described` (or the same metadata)."""
    return tuple(FieldInfo(f.name, str(f.type), f.metadata["unit"], f.metadata["meaning"], f.metadata["scope"],
                           f.metadata.get("required", False), f.metadata.get("merge"))
                 for f in dataclasses.fields(cls))


@dataclass(frozen=True)
class ProcessRecord:
    """What a case line keeps of each of its processes (`replicates`), in the order they ran."""

    n_samples: int = described("count", "how many of the case's `samples_s` are this process's: the next `n_samples`",
                            default=0)
    round: int | None = described("", "the round it ran in (0, 1, …): a round runs one process of every case of "
                                      "every environment in one shuffled order, so the processes of a round "
                                      "shared the host's state (`compare RUN@A RUN@B` pairs them)")
    loops: int | None = described("calls", "calls per sample, calibrated so a sample lasts ≥ 2 ms and ≥ 1000× the "
                                        "clock+sync cost")
    median_s: float | None = described("s", "this process's median per-call time")
    half_width: float | None = described("ratio", "its median's 95 % interval, relative")
    stop: str | None = described("", "why sampling stopped: `target` (the interval reached ±`target_half_width`), "
                                  "`max_time` or `max_samples`; `budget`: a long call stopped at `budget_time` "
                                  "with fewer than `min_samples_at_cap` samples (the shortfall is in `n_samples`); "
                                  "`group`: stopped by its group of environments taking turns before its own rule "
                                  "was met (otherwise the rule met when it stopped: a process held by a close one "
                                  "of its group samples on past it)")
    bimodal: bool | None = described("", "its samples split into two modes more than 25 % apart; its median is "
                                        "the larger mode's (the faster on a tie), not a value between them")
    layout: dict[str, Any] | None = described("", "where this process placed the case's inputs: `input_offsets` "
                                                 "(bytes past a page boundary, one per input), and the worker's "
                                                 "`heap_pad_bytes` and `env_pad_bytes`, and the `seed` they were "
                                                 "drawn from (the same for each environment's worker of a "
                                                 "round); `null` under `--fixed-layout`")
    warmup_calls: int | None = described("calls", "calls made to warm up before sampling")
    visits: int | None = described("count", "runs of several environments (`--env`): the stretches its sampling was "
                                          "cut into, each environment's process of the case taking its turn "
                                          "between them (A, B, A, B); `null`: one stretch")
    outlasted_s: float | None = described("s", "seconds it sampled past its stopping rule while a slow spell of "
                                             "the host covered its samples, waiting for the spell to end "
                                             "(`spell_wait`); `null`: it stopped at its rule")
    overhead_s: float | None = described("s", "the clock+sync cost of one sample, measured before timing")
    first_call_s: float | None = described("s", "its first call, timed alone")
    transfer_s: float | None = described("s", "its host→device copy of the inputs")
    to_host_s: float | None = described("s", "its device→host copy of the output")
    build_s: float | None = described("s", "building its callable")
    latency_s: float | None = described("s", "its one-call latency (GPU cases)")
    minor_faults_per_call: float | None = described("faults", "its minor page faults per timed call")
    peak_memory_bytes: int | None = described("bytes", "the most memory in use at once during its calls")
    memory_bytes: int | None = described("bytes", "its steady call's memory: the inputs and what the call held "
                                                  "beyond them")
    first_call_memory_bytes: int | None = described("bytes", "the same for its first call")
    memory_before_bytes: int | None = described("bytes", "memory in use before its first call")
    reserved_memory_bytes: int | None = described("bytes", "what the framework's pool held after its steady call")
    wall_s: float | None = described("s", "what measuring the case in this process took, worker start-up included "
                                       "where it had one")
    inputs_s: float | None = described("s", "making the host inputs")
    reference_s: float | None = described("s", "computing (or loading) the NumPy float64 reference")
    timer_s: float | None = described("s", "the timer: first call, warm-up, calibration and samples")
    check_s: float | None = described("s", "checking the output against the reference")
    startup_s: float | None = described("s", "starting the worker this process ran in, where this case was its "
                                          "first (interpreter, imports, the backend's empty call)")
    inputs_source: str | None = described("", "`made` (this process drew the inputs and put them in the run's "
                                             "cache) or `cache` (it read them from there)")
    reference_source: str | None = described("", "`computed` (this process made the reference or sketch) or "
                                                "`cache` (read from the run's cache)")
    first_call_cache: str | None = described("", "JIT modes with a persistent compile cache: `cold` (the first "
                                                "call compiled and stored its code) or `warm` (it was served from "
                                                "the run's compile cache); `null` without one")
    ended_at: float | None = described("s", "when it ended, in seconds since the epoch by the clock of the arraybench "
                                          "process that ran its round: how far apart in time a case's processes "
                                          "ran (more_rounds.crowded); `null` in files written before it")

    @classmethod
    def of(cls, rec: CaseRecord) -> ProcessRecord:
        """The summary a case line keeps of one process's record."""
        return cls(n_samples=len(rec.samples_s), **{f.name: getattr(rec, f.name) for f in PROCESS_FIELDS[1:]})

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ProcessRecord:
        return cls(**{f.name: obj[f.name] for f in PROCESS_FIELDS if f.name in obj})

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class CaseRecord:
    """The result of one case: its spec, status, raw samples, statistics, check and where it ran."""

    # What was measured (Case.to_dict, plus the id and size).
    id: str = described("", "stable id of the case spec (workload, params, backend, mode, dtype, device, threads, "
                         "and `@ENV` in a run of several environments): the key for `--resume` and `compare`",
                        default="", required=True)
    workload: str = described("", "the workload", default="", required=True)
    params: dict[str, Any] = described("", "all the workload's parameters", default=None, required=True)
    backend: str = described("", "the framework", default="", required=True)
    mode: str = described("", "`eager`, `jit` or `fd`", default="", required=True)
    dtype: str = described("", "`float32` or `float64`", default="", required=True)
    threads: int = described("threads", "the threads the worker was limited to", default=1)
    device: str = described("", "the device token (devices.py): `KIND` (one device: `cpu`, `gpu`, `tpu`), `KIND:N` "
                                "(the first N), `KIND:I,J,...` (those ids) or `KIND:all`", default="cpu")
    n_devices: int | None = described("devices", "how many devices the case's computation spanned: 1 for every "
                                                 "single-device workload; `null` for a `KIND:all` case that never "
                                                 "reached its framework", default=1)
    source: str | None = described("", "for user workloads, the file that defines it; otherwise `null`")
    env: str | None = described("", "the Python environment (`--env NAME`) that measured it, whose interpreter "
                                    "and framework versions the header's `environments` gives; `null` for a run "
                                    "in one environment (the id then has no `@NAME`)")
    size: Any = described("", "the value of the workload's size parameter (the x axis of tables and plots)")
    # What happened.
    status: str = described("", "`ok`, `wrong` (ran, failed its check), `error` (raised), `timeout` (past `--timeout`, "
                             "worker killed), `crashed` (the worker died: signal and last stderr line in `error`), "
                             "`unavailable` (framework or device absent), `unsupported` (the workload cannot be "
                             "expressed on this backend/mode); on a case line the worst any process saw",
                         default="error", required=True)
    error: str = described("", "one line: the reason for any status but `ok` (for `ok`, a note on an ill-conditioned "
                            "reference, else empty)", default="")
    traceback: str | None = described("", "a short traceback, for status `error`")
    # Times outside the timed region (on a case line: the median over processes).
    first_call_s: float | None = described("s", "the first call, timed alone: tracing + compilation + one run for "
                                             "JIT modes; on a case line the median over the processes whose "
                                             "first call was not served from the run's compile cache")
    first_call_warm_s: float | None = described("s", "the median first call of the processes whose compiled code "
                                                  "came from the run's compile cache (`first_call_cache` `warm`)",
                                                scope=CASE)
    transfer_s: float | None = described("s", "host→device copy of all inputs (synced), outside the timed region",
                                         merge=MEDIAN)
    to_host_s: float | None = described("s", "device→host copy of the output, outside the timed region", merge=MEDIAN)
    build_s: float | None = described("s", "building the callable (creating the JIT wrapper), outside the timed region",
                                      merge=MEDIAN)
    latency_s: float | None = described("s", "GPU cases: wall time of one call followed by its own sync (launch, "
                                          "kernel, sync), median of up to 21 calls within 0.5 s; `null` on the CPU, "
                                          "where every timed call is synced already", merge=MEDIAN)
    minor_faults_per_call: float | None = described("faults", "minor page faults per timed call (`getrusage`, the "
                                                           "whole process)", merge=MEDIAN)
    # The samples and their statistics.
    samples_s: tuple[float, ...] = described("s", "raw per-call seconds of every process, process after process: each "
                                               "the mean of `loops` back-to-back synced calls", default=())
    host_ref_s: tuple[float, ...] | None = described(
        "s", "beside each sample of `samples_s`, in the same order: one call of the host's reference kernel (the "
             "geometric mean of its timings just before and just after the sample), which tells how fast the host ran "
             "then (hostspeed.py); a diagnostic, not used to correct the samples; `null` where a case was measured "
             "without it")
    cpu_wait: tuple[float, ...] | None = described(
        "ratio", "beside each sample of `samples_s`, in the same order: how long the process's threads waited, "
                 "runnable, for a CPU during the sample, over the sample's time (Linux schedstat: their run delay), "
                 "where their waits were long (0.5 ms or more each on average, another process's timeslice; 0 "
                 "where they were a framework's own threads handing work to each other): a neighbour on a core "
                 "its threads need, which the one-thread `host_ref_s` does not see where the scheduler runs it on "
                 "another core (hostspeed.ThreadWaits); `null` where a case was measured without it")
    memory_ref_s: tuple[float, ...] | None = described(
        "s", "a copy between two buffers as large as the last-level cache, within a small share of memory and "
             "of `--memory-limit` (hostspeed.plan_memory_reference), timed before each process's samples and "
             "after them (two per process, in order): whether the memory system was contended then, which the "
             "CPU-bound `host_ref_s` cannot see; `null` where its buffers did not fit")
    wake_ref_s: tuple[float, ...] | None = described(
        "s", "one round trip between two threads of the worker on two of its CPUs, each waking the other (the "
             "median of 40), timed before each process's samples and after them (two per process, in order): how "
             "fast the host woke a thread on another CPU then, which a framework's pool does on every call "
             "(hostspeed.measure_wake_reference); `null` with one CPU")
    pool_ref_s: tuple[float, ...] | None = described(
        "s", "NumPy's 100² float32 matmul on the worker's threads (the median of 200 calls, or of those made in "
             "50 ms), timed once as the worker started, before its framework was imported, with every other "
             "worker stopped (one per process): whether the host left a pool's threads spinning, ready for the "
             "next call, or made each call wake them (hostspeed.measure_pool_reference); `null` with one thread "
             "or off the CPU")
    median_s: float | None = described("s", "one process: the median of its samples; a case: the median of its "
                                         "processes' medians (the geometric mean of the middle two for an even "
                                         "count): a typical process's time, which one process in a slow state "
                                         "does not move")
    ci95_s: tuple[float, float] | None = described(
        "s", "one process: its median's distribution-free order-statistics interval; a case: the 95 % interval in "
             "which a repeat run's `median_s` is expected, `median_s · exp(±t · √2 · se)` (se from a hierarchical "
             "bootstrap, times the median's √MEDIAN_VARIANCE_FACTOR; with one process and no prior, that process's "
             "own interval). As written, from the case's "
             "own processes (t with `n_processes − 1` degrees of freedom); as read (report, compare, exports), with "
             "se pooled over the run's cases (pooling.py; t with the prior's degrees of freedom added). See "
             "how-a-number-is-made.md")
    iqr_s: float | None = described("s", "interquartile range of the (pooled) samples")
    min_s: float | None = described("s", "smallest sample")
    mean_s: float | None = described("s", "mean of the samples")
    std_s: float | None = described("s", "standard deviation of the samples")
    n_samples: int | None = described("count", "number of samples (all processes)")
    noisy: bool | None = described("", "IQR > 10 % of the median, or processes differing by more than 10 %")
    n_processes: int | None = described("count", "how many processes measured the case", scope=CASE)
    stopped: str | None = described("", "why its rounds ended where its question (between the run's environments, "
                                        "or which backend·mode is fastest at its size) stayed open after the "
                                        "planned processes: `decided`, `near tie` (no interval reaching 1.5× "
                                        "either way, and too close to decide within twice the maximum rounds), "
                                        "`budget` (`--budget` spent) or `max rounds`; "
                                        "`null`: the planned processes only", scope=CASE)
    process_spread: float | None = described("ratio", "the slowest process's median over the fastest's, minus 1",
                                          scope=CASE)
    replicates: tuple[ProcessRecord, ...] = described("", "one entry per process, in order (see below)", default=(),
                                                   scope=CASE)
    # One process's timer details (on a case line: in `replicates`).
    round: int | None = described("", "the round the process ran in (see replicates)", scope=PROCESS)
    loops: int | None = described("calls", "calls per sample", scope=PROCESS)
    half_width: float | None = described("ratio", "the median's 95 % interval, relative", scope=PROCESS)
    stop: str | None = described("", "why sampling stopped: `target`, `max_time`, `max_samples` or `budget` "
                                  "(fewer samples than `min_samples_at_cap`)", scope=PROCESS)
    bimodal: bool | None = described("", "the process's samples split into two modes (its median is one mode's)",
                                     scope=PROCESS)
    layout: dict[str, Any] | None = described("", "where the process placed the inputs (offsets within a page) and "
                                                 "its heap and environment pads", scope=PROCESS)
    warmup_calls: int | None = described("calls", "calls made to warm up", scope=PROCESS)
    visits: int | None = described("count", "`--env`: the turns its sampling took, alternating with the other "
                                          "environments' processes of the case", scope=PROCESS)
    outlasted_s: float | None = described("s", "sampling past its rule to outlast a slow spell of the host",
                                          scope=PROCESS)
    overhead_s: float | None = described("s", "clock+sync cost of one sample (a case: its processes' median)",
                                         merge=MEDIAN)
    # Where one process spent its time (on a case line: in `replicates`; `wall_s` summed).
    inputs_s: float | None = described("s", "making the host inputs", scope=PROCESS)
    reference_s: float | None = described("s", "computing (or loading) the reference", scope=PROCESS)
    timer_s: float | None = described("s", "the timer: first call, warm-up, calibration and samples", scope=PROCESS)
    check_s: float | None = described("s", "checking the output", scope=PROCESS)
    startup_s: float | None = described("s", "starting the worker, where this case was its first", scope=PROCESS)
    inputs_source: str | None = described("", "`made` or `cache`: whether the process drew the inputs or read "
                                             "them from the run's cache", scope=PROCESS)
    reference_source: str | None = described("", "`computed` or `cache`: the same for the reference", scope=PROCESS)
    first_call_cache: str | None = described("", "`cold`, `warm` or `null`: the first call against the run's "
                                                "compile cache", scope=PROCESS)
    ended_at: float | None = described("s", "when the process ended, in seconds since the epoch (see replicates)",
                                       scope=PROCESS)
    wall_s: float | None = described("s", "what measuring the case took, worker start-up included where it had one; "
                                       "on a case line summed over its processes")
    # Work and the check.
    flops: float | None = described("FLOP", "work of one call, for GFLOP/s (`null` when not declared)")
    bytes: float | None = described("bytes", "bytes one call moves, for GB/s (`null` when not declared)")
    max_abs_err: float | None = described("", "max \\|out − ref\\| against the NumPy float64 reference")
    rel_err: float | None = described("ratio", "normwise relative error, max \\|out − ref\\| / max \\|ref\\| (a "
                                            "workload may define its own: see its `check`)")
    tolerance: float | None = described("ratio", "the dtype-aware tolerance `rel_err` is held to")
    tolerance_source: str | None = described("", "how the tolerance was set (calibrated from the reference, "
                                                 "or declared)")
    ill_conditioned: bool | None = described("", "the reference is ill-conditioned: the tolerance was widened")
    correct: bool | None = described("", "the verdict of the check")
    check_method: str | None = described("", "how the output was checked: `full` (every element against the "
                                            "float64 reference) or the workload's O(output) sketch (matmul: "
                                            "Freivalds), with what it catches")
    # Memory (docs/memory.md; on a case line each the median over processes, which `replicates` list).
    memory_bytes: int | None = described(
        "bytes", "what one steady call needs: the bytes of its inputs plus the most it held at once beyond what "
                 "was in use before it (its output, intermediates, a framework's per-call state). The call "
                 "measured is the process's second, alone, no earlier output alive. Read from the framework's "
                 "own counters where it keeps them (a GPU; TensorFlow's oneDNN pool on the CPU), else from the "
                 "worker's resident set (`memory_method`); `null` where not measured", merge=MEDIAN)
    first_call_memory_bytes: int | None = described(
        "bytes", "the same for the first call: inputs plus the most the first call (tracing, compilation and one "
                 "run) held beyond what was in use before it", merge=MEDIAN)
    memory_before_bytes: int | None = described(
        "bytes", "in use before the first call: the whole worker's resident set (interpreter, framework, "
                 "inputs, the harness's reference), or where the framework's counters are read, its allocations "
                 "(inputs included)", merge=MEDIAN)
    peak_memory_bytes: int | None = described(
        "bytes", "the most in use at once during the measured calls, everything in use counted: the worker's "
                 "resident set, or the framework's allocations where its counters are read (not the CUDA "
                 "context); JAX's on a GPU only where the case set a new high for its worker, since its peak "
                 "cannot be reset", merge=MEDIAN)
    reserved_memory_bytes: int | None = described(
        "bytes", "what the framework's memory pool held from the device after the steady call, in use or not "
                 "(PyTorch's caching allocator at its peak, CuPy's pool, JAX's `pool_bytes`); `null` where it "
                 "tells none (every framework on the CPU, TensorFlow)", merge=MEDIAN)
    memory_method: str | None = described("", "how the memory figures were read, or why they were not")
    # The GPU.
    cold_samples_s: tuple[float, ...] | None = described(
        "s", "GPU cases whose inputs fit in L2 and whose call is under 1 ms: one call each after a 2×L2 write "
             "flushed the cache (25 per process, pooled)")
    cold_median_s: float | None = described("s", "the median of `cold_samples_s`")
    cold_method: str | None = described("", "how the cold calls were timed: CUDA events (torch, CuPy) or the wall "
                                         "clock with the sync (JAX)")
    l2_bytes: int | None = described("bytes", "GPU cases: the GPU's L2 size (CUDA driver)")
    input_bytes: int | None = described("bytes", "the bytes of the case's inputs")
    gpu_clock: dict[str, Any] | None = described("", "GPU cases: `sm_mhz_before`, `sm_mhz_after` (NVML), `reasons` "
                                                  "(slowdown reasons seen after the case) and `throttled`; over "
                                                  "processes, a throttled one if any")
    # Where it ran.
    backend_info: dict[str, Any] | None = described(
        "", "what the worker verified after import: `version`, `threads_requested`, `threads_verified`, "
            "`cpu_affinity`, `blas` (threadpoolctl's pools), `allocator` (what the worker did to the C allocator), "
            "the framework's precision settings (`x64`, `tf32`, ...), `devices`, `startup` (s per phase of the "
            "worker's start) and, from the first worker of its configuration, `empty_call_s` (floors.py) for "
            "each mode the run's cases of that configuration use")
    machine: str | None = described("", "the host name of the machine the case ran on")
    worker: str | None = described("", "a cluster run only: the name of the Dask worker that ran it")

    @classmethod
    def blank(cls, spec: Mapping[str, Any], status: str, error: str = "", size: Any = None) -> CaseRecord:
        """The one constructor: a record of `spec` (Case.to_dict plus its id) with no measurement yet."""
        params = dict(spec["params"])
        return cls(id=spec["id"], workload=spec["workload"], params=params, backend=spec["backend"],
                   mode=spec["mode"], dtype=spec["dtype"], threads=spec["threads"],
                   device=spec.get("device", "cpu"), n_devices=device_count(spec.get("device", "cpu")),
                   source=spec.get("source"), env=spec.get("env") or None, size=size,
                   status=status, error=error)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> CaseRecord:
        """A record from a case or replicate line of the current schema (see results.upgrade_*)."""
        kw: dict[str, Any] = {f.name: obj[f.name] for f in FIELDS if f.name in obj}
        for f in FIELDS:  # JSON has lists: the tuple fields (the registry's types say which) are tuples again
            if f.type.startswith("tuple[") and kw.get(f.name) is not None:
                kw[f.name] = tuple(kw[f.name])
        kw["samples_s"] = kw.get("samples_s") or ()
        kw["replicates"] = tuple(ProcessRecord.from_json(p) for p in kw.get("replicates") or ())
        kw["params"] = dict(kw.get("params") or {})
        return cls(**kw)

    def to_case(self) -> Case:
        """The case this record measured: its spec (Case.from_dict of its fields)."""
        return Case(workload=self.workload, params=tuple(sorted(self.params.items())), backend=self.backend,
                    mode=self.mode, dtype=self.dtype, threads=int(self.threads), device=self.device,
                    source=self.source, env=self.env or "")

    def to_json(self) -> dict[str, Any]:
        """Every field, in registry order: what a case or replicate line holds besides its `type`."""
        out = {f.name: getattr(self, f.name) for f in FIELDS}
        for name in ("samples_s", "cold_samples_s", "ci95_s", "host_ref_s", "cpu_wait", "wake_ref_s",
                     "pool_ref_s"):
            if out[name] is not None:
                out[name] = list(out[name])
        out["replicates"] = [p.to_json() for p in self.replicates]
        return out


FIELDS: tuple[FieldInfo, ...] = registry(CaseRecord)
PROCESS_FIELDS: tuple[FieldInfo, ...] = registry(ProcessRecord)
REQUIRED = tuple(f.name for f in FIELDS if f.required)


def stats_fields(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A Measurement's or Replicated's `summary()` as record fields (its interval as a tuple)."""
    return {**summary, "ci95_s": tuple(summary["ci95_s"])}


# The fields that are one value each (no list, tuple or mapping): a row of a flat table, e.g. a DataFrame.
FLAT_FIELDS = tuple(f.name for f in FIELDS if not f.type.startswith(("dict", "tuple")))
