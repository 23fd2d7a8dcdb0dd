"""Case: the frozen, hashable spec of one measurement; its id keys resume and compare."""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

# "fd" (finite differences) is a method, not a compiler; a workload implements the modes it
# can and the plan skips the rest.
MODES = ("eager", "jit", "fd")
DTYPES = ("float32", "float64")


@dataclass(frozen=True)
class Case:
    """What is measured: one workload at one parameter point on one backend configuration."""

    workload: str
    params: tuple[tuple[str, Any], ...]
    backend: str
    mode: str
    dtype: str
    threads: int
    device: str = "cpu"
    # Set for user workloads: the file that defines `workload`, so a worker can import it.
    source: str | None = field(default=None, compare=False)
    # The Python environment (`--env NAME:SPEC`) whose interpreter and frameworks measure it; "" for
    # a run in one environment. Part of the id, after the spec's: `...@NAME` (base_id drops it).
    env: str = ""

    @property
    def params_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def id(self) -> str:
        """Stable across runs and machines: the same spec always has the same id."""
        spec = {
            "workload": self.workload,
            "params": sorted(self.params),
            "backend": self.backend,
            "mode": self.mode,
            "dtype": self.dtype,
            "threads": self.threads,
            "device": self.device,
        }
        digest = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:10]
        where = f"{self.backend}-{self.mode}/{self.dtype}/{self.device}/t{self.threads}"
        return f"{self.workload}[{self.label_params}]/{where}/{digest}" + (f"@{self.env}" if self.env else "")

    @property
    def label_params(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.params)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = self.params_dict
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Case":
        return cls(
            workload=d["workload"],
            params=tuple(sorted(d["params"].items())),
            backend=d["backend"],
            mode=d["mode"],
            dtype=d["dtype"],
            threads=int(d["threads"]),
            device=d.get("device", "cpu"),
            source=d.get("source"),
            env=d.get("env") or "",
        )


def base_id(case_id: str, env: str | None) -> str:
    """The id of a case without its environment: the same computation in every `--env` of a run."""
    suffix = f"@{env}" if env else ""
    return case_id[: -len(suffix)] if suffix and case_id.endswith(suffix) else case_id


def rivals(c: "Case | Any") -> tuple[Any, ...]:
    """What the cases measured side by side share: one workload (from one file) at one parameter point,
    in one dtype and thread count. Its backend·modes, devices and environments are the rivals of one
    size, which a round measures together, taking turns (execution.parent.Rounds), and the answer ranks."""
    params = tuple(sorted(c.params.items() if isinstance(c.params, Mapping) else c.params or ()))
    return (c.workload, c.source, params, c.dtype, c.threads)


class Configured(Protocol):
    """Whatever names a case's configuration: a Case, a record of one (results.record.CaseRecord)."""

    @property
    def backend(self) -> str: ...

    @property
    def mode(self) -> str: ...


def label(r: "Configured | Mapping[str, Any]", *, device: bool = False, machine: bool = False) -> str:
    """How every output names a case's configuration, the one place it is spelled: backend·mode,
    then ·device and ` @machine` where the caller's cases differ in them, and ` [env]` for a case of
    one of several Python environments (`--env`), which no output may merge with another's."""
    get = r.get if isinstance(r, Mapping) else (lambda key, default=None: getattr(r, key, default))
    text = f"{get('backend')}·{get('mode')}"
    if device:
        text += f"·{get('device') or 'cpu'}"
    if machine:
        text += f" @{get('machine') or '?'}"
    return text + (f" [{get('env')}]" if get("env") else "")
