"""protocol: the messages between a run's parent and its children, encoded and decoded in one place."""

import io
import subprocess
import sys
from dataclasses import replace

import pytest

from arraybench.core.case import Case
from arraybench.execution import child, protocol
from arraybench.execution.protocol import (
    CaseRequest,
    ProtocolError,
    ReadyReply,
    RecordReply,
    UnavailableReply,
)
from arraybench.measure.timing import TimerConfig, Turn
from arraybench.workloads import blank_record

CASE = Case("elementwise_add", (("n", 10),), "numpy", "eager", "float64", 1)


def test_every_message_comes_back_as_it_was_sent_on_one_line():
    record = replace(blank_record(CASE, "ok"), samples_s=(1e-3, 2e-3), backend_info={"version": "2.0"})
    for message in (CaseRequest(CASE, TimerConfig(min_time=0.01, processes=3), 7), ReadyReply({"version": "2.0"}),
                    UnavailableReply("jax is not installed"), RecordReply(record)):
        line = protocol.encode(message)
        assert line.endswith("\n") and line.count("\n") == 1
        assert protocol.decode(line.encode()) == message


def test_a_line_that_is_no_message_or_the_wrong_message_says_so():
    with pytest.raises(ProtocolError, match="not a message"):
        protocol.decode(b"Segmentation fault\n")
    with pytest.raises(ProtocolError, match="not a message"):
        protocol.decode('{"type": "hello"}')
    with pytest.raises(ProtocolError, match="a child sent a request"):
        protocol.decode_reply(protocol.encode(CaseRequest(CASE, TimerConfig(), 0)))
    with pytest.raises(ProtocolError, match="expected a RecordReply, got a ReadyReply"):
        protocol.expect(protocol.decode_reply(protocol.encode(ReadyReply({}))), RecordReply)


def test_the_child_answers_each_request_with_its_record_and_its_backends_info(monkeypatch):
    class Executor:
        def run(self, case, timer, seed, level=None):
            seen.append((case, timer, seed, level))
            return blank_record(case, "error", "MemoryError: no room")

    seen, sent = [], []
    request = CaseRequest(CASE, TimerConfig(min_samples=3), 5, host_level=2e-5)
    monkeypatch.setattr(sys, "stdin", io.StringIO(protocol.encode(request) * 2))
    child.serve(Executor(), {"version": "2.0"}, 2**30, sent.append)  # type: ignore[arg-type]
    assert seen == [(CASE, TimerConfig(min_samples=3), 5, 2e-5)] * 2  # the parent's level of the host, passed on
    assert [type(r) for r in sent] == [RecordReply, RecordReply]
    assert sent[0].record.backend_info == {"version": "2.0"}
    assert sent[0].record.error == "MemoryError: no room (over --memory-limit 1 GiB)"


def test_the_child_module_imports_no_framework_before_it_pins_its_cpus():
    frameworks = {"numpy", "numba", "jax", "tensorflow", "torch", "cupy"}
    code = f"import sys, arraybench.execution.child; print(sorted({frameworks!r} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_turns_are_three_more_messages_and_a_request_may_ask_for_them():
    request = CaseRequest(CASE, TimerConfig(), 7, visit_s=0.05)
    for message in (request, protocol.ResumeRequest(), protocol.FinishRequest(), protocol.PausedReply(),
                    protocol.PausedReply(True, 1.5e-6)):
        assert protocol.decode(protocol.encode(message)) == message
    old = protocol.encode(CaseRequest(CASE, TimerConfig(), 7)).replace(', "visit_s": null', "")
    assert protocol.decode(old) == CaseRequest(CASE, TimerConfig(), 7)  # a request without it: one stretch
    with pytest.raises(ProtocolError, match="a child sent a request"):
        protocol.decode_reply(protocol.encode(protocol.ResumeRequest()))


def test_the_child_pauses_between_turns_until_the_parent_resumes_or_finishes_it(monkeypatch):
    heard = []

    class Executor:
        def run(self, case, timer, seed, pause=None, visit_time=None):
            assert visit_time == 0.05
            heard.append(pause(Turn(False, None)))
            heard.append(pause(Turn(True, 2e-6)))
            return blank_record(case, "ok")

    sent = []
    lines = protocol.encode(CaseRequest(CASE, TimerConfig(), 5, visit_s=0.05)) + protocol.encode(
        protocol.ResumeRequest()) + protocol.encode(protocol.FinishRequest())
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    child.serve(Executor(), {}, None, sent.append)  # type: ignore[arg-type]
    assert [type(r) for r in sent] == [protocol.PausedReply, protocol.PausedReply, RecordReply]
    assert sent[1] == protocol.PausedReply(True, 2e-6) and heard == [True, False]
