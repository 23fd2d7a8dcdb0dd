"""Errors a user can cause: the CLI prints them on one line and exits with code 2."""

import difflib
from collections.abc import Iterable


class UsageError(Exception):
    """Bad input from the user (name, size, file); shown as one line, exit code 2."""


def unknown(kind: str, name: str, valid: Iterable[str]) -> UsageError:
    """A UsageError for an unknown name, suggesting the closest valid one."""
    valid = sorted(valid)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return UsageError(f"unknown {kind} {name!r}{hint} (valid: {', '.join(valid)})")
