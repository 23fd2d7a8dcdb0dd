"""Dense matrix product C = A·B (documents 002, 003, 004), with document 004's device comparison.

`matmul` is the size sweep (100², 2000², and the opt-in `huge` 10000² of document 002).
`matmul_3000` and `matmul_3000_to_host` are document 004's two GPU cases at 3000²: the product
left on the device, and the product copied back to the host inside the timer (the copy is what
that case measures; on a CPU both are the same). Precision stays at the dtype's own: TF32 is off
in every backend and JAX multiplies at "highest" precision, or the error check would fail.
"""

from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.workloads.common import NO_FUSE, eps, norm_check, register_everywhere
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import SAFETY, Check, Sketch, Workload, leaves


def _make(name: str, description: str, presets: dict[str, Any], default_presets: tuple[str, ...],
          in_default_suite: bool = True) -> Workload:
    return Workload(
        name=name,
        description=description,
        defaults={"n": 100},
        size_param="n",
        presets=presets,
        default_presets=default_presets,
        in_default_suite=in_default_suite,
        flops=lambda n: 2.0 * n**3,
        bytes=lambda n, itemsize: 3.0 * n * n * itemsize,
    )


matmul = _make(
    "matmul", "C = A·B of random n×n matrices (documents 002, 003)",
    {"small": {"n": 100}, "large": {"n": 2_000}, "huge": {"n": 10_000}, "sweep": log_sweep("n", 16, 2048, 8)},
    ("small", "large"),
)
# Document 004's fixed-size pair: `--suite seeds` measures them. The default suite leaves them
# out: `matmul` covers the operation (100² and 2000²), and at ~1 s a call on two cores each costs
# as much as twenty other cases.
matmul_3000 = _make(
    "matmul_3000", "C = A·B at 3000², result left on the device (document 004)",
    {"large": {"n": 3_000}}, ("large",), in_default_suite=False,
)
matmul_3000_to_host = _make(
    "matmul_3000_to_host", "C = A·B at 3000², result copied back to the host in the timer (document 004)",
    {"large": {"n": 3_000}}, ("large",), in_default_suite=False,
)
ALL = (matmul, matmul_3000, matmul_3000_to_host)


