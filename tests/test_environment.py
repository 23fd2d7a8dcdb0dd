"""Environment facts that change results: CPU clock and flags, GPU clocks, framework variables, git."""

import subprocess

from arraybench import environment


def test_the_variables_that_change_results_are_recorded_and_no_others():
    env = {"KMP_AFFINITY": "compact", "NUMBA_OPT": "0", "TORCHINDUCTOR_FREEZING": "1", "OMP_NUM_THREADS": "2",
           "XLA_FLAGS": "--xla_cpu", "MALLOC_ARENA_MAX": "2", "HOME": "/root", "PATH": "/bin", "TERM": "xterm"}
    assert environment.settings_env(env) == {k: env[k] for k in ("KMP_AFFINITY", "MALLOC_ARENA_MAX", "NUMBA_OPT",
                                                                 "OMP_NUM_THREADS", "TORCHINDUCTOR_FREEZING",
                                                                 "XLA_FLAGS")}


def test_cpu_flags_and_frequency_come_from_linux():
    flags = environment.cpu_flags()
    with open("/proc/cpuinfo") as f:
        listed = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith(("flags", "Features"))), [])
    assert flags == [flag for flag in environment.SIMD_FLAGS if flag in listed]
    freq = environment.cpu_frequency()
    assert set(freq) == {"governor", "current_mhz", "min_mhz", "max_mhz"}
    assert freq["current_mhz"] is None or freq["current_mhz"] > 0


def test_git_commit_says_which_commit_and_whether_the_tree_differs(tmp_path):
    assert environment.git_commit(str(tmp_path)) is None  # not a git work tree
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "a.py").write_text("1\n")
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert environment.git_commit(str(tmp_path)) == {"commit": head, "dirty": False}
    (tmp_path / "a.py").write_text("2\n")
    assert environment.git_commit(str(tmp_path)) == {"commit": head, "dirty": True}
