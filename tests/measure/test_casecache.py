"""The run's cache of inputs and references: made once, read by the rest, within its cap."""

import numpy as np

from arraybench.measure.casecache import CaseCache, usage


def maker(calls: list, nbytes: int = 800, meta: dict | None = None):
    def make():
        calls.append(1)
        return {"0": np.arange(nbytes // 8, dtype=np.float64)}, dict(meta or {"k": 1})
    return make


def test_an_entry_is_made_once_then_mapped_read_only_by_other_processes(tmp_path):
    calls: list = []
    first = CaseCache(tmp_path).get("in-a", maker(calls))
    assert first.made and calls == [1]
    again = CaseCache(tmp_path).get("in-a", maker(calls))  # another process of the run
    assert not again.made and calls == [1] and again.meta["k"] == 1 and "made_s" in again.meta
    assert isinstance(again.arrays["0"], np.memmap) and not again.arrays["0"].flags.writeable
    np.testing.assert_array_equal(again.arrays["0"], first.arrays["0"])


def test_least_recently_used_entries_go_first_and_the_cap_holds(tmp_path):
    cache = CaseCache(tmp_path, limit=2500)
    calls: list = []
    for name in ("in-a", "in-b", "in-c"):
        cache.get(name, maker(calls, 1000))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in-b", "in-c"]
    CaseCache(tmp_path, limit=2500).get("in-b", maker(calls))  # b is now the most recently used
    cache.get("in-d", maker(calls, 1000))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in-b", "in-d"]
    assert usage(tmp_path) <= 2500 + 4 * 200  # the arrays within the cap; the small meta files beside


def test_an_entry_larger_than_the_cap_is_not_stored_and_each_process_makes_its_own(tmp_path):
    calls: list = []
    big = CaseCache(tmp_path, limit=100).get("in-big", maker(calls, 1000))
    assert big.made and not (tmp_path / "in-big").exists()
    CaseCache(tmp_path, limit=100).get("in-big", maker(calls, 1000))
    assert calls == [1, 1]


def test_without_a_directory_the_last_entry_of_each_kind_stays_in_memory():
    cache, calls = CaseCache(None), []
    cache.get("ref-a", maker(calls))
    cache.get("in-a", maker(calls))
    cache.get("ref-a", maker(calls))
    assert calls == [1, 1]
    cache.get("ref-b", maker(calls))
    cache.get("ref-a", maker(calls))
    assert len(calls) == 4


def test_an_unfinished_entry_is_made_again(tmp_path):
    (tmp_path / "in-a").mkdir(parents=True)  # a writer died before meta.json
    calls: list = []
    assert CaseCache(tmp_path).get("in-a", maker(calls)).made and calls == [1]
