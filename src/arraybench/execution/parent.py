"""The parent process of a run's children: starts them, hands each a case, merges and records what comes back.

The round loop of every run (Rounds) runs in the arraybench process, local (Runner) or on a
cluster (cluster.ClusterRunner); the pool of children runs there for a local run, and in each Dask
worker of a cluster run (dask_worker.py holds a WorkerPool there).
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import secrets
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Protocol, TypedDict, Unpack

from arraybench.backends import backend_class
from arraybench.backends.backend import child_env, thread_env
from arraybench.core.case import Case, base_id, label, rivals
from arraybench.core.device_tokens import kind_of
from arraybench.errors import ENV_VARIABLE
from arraybench.execution import protocol
from arraybench.execution.protocol import (
    LAYOUT_PAD_VAR,
    CaseRequest,
    FinishRequest,
    Message,
    PausedReply,
    ReadyReply,
    RecordReply,
    Reply,
    ResumeRequest,
    UnavailableReply,
)
from arraybench.machine import device_survey
from arraybench.measure.casecache import DEFAULT_LIMIT as DEFAULT_CACHE_LIMIT
from arraybench.measure.timing import VISIT_S, TimerConfig
from arraybench.results import ResultsWriter, measured
from arraybench.results.record import FAILED, MEDIAN, PROCESS, CaseRecord, ProcessRecord, registry, stats_fields
from arraybench.stats.spells import RecentLevel
from arraybench.units import format_seconds, format_size
from arraybench.workloads import blank_record, case_size

WorkerKey = tuple[str, int, str, str, str]  # backend, threads, dtype, device, environment
STARTUP_TIMEOUT = 180.0


def worker_key(case: Case) -> WorkerKey:
    """The configuration whose worker runs `case`: one per backend, threads, dtype, device and environment."""
    return (case.backend, case.threads, case.dtype, case.device, case.env)


@dataclass(frozen=True)
class WorkerLaunch:
    """How a worker of one Python environment of the run (`--env`) is started: its interpreter, and the
    variables set for it (`--env-var`)."""

    python: str
    variables: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RunConfig:
    """What every child of a run is started and asked with, fixed for the run.

    Made once (session.run_config) and handed unchanged to Runner, WorkerPool, Worker and
    cluster.ClusterRunner, and pickled to each Dask worker (which points the paths at its own
    machine).
    """

    timer: TimerConfig
    seed: int  # of the run: shuffled orders and every case's inputs derive from it
    timeout: float  # seconds a case may take in its child before the child is killed
    log_dir: Path  # each child's stderr, one file per configuration
    memory_limit: int | None = None  # bytes of address space for each child (limits.py)
    # The run's cache (session.cache_dir): inputs and references shared by its children, each made
    # once per run (casecache.py), and the frameworks' compile caches; None: each child makes its own.
    cache_dir: Path | None = None
    cache_limit: int = DEFAULT_CACHE_LIMIT  # bytes of inputs and references in it
    full_check: bool = False  # every case against its full reference, no sketch (--full-check)
    # One memory layout for every process (--fixed-layout): no random heap and environment pads, no
    # random input offsets; the intervals then do not include what layout moves.
    fixed_layout: bool = False
    # How the workers of each of the run's environments start, by name (`--env`, envs/); a case of env ""
    # runs in this interpreter.
    envs: Mapping[str, WorkerLaunch] = field(default_factory=dict)

    def python(self, env: str) -> str:
        """The interpreter a worker of environment `env` runs."""
        return self.envs[env].python if env else sys.executable


def layout_seed(case: Case, seed: int, round: int) -> int:
    """The seed of a worker's random layout (its environment and heap pads, its inputs' offsets):
    new for every round and configuration, and the same for each Python environment's worker of
    one round, so that two environments' processes of a round run in one layout, and their
    difference, which `compare RUN@A RUN@B` reads, carries no layout's noise (common random
    numbers). Across rounds the layout still varies, and the interval sees what it moves."""
    key = f"{seed}/{round}/{case.backend}/{case.threads}/{case.dtype}/{case.device}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def worker_env(case: Case, fixed_layout: bool = False, launch: WorkerLaunch | None = None,
               layout: int | None = None) -> dict[str, str]:
    """The worker's environment: ours, plus the backend's settings, plus our own import path, plus
    (unless `fixed_layout`) a pad of random length, 0-4095 bytes, that moves the worker's stack
    (the environment sits above it), as Mytkowicz et al. found an environment's size to move times.
    A worker of another Python environment (`launch`) gets its `--env-var` variables, and none of
    ours that would point its interpreter at this one's packages."""
    be = backend_class(case.backend)(case.threads, case.dtype, case.device)
    pad = secrets.randbelow(4096) if layout is None else random.Random(layout).randrange(4096)
    settings = {**be.env(), "PYTHONUNBUFFERED": "1", LAYOUT_PAD_VAR: "x" * pad}
    if launch is not None:
        settings.update(launch.variables)
        # A hint in the worker then names the environment to fix; the pad gives the name's bytes back, so
        # that the environments' processes of a round keep one stack layout.
        settings[ENV_VARIABLE] = case.env
        settings[LAYOUT_PAD_VAR] = "x" * max(0, pad - len(case.env))
        # The environment's packages, never the working directory's files: a project's source tree there
        # (`mykern/` at a repository's top) would shadow the commit the environment installed.
        settings["PYTHONSAFEPATH"] = "1"
    env_ = child_env(settings, foreign=launch is not None and launch.python != sys.executable)
    if fixed_layout:
        del env_[LAYOUT_PAD_VAR]
    return env_


