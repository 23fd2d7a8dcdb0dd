"""Sweep presets (enough log-spaced sizes for crossovers), and the polynomial both as document 002 wrote
it and written well."""

import math

import pytest

from arraybench.planning.plan import build_plan
from arraybench.planning.settings import RunSettings
from arraybench.workloads import WORKLOADS

# Document cases at one size by definition, and retraces whose count of new shapes is bounded by n.
FIXED_SIZE = {"matmul_3000", "matmul_3000_to_host", "retrace_cached", "retrace_new_shape"}


@pytest.mark.parametrize("name", sorted(set(WORKLOADS) - FIXED_SIZE))
def test_every_workload_has_a_sweep_of_at_least_eight_log_spaced_sizes(name):
    wl = WORKLOADS[name]
    sizes = [p[wl.size_param] for p in wl.points(["sweep"])]
    assert len(sizes) >= 8 and sizes == sorted(set(sizes))
    steps = [math.log(b / a) for a, b in zip(sizes, sizes[1:], strict=False)]
    assert max(steps) < 2.5 * min(steps)  # evenly spaced on a log axis, up to rounding of small sizes
    assert sizes[-1] / sizes[0] >= 50  # wide enough for an order to change


def test_poly_is_measured_as_document_002_wrote_it_and_as_an_expert_writes_it():
    import numpy as np

    from arraybench.backends import backend_class

    plain, expert = WORKLOADS["poly_as_written"], WORKLOADS["poly"]
    x = np.linspace(-2, 2, 16).reshape(4, 4)
    be = backend_class("numpy")(threads=1, dtype="float64")
    want = -4 * x * x * x + 9 * x * x + 6 * x - 3
    for wl in (plain, expert):
        assert np.allclose(wl.builder("numpy", "eager")(be, n=4)(x), want)
    # Document 002 compared its NumPy expression with jax.jit of the same expression.
    assert ("jax", "jit") in plain.impls and plain.flops(n=10) > expert.flops(n=10)
    seeds = build_plan(RunSettings(suite="seeds", backends=["numpy"]))
    for dtype in ("float32", "float64"):
        assert {c.workload for c in seeds if c.dtype == dtype and c.params_dict.get("n") == 10_000} >= {
            "poly", "poly_as_written"}
