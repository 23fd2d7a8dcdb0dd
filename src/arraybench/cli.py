"""Command line: a thin layer over plan, runner, results and report."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from arraybench import __version__, cluster, compare, store, suites
from arraybench.errors import UsageError
from arraybench.limits import memory_size
from arraybench.results import FAILED

EXIT_OK, EXIT_FAILED_CASES, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


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
    run.add_argument("--workloads", help="comma-separated workload names (default: all of them)")
    run.add_argument("--backends", help="comma-separated backends (default: all)")
    run.add_argument("--modes", help="eager,jit,fd (default: all)")
    run.add_argument("--sizes", help="preset names and/or values of each workload's size parameter")
    run.add_argument("--params", help="override workload parameters, e.g. n=1000,iters=10")
    run.add_argument("--dtype", default="float32", help="float32 or float64 (default float32)")
    run.add_argument("--threads", type=int, help="threads for every backend (default: all cores)")
    run.add_argument("--devices", default="cpu", help="cpu, gpu or cpu,gpu (default cpu)")
    run.add_argument("--seed", type=int, default=0, help="seed for inputs and case order")
    run.add_argument("--timeout", type=positive_float, default=600.0, help="seconds per case")
    run.add_argument("--min-time", type=positive_float, help="seconds of sampling per case at least (default 0.2)")
    run.add_argument("--max-time", type=positive_float, help="cap on sampling per case and process (default 1)")
    run.add_argument("--min-samples", type=positive_int, help="samples per case at least (default 10)")
    run.add_argument("--processes", type=positive_int,
                     help="fresh worker processes each case is measured in (default 3)")
    run.add_argument("--output-dir", default="benchmark_results", help="where results and report go")
    run.add_argument("--resume", metavar="DIR", help="finish an interrupted run in DIR")
    run.add_argument("--workload-file", help="a Python file defining your own workloads")
    run.add_argument("--memory-limit", type=memory_size, help="cap each worker's memory, e.g. 2G")
    store.add_run_options(run)
    suites.add_arguments(run)
    cluster.add_run_options(run)

    lst = sub.add_parser("list", help="workloads, and backends with versions, devices or why unavailable")
    lst.add_argument("--workload-file", help="also list the workloads this Python file defines")
    env = sub.add_parser("env", help="machine, software and the settings that change results")
    env.add_argument("--json", action="store_true")
    env.add_argument("--threads", type=int, help="thread count to verify (default: all cores)")

    rep = sub.add_parser("report", help="rebuild the report from results files")
    rep.add_argument("results", nargs="+", help="results.jsonl files (or directories holding one)")
    rep.add_argument("--output-dir", default="benchmark_results")
    store.add_parsers(sub)
    compare.add_parser(sub)
    return p


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
    except KeyboardInterrupt:
        print("\narraybench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


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
    if args.threads is not None:
        settings.threads = args.threads
    settings.memory_limit = args.memory_limit
    suites.apply_arguments(args, settings)
    return settings


def cmd_run(args: argparse.Namespace) -> int:
    from arraybench import session
    from arraybench.report import publish
    from arraybench.runner import Progress

    if args.resume:
        check_resume_args(args)
    out_dir = Path(args.resume or args.output_dir)
    settings = None if args.resume else settings_from_args(args)
    store_path = store.store_path(args)

    def on_start(n: int) -> Any:
        print(f"arraybench {__version__}: {n} cases -> {out_dir / 'results.jsonl'}", file=sys.stderr)
        return Progress(n)

    try:
        results = session.execute(settings, out_dir, resume=bool(args.resume), on_start=on_start,
                                  store=store_path, make_runner=cluster.runner_from_args(args))
    except KeyboardInterrupt:
        from arraybench.results import load_results

        kept = len(load_results(out_dir).records) if (out_dir / "results.jsonl").exists() else 0
        print(f"\narraybench: interrupted; {kept} finished cases kept in {out_dir / 'results.jsonl'}\n"
              f"resume with: arraybench run --resume {out_dir}", file=sys.stderr)
        return EXIT_INTERRUPTED
    records = list(results.latest().values())
    publish([results], out_dir)
    if store_path is not None:
        print(f"stored as run {store.run_id(results.header)} in {store_path}", file=sys.stderr)
    failed = [r for r in records if r["status"] in FAILED]
    if failed:
        print(f"\n{len(failed)} case(s) failed (wrong, error, timeout or crashed); see the notes above",
              file=sys.stderr)
        return EXIT_FAILED_CASES
    return EXIT_OK


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


def cmd_list(args: argparse.Namespace) -> int:
    from arraybench.backends import BACKENDS
    from arraybench.probe import probe
    from arraybench.workloads import WORKLOADS

    workloads = dict(WORKLOADS)
    if args.workload_file:
        from arraybench.userfile import load_workload_file

        workloads.update(load_workload_file(args.workload_file))
    print("Workloads")
    for wl in workloads.values():
        presets = ", ".join(f"{k}" for k in wl.presets)
        print(f"  {wl.name:<18} {wl.description}")
        print(f"  {'':<18} size parameter {wl.size_param!r}; presets: {presets}")
        for b in BACKENDS:
            modes = [m for (bb, m) in wl.impls if bb == b]
            why = [f"{m}: {r}" for (bb, m), r in wl.unsupported.items() if bb == b]
            if modes or why:
                print(f"  {'':<18}   {b:<11} {', '.join(modes) or '—'}" + (f"  ({'; '.join(why)})" if why else ""))
    print("\nBackends")
    for name, status in probe().items():
        cls = BACKENDS[name]
        info = status["info"]
        version = info.get("version") or cls.version() or "not installed"
        if status["available"]:
            devices = ", ".join(info.get("devices", [])) or "cpu"
            print(f"  {name:<11} {version:<14} available; devices: {devices}; JIT: {cls.jit_name or '—'}")
        else:
            print(f"  {name:<11} {version:<14} unavailable: {status['reason']}")
    return EXIT_OK


def cmd_env(args: argparse.Namespace) -> int:
    from arraybench import environment
    from arraybench.plan import default_threads
    from arraybench.probe import probe

    threads = args.threads or default_threads()
    env = environment.collect()
    env["backends"] = probe(threads=threads)
    if args.json:
        print(json.dumps(env, indent=2, default=str))
        return EXIT_OK
    print(f"machine   {environment.fingerprint(env)}")
    print(f"cpu       {env['cpu_model']}; {env['cpu_logical']} logical, {env['cpu_physical']} physical, "
          f"{env['cpu_affinity']} usable")
    print(f"memory    {env['memory_bytes'] / 2**30:.1f} GiB")
    print(f"os        {env['os']}; Python {env['python']}")
    for g in env["gpus"]:
        print(f"gpu       {g['name']} {g['memory']} driver {g['driver']}")
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
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from arraybench.report import publish
    from arraybench.results import load_results

    loaded = [load_results(p) for p in args.results]
    for res in loaded:
        for w in res.warnings:
            print(f"arraybench: warning: {w}", file=sys.stderr)
    publish(loaded, Path(args.output_dir))
    return EXIT_OK


COMMANDS = {"run": cmd_run, "list": cmd_list, "env": cmd_env, "report": cmd_report,
            **store.COMMANDS, **compare.COMMANDS}
