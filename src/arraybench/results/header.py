"""The run header: the frozen, typed first line of a results file, its parts and their field registry.

A results file's first line says what ran and where: the run's settings, the machine's environment
and its measured peaks, the Python environments of a run of several (`--env`), the plan's size. As
the case record (record.py) does for a case, every field is declared here once with its meaning;
`RunHeader.from_json` reads a header of the current schema (results.upgrade_header brings an older
one there) and `to_json` writes the same JSON back, key for key in the order it was read, so a
header that is read and written again (an export, a store) stays byte-identical. A key this
arraybench does not declare is kept in `extra`, never dropped.

A part (and the header) is read by attribute (`res.header.settings.dtype`), as the case record is;
`to_json` gives its JSON where a dict is needed, and `from_json` (or results.upgrade_header) makes
one from a dict.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from arraybench.results.record import BOTH, FieldInfo
from arraybench.stats.pooling import VariancePrior
from arraybench.stats.spells import SpellCount

P = TypeVar("P", bound="Part")
# Words a CPU or GPU model name carries that tell no two machines apart.
NOISE_WORDS = re.compile(r"\((R|TM)\)|\b(NVIDIA|AMD|Intel|Tesla|GeForce|CPU|Processor)\b|@.*$", re.I)
# A GPU name's memory and packaging ("80GB HBM3", "-40GB"): the model is what people call it by.
GPU_MEMORY = re.compile(r"[\s-]*\b\d+\s*[GM]i?B\b.*$", re.I)


def declared(meaning: str, unit: str = "", default: Any = None, factory: Callable[[], Any] | None = None,
             decode: Callable[[Any], Any] | None = None) -> Any:
    """A header field with its registry entry (record.described's metadata): its unit and meaning, and
    for a typed part how its JSON becomes the part (`decode`: from a JSON object; the part's own
    `to_json` writes it back)."""
    meta = {"unit": unit, "meaning": meaning, "scope": BOTH, "required": False, "decode": decode}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _kept(factory: Callable[[], Any]) -> Any:
    """A field that is no part of the registry: what a part keeps to write its JSON back as read."""
    return dataclasses.field(default_factory=factory, repr=False)


@dataclass(frozen=True, eq=False)
class Part:
    """What every typed part of the header shares: the keys it was read with, in order, and those this
    arraybench does not declare (`extra`), so that `to_json` gives back what `from_json` read."""

    extra: Mapping[str, Any] = _kept(factory=dict)
    keys_read: tuple[str, ...] = _kept(factory=tuple)

    @classmethod
    def declared_fields(cls) -> tuple[dataclasses.Field[Any], ...]:
        return tuple(f for f in dataclasses.fields(cls) if "meaning" in f.metadata)

    @classmethod
    def from_json(cls: type[P], obj: Mapping[str, Any]) -> P:
        """The part of a JSON object (a part already typed is taken as it is). A declared typed part
        whose JSON is not an object (a file made by hand) stays in `extra`, as read, the field its default."""
        kw: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        names = {f.name: f for f in cls.declared_fields()}
        for key, value in obj.items():
            f = names.get(key)
            decode = f.metadata["decode"] if f is not None else None
            if f is None or (value is None and f.default_factory is not dataclasses.MISSING):
                extra[key] = value  # unknown, or null where a container is declared: kept as read
            elif decode is None or value is None or _typed(value):
                kw[key] = value
            elif isinstance(value, Mapping):
                kw[key] = decode(value)
            else:
                extra[key] = value
        return cls(**kw, extra=extra, keys_read=tuple(obj))

    def to_json(self) -> dict[str, Any]:
        """The part's JSON: its keys as read, in that order, then any declared field set since (one
        that differs from its default)."""
        defaults = {f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
                    for f in self.declared_fields()}
        out: dict[str, Any] = {}
        for key in self.keys_read:
            out[key] = self.extra[key] if key in self.extra else _encode(getattr(self, key))
        for name, default in defaults.items():
            if name not in out and getattr(self, name) != default:
                out[name] = _encode(getattr(self, name))
        out.update({k: v for k, v in self.extra.items() if k not in out})
        return out

    def __eq__(self, other: object) -> bool:
        """Equal to another part of the same JSON (in whatever order of keys)."""
        if isinstance(other, Part):
            return self.to_json() == other.to_json()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def _typed(value: Any) -> bool:
    return isinstance(value, (Part, VariancePrior, SpellCount)) or (
        isinstance(value, Mapping) and bool(value) and all(isinstance(v, Part) for v in value.values()))


def _encode(value: Any) -> Any:
    if isinstance(value, Part):
        return value.to_json()
    if isinstance(value, (VariancePrior, SpellCount)):
        return value.to_json()
    if isinstance(value, Mapping) and value and all(isinstance(v, Part) for v in value.values()):
        return {k: v.to_json() for k, v in value.items()}
    return value


@dataclass(frozen=True, eq=False)
class Peaks(Part):
    """The machine's measured (or stated) peaks (measure/peaks.py): the roofs of rates and the bound."""

    matmul_gflops: dict[str, float] = declared("BLAS matmul's rate, by dtype", unit="GFLOP/s",
                                                 factory=dict)
    bandwidth_gbs: float | None = declared("a streaming copy's bandwidth through main memory", unit="GB/s")
    cache_bandwidth_gbs: float | None = declared("a copy whose data stay in one core's cache", unit="GB/s")
    cache_bytes: int | None = declared("the bytes of that copy", unit="bytes")
    harness_call_s: float | None = declared("the harness's own cost of one timed Python call", unit="s")
    threads: int | None = declared("the threads the CPU peaks were measured at", unit="threads")
    via: str | None = declared("a GPU's: the framework that measured them")
    method: str | None = declared("how they were obtained: measured, stated by ARRAYBENCH_PEAKS, skipped or failed")
    gpu: Peaks | None = declared("the GPU's peaks, measured the same way, where the run asked for a GPU",
                                 decode=lambda obj: Peaks.from_json(obj))


