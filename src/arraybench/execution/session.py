"""One benchmark run from settings to a results file, in the arraybench process (the CLI's or the
Python API's): plan, a runner for it, the crossover rounds, the results."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from arraybench.core.case import Case
from arraybench.core.device_tokens import kind_of
from arraybench.envs.spec import run_envs
from arraybench.errors import UsageError
from arraybench.execution.more_rounds import Runs, more_rounds
from arraybench.execution.parent import MakeRunner, Progress, RoundOptions, RunConfig, Runner, WorkerLaunch
from arraybench.machine import host, packages
from arraybench.measure import peaks
from arraybench.planning import fit, refine
from arraybench.planning.plan import build_plan
from arraybench.planning.settings import RunSettings
from arraybench.results import SCHEMA, Results, ResultsWriter, load_results, writable_dir
from arraybench.results.record import CaseRecord
from arraybench.results.run_ids import new_run_id
from arraybench.version import __version__
from arraybench.workloads.userfile import stand_ins

if TYPE_CHECKING:
    from arraybench.envs.prepared import PreparedEnv


class Keeper(Protocol):
    """Where a run's records are kept besides its results file, each as it lands: a results store
    (store.keeping.StoreKeeper, which the CLI or the Python API makes for the store it names; a run
    itself knows no store)."""

    def check(self) -> None:
        """Refuse, before the results file exists, a place that cannot keep the run."""

    def start(self, results_path: Path, then: Callable[[CaseRecord], None]) -> Callable[[CaseRecord], None]:
        """Begin keeping the run of `results_path` (what the file holds already, too); the callback it
        returns keeps each record, then hands it to `then`."""
        ...

    def finish(self) -> None:
        """At the run's end or its interruption: keep what is still lacking, and say how much is kept."""


def cache_dir(out_dir: Path) -> Path:
    """The run's cache: inputs, references and compiled code its children share; gone when it completes."""
    return out_dir / "cache"


def run_config(settings: RunSettings, out_dir: Path, envs: Mapping[str, PreparedEnv] | None = None) -> RunConfig:
    """What the run's children are started and asked with; their logs and shared cache in `out_dir`;
    `envs`, the prepared environments of `--env` (prepare_envs), by name."""
    workers = {name: WorkerLaunch(str(e.python), tuple(sorted(e.variables.items())))
               for name, e in (envs or {}).items()}
    return RunConfig(settings.timer, settings.seed, settings.timeout, out_dir / "logs", settings.memory_limit,
                     cache_dir=cache_dir(out_dir), cache_limit=settings.cache_limit, full_check=settings.full_check,
                     fixed_layout=settings.fixed_layout, envs=workers)


def prepare_envs(settings: RunSettings) -> dict[str, PreparedEnv]:
    """The run's `--env` environments made ready (built with uv or reused from the cache), by name;
    each build's progress goes to stderr. None given: none."""
    if not settings.envs:
        return {}
    from arraybench.envs import prepare

    return prepare(settings.envs, lambda line: print(f"arraybench: env: {line}", file=sys.stderr, flush=True))


def check_imports(settings: RunSettings, envs: Mapping[str, PreparedEnv]) -> None:
    """Stop, in one line, a run whose workers could not import a package the workload file imports at its
    top and this interpreter lacks (it stood in while the file was planned: userfile.Elsewhere)."""
    missing = stand_ins(settings.workload_file) if settings.workload_file else ()
    if not missing:
        return
    names, path = ", ".join(missing), settings.workload_file
    if not envs:
        raise UsageError(f"the workload file {path!r} imports {names}, which this Python ({sys.executable}) "
                         f"cannot import, and the workers run here: install it here, or measure it in "
                         f"environments that have it (--env NAME:SPEC, e.g. --env pr:git:HEAD; docs/own-package.md)")
    from arraybench.envs.prepared import lacking

    for name, e in envs.items():
        gone = lacking(e.python, missing)
        if gone:
            raise UsageError(f"--env {name}: the workload file {path!r} imports {', '.join(gone)}, which this "
                             f"environment cannot import: add what provides it to the spec of --env {name}")


