"""What a run says while it runs and when it is stopped: progress lines naming the device, a counter
that moves over processes and after --resume, and an interrupted run counting the processes it kept."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from arraybench.cli import main
from arraybench.core.case import Case
from arraybench.execution import parent
from arraybench.execution.parent import Progress
from arraybench.measure import peaks
from arraybench.results.record import CaseRecord
from tests.execution.test_replication import FakePool, plan, runner

# Two cases, each measured in 3 processes; no refinement, so the plan is the whole run.
RUN = ["run", "--workloads", "elementwise_add,elementwise_mul", "--backends", "numpy", "--modes", "eager",
       "--sizes", "small", "--processes", "3", "--refine", "0"]


class InterruptedPool(FakePool):
    """A pool whose second round is Ctrl-C'd before any case: every case keeps one process."""

    def run_one(self, case: Case) -> CaseRecord:
        if self.generation == 1:
            raise KeyboardInterrupt
        return super().run_one(case)


@pytest.fixture
def no_peaks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's header without the machine's peaks, which take seconds to measure."""
    monkeypatch.setattr(peaks, "measure", lambda *a, **k: {})


def use_pool(monkeypatch: pytest.MonkeyPatch, pool: FakePool) -> None:
    monkeypatch.setattr(parent, "WorkerPool", lambda config: pool)


def test_progress_lines_name_the_device(tmp_path: Path):
    out = io.StringIO()
    progress = Progress(2, out)
    cases = [Case("w", (("n", 1),), "numpy", "eager", "float64", 1, device) for device in ("cpu", "cpu:2")]
    runner(tmp_path, 1, FakePool(), on_record=progress, on_replicate=progress.replicate).run(cases)
    lines = sorted(out.getvalue().splitlines())
    assert lines[0].endswith("w[None] numpy·eager·cpu: 1 ms ok")
    assert lines[1].endswith("w[None] numpy·eager·cpu:2: 1 ms ok")


def test_the_counter_moves_with_each_process_not_only_with_each_case(tmp_path: Path):
    out = io.StringIO()
    progress = Progress(2, out, processes=3)
    runner(tmp_path, 3, FakePool(), on_record=progress, on_replicate=progress.replicate).run(plan(2))
    counters = [line.split("]")[0] + "]" for line in out.getvalue().splitlines()]
    assert counters == ["[1/6 processes]", "[2/6 processes]", "[3/6 processes]", "[4/6 processes]",
                        "[5/6 processes]", "[6/6 processes]"]


def test_a_case_that_fails_counts_the_processes_it_will_not_run(tmp_path: Path):
    out = io.StringIO()
    progress = Progress(2, out, processes=3)
    pool = FakePool({"w1": "error"})
    runner(tmp_path, 3, pool, on_record=progress, on_replicate=progress.replicate).run(plan(2))
    assert out.getvalue().splitlines()[-1].startswith("[6/6 processes]")


def test_after_resume_the_counter_starts_at_the_kept_processes_and_moves(tmp_path: Path, monkeypatch, capsys,
                                                                         no_peaks):
    out = str(tmp_path / "out")
    use_pool(monkeypatch, InterruptedPool())
    assert main([*RUN, "--output-dir", out]) == 130
    capsys.readouterr()
    use_pool(monkeypatch, FakePool())
    assert main(["run", "--resume", out]) == 0
    err = capsys.readouterr().err
    counters = [line.split("]")[0] + "]" for line in err.splitlines() if line.startswith("[")]
    # Each case kept its first process: the resumed run starts at 2 of the first rounds' 4 and moves with
    # each process; the third (planned) round of each, which its open question asks for, counts on to 6.
    assert counters == ["[3/4 processes]", "[4/4 processes]", "[5/6 processes]", "[6/6 processes]"]


def test_an_interrupted_run_counts_the_processes_it_kept(tmp_path: Path, monkeypatch, capsys, no_peaks):
    out = tmp_path / "out"
    use_pool(monkeypatch, InterruptedPool())
    assert main([*RUN, "--output-dir", str(out)]) == 130
    err = capsys.readouterr().err
    assert (f"interrupted; 0 finished cases and 2 process(es) of 2 unfinished case(s) kept in "
            f"{out / 'results.jsonl'}") in err
    assert f"resume with: arraybench run --resume {out}" in err