@dataclass(frozen=True, eq=False)
class MachineEnvironment(Part):
    """The machine the run ran on, and its software (machine/host.collect): the header's
    `environment`, and each of a cluster run's machine lines."""

    hostname: str | None = declared("the host's name")
    cpu_model: str | None = declared("the CPU's model name")
    cpu_logical: int | None = declared("logical CPUs", unit="cpus")
    cpu_physical: int | None = declared("physical cores", unit="cpus")
    cpu_affinity: int | None = declared("CPUs the run may use", unit="cpus")
    memory_bytes: int | None = declared("the machine's memory", unit="bytes")
    last_level_cache_bytes: int | None = declared("the last-level cache", unit="bytes")
    os: str | None = declared("the operating system")
    python: str | None = declared("the interpreter's version")
    python_implementation: str | None = declared("the interpreter: CPython, PyPy, …")
    versions: dict[str, str | None] = declared("each framework's version (null: not installed)", factory=dict)
    cpu_flags: list[str] = declared("the SIMD extensions the CPU has (host.SIMD_FLAGS)", factory=list)
    cpu_frequency: dict[str, Any] | None = declared("the CPU's clock: `current_mhz`, `max_mhz`, …")
    gpus: list[dict[str, Any]] = declared("each GPU: `name`, `memory`, `driver`, `index`, `pci_bus_id`, …",
                                          factory=list)
    gpu_links: list[dict[str, Any]] = declared("the links between GPUs: `gpus` (a pair) and `text`", factory=list)
    devices: list[dict[str, Any]] = declared("each device the frameworks see: `kind`, `id`, `name`", factory=list)
    env: dict[str, str] = declared("the environment variables that change how frameworks run", factory=dict)
    peaks: Peaks = declared("the machine's peaks (measure/peaks.py)", factory=Peaks,
                            decode=lambda obj: Peaks.from_json(obj))

    @property
    def fingerprint(self) -> str:
        """A short name for the hardware: the key that tells machines apart in history, the store, the
        site and reports (Results.machine_key gives a record's): host, CPU and cores, GPUs."""
        gpu = "+".join(g["name"] for g in self.gpus) or "no GPU"
        return f"{self.hostname} · {self.cpu_model} ×{self.cpu_logical} · {gpu}"


