"""`arraybench report`: the report rebuilt from results files or stored runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from arraybench.cli.exits import EXIT_OK
from arraybench.cli.run import RESULTS_ROOT
from arraybench.cli.store import add_store_option, load_all
from arraybench.errors import UsageError
from arraybench.output import terminal
from arraybench.report import publish
from arraybench.results.run_ids import run_id


def add_parser(sub: Any) -> None:
    rep = sub.add_parser("report", help="rebuild the report from results files or stored runs")
    rep.add_argument("results", nargs="+", help="results.jsonl files, directories holding one, or run ids "
                                                "(unique prefixes, latest) in the results store")
    rep.add_argument("--output-dir", help="where the report goes (default: beside the results file; "
                                          f"for a stored run, {RESULTS_ROOT}/RUN_ID)")
    add_store_option(rep, "results store for run ids")


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
    loaded = load_all(args.results, args.store)
    publish(loaded, report_dir(args.results, loaded, args.output_dir), terminal.table_renderer(sys.stdout))
    return EXIT_OK


COMMANDS = {"report": cmd_report}
