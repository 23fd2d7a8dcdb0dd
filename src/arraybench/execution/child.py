"""The child process (`python -m arraybench.execution.child`, a "worker"): one backend configuration,
its environment and CPUs set before the framework is imported, serving the parent's cases.

Protocol (protocol.py): the parent writes one request per case on stdin; the worker answers on
the file descriptor that was its stdout, while fd 1 is pointed at stderr so that anything a
framework prints cannot corrupt the protocol.
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import os
import random
import secrets
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arraybench.execution import protocol
from arraybench.execution.protocol import (
    LAYOUT_PAD_VAR,
    FinishRequest,
    PausedReply,
    ReadyReply,
    RecordReply,
    Reply,
    ResumeRequest,
    UnavailableReply,
)
from arraybench.measure import allocator
from arraybench.measure.allocator import STEADY_MMAP_THRESHOLD, STEADY_TRIM_THRESHOLD
from arraybench.measure.compilecache import backend_dir, compile_cache_env, compile_dir
from arraybench.measure.hostspeed import measure_pool_reference, settle_pool
from arraybench.measure.limits import apply_memory_limit, pin_threads
from arraybench.measure.timing import Turn
from arraybench.units import format_size

if TYPE_CHECKING:  # imported at run time only after set_up: it imports NumPy
    from arraybench.measure.case_executor import CaseExecutor

PR_SET_PDEATHSIG = 1


def steady_allocator() -> str:
    """Fix the C allocator in the state of a long-running program; return what was done.

    Left alone, glibc serves every block above 128 KiB with a fresh mmap until the process first
    frees a large block, and returns memory to the kernel eagerly: each call then page-faults
    all its temporaries in again. One NumPy kernel ran 42 ms per call in a fresh process and
    11 ms after an unrelated large free (15 671 vs 88 minor page faults per call), so a case's
    time depended on which case its worker ran before. Setting both thresholds explicitly also
    turns off glibc's dynamic adjustment, so no later case moves them.
    """
    if not sys.platform.startswith("linux"):
        return f"left as is: {sys.platform} is not Linux"
    if allocator.glibc() is None:
        return "left as is: the C library is not glibc"
    if not allocator.set_thresholds(STEADY_MMAP_THRESHOLD, STEADY_TRIM_THRESHOLD):
        return "left as is: glibc refused mallopt"
    return (f"glibc mallopt M_MMAP_THRESHOLD={STEADY_MMAP_THRESHOLD} "
            f"M_TRIM_THRESHOLD={STEADY_TRIM_THRESHOLD}")


def die_with_parent(parent: int | None) -> None:
    """Have the kernel kill this worker when the runner dies, even by `kill -9`.

    Workers run in their own session, so no Ctrl-C or hangup reaches them; without this an
    orphan stuck in a case would hold its cores and skew every later run. (Off Linux, an idle
    worker still exits when its stdin closes.) The signal follows the thread that started the
    worker, so a runner must start its workers from a thread that outlives them.
    """
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:  # the runner died before the line above took effect
        os._exit(1)


def process_age() -> float | None:
    """Seconds since this process was created, from its start time in /proc (in clock ticks,
    1/100 s on Linux, so up to 10 ms more than the truth); None where there is no /proc."""
    try:
        with open("/proc/self/stat") as f:
            # Fields after the command name, which may itself hold spaces and parentheses;
            # the start time is the stat file's field 22.
            fields = f.read().rpartition(")")[2].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return time.clock_gettime(time.CLOCK_BOOTTIME) - started


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="arraybench.execution.child")
    p.add_argument("--backend", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--dtype", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--parent", type=int, help="the runner's pid, to exit if it is already gone")
    p.add_argument("--memory-limit", type=int, help="bytes")
    p.add_argument("--cache", help="the run's cache directory: inputs and references shared by its workers")
    p.add_argument("--cache-limit", type=int, help="bytes of inputs and references in it (default: casecache's)")
    p.add_argument("--full-check", action="store_true", help="check against the full reference, never a sketch")
    p.add_argument("--layout-seed", type=int, help="seed of the random layout (parent.layout_seed): the same "
                                                   "for each environment's worker of a round")
    p.add_argument("--fixed-layout", action="store_true",
                   help="no random heap pad or input offsets (perturb_layout): one layout for every process")
    p.add_argument("--floors", metavar="MODES", default="",
                   help="comma-separated modes whose empty call (floors.py) to measure once loaded")
    return p.parse_args(argv)


def set_up(args: argparse.Namespace) -> tuple[Callable[[Reply], None], str]:
    """Everything before the framework is imported: parent watch, protocol pipe, cores, allocator,
    memory limit, compile cache. Returns the function that sends a reply to the parent, and what the allocator got."""
    die_with_parent(args.parent)
    # A segfault's Python stack goes to the log, which the runner keeps; so does every thread's stack
    # where the runner asks for it (STACKS_SIGNAL), before it kills a worker that hung or was stopped.
    faulthandler.enable()
    faulthandler.register(protocol.STACKS_SIGNAL, all_threads=True)

    pipe = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(reply: Reply) -> None:
        pipe.write(protocol.encode(reply))
        pipe.flush()

    pin_threads(args.threads)
    allocator = steady_allocator()
    if args.memory_limit:
        apply_memory_limit(args.memory_limit)
    if args.cache:
        os.environ.update(compile_cache_env(args.backend, compile_dir(Path(args.cache))))
    return send, allocator


def perturb_layout(seed: int | None = None) -> dict[str, int]:
    """Give this worker a heap history of its own, before the framework is imported; say what was done.

    A block of random size (0-1 MiB in 64-byte steps) is allocated and kept, so every later heap
    allocation of the process (the framework's, the kernels' temporaries and outputs) lands at
    another address than in the worker before it; the parent's random environment pad
    (ARRAYBENCH_LAYOUT_PAD) has already moved the stack. Mytkowicz et al. (ASPLOS 2009) measured
    both moving a program's time; Stabilizer (Curtsinger and Berger, ASPLOS 2013) randomizes
    layout so that the effect becomes noise statistics can see. Here it varies between processes,
    which the case's interval sees, instead of between runs, which it does not.
    """
    pad = 64 * (secrets.randbelow(1 << 14) if seed is None else random.Random(seed).randrange(1 << 14))
    if pad and sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        _KEPT.append(libc.malloc(pad))
    return {"heap_pad_bytes": pad, "env_pad_bytes": len(os.environ.get(LAYOUT_PAD_VAR, ""))}


_KEPT: list[int] = []  # the heap pad, never freed


def main(argv: list[str] | None = None) -> int:
    # What the worker's start cost, phase by phase, in the ready info: a run pays it once per
    # configuration and round, before any case.
    startup: dict[str, float | None] = {"interpreter_s": process_age()}
    t0 = time.perf_counter()
    args = parse_args(argv)
    send, allocator = set_up(args)
    layout = None if args.fixed_layout else {**perturb_layout(args.layout_seed), "seed": args.layout_seed}
    # The host's state for a pool of threads, once a worker (hostspeed.measure_pool_reference): before the
    # framework, with every other worker frozen, and its threads' spinning over before anything else runs.
    t0 = time.perf_counter()
    pool = measure_pool_reference(args.threads) if args.device == "cpu" else None
    if pool is not None:
        settle_pool()
        startup["pool_s"] = time.perf_counter() - t0

    # Imports after the environment and affinity are final.
    from arraybench.backends import Unavailable, backend_class
    from arraybench.measure.case_executor import CaseExecutor
    from arraybench.measure.casecache import DEFAULT_LIMIT, CaseCache, cases_dir

    be = backend_class(args.backend)(args.threads, args.dtype, args.device)
    startup["harness_s"] = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        be.load()
        startup["import_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        info = be.info()
        info["devices"] = be.devices()
        startup["info_s"] = time.perf_counter() - t0
        info["allocator"] = allocator
        if args.floors:
            from arraybench.measure import floors

            t0 = time.perf_counter()
            info.update(floors.measure(be, args.floors.split(",")))
            startup["floors_s"] = time.perf_counter() - t0
    except Unavailable as e:
        send(UnavailableReply(str(e)))
        return 0
    startup["total_s"] = process_age()
    info["startup"] = startup
    send(ReadyReply(info))
    cache = CaseCache(cases_dir(Path(args.cache)) if args.cache else None, args.cache_limit or DEFAULT_LIMIT)
    compiled = backend_dir(args.backend, compile_dir(Path(args.cache))) if args.cache else None
    serve(CaseExecutor(be, cache, args.full_check, compiled, layout), info, args.memory_limit, send, pool)
    return 0


def serve(executor: CaseExecutor, info: dict[str, Any], memory_limit: int | None,
          send: Callable[[Reply], None], pool: float | None = None) -> None:
    """Answer each case request on stdin with its record, until stdin closes; `pool`: the worker's pool
    reference, in each record."""
    def pause(turn: Turn) -> bool:  # a turn ended: the parent lets another environment's process take one
        send(PausedReply(turn.done, turn.median_s))
        line = sys.stdin.readline()
        if not line:
            raise SystemExit(0)  # the parent is gone
        message = protocol.decode(line)
        if isinstance(message, FinishRequest):
            return False
        protocol.expect(message, ResumeRequest)
        return True

    for line in sys.stdin:
        request = protocol.decode_request(line)
        if request.visit_s is None:
            record = executor.run(request.case, request.timer, request.seed, level=request.host_level)
        else:
            record = executor.run(request.case, request.timer, request.seed, pause, request.visit_s)
        record = replace(record, backend_info=info, pool_ref_s=None if pool is None else (pool,))
        if memory_limit and record.error.startswith("MemoryError"):
            record = replace(record, error=f"{record.error} (over --memory-limit {format_size(memory_limit)})")
        send(RecordReply(record))


if __name__ == "__main__":
    raise SystemExit(main())
