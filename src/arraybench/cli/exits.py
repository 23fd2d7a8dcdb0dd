"""Exit codes of the arraybench command, and SIGTERM turned into an interrupt while a run goes."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

EXIT_OK, EXIT_FAILED_CASES, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# `history --changes`: a lasting slowdown was found (in the runs since --since); apart from 1, a failed
# case, so CI can tell "slower" from "broken".
EXIT_REGRESSION = 3
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143, as a shell reports a process SIGTERM ended


class Terminated(KeyboardInterrupt):
    """SIGTERM (what batch schedulers and `kill` send), raised where Ctrl-C would be: the same
    cleanup (workers killed, finished cases kept) and the same resume hint, exit code 143."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While a run goes, SIGTERM raises Terminated where Ctrl-C raises KeyboardInterrupt."""

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