def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return rng.standard_normal((n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype)


def _tolerance(dtype: str, params: dict[str, Any]) -> float:
    # Rounding error of a length-n dot product grows like √n·eps; TF32 (eps 1e-3) fails this.
    return 4.0 * np.sqrt(params["n"]) * eps(dtype)


# Freivalds' check: random ±1 columns X; a correct C has C·X = A·(B·X) up to rounding. A wrong
# entry C[i, j] moves (C·X)[i] by its error times ±1, so one entry off by more than the threshold
# is caught whatever X is; any wrong row escapes one column only when its errors cancel exactly
# for that draw, which for ±1 columns has probability at most 1/2 (Littlewood–Offord): all
# PROBES columns, at most 2⁻⁸.
PROBES = 8
# Rows whose float32 product (NumPy's order) shows how far a correct C·X lands from A·(B·X).
CALIBRATION_ROWS = 16
# Below this n the float64 product costs under ~10 ms: the exact norm check is cheap there.
SKETCH_MIN_N = 512
ROWS_PER_PASS = 256  # rows converted to float64 at a time: bounded temporaries at 8192²


def _times(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """m·x in float64 (m of any float dtype), converting `m` a block of rows at a time."""
    return np.concatenate([m[i:i + ROWS_PER_PASS].astype(np.float64) @ x for i in range(0, len(m), ROWS_PER_PASS)])


def _freivalds_expect(host: tuple, dtype: str, params: dict[str, Any], rng: np.random.Generator) -> dict:
    """A·(B·X) in float64 and the threshold a correct product's C·X stays within (O(n²) each)."""
    a, b = host
    n = a.shape[0]
    x = rng.choice(np.array([-1.0, 1.0]), size=(n, PROBES))
    expected = _times(a, _times(b, x))
    rows = np.sort(rng.choice(n, size=min(CALIBRATION_ROWS, n), replace=False))
    a_rows = a[rows].astype(np.float64)
    # The sampled rows of C exactly (in float64) and as a float32 product computes them.
    exact = sum(a_rows[:, i:i + ROWS_PER_PASS] @ b[i:i + ROWS_PER_PASS].astype(np.float64)
                for i in range(0, n, ROWS_PER_PASS))
    rounded = (a[rows].astype(np.float32) @ b.astype(np.float32, copy=False)).astype(np.float64)
    # What rounding alone leaves in a correct product's C·X on those rows, scaled to the case's dtype.
    residual32 = max(float(np.max(np.abs((rounded - exact) @ x))), float(np.finfo(np.float32).tiny))
    residual = residual32 * eps(dtype) / eps("float32")
    return {"x": x, "expected": expected, "tolerance": np.array(SAFETY * residual)}


def _freivalds_check(out: Any, expected: dict[str, Any], dtype: str, params: dict[str, Any]) -> Check:
    """|C·X − A·(B·X)| row by row against the calibrated threshold; reported relative to max |A·(B·X)|."""
    (c,) = leaves(out)
    x, want, threshold = expected["x"], expected["expected"], float(expected["tolerance"])
    scale = float(np.max(np.abs(want))) or 1.0
    if c.shape != (x.shape[0], x.shape[0]):
        return Check(False, float("inf"), float("inf"), threshold / scale, f"shape {c.shape}, expected {x.shape[0]}²")
    residual = float(np.max(np.abs(_times(c, x) - want)))
    if not np.isfinite(residual):
        return Check(False, float("inf"), float("inf"), threshold / scale, "output has NaN or inf")
    detail = "" if residual <= threshold else (f"C·X differs from A·(B·X) by {residual:.3g} "
                                              f"(threshold {threshold:.3g}): some entry is wrong")
    return Check(residual <= threshold, residual, residual / scale, threshold / scale, detail)


def _freivalds_describe(expected: dict[str, Any]) -> str:
    return (f"Freivalds: C·X = A·(B·X) in float64 for {PROBES} random ±1 columns; an entry off by more than "
            f"{float(expected['tolerance']):.2g} is always caught, wrong entries that cancel within a row "
            f"escape with probability ≤ 2⁻{PROBES}")


FREIVALDS = Sketch(applies=lambda params: params["n"] >= SKETCH_MIN_N, expect=_freivalds_expect,
                   check=_freivalds_check, describe=_freivalds_describe)

for wl in ALL:
    wl.inputs(_inputs)
    wl.reference(lambda a, b, n: a @ b)
    wl.check_with(norm_check(_tolerance))
    wl.sketch = FREIVALDS


for wl in (matmul, matmul_3000):
    register_everywhere(wl, lambda be: lambda a, b: a @ b, cupy_jit=False)


def _to_host_everywhere() -> None:
    """The product, then the backend's own device-to-host copy: `.cpu().numpy()`, `np.asarray`..."""
    def build(be: Backend, **params: Any) -> Any:
        product = be.run_on_device(lambda a, b: a @ b)
        return lambda a, b: be.to_host(product(a, b))

    def build_jit(be: Backend, **params: Any) -> Any:
        product = be.jit(lambda a, b: a @ b, "jit")
        return lambda a, b: be.to_host(product(a, b))

    matmul_3000_to_host.impl("numpy")(build)
    matmul_3000_to_host.impl("cupy")(build)
    matmul_3000_to_host.cannot("cupy", "jit", NO_FUSE)
    matmul_3000_to_host.impl("numba", "jit")(build_jit)
    for backend in ("jax", "tensorflow", "torch"):
        matmul_3000_to_host.impl(backend)(build)
        matmul_3000_to_host.impl(backend, "jit")(build_jit)


_to_host_everywhere()
