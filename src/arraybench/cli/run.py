"""`arraybench run`: its options, the settings they make, and the run from first case to report."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import Any

from arraybench import __version__
from arraybench.cli.arguments import Parser, add_option
from arraybench.cli.config import apply_config, project_config
from arraybench.cli.exits import (
    EXIT_FAILED_CASES,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    Terminated,
    interrupts_kept,
)
from arraybench.cli.store import STORE_ENV, apply_store_environment
from arraybench.envs.spec import run_envs
from arraybench.errors import UsageError
from arraybench.execution import session
from arraybench.execution.cluster import ClusterRunner, ClusterTarget, local_threads
from arraybench.execution.parent import MakeRunner, Runner
from arraybench.measure.casecache import usage
from arraybench.output import terminal
from arraybench.planning.options import RUN_OPTIONS
from arraybench.planning.settings import RunSettings, default_threads, run_settings
from arraybench.report import publish
from arraybench.results import load_results
from arraybench.results.record import FAILED
from arraybench.results.run_ids import new_run_id
from arraybench.store import DEFAULT_PATH, StoredRun
from arraybench.store.keeping import StoreKeeper
from arraybench.units import format_size

# A run without --output-dir writes into RESULTS_ROOT/<run id>; RESULTS_ROOT/latest points at it.
RESULTS_ROOT = Path("benchmark_results")
LATEST = "latest"


def add_arguments(run: argparse.ArgumentParser) -> None:
    """Every option of `arraybench run`; `[tool.arraybench]` may set any but --resume.

    The run's options (planning/options.RUN_OPTIONS), and the command line's own beside them: where the
    run's files go, the store it is added to, --quick, and where its cases run (--cluster, --on), each
    where --help has always listed it."""
    for option in RUN_OPTIONS:
        if option.name == "workload_file":
            add_output_arguments(run)
        elif option.name == "suite":
            add_store_arguments(run)
        add_option(run, option)
    run.add_argument("--cluster", metavar="ADDRESS",
                     help="run the cases on Dask workers: tcp://HOST:8786, or local:N for N local workers")
    run.add_argument("--on", metavar="WORKERS",
                     help="with --cluster: only these Dask workers (names, hosts or addresses, comma-separated)")


def add_output_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument("--output-dir", help=f"where results and report go (default: {RESULTS_ROOT}/RUN_ID, "
                                          f"and {RESULTS_ROOT}/{LATEST} points at it)")
    run.add_argument("--resume", metavar="DIR", help="finish an interrupted run in DIR (or a run id in "
                                                     f"{RESULTS_ROOT}/)")


def add_store_arguments(run: argparse.ArgumentParser) -> None:
    store = run.add_mutually_exclusive_group()
    store.add_argument("--store", metavar="PATH_OR_URL",
                       help=f"results store to add this run to: a SQLite file or a postgresql:// URL (default "
                            f"{DEFAULT_PATH}, or ${STORE_ENV})")
    store.add_argument("--no-store", action="store_true", help="do not add this run to a results store")
    run.add_argument("--quick", action="store_true",
                     help="every workload's small preset with short sampling (a smoke test of the machine)")


def add_parser(sub: Any) -> None:
    run = sub.add_parser("run", help="measure workloads on backends")
    add_arguments(run)
    apply_config(run, project_config(Path.cwd()))
    apply_store_environment(run)


def settings_from_args(args: argparse.Namespace) -> RunSettings:
    """The run's settings from its options, through the one builder the Python API uses too; its
    environments read once, here (envs.spec.run_envs)."""
    given = {option.name: option.from_text(getattr(args, option.name)) for option in RUN_OPTIONS}
    if args.threads is None:
        given["threads"] = local_threads(args.cluster)
    if args.quick and args.suite not in (None, "quick"):
        raise UsageError(f"--quick and --suite {args.suite} are two suites; choose one")
    if args.quick:
        given["suite"] = "quick"
    envs = run_envs(given.pop("envs"), given.pop("env_vars"))
    return run_settings(**given, envs=envs)


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
    keeper = None if store is None else StoreKeeper(store, stored.append)

    try:
        with interrupts_kept(), terminal.progress_display() as show_progress:

            def on_start(n: int) -> Any:
                print(f"arraybench {__version__}: {n} cases -> {out_dir / 'results.jsonl'}", file=sys.stderr)
                if not args.resume and args.output_dir is None:
                    point_latest(out_dir)
                return show_progress(n)

            results = session.execute(settings, out_dir, resume=bool(args.resume), on_start=on_start,
                                      keeper=keeper, make_runner=runner_from_args(args), run_id=rid)
    except KeyboardInterrupt as e:
        what = "terminated" if isinstance(e, Terminated) else "interrupted"
        left = usage(session.cache_dir(out_dir))
        cache = (f"; {format_size(left)} of inputs, references and compiled code left in "
                 f"{session.cache_dir(out_dir)} for it (delete it to free the space)") if left else ""
        print(f"\narraybench: {what}; {kept_work(out_dir)} kept in {out_dir / 'results.jsonl'}\n"
              f"resume with: arraybench run --resume {out_dir}{cache}", file=sys.stderr)
        for note in getattr(e, "__notes__", ()):  # what a worker was doing (parent.WorkerPool.in_flight)
            print(f"arraybench: {note}", file=sys.stderr)
        for s in stored:
            if not s.complete:  # resuming stores the rest too
                print(f"arraybench: {s}", file=sys.stderr)
        return EXIT_TERMINATED if isinstance(e, Terminated) else EXIT_INTERRUPTED
    records = list(results.latest().values())
    publish([results], out_dir, terminal.table_renderer(sys.stdout))
    for s in stored:
        print(s if s.complete else f"arraybench: warning: {s}", file=sys.stderr)
    failed = [r for r in records if r.status in FAILED]
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
