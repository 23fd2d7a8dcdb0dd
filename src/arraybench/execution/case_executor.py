"""Runs one Case inside a worker: inputs, transfer, build, time, check; returns its record."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from arraybench import gpu
from arraybench.backends.base import Backend, Unavailable
from arraybench.case import Case
from arraybench.hostspeed import measure_reference
from arraybench.record import CaseRecord, stats_fields
from arraybench.timing import Timer, TimerConfig
from arraybench.workloads import resolve_workload
from arraybench.workloads.base import Tolerance, Workload, leaves


def input_seed(run_seed: int, case: Case) -> int:
    """Seed for a case's inputs: shared by every backend, mode and dtype of one parameter point."""
    key = f"{run_seed}|{case.workload}|{sorted(case.params)}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "little")


def case_size(case: Case) -> Any:
    """The value of the workload's size parameter: the x axis of tables and plots."""
    try:
        return case.params_dict.get(resolve_workload(case.workload, case.source).size_param)
    except Exception:  # an unloadable user workload still gets a record
        return None


def blank_record(case: Case, status: str, error: str = "") -> CaseRecord:
    """The record of a case that has not reached (or never will reach) the timer."""
    return CaseRecord.blank({"id": case.id, **case.to_dict()}, status, error, size=case_size(case))


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".strip().rstrip(":")


# L2-cold samples of a GPU case whose inputs fit in L2: each is one call after a flush.
COLD_SAMPLES = 25
# Above this hot median the L2 state cannot move a case by more than a few per cent (an H100's
# 50 MB of L2 refills from HBM in ~20 µs), so no cold figure is taken.
COLD_MAX_MEDIAN_S = 1e-3


