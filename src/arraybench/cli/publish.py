"""`arraybench publish` and `answer`: the results store as a static site, and its answer across machines."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from arraybench.cli.exits import EXIT_OK
from arraybench.cli.store import add_store_option
from arraybench.errors import UsageError
from arraybench.site import SiteData, across, answer_text, load_store, write_site
from arraybench.site.history import SiteHistory
from arraybench.store import Store


def add_parsers(sub: Any) -> None:
    """`publish` and `answer`."""
    pub = sub.add_parser("publish", help="write a static site from the results store: the answer across machines, "
                                         "each workload, each framework's versions, every run's report")
    pub.add_argument("dir", help="the site's folder (created; a site published there before is replaced)")
    add_store_option(pub)
    ans = sub.add_parser("answer", help="the answer across machines: per workload, the fastest backend·mode on each")
    add_store_option(ans)


def cmd_publish(args: argparse.Namespace) -> int:
    site = load_store(args.store)
    history = SiteHistory.read(args.store)
    written = write_site(site, Path(args.dir), history.pages(), history.section())
    print(f"site: {written.index}  ({written.pages} pages, {written.reports + written.kept} run reports of which "
          f"{written.kept} unchanged, {len(site.machines)} machines, {written.bytes / 1e6:.1f} MB; opens from "
          "file://)", file=sys.stderr)
    return EXIT_OK


def cmd_answer(args: argparse.Namespace) -> int:
    # Only the runs holding each machine's latest cases: a year of nightly runs loaded whole took minutes.
    with Store(args.store, create=False) as st, st.snapshot():
        held = st.count()
        loaded = [st.load(rid) for rid in st.latest_runs()]
    if not loaded:
        raise UsageError("the results store holds no runs yet (arraybench run or import adds them; "
                         "--store names another)")
    site = SiteData.from_runs(loaded)
    print(answer_text(across(site), site, held))
    return EXIT_OK


COMMANDS = {"publish": cmd_publish, "answer": cmd_answer}
