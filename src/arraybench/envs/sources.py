"""Each requirement of an environment pinned to what it names now: a git ref to its commit, a local path to its content.

So the cache key (and the run's header) says exactly what was installed, and a moved branch or an
edited project is another environment, built afresh."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from arraybench.core.env_spec import EnvRequirement
from arraybench.envs.spec import PROJECT_FILES
from arraybench.errors import UsageError

COMMIT = re.compile(r"[0-9a-f]{40}")
# Never part of a project's content where git cannot say what is: caches, builds, environments.
SKIPPED_DIRS = frozenset({".git", "__pycache__", ".venv", "venv", "build", "dist", ".tox", ".nox", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache", "node_modules"})


@dataclass(frozen=True)
class Pinned:
    """One requirement as uv installs it now: a commit where it named a ref, a copy where it named a path."""

    requirement: EnvRequirement
    install: tuple[str, ...]  # what `uv pip install` is given for it
    identity: str  # what a cached environment built with it depends on: the commit, the content hash
    commit: str = ""  # git, commit: the commit its ref named when the environment was prepared
    digest: str = ""  # path, editable: the hash of the project's (or archive's) content
    copy: str = ""  # path: the content-addressed copy uv installs, which the installed package records


def normalised(requirement: str) -> str:
    """`requirement` in one spelling: canonical name and extras, sorted extras and specifiers."""
    parsed = Requirement(requirement)
    parsed.name = canonicalize_name(parsed.name)
    parsed.extras = {canonicalize_name(extra) for extra in parsed.extras}
    return str(parsed)


def pin(env: str, req: EnvRequirement, copies: Path) -> Pinned:
    """`req` of environment `env` as it stands now; a local project or archive is copied under `copies`."""
    if req.origin == "index":
        return Pinned(req, (req.target,), normalised(req.target))
    if req.origin == "url":
        return Pinned(req, (req.target,), req.target)
    if req.origin == "editable":
        # Its workers import the project's files as they are: the key is the path, its content recorded.
        return Pinned(req, ("-e", req.target), f"-e {req.target}", digest=content_hash(Path(req.target)))
    if req.origin == "path":
        digest = content_hash(Path(req.target))
        copy = copied(Path(req.target), copies / digest.partition(":")[2])
        return Pinned(req, (str(copy),), f"{req.target} {digest}", digest=digest, copy=str(copy))
    if req.origin == "commit":
        return local_commit(env, req)
    commit = git_commit(env, req)
    url = f"git+{req.target}@{commit}" + (f"#{req.fragment}" if req.fragment else "")
    line = f"{req.name} @ {url}" if req.name else url
    return Pinned(req, (line,), line, commit=commit)


def pin_all(env: str, requirements: Sequence[EnvRequirement], copies: Path) -> tuple[Pinned, ...]:
    return tuple(pin(env, req, copies) for req in requirements)


def git(args: Sequence[str], cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    """`git ARGS`, its output captured; a missing git is a one-line error."""
    if shutil.which("git") is None:
        raise UsageError("an environment from a git ref needs git, which is not on PATH")
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=300, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1]


def local_commit(env: str, req: EnvRequirement) -> Pinned:
    """`git:REF`: the commit REF names in the repository of `req.target`, which must hold a project there,
    and not be the commit checked out under uncommitted changes (the user would measure other code than
    they see)."""
    top = git(["rev-parse", "--show-toplevel"], req.target)
    if top.returncode != 0:
        raise UsageError(f"--env {env}: {req.text!r}: {req.target} is not in a git repository")
    root = top.stdout.strip()
    found = git(["rev-parse", "--verify", "--quiet", f"{req.ref}^{{commit}}"], root)
    if found.returncode != 0:
        raise UsageError(f"--env {env}: {req.text!r}: there is no branch, tag or commit {req.ref!r} in {root}")
    commit = found.stdout.strip()
    sub = Path(req.target).resolve().relative_to(Path(root).resolve()).as_posix()
    sub = "" if sub == "." else sub
    head = git(["rev-parse", "--verify", "--quiet", "HEAD"], root).stdout.strip()
    if commit == head:
        changed = git(["status", "--porcelain", "--untracked-files=no", "--", sub or "."], root).stdout.split("\n")
        changed = [line[3:] for line in changed if line.strip()]
        if changed:
            shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
            raise UsageError(f"--env {env}: {req.text!r} is {commit[:7]}, the commit checked out in {root}, whose "
                             f"files have uncommitted changes ({shown}): commit them, or measure the files as "
                             f"they are with {env}:'-e {req.target}'")
    if not any(git(["cat-file", "-e", f"{commit}:{sub + '/' if sub else ''}{f}"], root).returncode == 0
               for f in PROJECT_FILES):
        raise UsageError(f"--env {env}: {req.text!r}: commit {commit[:7]} holds no pyproject.toml or setup.py in "
                         f"{sub or 'its top directory'}: no Python project to build (git:PATH@REF names the "
                         f"project's directory)")
    url = f"git+{Path(root).as_uri()}@{commit}" + (f"#subdirectory={sub}" if sub else "")
    return Pinned(req, (url,), url, commit=commit)


def git_commit(env: str, req: EnvRequirement) -> str:
    """The commit a git URL's ref names now (its default branch without one): asked of the repository
    itself, so a branch that moved since the last run names its new commit."""
    ref = req.ref or "HEAD"
    if COMMIT.fullmatch(ref):
        return ref
    parts = urlsplit(req.target)
    if parts.scheme == "file":
        found = git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], unquote(parts.path))
        if found.returncode == 0:
            return found.stdout.strip()
        if not Path(unquote(parts.path)).is_dir():
            raise UsageError(f"--env {env}: {req.text!r}: there is no repository at {unquote(parts.path)}")
        raise UsageError(f"--env {env}: {req.text!r}: there is no branch, tag or commit {ref!r} in {req.target}")
    listed = git(["ls-remote", "--", req.target, ref])
    if listed.returncode != 0:
        raise UsageError(f"--env {env}: {req.text!r}: cannot read the repository's refs ({last_line(listed)})")
    refs: dict[str, str] = {}
    for line in listed.stdout.splitlines():
        commit, _, name = line.partition("\t")
        refs[name] = commit
    for name in (f"refs/heads/{ref}", f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", ref):
        if name in refs:
            return refs[name]
    raise UsageError(f"--env {env}: {req.text!r}: the repository has no branch or tag {ref!r} (a commit must be "
                     f"written in full, 40 hex digits)")


def project_files(path: Path) -> list[Path]:
    """The files that make a project what it is, relative to it: those git lists (tracked, or new and not
    ignored) where it is in a git work tree, else every file outside caches, builds and environments."""
    listed = git(["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."], path) \
        if shutil.which("git") else None
    if listed is not None and listed.returncode == 0:
        found = {Path(p) for p in listed.stdout.split("\0") if p and (path / p).is_file()}
        return sorted(p for p in found if not any(skipped(part) for part in p.parts[:-1]))
    return sorted(walk(path, path))


def skipped(directory: str) -> bool:
    """Whether a directory of this name holds what a build or a run made, not the project: an installer
    writes `mykern.egg-info` into the source tree it builds, untracked and often not ignored."""
    return directory in SKIPPED_DIRS or directory.endswith(".egg-info")


def walk(root: Path, directory: Path) -> Iterator[Path]:
    for entry in os.scandir(directory):
        if entry.is_dir(follow_symlinks=False):
            if not skipped(entry.name) and not (Path(entry.path) / "pyvenv.cfg").exists():
                yield from walk(root, Path(entry.path))
        elif entry.is_file():
            yield Path(entry.path).relative_to(root)


def content_hash(path: Path) -> str:
    """`sha256:…` of an archive's bytes, or of a project's files (their names and bytes)."""
    h = hashlib.sha256()
    if path.is_file():
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return f"sha256:{h.hexdigest()[:16]}"
    for rel in project_files(path):
        h.update(rel.as_posix().encode() + b"\0" + hashlib.sha256((path / rel).read_bytes()).digest())
    return f"sha256:{h.hexdigest()[:16]}"


def copied(path: Path, where: Path) -> Path:
    """`path` (a project's files, or an archive) copied to `where` once, named as it is: uv caches what it
    builds from a directory by the directory's path, so a copy per content hash is built afresh exactly
    when the content changed."""
    target = where / path.name
    if target.exists():
        return target
    tmp = where.parent / f".copy-{where.name}-{secrets.token_hex(4)}"
    try:
        (tmp / path.name).parent.mkdir(parents=True)
        if path.is_file():
            shutil.copy2(path, tmp / path.name)
        else:
            for rel in project_files(path):
                (tmp / path.name / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path / rel, tmp / path.name / rel)
        try:
            os.rename(tmp, where)
        except OSError:  # another run copied the same content first
            if not target.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
