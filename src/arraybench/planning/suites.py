"""Suites: named sets of runs (`--quick`, `--suite seeds`), each part with its own sizes and dtype.

A suite is recorded in the results header as `RunSettings.suite`, so `--resume` rebuilds the
same plan. `--backends`, `--modes`, `--threads`, `--devices` and `--params` still apply; the
suite chooses workloads and sizes, and `seeds` the documents' dtypes (`quick` keeps --dtype).
A suite's sampling (QUICK_TIMER, SUITE_TIMER) is applied where settings are made (settings.sampling).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arraybench.errors import unknown
from arraybench.measure.timing import TimerConfig
from arraybench.workloads import WORKLOADS


@dataclass(frozen=True)
class Part:
    """Workloads run at `sizes` (preset names or values) in `dtype`, `params` overridden."""

    workloads: tuple[str, ...]
    sizes: tuple[str, ...]
    dtype: str
    params: tuple[tuple[str, Any], ...] = ()


# Short sampling: a few samples of ≥ 2 ms each, stopping at ±5 % (the report shows each interval);
# the first call (compile) is still timed alone. One process a case: a smoke test of the machine,
# not numbers to compare between runs (at ±2 % and up to 0.5 s it sampled 60 s of its 150).
QUICK_TIMER = TimerConfig(warmup_time=0.02, min_time=0.05, max_time=0.25, min_samples=3, processes=1,
                          target_half_width=0.05)
# The default suite holds ~300 cases and the seeds suite ~250, each measured in 3 processes:
# what makes a number reproduce is the spread between processes, so each process samples for a
# short while (0.03 s of warm-up, then 0.03-0.1 s, stopping at ±2 %: TimerConfig.target_half_width)
# and the processes bring the rest. A call longer than that still gets one sample a process.
SUITE_TIMER = TimerConfig(warmup_time=0.03, min_time=0.03, max_time=0.1)

# The configurations of the four source documents. Their iteration counts are kept where they
# are part of the computation (document 001's gradient-descent steps, linreg's `iters`); the
# timing-loop repeats of document 003 (500 calls, 100 calls...) are replaced by arraybench's
# own sampling: multiply a per-call median by the document's repeat count to compare totals.
SEEDS = (
    # 001: linear regression, 10 000 samples, 2 to 100 features, float64 ("8 Mb in float64").
    # The document states no step count: 1 000 steps a call (the workloads' default is 100).
    Part(("linreg", "linreg_autodiff"), ("sweep",), "float64", (("iters", 1_000),)),
    # 002: polynomial and x·xᵀ at 10000², NumPy in float64 and JAX in float32: both dtypes,
    # so each side is compared with the other at its own precision; the polynomial both as the
    # document wrote it and as an expert writes it.
    Part(("poly", "poly_as_written"), ("huge",), "float32"),
    Part(("poly", "poly_as_written"), ("huge",), "float64"),
    Part(("matmul",), ("huge",), "float32"),
    Part(("matmul",), ("huge",), "float64"),
    # 003: five operations at two sizes, float64 ("2000x2000 float64").
    Part(("elementwise_add", "elementwise_mul", "elementwise_sin", "matmul", "grad", "fft", "sort"),
         ("small", "large"), "float64"),
    # 004: 3000² float32 throughout (jax.random.normal, tf.random.normal and torch.randn defaults).
    Part(("matmul_3000", "matmul_3000_to_host", "transfer_to_device", "transfer_to_host", "rng", "selu"),
         ("large",), "float32"),
    Part(("retrace_cached", "retrace_new_shape"), ("small",), "float32"),
)


def quick_parts(dtype: str) -> tuple[Part, ...]:
    """Every workload that has a `small` preset, at that preset.

    Gradient descent runs 100 steps instead of 1 000: eager JAX differentiates at ~10 ms a
    step, and five calls of 1 000 steps would take a minute of the two the suite may use.
    """
    small = [n for n, wl in WORKLOADS.items() if "small" in wl.presets]
    steps = [n for n in small if "iters" in WORKLOADS[n].defaults]
    return (
        Part(tuple(n for n in small if n not in steps), ("small",), dtype),
        Part(tuple(steps), ("small",), dtype, (("iters", 100),)),
    )


def vmap_parts(dtype: str) -> tuple[Part, ...]:
    """Every form (loop, vmap, batched) of every vmap family over its batch-size sweep, in the run's
    dtype: the report's vmap section (report/vmap.py) sets the forms side by side."""
    return (Part(tuple(n for n, wl in WORKLOADS.items() if wl.family is not None), ("sweep",), dtype),)


SUITES = {"quick": quick_parts, "seeds": lambda dtype: SEEDS, "vmap": vmap_parts}


def suite_parts(suite: str, dtype: str) -> tuple[Part, ...]:
    """The parts of `suite` for a run in `dtype`; plan.build_plan plans each like a plain run."""
    if suite not in SUITES:
        raise unknown("suite", suite, SUITES)
    return SUITES[suite](dtype)

