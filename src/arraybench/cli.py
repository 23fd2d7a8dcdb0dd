"""Command line: a thin layer over plan, runner, results and report."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arraybench import __version__, cluster, comparison, formats, store, suites, terminal
from arraybench.errors import UsageError, unknown
from arraybench.plan import default_threads
from arraybench.results import FAILED
from arraybench.run_ids import new_run_id, run_id
from arraybench.timing import TimerConfig
from arraybench.units import memory_size

EXIT_OK, EXIT_FAILED_CASES, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143, as a shell reports a process SIGTERM ended
# A run without --output-dir writes into RESULTS_ROOT/<run id>; RESULTS_ROOT/latest points at it.
RESULTS_ROOT = Path("benchmark_results")
LATEST = "latest"


class Terminated(KeyboardInterrupt):
    """SIGTERM (what batch schedulers and `kill` send), raised where Ctrl-C would be: the same
    cleanup (workers killed, finished cases kept) and the same resume hint, exit code 143."""


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line, exit 2) instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def build_parser() -> Parser:
    p = Parser(prog="arraybench", description="Honest benchmarks of array frameworks.")
    p.add_argument("--version", action="version", version=f"arraybench {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    run = sub.add_parser("run", help="measure workloads on backends")
    run.add_argument("--workloads", help="comma-separated workload names (default: every built-in "
                                         "workload, or every one --workload-file defines)")
    run.add_argument("--backends", help="comma-separated backends (default: all)")
    run.add_argument("--modes", help="eager,jit,fd (default: all)")
    run.add_argument("--sizes", help="preset names and/or values of each workload's size parameter "
                                     "(default: each workload's default presets)")
    run.add_argument("--params", help="override workload parameters, e.g. n=1000,iters=10")
    run.add_argument("--dtype", default="float32",
                     help="float32 or float64 (default %(default)s; the seeds suite sets its own)")
    run.add_argument("--threads", type=int, help=f"threads for every backend (default: the {default_threads()} "
                                                 "usable cores; with --cluster local:N, cores/N)")
    run.add_argument("--devices", default="cpu", help="cpu, gpu or cpu,gpu (default %(default)s)")
    run.add_argument("--seed", type=int, default=0, help="seed for inputs and case order (default %(default)s)")
    run.add_argument("--timeout", type=positive_float, default=600.0, help="seconds per case (default %(default)g)")
    run.add_argument("--min-time", type=positive_float, help="seconds of sampling per case (default: "
                     f"{suites.SUITE_TIMER.min_time:g} in a suite, {suites.QUICK_TIMER.min_time:g} with "
                     f"--quick, {TimerConfig().min_time:g} with --workloads)")
    run.add_argument("--max-time", type=positive_float, help="cap on sampling per case (default: "
                     f"{suites.SUITE_TIMER.max_time:g} in a suite, {suites.QUICK_TIMER.max_time:g} with "
                     f"--quick, {TimerConfig().max_time:g} with --workloads)")
    run.add_argument("--min-samples", type=positive_int, help="samples per case at least (default: "
                     f"{suites.QUICK_TIMER.min_samples} with --quick, {TimerConfig().min_samples} otherwise)")
    run.add_argument("--processes", type=positive_int,
                     help="fresh worker processes each case is measured in (default 3)")
    run.add_argument("--output-dir", help=f"where results and report go (default: {RESULTS_ROOT}/RUN_ID, "
                                          f"and {RESULTS_ROOT}/{LATEST} points at it)")
    run.add_argument("--resume", metavar="DIR", help="finish an interrupted run in DIR (or a run id in "
                                                     f"{RESULTS_ROOT}/)")
    run.add_argument("--workload-file", help="a Python file defining your own workloads")
    run.add_argument("--memory-limit", type=memory_size, help="cap each worker's memory, e.g. 2G")
    store.add_run_options(run)
    suites.add_arguments(run)
    cluster.add_run_options(run)

    lst = sub.add_parser("list", help="workloads, and backends with versions, devices or why unavailable")
    lst.add_argument("--workload-file", help="also list the workloads this Python file defines")
    formats.add_option(lst)
    env = sub.add_parser("env", help="machine, software and the settings that change results")
    formats.add_option(env)
    env.add_argument("--json", action="store_const", dest="format", const="json", help="same as --format json")
    env.add_argument("--threads", type=int, help=f"thread count to verify (default: the {default_threads()} usable cores)")

    rep = sub.add_parser("report", help="rebuild the report from results files or stored runs")
    rep.add_argument("results", nargs="+", help="results.jsonl files, directories holding one, or run ids "
                                                "(unique prefixes, latest) in the results store")
    rep.add_argument("--output-dir", help="where the report goes (default: beside the results file; "
                                          f"for a stored run, {RESULTS_ROOT}/RUN_ID)")
    rep.add_argument("--store", default=str(store.DEFAULT_PATH), metavar="PATH",
                     help="results store for run ids (default %(default)s)")
    store.add_parsers(sub)
    comparison.add_parser(sub)
    apply_config(run, project_config(Path.cwd()))
    return p


def project_config(start: Path) -> tuple[Path | None, dict[str, Any]]:
    """`[tool.arraybench]` of the nearest pyproject.toml at or above `start`, and that file.

    The nearest pyproject.toml decides, as for pytest and ruff: a project's own settings are
    never mixed with those of a directory above it.
    """
    for folder in (start, *start.parents):
        path = folder / "pyproject.toml"
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
                raise UsageError(f"cannot read {str(path)!r}: {e}") from None
            table = data.get("tool", {}).get("arraybench", {})
            if not isinstance(table, dict):
                raise UsageError(f"{path}: [tool.arraybench] must be a table")
            return path, table
    return None, {}


def apply_config(run: argparse.ArgumentParser, config: tuple[Path | None, dict[str, Any]]) -> None:
    """Make `[tool.arraybench]` keys the defaults of `arraybench run` (the command line still wins).

    Keys are run's option names (`backends = ["numpy", "jax"]`, `min-time = 0.5`); lists become
    comma-separated values, and every value is checked as the option's own value would be.
    """
    path, table = config
    if not table:
        return
    options = {a.dest: a for a in run._actions if a.option_strings and a.dest != "help"}
    defaults: dict[str, Any] = {}
    for key, value in table.items():
        dest = key.replace("-", "_")
        action = options.get(dest)
        if action is None or dest == "resume":
            raise unknown(f"key in {path} [tool.arraybench]", key,
                          [d.replace("_", "-") for d in options if d != "resume"])
        if isinstance(value, bool) != (action.nargs == 0):
            raise UsageError(f"{path} [tool.arraybench]: {key} = {value!r} must be "
                             + ("true or false" if action.nargs == 0 else "a value, not true or false"))
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        # A string default goes through the option's type (argparse does that), so it is checked.
        defaults[dest] = value if isinstance(value, bool) else str(value)
        action.help = f"{action.help}; here {value} from {path}"
    run.set_defaults(**defaults)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as e:
        if debug:
            raise
        print(f"arraybench: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Terminated:
        print("\narraybench: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("\narraybench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


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


def settings_from_args(args: argparse.Namespace) -> Any:
    from arraybench.plan import RunSettings, parse_list, parse_params
    from arraybench.timing import TimerConfig

    timer = TimerConfig()
    overrides = {"min_time": args.min_time, "max_time": args.max_time, "min_samples": args.min_samples,
                 "processes": args.processes}
    timer = TimerConfig(**{**timer.__dict__, **{k: v for k, v in overrides.items() if v is not None}})
    settings = RunSettings(timer=timer, seed=args.seed, timeout=args.timeout, dtype=args.dtype)
    settings.workloads = parse_list(args.workloads) or settings.workloads
    settings.backends = parse_list(args.backends) or settings.backends
    settings.modes = parse_list(args.modes) or settings.modes
    settings.sizes = parse_list(args.sizes)
    settings.params = parse_params(args.params)
    settings.devices = parse_list(args.devices) or settings.devices
    settings.workload_file = str(Path(args.workload_file).resolve()) if args.workload_file else None
    if settings.workload_file and not args.workloads:
        from arraybench.userfile import load_workload_file

        settings.workloads = list(load_workload_file(settings.workload_file))
    threads = args.threads if args.threads is not None else cluster.local_threads(args.cluster)
    if threads is not None:
        settings.threads = threads
    settings.memory_limit = args.memory_limit
    settings.suite, settings.timer = suites.chosen_suite(args, settings.timer)
    return settings


def cmd_run(args: argparse.Namespace) -> int:
    from arraybench import session
    from arraybench.report import publish

    if args.resume:
        args.resume = str(resume_dir(args.resume))
        check_resume_args(args)
    rid = None if args.resume else new_run_id()
    out_dir = Path(args.resume or args.output_dir or RESULTS_ROOT / str(rid))
    settings = None if args.resume else settings_from_args(args)
    store_path = store.store_path(args)

    try:
        with sigterm_as_interrupt(), terminal.progress_display() as show_progress:

            def on_start(n: int) -> Any:
                print(f"arraybench {__version__}: {n} cases -> {out_dir / 'results.jsonl'}", file=sys.stderr)
                if not args.resume and args.output_dir is None:
                    point_latest(out_dir)
                return show_progress(n)

            results = session.execute(settings, out_dir, resume=bool(args.resume), on_start=on_start,
                                      store=store_path, make_runner=cluster.runner_from_args(args),
                                      run_id=rid)
    except KeyboardInterrupt as e:
        from arraybench.results import load_results

        kept = len(load_results(out_dir).records) if (out_dir / "results.jsonl").exists() else 0
        what = "terminated" if isinstance(e, Terminated) else "interrupted"
        print(f"\narraybench: {what}; {kept} finished cases kept in {out_dir / 'results.jsonl'}\n"
              f"resume with: arraybench run --resume {out_dir}", file=sys.stderr)
        return EXIT_TERMINATED if isinstance(e, Terminated) else EXIT_INTERRUPTED
    records = list(results.latest().values())
    publish([results], out_dir, terminal.table_renderer(sys.stdout))
    if store_path is not None:
        print(f"stored as run {run_id(results.header)} in {store_path}", file=sys.stderr)
    failed = [r for r in records if r["status"] in FAILED]
    if failed:
        print(f"\n{len(failed)} case(s) failed (wrong, error, timeout or crashed); see the notes above",
              file=sys.stderr)
        return EXIT_FAILED_CASES
    return EXIT_OK


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


def check_resume_args(args: argparse.Namespace) -> None:
    """--resume runs with the settings stored in DIR: another option would mix two runs in one file."""
    if Path(args.resume).is_file():
        raise UsageError(f"--resume takes the run's output directory, not a file: {args.resume!r}")
    if not (Path(args.resume) / "results.jsonl").exists():
        raise UsageError(f"nothing to resume in {args.resume!r}: it holds no results.jsonl")
    defaults = vars(build_parser().parse_args(["run"]))
    # Where the cases run (--cluster, --on) is not a setting of what they measure.
    given = [k for k, v in vars(args).items()
             if k not in ("resume", "debug", "cluster", "on") and v != defaults[k]]
    if given:
        option = "--" + given[0].replace("_", "-")
        raise UsageError(f"--resume {args.resume} runs with the settings stored there; drop {option}")


def workload_rows(workload_file: str | None) -> list[dict[str, Any]]:
    """Every workload (built-in, and `workload_file`'s): its presets and what runs it where."""
    from arraybench.backends import BACKENDS
    from arraybench.workloads import WORKLOADS

    workloads = dict(WORKLOADS)
    if workload_file:
        from arraybench.userfile import load_workload_file

        workloads.update(load_workload_file(workload_file))
    rows = []
    for wl in workloads.values():
        backends = {}
        for b in BACKENDS:
            modes = [m for (bb, m) in wl.impls if bb == b]
            why = {m: r for (bb, m), r in wl.unsupported.items() if bb == b}
            if modes or why:
                backends[b] = {"modes": modes, "unsupported": why}
        rows.append({"workload": wl.name, "description": wl.description, "size_param": wl.size_param,
                     "presets": list(wl.presets), "backends": backends})
    return rows


def backend_rows() -> list[dict[str, Any]]:
    """Every backend: version, and its devices where it runs or the reason (and fix) where not."""
    from arraybench.backends import BACKENDS
    from arraybench.probe import probe

    rows = []
    for name, status in probe().items():
        cls = BACKENDS[name]
        info = status["info"]
        rows.append({"backend": name, "version": info.get("version") or cls.version(),
                     "available": status["available"],
                     "devices": (info.get("devices") or ["cpu"]) if status["available"] else [],
                     "jit": cls.jit_name, "reason": status["reason"] or None})
    return rows


def cmd_list(args: argparse.Namespace) -> int:
    workloads, backends = workload_rows(args.workload_file), backend_rows()
    if args.format == "json":
        print(formats.json_text({"workloads": workloads, "backends": backends}), end="")
    elif args.format == "csv":
        # One flat table for tools: a row per workload and backend that has something to say.
        by_name = {b["backend"]: b for b in backends}
        rows = [{"workload": w["workload"], "size_param": w["size_param"], "presets": ",".join(w["presets"]),
                 "backend": b, "version": by_name[b]["version"], "available": by_name[b]["available"],
                 "modes": ",".join(s["modes"]), "unsupported": "; ".join(f"{m}: {r}" for m, r in s["unsupported"].items())}
                for w in workloads for b, s in w["backends"].items()]
        print(formats.render_rows(rows, "csv"), end="")
    elif args.format == "markdown":
        wl_rows = [{"workload": w["workload"], "description": w["description"], "size parameter": w["size_param"],
                    "presets": ", ".join(w["presets"]),
                    "backends": "; ".join(f"{b}: {', '.join(s['modes']) or '—'}" for b, s in w["backends"].items())}
                   for w in workloads]
        be_rows = [{"backend": b["backend"], "version": b["version"] or "not installed",
                    "status": f"available on {', '.join(b['devices'])}" if b["available"] else f"unavailable: {b['reason']}",
                    "JIT": b["jit"] or "—"} for b in backends]
        print("## Workloads\n\n" + formats.render_rows(wl_rows, "markdown")
              + "\n## Backends\n\n" + formats.render_rows(be_rows, "markdown"), end="")
    else:
        print_list(workloads, backends)
    return EXIT_OK


def print_list(workloads: list[dict[str, Any]], backends: list[dict[str, Any]]) -> None:
    print("Workloads")
    for w in workloads:
        print(f"  {w['workload']:<18} {w['description']}")
        print(f"  {'':<18} size parameter {w['size_param']!r}; presets: {', '.join(w['presets'])}")
        for b, s in w["backends"].items():
            why = [f"{m}: {r}" for m, r in s["unsupported"].items()]
            print(f"  {'':<18}   {b:<11} {', '.join(s['modes']) or '—'}" + (f"  ({'; '.join(why)})" if why else ""))
    print("\nBackends")
    for b in backends:
        version = b["version"] or "not installed"
        if b["available"]:
            print(f"  {b['backend']:<11} {version:<14} available; devices: {', '.join(b['devices'])}; "
                  f"JIT: {b['jit'] or '—'}")
        else:
            print(f"  {b['backend']:<11} {version:<14} unavailable: {b['reason']}")


def cmd_env(args: argparse.Namespace) -> int:
    from arraybench import environment
    from arraybench.probe import probe

    threads = args.threads or default_threads()
    env = environment.collect()
    env["backends"] = probe(threads=threads)
    if args.format == "json":
        print(formats.json_text(env), end="")
    elif args.format in ("csv", "markdown"):
        rows = [{"key": k, "value": v} for k, v in comparison.flatten(env).items()]
        print(formats.render_rows(rows, args.format), end="")
    else:
        print_env(env, threads)
    return EXIT_OK


def print_env(env: dict[str, Any], threads: int) -> None:
    from arraybench import environment

    freq = env["cpu_frequency"]
    print(f"machine   {environment.fingerprint(env)}")
    print(f"cpu       {env['cpu_model']}; {env['cpu_logical']} logical, {env['cpu_physical']} physical, "
          f"{env['cpu_affinity']} usable")
    print(f"clock     {freq['current_mhz'] or '?'} MHz now (min {freq['min_mhz'] or '?'}, max {freq['max_mhz'] or '?'}); "
          f"governor {freq['governor'] or 'unknown'}")
    print(f"simd      {' '.join(env['cpu_flags']) or 'none known'}")
    print(f"memory    {env['memory_bytes'] / 2**30:.1f} GiB")
    print(f"os        {env['os']}; Python {env['python']}")
    for g in env["gpus"]:
        print(f"gpu       {g['name']} {g['memory']} driver {g['driver']}")
    for k, v in env["env"].items():
        print(f"env       {k}={v}")
    print(f"\nbackends at --threads {threads}:")
    for name, st in env["backends"].items():
        info = st["info"]
        if not st["available"]:
            print(f"  {name:<11} unavailable: {st['reason']}")
            continue
        extras = {k: v for k, v in info.items() if k in ("x64", "tf32", "matmul_precision", "float32_matmul_precision", "synchronous_execution", "threading_layer")}
        blas = "; ".join(f"{b['internal_api']} {b['version']} {b['num_threads']} threads" for b in info.get("blas", []))
        print(f"  {name:<11} {info.get('version')}: threads verified {info.get('threads_verified')}"
              + (f"; {extras}" if extras else "") + (f"; BLAS: {blas}" if blas else ""))


def report_dir(refs: list[str], loaded: list[Any], given: str | None) -> Path:
    """Where `report` writes: --output-dir; else beside its results file(s); for a stored run,
    RESULTS_ROOT/RUN_ID, where `arraybench run` would have put it."""
    if given is not None:
        return Path(given)
    dirs = {res.path.parent if res.path is not None else RESULTS_ROOT / run_id(res.header)
            for res in loaded}
    if len(dirs) > 1:
        raise UsageError(f"{', '.join(refs)} are in {len(dirs)} places; say where the report goes with --output-dir")
    return dirs.pop()


def cmd_report(args: argparse.Namespace) -> int:
    from arraybench.report import publish

    loaded = [store.load(ref, args.store) for ref in args.results]
    for res in loaded:
        for w in res.warnings:
            print(f"arraybench: warning: {w}", file=sys.stderr)
    publish(loaded, report_dir(args.results, loaded, args.output_dir), terminal.table_renderer(sys.stdout))
    return EXIT_OK


COMMANDS = {"run": cmd_run, "list": cmd_list, "env": cmd_env, "report": cmd_report,
            **store.COMMANDS, **comparison.COMMANDS}
