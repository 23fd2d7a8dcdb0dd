"""Site: a static website from a results store — the answer across machines, each workload, each framework's
versions, and every run's own report — readable from file:// with no server and no network."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from arraybench.errors import UsageError
from arraybench.report import write_all
from arraybench.results import Results, atomic_write_text
from arraybench.site.answer import Across, across, answer_text
from arraybench.site.html import GENERATOR, framework_page, index_page, slug, workload_page
from arraybench.site.model import SiteData, load_store

__all__ = ["Across", "Site", "SiteData", "across", "answer_text", "load_store", "write_site"]

# The folders of pages a site holds beside its index.html; publishing again rewrites them.
PAGE_FOLDERS = ("workloads", "frameworks", "history")
# How a published index.html names its maker (html.GENERATOR), whichever version wrote it.
MADE_HERE = re.compile(r'<meta name="generator" content="arraybench [^"]* publish">')
# In each run's folder: which arraybench wrote its report from how many records. A stored run only
# ever gains records (a resumed run), so publishing again rewrites the reports of changed runs only.
STAMP = ".published"


@dataclass(frozen=True)
class Site:
    """What was written: the index page, and counts a person or a test checks."""

    index: Path
    pages: int  # the site's own pages (index, workloads, frameworks), not the runs' reports
    reports: int  # runs whose report was written now
    kept: int  # runs whose report, published before from the same records, was kept
    bytes: int


def write_site(site: SiteData, out_dir: Path, history: Mapping[str, str] | None = None, changes: str = "") -> Site:
    """Write index.html, workloads/*.html, frameworks/*.html, `history` (site/history.py's pages by path:
    each case over time) with `changes` on the index's first screen, and runs/RUN/ (each run's report, as
    `arraybench report` writes it) into `out_dir`, replacing a site published there before."""
    _clear(out_dir)
    pages = {out_dir / "index.html": index_page(site, across(site), changes)}
    pages |= {out_dir / path: text for path, text in (history or {}).items()}
    pages |= {out_dir / "workloads" / f"{slug(w)}.html": workload_page(site, w) for w in site.workloads}
    pages |= {out_dir / "frameworks" / f"{slug(f)}.html": framework_page(site, f) for f in site.frameworks}
    try:
        for path, text in pages.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
    except OSError as e:
        raise UsageError(f"cannot write the site to {str(out_dir)!r}: {e.strerror}") from None
    folders = {out_dir / "runs" / slug(run.id): run for run in site.runs}
    for old in (out_dir / "runs").glob("*"):
        if old not in folders:  # a run no longer in the store
            shutil.rmtree(old, ignore_errors=True)
    todo = []
    for folder, run in folders.items():
        stamp = f"{GENERATOR}: {len(run.results.records)} records\n"
        if not ((folder / STAMP).is_file() and (folder / STAMP).read_text() == stamp):
            todo.append((run.results, folder, stamp))
    _write_reports(todo)
    size = sum(p.stat().st_size for p in out_dir.rglob("*") if p.is_file())
    return Site(out_dir / "index.html", len(pages), len(todo), len(folders) - len(todo), size)


def _write_reports(todo: list[tuple[Results, Path, str]]) -> None:
    """Each run's report, then its stamp. Drawing a run's plots takes most of a publish (20 s for a
    run of 400 cases on the 2-core VM), so runs are written side by side, one per usable CPU."""
    workers = min(len(todo), len(os.sched_getaffinity(0)))
    if workers < 2:
        for item in todo:
            _write_report(*item)
        return
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_write_report, *zip(*todo, strict=True)))


def _write_report(results: Results, folder: Path, stamp: str) -> None:
    write_all([results], folder)
    atomic_write_text(folder / STAMP, stamp)


def _clear(out_dir: Path) -> None:
    """Refuse a folder that holds anything but a site published before; remove that site's pages."""
    index = out_dir / "index.html"
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not (index.is_file() and MADE_HERE.search(index.read_text(errors="replace"))):
            raise UsageError(f"{str(out_dir)!r} is not empty and holds no published site; choose another folder")
        for name in PAGE_FOLDERS:
            shutil.rmtree(out_dir / name, ignore_errors=True)
    elif out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{str(out_dir)!r} is a file; name a folder for the site")