def check_same_code(measured: Mapping[str, Any], envs: Mapping[str, PreparedEnv]) -> None:
    """Refuse to resume a run whose environments now install other code than it measured (a branch
    that moved, an edited project): its cases would mix the two. arraybench itself, the harness, is
    this checkout whatever it was."""
    for name, e in envs.items():
        before = packages.of_environment(measured.get(name) or {})
        if before is None:  # a file written before packages were recorded
            continue
        differ = packages.changes({k: p for k, p in before.items() if k != "arraybench"},
                                  {p.name: p for p in e.packages if p.name != "arraybench"})
        if differ:
            raise UsageError(f"--resume: environment {name} now installs other code than the run measured "
                             f"({'; '.join(differ)}); start a new run")


def environments_header(envs: Mapping[str, PreparedEnv], settings: RunSettings) -> dict[str, Any]:
    """What the header says of each environment: its spec, interpreter, frameworks' versions, variables, and
    every package with where it came from (machine/packages.py)."""
    specs = {s.name: s for s in settings.envs}
    return {name: {"spec": specs[name].describe(), "python": str(e.python), "versions": e.versions,
                   "variables": e.variables, "packages": [p.to_json() for p in e.packages]}
            for name, e in envs.items()}


def new_header(settings: RunSettings, plan_size: int, run_id: str | None = None,
               envs: Mapping[str, PreparedEnv] | None = None) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "run_id": run_id or new_run_id(),
        "arraybench_version": __version__,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git": host.git_commit(),
        "settings": settings.to_dict(),
        "environment": {**host.collect(),
                        "peaks": peaks.measure(settings.threads,
                                               gpu=any(kind_of(d) == "gpu" for d in settings.devices))},
        "plan_size": plan_size,
        **({"environments": environments_header(envs, settings)} if envs else {}),
    }


def kept(results: Results) -> tuple[set[str], dict[str, list[CaseRecord]]]:
    """What an interrupted run kept: the ids of the cases it finished, and the processes it
    measured of each case it had not finished (in round order), which --resume reuses."""
    done = {r.id for r in results.records}
    partial: dict[str, list[CaseRecord]] = {}
    for _, r in sorted(results.replicate_lines, key=lambda kr: kr[0]):
        if r.id not in done:
            partial.setdefault(r.id, []).append(r)
    return done, partial


def resume_settings(out_dir: Path) -> tuple[RunSettings, set[str], dict[str, list[CaseRecord]]]:
    """The settings of the interrupted run in `out_dir`, and what it kept (`kept`); its environments read
    again from the options its header keeps (envs.spec.run_envs)."""
    previous = load_results(out_dir)
    stored = previous.settings.to_json() if previous.settings else {}
    try:
        settings = RunSettings.from_dict(stored) if stored else None
    except (TypeError, ValueError):
        settings = None
    if settings is None:
        raise UsageError(f"results file {str(previous.path)!r} holds no run settings to resume with")
    envs = run_envs(stored.get("envs"), stored.get("env_vars"))
    return dataclasses.replace(settings, envs=envs), *kept(previous)


