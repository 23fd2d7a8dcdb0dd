"""A run over several Python environments seen everywhere it goes: show, the store, push and pull, every
export format and the notebook keep each environment's cases apart and say which environment is which."""

import csv
import io
import json

import pytest

from arraybench.comparison import compare, environment_side
from arraybench.report import exports
from arraybench.results import load_results
from arraybench.store import Store
from tests.envs.test_envs_run import _two_env_run

DRIFT = [1.0, 1.15, 0.87, 1.1]
PAIR = "numpy 2.4.6 against 2.3.5: faster in 0 of 4 cases, slower in 4 (median +8 %)"


@pytest.fixture
def stored(tmp_path, run_cli):
    """A two-environment run (new 8 % slower than old, under a drift between rounds) in a store."""
    path = _two_env_run(tmp_path / "run.jsonl", 1.08, DRIFT)
    db = str(tmp_path / "a.db")
    code, _, err = run_cli("import", str(path), "--store", db)
    assert code == 0, err
    return path, db


def test_show_says_which_environment_each_row_is_and_how_they_compare(stored, run_cli):
    _, db = stored
    code, out, err = run_cli("show", "r1", "--store", db)
    assert code == 0, err
    assert "environments old: numpy==2.3.5; new: numpy==2.4.6 with PLANTED=1.08" in out
    assert PAIR in out
    rows = [line.split()[:2] for line in out.splitlines() if line.startswith("numpy·eager")]
    assert rows == [["numpy·eager", "[new]"], ["numpy·eager", "[old]"]]
    code, md, _ = run_cli("show", "r1", "--store", db, "--format", "markdown")
    assert PAIR in md and "| numpy·eager [old] |" in md and "| numpy·eager [new] |" in md


def test_show_for_tools_gives_each_row_its_environment(stored, run_cli):
    _, db = stored
    _, out, _ = run_cli("show", "r1", "--store", db, "--format", "csv")
    assert sorted(row["env"] for row in csv.DictReader(io.StringIO(out))) == ["new"] * 4 + ["old"] * 4
    _, out, _ = run_cli("show", "r1", "--store", db, "--format", "json")
    shown = json.loads(out)
    assert sorted(r["env"] for r in shown["records"]) == ["new"] * 4 + ["old"] * 4
    assert shown["header"]["environments"]["old"]["versions"] == {"numpy": "2.3.5"}


def test_the_store_and_a_push_keep_each_environment_and_its_pairing(stored, tmp_path, run_cli):
    """What a store gives back compares as the file does: same environments, versions and rounds."""
    path, db = stored
    other = str(tmp_path / "b.db")
    code, _, err = run_cli("push", "r1", "--to", other, "--store", db)
    assert code == 0, err
    from_file = load_results(path)
    paired = compare(environment_side(from_file, "old"), environment_side(from_file, "new"), paired=True)
    for where in (db, other):
        with Store(where, create=False) as st:
            res = st.load("r1")
        assert res.header.environments == from_file.header.environments
        assert sorted((r.id, r.env) for r in res.latest().values()) == \
            sorted((r.id, r.env) for r in from_file.latest().values())
        cmp = compare(environment_side(res, "old"), environment_side(res, "new"), paired=True)
        assert [c.verdict for c in cmp.cases] == ["slower"] * 4
        assert [c.result.ci95 for c in cmp.cases] == [c.result.ci95 for c in paired.cases]  # the rounds kept


def test_every_export_format_keeps_the_environments_apart(stored, tmp_path, run_cli):
    _, db = stored
    out = {}
    for fmt in exports.EXPORT_FORMATS:
        out[fmt] = tmp_path / f"export.{fmt}"
        code, _, err = run_cli("export", "r1", "--store", db, "--format", fmt, "-o", str(out[fmt]))
        assert code == 0, err
    bmf = json.loads(out["bmf"].read_text())
    assert len(bmf) == 8  # four sizes in two environments: no environment's series merged into another's
    old, new = (bmf[f"elementwise_add[n=1000]/numpy-eager/float32/cpu/t1@{env}"] for env in ("old", "new"))
    assert new["latency"]["value"] > old["latency"]["value"]
    benchmarks = json.loads(out["pytest-benchmark"].read_text())["benchmarks"]
    assert len({b["name"] for b in benchmarks}) == 8
    versions = {b["extra_info"]["env"]: b["extra_info"]["env_versions"] for b in benchmarks}
    assert versions == {"old": {"numpy": "2.3.5"}, "new": {"numpy": "2.4.6"}}
    copy = load_results(out["jsonl"])
    assert copy.header.environments["new"].variables == {"PLANTED": "1.08"}
    assert sorted(r.env for r in copy.latest().values()) == ["new"] * 4 + ["old"] * 4


def test_the_notebook_names_the_environments_and_keeps_their_rows_apart(stored):
    res = load_results(stored[0])
    assert "in environments old, new" in repr(res)
    page = res._repr_html_()
    assert "environments old: numpy==2.3.5; new: numpy==2.4.6 with PLANTED=1.08" in page
    assert "numpy·eager [old]</th>" in page and "numpy·eager [new]</th>" in page
