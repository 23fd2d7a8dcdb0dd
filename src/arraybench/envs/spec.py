"""`--env NAME:SPEC` and `--env-var NAME:VAR=VALUE` read into what each environment of a run is (an
`EnvSpec`, core/env_spec.py), checked as they are read; `run_envs` is where a run reads them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from packaging.requirements import InvalidRequirement, Requirement

from arraybench import errors
from arraybench.core.env_spec import EnvRequirement, EnvSpec
from arraybench.errors import UsageError

# pyproject.toml's requires-python (a test ties the two): an older interpreter cannot run a worker.
MIN_PYTHON = (3, 11)
# A name labels tables and plots and is followed by ':' in --env-var: no ':', no spaces, no quoting.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_EXAMPLE = ("old:jax==0.9.2, np23:'numpy==2.3.5 numba', pr:git:HEAD, mine:@/usr/bin/python3 or base: "
               "(this interpreter)")
# Runs a Python 2 too, so an old interpreter is named as such rather than failing on the probe.
VERSION_PROBE = "import sys; sys.stdout.write('%d.%d.%d' % tuple(sys.version_info[:3]))"
# What a local path may be: a project (a directory holding one of these) or a built archive.
PROJECT_FILES = ("pyproject.toml", "setup.py")
ARCHIVES = (".whl", ".tar.gz", ".zip")
TAKES = "requirements, local paths, git URLs, git:REF, -e PATH and -r FILE"


def run_envs(envs: Sequence[str] | None, env_vars: Sequence[str] | None) -> tuple[EnvSpec, ...]:
    """A run's `--env` and `--env-var` options as the specs every later stage takes: the one place they are
    read, where a run is given them (the CLI, `arraybench.run`, a resumed run's header). None given: none."""
    if not envs:
        if env_vars:
            raise UsageError("--env-var sets a variable for one --env; give the --env it names")
        return ()
    return tuple(parse_envs(envs, env_vars or ()))


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
    """One `--env NAME:SPEC`: SPEC is requirements as pip takes them, @PYTHON, or nothing."""
    name, colon, text = arg.partition(":")
    if not colon:
        raise UsageError(f"--env {arg!r}: write NAME:SPEC, e.g. {ENV_EXAMPLE}")
    if not name:
        raise UsageError(f"--env {arg!r}: the environment needs a name before ':', e.g. {ENV_EXAMPLE}")
    if not NAME.fullmatch(name):
        raise UsageError(f"--env {arg!r}: a name is letters, digits, '.', '_' and '-', starting with a letter "
                         f"or digit; {name!r} is not")
    text = " ".join(text.split())
    if not text:
        return EnvSpec(name, "current", written=arg)
    if text.startswith("@"):
        return EnvSpec(name, "interpreter", python=interpreter(name, text[1:].strip()), written=arg)
    return EnvSpec(name, "requirements", requirements=requirements(name, text, Path.cwd()), text=text,
                   written=arg)


def requirements(name: str, text: str, base: Path, where: str = "",
                 seen: frozenset[Path] = frozenset()) -> tuple[EnvRequirement, ...]:
    """The requirements of `text` (a SPEC, or a line of a requirements file `where` names), each read as
    pip reads it: relative paths from `base`; a PEP 508 line may hold spaces (`mykern @ git+…`, `numpy >= 2`)."""
    tokens, out, i = text.split(), [], 0
    while i < len(tokens):
        token = tokens[i]
        if token in ("-e", "--editable", "-r", "--requirement"):
            if i + 1 == len(tokens):
                example = "../mykern" if token in ("-e", "--editable") else "requirements.txt"
                raise UsageError(f"--env {name}: {where}{token} needs a path after it, e.g. {token} {example}")
            arg, i = tokens[i + 1], i + 2
            if token in ("-e", "--editable"):
                out.append(local(name, arg, base, where, editable=True))
            else:
                out += requirements_file(name, arg, base, where, seen)
        elif token.startswith("-"):
            raise UsageError(f"--env {name}: {where}{token!r} is not supported here; an environment takes {TAKES}")
        elif token.startswith("git:"):
            out.append(commit_of(name, token, base, where))
            i += 1
        elif token.startswith("git+"):
            out.append(git_url(name, token, token, "", where))
            i += 1
        elif token.startswith("file:") or ("://" not in token and looks_like_path(token)):
            out.append(local(name, token, base, where))
            i += 1
        else:
            line, i = pep508(name, tokens, i, where)
            out.append(classified(name, line, base, where))
    return tuple(out)


def looks_like_path(token: str) -> bool:
    """Whether pip would read `token` as a path rather than a requirement: ./x, ../x, /x, ~/x, a/b, x.whl."""
    return token.startswith((".", "/", "~")) or "/" in token or token.endswith(ARCHIVES)


def pep508(name: str, tokens: Sequence[str], i: int, where: str) -> tuple[str, int]:
    """The longest run of `tokens` from `i` that reads as one requirement, and where the next begins:
    `numpy >= 2 numba` is `numpy >= 2`, then `numba`."""
    why = ""
    for j in range(len(tokens), i, -1):
        line = " ".join(tokens[i:j])
        try:
            Requirement(line)
        except InvalidRequirement as e:
            why = str(e).splitlines()[0]  # the last one tried is the token alone
            continue
        return line, j
    raise UsageError(f"--env {name}: {where}cannot read the requirement {tokens[i]!r} ({why}); an environment "
                     f"takes {TAKES}, e.g. np23:'numpy==2.3.5 numba'")


def classified(name: str, line: str, base: Path, where: str) -> EnvRequirement:
    """A PEP 508 line by where it points: an index, a git repository, a local file, or another URL."""
    parsed = Requirement(line)
    if parsed.url is None:
        return EnvRequirement(line, "index", line)
    named = parsed.name + (f"[{','.join(sorted(parsed.extras))}]" if parsed.extras else "")
    if parsed.url.startswith("git+"):
        return git_url(name, line, parsed.url, named, where)
    if parsed.url.startswith("file:"):
        return local(name, parsed.url, base, where, text=line)
    return EnvRequirement(line, "url", line)


def git_url(name: str, text: str, url: str, named: str, where: str) -> EnvRequirement:
    """`git+SCHEME://HOST/PATH[@REF][#FRAGMENT]` (pip's form), split into repository, ref and fragment."""
    bare, _, fragment = url.removeprefix("git+").partition("#")
    parts = urlsplit(bare)
    if not parts.scheme or not parts.path:
        raise UsageError(f"--env {name}: {where}{text!r} is not a git URL; write git+https://host/repo@REF "
                         f"or git+file:///path/to/repo@REF")
    path, at, ref = parts.path.rpartition("@")
    if not at:
        path, ref = parts.path, ""
    repository = urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    return EnvRequirement(text, "git", repository, ref=ref, name=named, fragment=fragment)


def commit_of(name: str, token: str, base: Path, where: str) -> EnvRequirement:
    """`git:REF` (a commit of the repository of the working directory) or `git:PATH@REF` (of PATH's)."""
    rest = token.removeprefix("git:")
    directory, at, ref = rest.partition("@")
    if at and directory and (base / os.path.expanduser(directory)).is_dir():
        where_from = (base / os.path.expanduser(directory)).resolve()
    else:
        where_from, ref = base.resolve(), rest
    if not ref:
        raise UsageError(f"--env {name}: {where}{token!r} names no ref; write git:REF (a branch, tag or commit "
                         f"of this directory's repository, e.g. git:main) or git:PATH@REF")
    return EnvRequirement(token, "commit", str(where_from), ref=ref)


def local(name: str, given: str, base: Path, where: str, editable: bool = False,
          text: str = "") -> EnvRequirement:
    """A local project or archive (`../mykern`, `dist/mykern-0.1.0-py3-none-any.whl`, `file:///…`),
    checked to be one; `editable`: `-e PATH`, a project directory."""
    written = text or (f"-e {given}" if editable else given)
    raw = unquote(urlsplit(given).path) if given.startswith("file:") else os.path.expanduser(given)
    path = (base / raw).resolve()
    if not path.exists():
        raise UsageError(f"--env {name}: {where}there is no {given!r} ({path})")
    if path.is_dir():
        if not any((path / f).is_file() for f in PROJECT_FILES):
            raise UsageError(f"--env {name}: {where}{given!r} is not a Python project: {path} holds no "
                             f"pyproject.toml or setup.py")
    elif editable:
        raise UsageError(f"--env {name}: {where}-e takes a project directory, and {given!r} is a file")
    elif not path.name.endswith(ARCHIVES):
        raise UsageError(f"--env {name}: {where}{given!r} is neither a project directory nor a wheel or source "
                         f"archive ({', '.join(ARCHIVES)})")
    return EnvRequirement(written, "editable" if editable else "path", str(path))


# pip's comments: '#' at the start of a line or after whitespace (a URL's #fragment is no comment).
COMMENT = re.compile(r"(^|\s+)#.*$")


def requirements_file(name: str, given: str, base: Path, where: str,
                      seen: frozenset[Path]) -> list[EnvRequirement]:
    """The requirements of `-r FILE`, line by line; its relative paths are read from its own
    directory, as uv reads them."""
    path = (base / os.path.expanduser(given)).resolve()
    if path in seen:
        raise UsageError(f"--env {name}: {where}-r {given} includes itself")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--env {name}: {where}cannot read the requirements file {given!r} "
                         f"({getattr(e, 'strerror', None) or e})") from None
    out: list[EnvRequirement] = []
    pending, first = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        first = first or number
        line = COMMENT.sub("", raw)
        if line.endswith("\\"):  # continued on the next line
            pending += line[:-1] + " "
            continue
        out += requirements(name, pending + line, path.parent, f"{given}:{first}: ", seen | {path})
        pending, first = "", 0
    return out


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
