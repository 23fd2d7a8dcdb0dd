"""Checks at the sizes GPUs run: one wrong element among 10⁸, one wrong entry of an 8192² product.

The exhaustive float64 reference of an 8192² product is 1.1 TFLOP; arraybench checks it with
Freivalds' test in O(n²) instead (workloads/matmul.py). These plant the single wrong value the
issue asks to be caught, and show that correct results computed in another order still pass.
"""

import numpy as np

from arraybench.backends.numpy_backend import NumpyBackend
from arraybench.core.case import Case
from arraybench.measure.case_executor import CaseExecutor, input_seed
from arraybench.measure.casecache import CaseCache
from arraybench.workloads import WORKLOADS
from arraybench.workloads.matmul import FREIVALDS


def executor(full_check: bool = False) -> CaseExecutor:
    be = NumpyBackend(2, "float32")
    be.load()
    return CaseExecutor(be, CaseCache(None), full_check=full_check)


def expected_for(ex: CaseExecutor, workload: str, n: int):
    case = Case(workload, (("n", n),), "numpy", "eager", "float32", 2)
    wl = WORKLOADS[workload]
    seed = input_seed(0, case)
    host, _, _ = ex.inputs(wl, case, seed)
    return wl, host, ex.expected(wl, case, seed, host), dict(case.params)


def test_one_wrong_element_among_1e8_of_an_elementwise_result_is_caught():
    wl, (x,), exp, params = expected_for(executor(), "elementwise_sin", 100_000_000)
    assert exp.sketch is None and exp.method.startswith("full")
    out = np.sin(x)
    assert wl.check(out, exp.ref, "float32", params, exp.tolerance.value).correct
    out[73_000_001] *= 1 + 1e-3
    bad = wl.check(out, exp.ref, "float32", params, exp.tolerance.value)
    assert not bad.correct


def test_one_wrong_entry_of_an_8192_product_is_caught_by_freivalds():
    wl, (a, b), exp, params = expected_for(executor(), "matmul", 8192)
    assert exp.sketch is not None and exp.method.startswith("Freivalds")
    threshold = float(exp.sketch["tolerance"])
    c = a @ b
    rms = float(np.sqrt(np.mean(c[:64].astype(np.float64) ** 2)))
    assert threshold < 0.01 * rms  # an entry 1 % off its typical size is caught
    assert wl.check(c, None, "float32", params, sketch=exp.sketch).correct
    # The same product summed in another order (two halves of the inner dimension): still correct.
    half = 4096
    other = a[:, :half] @ b[:half] + a[:, half:] @ b[half:]
    assert wl.check(other, None, "float32", params, sketch=exp.sketch).correct
    c[5000, 123] += 0.01 * rms
    bad = wl.check(c, None, "float32", params, sketch=exp.sketch)
    assert not bad.correct and "some entry is wrong" in bad.detail


def test_freivalds_catches_a_product_in_lower_precision_and_a_transposed_one():
    rng = np.random.default_rng(1)
    n = 600
    a, b = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    expected = FREIVALDS.expect((a, b), "float32", {"n": n}, rng)
    assert FREIVALDS.check(a @ b, expected, "float32", {"n": n}).correct
    half = (a.astype(np.float16) @ b.astype(np.float16)).astype(np.float32)
    assert not FREIVALDS.check(half, expected, "float32", {"n": n}).correct
    assert not FREIVALDS.check((a @ b).T.copy(), expected, "float32", {"n": n}).correct


def test_full_check_keeps_the_exhaustive_reference():
    _, _, exp, _ = expected_for(executor(full_check=True), "matmul", 600)
    assert exp.sketch is None and exp.method.startswith("full")
    _, _, exp, _ = expected_for(executor(), "matmul", 600)
    assert exp.sketch is not None
