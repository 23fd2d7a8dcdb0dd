"""The loop / vmap / batched families: every form is right on every installed framework, the report
says in words from which batch size vmap beats the loop, and NumPy says why it has no vmap form."""

import numpy as np
import pytest
from conftest import not_right, run_at_one_size
from test_report import record, results_of

from arraybench.backends import BACKENDS
from arraybench.plan import build_plan
from arraybench.report import vmap as section
from arraybench.report.model import ReportData
from arraybench.settings import RunSettings
from arraybench.workloads import WORKLOADS

FAMILY = sorted(name for name, wl in WORKLOADS.items() if wl.family is not None)
INSTALLED = [name for name, cls in BACKENDS.items() if cls.installed()[0] and name != "cupy"]
TINY_TIMER = ["--min-time", "0.01", "--max-time", "0.05", "--min-samples", "3", "--processes", "1", "--refine", "0"]


def test_the_two_families_have_three_forms_each_outside_the_default_suite():
    assert {WORKLOADS[n].family for n in FAMILY} == {(f, form) for f in ("pergrad", "convolve")
                                                     for form in ("loop", "vmap", "batched")}
    assert not any(WORKLOADS[n].in_default_suite for n in FAMILY)
    plan = build_plan(RunSettings(suite="vmap", backends=["numpy"]))
    assert {c.workload for c in plan} == set(FAMILY)
    assert {c.params_dict["b"] for c in plan} == {2**i for i in range(11)}


def test_the_pergrad_reference_is_the_gradient_of_the_per_example_loss():
    wl = WORKLOADS["pergrad_loop"]
    params = {**wl.defaults, "b": 3, "d": 4, "h": 5}
    W, v, X, y = wl.host_inputs(0, "float64", params)
    gW, gv = wl.expected((W, v, X, y), params)

    def loss(W, v, i):
        return (v @ np.tanh(W.T @ X[i]) - y[i]) ** 2

    h = 1e-6
    for i in range(3):
        for (j, k) in ((0, 0), (3, 4), (1, 2)):
            dW = np.zeros_like(W)
            dW[j, k] = h
            assert (loss(W + dW, v, i) - loss(W - dW, v, i)) / (2 * h) == pytest.approx(gW[i, j, k], rel=1e-6)
        dv = np.zeros_like(v)
        dv[2] = h
        assert (loss(W, v + dv, i) - loss(W, v - dv, i)) / (2 * h) == pytest.approx(gv[i, 2], rel=1e-6)


def test_the_convolve_reference_is_each_rows_valid_sliding_dot_product():
    wl = WORKLOADS["convolve_batched"]
    params = {"b": 3, "n": 20, "k": 4}
    X, W = wl.host_inputs(0, "float64", params)
    out = wl.expected((X, W), params)
    assert out.shape == (3, 17)
    for i in range(3):
        np.testing.assert_allclose(out[i], np.correlate(X[i], W[i], mode="valid"), rtol=1e-12)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    return run_at_one_size(tmp_path_factory.mktemp("vmap"), FAMILY, "3", "n=24,k=3,d=4,h=5", TINY_TIMER)


def test_every_form_of_every_installed_framework_gives_the_right_answer(tiny_run):
    code, records = tiny_run
    assert not_right(records) == [] and code == 0
    ran = {(r["workload"], r["backend"], r["mode"]) for r in records if r["status"] == "ok"}
    expected = {(w, b, m) for w in FAMILY for (b, m) in WORKLOADS[w].impls if b in INSTALLED}
    assert expected == ran
    # Every framework that has a vmap has all three forms, eager and compiled where it has both.
    for backend in {"jax", "torch", "tensorflow"} & set(INSTALLED):
        for w in FAMILY:
            assert {(w, backend, "eager"), (w, backend, "jit")} <= ran
    for r in records:
        if r["status"] == "ok":
            assert r["correct"] is True and r["size"] == 3 and r["flops"] > 0 and r["bytes"] > 0


def test_numpy_says_why_it_has_no_vmap_form(tiny_run):
    _, records = tiny_run
    why = {r["workload"]: r["error"] for r in records
           if r["backend"] == "numpy" and r["status"] == "unsupported"}
    assert set(why) == {"pergrad_vmap", "convolve_vmap"}
    assert all(e.startswith("NumPy has no vectorising map") for e in why.values())


# --- the report, from synthetic records whose crossings are known ----------------------------------
SIZES = (1, 4, 16, 64)
# label -> form -> (fixed s, s per example): jax·jit's vmap ties with the loop at b = 1 and wins from
# b = 4; torch·eager's vmap costs more than its loop at every size.
MODELS = {
    "jax·jit": {"loop": (0.0, 30e-6), "vmap": (30e-6, 0.1e-6), "batched": (25e-6, 0.08e-6)},
    "torch·eager": {"loop": (0.0, 10e-6), "vmap": (200e-6, 20e-6), "batched": (20e-6, 0.1e-6)},
    "numpy·eager": {"loop": (0.0, 5e-6), "batched": (8e-6, 0.05e-6)},
}


def synthetic_data():
    recs = []
    for label, forms in MODELS.items():
        backend, mode = label.split("·")
        for form, (fixed, per) in forms.items():
            for b in SIZES:
                recs.append(record(f"pergrad_{form}", b, backend, mode, fixed + per * b,
                                   params={"b": b, "d": 16, "h": 32}, flops=1e3 * b, bytes=1e3 * b))
        if "vmap" not in forms:
            recs.append(record("pergrad_vmap", 1, backend, mode, None, status="unsupported",
                               params={"b": 1, "d": 16, "h": 32},
                               error="NumPy has no vectorising map: <loops> & \"friends\""))
    return ReportData.from_results([results_of(recs)])


def test_the_report_says_from_which_batch_size_vmap_beats_the_loop():
    md = "\n".join(section.markdown(synthetic_data()))
    assert "## Loop, vmap or batched by hand" in md
    assert ("**jax·jit**: vmap beats the loop from b = 4 on (at b = 1, the size measured below it: within noise); "
            "at b = 64 vmap takes 1.2× the hand-batched form's time.") in md
    assert ("**torch·eager**: vmap never beats the loop: the loop is faster at b = 1, b = 4, b = 16, b = 64"
            in md)
    assert "**numpy·eager**: no vmap form: NumPy has no vectorising map" in md
    assert "| jax·jit | 4 | 120 µs | 30.4 µs | 25.3 µs | beats it, 3.9× faster | 1.2× |" in md
    assert "| jax·jit | 1 | 30 µs | 30.1 µs | 25.1 µs | within noise | 1.2× |" in md


def test_the_html_section_escapes_and_the_plot_draws_one_figure_per_family():
    data = synthetic_data()
    page = section.html_section(data)
    assert page.startswith('<section id="vmap">') and "vmap beats the loop from b = 4 on" in page
    assert "&lt;loops&gt; &amp; &quot;friends&quot;" in page and "<loops>" not in page
    saved = []
    section.plots(data, lambda name, title, caption, fig: saved.append((name, [a.get_title() for a in fig.axes])))
    assert saved == [("vmap-pergrad", ["numpy·eager", "jax·jit", "torch·eager"])]


def test_a_run_without_a_family_has_no_vmap_section():
    data = ReportData.from_results([results_of([record("linreg", 1, "numpy", "eager", 1e-3)])])
    assert section.markdown(data) == [] and section.html_section(data) == ""
