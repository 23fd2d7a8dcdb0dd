"""Settings: what a run measures, built in one place from the values the CLI or the Python API was given."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arraybench.backends import BACKENDS, backend_class
from arraybench.core.case import DTYPES, MODES
from arraybench.core.device_tokens import DeviceSpec, parse_devices
from arraybench.core.env_spec import EnvSpec
from arraybench.errors import UsageError, unknown
from arraybench.measure.casecache import DEFAULT_LIMIT as DEFAULT_CACHE_LIMIT
from arraybench.measure.timing import TimerConfig
from arraybench.planning.fit import limit_of
from arraybench.planning.refine import ROUNDS as REFINE_ROUNDS
from arraybench.planning.suites import QUICK_TIMER, SUITE_TIMER
from arraybench.workloads import WORKLOADS
from arraybench.workloads.userfile import load_workload_file

# The default suite: every built-in workload at its default presets (small and large), but those
# that only repeat another at one fixed size (Workload.in_default_suite).
DEFAULT_WORKLOADS = tuple(name for name, wl in WORKLOADS.items() if wl.in_default_suite)


def default_threads() -> int:
    return len(os.sched_getaffinity(0))


def parse_list(text: str | None) -> list[str] | None:
    """`a, b,` -> ["a", "b"]; None for no text or no items, so the default applies."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    return items or None


def parse_params(text: str | None) -> dict[str, Any]:
    """`n=1000,lr=0.01` -> {"n": 1000, "lr": 0.01}: numbers where they parse, else strings."""
    out: dict[str, Any] = {}
    for item in parse_list(text) or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise UsageError(f"bad --params item {item!r}: expected NAME=VALUE")
        value: Any = raw
        for conv in (int, float):
            try:
                value = conv(raw)
                break
            except ValueError:
                continue
        if isinstance(value, int | float) and value <= 0:
            raise UsageError(f"bad --params item {item!r}: values must be positive")
        out[key.strip()] = value
    return out


