"""Publishing a site: its pages written where they changed (write_site), each run's page and, where the rule
keeps one (full_report_runs), its full report, written side by side in worker processes."""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Collection, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from arraybench.errors import UsageError
from arraybench.report.writer import write_all
from arraybench.results.atomic import atomic_write_text
from arraybench.site.across_machines import across
from arraybench.site.pages import (
    GENERATOR,
    framework_page,
    index_page,
    months_pages,
    run_page,
    slug,
    workload_page,
)
from arraybench.site.site_data import Run, SiteData, stored_runs

# The folders of pages a site holds beside its index.html and runs/; publishing again rewrites those that changed.
PAGE_FOLDERS = ("workloads", "frameworks", "history")
# How a published index.html names its maker (html.GENERATOR), whichever version wrote it.
MADE_HERE = re.compile(r'<meta name="generator" content="arraybench [^"]* publish">')
# In each run's folder: which arraybench wrote its page from how many records, and whether its full
# report is beside it. A stored run only ever gains records (a resumed run), so publishing again
# rewrites the pages of new and changed runs only.
STAMP = ".published"
# The full report (plots and all, 7-9 MB and 20-130 s of drawing a run) is kept for the runs a
# detected change points at, and for this many of each machine's latest runs (`publish
# --full-reports N`). None by default: drawing the newest run's report each night would take a
# nightly republish from seconds to a minute, and a thousand of them a site of gigabytes and hours.
FULL_REPORTS = 0
# What a run's full report consists of (report.write_all), removed when it leaves the rule.
REPORT_FILES = ("report.html", "report.md", "results.csv", "crossovers.csv", "plots")


@dataclass(frozen=True)
class Site:
    """What was written: the index page, and counts a person or a test checks."""

    index: Path
    pages: int  # the site's own pages written now (those whose text changed), not the runs' pages
    runs: int  # runs whose page (and full report, where the rule keeps one) was written now
    kept: int  # runs whose page, published before from the same records, was kept
    reports: int  # runs with a full report on the site
    bytes: int


def full_report_runs(site: SiteData, pointed: Collection[str] = (), latest: int = FULL_REPORTS) -> set[str]:
    """The runs whose full report the site carries: each machine's `latest` latest, and
    `pointed` (the runs a detected change points at: each its first run at the new level)."""
    by_machine: dict[str, list[str]] = defaultdict(list)
    for run in site.runs:
        by_machine[run.machine.key].append(run.id)
    keep = set(pointed) & {run.id for run in site.runs}
    for ids in by_machine.values():
        keep.update(ids[len(ids) - latest:] if latest > 0 else ())
    return keep


def rule(latest: int = FULL_REPORTS) -> str:
    """The rule as the site states it, on its index, its month pages and each run's page without one."""
    kept = (f"each machine's {latest} latest run{'s' if latest > 1 else ''} and for the runs a detected change "
            "points at" if latest > 0 else "the runs a detected change points at (its first run at the new level)")
    return ("Each run has a page of its own (its answer, every case, its environment). The full report, with its "
            f"plots, is kept for {kept}; `arraybench report RUN --store STORE` builds it for any other.")


RULE = rule()


