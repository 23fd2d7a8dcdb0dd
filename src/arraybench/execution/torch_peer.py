"""A torch peer process (rank 1..N-1) of a case that spans N devices: it joins the worker's process
group and does what rank 0 (the worker, TorchBackend) tells it, in lockstep, until told to stop.

Rank 0 broadcasts one int32 command before each step (torch_backend: CALL, MESSAGE, STOP, PROBE);
a MESSAGE is followed by a tuple: ("reset",) before each case, ("input", how, shape, dtype) for
each input (then its scatter or broadcast), ("build", workload, mode, params) (then each rank's
build error, gathered to rank 0) and ("gather", how) for a split output.
"""

from __future__ import annotations

import argparse
import faulthandler
from typing import Any


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="arraybench.execution.torch_peer")
    for name in ("--rank", "--port", "--threads", "--parent"):
        p.add_argument(name, type=int, required=True)
    p.add_argument("--dtype", required=True)
    p.add_argument("--device", required=True)
    args = p.parse_args(argv)
    from arraybench.execution.child import die_with_parent

    die_with_parent(args.parent)
    faulthandler.enable()
    from arraybench.backends.torch_backend import CALL, MESSAGE, STOP, TorchBackend
    from arraybench.errors import one_line
    from arraybench.workloads import get_workload

    be = TorchBackend(args.threads, args.dtype, args.device)
    be.rank = args.rank
    be.load()
    be.join(args.port)
    torch, dist = be.torch, be.torch.distributed
    state: dict[str, Any] = {"args": [], "fn": None, "out": None}
    while True:
        code = be._broadcast_code(0)
        if code == STOP:
            break
        if code == CALL:
            state["out"] = state["fn"](*state["args"])
            continue
        if code != MESSAGE:
            continue
        box: list[Any] = [None]
        dist.broadcast_object_list(box, src=0)
        what, *rest = box[0]
        if what == "reset":
            be.start_case()
            state = {"args": [], "fn": None, "out": None}
        elif what == "input":
            how, shape, dtype = rest
            if how == "first":
                state["args"].append(None)
                continue
            full = torch.empty(shape, dtype=getattr(torch, dtype), device=be.dev)
            if how == "copy":
                dist.broadcast(full, src=0)
                state["args"].append(full)
            else:
                mine = torch.empty_like(full.chunk(be.n_devices)[0])
                dist.scatter(mine, None, src=0)
                state["args"].append(mine)
        elif what == "build":
            workload, mode, params = rest
            error = ""
            try:
                builder = get_workload(workload).builder("torch", mode)
                assert builder is not None, f"{workload} has no torch {mode} implementation"
                state["fn"] = builder(be, **params)
            except Exception as e:  # noqa: BLE001 - sent to rank 0, which reports the case's failure
                error = one_line(e)
            dist.gather_object(error, None, dst=0)
        elif what == "gather":
            dist.gather(state["out"], None, dst=0)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
