"""Where a hung or stopped worker was: the innermost frame of faulthandler's dump of its threads."""

from __future__ import annotations

from arraybench.execution.parent import innermost_frame

DUMP = """hang: sleeping
Thread 0x00007f0a1b2c3700 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 331 in wait
  File "/usr/lib/python3.11/threading.py", line 629 in wait

Current thread 0x00007f0a2d4e5740 (most recent call first):
  File "/work/tests/fixtures/faulty_workload.py", line 66 in forever
  File "/work/src/arraybench/measure/timing.py", line 198 in _block
  File "/work/src/arraybench/measure/timing.py", line 240 in run
"""


def test_the_innermost_frame_is_the_current_threads_first():
    assert innermost_frame(DUMP) == "fixtures/faulty_workload.py:66 in forever"


def test_a_dump_without_a_current_thread_names_no_frame():
    assert innermost_frame("hang: sleeping\n") is None
    assert innermost_frame("Current thread 0x1 (most recent call first):\n  <no Python frame>\n") is None
