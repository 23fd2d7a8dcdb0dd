"""Exit codes of the arraybench command, and SIGTERM turned into an interrupt while a run goes, which
no code on the way may swallow."""

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
def interrupts_kept() -> Iterator[None]:
    """While a run goes: SIGTERM raises Terminated where Ctrl-C raises KeyboardInterrupt, and neither is
    lost. Python raises a signal's exception in whatever code runs at that moment; where that is a
    `__del__` or a weakref finaliser (Dask's futures and clients have them), it prints "Exception ignored"
    and goes on, and a run that was told to stop would end as if it never was (exit 0, a full report).
    So each signal is also noted here, and one that the block swallowed is raised again when it ends.
    A SIGINT this process ignores (started in the background: `nohup`, `cmd &` in a script) stays ignored."""
    got: list[type[KeyboardInterrupt]] = []

    def interrupt(signum: int, frame: Any) -> None:
        kind = Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        got.append(kind)
        raise kind

    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, interrupt)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if got:  # the block ended normally: whatever the signal raised was swallowed on the way
        raise got[-1]
