"""Files written whole or not at all: a reader, or a crash, sees the old file or the new one (the report's
files, the site's pages), and the output directory a run writes into, checked before it starts."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from arraybench.errors import UsageError


def writable_dir(path: Path) -> Path:
    """`path`, created if needed and checked writable; a UsageError naming it otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as e:
        raise UsageError(f"cannot write to output directory {str(path)!r}: {e.strerror}") from None
    return path


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path`; when the block succeeds it replaces `path` in one step.

    A reader, or a crash, sees the old file or the new one. The temporary file sits in the same
    directory (a rename is atomic only within one file system) under a unique name, so two runs
    writing the same report cannot mix their bytes; it keeps `path`'s suffix so tools that
    choose a format by extension (matplotlib's savefig) still work.
    """
    tmp = path.with_name(f".{path.stem}.{secrets.token_hex(4)}.tmp{path.suffix}")
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself survives a power cut
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one step (see atomic_path)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: Path, text: str) -> None:
    """atomic_write_bytes for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))
