"""The interpreter an environment's workers run: this one, the user's, or a virtual environment uv builds and caches."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import platform
import secrets
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from arraybench.backends.backend import OWN_VARIABLES
from arraybench.core.env_spec import EnvSpec
from arraybench.core.usercache import user_cache_dir
from arraybench.envs.sources import Pinned
from arraybench.errors import BUILT_MARK, UsageError
from arraybench.machine import nvidia
from arraybench.version import __version__

Progress = Callable[[str], None]  # receives each line of a build's progress (uv's own lines among them)
ENV_FILE = BUILT_MARK  # in each cached environment: the recipe it was built from
CPU_BUILD = "+cpu"  # the local version tag of PyTorch's CPU wheels, as constraints.txt pins them
# arraybench's extras every built environment gets: what a workload file of the user's needs (@workload
# writes to the array API through array-api-compat), so that no case fails for want of it.
EXTRAS = "[user]"


@dataclass(frozen=True)
class Source:
    """Where an environment gets arraybench: the running checkout (editable), or the released version."""

    install: tuple[str, ...]  # what `uv pip install` (or pip) is given
    identity: str  # what a cached environment depends on: the checkout and its pyproject.toml, or the version
    root: Path | None  # the checkout, where constraints.txt says how CI pins torch


@dataclass(frozen=True)
class Recipe:
    """Everything an environment is built from; its hash names the environment in the cache."""

    requirements: tuple[str, ...]  # Pinned.identity, sorted: the same set in another order is the same env
    python: str  # implementation, version and base installation of the interpreter the venv is made from
    arraybench: str  # Source.identity
    constraints: tuple[str, ...]  # the CPU-wheel pins of constraints.txt that apply
    torch_backend: str  # uv's --torch-backend: which index PyTorch's packages come from

    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def cache_dir() -> Path:
    """Where built environments are kept: envs/ of the user's arraybench cache (core/usercache.py)."""
    return user_cache_dir() / "envs"


def copies_dir() -> Path:
    """Where local projects and archives are copied by content for uv to build (sources.copied)."""
    return cache_dir() / ".sources"


def own_packages_env() -> dict[str, str]:
    """This process's environment without what points Python at our packages, for another interpreter."""
    return {k: v for k, v in os.environ.items() if k not in OWN_VARIABLES}


def arraybench_source() -> Source:
    """The running arraybench's source: its checkout if it runs from one (or an editable install of one)."""
    root = Path(__file__).resolve().parents[3]  # <root>/src/arraybench/envs/build.py
    pyproject = root / "pyproject.toml"
    try:
        name = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("name")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        name = None
    if name != "arraybench":
        release = installed_from()
        return Source((release,), release, None)
    # Editable, so every environment runs this checkout's code as this interpreter's workers do: an edit
    # needs no rebuild, a change of pyproject.toml (the dependencies) does.
    digest = hashlib.sha256(pyproject.read_bytes()).hexdigest()[:16]
    return Source(("-e", f"{root}{EXTRAS}"), f"{root}{EXTRAS} {digest}", root)


def installed_from() -> str:
    """The requirement that installs the running (non-editable) arraybench again: the git commit it was
    installed from (it is not on PyPI: `pip install 'arraybench @ git+URL'`), else its release."""
    try:
        direct = json.loads(importlib.metadata.distribution("arraybench").read_text("direct_url.json") or "{}")
    except (importlib.metadata.PackageNotFoundError, json.JSONDecodeError):
        direct = {}
    vcs = direct.get("vcs_info") or {}
    if vcs.get("vcs") == "git" and vcs.get("commit_id"):
        return f"arraybench{EXTRAS} @ git+{direct['url']}@{vcs['commit_id']}"
    return f"arraybench{EXTRAS}=={__version__}"


def cpu_pins(root: Path | None, named: Collection[str]) -> tuple[str, ...]:
    """The CPU-wheel pins of the checkout's constraints.txt for packages the user's spec does not name.

    CI pins torch's CPU wheel there so that nothing pulls a multi-GB CUDA build; the other lines pin
    what a spec should choose itself, and a package the spec names is the spec's to choose.
    """
    path = root / "constraints.txt" if root else None
    if path is None or not path.is_file():
        return ()
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    pins = (Requirement(line) for line in lines if line)
    return tuple(sorted(str(r) for r in pins
                        if CPU_BUILD in str(r.specifier) and canonicalize_name(r.name) not in named))


def recipe(pins: Sequence[Pinned], source: Source, cuda: bool) -> Recipe:
    """What an environment of requirements `pins` is built from on this interpreter, with a CUDA driver
    present (`cuda`) or not."""
    requirements = tuple(sorted(p.identity for p in pins))
    named = {canonicalize_name(Requirement(p.requirement.target).name) for p in pins
             if p.requirement.origin in ("index", "url")} | \
            {canonicalize_name(Requirement(p.requirement.name).name) for p in pins if p.requirement.name}
    python = f"{platform.python_implementation()} {platform.python_version()} {sys.base_prefix}"
    # Without CUDA, PyTorch's packages come from its CPU index (uv's --torch-backend), as CI's do.
    return Recipe(requirements, python, source.identity, () if cuda else cpu_pins(source.root, named),
                  "auto" if cuda else "cpu")


