"""Your own workloads: `@workload` over one array-API function, and `run` from Python or a notebook."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from arraybench.backends import BACKENDS, Backend, backend_class
from arraybench.errors import UsageError, install_hint, require_linux
from arraybench.measure import pitfalls
from arraybench.planning.options import RUN_OPTIONS
from arraybench.planning.settings import run_settings
from arraybench.results import Results
from arraybench.results.run_ids import run_id
from arraybench.store import Configured, StoredRun, default_store
from arraybench.workloads import WORKLOADS
from arraybench.workloads.workload import DEFAULT_RTOL, Builder, Workload

if TYPE_CHECKING:
    from arraybench.comparison import Comparison

F = TypeVar("F", bound=Callable[..., Any])

# Where a framework's own namespace is not the Python array API, array-api-compat wraps it;
# JAX's and TensorFlow's (tf.experimental.numpy) come from the backend itself.
COMPAT = {"numpy": "array_api_compat.numpy", "torch": "array_api_compat.torch", "cupy": "array_api_compat.cupy"}

# (backend, mode) pairs that array-API code cannot reach: only an override runs there.
NOT_DERIVED = {
    ("numba", "jit"): "numba compiles loops over NumPy arrays, not array-API code",
    ("cupy", "jit"): "cupy.fuse compiles elementwise functions only",
}
# Numba's eager mode would be NumPy again: it is not planned unless overridden.
NOT_PLANNED = {("numba", "eager")}


def namespace(be: Backend) -> Any:
    """The array-API namespace a user's function receives as `xp` on backend `be`."""
    module = COMPAT.get(be.name)
    if module is None:
        return be.xp
    return importlib.import_module(module)


def named(fn: Callable[..., Any], available: dict[str, Any]) -> dict[str, Any]:
    """The entries of `available` that `fn` takes by name, so it declares only what it uses."""
    sig = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in sig.values()):
        return dict(available)
    return {k: v for k, v in available.items() if k in sig}


def call_named(fn: Callable[..., Any], *args: Any, **available: Any) -> Any:
    return fn(*args, **named(fn, available))


def _builder(fn: Callable[..., Any], mode: str, with_xp: bool) -> Builder:
    """A builder that binds `xp` and the parameters `fn` names, then compiles it in a JIT mode.

    Parameters are bound as Python values, so a JIT sees them as constants: `range(steps)`
    unrolls or loops as it would in the user's own code.
    """

    def build(be: Backend, **params: Any) -> Callable[..., Any]:
        lead = (namespace(be),) if with_xp else ()
        bound = named(fn, params)
        call = functools.partial(fn, *lead, **bound) if lead or bound else fn
        return be.run_on_device(call) if mode == "eager" else be.jit(call, mode)

    return build


def _host_inputs(name: str, out: Any, dtype: type) -> tuple[Any, ...]:
    """The inputs as a tuple, refused where a backend would get other than the run's dtype."""
    items = (out,) if isinstance(out, np.ndarray) else tuple(out)
    for i, a in enumerate(items):
        if not isinstance(a, np.ndarray | np.generic):
            raise TypeError(f"{name}'s inputs must be NumPy arrays or NumPy scalars such as "
                            f"dtype(2.0); input {i} is a {type(a).__name__}")
        if a.dtype.kind == "f" and a.dtype != dtype:
            raise TypeError(f"{name}'s input {i} is {a.dtype} in a {np.dtype(dtype)} run; "
                            "make it with .astype(dtype)")
    return items


