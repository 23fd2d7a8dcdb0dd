"""Worker process: one backend configuration, its environment set before the framework is imported.

Protocol: JSON lines. The parent writes one request per case on stdin; the worker answers on
the file descriptor that was its stdout, while fd 1 is pointed at stderr so that anything a
framework prints cannot corrupt the protocol.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def pin_threads(threads: int) -> None:
    """Restrict the process to `threads` CPUs: the one limit every framework's pools obey."""
    allowed = sorted(os.sched_getaffinity(0))
    if threads < len(allowed):
        os.sched_setaffinity(0, allowed[:threads])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="arraybench.worker")
    p.add_argument("--backend", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--dtype", required=True)
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)

    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(msg: dict[str, Any]) -> None:
        protocol.write(json.dumps(msg, default=str) + "\n")
        protocol.flush()

    pin_threads(args.threads)

    # Imports after the environment and affinity are final.
    from arraybench.backends import Unavailable, backend_class
    from arraybench.case import Case
    from arraybench.execute import CaseExecutor
    from arraybench.timing import TimerConfig

    be = backend_class(args.backend)(args.threads, args.dtype, args.device)
    try:
        be.load()
        info = be.info()
        info["devices"] = be.devices()
    except Unavailable as e:
        send({"type": "unavailable", "reason": str(e)})
        return 0
    send({"type": "ready", "info": info})
    executor = CaseExecutor(be)
    for line in sys.stdin:
        request = json.loads(line)
        case = Case.from_dict(request["case"])
        record = executor.run(case, TimerConfig(**request["timer"]), request["seed"])
        record["backend_info"] = info
        send({"type": "record", "record": record})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
