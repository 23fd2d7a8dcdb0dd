"""Memory layout varies between a case's processes, so its interval sees what layout moves (issue 23)."""

import numpy as np

from arraybench.backends.numpy_backend import NumpyBackend
from arraybench.core.case import Case
from arraybench.execution import child
from arraybench.execution.parent import worker_env
from arraybench.execution.protocol import LAYOUT_PAD_VAR
from arraybench.measure.case_executor import LINE, PAGE, CaseExecutor, input_seed, placed
from arraybench.measure.hostspeed import measure_memory_reference
from arraybench.measure.timing import TimerConfig
from arraybench.workloads import WORKLOADS

TINY = TimerConfig(warmup_time=0.0, min_time=0.0, min_samples=3, max_time=0.01, processes=1)
CASE = Case("elementwise_add", (("n", 5000),), "numpy", "eager", "float32", 1)


def test_a_placed_copy_starts_at_its_offset_within_a_page_and_holds_the_same_values():
    a = np.arange(1000, dtype=np.float32).reshape(10, 100)
    for offset in (0, 64, 4032):
        b = placed(a, offset)
        assert b.ctypes.data % PAGE == offset and b.flags.writeable
        np.testing.assert_array_equal(a, b)


def executor(layout):
    be = NumpyBackend(1, "float32")
    be.load()
    return CaseExecutor(be, layout=layout)


def test_each_process_places_the_inputs_at_random_page_offsets_and_records_them():
    wl = WORKLOADS["elementwise_add"]
    seen = set()
    for _ in range(8):  # eight processes
        ex = executor({"heap_pad_bytes": 128, "env_pad_bytes": 7})
        host, _, offsets = ex.inputs(wl, CASE, input_seed(0, CASE))
        assert [a.ctypes.data % PAGE for a in host] == offsets
        assert all(o % LINE == 0 and 0 <= o < PAGE for o in offsets)
        seen.add(tuple(offsets))
    assert len(seen) > 1
    rec = executor({"heap_pad_bytes": 128, "env_pad_bytes": 7}).run(CASE, TINY, 0)
    assert rec.status == "ok", rec.error
    assert rec.layout["heap_pad_bytes"] == 128 and len(rec.layout["input_offsets"]) == 2


def test_fixed_layout_places_nothing_and_records_no_layout():
    rec = executor(None).run(CASE, TINY, 0)
    assert rec.status == "ok" and rec.layout is None


def test_the_worker_pads_its_heap_and_the_parent_its_environment_unless_the_layout_is_fixed(monkeypatch):
    monkeypatch.setenv(LAYOUT_PAD_VAR, "x" * 100)
    pads = [child.perturb_layout() for _ in range(5)]
    assert all(p["env_pad_bytes"] == 100 and p["heap_pad_bytes"] % 64 == 0 for p in pads)
    assert len({p["heap_pad_bytes"] for p in pads}) > 1
    lengths = {len(worker_env(CASE)[LAYOUT_PAD_VAR]) for _ in range(5)}
    assert len(lengths) > 1 and max(lengths) < 4096
    assert LAYOUT_PAD_VAR not in worker_env(CASE, fixed_layout=True)


def test_the_memory_reference_times_one_copy_through_a_buffer_larger_than_the_last_level_cache(fake_clock):
    from arraybench.measure import hostspeed

    def kernel():
        fake_clock.advance(2e-3)

    assert measure_memory_reference(fake_clock, kernel) == 2e-3
    llc = hostspeed.last_level_cache_bytes()
    assert llc is None or llc >= 2**20
