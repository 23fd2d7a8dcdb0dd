"""A case's later processes load what its first compiled, and a first call says which it was."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from arraybench.backends import backend_class
from arraybench.backends.backend import child_env
from arraybench.core.case import Case
from arraybench.execution.parent import RunConfig, Worker
from arraybench.measure.compilecache import (
    backend_dir,
    compile_cache_env,
    compile_dir,
    entries,
    first_call_state,
    uses_compile_cache,
)
from arraybench.measure.timing import TimerConfig


def test_a_first_call_that_stored_code_compiled_and_one_that_stored_none_was_served():
    assert first_call_state(3, 5, has_cache=True) == "cold"
    assert first_call_state(5, 5, has_cache=True) == "warm"
    assert first_call_state(0, 0, has_cache=False) is None
    assert first_call_state(0, 4, has_cache=False) is None


def test_entries_counts_files_at_any_depth_and_a_missing_directory_as_none(tmp_path: Path):
    assert entries(tmp_path / "not yet") == 0
    (tmp_path / "fxgraph" / "ab").mkdir(parents=True)
    (tmp_path / "fxgraph" / "ab" / "entry").write_bytes(b"x")
    (tmp_path / "kernel.so").write_bytes(b"x")
    assert entries(tmp_path) == 2


def test_each_framework_with_a_persistent_cache_is_pointed_at_the_runs_directory(tmp_path: Path):
    jax = compile_cache_env("jax", tmp_path)
    assert jax["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "jax")
    assert jax["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"  # JAX stores only compiles over 1 s otherwise
    torch = compile_cache_env("torch", tmp_path)
    assert torch["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "torch")
    assert Path(torch["TRITON_CACHE_DIR"]).is_relative_to(tmp_path / "torch")  # counted with the rest
    assert compile_cache_env("numba", tmp_path) == {}
    assert compile_cache_env("tensorflow", tmp_path) == {}  # hits depend on what the process traced before
    assert compile_cache_env("numpy", tmp_path) == {}


def test_only_compiled_modes_of_frameworks_with_a_cache_report_cold_or_warm():
    assert uses_compile_cache("jax", "jit") and uses_compile_cache("torch", "jit")
    assert not uses_compile_cache("torch", "eager")  # compiles nothing: "warm" would be a lie
    assert not uses_compile_cache("numba", "jit") and not uses_compile_cache("tensorflow", "jit")


# One tiny function per framework, compiled and called once in a fresh process; the process prints
# its first call's seconds and the cache's file count before and after it.
FIRST_CALL = {
    "jax": """
import jax, jax.numpy as jnp
f = jax.jit(lambda x: jnp.sin(x) * 2 + jnp.cos(x).sum())
x = jnp.ones(1000).block_until_ready()
call = lambda: f(x).block_until_ready()""",
    "torch": """
