"""Workload: one computation with its inputs, reference, work counts and per-backend versions."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arraybench.errors import UsageError, did_you_mean

# builder(backend, **params) -> fn(*device_args) -> output. The builder runs once per case,
# outside the timer: it is where `jax.jit`, `torch.compile` or `numba.njit` wrapping happens.
Builder = Callable[..., Callable[..., Any]]
# A named size: one parameter point, or a list of them (a sweep).
Preset = dict[str, Any] | list[dict[str, Any]]

DEFAULT_RTOL = {"float32": 1e-4, "float64": 1e-10}
# Calibration (Workload.calibrate): NumPy evaluates the reference again in float32; its error
# against the float64 reference, scaled to the case's dtype by the ratio of unit roundoffs (rounding
# errors are first order in it), is how far correct code evaluated in another order or by other
# kernels may land. The tolerance is SAFETY times that, never below the workload's rtol.
SAFETY = 100.0  # the float32 probe is one evaluation order; other orders landed up to 11x further (tests)
# An error this large: the case's dtype cannot carry this computation's answer.
ILL_CONDITIONED = 1e-2
# Calibrating costs one evaluation of the reference in float32, once per case per run (casecache.py).
# A reference slower than this is calibrated at smaller sizes of the same workload instead, and the
# error carried up to the case's size (Workload.carried_tolerance); never dropped to a default rtol.
CALIBRATE_MAX_S = 30.0
# The smaller sizes are chosen so that their reference takes about this long (cost taken as linear).
CARRY_BUDGET_S = 1.0
# How many times smaller each of the two carrying sizes is than the next.
CARRY_STEP = 4


@dataclass
class Check:
    """How a backend's output compares with the NumPy float64 reference."""

    correct: bool
    max_abs_err: float
    rel_err: float
    tolerance: float
    detail: str = ""


def leaves(out: Any) -> list[np.ndarray]:
    """The arrays in a tuple/list/dict output, in a stable order."""
    if isinstance(out, tuple | list):
        return [a for o in out for a in leaves(o)]
    if isinstance(out, dict):
        return [a for k in sorted(out) for a in leaves(out[k])]
    return [np.asarray(out)]


@dataclass(frozen=True)
class Sketch:
    """A check that costs O(output) for a workload whose full reference costs more than the work.

    A float64 reference of an 8192² product is 1.1 TFLOP: minutes on two cores, a hundred times
    the GPU's measured call. `expect(host_inputs, dtype, params, rng)` makes, once per case per
    run, a few arrays that stand for the expected output (for matmul: A·(B·X) for random ±1
    columns X, and the threshold calibrated from sampled rows) plus a 0-d `tolerance`;
    `check(out, expected, dtype, params)` tests an output against them. `applies(params)` says
    where the full reference would cost more than the sketch (below, the exact figure is cheap);
    `describe(expected)` says in a line what the sketch catches and with what probability.
    `--full-check` keeps the exhaustive check everywhere.
    """

    applies: Callable[[dict[str, Any]], bool]
    expect: Callable[..., dict[str, np.ndarray]]
    check: Callable[..., Check]
    describe: Callable[[dict[str, Any]], str]


# Where an input or output of a multi-device workload lives (Spread).
SPLIT, COPY, FIRST = "split", "copy", "first"


@dataclass(frozen=True)
class Spread:
    """How a multi-device workload lays its data over a case's devices (devices.py's tokens).

    Each input is `split` along its leading axis (one slice per device), a `copy` on every
    device, or on the `first` device only; the output is one of the same (`Backend.gather`
    brings it back whole). A workload with a Spread is planned on tokens of several devices
    (`cpu:4`) as well as on one, where it is the plain single-device computation, the baseline
    of its scaling; a workload without one runs on one device only.
    """

    inputs: tuple[str, ...]
    output: str


@dataclass(frozen=True)
class Tolerance:
    """The relative tolerance of one case's check, and how it was derived (kept in the record)."""

    value: float
    source: str
    ill_conditioned: bool = False


def wrong_dtype(out: Any, dtype: str) -> Check | None:
    """A failed Check if a float output is not in the case's dtype, else None.

    A silent promotion (Numba multiplies float32 arrays by Python floats in float64) makes a
    float32 case slower and more accurate than float32 is, and passes any tolerance.
    """
    for leaf in leaves(out):
        want = {"f": np.dtype(dtype), "c": np.result_type(dtype, np.complex64)}.get(leaf.dtype.kind)
        if want is not None and leaf.dtype != want:
            return Check(False, float("inf"), float("inf"), 0.0, f"output is {leaf.dtype}, the case is {dtype}")
    return None


# Elements per pass of a check: a 10⁸-element output is compared in cache-sized pieces instead of
# through full-size float64 temporaries (12 s a check at 10⁸, every case of every process).
CHUNK = 1 << 16


