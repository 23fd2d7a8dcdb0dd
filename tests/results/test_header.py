"""The run header (results/header.py): typed, read through the upgrade chain, written back byte for byte."""

import dataclasses
import json
from pathlib import Path

import pytest

from arraybench.results import HEADER_UPGRADES, SCHEMA, ResultsWriter, load_results, upgrade_header
from arraybench.results.header import (
    ANALYSIS_FIELDS,
    ENVIRONMENT_FIELDS,
    HEADER_FIELDS,
    PEAKS_FIELDS,
    SETTINGS_FIELDS,
    MachineEnvironment,
    Peaks,
    PythonEnvironment,
    RunHeader,
    machine_names,
)
from arraybench.results.run_ids import run_id
from tests.helpers.common import FIXTURES

FILES = [FIXTURES / "results-schema1.jsonl", FIXTURES / "results-schema2.jsonl", FIXTURES / "golden" / "results.jsonl"]


def first_line(path: Path) -> str:
    return path.read_text(encoding="utf-8").splitlines()[0]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name if p.parent == FIXTURES else f"golden-{p.name}")
def test_a_header_read_and_written_again_is_byte_identical(path, tmp_path):
    line = first_line(path)
    assert json.dumps(RunHeader.from_json(json.loads(line)).to_json()) == line
    # As a run writes it: the writer's own line, from the header load_results typed.
    header = load_results(path).header
    assert isinstance(header, RunHeader)
    writer = ResultsWriter(tmp_path / "results.jsonl", header)
    writer.close()
    assert (tmp_path / "results.jsonl").read_text(encoding="utf-8") == line + "\n"


def test_a_schema_1_header_is_read_through_the_upgrade_chain():
    obj = json.loads(first_line(FIXTURES / "results-schema1.jsonl"))
    assert obj["schema"] == 1 and set(HEADER_UPGRADES) == set(range(1, SCHEMA))
    header = upgrade_header(obj, 1)
    assert header == load_results(FIXTURES / "results-schema1.jsonl").header
    # What schema 1 lacked loads at its default: no git, no environments, no peaks measured.
    assert header.git is None and header.environments == {} and header.peaks == Peaks()
    assert header.peaks.method is None and header.peaks.matmul_gflops == {}
    assert header.environment.hostname == "box" and header.settings.dtype == "float32"
    assert header.settings.timer is not None and header.settings.timer["max_samples"] == 200
    assert header.planned == 1 and header.schema == 1
    # ... and writes none of it back.
    assert "git" not in header.to_json() and "peaks" not in header.environment.to_json()


def test_a_current_header_has_its_parts_typed():
    header = load_results(FIXTURES / "golden" / "results.jsonl").header
    assert isinstance(header.environment, MachineEnvironment) and isinstance(header.peaks, Peaks)
    assert header.peaks.method and header.peaks.matmul_gflops
    assert list(header.environments) == ["old", "new"]
    assert all(isinstance(e, PythonEnvironment) for e in header.environments.values())
    assert header.versions_of("x@new") == header.environments["new"].versions
    assert header.versions_of("x") == header.environment.versions


def test_unknown_keys_are_kept_in_order_and_written_back():
    obj = {"type": "header", "schema": SCHEMA, "run_id": "r1", "from_the_future": [1, 2],
           "environment": {"hostname": "h", "quantum_bits": 7, "peaks": {"method": "m", "tpu": {"x": 1}}},
           "settings": {"dtype": "float64", "new_knob": True}, "plan_size": 3,
           "environments": {"a": {"spec": "jax==1", "sandbox": "yes"}}}
    header = RunHeader.from_json(obj)
    assert header.extra == {"from_the_future": [1, 2]}
    assert header.environment.extra == {"quantum_bits": 7} and header.peaks.extra == {"tpu": {"x": 1}}
    assert header.settings.extra == {"new_knob": True} and header.environments["a"].extra == {"sandbox": "yes"}
    assert json.dumps(header.to_json()) == json.dumps(obj)
    # A field that is not what the registry declares (a file made by hand) is kept as written too.
    odd = {"schema": SCHEMA, "environment": "somewhere", "settings": None}
    typed = RunHeader.from_json(odd)
    assert typed.environment == MachineEnvironment() and typed.to_json() == odd


def test_a_changed_header_writes_its_change_in_place_and_new_fields_after():
    obj = json.loads(first_line(FIXTURES / "results-schema1.jsonl"))
    header = dataclasses.replace(RunHeader.from_json(obj), schema=SCHEMA)
    assert list(header.to_json()) == list(obj) and header.to_json()["schema"] == SCHEMA
    env = dataclasses.replace(header.environment, cpu_model="Big CPU")
    assert list(env.to_json()) == ["hostname", "cpu_model"]
    assert run_id(header) == run_id(header.to_json())  # a file without an id: derived from its JSON alike


def test_a_part_is_read_by_attribute_and_compared_with_parts_only():
    header = RunHeader.from_json({"type": "header", "schema": SCHEMA, "settings": {"dtype": "float32"}})
    assert header.settings.dtype == "float32" and header.to_json()["settings"] == {"dtype": "float32"}
    with pytest.raises(TypeError):
        _ = header["settings"]  # no by-name view: a renamed field is a type error
    assert header == RunHeader.from_json(header.to_json()) and header != header.to_json()


def test_every_field_is_declared_with_a_meaning():
    for fields in (HEADER_FIELDS, ENVIRONMENT_FIELDS, PEAKS_FIELDS, SETTINGS_FIELDS, ANALYSIS_FIELDS):
        assert fields and all(f.meaning for f in fields)
        assert not {"extra", "keys_read"} & {f.name for f in fields}
    assert [f.name for f in HEADER_FIELDS][:5] == ["type", "schema", "run_id", "arraybench_version", "started"]


def test_machines_are_named_by_one_rule():
    # A report names machines by host: two machines on one host are known by their keys.
    assert machine_names({"k1": "vm", "k2": "vm", "k3": "box"}) == {"k1": "k1", "k2": "k2", "k3": "box"}
    # The site by model: where hosts tell machines of one model apart, each gets its host added.
    assert machine_names({"a": "EPYC", "b": "EPYC"}, {"a": "ci-1", "b": "ci-2"}) == {"a": "EPYC (ci-1)",
                                                                                    "b": "EPYC (ci-2)"}
    assert machine_names({"a": "EPYC", "b": "EPYC"}, {"a": "ci", "b": "ci"}) == {"a": "a", "b": "b"}
