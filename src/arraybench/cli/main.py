"""The `arraybench` command: its parser made of each group's subcommands, and `main`, which turns a
usage error, SIGTERM or Ctrl-C into one line and its exit code."""

from __future__ import annotations

import sys

from arraybench import __version__
from arraybench.cli import compare, info, lint, publish, report, run, store
from arraybench.cli.arguments import Parser
from arraybench.cli.exits import EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE, Terminated
from arraybench.errors import UsageError

COMMANDS = {**run.COMMANDS, **info.COMMANDS, **report.COMMANDS, **store.COMMANDS, **compare.COMMANDS,
            **publish.COMMANDS, **lint.COMMANDS}


def build_parser() -> Parser:
    p = Parser(prog="arraybench", description="Honest benchmarks of array frameworks.")
    p.add_argument("--version", action="version", version=f"arraybench {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    run.add_parser(sub)
    info.add_parsers(sub)
    report.add_parser(sub)
    store.add_parsers(sub)
    compare.add_parser(sub)
    publish.add_parsers(sub)
    lint.add_parser(sub)
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
    except Terminated:
        print("\narraybench: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("\narraybench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