import torch
f = torch.compile(lambda x: torch.sin(x) * 2 + torch.cos(x).sum(), dynamic=False)
x = torch.ones(1000)
call = lambda: f(x)""",
}
MEASURE = """
import json, sys, time
from pathlib import Path
from arraybench.measure.compilecache import entries
d = Path(sys.argv[1])
before = entries(d)
t0 = time.perf_counter()
call()
print(json.dumps({"first_s": time.perf_counter() - t0, "before": before, "after": entries(d)}))
"""


def first_call(backend: str, root: Path) -> dict[str, float]:
    be = backend_class(backend)(1, "float32", "cpu")
    env = child_env({**be.env(), **compile_cache_env(backend, root)})
    out = subprocess.run([sys.executable, "-c", FIRST_CALL[backend] + MEASURE, str(backend_dir(backend, root))],
                         env=env, capture_output=True, text=True, timeout=300, check=True).stdout
    return json.loads(out.splitlines()[-1])


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_second_process_loads_the_firsts_code_faster_and_stores_nothing(backend: str, tmp_path: Path):
    if importlib.util.find_spec(backend_class(backend).module) is None:
        pytest.skip(f"{backend} is not installed")
    cold, warm = first_call(backend, tmp_path), first_call(backend, tmp_path)
    assert first_call_state(cold["before"], cold["after"], True) == "cold"
    assert first_call_state(warm["before"], warm["after"], True) == "warm"
    assert warm["first_s"] < cold["first_s"]


def test_a_worker_given_the_runs_cache_compiles_into_it(tmp_path: Path):
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    case = Case("elementwise_add", (("n", 8),), "jax", "jit", "float32", 1)
    worker = Worker(case, RunConfig(TimerConfig(), 0, 60.0, tmp_path / "logs", cache_dir=tmp_path / "cache"),
                    floors=("jit",))  # the empty call's jax.jit is the compile
    try:
        worker.start()
    finally:
        worker.kill()
    assert worker.info is not None
    assert entries(backend_dir("jax", compile_dir(tmp_path / "cache"))) > 0


PREPARED = """
import json, os, sys
from pathlib import Path
from arraybench.backends.torch_backend import TorchBackend
from arraybench.measure.compilecache import entries
be = TorchBackend(1, "float32", "cpu")
be.load()
run = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
be.prepare_jit()
be.prepare_jit()  # once per process
from arraybench.measure import floors
assert floors.measure(be, ["jit"])["empty_call_s"]["jit"] > 0  # the jit floor, compiled per machine too
after_setup = {"run": entries(run), "dir": os.environ["TORCHINDUCTOR_CACHE_DIR"]}
""" + FIRST_CALL["torch"] + MEASURE.replace("print(json.dumps({", "print(json.dumps({**after_setup, ")


def test_torchs_compiler_set_up_goes_to_the_users_cache_and_a_cases_first_call_stays_cold(tmp_path: Path):
    """The set-up (Inductor's C++ toolchain probes, 7-8 s on the VM) and the jit floor's compile are
    shared by a user's runs; the run's cache still starts empty, so a case's first call there compiles
    and says so."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    root = tmp_path / "run"
    env = child_env({**backend_class("torch")(1, "float32", "cpu").env(), **compile_cache_env("torch", root),
                     "ARRAYBENCH_CACHE": str(tmp_path / "user")})
    out = subprocess.run([sys.executable, "-c", PREPARED, str(backend_dir("torch", root))],
                         env=env, capture_output=True, text=True, timeout=300, check=True).stdout
    got = json.loads(out.splitlines()[-1])
    assert got["run"] == 0 and got["dir"] == str(backend_dir("torch", root))  # set-up left the run's cache alone
    assert entries(tmp_path / "user" / "setup" / "torch") > 0
    assert first_call_state(got["before"], got["after"], True) == "cold"


PROBED = """
import json
from torch._inductor import cpu_vec_isa
from arraybench.backends.torch_backend import TorchBackend
probed = []
real = cpu_vec_isa.VecISA.check_build
def counted(self, code):
    probed.append(str(self))
    return real(self, code)
cpu_vec_isa.VecISA.check_build = counted
be = TorchBackend(1, "float32", "cpu")
be.load()
be.prepare_jit()
print(json.dumps({"probed": probed, "picked": str(cpu_vec_isa.pick_vec_isa())}))
"""


def test_inductors_isa_probes_run_once_per_machine_and_pick_the_same_isa(tmp_path: Path):
    """Each probe loads a test library in a fresh Python, which imported torch up to 2.12 (69 s of
    each torch·jit·cpu worker's start on an H200 host): a later process reads the first's answers,
    runs no probe and picks the same ISA; with the answers unreadable, it probes again."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    env = child_env({**backend_class("torch")(1, "float32", "cpu").env(), "ARRAYBENCH_CACHE": str(tmp_path)})

    def process() -> dict:
        out = subprocess.run([sys.executable, "-c", PROBED], env=env, capture_output=True, text=True,
                             timeout=300, check=True).stdout
        return json.loads(out.splitlines()[-1])

    first = process()
    [memo] = (tmp_path / "setup" / "torch").glob("vec-isa-*.json")
    answers = json.loads(memo.read_text())
    assert first["probed"] and len(answers) == len(first["probed"])
    second = process()
    assert second["probed"] == [] and second["picked"] == first["picked"]
    memo.write_text("{not json")
    third = process()
    assert third["probed"] == first["probed"] and third["picked"] == first["picked"]


def test_a_set_up_cache_that_cannot_be_written_costs_the_probes_not_the_compile(tmp_path: Path):
    """The ISA answers go to the user's cache; where it cannot be written (a read-only home), the
    probes still answer and the compile goes on."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")  # the cache's parent is a file: every write fails
    env = child_env({**backend_class("torch")(1, "float32", "cpu").env(), "ARRAYBENCH_CACHE": str(blocked / "cache")})
    script = PROBED.replace("be.prepare_jit()", "from arraybench.backends.torch_backend import IsaProbes\n"
                            "IsaProbes.install(be.torch)\n"
                            "import torch\nprint(float(torch.compile(lambda x: x * 2)(torch.ones(3)).sum()))")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[-2] == "6.0" and json.loads(out.stdout.splitlines()[-1])["probed"]