@dataclass(frozen=True, eq=False)
class PythonEnvironment(Part):
    """One Python environment of a run of several (`--env NAME`): what measured its cases."""

    spec: str | None = declared("the environment as asked for (envs/spec.py)")
    python: str | None = declared("its interpreter")
    versions: dict[str, str | None] = declared("each framework's version there (null: not installed)", factory=dict)
    variables: dict[str, str] = declared("the environment variables it set", factory=dict)
    packages: list[dict[str, Any]] | None = declared("every package installed, with where it came from "
                                                     "(machine/packages.py); null: a file from before")


@dataclass(frozen=True, eq=False)
class HeaderSettings(Part):
    """The run's settings as recorded (planning.settings.RunSettings.to_dict), which --resume rebuilds."""

    workloads: list[str] | None = declared("the workloads asked for")
    backends: list[str] | None = declared("the backends asked for")
    modes: list[str] | None = declared("the modes asked for")
    sizes: list[str] | None = declared("`--sizes` (null: each workload's own)")
    dtype: str | None = declared("the dtype")
    threads: int | None = declared("the threads per worker", unit="threads")
    devices: list[str] | None = declared("the device tokens asked for (`--devices`)")
    seed: int | None = declared("the seed of the inputs")
    timeout: float | None = declared("the per-case timeout", unit="s")
    timer: dict[str, Any] | None = declared("the timer's settings (measure.timer.TimerConfig)")
    memory_limit: int | None = declared("bytes of writable memory per worker", unit="bytes")
    fixed_layout: bool | None = declared("`--fixed-layout`: no random placement of the inputs")
    suite: str | None = declared("a named suite that chose the workloads")


@dataclass(frozen=True, eq=False)
class Analysis(Part):
    """What reading a run worked out beyond its records (report.data.analysis): never written to a
    results file, set on the header the report reads."""

    prior: VariancePrior | None = declared("the spread between processes pooled over the run's cases",
                                           decode=lambda obj: VariancePrior(**obj))
    full_speed_s: float | None = declared("the host's reference kernel at the run's full speed", unit="s")
    host_slowdown: float | None = declared("the reference kernel's median over its full speed", unit="ratio")
    memory_full_speed_s: float | None = declared("the memory reference at its fastest", unit="s")
    memory_slowdown: float | None = declared("the memory reference's median over its fastest", unit="ratio")
    memory_reference: str | None = declared("what the memory reference measured")
    fixed_layout: bool | None = declared("whether the run ran under `--fixed-layout`")
    spells: SpellCount | None = declared("what the host's slow spells reached", decode=lambda obj: SpellCount(**obj))
    short_of_samples: int | None = declared("processes stopped by `budget` short of samples", unit="count")
    bimodal_processes: int | None = declared("processes whose samples split into two modes", unit="count")
    pool_fastest_s: float | None = declared("the pool reference (`pool_ref_s`) at its fastest over the run's "
                                            "processes of several threads", unit="s")
    pool_slow_share: float | None = declared("the share of the run's processes of several threads whose pool "
                                             "reference ran stats.pools.POOL_SHIFT× its fastest or more (stalls set "
                                             "aside: stats.pools.stalled)",
                                             unit="ratio")