class UserWorkload(Workload):
    """A workload written once against the Python array API; each backend's versions derive from it.

    Calling it calls the function, so `saxpy(np, a, x, y)` still works in a notebook.
    """

    def __init__(self, compute: Callable[..., Any], **fields: Any) -> None:
        super().__init__(**fields)
        self.compute = compute
        for backend, cls in BACKENDS.items():
            for mode in cls.modes():
                if (backend, mode) in NOT_DERIVED:
                    self.cannot(backend, mode, f"{NOT_DERIVED[backend, mode]}; add a version with "
                                               f"@{self.name}.override({backend!r}, {mode!r})")
                elif (backend, mode) not in NOT_PLANNED:
                    self.impls[(backend, mode)] = _builder(self.compute, mode, with_xp=True)
        self.make_reference = self._with_numpy

    def __call__(self, xp: Any, *args: Any, **kwargs: Any) -> Any:
        return self.compute(xp, *args, **kwargs)

    def _with_numpy(self, *inputs: Any, **params: Any) -> Any:
        """The default reference: the computation itself, run by NumPy on the float64 inputs."""
        import array_api_compat.numpy as xp

        return call_named(self.compute, xp, *inputs, **params)

    def inputs(self, fn: F) -> F:
        """Register `fn(rng, dtype, <parameters it names>)` -> the host NumPy inputs, in order.

        `dtype` is the NumPy scalar type of the run (`np.float32`, ...); `rng` a seeded
        `np.random.Generator`, the same for every backend.
        """

        def make(rng: np.random.Generator, dtype: type, **params: Any) -> tuple[Any, ...]:
            return _host_inputs(self.name, call_named(fn, rng, dtype=dtype, **params), dtype)

        self.make_inputs = make
        return fn

    def reference(self, fn: F) -> F:
        """Register `fn(*inputs in float64, <parameters it names>)` -> the expected output.

        Without one, the reference is the computation itself run by NumPy in float64.
        """
        self.make_reference = functools.partial(call_named, fn)
        return fn

    def override(self, backend: str, *modes: str) -> Callable[[F], F]:
        """Register an expert version of the computation for `backend` in `modes`.

        It takes the inputs and the parameters it names, like the computation but without
        `xp`. In a JIT mode arraybench compiles it with that backend's JIT (`numba.njit`,
        `jax.jit`, `torch.compile`, `tf.function(jit_compile=True)`), so write plain code.
        """
        cls = backend_class(backend)
        if not modes or any(m not in cls.modes() for m in modes):
            raise UsageError(f"override({backend!r}, ...) needs modes {backend} has: {', '.join(cls.modes())}")

        def register(fn: F) -> F:
            for mode in modes:
                self.impls[(backend, mode)] = _builder(fn, mode, with_xp=False)
                self.unsupported.pop((backend, mode), None)
            return fn

        return register

    def unsupported_because(self, error: Exception, backend: str) -> str | None:
        return pitfalls.explain(error, backend)


def _points(presets: dict[str, Any]) -> list[tuple[str, Any]]:
    """(preset name, point) for every point; a preset is one point or a list of them (a sweep)."""
    return [(label, p) for label, preset in presets.items()
            for p in (preset if isinstance(preset, list) else [preset])]


def _defaults(name: str, presets: dict[str, Any], params: dict[str, Any] | None) -> dict[str, Any]:
    """Every parameter with its default: `params`, or else the first preset's values."""
    points = _points(presets)
    for label, point in points:
        if not isinstance(point, dict):
            raise UsageError(f"workload {name!r}: preset {label!r} must be a dict of parameters "
                             "or a list of them")
    if params is None:
        if not points:
            raise UsageError(f"workload {name!r} needs presets= or params=")
        params = dict(points[0][1])
    for label, point in points:
        extra = set(point) - set(params)
        if extra:
            raise UsageError(f"workload {name!r}: preset {label!r} sets {sorted(extra)[0]!r}, which is "
                             "not a parameter; give every parameter in params= or the first preset")
    for key, value in params.items():
        if not isinstance(value, int | float | str):
            raise UsageError(f"workload {name!r}: parameter {key!r} must be a number or a string, "
                             f"not {type(value).__name__}")
    return dict(params)


def _source(fn: Callable[..., Any]) -> str | None:
    """The file defining `fn`, which worker processes import; None in a notebook or a REPL."""
    path = Path(inspect.getsourcefile(fn) or "")
    return str(path.resolve()) if path.suffix == ".py" and path.is_file() else None