class CaseExecutor:
    """Holds a loaded backend and caches references, so a worker can run many cases."""

    def __init__(self, backend: Backend, cache: Path | None = None) -> None:
        self.backend = backend
        self.cache = cache
        self._refs: dict[tuple[str, int, str], tuple[Any, Tolerance]] = {}
        self.l2_bytes = gpu.l2_bytes() if backend.pipelined else None
        self.clocks = gpu.ClockWatch() if backend.pipelined else None

    def gpu_figures(self, fn: Any, args: tuple, host: tuple, timed_on_host: bool, median_s: float) -> dict[str, Any]:
        """Beside the hot median: the L2-cold figure where the inputs fit in L2, and the L2 size."""
        be, l2 = self.backend, self.l2_bytes
        in_bytes = sum(getattr(a, "nbytes", 0) for a in host)
        out: dict[str, Any] = {"l2_bytes": l2, "input_bytes": in_bytes}
        if not l2 or in_bytes > l2 or timed_on_host or median_s > COLD_MAX_MEDIAN_S:
            return out
        cold = sorted(be.time_cold(fn, args, l2) for _ in range(COLD_SAMPLES))
        out.update(cold_samples_s=tuple(cold), cold_median_s=cold[len(cold) // 2], cold_method=be.cold_method)
        return out

    def reference(self, wl: Workload, seed: int, case: Case, inputs: tuple) -> tuple[Any, Tolerance]:
        """The NumPy float64 reference and the tolerance calibrated from it (Workload.calibrate).

        Kept in memory for the next case (one: they can be big) and, with a cache directory,
        on disk for every worker of the run, as arrays only (np.load without pickle). Checks
        read a reference through `leaves`, so its arrays in that order are all they need.
        """
        key = (case.workload, seed, case.dtype)
        if key in self._refs:
            return self._refs[key]
        path = None
        if self.cache is not None:
            name = hashlib.sha256(repr((case.workload, case.source, seed, case.dtype)).encode()).hexdigest()[:24]
            path = self.cache / name
        if path is not None and path.with_suffix(".json").exists():
            with np.load(path.with_suffix(".npz"), allow_pickle=False) as z:
                arrays = [z[f"arr_{i}"] for i in range(len(z.files))]
            ref = arrays[0] if len(arrays) == 1 else tuple(arrays)
            tol = Tolerance(**json.loads(path.with_suffix(".json").read_text()))
        else:
            t0 = time.perf_counter()
            ref = wl.expected(inputs, case.params_dict)
            tol = wl.calibrate(inputs, ref, case.dtype, case.params_dict, time.perf_counter() - t0)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f"{name}.{os.getpid()}.tmp.npz")
                np.savez(tmp, *leaves(ref))
                os.replace(tmp, path.with_suffix(".npz"))
                # Written last: its presence says the arrays are whole (another worker may be reading).
                tmp = path.with_name(f"{name}.{os.getpid()}.tmp.json")
                tmp.write_text(json.dumps(dataclasses.asdict(tol)))
                os.replace(tmp, path.with_suffix(".json"))
        self._refs = {key: (ref, tol)}
        return ref, tol

    def run(self, case: Case, config: TimerConfig, run_seed: int) -> CaseRecord:
        """Measure `case`: its record, whatever happened (a failure is the case's result, never raised)."""
        got: dict[str, Any] = {}  # the record's fields as each phase fills them; kept when a later one fails
        try:
            wl = resolve_workload(case.workload, case.source)
            got["flops"], got["bytes"] = wl.work(case.params_dict, case.dtype)
            builder = wl.builder(case.backend, case.mode)
            if builder is None:
                reason = wl.unsupported.get((case.backend, case.mode), f"no {case.mode} implementation")
                return replace(blank_record(case, "unsupported", reason), **got)
            host, args, ref, tol = self._prepare(wl, case, run_seed, got)
            timing = self._time(wl, builder, case, config, host, args, got)
            self._check(wl, case, timing, ref, tol, got)
        except Unavailable as e:
            got.update(status="unsupported", error=str(e))
        except Exception as e:  # a user's or framework's failure is this case's result
            got.update(status="error", error=one_line(e), traceback=traceback.format_exc(limit=8))
        return replace(blank_record(case, "error"), **got)

    def _prepare(self, wl: Workload, case: Case, run_seed: int,
                 got: dict[str, Any]) -> tuple[tuple, tuple, Any, Tolerance]:
        """Host inputs, the reference and its tolerance, and the inputs on the device (transfer timed)."""
        be = self.backend
        seed = input_seed(run_seed, case)
        be.start_case()  # no peak memory or compiler state of an earlier case in this worker
        t0 = time.perf_counter()
        host = wl.host_inputs(seed, case.dtype, case.params_dict)
        got["inputs_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref, tol = self.reference(wl, seed, case, host)
        got["reference_s"] = time.perf_counter() - t0
        if wl.host_args:
            return host, host, ref, tol
        t0 = time.perf_counter()
        args = tuple(be.to_device(a) for a in host)
        be.sync(args)
        got["transfer_s"] = time.perf_counter() - t0
        return host, args, ref, tol

    def _time(self, wl: Workload, builder: Any, case: Case, config: TimerConfig, host: tuple, args: tuple,
              got: dict[str, Any]) -> Any:
        """Build the callable and time it (with the GPU's cold figure and clocks); returns the Timer's result."""
        be = self.backend
        try:
            t0 = time.perf_counter()
            fn = builder(be, **case.params_dict)
            got["build_s"] = time.perf_counter() - t0
            sync = be.sync if be.asynchronous else None
            if self.clocks:
                self.clocks.start()
            t0 = time.perf_counter()
            timing = Timer(fn, args, sync=sync, config=config, pipelined=be.pipelined,
                           reference=measure_reference).run()
            got["timer_s"] = time.perf_counter() - t0
            if self.clocks:
                got["gpu_clock"] = self.clocks.stop()
            if be.pipelined:
                got.update(self.gpu_figures(fn, args, host, wl.host_args, timing.measurement.median))
        except Exception as e:
            # Only the computation's own failures: a broken input or reference is an error.
            reason = wl.unsupported_because(e, case.backend)
            if reason is None:
                raise
            raise Unavailable(reason) from e
        return timing

    def _check(self, wl: Workload, case: Case, timing: Any, ref: Any, tol: Tolerance, got: dict[str, Any]) -> None:
        """Copy the output back, check it against the reference, and fill in the timer's figures."""
        be, m = self.backend, timing.measurement
        t0 = time.perf_counter()
        out = be.to_host(timing.last_output)
        got["to_host_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        check = wl.check(out, ref, case.dtype, case.params_dict, tol.value)
        got["check_s"] = time.perf_counter() - t0
        got.update(
            status="ok" if check.correct else "wrong",
            error=_wrong_reason(check) if not check.correct else (tol.source if tol.ill_conditioned else ""),
            first_call_s=timing.first_call_s,
            samples_s=tuple(m.samples),
            host_ref_s=timing.host_ref_s,
            loops=m.loops,
            half_width=m.half_width,
            stop=timing.stop,
            minor_faults_per_call=timing.minor_faults_per_call,
            warmup_calls=timing.warmup_calls,
            overhead_s=timing.overhead_s,
            latency_s=timing.latency_s,
            max_abs_err=check.max_abs_err,
            rel_err=check.rel_err,
            tolerance=check.tolerance,
            tolerance_source=tol.source,
            ill_conditioned=tol.ill_conditioned,
            correct=check.correct,
            peak_memory_bytes=be.peak_memory(),
            **stats_fields(m.summary()),
        )


def _wrong_reason(check: Any) -> str:
    if check.detail:
        return f"wrong result: {check.detail}"
    return f"wrong result: relative error {check.rel_err:.3g} > tolerance {check.tolerance:.3g}"
