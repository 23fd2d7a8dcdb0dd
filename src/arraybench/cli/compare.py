"""`arraybench compare`: two runs side by side, a verdict per case, and an exit code for CI."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path
from typing import Any

from arraybench.cli.arguments import add_format_option, percent
from arraybench.cli.exits import EXIT_FAILED_CASES, EXIT_OK
from arraybench.cli.store import add_store_option, load_all
from arraybench.comparison import (
    DEFAULT_THRESHOLD,
    MAX_EARLIER_RUNS,
    compare,
    counts_as_history,
    environment_side,
    headline,
    render,
    render_as,
)
from arraybench.errors import UsageError
from arraybench.output.terminal import table_renderer
from arraybench.results import Results
from arraybench.results.run_ids import run_id
from arraybench.store import Store
from arraybench.store.postgres import is_url


def add_parser(sub: Any) -> None:
    p = sub.add_parser("compare", help="compare two runs, or two environments of one run (RUN@OLD RUN@NEW): "
                                       "ratio, significance and verdict per case")
    p.add_argument("base", help="run id (or unique prefix, or latest) or results file; RUN@ENV: one environment "
                                "(--env) of a run, paired round by round with the other's where both are one run's")
    p.add_argument("new", help="the same, for the new side")
    p.add_argument("--threshold", type=percent, default=DEFAULT_THRESHOLD, metavar="PCT",
                   help=f"smallest change that counts as faster or slower (default {100 * DEFAULT_THRESHOLD:g}%%)")
    p.add_argument("--fail-on-slowdown", type=percent, metavar="PCT",
                   help="exit 1 if a case is significantly slower by more than PCT, or broke")
    add_format_option(p)
    p.add_argument("--markdown", action="store_const", dest="format", const="markdown",
                   help="same as --format markdown (for a pull-request comment)")
    p.add_argument("-o", "--output", metavar="FILE.md", help="also write the Markdown to FILE.md")
    add_store_option(p, "results store for run ids and earlier runs")
    p.add_argument("--no-history", action="store_true",
                   help="leave out the spread between earlier runs of this machine in the store "
                        "(by default added to the intervals of cases with 2 or more earlier runs)")


def split_env(ref: str) -> tuple[str, str | None]:
    """`RUN@ENV` -> (RUN, ENV); a ref without one, or a file whose name holds an @, -> (ref, None)."""
    run, at, env = ref.rpartition("@")
    if not at or not run or not env or Path(ref).exists():
        return ref, None
    return run, env


def cmd_compare(args: argparse.Namespace) -> int:
    (base_ref, base_env), (new_ref, new_env) = split_env(args.base), split_env(args.new)
    sides = load_all([base_ref, new_ref], args.store)
    names = (_name(args.base, sides[0]), _name(args.new, sides[1]))
    # Two environments of one run: their processes ran in the same rounds, so they pair.
    paired = base_env is not None and new_env is not None and run_id(sides[0].header) == run_id(sides[1].header)
    if base_env is not None:
        sides[0] = environment_side(sides[0], base_env)
    if new_env is not None:
        sides[1] = environment_side(sides[1], new_env)
    history = [] if args.no_history or paired else earlier_runs(args.store, sides)
    cmp = compare(sides[0], sides[1], threshold=args.threshold, names=names, history=history, paired=paired)
    note = headline(*sides)
    print(render_as(cmp, note, args.format, table_renderer(sys.stdout)), end="")
    if args.output:
        try:
            Path(args.output).write_text(render(cmp, note, markdown=True))
        except OSError as e:
            raise UsageError(f"cannot write {args.output!r}: {e.strerror}") from None
    if not cmp.cases:
        print("arraybench: warning: no case ran in both; nothing was compared", file=sys.stderr)
    if args.fail_on_slowdown is not None:
        bad = cmp.regressions(args.fail_on_slowdown)
        if bad:
            print(f"\n{len(bad)} case(s) slower by more than {100 * args.fail_on_slowdown:g}% or broken:",
                  file=sys.stderr)
            for c in bad:
                what = f"{c.result.ratio:.3f}× the time" if c.result else c.note
                print(f"  {c.label} {c.row}: {what}", file=sys.stderr)
            return EXIT_FAILED_CASES
    return EXIT_OK


def earlier_runs(store: str, sides: list[Results]) -> list[Results]:
    """The store's runs on the base's machine, with their records of the compared cases; none
    when there is no store (compare never creates one), or when it cannot be read: history only
    widens intervals, so a store that cannot give it costs a warning, not the comparison."""
    if not is_url(store) and not Path(store).exists():
        return []
    try:
        with Store(store, create=False) as st:
            compared = {r.id for res in sides for r in res.records}
            return st.runs_on(sides[0].environment.fingerprint, compared,
                              keep=counts_as_history(*sides), latest=MAX_EARLIER_RUNS)
    except (UsageError, OSError, sqlite3.Error) as e:
        print(f"arraybench: warning: no earlier runs from the store ({e}); compared without them", file=sys.stderr)
        return []


def _name(ref: str, res: Results) -> str:
    run, env = split_env(ref)
    where = f" env {env}" if env else ""
    return f"{run} (run {run_id(res.header)}{where})" if Path(run).exists() else f"run {run_id(res.header)}{where}"


COMMANDS = {"compare": cmd_compare}
