"""An environment made ready for a run's workers: its interpreter, its frameworks' versions, its packages
and where each came from, its variables."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from arraybench.core.env_spec import EnvSpec
from arraybench.envs.build import Progress, copies_dir, own_packages_env, python_for
from arraybench.envs.sources import Pinned, content_hash, pin_all
from arraybench.errors import UsageError
from arraybench.machine import host
from arraybench.machine.packages import Package, installed

# host.versions() and packages.installed() run by the other interpreter: the same reading of the
# same distributions.
PROBE = ("import json; from arraybench.machine.host import versions; "
         "from arraybench.machine.packages import installed; "
         "print(json.dumps({'versions': versions(), 'packages': installed()}))")


@dataclass(frozen=True)
class PreparedEnv:
    """What a worker of one environment is started with, and what that environment has."""

    name: str
    python: Path  # the interpreter its workers run
    versions: dict[str, str | None]  # each framework's version there (None: not installed)
    variables: dict[str, str]  # set for its workers only (--env-var)
    packages: tuple[Package, ...] = ()  # every distribution there, with where it came from


def probe_env() -> dict[str, str]:
    """The environment a probe of another interpreter runs in: its own packages, as its workers see them,
    the working directory's files not among them (parent.worker_env sets PYTHONSAFEPATH alike)."""
    return {**own_packages_env(), "PYTHONSAFEPATH": "1"}


def interpreter_probe(python: Path) -> dict[str, Any]:
    """Each framework's version and every package with its installer's record, as `python` sees its own
    packages (PROBE run there)."""
    done = subprocess.run([str(python), "-c", PROBE], env=probe_env(), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"cannot read the framework versions of {str(python)!r}: {last}")
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def local_path(url: str) -> str:
    return os.path.realpath(unquote(urlsplit(url).path))


def packages(raw: Sequence[Mapping[str, Any]], pins: Sequence[Pinned]) -> tuple[Package, ...]:
    """Each distribution of `raw` (packages.installed()) as the header records it: a git commit with the
    ref the spec named, a local path as the spec named it (not arraybench's copy) with its content hash."""
    refs = {p.commit: p.requirement.ref for p in pins if p.commit}
    copies = {os.path.realpath(p.copy): p for p in pins if p.copy}
    hashed = {p.requirement.target: p.digest for p in pins if p.requirement.origin == "editable"}
    out = []
    for d in raw:
        direct = d.get("direct_url") or {}
        url, name, version = direct.get("url", ""), d["name"], d["version"]
        if not direct:
            out.append(Package(name, version))
        elif direct.get("vcs_info"):
            vcs = direct["vcs_info"]
            commit = vcs.get("commit_id", "")
            ref = refs.get(commit) or (vcs.get("requested_revision") or "").removeprefix(commit)
            out.append(Package(name, version, "git", url=url, commit=commit, ref=ref))
        elif url.startswith("file:"):
            where = local_path(url)
            pinned = copies.get(where)
            path = pinned.requirement.target if pinned else where
            if pinned is None and path not in hashed:
                hashed[path] = content_hash(Path(path)) if os.path.exists(path) else ""
            digest = pinned.digest if pinned else hashed[path]
            editable = bool((direct.get("dir_info") or {}).get("editable"))
            out.append(Package(name, version, "path", path=path, digest=digest, editable=editable))
        else:
            archive_hash = (direct.get("archive_info") or {}).get("hash", "")
            out.append(Package(name, version, "url", url=url, digest=archive_hash.replace("=", ":", 1)))
    return tuple(out)


def prepare(specs: Sequence[EnvSpec], progress: Progress) -> dict[str, PreparedEnv]:
    """Each environment of `specs` ready to run workers, by name: its requirements pinned (sources.py),
    built or reused, then asked its versions and packages."""
    out: dict[str, PreparedEnv] = {}
    for spec in specs:
        pins = pin_all(spec.name, spec.requirements, copies_dir())
        python = python_for(spec, pins, progress)
        found: dict[str, Any]
        if spec.kind == "current":
            found = {"versions": host.versions(), "packages": installed()}
        else:
            found = interpreter_probe(python)
        out[spec.name] = PreparedEnv(spec.name, python, found["versions"], dict(spec.env_vars),
                                     packages(found["packages"], pins))
    return out


def lacking(python: Path, modules: Sequence[str]) -> list[str]:
    """Those of `modules` that `python` cannot import from its own packages (found, not imported)."""
    probe = "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if not importlib.util.find_spec(m)))"
    done = subprocess.run([str(python), "-c", probe, *modules], env=probe_env(), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)
    return done.stdout.split() if done.returncode == 0 else list(modules)
