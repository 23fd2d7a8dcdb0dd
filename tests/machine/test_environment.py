"""Environment facts that change results: CPU clock and flags, GPU clocks, framework variables, git."""

import os
import subprocess
from dataclasses import asdict

import pytest

from arraybench.backends.backend import child_env
from arraybench.machine import device_survey, host
from arraybench.machine.device_survey import devices_text


def test_the_variables_that_change_results_are_recorded_and_no_others():
    changes = {"KMP_AFFINITY": "compact", "NUMBA_OPT": "0", "TORCHINDUCTOR_FREEZING": "1", "OMP_NUM_THREADS": "2",
               "XLA_FLAGS": "--xla_cpu", "MALLOC_ARENA_MAX": "2", "TF_ENABLE_ONEDNN_OPTS": "0",
               "TF_NUM_INTRAOP_THREADS": "2", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    # Terraform's TF_ variables and TensorFlow's log level share the prefix and change no number.
    others = {"HOME": "/root", "PATH": "/bin", "TERM": "xterm", "TF_CLI_CONFIG_FILE": "/root/.terraformrc",
              "TF_VAR_region": "eu", "TF_LOG": "DEBUG", "TF_CPP_MIN_LOG_LEVEL": "2"}
    assert host.settings_env({**changes, **others}) == dict(sorted(changes.items()))


def test_cpu_flags_and_frequency_come_from_linux():
    flags = host.cpu_flags()
    with open("/proc/cpuinfo") as f:
        listed = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith(("flags", "Features"))), [])
    assert flags == [flag for flag in host.SIMD_FLAGS if flag in listed]
    freq = host.cpu_frequency()
    assert set(freq) == {"governor", "current_mhz", "min_mhz", "max_mhz"}
    assert freq["current_mhz"] is None or freq["current_mhz"] > 0


def test_git_commit_says_which_commit_and_whether_the_tree_differs(tmp_path):
    assert host.git_commit(str(tmp_path)) is None  # not a git work tree
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "a.py").write_text("1\n")
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert host.git_commit(str(tmp_path)) == {"commit": head, "dirty": False}
    (tmp_path / "a.py").write_text("2\n")
    assert host.git_commit(str(tmp_path)) == {"commit": head, "dirty": True}


FAKE_JAX = {
    "jax/__init__.py": """
class Device:
    def __init__(self, id, platform, device_kind):
        self.id, self.platform, self.device_kind = id, platform, device_kind

_DEVICES = {"cpu": [Device(0, "cpu", "cpu")], "tpu": [Device(i, "tpu", "TPU v5 lite") for i in range(4)]}

def devices(backend=None):
    if backend not in _DEVICES:
        raise RuntimeError(f"Unknown backend {backend}")
    return _DEVICES[backend]
""",
    "jax/_src/__init__.py": "",
    "jax/_src/xla_bridge.py": "def backends():\n    return {'cpu': None, 'tpu': None}\n",
}


def test_the_survey_lists_every_kind_of_device_a_framework_sees_a_tpu_too(tmp_path):
    """A fake JAX that sees four TPU chips beside the host: the survey needs no TPU code to list them."""
    for name, text in FAKE_JAX.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    env = child_env({"PYTHONPATH": str(tmp_path)})
    env["PYTHONPATH"] = f"{env['PYTHONPATH'].split(os.pathsep)[0]}{os.pathsep}{tmp_path}"
    found, problem = device_survey.result(device_survey.start("jax", env))
    assert problem == ""
    devices = [asdict(d) for d in found]
    assert device_survey.counts(devices) == {"cpu": 1, "tpu": 4}
    assert devices_text(devices) == "cpu ×1, tpu ×4 (tpu: TPU v5 lite)"
    # A framework that cannot start says why, in one line.
    found, problem = device_survey.result(device_survey.start("cupy", {**env, "PYTHONPATH": str(tmp_path)}))
    assert found == [] and problem.startswith("the device survey failed: ") and "\n" not in problem


def test_gpus_are_one_kind_whatever_the_framework_calls_them():
    assert [device_survey.kind_of_platform(p) for p in ("cuda", "rocm", "gpu", "GPU", "TPU", "cpu", "mps")] == [
        "gpu", "gpu", "gpu", "gpu", "tpu", "cpu", "mps"]
    devices = [{"kind": "gpu", "platform": "cuda", "id": i, "name": "NVIDIA H100"} for i in range(2)]
    assert devices_text([{"kind": "cpu", "platform": "cpu", "id": 0, "name": "host"}, *devices]) == (
        "cpu ×1, gpu ×2 (cuda: NVIDIA H100)")


@pytest.mark.parametrize("device, reason", [
    ("gpu", "jax sees no gpu here: cpu ×1"),
    ("tpu:all", "jax sees no tpu here: cpu ×1"),
    ("gpu:all", "jax sees no gpu here: cpu ×1"),
])
def test_a_device_the_framework_does_not_see_is_named_with_what_it_sees(device, reason):
    seen = [device_survey.Device("cpu", "cpu", 0, "host")]
    assert device_survey.missing("jax", device, seen) == reason
    assert device_survey.missing("jax", "cpu", seen) is None


def test_too_few_devices_say_how_many_there_are_and_which_the_token_needs():
    seen = [device_survey.Device("cpu", "cpu", 0, "host"), device_survey.Device("gpu", "cuda", 0, "NVIDIA H100")]
    assert device_survey.missing("torch", "gpu:0,2", seen) == (
        "torch sees 1 gpu here (cpu ×1, gpu ×1 (cuda: NVIDIA H100)); gpu:0,2 needs gpu 0, 2")
    assert device_survey.missing("torch", "gpu", seen) is None
    assert device_survey.missing("torch", "gpu:all", seen) is None
    assert device_survey.missing("cupy", "gpu", []) == "cupy sees no gpu here: no device"


def test_the_environment_records_every_device_with_its_id(monkeypatch):
    monkeypatch.setattr(host.glob, "glob", lambda pattern: ["/dev/accel0", "/dev/accel1"])
    gpus = [{"index": 0, "name": "NVIDIA H100", "uuid": "GPU-1", "pci_bus_id": "00000000:18:00.0"}]
    assert host.devices(gpus) == [
        {"kind": "cpu", "id": 0, "name": host.cpu_model(), "cores": os.cpu_count()},
        {"kind": "gpu", "id": 0, "name": "NVIDIA H100", "uuid": "GPU-1", "pci_bus_id": "00000000:18:00.0"},
        {"kind": "tpu", "id": 0, "name": "/dev/accel0"}, {"kind": "tpu", "id": 1, "name": "/dev/accel1"}]
    monkeypatch.undo()  # psutil globs too
    env = host.collect()
    assert env["devices"][0]["kind"] == "cpu" and env["gpu_links"] == []
