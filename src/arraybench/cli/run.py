"""`arraybench run`: its options, the settings they make, and the run from first case to report."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import Any

from arraybench import __version__
from arraybench.cli.config import apply_config, project_config
from arraybench.cli.exits import (
    EXIT_FAILED_CASES,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    Terminated,
    sigterm_as_interrupt,
)
from arraybench.cli.options import Parser, memory_size, positive_float, positive_int
from arraybench.cli.store import STORE_ENV, apply_store_environment
from arraybench.errors import UsageError
from arraybench.execution import session
from arraybench.execution.cluster import ClusterRunner, ClusterTarget, local_threads
from arraybench.execution.parent import MakeRunner, Runner
from arraybench.measure.casecache import usage
from arraybench.output import terminal
from arraybench.planning.refine import ROUNDS as REFINE_ROUNDS
from arraybench.planning.settings import (
    RunSettings,
    default_threads,
    parse_list,
    parse_params,
    run_settings,
    sampling,
)
from arraybench.planning.suites import SUITES
from arraybench.report import publish
from arraybench.results import load_results
from arraybench.results.record import FAILED
from arraybench.results.run_ids import new_run_id
from arraybench.store import DEFAULT_PATH, StoredRun
from arraybench.units import format_size

# A run without --output-dir writes into RESULTS_ROOT/<run id>; RESULTS_ROOT/latest points at it.
RESULTS_ROOT = Path("benchmark_results")
LATEST = "latest"


def sampling_default(name: str, unit: str = "") -> str:
    """The default of the timer option `name` in each kind of run, read from `settings.sampling`
    (what a run really uses), so the help cannot drift from the code."""
    plain, quick, chosen = (getattr(sampling(suite, default, {}), name)
                            for suite, default in ((None, True), ("quick", False), (None, False)))
    if plain == chosen:
        return f"default {quick:g}{unit} with --quick, {plain:g}{unit} otherwise"
    return (f"default {plain:g}{unit} in a plain run or a suite, {quick:g}{unit} with --quick, "
            f"{chosen:g}{unit} with --workloads or --workload-file")


# Each option's default is RunSettings' own: the help shows it, run_settings applies it to a None.
DEFAULTS = RunSettings()


def add_arguments(run: argparse.ArgumentParser) -> None:
    """Every option of `arraybench run`; `[tool.arraybench]` may set any but --resume."""
    run.add_argument("--workloads", help="comma-separated workload names (default: every built-in "
                                         "workload, or every one --workload-file defines)")
    run.add_argument("--backends", help="comma-separated backends (default: all)")
    run.add_argument("--modes", help="eager,jit,fd (default: all)")
    run.add_argument("--sizes", help="preset names and/or values of each workload's size parameter "
                                     "(default: each workload's default presets); or fit:BYTES (e.g. fit:16G): "
                                     "find each backend·mode's largest size whose memory fits (docs/memory.md)")
    run.add_argument("--params", help="override workload parameters, e.g. n=1000,iters=10")
    run.add_argument("--dtype", help=f"float32 or float64 (default {DEFAULTS.dtype}; the seeds suite sets its own)")
    run.add_argument("--threads", type=int, help=f"threads for every backend (default: the {default_threads()} "
                                                 "usable cores; with --cluster local:N, cores/N)")
    run.add_argument("--devices",
                     help="comma-separated devices, each KIND (one device), KIND:N (the first N), KIND:all or "
                          "KIND:I,J,... (those ids); KIND is the framework's name: cpu, gpu (or cuda), tpu, ... "
                          "e.g. cpu,cpu:2,cpu:4 measures the multi-device workloads' scaling over 1, 2 and 4 "
                          f"forced host devices (docs/multi-device.md; default {','.join(DEFAULTS.devices)})")
    run.add_argument("--seed", type=int, help=f"seed for inputs and case order (default {DEFAULTS.seed})")
    run.add_argument("--timeout", type=positive_float, help=f"seconds per case (default {DEFAULTS.timeout:g})")
    run.add_argument("--min-time", type=positive_float, help="seconds of sampling in each process of a case "
                                                             f"({sampling_default('min_time', ' s')})")
    run.add_argument("--max-time", type=positive_float, help="cap on sampling in each process of a case "
                                                             f"({sampling_default('max_time', ' s')})")
    run.add_argument("--min-samples", type=positive_int, help="samples in each process of a case at least "
                                                              f"({sampling_default('min_samples')})")
    run.add_argument("--processes", type=positive_int, help="fresh worker processes each case is measured in "
                                                            f"({sampling_default('processes')}); a case placed by "
                                                            "its first two (far behind the fastest at its size) "
                                                            "stops there, an open one goes on within --budget")
    run.add_argument("--refine", type=int, metavar="ROUNDS",
                     help="rounds of measuring more sizes where the fastest backend·mode changes between "
                          f"planned sizes, until each such crossover is bracketed ≤2× (default {REFINE_ROUNDS}; "
                          "0: none)")
    run.add_argument("--output-dir", help=f"where results and report go (default: {RESULTS_ROOT}/RUN_ID, "
                                          f"and {RESULTS_ROOT}/{LATEST} points at it)")
    run.add_argument("--resume", metavar="DIR", help="finish an interrupted run in DIR (or a run id in "
                                                     f"{RESULTS_ROOT}/)")
    run.add_argument("--workload-file", help="a Python file defining your own workloads")
    run.add_argument("--memory-limit", type=memory_size, help="cap each worker's memory, e.g. 2G")
    run.add_argument("--full-check", action="store_true",
                     help="check every output element against the float64 reference, even where a cheaper "
                          "check applies (matmul from n = 512: Freivalds' test, O(n²) instead of O(n³))")
    run.add_argument("--fixed-layout", action="store_true",
                     help="one memory layout for every process: no random input offsets or heap and environment "
                          "pads (the intervals then leave out what layout moves; the report says so)")
    run.add_argument("--env", action="append", metavar="NAME:SPEC", dest="envs",
                     help="measure the plan in this Python environment too, interleaved with the others in "
                          "the same rounds (repeat it): NAME:REQUIREMENTS built with uv and cached (old:jax==0.9.2, "
                          "np23:'numpy==2.3.5 numba'), NAME:@PYTHON an interpreter, NAME: this one; then "
                          "`compare RUN@OLD RUN@NEW` (docs/environments.md)")
    run.add_argument("--env-var", action="append", metavar="NAME:VAR=VALUE", dest="env_vars",
                     help="set VAR for environment NAME's workers only (repeat it)")
    run.add_argument("--budget", type=float, metavar="SECONDS",
                     help="seconds of rounds beyond --processes for the cases still undecided (which "
                          "backend·mode is fastest at a size, or between --env environments); default: 0.6 times "
                          "the first two rounds' time, 4.5 times with several --env")
    run.add_argument("--cache-limit", type=memory_size,
                     help="bytes the run's shared inputs and references may hold on disk, in the run's cache/ "
                          "until it completes (default 2G)")
    store = run.add_mutually_exclusive_group()
    store.add_argument("--store", metavar="PATH_OR_URL",
                       help=f"results store to add this run to: a SQLite file or a postgresql:// URL (default "
                            f"{DEFAULT_PATH}, or ${STORE_ENV})")
    store.add_argument("--no-store", action="store_true", help="do not add this run to a results store")
    run.add_argument("--quick", action="store_true",
                     help="every workload's small preset with short sampling (a smoke test of the machine)")
    run.add_argument("--suite", "--preset", dest="suite", choices=sorted(SUITES), metavar="SUITE",
                     help="a named suite: 'seeds' is every configuration of the four source documents, "
                          "'quick' the same as --quick, 'vmap' the loop, vmap and hand-batched forms of the "
                          "vmap families over their batch sweep (--preset is the old name)")
    run.add_argument("--cluster", metavar="ADDRESS",
                     help="run the cases on Dask workers: tcp://HOST:8786, or local:N for N local workers")
    run.add_argument("--on", metavar="WORKERS",
                     help="with --cluster: only these Dask workers (names, hosts or addresses, comma-separated)")


def add_parser(sub: Any) -> None:
    run = sub.add_parser("run", help="measure workloads on backends")
    add_arguments(run)
    apply_config(run, project_config(Path.cwd()))
    apply_store_environment(run)


def settings_from_args(args: argparse.Namespace) -> RunSettings:
    """The run's settings from its options, through the one builder the Python API uses too."""
    params = parse_params(args.params)
    threads = args.threads if args.threads is not None else local_threads(args.cluster)
    if args.quick and args.suite not in (None, "quick"):
        raise UsageError(f"--quick and --suite {args.suite} are two suites; choose one")
    return run_settings(
        workloads=parse_list(args.workloads),
        backends=parse_list(args.backends),
        modes=parse_list(args.modes),
        sizes=parse_list(args.sizes),
        params=params,
        dtype=args.dtype,
        threads=threads,
        devices=parse_list(args.devices),
        seed=args.seed,
        timeout=args.timeout,
        min_time=args.min_time,
        max_time=args.max_time,
        min_samples=args.min_samples,
        processes=args.processes,
        workload_file=args.workload_file,
        memory_limit=args.memory_limit,
        suite="quick" if args.quick else args.suite,
        refine=args.refine,
        full_check=args.full_check,
        cache_limit=args.cache_limit,
        fixed_layout=args.fixed_layout,
        envs=args.envs,
        env_vars=args.env_vars,
        budget=args.budget,
    )