def _errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float, bool]:
    """(max |got − want|, max |want|, every difference finite), in float64 (complex128).

    One pass per piece: the difference is computed into a reused float64 buffer, the cast of
    `got` happening inside the subtraction; a NaN or inf in `got` shows as a non-finite maximum.
    """
    complex_ = np.iscomplexobj(got) or np.iscomplexobj(want)
    wide = np.complex128 if complex_ else np.float64
    g, w = got.reshape(-1), want.reshape(-1)
    buf = np.empty(min(CHUNK, g.size), dtype=wide)
    err = scale = 0.0
    for i in range(0, g.size, CHUNK):
        gi, wi = g[i:i + CHUNK], w[i:i + CHUNK]
        d = buf[:gi.size]
        np.subtract(gi, wi, out=d, dtype=wide)
        if complex_:
            piece, top = float(np.max(np.abs(d))), float(np.max(np.abs(wi)))
        else:
            np.abs(d, out=d)
            piece, top = float(d.max()), max(float(wi.max()), -float(wi.min()))
        if not math.isfinite(piece):
            return math.inf, 0.0, False
        err, scale = max(err, piece), max(scale, top)
    return err, scale, True


def relative_error(out: Any, ref: Any) -> float:
    """max |out − ref| / max |ref| over each output, worst one wins (for calibration)."""
    worst = 0.0
    for g, w in zip(leaves(out), leaves(ref), strict=True):
        err, scale, finite = _errors(np.asarray(g), w)
        if not finite:
            return math.inf
        worst = max(worst, err / scale if scale > 0 else err)
    return worst


def relative_check(out: Any, ref: Any, tol: float) -> Check:
    """Normwise relative error: max |out - ref| over max |ref|, per output, worst one wins."""
    got, want = leaves(out), leaves(ref)
    if len(got) != len(want):
        return Check(False, float("inf"), float("inf"), tol, f"{len(got)} outputs, expected {len(want)}")
    worst_abs, worst_rel = 0.0, 0.0
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape:
            return Check(False, float("inf"), float("inf"), tol, f"shape {g.shape}, expected {w.shape}")
        err, scale, finite = _errors(g, w)
        if not finite:
            return Check(False, float("inf"), float("inf"), tol, "output has NaN or inf")
        worst_abs = max(worst_abs, err)
        worst_rel = max(worst_rel, err / scale if scale > 0 else err)
    return Check(worst_rel <= tol, worst_abs, worst_rel, tol)


