"""Command line: a thin layer over settings, plan, runner, results, store, compare and report.

One module per group of subcommands, each with its options (`add_parser`) and handlers
(`COMMANDS`), joined in `main.py`; `arguments` holds the argument types they share and `exits` the exit codes.
"""

from arraybench.cli.main import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "build_parser", "main"]
