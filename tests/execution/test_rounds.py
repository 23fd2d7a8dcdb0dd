"""The one round loop of local and cluster runs (parent.Rounds), with processes that end out of order."""

from contextlib import contextmanager
from dataclasses import replace

from arraybench.core.case import Case
from arraybench.execution.more_rounds import process_records
from arraybench.execution.parent import Rounds, RunConfig
from arraybench.measure.timing import TimerConfig
from arraybench.results import ResultsWriter, load_results
from arraybench.workloads import blank_record


class OutOfOrder(Rounds):
    """Processes end last-started first, as a cluster's may; a case named `nowhere` can run nowhere."""

    def __init__(self, writer, config, **rounds):
        super().__init__(writer, config, **rounds)
        self.log, self.freshened = [], 0

    @contextmanager
    def launched(self, cases):
        yield [blank_record(c, "unavailable", "no worker offers it") for c in cases if c.workload == "nowhere"]

    def measure(self, cases, k):
        for case in reversed(cases):
            self.log.append((k, case.workload))
            yield replace(blank_record(case, "ok"), samples_s=(1e-3 * (k + 1),) * 3, loops=1, median_s=1e-3)

    def fresh(self):
        self.freshened += 1


def plan() -> list[Case]:
    return [Case(w, (("n", 1),), "numpy", "eager", "float64", 1) for w in ("a", "b", "nowhere")]


def test_a_case_that_can_run_nowhere_is_recorded_once_and_the_others_round_by_round(tmp_path):
    writer = ResultsWriter(tmp_path / "results.jsonl", {"schema": 3, "settings": {}})
    runner = OutOfOrder(writer, RunConfig(TimerConfig(processes=2), 0, 10.0, tmp_path / "logs"))
    records = {r.workload: r for r in runner.run(plan())}
    writer.close()
    assert sorted(runner.log) == [(0, "a"), (0, "b"), (1, "a"), (1, "b")] and runner.freshened == 1
    assert records["nowhere"].status == "unavailable" and records["nowhere"].error == "no worker offers it"
    assert records["a"].n_processes == 2 and [p.round for p in records["a"].replicates] == [0, 1]


def test_each_process_says_when_it_ended_by_the_runners_clock(tmp_path, fake_clock):
    """more_rounds.crowded reads how far apart a case's processes ran from their `ended_at`."""
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, {"schema": 3, "settings": {}})
    runner = OutOfOrder(writer, RunConfig(TimerConfig(processes=2), 0, 10.0, tmp_path / "logs"))
    runner.clock = fake_clock
    measure = runner.measure

    def later(cases, k):
        for rec in measure(cases, k):
            fake_clock.advance(10.0)
            yield rec

    runner.measure = later
    runner.run(plan()[:2])
    writer.close()
    ends = {cid: [p.ended_at for p in procs] for cid, procs in process_records(load_results(path)).items()}
    assert sorted(ends.values()) == [[10.0, 40.0], [20.0, 30.0]]  # each round ends last-started first


def test_a_further_round_measures_only_the_process_each_case_lacks(tmp_path):
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, {"schema": 3, "settings": {}})
    runner = OutOfOrder(writer, RunConfig(TimerConfig(processes=2), 0, 10.0, tmp_path / "logs"))
    cases = plan()[:2]
    runner.run(cases)
    # As more_rounds.py asks for one more round of open cases.
    runner.processes, runner.partial, runner.log = 3, process_records(load_results(path)), []
    again = runner.run(cases)
    writer.close()
    assert sorted(runner.log) == [(2, "a"), (2, "b")]
    assert all(r.n_processes == 3 and [p.round for p in r.replicates] == [0, 1, 2] for r in again)