def python_for(spec: EnvSpec, pins: Sequence[Pinned], progress: Progress) -> Path:
    """The interpreter a worker of `spec`'s environment runs, built (or taken from the cache) if need be
    from its requirements as they stand now (`pins`: sources.pin_all)."""
    if spec.kind == "current":
        return Path(sys.executable)
    if spec.kind == "interpreter":
        assert spec.python is not None  # parse_env sets it for this kind
        require_arraybench(spec.name, spec.python)
        return spec.python
    source = arraybench_source()
    rec = recipe(pins, source, cuda=bool(nvidia.devices()))
    root = cache_dir()
    final = root / rec.key()
    python = final / "bin" / "python"
    if not python.exists():
        root.mkdir(parents=True, exist_ok=True)
        with build_lock(root, progress):
            if not python.exists():  # another run may have built it while this one waited
                build(spec, rec, source, [arg for p in pins for arg in p.install], final, progress)
    commits = "".join(f", commit {p.commit[:7]}" for p in pins if p.commit)
    progress(f"environment {spec.name!r} ({spec.describe()}{commits}): {final}")
    return python


def require_arraybench(name: str, python: Path) -> None:
    """A one-line error saying how to install arraybench where `python` cannot import it."""
    done = subprocess.run([str(python), "-c", "import arraybench"], env=own_packages_env(), capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    if done.returncode != 0:
        install = " ".join(arraybench_source().install)
        raise UsageError(f"--env {name}: {str(python)!r} cannot import arraybench; install it there with "
                         f"`{python} -m pip install {install}`")


@contextmanager
def build_lock(root: Path, progress: Progress) -> Iterator[None]:
    """One build at a time in the cache, across runs: two runs never build one environment twice."""
    with open(root / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another arraybench run to finish building an environment in {root}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(spec: EnvSpec, rec: Recipe, source: Source, install: Sequence[str], final: Path,
          progress: Progress) -> None:
    """Build `spec`'s environment beside `final` and rename it into place whole; a failure leaves nothing."""
    for stale in final.parent.glob(".build-*"):  # what a killed run left: we hold the lock, none is in use
        shutil.rmtree(stale, ignore_errors=True)
    shutil.rmtree(final, ignore_errors=True)  # a directory without an interpreter is no environment
    progress(f"building environment {spec.name!r} ({spec.describe()}) with uv")
    uv = uv_binary(spec.name)
    tmp = final.parent / f".build-{final.name}-{secrets.token_hex(4)}"
    try:
        tmp.mkdir()
        # Relocatable: the scripts it installs still work after the rename.
        run_uv(spec, [uv, "venv", "--quiet", "--relocatable", "--python", sys.executable,
                      str(tmp)], progress)
        constraints = tmp / "arraybench-constraints.txt"
        constraints.write_text("".join(f"{pin}\n" for pin in rec.constraints), encoding="utf-8")
        run_uv(spec, [uv, "pip", "install", "--python", str(tmp / "bin" / "python"), "--torch-backend",
                      rec.torch_backend, "--constraints", str(constraints), *source.install, *install],
               progress)
        (tmp / ENV_FILE).write_text(json.dumps(asdict(rec), indent=1) + "\n", encoding="utf-8")
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def uv_binary(name: str) -> str:
    """uv's executable, from the uv package arraybench depends on."""
    try:
        import uv

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        raise UsageError(f"--env {name}: building an environment needs uv, which is not installed here; "
                         f"`pip install uv` installs it") from None


def run_uv(spec: EnvSpec, cmd: Sequence[str], progress: Progress) -> None:
    """Run uv, passing its progress lines on; a failure is one line with uv's reason."""
    lines: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          text=True, env={**own_packages_env(), "NO_COLOR": "1"}) as proc:
        assert proc.stdout is not None  # stdout=PIPE
        try:
            failing = False
            for line in proc.stdout:
                if line.strip():
                    lines.append(line.rstrip())
                    # uv's error comes last, and as the one line the caller shows, not as progress.
                    failing = failing or line.startswith("error:")
                    if not failing:
                        progress(lines[-1])
        except BaseException:  # Ctrl-C: stop uv before its half-built environment is removed
            proc.kill()
            raise
    if proc.returncode != 0:
        raise UsageError(f"--env {spec.name}: cannot build {spec.describe()!r}: {uv_reason(lines)}")


def uv_reason(lines: Sequence[str]) -> str:
    """uv's reason for a failure, on one line: its last cause (with the lines that continue it), else its error."""
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    block = list(lines[errors[-1]:] if errors else lines[-1:])
    block = block[:next((i for i, line in enumerate(block) if line.strip().startswith("hint:")), len(block))]
    causes = [i for i, line in enumerate(block) if line.strip().lower().startswith(("cause:", "caused by:"))]
    text = " ".join(line.strip() for line in block[causes[-1] if causes else 0:])
    return text.partition(":")[2].strip() if causes or errors else text or "uv failed"