@dataclass(frozen=True)
class RunSettings:
    """Everything that decides what a run measures; stored in the results header for --resume."""

    workloads: list[str] = field(default_factory=lambda: list(DEFAULT_WORKLOADS))
    backends: list[str] = field(default_factory=lambda: list(BACKENDS))
    modes: list[str] = field(default_factory=lambda: list(MODES))
    sizes: list[str] | None = None
    dtype: str = "float32"
    threads: int = field(default_factory=default_threads)
    devices: list[str] = field(default_factory=lambda: ["cpu"])
    seed: int = 0
    timeout: float = 600.0
    timer: TimerConfig = field(default_factory=TimerConfig)
    workload_file: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    memory_limit: int | None = None  # bytes of writable memory per worker (limits.apply_memory_limit)
    suite: str | None = None  # a named suite (arraybench.planning.suites) chooses workloads, sizes, dtypes
    # Rounds of measuring more sizes where the fastest backend·mode changes (refine.py); 0: none.
    refine: int = REFINE_ROUNDS
    # Check every case against its full reference, even where a cheaper sketch applies (matmul's Freivalds).
    full_check: bool = False
    # Bytes the run's cache of inputs and references may hold (casecache.py).
    cache_limit: int = DEFAULT_CACHE_LIMIT
    # One memory layout for every process: intervals then leave out what layout moves (parent.RunConfig).
    fixed_layout: bool = False
    # Python environments measured side by side (`--env NAME:SPEC` with its `--env-var NAME:VAR=VALUE`,
    # read by envs.spec.run_envs where the run is given them), their processes interleaved in the same
    # rounds; empty: this interpreter alone.
    envs: tuple[EnvSpec, ...] = ()
    # Seconds of rounds beyond the planned processes for the cases whose question stays open
    # (execution/more_rounds.py); None: a share of the first rounds' time (session.BUDGET_SHARE, or
    # ENV_BUDGET_SHARE in a run of several environments).
    budget: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The settings as the results header keeps them: each environment as its `--env` option, and
        their variables as `--env-var` options (`env_vars`), which --resume reads again."""
        out: dict[str, Any] = {}
        for key, value in asdict(dataclasses.replace(self, envs=())).items():
            out[key] = value
            if key == "envs":
                out["envs"] = [spec.option for spec in self.envs]
                out["env_vars"] = [option for spec in self.envs for option in spec.variable_options]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSettings:
        """The settings a results header keeps (`to_dict`), but its environments: the caller reads their
        options (`envs`, `env_vars`) with envs.spec.run_envs, as planning reads none."""
        d = dict(d)
        d["timer"] = TimerConfig(**d.get("timer", {}))
        d["envs"] = ()
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})

    @property
    def fit_limit(self) -> int | None:
        """`--sizes fit:BYTES`: the memory limit under which the run finds each backend·mode's largest size
        (fit.py); None for a run of given sizes."""
        return limit_of(self.sizes)

    def validate(self) -> None:
        limit_of(self.sizes)  # a bad limit, or fit: beside other sizes, stops here
        for b in self.backends:
            backend_class(b)
        for m in self.modes:
            if m not in MODES:
                raise unknown("mode", m, MODES)
        if self.dtype not in DTYPES:
            raise unknown("dtype", self.dtype, DTYPES)
        if self.threads < 1:
            raise UsageError(f"--threads must be at least 1, not {self.threads}")
        kinds = {k for cls in BACKENDS.values() for k in cls.devices_supported}
        for d in self.devices:
            kind = DeviceSpec.parse(d).kind
            if kind not in kinds:
                raise unknown("device kind", kind, kinds)
        if self.timeout <= 0:
            raise UsageError(f"--timeout must be positive, not {self.timeout}")
        if self.refine < 0:
            raise UsageError(f"--refine must be 0 or more rounds, not {self.refine}")
        if self.budget is not None and not self.budget >= 0:
            raise UsageError(f"--budget must be 0 or more seconds, not {self.budget}")
        if not 0 <= self.timer.spell_wait < math.inf:
            raise UsageError(f"--spell-wait must be 0 or more seconds, and finite, not {self.timer.spell_wait}")


def sampling(suite: str | None, default_suite: bool, given: dict[str, Any]) -> TimerConfig:
    """How a run samples: its suite's timer (the default suite's without --workloads), then what was given.

    A suite holds hundreds of cases, so it samples for less time than a run of chosen workloads;
    a value the user gave always wins, whichever timer it lands on.
    """
    if suite == "quick":
        base = QUICK_TIMER
    elif suite is not None or default_suite:
        base = SUITE_TIMER
    else:
        base = TimerConfig()
    return dataclasses.replace(base, **{k: v for k, v in given.items() if v is not None})


def run_settings(
    *,
    workloads: Sequence[str] | None = None,
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
    workload_file: str | os.PathLike[str] | None = None,
    memory_limit: int | None = None,
    suite: str | None = None,
    refine: int | None = None,
    full_check: bool = False,
    cache_limit: int | None = None,
    fixed_layout: bool = False,
    envs: Sequence[EnvSpec] | None = None,
    budget: float | None = None,
) -> RunSettings:
    """The settings of a run, from plain values: `arraybench run` and `arraybench.run()` both call this.

    None (or empty) means "not given": workloads default to the file's (with `workload_file`) or
    else to the default suite, backends and modes to all, devices to the CPU, threads to the
    usable cores. Devices are tokens (devices.py: `cpu`, `gpu:2`, ...), normalised here. Sampling
    is the suite's (`sampling`) with the given values over it. Each keyword is an option of
    planning/options.RUN_OPTIONS; `envs` holds the environments as the caller read them
    (envs.spec.run_envs), with their `--env-var` variables.
    """
    source = str(Path(workload_file).resolve()) if workload_file else None
    names = list(workloads or [])
    if source and not names:
        names = list(load_workload_file(source))
    if suite is not None and (workloads or sizes):
        raise UsageError(f"the {suite} suite chooses workloads and sizes; leave out --workloads and --sizes")
    given = {"min_time": min_time, "max_time": max_time, "spell_wait": spell_wait, "min_samples": min_samples,
             "processes": processes}
    defaults = RunSettings()
    return RunSettings(
        workloads=names or defaults.workloads,
        backends=list(backends or defaults.backends),
        modes=list(modes or defaults.modes),
        sizes=[str(s) for s in sizes] if sizes else None,
        dtype=defaults.dtype if dtype is None else dtype,
        threads=threads if threads is not None else defaults.threads,
        devices=parse_devices(devices or []) or defaults.devices,
        seed=defaults.seed if seed is None else seed,
        timeout=defaults.timeout if timeout is None else timeout,
        timer=sampling(suite, default_suite=not (workloads or source), given=given),
        workload_file=source,
        params=dict(params or {}),
        memory_limit=memory_limit,
        suite=suite,
        refine=defaults.refine if refine is None else refine,
        full_check=full_check,
        cache_limit=defaults.cache_limit if cache_limit is None else cache_limit,
        fixed_layout=fixed_layout,
        envs=tuple(envs or ()),
        budget=budget,
    )
