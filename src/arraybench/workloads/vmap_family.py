"""A family of three workloads: one per-example function run as a Python loop, through the
framework's vectorising map, and in the batched form an expert writes by hand (issue 21).

Each form is its own workload (`pergrad_loop`, `pergrad_vmap`, `pergrad_batched`), so a table keeps
one workload with batch sizes as columns; `Workload.family` names the family and the form, and the
report's vmap section (report/vmap.py) sets the three side by side. The forms share their inputs,
reference and work counts: the same answer three ways.
"""

from collections.abc import Callable
from typing import Any

from arraybench.backends.backend import Backend
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import Workload

LOOP, VMAP, BATCHED = "loop", "vmap", "batched"
FORMS = (LOOP, VMAP, BATCHED)
HOW = {
    LOOP: "the per-example function called in a Python loop over the examples, results stacked",
    VMAP: "the framework's vectorising map of the same per-example function",
    BATCHED: "the batched form written by hand",
}
# The batch sizes: one example (where the loop's single call should win) to where a vectorised
# form has the whole batch to work on, every power of two, so that "vmap beats the loop from b" is
# bracketed within a factor of 2. `small` and `large` are two of the sweep's points.
BATCH_PRESETS: dict[str, Any] = {"small": {"b": 16}, "large": {"b": 256}, "sweep": log_sweep("b", 1, 1024, 11)}

NO_VMAP_NUMPY = ("NumPy has no vectorising map: np.vectorize is a Python loop over scalars, not over "
                 "examples; NumPy's forms are the loop and the batched one")
NO_VMAP_CUPY = "CuPy has no vectorising map; its forms are the loop and the batched one"
NO_FUSE_CUPY = "cupy.fuse fuses element-wise kernels only; these forms slice arrays or multiply matrices"


def family(name: str, description: str, **fields: Any) -> dict[str, Workload]:
    """The three forms of one computation, by form; `fields` are the Workload fields they share.

    Not in the default suite: a loop of 1 024 eager calls is seconds a call; `--suite vmap` runs them.
    """
    return {form: Workload(name=f"{name}_{form}", description=f"{description}: {HOW[form]}",
                           size_param="b", presets=dict(BATCH_PRESETS), family=(name, form),
                           in_default_suite=False, **fields)
            for form in FORMS}


def looped(per_example: Callable[..., Any], stack: Callable[[list[Any]], Any], shared: int = 0) -> Callable[..., Any]:
    """The loop form: `per_example(*shared args, *row i of each other arg)` for each example i, in
    Python, each output stacked along a new leading axis (per part, where it returns a tuple)."""

    def run(*args: Any) -> Any:
        fixed, batch = args[:shared], args[shared:]
        outs = [per_example(*fixed, *row) for row in zip(*batch, strict=True)]
        if isinstance(outs[0], tuple):
            return tuple(stack(list(parts)) for parts in zip(*outs, strict=True))
        return stack(outs)

    return run


def register_loop(wl: Workload, backend: str, one: Callable[..., Callable[..., Any]],
                  stack: Callable[..., Callable[[list[Any]], Any]], shared: int = 0,
                  modes: tuple[str, ...] = ("eager", "jit")) -> None:
    """Register the loop form of `one(be)`, the per-example function, on `backend` in `modes`:
    eager calls it as it is; jit compiles it once (`Backend.jit`) and calls the compiled function
    per example, the stacking staying in Python as a user's loop leaves it."""

    def build(be: Backend, mode: str) -> Callable[..., Any]:
        fn = be.jit(one(be), "jit") if mode == "jit" else one(be)
        return be.run_on_device(looped(fn, stack(be), shared))

    for mode in modes:
        wl.impl(backend, mode)(lambda be, _mode=mode, **params: build(be, _mode))
