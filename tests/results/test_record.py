"""The case record: one frozen typed record, its registry, the generated doc, and the chain of upgrades."""

import dataclasses
import json
from dataclasses import replace

import pytest

from arraybench.core.case import Case
from arraybench.report import fields_doc
from arraybench.results import SCHEMA, UPGRADES, ResultsWriter, load_results, measured, upgrade
from arraybench.results.record import FIELDS, PROCESS_FIELDS, CaseRecord, ProcessRecord
from arraybench.workloads import blank_record
from tests.helpers.common import FIXTURES, ROOT

DOC = ROOT / "docs" / "results-format.md"
CASE = Case("sort", (("n", 8),), "numpy", "eager", "float64", 1)


def test_a_record_cannot_be_changed_only_replaced():
    rec = blank_record(CASE, "ok")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.median_s = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        rec["median_s"] = 1.0  # type: ignore[index]
    faster = dataclasses.replace(rec, median_s=1.0)
    assert rec.median_s is None and faster.median_s == 1.0
    with pytest.raises(TypeError):
        _ = faster["median_s"]  # read by attribute only: no by-name view


def test_every_field_has_a_type_unit_and_meaning_in_the_registry():
    assert [f.name for f in FIELDS] == [f.name for f in dataclasses.fields(CaseRecord)]
    for f in (*FIELDS, *PROCESS_FIELDS):
        assert f.type and f.meaning, f.name
        if f.name.endswith("_s"):
            assert f.unit == "s", f.name
    # A process's summary names only fields a process's record has.
    assert {f.name for f in PROCESS_FIELDS} - {"n_samples"} <= {f.name for f in FIELDS}


def test_a_record_round_trips_through_a_results_file(tmp_path):
    rec = dataclasses.replace(blank_record(CASE, "ok"), samples_s=(1.0, 2.0, 3.0), median_s=2.0, iqr_s=1.0,
                              ci95_s=(1.0, 3.0), replicates=(ProcessRecord(n_samples=3, loops=4),),
                              gpu_clock={"throttled": False}, machine="box")
    w = ResultsWriter(tmp_path / "results.jsonl", {"schema": SCHEMA})
    w.append_replicate(rec, 0)
    w.append(rec)
    w.close()
    res = load_results(tmp_path)
    assert res.records == [rec] and res.replicate_lines == [(0, rec)] and not res.warnings
    line = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[-1])
    assert set(line) == {"type"} | {f.name for f in FIELDS}  # schema 3: every field, null where none


def test_schema_2_results_load_through_the_upgrade_to_3():
    res = load_results(FIXTURES / "results-schema2.jsonl")
    [rec] = res.records
    assert res.header.schema == 2 and rec.status == "ok" and rec.n_processes == 2
    assert [p.n_samples for p in rec.replicates] == [len(r.samples_s) for _, r in res.replicate_lines]
    assert all(p.wall_s and p.timer_s for p in rec.replicates)  # the per-process phases, kept per process
    assert rec.wall_s == pytest.approx(sum(p.wall_s for p in rec.replicates))
    assert rec.traceback is None and rec.cold_median_s is None  # absent in schema 2: null in 3
    assert measured(rec).processes == 2
    assert sorted(k for k, _ in res.replicate_lines) == [0, 1]


def test_older_lines_go_through_each_upgrade_in_turn():
    assert sorted(UPGRADES) == list(range(1, SCHEMA))
    line = json.loads((FIXTURES / "results-schema1.jsonl").read_text().splitlines()[1])
    one = upgrade(line, 1)
    assert one == UPGRADES[2](UPGRADES[1](line))
    assert set(one) == {f.name for f in FIELDS}
    assert one["n_processes"] == 1 and set(one["replicates"][0]) == {f.name for f in PROCESS_FIELDS}
    # A line written in the current schema (a resumed run appends those to an older file) stays as it is.
    current = CaseRecord.from_json(one).to_json()
    assert upgrade(current, 1) == current


def test_a_resumed_older_file_keeps_its_new_lines_as_written(tmp_path):
    three = dataclasses.replace(blank_record(CASE, "ok"), samples_s=(1.0, 1.0, 2.0, 2.0), median_s=1.4, iqr_s=0.5,
                                n_processes=2, replicates=(ProcessRecord(n_samples=2, loops=1),
                                                           ProcessRecord(n_samples=2, loops=1)))
    path = tmp_path / "results.jsonl"
    path.write_text((FIXTURES / "results-schema1.jsonl").read_text())
    w = ResultsWriter(path, None)  # what --resume does
    w.append(three)
    w.close()
    assert load_results(path).records[-1] == three


def test_unknown_fields_are_ignored_with_a_warning(tmp_path):
    rec = blank_record(CASE, "unavailable", "no such thing")
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"type": "header", "schema": SCHEMA}) + "\n"
                    + json.dumps({"type": "case", **rec.to_json(), "colour": "red"}) + "\n")
    res = load_results(path)
    assert res.records == [rec] and "colour" in res.warnings[0]


def test_results_format_doc_is_generated_from_the_registry():
    text = DOC.read_text(encoding="utf-8")
    assert fields_doc.render(text) == text, "run: python -m arraybench.report.fields_doc docs/results-format.md"
    for f in (*FIELDS, *PROCESS_FIELDS):
        assert f"| `{f.name}` |" in text


def test_a_loaded_record_has_tuples_where_a_fresh_one_has_them():
    from arraybench.results.record import FIELDS

    rec = replace(CaseRecord.blank({"id": "x", "workload": "w", "params": {}, "backend": "numpy", "mode": "eager",
                                    "dtype": "float32", "threads": 1}, "ok"),
                  samples_s=(1.0, 2.0), host_ref_s=(1.0,), memory_ref_s=(2.0, 3.0), ci95_s=(1.0, 2.0))
    loaded = CaseRecord.from_json(json.loads(json.dumps(rec.to_json())))
    tuples = [f.name for f in FIELDS if f.type.startswith("tuple[")]
    assert "memory_ref_s" in tuples and loaded == rec
    assert all(isinstance(getattr(loaded, name), tuple) for name in tuples if getattr(loaded, name) is not None)


def test_what_merging_processes_does_to_a_field_is_read_from_the_registry_alone():
    from arraybench.execution.parent import MEDIAN_OVER_PROCESSES, ONLY_PER_PROCESS, merge_processes
    from arraybench.results.record import MEDIAN, PROCESS, registry

    reg = {f.name: f for f in registry(CaseRecord)}
    assert set(ONLY_PER_PROCESS) == {n for n, f in reg.items() if f.scope == PROCESS}
    assert set(MEDIAN_OVER_PROCESSES) == {n for n, f in reg.items() if f.merge == MEDIAN}
    base = CaseRecord.blank({"id": "x", "workload": "w", "params": {}, "backend": "numpy", "mode": "eager",
                             "dtype": "float32", "threads": 1}, "ok")
    procs = [replace(base, samples_s=(t,) * 5, median_s=t, overhead_s=o, loops=3, timer_s=1.0)
             for t, o in ((1.0, 1e-7), (1.1, 3e-7), (1.2, 2e-7))]
    case = merge_processes(procs)
    assert case.overhead_s == 2e-7 and case.loops is None and case.timer_s is None
