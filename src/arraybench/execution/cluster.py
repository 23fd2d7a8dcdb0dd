"""In the arraybench process of a `--cluster` run: the Dask target, and ClusterRunner, which runs the
plan's cases on Dask workers (dask_worker.py), each case in the same isolated child as locally."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Unpack

from arraybench.core.case import Case
from arraybench.core.device_tokens import device_count, kind_of
from arraybench.errors import UsageError, one_line
from arraybench.execution.parent import RoundOptions, Rounds, RunConfig
from arraybench.planning.settings import default_threads, parse_list
from arraybench.results import ResultsWriter, load_results
from arraybench.results.record import CaseRecord
from arraybench.workloads import blank_record

# Every case needs one unit of SLOT and every arraybench Dask worker offers one, so a worker
# runs one case at a time however many threads it has: timings are not shared with a neighbour.
SLOT = "arraybench"
GPU = "GPU"
CONNECT_TIMEOUT = 30.0
WAIT_FOR_WORKERS = 60.0
# How long a worker that `--on` names may take to join a cluster that already has others: a
# cluster started a moment ago registers its workers one by one.
WAIT_FOR_NAMED = 10.0
POLL = 0.2
CHECK_EVERY = 2.0
WORKER_HINT = "start each with: dask worker ADDRESS --nthreads 1 --resources arraybench=1 (see docs/cluster.md)"


def local_threads(address: str | None) -> int | None:
    """--threads when none is given with --cluster local:N: the usable cores shared N ways, so the
    N cases running at once never share a core; None for any other cluster (and for none)."""
    if address is None or not address.startswith("local"):
        return None
    target = ClusterTarget.parse(address)
    return max(1, default_threads() // (target.local_workers or 1))


@dataclass(frozen=True)
class DaskWorker:
    """What the scheduler says about one Dask worker."""

    address: str
    name: str
    host: str
    resources: dict[str, float]

    def offers(self, needs: dict[str, float]) -> bool:
        return all(self.resources.get(k, 0) >= v for k, v in needs.items())


@dataclass(frozen=True)
class Pins:
    """`--on`, resolved: hosts stay hosts, so a worker restarted there still qualifies; names and
    addresses become addresses, which a restarted worker no longer has."""

    workers: tuple[DaskWorker, ...] = ()
    hosts: frozenset[str] = frozenset()
    addresses: frozenset[str] = frozenset()

    def allow(self, worker: DaskWorker) -> bool:
        return not self.workers or worker in self.workers or worker.host in self.hosts

    def restriction(self) -> list[str] | None:
        return sorted(self.hosts | self.addresses) or None

    def stranded(self, alive: set[str]) -> bool:
        """True when no worker these pins allow can ever come back."""
        return bool(self.addresses) and not self.hosts and not self.addresses & alive


@dataclass(frozen=True)
class ClusterTarget:
    """Where cases run: a scheduler's address or a LocalCluster's size, and the workers allowed."""

    address: str | None = None
    local_workers: int | None = None
    on: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, on: str | None = None) -> ClusterTarget:
        pins = tuple(parse_list(on) or ())
        if text.startswith("local"):
            count = text.removeprefix("local:")
            if not text.startswith("local:") or not count.isdigit() or int(count) < 1:
                raise UsageError(f"--cluster {text!r}: expected local:N with N at least 1, e.g. local:2")
            return cls(local_workers=int(count), on=pins)
        return cls(address=text, on=pins)

    def cpu_slices(self, threads: int) -> dict[str, list[int]]:
        """Disjoint CPUs for each local worker (by name), so cases run at once never share a core."""
        if self.local_workers is None:
            return {}
        cpus = sorted(os.sched_getaffinity(0))
        if self.local_workers * threads > len(cpus):
            raise UsageError(
                f"--cluster local:{self.local_workers} runs {self.local_workers} cases at once with "
                f"--threads {threads} each: that needs {self.local_workers * threads} cores and "
                f"{len(cpus)} are usable; lower --threads or N"
            )
        per = len(cpus) // self.local_workers
        return {str(i): cpus[i * per:(i + 1) * per] for i in range(self.local_workers)}

    def workers(self, client: Any) -> tuple[list[DaskWorker], Pins]:
        """The connected workers and what `--on` allows; a cluster no case can run on is refused."""
        where = self.address or "the local cluster"
        try:  # a local cluster's every worker; another's first (more may join while the run goes)
            client.wait_for_workers(self.local_workers or 1, timeout=WAIT_FOR_WORKERS)
        except TimeoutError:
            raise UsageError(f"no Dask worker joined {where} within {WAIT_FOR_WORKERS:.0f} s; {WORKER_HINT}") from None
        named_by = time.monotonic() + WAIT_FOR_NAMED
        while True:
            workers = dask_workers(client)
            try:
                if not any(w.offers({SLOT: 1}) for w in workers):
                    raise UsageError(f"no Dask worker at {where} offers the {SLOT!r} resource; {WORKER_HINT}")
                return workers, self.pins(workers, client.run(socket.gethostname) if self.on else {})
            except UsageError:  # a worker --on names, or one that offers the resource, may still be joining
                if time.monotonic() >= named_by:
                    raise
                time.sleep(POLL)

    def pins(self, workers: list[DaskWorker], hostnames: dict[str, str]) -> Pins:
        """The workers `--on` names; each token may be a worker's name, host name, IP or address."""
        chosen: list[DaskWorker] = []
        hosts: set[str] = set()
        for token in self.on:
            by_host = [w for w in workers if token in (w.host, hostnames.get(w.address))]
            match = by_host or [w for w in workers if token in (w.name, w.address)]
            if not match:
                known = ", ".join(sorted(f"{w.name} ({hostnames.get(w.address, w.host)}, {w.address})"
                                         for w in workers))
                raise UsageError(f"--on {token!r} names no Dask worker; workers: {known}")
            chosen += match
            hosts |= {w.host for w in by_host}
        addresses = {w.address for w in chosen if w.host not in hosts}
        return Pins(tuple(chosen), frozenset(hosts), frozenset(addresses))

    @contextlib.contextmanager
    def client(self) -> Iterator[Any]:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise UsageError("--cluster needs Dask: pip install 'arraybench[cluster]'") from None
        if self.local_workers is not None:
            # Loopback only, one thread each: the cluster is reachable from this machine alone.
            with sigint_ignored():
                cluster = LocalCluster(n_workers=self.local_workers, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None, resources={SLOT: 1})
            with cluster, Client(cluster) as client:
                yield client
            return
        try:
            client = Client(self.address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as e:
            raise UsageError(f"cannot reach the Dask scheduler at {self.address}: {one_line(e)}") from None
        with client:
            yield client


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Processes started meanwhile ignore Ctrl-C (an ignored signal stays ignored across exec):
    on Ctrl-C this process stops them in order, instead of each dying with its own traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def dask_workers(client: Any) -> list[DaskWorker]:
    info = client.scheduler_info(n_workers=-1)["workers"]
    return [DaskWorker(address=addr, name=str(w.get("name")), host=w.get("host", ""),
                       resources=dict(w.get("resources") or {})) for addr, w in info.items()]


def case_needs(case: Case) -> dict[str, float]:
    if kind_of(case.device) != "gpu":
        return {SLOT: 1}
    return {SLOT: 1, GPU: device_count(case.device) or 1}


class ClusterRunner(Rounds):
    """Rounds whose processes are Dask tasks, each recorded the moment it finishes.

    A task runs its case in its Dask worker's WorkerPool (dask_worker.CasePool): the same
    isolated arraybench worker processes as a local run, started once per Dask worker; between
    rounds every Dask worker closes its pool, so the next round's cases run in fresh processes.
    A Dask worker that dies loses only the cases it held: the scheduler runs them elsewhere, and
    after `distributed.scheduler.allowed-failures` deaths (default 3) the case is recorded as
    crashed. Cases pinned by name to a worker that left are recorded as crashed too.
    """

    def __init__(self, target: ClusterTarget, writer: ResultsWriter, config: RunConfig,
                 **rounds: Unpack[RoundOptions]) -> None:
        # config's paths are unused: each Dask worker keeps its children's logs on its own machine.
        super().__init__(writer, config, **rounds)
        self.target = target
        self.machines = set(load_results(writer.path).machine_lines)
        # While launched: the client, the run's plugin (its CasePool) on every Dask worker, the pins,
        # and the cases Dask holds.
        self.client: Any = None
        self.plugin = ""
        self.pins = Pins()
        self.in_flight: dict[Any, Case] = {}

    @contextlib.contextmanager
    def launched(self, cases: list[Case]) -> Iterator[list[CaseRecord]]:
        from arraybench.execution.dask_worker import CasePool

        threads = max((c.threads for c in cases), default=1)
        cpus = self.target.cpu_slices(threads)
        with self.target.client() as client:
            workers, pins = self.target.workers(client)
            runnable: list[Case] = []
            refused: list[CaseRecord] = []
            for case in cases:
                needs = case_needs(case)
                if any(w.offers(needs) and pins.allow(w) for w in workers):
                    runnable.append(case)
                else:
                    refused.append(blank_record(case, "unavailable", self.no_worker_reason(needs)))
            plugin = f"arraybench-{uuid.uuid4().hex[:12]}"
            # A local cluster runs on this machine, whose peaks the header already holds.
            peaks_threads = None if self.target.local_workers else threads
            client.register_plugin(CasePool(self.config, cpus, peaks_threads, runnable,
                                            local=self.target.local_workers is not None), name=plugin)
            self.client, self.plugin, self.pins, self.in_flight = client, plugin, pins, {}
            try:
                yield refused
            finally:
                client.cancel(list(self.in_flight))
                with contextlib.suppress(Exception):  # the cluster may already be going away
                    client.unregister_worker_plugin(plugin)

    def measure(self, cases: list[Case], k: int) -> Iterator[CaseRecord]:
        from distributed import as_completed

        yield from self.feed(deque(cases), as_completed())

    def fresh(self) -> None:
        from arraybench.execution.dask_worker import close_pool

        self.client.run(close_pool, self.plugin)

    def feed(self, queue: deque[Case], done: Any) -> Iterator[CaseRecord]:
        """Keep at most one case per eligible worker in Dask's hands; each one's record as it finishes.

        Dask assigns every submitted task to a worker at once, and when a worker dies it counts
        the death against every task assigned there. Holding the queue here means a death
        touches only the case that worker was running, and cases start in the shuffled order.
        """
        from arraybench.execution.dask_worker import run_case

        client, pins, in_flight = self.client, self.pins, self.in_flight
        capacity = self.capacity(dask_workers(client), pins)
        last_check = time.monotonic()
        while queue or in_flight:
            while queue and len(in_flight) < capacity:
                case = queue.popleft()
                needs = case_needs(case)
                fut = client.submit(run_case, self.plugin, case.to_dict(), key=f"{case.id}@{self.plugin}",
                                    resources=needs, workers=pins.restriction(),
                                    allow_other_workers=False, pure=False)
                in_flight[fut] = case
                done.add(fut)
            if done.has_ready():
                for fut in done.next_batch(block=False):
                    yield self.outcome(fut, in_flight.pop(fut))
                continue
            time.sleep(POLL)
            if time.monotonic() - last_check < CHECK_EVERY:
                continue
            last_check = time.monotonic()
            workers = dask_workers(client)
            capacity = self.capacity(workers, pins)
            if pins.stranded({w.address for w in workers}):
                reason = "the Dask worker it was pinned to with --on left the cluster"
                for fut, case in list(in_flight.items()):
                    fut.cancel()
                    yield blank_record(case, "crashed", reason)
                for case in queue:
                    yield blank_record(case, "crashed", reason)
                in_flight.clear()
                queue.clear()

    @staticmethod
    def capacity(workers: list[DaskWorker], pins: Pins) -> int:
        """Cases Dask may hold at once: one per worker that may run them (at least one, to wait on)."""
        return max(1, sum(1 for w in workers if w.offers({SLOT: 1}) and pins.allow(w)))

    def outcome(self, fut: Any, case: Case) -> CaseRecord:
        """The record of a finished task; the first of a machine adds that machine's environment to the file."""
        from distributed import KilledWorker

        try:
            record, environment = fut.result()
        except KilledWorker as e:
            return blank_record(case, "crashed", f"Dask workers died running it {e.allowed_failures + 1} times, "
                                                 f"last {e.last_worker.address}")
        except Exception as e:  # a task that cannot run there (e.g. no arraybench) is this case's result
            return blank_record(case, "crashed", f"Dask task failed: {one_line(e)}")
        rec = CaseRecord.from_json(record)
        machine = rec.machine  # named by every Dask task (dask_worker.run_case), the one source of an environment
        if machine is not None and machine not in self.machines:
            self.machines.add(machine)
            self.writer.add_machine(machine, environment)
        return rec

    def no_worker_reason(self, needs: dict[str, float]) -> str:
        offer = ",".join(f"{k}={v:g}" for k, v in needs.items())
        where = f" among --on {','.join(self.target.on)}" if self.target.on else ""
        return (f"no Dask worker{where} offers {offer}; "
                f"start one with: dask worker ADDRESS --nthreads 1 --resources {offer}")