def runner_from_args(args: argparse.Namespace) -> MakeRunner:
    """Runner for a local run; ClusterRunner, built the same way, for `--cluster`."""
    if args.on and not args.cluster:
        raise UsageError("--on needs --cluster")
    if not args.cluster:
        return Runner
    target = ClusterTarget.parse(args.cluster, args.on)
    # Refuse what cannot run before the results file exists, so the fixed command can reuse it.
    if not args.resume:
        target.cpu_slices(args.threads or local_threads(args.cluster) or default_threads())
    if target.address is not None:
        with target.client() as client:
            target.workers(client)
    return functools.partial(ClusterRunner, target)


def store_path(args: argparse.Namespace) -> str | Path | None:
    """The store `arraybench run` writes into (a SQLite file or a database URL), or None under --no-store."""
    return None if args.no_store else (args.store or DEFAULT_PATH)


def cmd_run(args: argparse.Namespace) -> int:
    if args.resume:
        args.resume = str(resume_dir(args.resume))
        check_resume_args(args)
    rid = None if args.resume else new_run_id()
    out_dir = Path(args.resume or args.output_dir or RESULTS_ROOT / str(rid))
    settings = None if args.resume else settings_from_args(args)
    store = store_path(args)
    stored: list[StoredRun] = []  # how much of the run its store holds, told at the run's end

    try:
        with sigterm_as_interrupt(), terminal.progress_display() as show_progress:

            def on_start(n: int) -> Any:
                print(f"arraybench {__version__}: {n} cases -> {out_dir / 'results.jsonl'}", file=sys.stderr)
                if not args.resume and args.output_dir is None:
                    point_latest(out_dir)
                return show_progress(n)

            results = session.execute(settings, out_dir, resume=bool(args.resume), on_start=on_start,
                                      store=store, make_runner=runner_from_args(args), run_id=rid,
                                      on_stored=stored.append)
    except KeyboardInterrupt as e:
        what = "terminated" if isinstance(e, Terminated) else "interrupted"
        left = usage(session.cache_dir(out_dir))
        cache = (f"; {format_size(left)} of inputs, references and compiled code left in "
                 f"{session.cache_dir(out_dir)} for it (delete it to free the space)") if left else ""
        print(f"\narraybench: {what}; {kept_work(out_dir)} kept in {out_dir / 'results.jsonl'}\n"
              f"resume with: arraybench run --resume {out_dir}{cache}", file=sys.stderr)
        for s in stored:
            if not s.complete:  # resuming stores the rest too
                print(f"arraybench: {s}", file=sys.stderr)
        return EXIT_TERMINATED if isinstance(e, Terminated) else EXIT_INTERRUPTED
    records = list(results.latest().values())
    publish([results], out_dir, terminal.table_renderer(sys.stdout))
    for s in stored:
        print(s if s.complete else f"arraybench: warning: {s}", file=sys.stderr)
    failed = [r for r in records if r["status"] in FAILED]
    if failed:
        print(f"\n{len(failed)} case(s) failed (wrong, error, timeout or crashed); see the notes above",
              file=sys.stderr)
        return EXIT_FAILED_CASES
    return EXIT_OK


