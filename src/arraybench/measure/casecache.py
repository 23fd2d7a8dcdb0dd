"""The run's cache of case inputs and references: each made once per run, memory-mapped by every
process that needs it, within a size cap, and gone when the run completes.

Drawing 10⁸ normal numbers takes ~2 s and a float64 reference of that size another one to two,
while the kernel they feed runs in milliseconds on a GPU: made again in each of a case's three
processes (and for each backend), they set the pace of a large run. Here the first process that
needs an entry makes it and writes it as `.npy` files; later ones map them read-only
(`np.load(mmap_mode="r")`, a few hundred microseconds) and copy what they time into memory of
their own.

An entry is a directory of one `.npy` file per array and a `meta.json` written last: a directory
that has one is whole. It is renamed into place, so two processes racing to make the same entry
both finish with one of the two copies. Entries are evicted least recently used first when a new
one would exceed the cap; an entry larger than the cap is not stored (each process then makes its
own). Evicting a file that another process has mapped is safe on Linux: the mapping keeps it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

# The cap of a run's cache: one case at 10⁸ elements (inputs 0.4 GB, a float64 reference 0.8 GB)
# fits, and a run directory never holds more than this of them (`--cache-limit`).
DEFAULT_LIMIT = 2 * 2**30
META = "meta.json"


@dataclass(frozen=True)
class Entry:
    """One cached item: its arrays by name, what its maker recorded, and how this process got it."""

    arrays: dict[str, Any]
    meta: dict[str, Any]
    made: bool  # made by this process (False: read from the cache)
    seconds: float  # what making it, or reading it, took this process


def storable(arrays: dict[str, Any]) -> bool:
    """Arrays that np.save writes and np.load maps back without pickle."""
    return all(isinstance(a, np.ndarray) and not a.dtype.hasobject for a in arrays.values())


def touch(entry: Path) -> None:
    """Mark an entry used now, to the nanosecond (a file system stamps new files with a coarser clock)."""
    now = time.time_ns()
    os.utime(entry / META, ns=(now, now))


def usage(root: Path) -> int:
    """Bytes held under `root` (0 when it does not exist)."""
    if not root.exists():
        return 0
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


class CaseCache:
    """Entries under `root` (None: nothing is stored, each process makes its own), at most `limit` bytes."""

    def __init__(self, root: Path | None, limit: int = DEFAULT_LIMIT) -> None:
        self.root, self.limit = root, limit
        # Without a root, the last entry of each kind stays in memory for the next case that asks.
        self._memo: dict[str, tuple[str, Entry]] = {}


    def get(self, name: str, make: Callable[[], tuple[dict[str, Any], dict[str, Any]]]) -> Entry:
        """The entry `name`: read from the cache, or made by `make() -> (arrays, meta)` and stored."""
        t0 = time.perf_counter()
        kind = name.split("-", 1)[0]
        memo = self._memo.get(kind)
        if memo is not None and memo[0] == name:
            return replace(memo[1], made=False, seconds=time.perf_counter() - t0)
        path = self.root / name if self.root is not None else None
        if path is not None and (path / META).exists():
            try:
                return self._read(path, t0)
            except (OSError, ValueError):  # evicted while we read it: make it again
                pass
        arrays, meta = make()
        entry = Entry(arrays, meta, made=True, seconds=time.perf_counter() - t0)
        if path is not None and storable(arrays):
            self._write(path, arrays, {**meta, "made_s": entry.seconds})
        if path is None or not storable(arrays) or not (path / META).exists():
            self._memo[kind] = (name, entry)  # not on disk: kept in memory for the next case that asks
        return entry

    def _read(self, path: Path, t0: float) -> Entry:
        meta = json.loads((path / META).read_text())
        arrays = {p.stem: np.load(p, mmap_mode="r", allow_pickle=False) for p in sorted(path.glob("*.npy"))}
        touch(path)  # recently used: evicted last
        return Entry(arrays, meta, made=False, seconds=time.perf_counter() - t0)

    def _write(self, path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        size = sum(a.nbytes for a in arrays.values())
        if size > self.limit:
            return
        assert self.root is not None
        self.root.mkdir(parents=True, exist_ok=True)
        self._evict(self.limit - size)
        tmp = self.root / f".tmp-{path.name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            for key, a in arrays.items():
                np.save(tmp / f"{key}.npy", a, allow_pickle=False)
            (tmp / META).write_text(json.dumps(meta))
            os.rename(tmp, path)
            touch(path)
        except OSError:  # another process stored it first (or the disk is full): ours is not needed
            shutil.rmtree(tmp, ignore_errors=True)

    def _evict(self, room: int) -> None:
        """Remove the least recently used entries until the cache holds at most `room` bytes."""
        assert self.root is not None
        entries = sorted((p for p in self.root.iterdir() if (p / META).exists()),
                         key=lambda p: (p / META).stat().st_mtime_ns)
        held = {p: usage(p) for p in entries}
        total = sum(held.values())
        for p in entries:
            if total <= room:
                return
            shutil.rmtree(p, ignore_errors=True)
            total -= held[p]


def cases_dir(cache: Path) -> Path:
    """Where a run's cache keeps case inputs and references (beside the frameworks' compile caches)."""
    return cache / "cases"
