"""Errors a user can cause: the CLI prints them on one line and exits with code 2."""

import difflib
import sys
from collections.abc import Iterable


class UsageError(Exception):
    """Bad input from the user (name, size, file); shown as one line, exit code 2."""


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the valid name closest to `name`, or "" when none is close."""
    close = difflib.get_close_matches(name, list(valid), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown(kind: str, name: str, valid: Iterable[str]) -> UsageError:
    """A UsageError for an unknown name, suggesting the closest valid one."""
    valid = sorted(valid)
    return UsageError(f"unknown {kind} {name!r}{did_you_mean(name, valid)} (valid: {', '.join(valid)})")


def require_linux() -> None:
    """Refuse other systems in one line: workers are pinned with sched_setaffinity, files locked with fcntl."""
    if not sys.platform.startswith("linux"):
        raise UsageError(f"arraybench runs on Linux only (it pins worker processes to CPUs and locks "
                         f"results files with Linux calls); this system is {sys.platform!r}")


def one_line(e: BaseException) -> str:
    """An exception as a record or message shows it: its type and the first line of its message."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".strip().rstrip(":")