def workload(
    *,
    presets: dict[str, dict[str, Any] | list[dict[str, Any]]] | None = None,
    name: str | None = None,
    params: dict[str, Any] | None = None,
    size: str | None = None,
    flops: Callable[..., float] | None = None,
    bytes: Callable[..., float] | None = None,
    rtol: float | dict[str, float] | None = None,
    description: str | None = None,
) -> Callable[[Callable[..., Any]], UserWorkload]:
    """Turn `def f(xp, *inputs, <parameters>)` into a workload that runs on every backend.

    presets: named parameter points, e.g. {"small": {"n": 1_000}, "large": {"n": 10_000_000}};
        a value may be a list of points (a sweep). `arraybench run` runs every preset unless
        `--sizes` picks some.
    params: every parameter with its default; without it, the first preset's values.
    size: the parameter `--sizes 10,100` sets and tables use as x axis (default: the first).
    flops, bytes: functions of the parameters they name (`bytes` may also name `itemsize`)
        giving the work of one call, for GFLOP/s and GB/s.
    rtol: the relative error allowed against the float64 reference: one number, or per
        dtype {"float32": 1e-4, "float64": 1e-10} (the default).
    """
    if importlib.util.find_spec("array_api_compat") is None:
        raise UsageError("workloads written with @workload need array-api-compat "
                         f"({install_hint(repr('arraybench[user]'))})")

    def make(fn: Callable[..., Any]) -> UserWorkload:
        label = name or fn.__name__
        all_presets = dict(presets or {})
        defaults = _defaults(label, all_presets, params)
        if not all_presets:
            all_presets = {"default": {}}
        size_param = size or next(iter(defaults), "")
        if size_param not in defaults:
            raise UsageError(f"workload {label!r}: size={size_param!r} is not one of its parameters "
                             f"({', '.join(defaults) or 'none'})")
        tolerance = dict(DEFAULT_RTOL)
        if isinstance(rtol, dict):
            tolerance.update(rtol)
        elif rtol is not None:
            tolerance = {dtype: float(rtol) for dtype in tolerance}
        doc = (inspect.getdoc(fn) or "").strip().splitlines()
        return UserWorkload(
            name=label,
            description=description or (doc[0] if doc else f"{label}, from {Path(fn.__code__.co_filename).name}"),
            defaults=defaults,
            size_param=size_param,
            presets=all_presets,
            flops=functools.partial(call_named, flops) if flops else None,
            bytes=functools.partial(call_named, bytes) if bytes else None,
            rtol=tolerance,
            source=_source(fn),
            default_presets=tuple(all_presets),
            compute=fn,
        )

    return make


def _resolve(workloads: Sequence[str | os.PathLike[str] | Workload]) -> tuple[list[str], str | None]:
    """Workload names and the one file that defines the user's, from what `run` was given."""
    from arraybench.workloads.userfile import load_workload_file

    names: list[str] = []
    files: set[str] = set()
    for w in workloads:
        if isinstance(w, Workload):
            if w.source is None and w.name not in WORKLOADS:
                raise UsageError(
                    f"workload {w.name!r} is not defined in a .py file, so the worker processes cannot "
                    "import it; put it in a file (in a notebook: %%writefile my_bench.py) and pass the path"
                )
            if w.source is not None:
                files.add(w.source)
            names.append(w.name)
        elif str(w).endswith(".py"):
            path = str(Path(w).resolve())
            files.add(path)
            names.extend(load_workload_file(path))
        else:
            names.append(str(w))
    if len(files) > 1:
        raise UsageError(f"one workload file per run, not {len(files)}: {', '.join(sorted(files))}")
    return names, next(iter(files), None)


