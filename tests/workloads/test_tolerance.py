"""Calibrated tolerances: correct code evaluated in another order passes; wrong precision fails."""

import math
import time

import numpy as np
import pytest

from arraybench.workloads.workload import CALIBRATE_MAX_S, DEFAULT_RTOL, Workload


def logistic(y, steps):
    for _ in range(steps):
        y = 4 * y * (1 - y)
    return y


def logistic_other_order(y, steps):
    """The same map, rounded differently: what another framework's fused kernel may compute."""
    for _ in range(steps):
        y = 4 * y - 4 * y * y
    return y


def workload(steps: int = 14, **kw) -> Workload:
    """14 steps of the chaotic logistic map: float32 lands ~30 % off float64, float64 ~1e-8 off
    itself when evaluated in another order (the long kernel of issue 11 in small)."""
    wl = Workload(name="logistic", description="", defaults={"n": 4096, "steps": steps}, size_param="n",
                  presets={"small": {"n": 4096}}, **kw)
    wl.inputs(lambda rng, dtype, n, steps: (rng.uniform(0.1, 0.9, n).astype(dtype),))
    wl.reference(lambda x, n, steps: logistic(x, steps))
    return wl


def calibrated(wl: Workload, dtype: str):
    params = dict(wl.defaults)
    host = wl.host_inputs(0, dtype, params)
    ref = wl.expected(host, params)
    return host, ref, params, wl.calibrate(host, ref, dtype, params, reference_s=0.0)


def test_float64_evaluated_in_another_order_passes_off_by_a_millionth_or_in_float32_fails():
    wl = workload()
    host, ref, params, tol = calibrated(wl, "float64")
    assert tol.value > DEFAULT_RTOL["float64"] and "calibrated" in tol.source and not tol.ill_conditioned
    other = logistic_other_order(host[0], params["steps"])
    assert wl.check(ref, ref, "float64", params).rel_err == 0
    assert not wl.check(other, ref, "float64", params).correct  # today's fixed 1e-10 calls it WRONG
    assert wl.check(other, ref, "float64", params, tol.value).correct
    assert not wl.check(ref * (1 + 1e-6), ref, "float64", params, tol.value).correct
    in_float32 = logistic(host[0].astype(np.float32), params["steps"]).astype(np.float64)
    assert not wl.check(in_float32, ref, "float64", params, tol.value).correct


def test_a_computation_float32_cannot_carry_is_called_ill_conditioned():
    wl = workload()
    host, ref, params, tol = calibrated(wl, "float32")
    assert tol.ill_conditioned and "ill-conditioned in float32" in tol.source
    assert wl.check(logistic(host[0], params["steps"]), ref, "float32", params, tol.value).correct


def test_well_conditioned_work_keeps_the_rtol_and_says_why():
    wl = workload(steps=1)
    _, _, _, tol = calibrated(wl, "float64")
    assert tol.value == DEFAULT_RTOL["float64"] and "below it" in tol.source


def test_an_explicit_rtol_wins():
    given = workload(rtol={"float32": 1e-3, "float64": 1e-9}, source="mine.py")
    assert calibrated(given, "float64")[3].value == 1e-9


def horner48(x):
    """A 48-term float64 kernel (e^(-3x) as its Taylor sum), written as a client's kernel would be."""
    y = np.zeros_like(x)
    for c in COEFFS[::-1]:
        y = y * x + c
    return y


def power_sum48(x):
    """The same 48 terms summed term by term: another framework's order of evaluation."""
    y, term = np.zeros_like(x), np.ones_like(x)
    for c in COEFFS:
        y = y + c * term
        term = term * x
    return y


COEFFS = [(-3.0) ** k / math.factorial(k) for k in range(48)]


def poly48(n: int) -> Workload:
    """On [0, 5.5] its terms reach 10⁶ and cancel: float64 evaluation orders differ by ~1e-9
    (normwise), as a real client's 48-term kernel did between torch and NumPy."""
    wl = Workload(name="poly48", description="", defaults={"n": n}, size_param="n", presets={"small": {"n": n}})
    wl.inputs(lambda rng, dtype, n: (rng.uniform(0.0, 5.5, n).astype(dtype),))
    wl.reference(lambda x, n: horner48(x))
    return wl


def test_a_long_float64_kernel_is_calibrated_at_a_size_whose_reference_is_slow():
    """At 8·10⁶ elements the reference takes 0.3–0.6 s here, past the 0.25 s at which the tolerance
    used to fall back to rtol 1e-10, calling a correct kernel (another order: ~1e-9 off) WRONG."""
    wl = poly48(8_000_000)
    params = dict(wl.defaults)
    host = wl.host_inputs(0, "float64", params)
    t0 = time.perf_counter()
    ref = wl.expected(host, params)
    tol = wl.calibrate(host, ref, "float64", params, time.perf_counter() - t0)
    assert tol.source.startswith("calibrated")
    (x,) = host
    assert wl.check(power_sum48(x), ref, "float64", params, tol.value).correct
    assert wl.check(horner48(x), ref, "float64", params, tol.value).correct
    off = wl.check(horner48(x) + 1e-6, ref, "float64", params, tol.value)
    assert not off.correct


def test_a_reference_too_slow_to_evaluate_twice_is_calibrated_at_smaller_sizes_and_carried_up():
    wl = poly48(1_000_000)
    params = dict(wl.defaults)
    host = wl.host_inputs(0, "float64", params)
    ref = wl.expected(host, params)
    tol = wl.calibrate(host, ref, "float64", params, reference_s=2 * CALIBRATE_MAX_S, seed=0)
    assert "carried from n = " in tol.source and tol.source.startswith("calibrated"), tol.source
    (x,) = host
    assert wl.check(power_sum48(x), ref, "float64", params, tol.value).correct
    assert not wl.check(horner48(x) * (1 + 1e-6), ref, "float64", params, tol.value).correct


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_workload_checks_the_output_dtype(dtype):
    wl = workload(steps=1)
    params = dict(wl.defaults)
    host = wl.host_inputs(0, dtype, params)
    ref = wl.expected(host, params)
    other = "float64" if dtype == "float32" else "float32"
    check = wl.check(ref.astype(other), ref, dtype, params)
    assert not check.correct and f"output is {other}" in check.detail
