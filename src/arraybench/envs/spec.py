"""`--env NAME:SPEC` and `--env-var NAME:VAR=VALUE`: what each environment of a run is, checked as it is read."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from packaging.requirements import InvalidRequirement, Requirement

from arraybench import errors
from arraybench.errors import UsageError

EnvKind = Literal["requirements", "interpreter", "current"]
# pyproject.toml's requires-python (a test ties the two): an older interpreter cannot run a worker.
MIN_PYTHON = (3, 11)
# A name labels tables and plots and is followed by ':' in --env-var: no ':', no spaces, no quoting.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_EXAMPLE = "old:jax==0.9.2, np23:'numpy==2.3.5 numba', mine:@/usr/bin/python3 or base: (this interpreter)"
# Runs a Python 2 too, so an old interpreter is named as such rather than failing on the probe.
VERSION_PROBE = "import sys; sys.stdout.write('%d.%d.%d' % tuple(sys.version_info[:3]))"


@dataclass(frozen=True)
class EnvSpec:
    """One `--env`: requirements to build an environment from, an existing interpreter, or this one."""

    name: str
    kind: EnvKind
    requirements: tuple[str, ...] = ()  # as written, each one parsed by packaging
    python: Path | None = None  # the interpreter of kind "interpreter"
    env_vars: tuple[tuple[str, str], ...] = ()  # (VAR, VALUE) for this environment's workers only

    def describe(self) -> str:
        """What the user wrote after NAME:, for messages and progress."""
        if self.kind == "requirements":
            return " ".join(self.requirements)
        return f"@{self.python}" if self.kind == "interpreter" else "(this interpreter)"


def described(envs: Mapping[str, Any]) -> str:
    """The run's environments in one line, each with what it was made from: "old: jax==0.9.2; new:
    jax==0.10.2 with XLA_FLAGS=…"; '' for a run in one environment."""
    def one(name: str, info: Mapping[str, Any]) -> str:
        variables = " ".join(f"{k}={v}" for k, v in sorted((info.get("variables") or {}).items()))
        return f"{name}: {info.get('spec') or '?'}" + (f" with {variables}" if variables else "")

    return "; ".join(one(name, info) for name, info in envs.items())


def parse_envs(envs: Sequence[str], env_vars: Sequence[str] = ()) -> list[EnvSpec]:
    """The specs of `--env` options `envs`, each given the variables of the `--env-var` options for it."""
    specs: dict[str, EnvSpec] = {}
    for arg in envs:
        spec = parse_env(arg)
        if spec.name in specs:
            raise UsageError(f"--env {arg!r}: the name {spec.name!r} is given to two environments")
        specs[spec.name] = spec
    for name, pairs in parse_env_vars(env_vars, list(specs)).items():
        specs[name] = replace(specs[name], env_vars=tuple(pairs.items()))
    return list(specs.values())


def parse_env(arg: str) -> EnvSpec:
    """One `--env NAME:SPEC`: SPEC is requirements separated by spaces, @PYTHON, or nothing."""
    name, colon, text = arg.partition(":")
    if not colon:
        raise UsageError(f"--env {arg!r}: write NAME:SPEC, e.g. {ENV_EXAMPLE}")
    if not name:
        raise UsageError(f"--env {arg!r}: the environment needs a name before ':', e.g. {ENV_EXAMPLE}")
    if not NAME.fullmatch(name):
        raise UsageError(f"--env {arg!r}: a name is letters, digits, '.', '_' and '-', starting with a letter "
                         f"or digit; {name!r} is not")
    text = text.strip()
    if not text:
        return EnvSpec(name, "current")
    if text.startswith("@"):
        return EnvSpec(name, "interpreter", python=interpreter(name, text[1:].strip()))
    return EnvSpec(name, "requirements", requirements=tuple(requirement(name, r) for r in text.split()))


def requirement(name: str, text: str) -> str:
    """`text` if packaging reads it as one requirement (what uv will be asked to install)."""
    try:
        Requirement(text)
    except InvalidRequirement as e:
        why = str(e).splitlines()[0]
        raise UsageError(f"--env {name}: cannot read the requirement {text!r} ({why}); requirements are "
                         f"separated by spaces, e.g. np23:'numpy==2.3.5 numba'") from None
    return text


def interpreter(name: str, text: str) -> Path:
    """The interpreter `@text` names (a path, or a command on PATH), checked to be Python >= MIN_PYTHON.

    The path is made absolute but links are kept: a virtual environment's python is a link to its
    base interpreter, and following it would lose the environment's packages.
    """
    if not text:
        raise UsageError(f"--env {name}:@: write the interpreter after '@', e.g. mine:@/usr/bin/python3")
    if os.sep in text:
        path = Path(os.path.abspath(os.path.expanduser(text)))
        if not path.exists():
            raise UsageError(f"--env {name}: there is no interpreter at {str(path)!r}")
    else:
        found = shutil.which(text)
        if found is None:
            raise UsageError(f"--env {name}: there is no {text!r} on PATH; give the interpreter's path")
        path = Path(os.path.abspath(found))
    if not path.is_file() or not os.access(path, os.X_OK):
        raise UsageError(f"--env {name}: {str(path)!r} is not an executable file")
    version = python_version(name, path)
    if version[:2] < MIN_PYTHON:
        need = ".".join(map(str, MIN_PYTHON))
        raise UsageError(f"--env {name}: {str(path)!r} is Python {'.'.join(map(str, version))}; "
                         f"arraybench needs Python {need} or newer")
    return path


def python_version(name: str, path: Path) -> tuple[int, ...]:
    """The version `path` reports when run as Python, or a one-line error saying it is not one."""
    try:
        done = subprocess.run([str(path), "-c", VERSION_PROBE], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"--env {name}: {str(path)!r} did not run as Python ({e})") from None
    if done.returncode != 0 or not re.fullmatch(r"\d+\.\d+\.\d+", done.stdout):
        raise UsageError(f"--env {name}: {str(path)!r} is not a Python interpreter (it did not run "
                         f"`{path.name} -c ...` as Python)")
    return tuple(int(part) for part in done.stdout.split("."))


def parse_env_vars(args: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, str]]:
    """Each `--env-var NAME:VAR=VALUE` of `args`, as {environment name: {VAR: VALUE}}."""
    out: dict[str, dict[str, str]] = {}
    for arg in args:
        name, colon, assignment = arg.partition(":")
        var, equals, value = assignment.partition("=")
        if not (colon and equals):
            raise UsageError(f"--env-var {arg!r}: write NAME:VAR=VALUE, e.g. old:JAX_ENABLE_X64=1")
        if name not in names:
            if not names:
                raise UsageError(f"--env-var {arg!r}: no --env NAME:SPEC defines an environment {name!r}")
            raise UsageError(f"--env-var {arg!r}: {errors.unknown('environment', name, names)}")
        if not VARIABLE.fullmatch(var):
            raise UsageError(f"--env-var {arg!r}: {var!r} is not a variable name (letters, digits and '_', "
                             f"not starting with a digit)")
        if var in out.setdefault(name, {}):
            raise UsageError(f"--env-var {arg!r}: {var} is set twice for the environment {name!r}")
        out[name][var] = value
    return out