def run(
    *workloads: str | os.PathLike[str] | Workload,
    backends: Sequence[str] | None = None,
    modes: Sequence[str] | None = None,
    sizes: Sequence[str | int] | None = None,
    params: dict[str, Any] | None = None,
    dtype: str | None = None,
    threads: int | None = None,
    devices: Sequence[str] | None = None,
    seed: int | None = None,
    timeout: float | None = None,
    min_time: float | None = None,
    max_time: float | None = None,
    spell_wait: float | None = None,
    min_samples: int | None = None,
    processes: int | None = None,
    refine: int | None = None,
    memory_limit: int | None = None,
    full_check: bool = False,
    fixed_layout: bool = False,
    envs: Sequence[str] | None = None,
    env_vars: Sequence[str] | None = None,
    budget: float | None = None,
    cache_limit: int | None = None,
    suite: str | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    store: str | os.PathLike[str] | Configured | None = Configured.STORE,
) -> Results:
    """Measure workloads as `arraybench run` does and return the results (`.to_dataframe()`).

    Each option of a run is a keyword of the same name as `arraybench run`'s (planning/options.py
    declares them: `min_time` is `--min-time`, `envs` and `env_vars` are `--env` and `--env-var`, given
    as lists of their texts; `memory_limit` and `cache_limit` are bytes), meaning what it means there
    with the same default: both build their settings with `settings.run_settings`. With no workloads
    it runs the default suite, sampled as a plain `arraybench run` samples it; `processes` is the fresh
    worker processes per case (default 3); `refine` the rounds of measuring more sizes where the
    fastest backend·mode changes (default 4).
    `workloads`: built-in names, a `.py` file (all its workloads) or workloads defined in
    one. The results file goes to `output_dir` (a new temporary directory by default, see
    `results.path`), where `arraybench report` and `compare` read it. The run is also added
    to the results store `store` (a SQLite file or a postgresql:// URL; by default the one
    `arraybench run` would use: $ARRAYBENCH_STORE, `store` of [tool.arraybench], else
    .arraybench/results.db; None for none), so `arraybench history` lists notebook runs too and
    `compare("latest", ...)` finds them.
    """
    keywords = locals()  # first, so that it holds the keywords as given and nothing else
    from arraybench.envs.spec import run_envs
    from arraybench.execution import session
    from arraybench.output import terminal
    from arraybench.store.keeping import StoreKeeper

    require_linux()
    names, source = _resolve(workloads)
    given = {option.name: keywords[option.name] for option in RUN_OPTIONS if option.keyword}
    specs = run_envs(given.pop("envs"), given.pop("env_vars"))
    settings = run_settings(workloads=names, workload_file=source, envs=specs, **given)
    out_dir = Path(output_dir) if output_dir is not None else Path(tempfile.mkdtemp(prefix="arraybench-"))
    if isinstance(store, Configured):
        store = default_store()
    keeper = None if store is None else StoreKeeper(store, _warn_if_partial)
    if not progress:
        return session.execute(settings, out_dir, keeper=keeper)
    with terminal.progress_display() as on_start:
        return session.execute(settings, out_dir, on_start=on_start, keeper=keeper)


def _warn_if_partial(stored: StoredRun) -> None:
    """A run the store holds only part of says so at its end, as `arraybench run` does."""
    if not stored.complete:
        print(f"arraybench: warning: {stored}", file=sys.stderr)


def compare(
    base: str | os.PathLike[str] | Results,
    new: str | os.PathLike[str] | Results,
    *,
    threshold: float = 0.05,
    store: str | os.PathLike[str] | Configured = Configured.STORE,
) -> Comparison:
    """Compare two runs as `arraybench compare` does: each a Results, a results file or a stored
    run id (`latest` too) of `store` (by default the one `arraybench run` would use). The
    Comparison's `cases` hold a verdict per case; print it for the table."""
    from arraybench.comparison import compare as compare_results
    from arraybench.store import load

    location = default_store() if isinstance(store, Configured) else store
    sides = [side if isinstance(side, Results) else load(side, location) for side in (base, new)]
    names = (f"run {run_id(sides[0].header)}", f"run {run_id(sides[1].header)}")
    return compare_results(sides[0], sides[1], threshold=threshold, names=names)