def kept_work(out_dir: Path) -> str:
    """What an interrupted run in `out_dir` kept for --resume: its finished cases, and the processes
    it measured of unfinished ones (which --resume does not measure again)."""
    if not (out_dir / "results.jsonl").exists():
        return "0 finished cases"
    done, partial = session.kept(load_results(out_dir))
    processes = sum(len(recs) for recs in partial.values())
    of_unfinished = f" and {processes} process(es) of {len(partial)} unfinished case(s)" if partial else ""
    return f"{len(done)} finished cases{of_unfinished}"


def point_latest(out_dir: Path) -> None:
    """RESULTS_ROOT/latest -> out_dir, replaced in one step (a reader never finds it missing)."""
    link = RESULTS_ROOT / LATEST
    tmp = RESULTS_ROOT / f".{LATEST}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(out_dir.name)
    os.replace(tmp, link)


def resume_dir(ref: str) -> Path:
    """--resume's directory: as given, or a run id (or `latest`) under RESULTS_ROOT."""
    path = Path(ref)
    under = RESULTS_ROOT / ref
    if path.exists() or os.sep in ref or not under.exists():
        return path
    return RESULTS_ROOT / os.readlink(under) if under.is_symlink() else under


def option_defaults() -> dict[str, Any]:
    """What each run option is when not given: argparse's default, or the project's `[tool.arraybench]`."""
    run = Parser(prog="arraybench run")
    add_arguments(run)
    apply_config(run, project_config(Path.cwd()))
    apply_store_environment(run)
    return vars(run.parse_args([]))


def check_resume_args(args: argparse.Namespace) -> None:
    """--resume runs with the settings stored in DIR: another option would mix two runs in one file."""
    if Path(args.resume).is_file():
        raise UsageError(f"--resume takes the run's output directory, not a file: {args.resume!r}")
    if not (Path(args.resume) / "results.jsonl").exists():
        raise UsageError(f"nothing to resume in {args.resume!r}: it holds no results.jsonl")
    # Where the cases run (--cluster, --on) is not a setting of what they measure.
    given = [k for k, v in option_defaults().items()
             if k not in ("resume", "cluster", "on") and getattr(args, k) != v]
    if given:
        option = "--" + given[0].replace("_", "-")
        raise UsageError(f"--resume {args.resume} runs with the settings stored there; drop {option}")


COMMANDS = {"run": cmd_run}
