"""The packages of a Python environment, each with its version and where it came from.

An index, a git commit, a local path and its content hash: what a run's header records of each
`--env`, and what `compare`, the report and `show` name where two environments differ."""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from packaging.utils import canonicalize_name

if TYPE_CHECKING:
    from arraybench.results.header import PythonEnvironment

Source = Literal["index", "git", "path", "url"]
SHORT = 7  # hex digits of a commit or a content hash shown to a person, as git shows a commit
MAX_NAMED = 3  # packages named in one sentence; the rest are counted


@dataclass(frozen=True)
class Package:
    """One installed distribution: its version, and where the installer got it."""

    name: str  # canonical (PEP 503)
    version: str
    source: Source = "index"
    url: str = ""  # git: the repository; url: the archive's address
    commit: str = ""  # git: the commit installed
    ref: str = ""  # git: the ref the environment's spec named (a branch or tag), where it named one
    path: str = ""  # path: the project or archive as the spec named it (not the copy uv built from)
    digest: str = ""  # path: `sha256:…` of its content; url: the archive's hash where the installer recorded it
    editable: bool = False  # path: installed with -e, so its workers import the files as they are

    def whence(self) -> str:
        """Where it came from, briefly: "v1, 3fa2c1e", "-e mykern, 1a2b3c4"; '' for an index's."""
        if self.source == "git":
            return ", ".join(filter(None, (self.ref, self.commit[:SHORT])))
        if self.source == "path":
            short = self.digest.partition(":")[2][:SHORT]
            return ", ".join(filter(None, (("-e " if self.editable else "") + PurePosixPath(self.path).name, short)))
        return PurePosixPath(self.url).name if self.source == "url" else ""

    def describe(self) -> str:
        """Its version and where it came from: "0.1.0 (v1, 3fa2c1e)"; an index's version alone."""
        where = self.whence()
        return f"{self.version} ({where})" if where else self.version

    def same_code(self, other: Package) -> bool:
        """Whether the two install the same code: the ref that named a commit does not change it."""
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self) if f.name != "ref")

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v or k in ("name", "version")}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Package:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def installed() -> list[dict[str, Any]]:
    """Every distribution this interpreter imports, once (the first on sys.path, which import finds): its
    name, version and PEP 610 `direct_url.json` (how an installer got it: absent for an index's)."""
    out: dict[str, dict[str, Any]] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if not name or canonicalize_name(name) in out:
            continue
        try:
            direct = json.loads(dist.read_text("direct_url.json") or "null")
        except json.JSONDecodeError:
            direct = None
        out[canonicalize_name(name)] = {"name": canonicalize_name(name), "version": dist.version,
                                        "direct_url": direct}
    return [out[k] for k in sorted(out)]


def of_environment(info: PythonEnvironment | Mapping[str, Any]) -> dict[str, Package] | None:
    """The packages a header's environment records (the typed part, or its JSON), by name; None where
    it records none (a file written before they were recorded)."""
    recorded = info.get("packages") if isinstance(info, Mapping) else info.packages
    if not isinstance(recorded, list):
        return None
    return {p.name: p for p in map(Package.from_json, recorded)}


def changed(old: Mapping[str, Package], new: Mapping[str, Package]) -> list[str]:
    """The names of the packages whose code differs between two environments, in order."""
    return [k for k in sorted(old.keys() | new.keys())
            if k not in old or k not in new or not old[k].same_code(new[k])]


def changes(old: Mapping[str, Package], new: Mapping[str, Package]) -> list[str]:
    """Each package that differs, as "mykern 0.1.0 (v1, 3fa2c1e) → 0.2.0 (v2, 1582951)"."""
    return [f"{k} {old[k].describe() if k in old else 'absent'} → {new[k].describe() if k in new else 'absent'}"
            for k in changed(old, new)]


def named(items: list[str]) -> str:
    """At most MAX_NAMED of `items`, joined, the rest counted: "a, b, c and 4 more"."""
    shown = ", ".join(items[:MAX_NAMED])
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")