@dataclass(frozen=True, eq=False)
class RunHeader(Part):
    """A results file's first line: what ran, where and how; its parts typed."""

    type: str | None = declared("the line's kind: `header`")
    schema: int | None = declared("the schema the file was written in (results/__init__.py)")
    run_id: str | None = declared("the run's id (results.run_ids.run_id derives one for a file without)")
    arraybench_version: str | None = declared("the arraybench that ran it")
    started: str | None = declared("when the run started, UTC")
    git: dict[str, Any] | None = declared("arraybench's own git commit, where it ran from a checkout")
    settings: HeaderSettings = declared("the run's settings", factory=HeaderSettings,
                                        decode=lambda obj: HeaderSettings.from_json(obj))
    environment: MachineEnvironment = declared("the machine and its software", factory=MachineEnvironment,
                                               decode=lambda obj: MachineEnvironment.from_json(obj))
    plan_size: int | None = declared("how many cases the run planned", unit="count")
    environments: dict[str, PythonEnvironment] = declared(
        "a run of several Python environments (`--env`): each one by name, in the run's order",
        factory=dict, decode=lambda obj: {k: PythonEnvironment.from_json(v) for k, v in obj.items()})
    analysis: Analysis | None = declared("what reading the run worked out (set by the report, never written)",
                                         decode=lambda obj: Analysis.from_json(obj))

    @property
    def peaks(self) -> Peaks:
        """The peaks of the run's machine."""
        return self.environment.peaks

    @property
    def planned(self) -> int | None:
        """`plan_size` where it is a count; None where the header does not say (a file made by hand)."""
        size = self.plan_size
        return size if isinstance(size, int) and not isinstance(size, bool) else None

    def versions_of(self, case_id: str) -> Mapping[str, str | None]:
        """The framework versions a case of this run was measured with: its Python environment's
        (`...@NAME`), else the machine's."""
        for name, env in self.environments.items():
            if case_id.endswith(f"@{name}"):
                return env.versions
        return self.environment.versions


def machine_names(names: Mapping[str, str], hosts: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each machine key's name, by one rule wherever machines are named: the name it would have
    (`names`: a report names a machine by its host, the site and the store's history by its model,
    model_names); where machines here would share one, the host name (`hosts`, else `names`) is added
    where it tells them apart, and otherwise each is called by its key (its fingerprint: host, CPU
    and cores, GPUs)."""
    hosts = names if hosts is None else hosts
    out = {}
    for key, name in names.items():
        same = sorted(k for k, n in names.items() if n == name)
        if len(same) > 1:
            tags = [hosts[k] for k in same]
            name = f"{name} ({hosts[key]})" if name != hosts[key] and len(set(tags)) == len(tags) else key
        out[key] = name
    return out


def model_names(envs: Mapping[str, MachineEnvironment]) -> dict[str, str]:
    """Each machine key's name by its model (short_name), as the site and the store's history call it."""
    return machine_names({key: short_name(env) for key, env in envs.items()},
                         {key: str(env.hostname) for key, env in envs.items()})


def short_name(machine: MachineEnvironment) -> str:
    """'H100' for a machine with one NVIDIA H100 80GB HBM3; '2-core EPYC' for a 2-vCPU AMD EPYC."""
    gpus = [g.get("name") or "" for g in machine.gpus]
    if gpus:
        names = [GPU_MEMORY.sub("", " ".join(NOISE_WORDS.sub(" ", g).split())).strip(" -") or g for g in gpus]
        kinds = sorted(set(names))
        return " + ".join(f"{names.count(k)}× {k}" if names.count(k) > 1 else k for k in kinds)
    cpu = " ".join(NOISE_WORDS.sub(" ", str(machine.cpu_model or "")).split())
    cores = machine.cpu_logical
    if not cpu:
        return str(machine.hostname or "unknown machine")
    return f"{cores}-core {cpu}" if cores else cpu


def fields_of(cls: type[Part]) -> tuple[FieldInfo, ...]:
    """A part's registry (record.FieldInfo, as record.registry gives a record's): its declared fields."""
    return tuple(FieldInfo(f.name, str(f.type), f.metadata["unit"], f.metadata["meaning"], f.metadata["scope"],
                           f.metadata["required"]) for f in cls.declared_fields())


HEADER_FIELDS: tuple[FieldInfo, ...] = fields_of(RunHeader)
ENVIRONMENT_FIELDS: tuple[FieldInfo, ...] = fields_of(MachineEnvironment)
PEAKS_FIELDS: tuple[FieldInfo, ...] = fields_of(Peaks)
SETTINGS_FIELDS: tuple[FieldInfo, ...] = fields_of(HeaderSettings)
PYTHON_ENVIRONMENT_FIELDS: tuple[FieldInfo, ...] = fields_of(PythonEnvironment)
ANALYSIS_FIELDS: tuple[FieldInfo, ...] = fields_of(Analysis)
