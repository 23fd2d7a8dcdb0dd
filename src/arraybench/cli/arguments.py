"""Argument types and the parser class every subcommand uses: bad input is one line and exit code 2."""

from __future__ import annotations

import argparse
from typing import Any

from arraybench import units
from arraybench.errors import UsageError
from arraybench.output.formats import FORMATS
from arraybench.planning.options import ArgumentType, Option


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


def percent(text: str) -> float:
    """`10%` or `10` -> 0.10."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage like 10%") from None
    if not 0 <= value < 1000:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0% and 1000%")
    return value / 100


def memory_size(text: str) -> int:
    """units.memory_size as an argument type: its message becomes argparse's one-line error."""
    try:
        return units.memory_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_format_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text for people (default), markdown, json or csv for tools")


# What argparse makes of each argument type of a run option (planning/options.py): a type that reads
# the text, or an action.
ARGUMENT_TYPES: dict[ArgumentType, dict[str, Any]] = {
    "text": {},
    "list": {},  # Option.from_text splits it
    "params": {},  # Option.from_text reads it
    "int": {"type": int},
    "float": {"type": float},
    "positive_int": {"type": positive_int},
    "positive_float": {"type": positive_float},
    "memory_size": {"type": memory_size},
    "flag": {"action": "store_true"},
    "repeated": {"action": "append"},
}


def add_option(p: argparse.ArgumentParser, option: Option) -> None:
    """A run option (planning/options.RUN_OPTIONS) as an argument of `p`."""
    extra: dict[str, Any] = dict(ARGUMENT_TYPES[option.type])
    if option.metavar is not None:
        extra["metavar"] = option.metavar
    if option.choices is not None:
        extra["choices"] = option.choices
    p.add_argument(*option.flags, dest=option.name, help=option.help, **extra)
