"""The built-in workloads: every installed backend and mode runs and is right; checks catch errors."""

import numpy as np
import pytest

from arraybench.backends import BACKENDS
from arraybench.planning.plan import build_plan
from arraybench.planning.settings import RunSettings
from arraybench.workloads import WORKLOADS
from tests.helpers.common import not_right, run_at_one_size

INSTALLED = [name for name, cls in BACKENDS.items() if cls.installed()[0] and name != "cupy"]
# The vmap families have a tiny run of their own (test_vmap.py): here every other workload, the
# multi-device ones on one device (their single-device baseline).
NEW = [name for name, wl in WORKLOADS.items() if not name.startswith("linreg") and wl.family is None]
# One process a case: replication has its own tests (test_replication.py).
TINY_TIMER = ["--min-time", "0.01", "--max-time", "0.1", "--min-samples", "3", "--processes", "1"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    return run_at_one_size(tmp_path_factory.mktemp("workloads"), NEW, "48", "n=48", TINY_TIMER)


def test_every_workload_runs_correctly_on_every_installed_backend_and_mode(tiny_run):
    code, records = tiny_run
    assert not_right(records) == [] and code == 0
    ran = {(r["workload"], r["backend"], r["mode"]) for r in records if r["status"] == "ok"}
    expected = {(w, b, m) for w in NEW for (b, m) in WORKLOADS[w].impls
                if b in INSTALLED and "pinned" not in w and w != "device_copy"}  # needs two devices
    assert expected <= ran
    pinned = {r["backend"]: r["error"] for r in records
              if "pinned" in r["workload"] and r["backend"] in ("jax", "torch")}
    assert set(pinned) == {"jax", "torch"} & set(INSTALLED)
    assert all("pinned host memory is a CUDA notion" in e for e in pinned.values())
    assert ("grad", "numpy", "fd") in ran
    for r in records:
        if r["status"] == "ok":
            assert r["correct"] is True and r["dtype"] == "float32" and r["size"] == 48
            assert r["bytes"] > 0 and (r["flops"] is None or r["flops"] > 0)


def test_host_args_workloads_start_from_the_host(tiny_run):
    _, records = tiny_run
    for r in records:
        if r["status"] == "ok":
            host = WORKLOADS[r["workload"]].host_args
            assert (r["transfer_s"] is None) == host, r["workload"]


def test_numba_reasons_are_recorded_and_listed(tiny_run, run_cli):
    _, records = tiny_run
    reasons = {r["workload"]: r["error"] for r in records if r["backend"] == "numba" and r["status"] == "unsupported"}
    assert "np.fft" in reasons["fft"] and "autodiff" in reasons["grad"]
    code, out, _ = run_cli("list")
    assert code == 0
    for name in WORKLOADS:
        assert f"  {name} " in out
    assert "Numba does not support np.fft inside @njit" in out


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_work_counts_are_positive_at_every_preset(name):
    wl = WORKLOADS[name]
    for preset in wl.presets:
        for params in wl.points([preset]):
            flops, nbytes = wl.work(params, "float32")
            assert nbytes > 0 and (flops is None or flops > 0)


def _checked(name, dtype, mutate, **params):
    wl = WORKLOADS[name]
    params = {**wl.defaults, **params}
    inputs = wl.host_inputs(1, dtype, params)
    ref = wl.expected(inputs, params)
    return wl.check(ref, ref, dtype, params), wl.check(mutate(ref), ref, dtype, params)


@pytest.mark.parametrize("name, mutate", [
    ("matmul", lambda c: c * (1 + 1e-3)),  # the size of a TF32 error
    ("fft", lambda c: np.conj(c)),
    ("sort", lambda c: c[::-1]),
    ("transfer_to_host", lambda c: c + np.where(np.arange(c.size).reshape(c.shape) == 7, 1e-6, 0)),
    ("grad", lambda g: g / 2),  # 2·w·x² computed as w·x²
    ("poly", lambda y: y + 1e-3 * np.abs(y).max()),
    ("selu", lambda y: np.maximum(y, 0)),
    ("elementwise_sin", lambda y: np.cos(np.arcsin(y))),
    ("retrace_new_shape", lambda y: -y),
])
def test_checks_pass_the_reference_and_catch_a_wrong_output(name, mutate):
    right, wrong = _checked(name, "float64", mutate, n=40)
    assert right.correct and not wrong.correct


def test_rng_check_accepts_normal_samples_and_rejects_biased_ones():
    wl = WORKLOADS["rng"]
    x = np.random.default_rng(3).standard_normal((300, 300)).astype(np.float32)
    assert wl.check(x, (0.0, 1.0), "float32", {"n": 300}).correct
    assert not wl.check(x + 0.05, (0.0, 1.0), "float32", {"n": 300}).correct
    assert not wl.check(x * 1.05, (0.0, 1.0), "float32", {"n": 300}).correct
    assert not wl.check(x.astype(np.float64), (0.0, 1.0), "float32", {"n": 300}).correct


def test_retrace_check_compares_a_shorter_output_with_the_reference_prefix():
    wl = WORKLOADS["retrace_new_shape"]
    (x,) = wl.host_inputs(0, "float64", {"n": 50})
    ref = wl.expected((x,), {"n": 50})
    assert wl.check(2 * np.sin(x[:17]) + 1, ref, "float64", {"n": 50}).correct
    assert not wl.check(2 * np.sin(x[1:18]) + 1, ref, "float64", {"n": 50}).correct


def _settings(*argv):
    from arraybench.cli import build_parser
    from arraybench.cli.run import settings_from_args

    return settings_from_args(build_parser().parse_args(["run", *argv]))


def test_default_run_is_every_workload_at_small_and_large_in_float32():
    from arraybench.measure.timing import TimerConfig
    from arraybench.planning.suites import SUITE_TIMER

    settings = _settings("--backends", "numpy")
    assert settings.timer == SUITE_TIMER and _settings("--workloads", "sort").timer == TimerConfig()
    plan = build_plan(settings)
    # every workload (the ones NumPy cannot run say why) but document 004's fixed-size pair
    assert {c.workload for c in plan} == {n for n, w in WORKLOADS.items() if w.in_default_suite}
    # ... the multi-device workloads, which are for runs over several devices (test_multidevice.py), and
    # the vmap families, whose loop of 1 024 eager calls is seconds a call (--suite vmap; test_vmap.py)
    assert {n for n, w in WORKLOADS.items() if not w.in_default_suite} == {
        "matmul_3000", "matmul_3000_to_host", "dp_matmul", "dp_grad", "dp_grad_pmap", "allreduce", "device_copy",
        *(f"{family}_{form}" for family in ("pergrad", "convolve") for form in ("loop", "vmap", "batched"))}
    assert {c.dtype for c in plan} == {"float32"}
    sizes = {c.params_dict["n"] for c in plan if c.workload == "matmul"}
    assert sizes == {100, 2000}  # the 10000² `huge` preset is opt-in


def test_quick_suite_is_small_presets_with_short_sampling(run_cli):
    from arraybench.planning.suites import QUICK_TIMER

    settings = _settings("--quick", "--min-samples", "5")
    assert settings.timer.min_time == QUICK_TIMER.min_time and settings.timer.min_samples == 5
    plan = build_plan(settings)
    for c in plan:
        wl = WORKLOADS[c.workload]
        assert c.params_dict[wl.size_param] == wl.presets["small"][wl.size_param]
    assert "matmul_3000" not in {c.workload for c in plan}
    assert {c.params_dict["iters"] for c in plan if c.workload.startswith("linreg")} == {100}
    code, _, err = run_cli("run", "--quick", "--workloads", "sort")
    assert code == 2 and "leave out --workloads" in err


def test_seeds_suite_reproduces_the_documents_configurations():
    plan = build_plan(RunSettings(suite="seeds"))
    by = {(c.workload, c.dtype, c.params_dict[WORKLOADS[c.workload].size_param]) for c in plan}
    assert ("poly", "float64", 10_000) in by and ("poly", "float32", 10_000) in by  # document 002
    assert ("matmul", "float64", 10_000) in by
    assert ("grad", "float64", 10_000) in by and ("sort", "float64", 1_000_000) in by  # document 003
    assert ("linreg", "float64", 100) in by and ("linreg", "float64", 2) in by  # document 001
    assert ("selu", "float32", 3_000) in by and ("matmul_3000_to_host", "float32", 3_000) in by  # 004
    assert any(c.workload == "grad" and c.mode == "fd" for c in plan)
    assert len(plan) == len(set(plan))


@pytest.mark.parametrize("name", ["selu", "poly", "matmul", "fft", "grad", "elementwise_add"])
def test_an_output_promoted_to_float64_fails_a_float32_case(name):
    wl = WORKLOADS[name]
    params = {**wl.defaults, wl.size_param: 16}
    ref = wl.expected(wl.host_inputs(0, "float32", params), params)  # float64 or complex128
    narrow = ref.astype(np.complex64 if ref.dtype.kind == "c" else np.float32)
    assert wl.check(narrow, ref, "float32", params).correct
    promoted = wl.check(ref, ref, "float32", params)
    assert not promoted.correct and "the case is float32" in promoted.detail
