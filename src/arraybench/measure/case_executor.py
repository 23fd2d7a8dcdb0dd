"""Runs one Case inside a worker: inputs, transfer, build, time, check; returns its record."""

from __future__ import annotations

import dataclasses
import hashlib
import time
import traceback
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from arraybench.backends.backend import Backend, Unavailable
from arraybench.core.case import Case, base_id
from arraybench.errors import one_line
from arraybench.machine import nvidia
from arraybench.measure.call_memory import Counter, Phases, counter_for, figures
from arraybench.measure.casecache import CaseCache, Entry
from arraybench.measure.compilecache import entries, first_call_state, uses_compile_cache
from arraybench.measure.hostspeed import (
    measure_memory_reference,
    measure_reference,
    measure_wake_reference,
    thread_waits,
)
from arraybench.measure.timing import VISIT_S, Pause, Timer, TimerConfig
from arraybench.results.record import CaseRecord, stats_fields
from arraybench.workloads import blank_record, resolve_workload
from arraybench.workloads.workload import Tolerance, Workload, leaves

PAGE, LINE = 4096, 64


def placed(a: np.ndarray, offset: int) -> np.ndarray:
    """A copy of `a` in fresh memory of its own, its first byte `offset` bytes past a page boundary."""
    buf = np.empty(a.nbytes + 2 * PAGE, dtype=np.uint8)
    start = (-buf.ctypes.data) % PAGE + offset
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def input_seed(run_seed: int, case: Case) -> int:
    """Seed for a case's inputs: shared by every backend, mode and dtype of one parameter point."""
    key = f"{run_seed}|{case.workload}|{sorted(case.params)}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "little")


# L2-cold samples of a GPU case whose inputs fit in L2: each is one call after a flush.
COLD_SAMPLES = 25
# Above this hot median the L2 state cannot move a case by more than a few per cent (an H100's
# 50 MB of L2 refills from HBM in ~20 µs), so no cold figure is taken.
COLD_MAX_MEDIAN_S = 1e-3


@dataclass(frozen=True)
class Expected:
    """What a case's output is checked against: the full reference's arrays (`ref`, in `leaves`
    order) or a sketch's (`sketch`: Workload.sketch), its tolerance, and how this process got it."""

    ref: Any
    sketch: dict[str, Any] | None
    tolerance: Tolerance
    method: str
    source: str  # "computed" by this process, or read from the run's "cache"


def cache_name(kind: str, case: Case, seed: int) -> str:
    """The cache entry of `kind` for a case's parameter point and dtype (shared by its backends and modes),
    in its Python environment: an environment's variables (`--env-var`) may change what its inputs are."""
    key = (case.workload, case.source, seed, case.dtype) + ((case.env,) if case.env else ())
    return f"{kind}-" + hashlib.sha256(repr(key).encode()).hexdigest()[:24]


class Draft:
    """A case's record as the phases fill it in, each field by its name (`dataclasses.replace`, which
    mypy checks): what the phases before a failure filled stays in the record that reports it."""

    def __init__(self, record: CaseRecord) -> None:
        self.record = record