def execute(
    settings: RunSettings | None,
    out_dir: Path,
    *,
    resume: bool = False,
    on_start: Callable[[int], Callable[[CaseRecord], None]] = lambda n: (lambda r: None),
    keeper: Keeper | None = None,
    make_runner: MakeRunner = Runner,
    run_id: str | None = None,
) -> Results:
    """Plan, run and record; return the results file's contents.

    `on_start(number of cases)` returns the per-record callback (the progress bar). On Ctrl-C
    the KeyboardInterrupt propagates after the workers are killed; every finished record is
    already on disk. With a `keeper` (a results store, which the caller names), each record is also
    kept there as it lands, and the keeper finishes at the end (or the interruption).
    `make_runner(writer, config, on_record=..., on_replicate=..., partial=...)` is Runner, or
    cluster.ClusterRunner with its target bound, which runs the cases on Dask workers: the same
    rounds (parent.Rounds), resumed, refined and extended (more_rounds.py) alike.
    `run_id` names a new run (the CLI names its output directory after it).
    After the plan, up to `settings.refine` rounds measure more sizes where the fastest
    backend·mode changes between planned sizes (refine.py), until each such crossover is bracketed;
    under `--sizes fit:BYTES`, rounds of probes find each backend·mode's largest size under the limit
    (fit.py) instead.
    """
    done: set[str] = set()
    partial: dict[str, list[CaseRecord]] = {}
    if resume:
        settings, done, partial = resume_settings(out_dir)
    if settings is None:
        raise ValueError("execute() needs settings unless it resumes")
    plan = build_plan(settings)
    todo = [c for c in plan if c.id not in done]
    envs = prepare_envs(settings)
    check_imports(settings, envs)
    if resume:
        check_same_code(load_results(out_dir).header.environments, envs)
    header = None if resume else new_header(settings, len(plan), run_id, envs)
    if keeper is not None:
        keeper.check()  # an unusable --store fails here, before the results file exists
    writer = ResultsWriter(writable_dir(out_dir) / "results.jsonl", header)
    progress = on_start(len(todo))
    on_record = progress if keeper is None else keeper.start(writer.path, progress)
    partial = {k: v for k, v in partial.items() if k in {c.id for c in todo}}
    options: RoundOptions = {"on_record": on_record, "partial": partial}
    if isinstance(progress, Progress):  # it counts each case's processes
        progress.processes = first_rounds(settings)
        progress.resumed(partial)
        options["on_replicate"] = progress.replicate
    runner = make_runner(writer, run_config(settings, out_dir, envs), **options)
    runner.processes = first_rounds(settings)
    try:
        runner.run(todo)
        if settings.fit_limit is not None:  # sizes found, not planned: no crossover or open question to settle
            find_fits(runner, plan, writer.path, progress, settings.fit_limit)
        else:
            refine_crossovers(runner, plan, writer.path, progress, settings.refine)
            measure_open_questions(runner, plan, writer, progress, settings)
    finally:
        writer.close()
        if keeper is not None:
            keeper.finish()
    # Kept after an interruption, for --resume (the CLI says how much it holds).
    shutil.rmtree(cache_dir(out_dir), ignore_errors=True)
    return load_results(out_dir)


# Every case is measured in this many rounds (or --processes, if fewer) before its questions are first
# looked at (more_rounds.py); the planned rounds up to --processes then go to the cases whose place is
# still open, and more within the budget.
FIRST_ROUNDS = 2
# What a run spends at most on more rounds than planned for the questions its first rounds leave open
# (--budget sets the seconds themselves), as a share of the first rounds' time; the planned rounds up to
# --processes are not counted in it (more_rounds.py). One environment: the cases placed after their first
# two rounds (most of them: a call 30× behind the fastest at its size is placed at once) no longer take
# the third that every case took, which pays for most of it.
# At 0.5 with the planned third round counted, `make bench` on the 2-core VM (2026-11-28) spent 99-119 s
# on that round and 74-106 s on further ones (0.19-0.25× its first rounds' 388-421 s), 0.96-1.25× the
# wall of main before issue 41 in turns. Beside a noisy neighbour at the host's worst (spells in 56-72 %
# of processes), nearly every case was open after the first rounds, the planned round took 42 of a 47-s
# budget, and 47 of 62 cases ended open at `budget`. A quarter, counted after the planned rounds, kept
# `make bench`'s further rounds where they were and gave the worst host its further rounds back, but on a
# host with slow spells in a quarter of the processes (2026-11-28), where 88 % of the cases were still
# open after two rounds and took the planned third, it spent its whole 97-104 s as well: 1.19× and 1.31×
# the wall of main before issue 41 in turns. Re-read without them, those rounds had ordered 0.7-3
# points more of the pairs 1.25× apart (86.9 → 89.9 %, 90.3 → 91.0 %) and named 4 and −1 winners more of
# 32; beside the neighbour, six runs cut at their third round met every target of
# benchmarks/noisy.py but one (a pair 2× apart left open), and all six cut at their fourth. At 0.15× the
# next two `make bench` pairs took 1.12× and 1.10×, and beside the neighbour two runs decided as much as
# two at a quarter made right after them (winners at 5, 7 and 6, 5 of 10 sizes; no pair 2× apart open).
BUDGET_SHARE = 0.15
# A run of several environments: at 4 (4.5 with the planned third round counted: 3 of the 3 planned
# rounds' time, as before the first look moved to 2 rounds), an undecided case may reach
# more_rounds.MAX_ROUNDS_FACTOR × 3 = 12 rounds, where the trimmed paired mean (stats.paired) reads a
# slow spell on either side as the spread it is. At a quarter of that the planted 5 % of
# benchmarks/planted.py ran out of budget at 4-5 rounds in 13 of 17 cases; at half, at 6-7 in all but
# the sorts, whose A/A rounds on the VM differ by 8-40 % between processes of a memory-bound add.
ENV_BUDGET_SHARE = 4.0