def signal_name(returncode: int | None) -> str:
    if returncode is None:
        return "unknown"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def innermost_frame(dump: str) -> str | None:
    """The innermost Python frame of the thread that wrote faulthandler's `dump` ("Current thread"),
    as `module.py:LINE in FUNCTION` with the file's last two path components; None where there is none."""
    current = dump.split("Current thread", 1)
    if len(current) < 2:
        return None
    m = re.search(r'File "([^"]+)", line (\d+) in (\S+)', current[1])
    if m is None:
        return None
    path = "/".join(Path(m[1]).parts[-2:])
    return f"{path}:{m[2]} in {m[3]}"


class WorkerDied(Exception):
    pass


class WorkerTimeout(Exception):
    pass


class Worker:
    """One running `python -m arraybench.execution.child` process and its JSON-lines pipe."""

    def __init__(self, case: Case, config: RunConfig, floors: Sequence[str] = (), layout: int | None = None) -> None:
        self.key = worker_key(case)
        self.config = config
        config.log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = config.log_dir / (f"worker-{case.backend}-{case.device}-{case.dtype}-t{case.threads}"
                                          + (f"-{case.env}" if case.env else "") + ".log")
        self._log = self.log_path.open("ab")
        # Replacement workers append to the same log; a death is explained by this one's lines.
        self._log_start = self._log.tell()
        cmd = [
            config.python(case.env), "-m", "arraybench.execution.child",
            "--backend", case.backend, "--threads", str(case.threads),
            "--dtype", case.dtype, "--device", case.device, "--parent", str(os.getpid()),
        ]
        if config.memory_limit:
            cmd += ["--memory-limit", str(config.memory_limit)]
        if config.cache_dir is not None:
            cmd += ["--cache", str(config.cache_dir), "--cache-limit", str(config.cache_limit)]
        if config.full_check:
            cmd += ["--full-check"]
        if config.fixed_layout:
            cmd += ["--fixed-layout"]
        if floors:  # the modes whose empty call (floors.py) it measures before its first case
            cmd += ["--floors", ",".join(floors)]
        if layout is not None and not config.fixed_layout:
            cmd += ["--layout-seed", str(layout)]
        # A framework that leaves files in the temporary directory (Backend.private_tmp) gets one of its own,
        # removed with the worker (kill): a worker ends by SIGKILL, so no exit handler of its runs. Inside
        # the run's cache where there is one, which the run removes even if a worker's is left.
        self.tmp: Path | None = None
        env = worker_env(case, config.fixed_layout, config.envs.get(case.env), layout)
        if backend_class(case.backend).private_tmp:
            if config.cache_dir is not None:
                config.cache_dir.mkdir(parents=True, exist_ok=True)
            self.tmp = Path(tempfile.mkdtemp(prefix="worker-tmp-", dir=config.cache_dir))
            env["TMPDIR"] = str(self.tmp)
        # Its own session: Ctrl-C reaches only us, and we decide what the workers do.
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env, start_new_session=True,
        )
        self._buf = b""
        self.info: dict[str, Any] | None = None
        self.unavailable: str | None = None
        self.frozen = False
        # What the parent waits for this worker to finish, and since when (time.monotonic): said where
        # the run is stopped meanwhile; None while the worker waits for the parent. `task` is the case
        # it was last given, which a turn of it (ResumeRequest, FinishRequest) goes on with.
        self.task = f"starting {label(case, device=True)}'s worker"
        self.busy: tuple[str, float] | None = (self.task, time.monotonic())

    def start(self) -> None:
        reply = self.read(STARTUP_TIMEOUT)
        if isinstance(reply, UnavailableReply):
            self.unavailable = reply.reason
        else:
            self.info = protocol.expect(reply, ReadyReply).info

    def read(self, timeout: float) -> Reply:
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerTimeout
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.proc.wait()
                raise WorkerDied(self.death_reason())
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        self.busy = None
        return protocol.decode_reply(line)

    def death_reason(self) -> str:
        code = self.proc.poll()
        why = signal_name(code)
        if code == -signal.SIGKILL:
            why += " (killed: out of memory?)"
        if self.config.memory_limit:
            why += f" under --memory-limit {format_size(self.config.memory_limit)}"
        tail = self.stderr_tail()
        return f"worker died with {why}" + (f"; last output: {tail}" if tail else "") + f"; log: {self.log_path}"

    def stderr_tail(self) -> str:
        """The last line this worker wrote to stderr, where it was not faulthandler's stack dump."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(self._log_start)
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        lines = [ln for ln in re.split(r"\n(?:Current thread|Thread) 0x", text)[0].splitlines() if ln.strip()]
        return lines[-1][:300] if lines else ""

    def send(self, message: Message) -> None:
        if isinstance(message, CaseRequest):
            self.task = f"measuring {progress_label(message.case)}"
        if self.busy is None or isinstance(message, CaseRequest):
            self.busy = (self.task, time.monotonic())
        try:
            self.proc.stdin.write(protocol.encode(message).encode())  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except BrokenPipeError:
            self.proc.wait()
            raise WorkerDied(self.death_reason()) from None

    def run(self, case: Case, host_level: float | None = None) -> CaseRecord:
        self.send(CaseRequest(case, self.config.timer, self.config.seed, host_level=host_level))
        return protocol.expect(self.read(self.config.timeout), RecordReply).record

    def dump_stacks(self, wait_s: float = 2.0) -> str | None:
        """Ask the worker for every thread's Python stack (STACKS_SIGNAL: child.py's faulthandler writes
        them to its log, even from inside a framework's C code); where it is, once they are there within
        `wait_s` (the innermost frame of the thread that wrote them, its main thread as a rule, and the
        log); None if they are not."""
        if self.proc.poll() is not None:
            return None
        self.thaw()
        start = self.log_path.stat().st_size
        try:
            os.kill(self.proc.pid, protocol.STACKS_SIGNAL)
        except ProcessLookupError:
            return None
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if self.log_path.stat().st_size > start:
                time.sleep(0.2)  # the rest of the threads' stacks
                with self.log_path.open("rb") as f:
                    f.seek(start)
                    frame = innermost_frame(f.read().decode(errors="replace")) or "a frame it could not name"
                return f"{frame} (every thread's stack: {self.log_path})"
        return None

    def freeze(self) -> None:
        """Stop every thread of this worker (SIGSTOP to its process group) while another worker measures.

        An idle framework's thread pool is not idle at once: OpenBLAS's threads spin for ~0.1 s after
        each call (105 ms of a core after every burst of 2-thread matmuls, measured on the 2-core VM;
        torch's OpenMP pool 7 ms, JAX's and TensorFlow's none), which takes a core from whatever the
        next worker times, and more from a rival that takes its turn right after NumPy's than from
        NumPy. Stopped, a worker takes nothing; the kernel still kills it with its parent (child.py's
        PR_SET_PDEATHSIG), and SIGKILL ends it stopped or not."""
        if not self.frozen and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGSTOP)
                self.frozen = True
            except ProcessLookupError:
                pass

    def thaw(self) -> None:
        """Let a frozen worker run again (SIGCONT): before anything is sent to it."""
        if self.frozen:
            try:
                os.killpg(self.proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.frozen = False

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self._log.close()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


class RoundOptions(TypedDict, total=False):
    """Rounds' keyword arguments, which Runner and cluster.ClusterRunner pass on: checked by mypy at
    every caller (PEP 692), without a third copy of the signature."""

    on_record: Callable[[CaseRecord], None]
    on_replicate: Callable[[CaseRecord, int], None]
    partial: dict[str, list[CaseRecord]] | None


class MakeRunner(Protocol):
    """What builds a run's Rounds: Runner, or cluster.ClusterRunner with its target bound."""

    def __call__(self, writer: ResultsWriter, config: RunConfig, **rounds: Unpack[RoundOptions]) -> Rounds: ...


class Rounds(ABC):
    """Runs each case in `config.timer.processes` processes, in shuffled order, recording as it goes:
    the round loop of every run, local or on a cluster.

    The plan runs in rounds: each round measures one process of every case in fresh processes and
    a new shuffled order, so a case's processes differ in what ran before them and when. Each
    process's result is written the moment it exists (a replicate line, for --resume and for the
    further rounds of more_rounds.py, which set `processes` and `partial`); the case's record,
    with the statistics over its processes, follows its last one. A case that hangs, crashes its
    worker or raises is recorded with its status and reason after that one process (no second
    timeout), and the run goes on. Where a process runs is the subclass's: Runner starts worker
    processes on this machine, cluster.ClusterRunner hands each to a Dask worker.
    """

    def __init__(
        self,
        writer: ResultsWriter,
        config: RunConfig,
        on_record: Callable[[CaseRecord], None] = lambda r: None,
        on_replicate: Callable[[CaseRecord, int], None] = lambda r, k: None,
        partial: dict[str, list[CaseRecord]] | None = None,
    ) -> None:
        self.writer, self.config, self.processes = writer, config, max(1, config.timer.processes)
        self.on_record, self.on_replicate = on_record, on_replicate
        self.partial = partial or {}  # per case, the processes already measured (--resume, further rounds)
        # When each process ended (`ended_at`): how far apart a case's processes ran (more_rounds.crowded).
        self.clock: Callable[[], float] = time.time

    @staticmethod
    def order(cases: Iterable[Case], seed: int, round: int = 0) -> list[Case]:
        """Shuffled, so slow drift of the machine's speed spreads over all backends alike;
        a different order each round, so no case always follows the same one.

        The rivals of one size (core.case.rivals: every backend·mode, device and environment of
        one workload at one parameter point) run one after the other, in a random order drawn each
        round, and these groups are shuffled: a rival's process of round k is measured within seconds
        of the others', where the host's state is most alike, and their paired difference
        (stats.paired) reads it. Within them, a case's processes in each environment (`--env`) run
        next to each other, in a random order of environments, and take turns (WorkerPool.run_group):
        the host's slow spells on the 2-core VM last 0.2-0.7 s, shorter than a round, and only
        processes measured together share one. Whatever a process gains from what ran just before it,
        its rivals gain as often.
        """
        rng = random.Random(seed if round == 0 else f"{seed}/round {round}")
        sizes: dict[tuple[Any, ...], dict[str, list[Case]]] = defaultdict(lambda: defaultdict(list))
        for c in sorted(cases, key=lambda c: c.id):
            sizes[rivals(c)][base_id(c.id, c.env)].append(c)
        keys = sorted(sizes, key=repr)
        rng.shuffle(keys)
        out = []
        for k in keys:
            groups = sorted(sizes[k])
            rng.shuffle(groups)
            for g in groups:
                rng.shuffle(sizes[k][g])
                out += sizes[k][g]
        return out

    @abstractmethod
    def launched(self, cases: list[Case]) -> AbstractContextManager[list[CaseRecord]]:
        """Ready to measure processes of `cases` until the context ends; gives the records of those
        that can run nowhere here (measured by no process)."""

    @abstractmethod
    def measure(self, cases: list[Case], k: int) -> Iterator[CaseRecord]:
        """One process of each of `cases` in round `k`: each one's record as it ends, in any order."""

    @abstractmethod
    def fresh(self) -> None:
        """End the round's processes: no allocator or JIT state carries over into the next."""

    def run(self, cases: list[Case]) -> list[CaseRecord]:
        done: dict[str, list[CaseRecord]] = defaultdict(list, {cid: list(recs) for cid, recs in self.partial.items()})
        finished: set[str] = set()
        records = []

        def close(cid: str) -> None:  # the case line, over its processes
            final = merge_processes(done[cid])
            self.writer.append(final)
            records.append(final)
            self.on_record(final)
            finished.add(cid)

        sized = {c.id: c for c in cases}

        def record(rec: CaseRecord, k: int) -> None:
            # A worker that could not import the workload file (the user's package broken in its
            # environment) cannot say the case's size; this process, which planned with it, can.
            size = rec.size if rec.size is not None or rec.id not in sized else case_size(sized[rec.id])
            rec = replace(rec, round=k, size=size, ended_at=self.clock())
            if self.processes > 1:  # with one, the case line follows at once
                self.writer.append_replicate(rec, k)
            done[rec.id].append(rec)
            self.on_replicate(rec, k)
            if k == self.processes - 1 or rec.status not in ("ok", "wrong"):
                close(rec.id)

        for c in cases:  # measured in as many processes already (a --resume of further rounds): its line
            if done[c.id] and len(done[c.id]) >= self.processes:
                close(c.id)
        with self.launched(cases) as refused:
            for rec in refused:
                record(rec, 0)
            for k in range(self.processes):
                # Not a case that failed, nor one measured past round k before (--resume, further rounds).
                todo = [c for c in self.order(cases, self.config.seed, k)
                        if c.id not in finished and len(done[c.id]) <= k]
                if not todo:
                    continue
                for rec in self.measure(todo, k):
                    record(rec, k)
                if k < self.processes - 1:
                    self.fresh()
        return records


# A process whose own stopping rule is met goes on taking turns while another of its group within this
# factor of its median still samples: a spell that reached one of two such processes and not the
# other could swap them, and from the same stretch of time it reaches both alike. Two further apart
# than a spell's 1.4-1.8× cannot swap; each stops on its own.
LOCKSTEP = 2.0


def finished(mine: PausedReply, others: Sequence[PausedReply]) -> bool:
    """Whether a process of a group that says `mine` stops now, while processes that said `others` go on:
    when it is done and no rival within LOCKSTEP× of it (or of unknown time) still samples."""
    def close(other: PausedReply) -> bool:
        a, b = mine.median_s, other.median_s
        return not a or not b or max(a, b) <= LOCKSTEP * min(a, b)

    return mine.done and not any(not o.done and close(o) for o in others)


def turn_groups(cases: Sequence[Case]) -> list[list[Case]]:
    """`cases` in their order, cut where the case changes: a run of one case in several environments
    (Rounds.order puts them next to each other) is one group, whose processes take turns; any other
    case a group of its own.

    Only a case's environments take turns, not the rivals of a size: turns of 7.5 ms among the
    rivals of `grad` at n = 10⁴ put JAX's jitted gradient, 5.0-5.3 µs a call in every process on its
    own, at 14-27 µs in 5 of 8 processes on the 2-core VM (its dispatch slow for tens of ms after
    each pause, with or without Worker.freeze, with turns of 20 or 50 ms too). Rivals therefore run
    back to back, each in one stretch, and what the host did meanwhile is read from their samples
    (stats/spells.py)."""
    groups: list[list[Case]] = []
    for c in cases:
        last = groups[-1] if groups else None
        if (last is not None and base_id(c.id, c.env) == base_id(last[0].id, last[0].env)
                and c.env not in {x.env for x in last}):
            last.append(c)
        else:
            groups.append([c])
    return groups


class Runner(Rounds):
    """Rounds whose processes are worker processes of this machine, one per backend configuration
    at a time (WorkerPool), replaced where one dies."""

    def __init__(self, writer: ResultsWriter, config: RunConfig, **rounds: Unpack[RoundOptions]) -> None:
        super().__init__(writer, config, **rounds)
        self.pool = WorkerPool(config)
        self.machine = socket.gethostname()

    @contextmanager
    def launched(self, cases: list[Case]) -> Iterator[list[CaseRecord]]:
        self.pool.expect(cases)
        try:
            yield []
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: the caller says what the workers were doing
            for said in self.pool.in_flight():
                e.add_note(said)
            raise
        finally:
            self.pool.close()

    def measure(self, cases: list[Case], k: int) -> Iterator[CaseRecord]:
        self.pool.round = k
        for group in turn_groups(cases):
            if len(group) > 1:  # one case in several environments: their processes take turns
                for rec, wall in self.pool.run_group(group):
                    yield replace(rec, wall_s=wall, machine=self.machine)
                continue
            t0 = time.monotonic()
            # What measuring this process cost, worker start-up included where it had one.
            yield replace(self.pool.run_one(group[0]), wall_s=time.monotonic() - t0, machine=self.machine)

    def fresh(self) -> None:
        self.pool.close()


# From the record's registry: a process's own figures whose median over processes the case line
# gives (each process's are in `replicates`), and those with no meaning over processes (only there).
MEDIAN_OVER_PROCESSES = tuple(f.name for f in registry(CaseRecord) if f.merge == MEDIAN)
ONLY_PER_PROCESS = tuple(f.name for f in registry(CaseRecord) if f.scope == PROCESS)


def merge_processes(recs: Sequence[CaseRecord]) -> CaseRecord:
    """The case record from its processes' records: every process's samples, statistics over them.

    The status is the worst any process saw: one wrong or crashed process makes the case so.
    """
    severity = {s: i for i, s in enumerate(("crashed", "timeout", "error", "wrong"))}
    worst = min(recs, key=lambda r: severity.get(r.status, len(severity)))
    timed = [r for r in recs if r.samples_s]
    walls = [r.wall_s for r in recs if r.wall_s is not None]
    out = replace(worst, wall_s=sum(walls)) if walls else worst  # what the case cost, over all its processes
    if not timed:
        return out
    changes: dict[str, Any] = {
        "samples_s": tuple(x for r in timed for x in r.samples_s),
        "host_ref_s": (tuple(x for r in timed for x in r.host_ref_s or ())
                       if all(r.host_ref_s for r in timed) else None),
        "cpu_wait": (tuple(x for r in timed for x in r.cpu_wait or ())
                     if all(r.cpu_wait is not None for r in timed) else None),
        "memory_ref_s": (tuple(x for r in timed for x in r.memory_ref_s or ())
                         if all(r.memory_ref_s for r in timed) else None),
        "wake_ref_s": (tuple(x for r in timed for x in r.wake_ref_s or ())
                       if all(r.wake_ref_s for r in timed) else None),
        "pool_ref_s": (tuple(x for r in timed for x in r.pool_ref_s or ())
                       if all(r.pool_ref_s for r in timed) else None),
        "replicates": tuple(ProcessRecord.of(r) for r in timed),
        **{k: None for k in ONLY_PER_PROCESS},
    }
    for k in MEDIAN_OVER_PROCESSES:
        values = [getattr(r, k) for r in timed if getattr(r, k) is not None]
        middle = statistics.median(values) if values else None
        # A count of bytes stays a whole number where the median falls between two processes'.
        changes[k] = round(middle) if middle is not None and isinstance(values[0], int) else middle
    # A first call served from the run's compile cache is not a compile: it is reported apart.
    for k, warm in (("first_call_s", False), ("first_call_warm_s", True)):
        values = [r.first_call_s for r in timed
                  if r.first_call_s is not None and (r.first_call_cache == "warm") == warm]
        changes[k] = statistics.median(values) if values else None
    cold = sorted(x for r in timed for x in r.cold_samples_s or ())
    if cold:  # a GPU case's L2-cold calls, pooled over its processes
        changes["cold_samples_s"], changes["cold_median_s"] = tuple(cold), statistics.median(cold)
    clocks = [r.gpu_clock for r in timed if r.gpu_clock]
    if clocks:  # the case ran throttled if any of its processes did
        changes["gpu_clock"] = next((c for c in clocks if c.get("throttled")), clocks[0])
    out = replace(out, **changes)
    stats = measured(out)
    assert stats is not None  # timed is not empty
    out = replace(out, **stats_fields(stats.summary()))
    if out.status in FAILED and out.status != "wrong" and len(recs) > 1:
        out = replace(out, error=f"{out.error} (in process {recs.index(worst) + 1} of {len(recs)})")
    return out


class WorkerPool:
    """One worker process per backend configuration, kept alive between its cases.

    Imports cost seconds, so a worker serves every case of its configuration; each case runs
    in its backend's worker, so no framework's thread pools share a process with another's.
    A case that hangs, crashes its worker or raises is returned with its status and reason,
    and the worker is replaced for the next case.
    """

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.workers: dict[WorkerKey, Worker] = {}
        self.unavailable: dict[WorkerKey, str] = {}
        # The modes each configuration's cases use (`expect`): a worker measures the empty call
        # (floors.py) of those only, since a compiled one costs a compilation (torch.compile's
        # first, cold: 10-30 s of start-up on a loaded 2-core machine, which an eager-only run never uses).
        self.modes: dict[WorkerKey, set[str]] = defaultdict(set)
        # The modes whose empty call a worker of this pool measured, per configuration: once is
        # enough, so later workers skip them.
        self.floors_measured: dict[WorkerKey, set[str]] = defaultdict(set)
        # Per backend, the devices its framework sees here (device_survey.py), asked once, where a
        # worker for a device other than the CPU could not start; None where the survey failed.
        self.surveys: dict[str, list[device_survey.Device] | None] = {}
        # The round the pool's workers serve (Runner sets it): their layouts derive from it
        # (layout_seed); None, a pool outside rounds (a Dask worker's): random layouts.
        self.round: int | None = None
        # The host's full speed over the processes of the last seconds, which each process sampling
        # alone takes along, to sample on through a slow spell that covers it (Timer's `level`).
        self.recent = RecentLevel()

    def expect(self, cases: Iterable[Case]) -> None:
        """Note the cases the pool is to run, so its workers measure the floors of their modes only
        (a case not noted gets its own mode's)."""
        for case in cases:
            self.modes[worker_key(case)].add(case.mode)

    def only(self, worker: Worker | None) -> None:
        """Let `worker` run, every other worker of the pool frozen (None: all of them frozen): one
        process measures at a time, and no other one's idle thread pool spins beside it (Worker.freeze)."""
        for w in self.workers.values():
            if w is not worker:
                w.freeze()
        if worker is not None:
            worker.thaw()

    def run_one(self, case: Case) -> CaseRecord:
        ready = self._ready(case)
        if isinstance(ready, CaseRecord):
            return ready
        worker, startup_s = ready
        try:
            self.only(worker)
            rec = worker.run(case, self.recent.level())
            self.recent.add(rec.host_ref_s)
            return rec if startup_s is None else replace(rec, startup_s=startup_s)
        except (WorkerTimeout, WorkerDied) as e:
            return self._lost(case, e)

    def run_group(self, cases: Sequence[Case], visit_s: float | None = None) -> list[tuple[CaseRecord, float]]:
        """One process of each of `cases`, one case in several environments (turn_groups), whose
        sampling takes turns of about `visit_s` seconds (default VISIT_S, or a quarter of the timer's
        `min_time` if that is less, so each process takes four turns at least): A, B, A, B...
        (Timer's `pause`), one worker running at a time, the others frozen (`only`). Each stops when
        its own rule is met and no process within LOCKSTEP× of it still samples (`finished`), so the
        two sample over the same stretch of time. A slow spell of the host shorter than a process's
        sampling then falls on turns of each, and the paired difference between them (stats.paired)
        cancels it; run one after the other, two processes ~0.5 s apart shared a spell only part of
        the time. Gives each case's record and the seconds its worker ran (its turns, not the
        others'), in the order of `cases`.
        """
        visit_s = visit_s or min(VISIT_S, self.config.timer.min_time / 4)
        records: dict[int, CaseRecord] = {}
        spent = [0.0] * len(cases)
        startups: dict[int, float | None] = {}
        waiting: list[tuple[int, Worker]] = []
        said: dict[int, PausedReply] = {}  # each sampling process's last word: done, its median so far

        def turn(i: int, worker: Worker, message: Message) -> None:
            t0 = time.monotonic()
            try:
                self.only(worker)
                worker.send(message)
                reply = worker.read(max(1.0, self.config.timeout - spent[i]))
                if isinstance(reply, PausedReply):
                    said[i] = reply
                    waiting.append((i, worker))
                else:
                    rec = protocol.expect(reply, RecordReply).record
                    self.recent.add(rec.host_ref_s)
                    records[i] = rec if startups.get(i) is None else replace(rec, startup_s=startups[i])
            except (WorkerTimeout, WorkerDied) as e:
                records[i] = self._lost(cases[i], e)
            spent[i] += time.monotonic() - t0

        for i, case in enumerate(cases):
            t0 = time.monotonic()
            ready = self._ready(case)
            spent[i] += time.monotonic() - t0
            if isinstance(ready, CaseRecord):
                records[i] = ready
                continue
            worker, startups[i] = ready
            turn(i, worker, CaseRequest(case, self.config.timer, self.config.seed, visit_s))
        while waiting:
            i, worker = waiting.pop(0)
            rivals_on = [said[j] for j, _ in waiting]
            turn(i, worker, FinishRequest() if finished(said[i], rivals_on) else ResumeRequest())
        return [(records[i], spent[i]) for i in range(len(cases))]

    def _ready(self, case: Case) -> tuple[Worker, float | None] | CaseRecord:
        """The worker for `case` and what starting it took (None: it was running), or the record that
        says why there is none."""
        cls = backend_class(case.backend)
        key = worker_key(case)
        for ok, reason in (cls.installed(), cls.runs_on(case.device)):
            if not ok:
                return blank_record(case, "unavailable", reason)
        if key in self.unavailable:
            return blank_record(case, "unavailable", self.unavailable[key])
        worker = self.workers.get(key)
        if worker is not None:
            return worker, None
        t0 = time.monotonic()
        started = self._start(key, case)
        return started if isinstance(started, CaseRecord) else (started, time.monotonic() - t0)

    def _lost(self, case: Case, e: WorkerTimeout | WorkerDied) -> CaseRecord:
        """`case`'s record where its worker hung or died (the worker is replaced for the next case). A hung
        worker is asked for its threads' stacks first, and the reason says where it was."""
        worker = self.workers.get(worker_key(case))
        where = worker.dump_stacks() if worker is not None and isinstance(e, WorkerTimeout) else None
        self._drop(worker_key(case))
        if isinstance(e, WorkerTimeout):
            at = f"; it was in {where}" if where else ""
            return blank_record(case, "timeout",
                                f"no result within --timeout {self.config.timeout:g} s; worker killed{at}")
        return blank_record(case, "crashed", str(e))

    def _start(self, key: WorkerKey, case: Case) -> Worker | CaseRecord:
        """A started worker for `key`, or the record of `case` that says why there is none: unavailable
        for this configuration's every case, or crashed (the next case tries again)."""
        floors = sorted((self.modes[key] | {case.mode}) - self.floors_measured[key])
        layout = layout_seed(case, self.config.seed, self.round) if self.round is not None else None
        self.only(None)  # a worker starts, and measures its floors, with the others frozen
        worker = Worker(case, self.config, floors=floors, layout=layout)
        # Registered before it starts, so a Ctrl-C during its imports still kills it.
        self.workers[key] = worker
        try:
            worker.start()
            self.floors_measured[key].update(floors)
        except (WorkerDied, WorkerTimeout) as e:
            self._drop(key)
            # A framework asked for a device it does not have may die of it (JAX asserts): the survey says which.
            if absent := self.absent(case):
                self.unavailable[key] = absent
                return blank_record(case, "unavailable", absent)
            reason = str(e) or f"worker did not start within {STARTUP_TIMEOUT:.0f} s"
            return blank_record(case, "crashed", f"{case.backend} failed to start: {reason}")
        if worker.unavailable is not None:
            self.unavailable[key] = self.absent(case) or worker.unavailable
            self._drop(key)
            return blank_record(case, "unavailable", self.unavailable[key])
        return worker

    def absent(self, case: Case) -> str | None:
        """Why the framework has not `case`'s devices here (`jax sees no gpu here: cpu ×1`), from what
        it sees outside a worker, which is started for one kind only; None where it has them, where
        they are CPUs (a framework's CPU devices are made up to the count asked) or the survey failed."""
        if kind_of(case.device) == "cpu":
            return None
        if case.backend not in self.surveys:
            found, problem = device_survey.result(device_survey.start(case.backend,
                                                                      child_env(thread_env(case.threads))))
            self.surveys[case.backend] = None if problem else found
        seen = self.surveys[case.backend]
        return None if seen is None else device_survey.missing(case.backend, case.device, seen)

    def _drop(self, key: WorkerKey) -> None:
        worker = self.workers.pop(key, None)
        if worker is not None:
            worker.kill()

    def in_flight(self) -> list[str]:
        """What each busy worker is doing and for how long, and where its main thread is (dump_stacks):
        told where the run is stopped, before its workers are killed."""
        now, said = time.monotonic(), []
        for w in self.workers.values():
            if w.busy is None:
                continue
            what, since = w.busy
            where = w.dump_stacks()
            at = f", in {where}" if where else f"; its log: {w.log_path}"
            said.append(f"stopped while {what}, after {format_seconds(now - since)}{at}")
        return said

    def close(self) -> None:
        for key in list(self.workers):
            self._drop(key)


def progress_label(rec: CaseRecord | Case) -> str:
    """How progress (and a stopped run) names a case: workload[size] and its configuration as every
    output names it (core.case.label: backend·mode·device, and [env] in a run of several environments);
    the device always, since cpu and cpu:2 are two cases."""
    size = rec.size if isinstance(rec, CaseRecord) else case_size(rec)
    return f"{rec.workload}[{size}] {label(rec, device=True)}"


class Progress:
    """A progress line on stderr: a bar on a terminal, one line per process and per case otherwise.

    It counts cases, or processes where each case is measured in several: then every process
    moves the counter, those a --resume kept included, where counting cases would stay at 0 until
    the last round.
    """

    def __init__(self, total: int, stream: IO[str] | None = None, processes: int = 1) -> None:
        # sys.stderr looked up now, not at import: pytest and notebooks swap it after import.
        self.total, self.done, self.stream = total, 0, stream or sys.stderr
        self.processes, self.processes_done = processes, 0
        self.counted: dict[str, int] = {}  # per unfinished case, its processes counted so far
        self.extra = 0  # processes of further rounds for open cases (more_rounds.py), beyond the plan's
        self.finished: set[str] = set()  # cases whose line was written (a further round writes it again)
        self.tty = self.stream.isatty()
        self.started = time.monotonic()

    def resumed(self, kept: Mapping[str, Sequence[CaseRecord]]) -> None:
        """Count the processes of unfinished cases that a --resume keeps (Runner's `partial`) as done."""
        for cid, recs in kept.items():
            self.counted[cid] = len(recs)
            self.processes_done += len(recs)

    def more(self, processes: int) -> None:
        """A further round measures `processes` more (one a case, or several for one catching up)."""
        self.extra += processes

    def expected(self) -> int:
        """Processes the counter counts up to."""
        return self.total * self.processes + self.extra

    def counter(self) -> str:
        if self.processes == 1 and not self.extra:
            return f"{self.done}/{self.total}"
        return f"{self.processes_done}/{self.expected()} processes"

    def replicate(self, rec: CaseRecord, k: int) -> None:
        """One process of a case done (the case's own line follows its last process)."""
        self.counted[rec.id] = self.counted.get(rec.id, 0) + 1
        self.processes_done += 1
        if k < self.processes - 1 and rec.status in ("ok", "wrong"):
            self.show(f"{progress_label(rec)} process {k + 1}/{self.processes}", rec)

    def __call__(self, rec: CaseRecord) -> None:
        if rec.id not in self.finished:
            self.done += 1
            self.finished.add(rec.id)
        # A case that failed is not measured again: the processes it will not run are done too.
        counted = self.counted.pop(rec.id, 0)
        if rec.status not in ("ok", "wrong"):
            self.processes_done += max(0, self.processes - counted)
        self.show(progress_label(rec), rec)

    def show(self, what: str, rec: CaseRecord) -> None:
        """Write the counter and `what` with its result."""
        if rec.status in ("ok", "wrong"):
            several = (rec.n_processes or 1) > 1
            spread = f", processes ±{50 * (rec.process_spread or 0):.0f}%" if several else ""
            result = f"{format_seconds(rec.median_s)} {rec.status}{spread}"
        else:
            result = rec.status
        elapsed = time.monotonic() - self.started
        if self.tty:
            width = 24
            share = min(1.0, self.processes_done / self.expected()) if self.total else 1.0
            filled = int(width * share)
            bar = "#" * filled + "-" * (width - filled)
            self.stream.write(f"\r[{bar}] {self.counter()} {elapsed:5.0f}s  {what}: {result}\033[K")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(f"[{self.counter()}] {elapsed:.0f}s {what}: {result}\n")
        self.stream.flush()
