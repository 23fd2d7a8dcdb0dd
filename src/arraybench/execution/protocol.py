"""The messages between a run's parent and its child processes, and their one-line JSON form.

Both sides import this module: the parent (parent.Worker) sends a CaseRequest per case on the
child's stdin; the child (child.py) answers once with ReadyReply or UnavailableReply when its
framework has loaded (or failed to), then with one RecordReply per request. A request with a
`visit_s` is measured in turns: the child answers PausedReply before its first stretch of sampling
and after each one, and waits for a ResumeRequest (sample on) or a FinishRequest (stop: its
RecordReply follows). One JSON object per line,
tagged with its "type". Imports no framework: the child loads it before pinning its CPUs.
"""

from __future__ import annotations

import json
import signal
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Self, TypeVar

from arraybench.core.case import Case
from arraybench.measure.timing import TimerConfig
from arraybench.results.record import CaseRecord

# The environment variable of random length the parent gives each worker (unless --fixed-layout):
# it moves the worker's stack; the worker records its length with its layout.
LAYOUT_PAD_VAR = "ARRAYBENCH_LAYOUT_PAD"

# The signal on which a worker writes every thread's Python stack to its log (faulthandler), the
# parent's one message outside the pipe: it still answers while the worker is stuck in a framework's C code.
STACKS_SIGNAL = signal.SIGUSR1


class ProtocolError(Exception):
    """A line that is no message of this protocol, or a message where another was due."""


@dataclass(frozen=True)
class CaseRequest:
    """Parent to child: measure this case with this timer; inputs come from the run's seed.
    `visit_s`: sample in turns of about this many seconds, pausing between them (PausedReply).
    `host_level`: the host reference's full-speed level over the processes the parent saw last
    (Timer's `level`: sampling on through a slow spell); None where it has seen none."""

    TYPE: ClassVar[str] = "request"
    case: Case
    timer: TimerConfig
    seed: int
    visit_s: float | None = None
    host_level: float | None = None

    def fields(self) -> dict[str, Any]:
        return {"case": self.case.to_dict(), "timer": asdict(self.timer), "seed": self.seed, "visit_s": self.visit_s,
                "host_level": self.host_level}

    @classmethod
    def of(cls, msg: dict[str, Any]) -> CaseRequest:
        return cls(Case.from_dict(msg["case"]), TimerConfig(**msg["timer"]), msg["seed"], msg.get("visit_s"),
                   msg.get("host_level"))


@dataclass(frozen=True)
class Signal:
    """A message that carries nothing but its type."""

    def fields(self) -> dict[str, Any]:
        return {}

    @classmethod
    def of(cls, msg: dict[str, Any]) -> Self:
        return cls()


@dataclass(frozen=True)
class ResumeRequest(Signal):
    """Parent to child, after a PausedReply: take the next turn of sampling."""

    TYPE: ClassVar[str] = "resume"


@dataclass(frozen=True)
class FinishRequest(Signal):
    """Parent to child, after a PausedReply: stop sampling and send the record."""

    TYPE: ClassVar[str] = "finish"


@dataclass(frozen=True)
class PausedReply:
    """Child to parent, in a request with `visit_s`: a turn of sampling ended (or is about to begin);
    whether its own stopping rule is met (`done`) and its median so far. It waits for ResumeRequest or
    FinishRequest."""

    TYPE: ClassVar[str] = "paused"
    done: bool = False
    median_s: float | None = None

    def fields(self) -> dict[str, Any]:
        return {"done": self.done, "median_s": self.median_s}

    @classmethod
    def of(cls, msg: dict[str, Any]) -> PausedReply:
        return cls(bool(msg.get("done")), msg.get("median_s"))


@dataclass(frozen=True)
class ReadyReply:
    """Child to parent, once: the framework loaded; what it is (version, devices, allocator, floors)."""

    TYPE: ClassVar[str] = "ready"
    info: dict[str, Any]

    def fields(self) -> dict[str, Any]:
        return {"info": self.info}

    @classmethod
    def of(cls, msg: dict[str, Any]) -> ReadyReply:
        return cls(msg["info"])


@dataclass(frozen=True)
class UnavailableReply:
    """Child to parent, once, instead of ReadyReply: the framework cannot run here, and why."""

    TYPE: ClassVar[str] = "unavailable"
    reason: str

    def fields(self) -> dict[str, Any]:
        return {"reason": self.reason}

    @classmethod
    def of(cls, msg: dict[str, Any]) -> UnavailableReply:
        return cls(msg["reason"])


@dataclass(frozen=True)
class RecordReply:
    """Child to parent, per request: the case's record, whatever happened to it."""

    TYPE: ClassVar[str] = "record"
    record: CaseRecord

    def fields(self) -> dict[str, Any]:
        return {"record": self.record.to_json()}

    @classmethod
    def of(cls, msg: dict[str, Any]) -> RecordReply:
        return cls(CaseRecord.from_json(msg["record"]))


Reply = ReadyReply | UnavailableReply | RecordReply | PausedReply
Request = CaseRequest | ResumeRequest | FinishRequest
M = TypeVar("M", bound="Message")
Message = Request | Reply
MESSAGES: dict[str, type[Message]] = {m.TYPE: m for m in (CaseRequest, ResumeRequest, FinishRequest, ReadyReply,
                                                          UnavailableReply, RecordReply, PausedReply)}


def encode(message: Message) -> str:
    """One line. Values JSON cannot hold (a framework's version object in `info`) go as their str."""
    return json.dumps({"type": message.TYPE, **message.fields()}, default=str) + "\n"


def decode(line: str | bytes) -> Message:
    try:
        msg = json.loads(line)
        kind = MESSAGES[msg["type"]]
    except (ValueError, TypeError, KeyError):
        raise ProtocolError(f"not a message: {line[:200]!r}") from None
    return kind.of(msg)


def decode_request(line: str | bytes) -> CaseRequest:
    return expect(decode(line), CaseRequest)


def decode_reply(line: str | bytes) -> Reply:
    message = decode(line)
    if isinstance(message, CaseRequest | ResumeRequest | FinishRequest):
        raise ProtocolError("a child sent a request")
    return message


def expect(message: Message, kind: type[M]) -> M:
    """`message`, where it is a `kind`; else the ProtocolError that says what came instead."""
    if not isinstance(message, kind):
        raise ProtocolError(f"expected a {kind.__name__}, got a {type(message).__name__}")
    return message