def further_budget(records: Iterable[CaseRecord], share: float) -> float:
    """The seconds further rounds may take by default: `share` of what the first rounds' processes took
    (`records`: their case lines), less what those processes spent sampling on through a slow spell
    (`outlasted_s`, TimerConfig.spell_wait). Both buy a case a round a spell did not cover; waiting out a
    spell buys it for 0.3-0.5 s, a further process for ~0.9 s in `make bench` on the 2-core VM, where the
    waiting took 71-83 s of a 1000 s run and, counted apart, its wall was 1.33× main's before issue 41
    in two pairs of runs in turns."""
    records = list(records)
    spent = sum(r.wall_s or 0.0 for r in records)
    waited = sum(p.outlasted_s or 0.0 for r in records for p in (r.replicates or (r,)))
    return max(0.0, share * spent - waited)


def first_rounds(settings: RunSettings) -> int:
    """The rounds every case is measured in before its questions are looked at."""
    return min(FIRST_ROUNDS, settings.timer.processes)


def measure_open_questions(runner: Runs, plan: list[Case], writer: ResultsWriter, progress: Any,
                           settings: RunSettings) -> dict[str, str]:
    """The planned rounds and more for the plan's cases left undecided (more_rounds.py), within the
    run's budget."""
    budget = settings.budget
    if budget is None:
        budget = further_budget(load_results(writer.path).latest().values(),
                                ENV_BUDGET_SHARE if settings.envs else BUDGET_SHARE)

    def grow(n: int) -> None:
        if isinstance(progress, Progress):
            progress.more(n)

    return more_rounds(runner, plan, writer.path, writer, budget, planned=settings.timer.processes, on_round=grow)


def find_fits(runner: Runs, plan: list[Case], path: Path, progress: Any, limit: int) -> None:
    """`--sizes fit:BYTES`: measure each backend·mode's next size (fit.probes), round after round, until
    every one has found its largest size under `limit` or fit.MAX_ROUNDS are done."""
    for _ in range(fit.MAX_ROUNDS):
        new = fit.probes(plan, load_results(path).records, limit)
        if not new:
            return
        if isinstance(progress, Progress):
            progress.total += len(new)
        runner.run(new)


def refine_crossovers(runner: Runs, plan: list[Case], path: Path, progress: Any, rounds: int) -> None:
    """Measure the sizes refine.proposals asks for, round after round, until none or `rounds` are done.

    The cases refinement added, in this run or before a --resume, are read back from the file with
    what was measured: every case a round runs leaves a record there.
    """
    planned = {c.id for c in plan}
    for _ in range(rounds):
        res = load_results(path)
        records = res.records
        added = [r.to_case() for r in records if r.id not in planned]
        new = refine.proposals(plan, added, records, res.reading.point)
        if not new:
            return
        if isinstance(progress, Progress):
            progress.total += len(new)
        runner.run(new)

