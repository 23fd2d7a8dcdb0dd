"""`arraybench lint`: the timing mistakes of a hand-written benchmark script or notebook."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from arraybench.cli.exits import EXIT_FAILED_CASES, EXIT_OK
from arraybench.errors import UsageError
from arraybench.lint import as_json, as_text, check_file


def add_parser(sub: Any) -> None:
    p = sub.add_parser("lint", help="find the timing mistakes of a benchmark script or notebook (exit 1 if any)")
    p.add_argument("file", help="a Python script (.py) or a Jupyter notebook (.ipynb); it is read, never run")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text for people (default), json for tools")
    p.add_argument("--write-workload", metavar="FILE",
                   help="write the timed code as @workloads to FILE, for arraybench run --workload-file")


def cmd_lint(args: argparse.Namespace) -> int:
    checked = check_file(args.file)
    if args.write_workload is not None:
        if checked.workloads is None:
            raise UsageError(f"{args.file}: no timed computation with a mistake can be written as a @workload")
        Path(args.write_workload).write_text(checked.workloads)
    if args.format == "json":
        print(json.dumps(as_json(checked), indent=2))
    else:
        print(as_text(checked, args.write_workload), end="")
    # Findings are the command's answer, not a failure of it: 1, as a failed case, so CI can gate on it.
    return EXIT_FAILED_CASES if checked.findings else EXIT_OK


COMMANDS = {"lint": cmd_lint}