@dataclass
class Workload:
    """A computation written once per backend, with everything needed to time and check it.

    `defaults` holds every parameter; `size_param` is the one `--sizes 2,10,100` sets;
    `presets` name parameter points (`small`, `large`, ...), each a dict or a list of dicts.

    `host_args`: the timed function receives the host NumPy inputs instead of device copies,
    because moving them is what it measures (a host-to-device transfer, a retrace fed fresh
    host arrays). Every other workload gets its inputs on the device before the timer starts.
    """

    name: str
    description: str
    defaults: dict[str, Any]
    size_param: str
    presets: dict[str, Preset]
    make_inputs: Callable[..., tuple[np.ndarray, ...]] | None = None
    make_reference: Callable[..., Any] | None = None
    flops: Callable[..., float] | None = None
    bytes: Callable[..., float] | None = None
    rtol: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_RTOL))
    checker: Callable[..., Check] | None = None
    impls: dict[tuple[str, str], Builder] = field(default_factory=dict)
    unsupported: dict[tuple[str, str], str] = field(default_factory=dict)
    source: str | None = None
    default_presets: tuple[str, ...] = ("small", "large")
    host_args: bool = False
    # In the default suite (`arraybench run`, `make bench`); otherwise only when named or in a suite.
    in_default_suite: bool = True
    # A cheaper check where the full reference costs more than the work (Sketch); None: always full.
    sketch: Sketch | None = None
    # Multi-device workloads: how inputs and output lie over the devices; None: one device only.
    spread: Spread | None = None
    # (family, form): one form (loop, vmap, batched) of a computation the report's vmap section
    # sets side by side with its other forms (workloads/vmap_family.py); None: no family.
    family: tuple[str, str] | None = None

    # --- registration decorators, so a workload module reads top to bottom ---------------
    def inputs(self, fn: Callable[..., tuple[np.ndarray, ...]]) -> Callable[..., tuple[np.ndarray, ...]]:
        """Register `fn(rng, dtype, **params) -> tuple of host NumPy arrays`."""
        self.make_inputs = fn
        return fn

    def reference(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Register `fn(*inputs_as_float64, **params) -> expected output` (NumPy float64)."""
        self.make_reference = fn
        return fn

    def check_with(self, fn: Callable[..., Check]) -> Callable[..., Check]:
        """Register `fn(out, ref, dtype, params) -> Check` where relative error is the wrong test."""
        self.checker = fn
        return fn

    def impl(self, backend: str, *modes: str) -> Callable[[Builder], Builder]:
        """Register a builder for `backend` in `modes` (default: eager)."""

        def register(builder: Builder) -> Builder:
            for mode in modes or ("eager",):
                self.impls[(backend, mode)] = builder
            return builder

        return register

    def impl_eager_and_jit(self, backend: str) -> Callable[[Builder], Builder]:
        """Register a builder as `backend`'s eager version and, compiled by `Backend.jit`
        (jax.jit, tf.function(jit_compile=True), torch.compile, cupy.fuse), as its jit one."""

        def register(builder: Builder) -> Builder:
            self.impls[(backend, "eager")] = builder
            self.impls[(backend, "jit")] = lambda be, **params: be.jit(builder(be, **params), "jit")
            return builder

        return register

    def cannot(self, backend: str, mode: str, reason: str) -> None:
        """Record why `backend` in `mode` has no implementation; shown by `list` and reports."""
        self.unsupported[(backend, mode)] = reason

    # --- planning ---------------------------------------------------------------------------
    def points(
        self, sizes: Sequence[str] | None, overrides: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Parameter points for `sizes` (preset names and/or values of `size_param`).

        `overrides` (from `--params n=1000,iters=10`) replace those parameters everywhere.
        """
        chosen = list(sizes) if sizes else list(self.default_presets)
        overrides = {k: v for k, v in (overrides or {}).items() if k in self.defaults}
        out: list[dict[str, Any]] = []
        for token in chosen:
            if token in self.presets:
                preset = self.presets[token]
                for p in preset if isinstance(preset, list) else [preset]:
                    out.append({**self.defaults, **p})
                continue
            try:
                value = int(token)
            except ValueError:
                names = ", ".join(sorted(self.presets))
                raise UsageError(
                    f"bad size {token!r} for {self.name}{did_you_mean(token, self.presets)} "
                    f"(give a positive integer or a preset: {names})"
                ) from None
            if value <= 0:
                raise UsageError(f"bad size {token!r} for {self.name}: sizes must be positive")
            out.append({**self.defaults, self.size_param: value})
        unique: list[dict[str, Any]] = []
        for p in ({**p, **overrides} for p in out):
            if p not in unique:
                unique.append(p)
        return unique

    def builder(self, backend: str, mode: str) -> Builder | None:
        return self.impls.get((backend, mode))

    # --- inside the worker ------------------------------------------------------------------
    def host_inputs(self, seed: int, dtype: str, params: dict[str, Any]) -> tuple[np.ndarray, ...]:
        """Deterministic host inputs: the same for every backend of one run."""
        assert self.make_inputs is not None, f"workload {self.name} defines no inputs"
        rng = np.random.default_rng(seed)
        return tuple(self.make_inputs(rng, np.dtype(dtype).type, **params))

    def expected(self, inputs: tuple[np.ndarray, ...], params: dict[str, Any]) -> Any:
        """The NumPy float64 reference, computed from the inputs as the backends receive them."""
        assert self.make_reference is not None, f"workload {self.name} defines no reference"
        wide = tuple(
            a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
            if isinstance(a, np.ndarray) and a.dtype.kind in "fc" else a
            for a in inputs
        )
        return self.make_reference(*wide, **params)

    def tolerance(self, dtype: str) -> float:
        return self.rtol[dtype]

    @property
    def rtol_is_explicit(self) -> bool:
        """A user's workload that set its own rtol: that wins over calibration. (A built-in's rtol
        is a floor that calibration may only loosen.)"""
        return self.source is not None and self.rtol != DEFAULT_RTOL

    def calibrate(self, inputs: tuple[np.ndarray, ...], ref: Any, dtype: str, params: dict[str, Any],
                  reference_s: float, seed: int = 0) -> Tolerance:
        """The tolerance for this case, from how far the reference itself moves in lower precision.

        Only the default relative check is calibrated: custom checks (norms with their own error
        bounds, exact comparisons) already say what they accept. The float32 evaluation costs
        about what the reference did, once per case per run; past CALIBRATE_MAX_S the error is
        measured at smaller sizes and carried up (`seed` makes their inputs).
        """
        floor = self.tolerance(dtype)
        if self.checker is not None:
            return Tolerance(floor, "the workload's own check")
        if self.rtol_is_explicit:
            return Tolerance(floor, f"rtol {floor:g} given by the workload")
        if reference_s > CALIBRATE_MAX_S and self._carry_sizes(params, reference_s):
            return self.carried_tolerance(dtype, params, seed, reference_s)
        error32, why = self._float32_error(inputs, ref, params)
        if error32 is None:
            return Tolerance(floor, f"rtol {floor:g} ({why})")
        return self._from_error(error32, dtype, "")

    def _float32_error(self, inputs: tuple[np.ndarray, ...], ref: Any,
                       params: dict[str, Any]) -> tuple[float | None, str]:
        """The float32 reference's relative error against `ref`, or None and why it has none."""
        narrow = tuple(a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                       for a in inputs)
        try:
            assert self.make_reference is not None
            error32 = relative_error(self.make_reference(*narrow, **params), ref)
        except Exception as e:  # a reference that cannot run in float32 keeps its rtol
            return None, f"the reference fails in float32: {type(e).__name__}"
        if not math.isfinite(error32):
            return None, "the reference overflows or gives NaN in float32"
        return error32, ""

    def _from_error(self, error32: float, dtype: str, carried: str) -> Tolerance:
        floor = self.tolerance(dtype)
        spread = error32 * float(np.finfo(dtype).eps) / float(np.finfo(np.float32).eps)
        how = (f"{SAFETY:g} × {spread:.2g}, the float32 reference's error"
               + (" scaled to float64's roundoff" if dtype != "float32" else "") + carried)
        if spread >= ILL_CONDITIONED:
            return Tolerance(SAFETY * spread, f"ill-conditioned in {dtype}: {how}", ill_conditioned=True)
        if SAFETY * spread > floor:
            return Tolerance(SAFETY * spread, f"calibrated: {how}")
        return Tolerance(floor, f"rtol {floor:g} (calibration: {how}, below it)")

    def _carry_sizes(self, params: dict[str, Any], reference_s: float) -> tuple[int, int] | None:
        """Two smaller sizes whose references take about CARRY_BUDGET_S, or None where the size
        parameter is not an integer that far above a few elements (then the case calibrates in full)."""
        size = params.get(self.size_param)
        if not isinstance(size, int):
            return None
        big = size
        while big > 1 and reference_s * big / size > CARRY_BUDGET_S:
            big //= CARRY_STEP
        small = big // CARRY_STEP
        return (small, big) if small >= 16 else None

    def carried_tolerance(self, dtype: str, params: dict[str, Any], seed: int, reference_s: float) -> Tolerance:
        """The float32 error measured at two smaller sizes and carried up to the case's size.

        Rounding errors grow with the size at most linearly (a sum's worst case) and often not at
        all (element-wise kernels): the growth between the two sizes is fitted and a quarter added
        for safety, between 0 and 1 (`size^p`).
        """
        carry = self._carry_sizes(params, reference_s)
        assert carry is not None
        errors = []
        for s in carry:
            small = {**params, self.size_param: s}
            inputs = self.host_inputs(seed, dtype, small)
            error32, why = self._float32_error(inputs, self.expected(inputs, small), small)
            if error32 is None:
                floor = self.tolerance(dtype)
                return Tolerance(floor, f"rtol {floor:g} ({why} at {self.size_param} = {s})")
            errors.append(max(error32, float(np.finfo(np.float32).eps)))
        fitted = math.log(errors[1] / errors[0]) / math.log(carry[1] / carry[0])
        p = min(1.0, max(0.0, fitted) + 0.25)
        size = params[self.size_param]
        error32 = errors[1] * (size / carry[1]) ** p
        return self._from_error(error32, dtype, f", carried from {self.size_param} = {carry[1]} as "
                                f"{self.size_param}^{p:.2f} (its reference took {reference_s:.2g} s)")

    def unsupported_because(self, error: Exception, backend: str) -> str | None:
        """Why `backend` cannot run this workload, when `error` is a known limit of the framework.

        Built-in implementations are written for their backend, so every failure is an error.
        """
        return None

    def check(self, out: Any, ref: Any, dtype: str, params: dict[str, Any],
              tolerance: float | None = None, sketch: dict[str, Any] | None = None) -> Check:
        """Right dtype first (every workload), then the sketch's check where the case has one
        (`sketch`: what Sketch.expect made), else the workload's own check or the relative one
        at `tolerance` (calibrated; default the workload's rtol)."""
        bad = wrong_dtype(out, dtype)
        if bad is not None:
            return bad
        if sketch is not None:
            assert self.sketch is not None
            return self.sketch.check(out, sketch, dtype, params)
        if self.checker is not None:
            return self.checker(out, ref, dtype, params)
        return relative_check(out, ref, self.tolerance(dtype) if tolerance is None else tolerance)

    def work(self, params: dict[str, Any], dtype: str) -> tuple[float | None, float | None]:
        """(FLOPs, bytes moved) of one call, for GFLOP/s and GB/s."""
        itemsize = np.dtype(dtype).itemsize
        flops = self.flops(**params) if self.flops else None
        nbytes = self.bytes(itemsize=itemsize, **params) if self.bytes else None
        return flops, nbytes
