"""Workload: one computation with its inputs, reference, work counts and per-backend versions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arraybench.errors import UsageError, did_you_mean

# builder(backend, **params) -> fn(*device_args) -> output. The builder runs once per case,
# outside the timer: it is where `jax.jit`, `torch.compile` or `numba.njit` wrapping happens.
Builder = Callable[..., Callable[..., Any]]

DEFAULT_RTOL = {"float32": 1e-4, "float64": 1e-10}


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


def relative_check(out: Any, ref: Any, tol: float) -> Check:
    """Normwise relative error: max |out - ref| over max |ref|, per output, worst one wins."""
    got, want = leaves(out), leaves(ref)
    if len(got) != len(want):
        return Check(False, float("inf"), float("inf"), tol, f"{len(got)} outputs, expected {len(want)}")
    worst_abs, worst_rel = 0.0, 0.0
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape:
            return Check(False, float("inf"), float("inf"), tol, f"shape {g.shape}, expected {w.shape}")
        g64 = g.astype(np.complex128 if np.iscomplexobj(g) else np.float64)
        if not np.all(np.isfinite(g64)):
            return Check(False, float("inf"), float("inf"), tol, "output has NaN or inf")
        err = float(np.max(np.abs(g64 - w))) if g.size else 0.0
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        worst_abs = max(worst_abs, err)
        worst_rel = max(worst_rel, err / scale if scale > 0 else err)
    return Check(worst_rel <= tol, worst_abs, worst_rel, tol)


@dataclass
class Workload:
    """A computation written once per backend, with everything needed to time and check it.

    `defaults` holds every parameter; `size_param` is the one `--sizes 2,10,100` sets;
    `presets` name parameter points (`small`, `large`, ...), each a dict or a list of dicts.
    """

    name: str
    description: str
    defaults: dict[str, Any]
    size_param: str
    presets: dict[str, dict[str, Any] | list[dict[str, Any]]]
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

    def unsupported_because(self, error: Exception, backend: str) -> str | None:
        """Why `backend` cannot run this workload, when `error` is a known limit of the framework.

        Built-in implementations are written for their backend, so every failure is an error.
        """
        return None

    def check(self, out: Any, ref: Any, dtype: str, params: dict[str, Any]) -> Check:
        if self.checker is not None:
            return self.checker(out, ref, dtype, params)
        return relative_check(out, ref, self.tolerance(dtype))

    def work(self, params: dict[str, Any], dtype: str) -> tuple[float | None, float | None]:
        """(FLOPs, bytes moved) of one call, for GFLOP/s and GB/s."""
        itemsize = np.dtype(dtype).itemsize
        flops = self.flops(**params) if self.flops else None
        nbytes = self.bytes(itemsize=itemsize, **params) if self.bytes else None
        return flops, nbytes