def write_site(site: SiteData, out_dir: Path, store: str, pointed: Collection[str] = (),
               history: Mapping[str, str] | None = None, changes: str = "", full_reports: int = FULL_REPORTS) -> Site:
    """Write index.html, workloads/*.html, frameworks/*.html, runs/*.html (the runs by month) and
    runs/RUN/ (each run's page, and its full report as `arraybench report` writes it where
    full_report_runs keeps one) into `out_dir`, replacing a site published there before. Only
    what changed is written: a page whose text is the same, a run whose records are, is kept.
    `store` is where the runs are read from, whole, for their own pages; it is written nowhere.
    `history` is site/history_pages.py's pages by path (each case over time), `changes` its list of
    detected changes for the index's first screen; `full_reports`, each machine's latest runs that
    keep their full report beside those `pointed` at."""
    _check(out_dir)
    stated = rule(full_reports)
    pages = {out_dir / "index.html": index_page(site, across(site), stated, changes)}
    pages |= {out_dir / path: text for path, text in (history or {}).items()}
    pages |= {out_dir / "workloads" / f"{slug(w)}.html": workload_page(site, w) for w in site.workloads}
    pages |= {out_dir / "frameworks" / f"{slug(f)}.html": framework_page(site, f) for f in site.frameworks}
    pages |= {out_dir / "runs" / name: text for name, text in months_pages(site, stated).items()}
    try:
        written = _write_changed(pages)
    except OSError as e:
        raise UsageError(f"cannot write the site to {str(out_dir)!r}: {e.strerror}") from None
    for old in [*(p for name in PAGE_FOLDERS for p in (out_dir / name).glob("*")), *(out_dir / "runs").glob("*.html")]:
        if old not in pages:  # a workload, framework or month no longer in the store
            old.unlink()
    full = full_report_runs(site, pointed, full_reports)
    folders = {out_dir / "runs" / slug(run.id): run for run in site.runs}
    for old in (out_dir / "runs").glob("*"):
        if old.is_dir() and old not in folders:  # a run no longer in the store
            shutil.rmtree(old, ignore_errors=True)
    todo = []
    for folder, run in folders.items():
        stamp = f"{GENERATOR}: {run.records} records on the {run.machine.name}, " \
                f"{'full report' if run.id in full else 'page only'}\n"
        if not ((folder / STAMP).is_file() and (folder / STAMP).read_text() == stamp):
            todo.append(RunPage(run, folder, run.id in full, stamp, stated))
    _write_runs(store, todo)
    size = sum(p.stat().st_size for p in out_dir.rglob("*") if p.is_file())
    return Site(out_dir / "index.html", written, len(todo), len(folders) - len(todo), len(full), size)


@dataclass(frozen=True)
class RunPage:
    """A run whose page is to be written (with its full report, where `full`), and the stamp that says so."""

    run: Run
    folder: Path
    full: bool
    stamp: str
    rule: str  # the full-report rule as the site states it


def _write_changed(pages: dict[Path, str]) -> int:
    """Write the pages whose text differs from the file there; returns how many were written."""
    written = 0
    for path, text in pages.items():
        if path.is_file() and path.read_text(errors="replace") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        written += 1
    return written


def _write_runs(store: str, todo: list[RunPage]) -> None:
    """Each run's page, then its stamp. Drawing a full report's plots takes most of a publish, so
    runs are written side by side, one process per usable CPU: full reports first (each a task of
    its own), then the pages in batches, each batch reading its runs through one connection."""
    full = [[item] for item in todo if item.full]
    pages = [item for item in todo if not item.full]
    batches = full + [pages[i:i + PAGE_BATCH] for i in range(0, len(pages), PAGE_BATCH)]
    workers = min(len(batches), len(os.sched_getaffinity(0)))
    if workers < 2:
        for batch in batches:
            _write_batch(store, batch)
        return
    # Forked from a fresh server process, never from this one: a caller that imported JAX or torch
    # holds their threads, and a fork of a threaded process can deadlock in its child (Python warns).
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("forkserver")) as pool:
        list(pool.map(_write_batch, [store] * len(batches), batches))


# Runs a worker reads and writes the pages of in one task: one connection to the store for them all.
PAGE_BATCH = 25


def _write_batch(store: str, batch: list[RunPage]) -> None:
    for item, results in zip(batch, stored_runs(store, [item.run.id for item in batch]), strict=True):
        item.folder.mkdir(parents=True, exist_ok=True)
        if item.full:
            write_all([results], item.folder, linked_plots=True)  # no page over 2 MB
        else:
            for path in (item.folder / name for name in REPORT_FILES):
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
        atomic_write_text(item.folder / "index.html", run_page(item.run, results, item.full, item.rule))
        atomic_write_text(item.folder / STAMP, item.stamp)


def _check(out_dir: Path) -> None:
    """Refuse a folder that holds anything but a site published before."""
    index = out_dir / "index.html"
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not (index.is_file() and MADE_HERE.search(index.read_text(errors="replace"))):
            raise UsageError(f"{str(out_dir)!r} is not empty and holds no published site; choose another folder")
    elif out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{str(out_dir)!r} is a file; name a folder for the site")
