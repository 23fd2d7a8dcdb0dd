"""A long element-wise float64 kernel (300 operations on 65 536 elements), the case of issue 11.

In NumPy each operation allocates a 512 KiB temporary: above glibc's initial 128 KiB mmap
threshold, so how long a call takes depends on the C allocator's state.

    arraybench run --workload-file benchmarks/long_kernel.py --dtype float64
"""

import arraybench as ab

STEPS = 100  # three operations each


@ab.workload(
    name="long_kernel",
    presets={"small": {"n": 65_536}, "large": {"n": 1_048_576}},
    flops=lambda n: 3.0 * STEPS * n,
    bytes=lambda n, itemsize: 2.0 * n * itemsize,
)
def long_kernel(xp, x):
    """300 element-wise operations: y ← sin(y)·0.5 + x, a hundred times"""
    y = x
    for _ in range(STEPS):
        y = xp.sin(y) * 0.5 + x
    return y


@long_kernel.inputs
def _(rng, n, dtype):
    return (rng.standard_normal(n).astype(dtype),)
