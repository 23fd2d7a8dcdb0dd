"""Shared test helpers: a fake clock and a tiny end-to-end run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arraybench.cli import main

# One process a case unless a test is about replication (test_replication.py).
TINY = ["--params", "n=200,iters=20", "--min-time", "0.01", "--max-time", "0.2", "--min-samples", "3", "--processes", "1"]


class FakeClock:
    """A clock that moves only when told: each call of the timed function costs `cost` seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, dt: float) -> None:
        self.now += dt


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def run_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Run `arraybench ARGS` in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run
