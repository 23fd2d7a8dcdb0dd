"""Installing arraybench: the wheel's metadata, the one version, the licence, Linux only."""

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser

import pytest

import arraybench
from tests.helpers.common import ROOT


@pytest.fixture(scope="module")
def wheel_metadata(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy, so the build's by-products (egg-info, build/) stay out of the checkout.
    tree = out / "tree"
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    # No build isolation: the venv's setuptools (a dev dependency) builds it, no index needed.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out), str(tree)], check=True, capture_output=True)
    (whl,) = out.glob("arraybench-*.whl")
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    return Parser().parsestr(meta), names, entry


def test_the_wheel_carries_the_package_version_the_licence_and_linux_only(wheel_metadata):
    meta, names, entry = wheel_metadata
    assert meta["Version"] == arraybench.__version__  # one source: arraybench.__version__
    assert meta["License-Expression"] == "MIT"
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "Operating System :: POSIX :: Linux" in meta.get_all("Classifier")
    assert "arraybench = arraybench.__main__:main" in entry


def test_cupy_extras_cover_cuda_12_and_13(wheel_metadata):
    meta, _, _ = wheel_metadata
    extras = set(meta.get_all("Provides-Extra"))
    assert {"cupy", "cupy-cuda12", "cupy-cuda13"} <= extras
    requires = meta.get_all("Requires-Dist")
    assert any(r.startswith("cupy-cuda12x") and 'extra == "cupy-cuda12"' in r for r in requires)
    assert any(r.startswith("cupy-cuda13x") and 'extra == "cupy-cuda13"' in r for r in requires)


def test_other_systems_get_one_line_and_exit_2(monkeypatch, capsys):
    from arraybench.__main__ import main

    monkeypatch.setattr(sys, "platform", "darwin")
    assert main() == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Linux only" in err and "'darwin'" in err


def test_the_api_refuses_other_systems_too(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(arraybench.UsageError, match="Linux only"):
        arraybench.run("linreg")


def test_the_process_that_starts_a_run_imports_no_code_of_the_workers():
    # The parent side (execution/session, parent, cluster, more_rounds, via the CLI) builds no case
    # itself: the executor and the child's entry point belong to the worker process alone.
    code = ("import sys, arraybench.cli.run, arraybench.execution.more_rounds\n"
            "print(sorted(m for m in ('arraybench.measure.case_executor', 'arraybench.execution.child')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]"