class CaseExecutor:
    """Holds a loaded backend and the run's case cache (casecache.py), so a worker can run many cases.

    `full_check`: check every case against the full reference, even where its workload has a
    cheaper sketch (`--full-check`). `compile_cache`: this backend's persistent compile cache in the
    run's cache (compilecache.py), whose growth during the first call says cold or warm. `layout`:
    the heap and environment pads of this worker; with it, each case's inputs are placed at random
    page offsets (`inputs`); None under `--fixed-layout`.
    """

    def __init__(self, backend: Backend, cache: CaseCache | None = None, full_check: bool = False,
                 compile_cache: Path | None = None, layout: dict[str, Any] | None = None) -> None:
        self.backend = backend
        # The worker's layout (child.perturb_layout); None: one fixed layout, inputs where NumPy puts them.
        self.layout = layout
        self.layout_rng = np.random.default_rng() if layout is not None else None
        self.layout_seed = layout.get("seed") if layout is not None else None
        self.cache = cache or CaseCache(None)
        self.full_check = full_check
        self.compile_cache = compile_cache
        self.l2_bytes = nvidia.l2_bytes() if backend.pipelined else None
        self.clocks = nvidia.ClockWatch() if backend.pipelined else None
        # How long this worker's threads waited for a CPU, read beside every sample (hostspeed.ThreadWaits).
        self.waits = thread_waits()

    @cached_property
    def memory(self) -> Counter | str:
        """What reads the memory of this worker's cases' calls (call_memory.py), or why nothing can here;
        asked once, at the first case timed."""
        return counter_for(self.backend)

    def gpu_figures(self, fn: Any, args: tuple, timed_on_host: bool, median_s: float,
                    record: CaseRecord) -> CaseRecord:
        """Beside the hot median: the L2-cold figure where the inputs fit in L2, and the L2 size."""
        be, l2 = self.backend, self.l2_bytes
        record = replace(record, l2_bytes=l2)
        if not l2 or (record.input_bytes or 0) > l2 or timed_on_host or median_s > COLD_MAX_MEDIAN_S:
            return record
        cold = sorted(be.time_cold(fn, args, l2) for _ in range(COLD_SAMPLES))
        return replace(record, cold_samples_s=tuple(cold), cold_median_s=cold[len(cold) // 2],
                       cold_method=be.cold_method)

    def inputs(self, wl: Workload, case: Case, seed: int) -> tuple[tuple, Entry, list[int] | None]:
        """The case's host inputs, in memory of this process's own, the cache entry they came from,
        and the page offsets they were placed at (None: one fixed layout).

        Made once per run (the first process to need them writes them to the cache); a process
        that reads them copies them out of the mapped file, so every backend times inputs in
        ordinary anonymous memory, writable, as it would had it made them. Each copy starts at a
        random multiple of 64 bytes past a page boundary (Stabilizer's idea): where arrays sit
        relative to pages moves a kernel's time (4K aliasing between inputs and output), and a
        layout fixed for a whole run moves all its processes together, which no interval sees.
        """
        entry = self.cache.get(cache_name("in", case, seed), lambda: (
            {str(i): a for i, a in enumerate(wl.host_inputs(seed, case.dtype, case.params_dict))}, {}))
        ordered = [entry.arrays[k] for k in sorted(entry.arrays, key=int)]
        if self.layout_rng is None:
            return tuple(ordered if entry.made else (np.array(a) for a in ordered)), entry, None
        # With the round's layout seed, each case's offsets are the same in every environment's worker.
        rng = self.layout_rng if self.layout_seed is None else np.random.default_rng(
            [self.layout_seed, int.from_bytes(hashlib.sha256(base_id(case.id, case.env).encode()).digest()[:8], "big")])
        offsets = [int(rng.integers(0, PAGE // LINE)) * LINE for _ in ordered]
        host = tuple(placed(a, off) if isinstance(a, np.ndarray) and not a.dtype.hasobject else a
                     for a, off in zip(ordered, offsets, strict=True))
        return host, entry, offsets

    def expected(self, wl: Workload, case: Case, seed: int, host: tuple) -> Expected:
        """The float64 reference and its calibrated tolerance, or the workload's sketch where the full
        reference costs more than the work (Workload.sketch); computed once per run, then read."""
        params = case.params_dict
        sketch = wl.sketch if wl.sketch is not None and not self.full_check and wl.sketch.applies(params) else None

        def make() -> tuple[dict[str, Any], dict[str, Any]]:
            t0 = time.perf_counter()
            if sketch is not None:
                arrays = sketch.expect(host, case.dtype, params, np.random.default_rng(seed))
                tol = Tolerance(float(arrays["tolerance"]), "the sketch's threshold, calibrated on sampled rows")
                return arrays, {"tolerance": dataclasses.asdict(tol), "method": sketch.describe(arrays)}
            ref = wl.expected(host, params)
            tol = wl.calibrate(host, ref, case.dtype, params, time.perf_counter() - t0, seed)
            # As arrays only (np.load without pickle): checks read a reference through `leaves`.
            return ({f"{i:04d}": a for i, a in enumerate(leaves(ref))},
                    {"tolerance": dataclasses.asdict(tol), "method": "full: every element against the reference"})

        entry = self.cache.get(cache_name("sk" if sketch is not None else "ref", case, seed), make)
        tol = Tolerance(**entry.meta["tolerance"])
        source = "computed" if entry.made else "cache"
        if sketch is not None:
            return Expected(None, entry.arrays, tol, entry.meta["method"], source)
        arrays = [entry.arrays[k] for k in sorted(entry.arrays)]
        return Expected(arrays[0] if len(arrays) == 1 else tuple(arrays), None, tol, entry.meta["method"], source)

    def run(self, case: Case, config: TimerConfig, run_seed: int, pause: Pause | None = None,
            visit_time: float = VISIT_S, level: float | None = None) -> CaseRecord:
        """Measure `case`: its record, whatever happened (a failure is the case's result, never raised).
        With `pause`, its sampling is cut into visits of `visit_time` seconds with `pause(turn)` before
        and between them (Timer), while its other environments' processes take their turns. `level`:
        the host's full-speed reference as the parent last saw it (Timer: sampling on through a spell)."""
        draft = Draft(blank_record(case, "error"))
        try:
            wl = resolve_workload(case.workload, case.source)
            flops, bytes_ = wl.work(case.params_dict, case.dtype)
            draft.record = replace(draft.record, flops=flops, bytes=bytes_)
            builder = wl.builder(case.backend, case.mode)
            if builder is None:
                reason = wl.unsupported.get((case.backend, case.mode), f"no {case.mode} implementation")
                return replace(draft.record, status="unsupported", error=reason)
            args, expected = self._prepare(wl, case, run_seed, draft)
            timing = self._time(wl, builder, case, config, args, draft, pause, visit_time, level)
            self._check(wl, case, timing, expected, draft)
        except Unavailable as e:
            return replace(draft.record, status="unsupported", error=str(e))
        except Exception as e:  # a user's or framework's failure is this case's result
            return replace(draft.record, status="error", error=one_line(e), traceback=traceback.format_exc(limit=8))
        return draft.record

    def _prepare(self, wl: Workload, case: Case, run_seed: int, draft: Draft) -> tuple[tuple, Expected]:
        """The inputs on the device (transfer timed) and what the output is checked against."""
        be = self.backend
        seed = input_seed(run_seed, case)
        be.start_case()  # no peak memory or compiler state of an earlier case in this worker
        draft.record = replace(draft.record, n_devices=be.n_devices)
        t0 = time.perf_counter()
        host, entry, offsets = self.inputs(wl, case, seed)
        draft.record = replace(draft.record, inputs_s=time.perf_counter() - t0,
                               inputs_source="made" if entry.made else "cache",
                               input_bytes=sum(getattr(a, "nbytes", 0) for a in host),
                               layout=None if offsets is None else {"input_offsets": offsets, **(self.layout or {})})
        t0 = time.perf_counter()
        expected = self.expected(wl, case, seed, host)
        draft.record = replace(draft.record, reference_s=time.perf_counter() - t0,
                               reference_source=expected.source, check_method=expected.method)
        if wl.host_args:
            return host, expected
        t0 = time.perf_counter()
        if wl.spread is not None:
            args = tuple(be.to_devices(a, how) for a, how in zip(host, wl.spread.inputs, strict=True))
        else:
            args = tuple(be.to_device(a) for a in host)
        be.sync(args)
        draft.record = replace(draft.record, transfer_s=time.perf_counter() - t0)
        return args, expected

    def _time(self, wl: Workload, builder: Any, case: Case, config: TimerConfig, args: tuple,
              draft: Draft, pause: Pause | None = None, visit_time: float = VISIT_S,
              level: float | None = None) -> Any:
        """Build the callable and time it (with the GPU's cold figure and clocks); returns the Timer's result."""
        be = self.backend
        try:
            t0 = time.perf_counter()
            if case.mode != "eager":
                be.prepare_jit()
            fn = builder(be, **case.params_dict)
            draft.record = replace(draft.record, build_s=time.perf_counter() - t0)
            sync = be.sync if be.asynchronous else None
            if self.clocks:
                self.clocks.start()
            cc = self.compile_cache if uses_compile_cache(be.name, case.mode) else None
            before = entries(cc) if cc is not None else 0
            # Outside timer_s: the copies (and the worker's first making of their buffers) are not the timer's.
            memory_before = measure_memory_reference()
            wake_before = measure_wake_reference()
            watch = self.memory if isinstance(self.memory, str) else Phases(self.memory)
            t0 = time.perf_counter()
            try:
                timing = Timer(fn, args, sync=sync, config=config, pipelined=be.pipelined,
                               reference=measure_reference, pause=pause, visit_time=visit_time,
                               waits=self.waits, memory=watch if isinstance(watch, Phases) else None,
                               level=level).run()
            finally:  # the allocator's steady state back, whatever the calls raised
                if isinstance(watch, Phases):
                    watch.close()
            timer_s = time.perf_counter() - t0 - timing.paused_s  # the other process's turns are not ours
            wake_after = measure_wake_reference()
            memory_after = measure_memory_reference()
            draft.record = replace(
                draft.record, timer_s=timer_s,
                memory_ref_s=None if memory_before is None or memory_after is None else (memory_before, memory_after),
                wake_ref_s=None if wake_before is None or wake_after is None else (wake_before, wake_after),
                # Warm-up and samples reuse the first call's shapes: any new entry is the first call's.
                first_call_cache=first_call_state(before, entries(cc) if cc is not None else 0, cc is not None),
                **figures(watch, self._inputs_held(wl, draft.record)))
            if self.clocks:
                draft.record = replace(draft.record, gpu_clock=self.clocks.stop())
            if be.pipelined:
                draft.record = self.gpu_figures(fn, args, wl.host_args, timing.measurement.median, draft.record)
        except Exception as e:
            # Only the computation's own failures: a broken input or reference is an error.
            reason = wl.unsupported_because(e, case.backend)
            if reason is None:
                raise
            raise Unavailable(reason) from e
        return timing

    def _inputs_held(self, wl: Workload, record: CaseRecord) -> int:
        """The bytes of the inputs a call reads where it reads them: none on a device for a workload
        fed host arrays (a transfer: moving them is its work), else all of them."""
        if wl.host_args and self.backend.kind != "cpu":
            return 0
        return record.input_bytes or 0

    def _check(self, wl: Workload, case: Case, timing: Any, expected: Expected, draft: Draft) -> None:
        """Copy the output back, check it against the reference, and fill in the timer's figures."""
        be, m = self.backend, timing.measurement
        t0 = time.perf_counter()
        out = be.to_host(timing.last_output) if wl.spread is None else be.gather(timing.last_output,
                                                                                  wl.spread.output)
        draft.record = replace(draft.record, to_host_s=time.perf_counter() - t0)
        t0 = time.perf_counter()
        tol = expected.tolerance
        check = wl.check(out, expected.ref, case.dtype, case.params_dict, tol.value, expected.sketch)
        draft.record = replace(draft.record, check_s=time.perf_counter() - t0)
        draft.record = replace(
            draft.record,
            status="ok" if check.correct else "wrong",
            error=_wrong_reason(check) if not check.correct else (tol.source if tol.ill_conditioned else ""),
            first_call_s=timing.first_call_s,
            samples_s=tuple(m.samples),
            host_ref_s=timing.host_ref_s,
            cpu_wait=timing.cpu_wait,
            bimodal=m.bimodal,
            loops=m.loops,
            half_width=m.half_width,
            stop=timing.stop,
            minor_faults_per_call=timing.minor_faults_per_call,
            warmup_calls=timing.warmup_calls,
            visits=timing.visits,
            outlasted_s=timing.outlasted_s or None,
            overhead_s=timing.overhead_s,
            latency_s=timing.latency_s,
            max_abs_err=check.max_abs_err,
            rel_err=check.rel_err,
            tolerance=check.tolerance,
            tolerance_source=tol.source,
            ill_conditioned=tol.ill_conditioned,
            correct=check.correct,
            **stats_fields(m.summary()),
        )


def _wrong_reason(check: Any) -> str:
    if check.detail:
        return f"wrong result: {check.detail}"
    return f"wrong result: relative error {check.rel_err:.3g} > tolerance {check.tolerance:.3g}"
