"""`arraybench publish` and `answer`: the results store as a static site, and its answer across machines."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from arraybench.cli.exits import EXIT_OK
from arraybench.cli.store import add_store_option
from arraybench.site import FULL_REPORTS, across, answer_text, write_site
from arraybench.site.history_pages import SiteHistory
from arraybench.site.site_data import read_site
from arraybench.store import Store


def add_parsers(sub: Any) -> None:
    """`publish` and `answer`."""
    pub = sub.add_parser("publish", help="write a static site from the results store: the answer across machines, "
                                         "each workload, each framework's versions, a page per run")
    pub.add_argument("dir", help="the site's folder (created; a site published there before is replaced)")
    pub.add_argument("--full-reports", type=non_negative, default=FULL_REPORTS, metavar="N",
                     help="keep the full report (plots and all) of each machine's N latest runs too, beside the runs "
                          "a detected change points at; each new run then costs 20-60 s of drawing "
                          f"(default {FULL_REPORTS}: `arraybench report RUN` builds any other)")
    add_store_option(pub)
    ans = sub.add_parser("answer", help="the answer across machines: per workload, the fastest backend·mode on each")
    add_store_option(ans)


def non_negative(text: str) -> int:
    """--full-reports: a whole number of runs, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of runs (0 or more)")
    return value


def cmd_publish(args: argparse.Namespace) -> int:
    # The pages, the histories and the changes from one snapshot of the store, whoever pushes meanwhile.
    with Store(args.store, create=False) as st, st.snapshot():
        site = read_site(st)
        history = SiteHistory.read(st)
    written = write_site(site, Path(args.dir), args.store, history.pointed, history.pages(), history.section(),
                         args.full_reports)
    print(f"site: {written.index}  ({len(site.runs)} runs on {len(site.machines)} machines; written now: "
          f"{written.pages} pages and {written.runs} runs' pages, {written.kept} runs unchanged; {written.reports} "
          f"full reports; {written.bytes / 1e6:.1f} MB; opens from file://)", file=sys.stderr)
    return EXIT_OK


def cmd_answer(args: argparse.Namespace) -> int:
    # Whole, only the runs holding each machine's latest cases: a year of nightly runs loaded whole
    # took minutes.
    with Store(args.store, create=False) as st, st.snapshot():
        site = read_site(st, versions=False)
    print(answer_text(across(site), site))
    return EXIT_OK


COMMANDS = {"publish": cmd_publish, "answer": cmd_answer}
