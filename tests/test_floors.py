"""floors: a backend's empty call, per mode (NumPy: nothing to import)."""

from __future__ import annotations

from arraybench import floors
from arraybench.backends.numpy_backend import NumpyBackend
from arraybench.timing import TimerConfig

FAST = TimerConfig(warmup_time=0.001, min_time=0.001, max_time=0.01, min_samples=3, processes=1)


def test_numpy_records_its_empty_call():
    be = NumpyBackend(1, "float64")
    be.load()
    got = floors.measure(be, FAST)
    assert set(got["empty_call_s"]) == {"eager"}
    assert 0 < got["empty_call_s"]["eager"] < 1e-3
    assert "empty_call_errors" not in got


def test_a_mode_that_fails_is_left_out_with_its_reason():
    class Broken(NumpyBackend):
        jit_modes = ("jit",)

        def jit(self, fn, mode, *, any_shape=False):
            raise RuntimeError("no compiler here")

    be = Broken(1, "float32")
    be.load()
    got = floors.measure(be, FAST)
    assert set(got["empty_call_s"]) == {"eager"}
    assert got["empty_call_errors"] == {"jit": "RuntimeError: no compiler here"}


def test_the_report_uses_the_measured_empty_call_before_the_cheapest_call():
    from arraybench.report import bound

    def rec(backend, mode, median, empty=None):
        info = {"empty_call_s": {mode: empty}} if empty else {}
        return {"machine": "m", "backend": backend, "mode": mode, "status": "ok", "median_s": median,
                "backend_info": info}

    records = [rec("jax", "jit", 9e-6, empty=4e-6), rec("jax", "jit", 2e-5), rec("torch", "eager", 3e-6)]
    floors_ = bound.dispatch_floors(records, lambda r: f"{r['backend']}·{r['mode']}")
    assert floors_ == {("m", "jax·jit"): 4e-6, ("m", "torch·eager"): 3e-6}  # measured; else the proxy


def test_the_report_lists_each_backend_modes_empty_call_cheapest_first():
    from arraybench.report.model import environment_rows

    records = [{"backend": "jax", "backend_info": {"empty_call_s": {"eager": 8.8e-6, "jit": 9.5e-6}}},
               {"backend": "numpy", "backend_info": {"empty_call_s": {"eager": 3.5e-7}}}]
    rows = dict(environment_rows({}, records))
    assert rows["empty call (x + x, one element)"] == "numpy·eager 350 ns, jax·eager 8.8 µs, jax·jit 9.5 µs"
