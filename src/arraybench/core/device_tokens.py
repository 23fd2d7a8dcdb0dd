"""Device tokens (`cpu`, `gpu:4`, `gpu:0,2`, `tpu:all`): what one computation runs on, parsed and normalised.

A token names a kind of device, as the framework calls it (cpu, gpu, tpu, rocm, ...), and which of
that kind: `KIND` is one device (the first), `KIND:N` the first N, `KIND:I,J,...` those ids and
`KIND:all` every one the framework sees. The normalised token is what a case's `device` holds, so
one set of devices always gives one case id: `gpu:1` is `gpu`, `gpu:0,1` is `gpu:2`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from arraybench.errors import UsageError

# Other names for a kind: CUDA is what torch and JAX's platform call the NVIDIA GPU.
ALIASES = {"cuda": "gpu"}
_KIND = re.compile(r"[a-z][a-z0-9_]*")
SYNTAX = "KIND, KIND:N, KIND:all or KIND:I,J,... (e.g. cpu, cpu:4, gpu:0,1, tpu:all)"


@dataclass(frozen=True)
class DeviceSpec:
    """One device token: the kind, and the ids of that kind (None: all the framework sees)."""

    kind: str
    ids: tuple[int, ...] | None = (0,)

    @classmethod
    def parse(cls, token: str) -> DeviceSpec:
        """`cpu:4` -> DeviceSpec("cpu", (0, 1, 2, 3)); a UsageError in one line for a bad token."""
        text = token.strip().lower()
        kind, sep, rest = text.partition(":")
        kind = ALIASES.get(kind, kind)
        if not _KIND.fullmatch(kind):
            raise UsageError(f"bad device {token!r}: expected {SYNTAX}")
        if not sep:
            return cls(kind)
        if rest == "all":
            return cls(kind, None)
        try:
            numbers = [int(x) for x in rest.split(",")]
        except ValueError:
            raise UsageError(f"bad device {token!r}: expected {SYNTAX}") from None
        if any(i < 0 for i in numbers):
            raise UsageError(f"bad device {token!r}: device counts and ids are 0 or more")
        if len(numbers) == 1:
            if numbers[0] < 1:
                raise UsageError(f"bad device {token!r}: {kind}:N is a count of devices, at least 1 "
                                 f"(ids need two or more: {kind}:I,J)")
            return cls(kind, tuple(range(numbers[0])))
        if len(set(numbers)) != len(numbers):
            raise UsageError(f"bad device {token!r}: an id is repeated")
        return cls(kind, tuple(sorted(numbers)))

    @property
    def token(self) -> str:
        """The normalised token: `cpu`, `cpu:4`, `gpu:1,3`, `gpu:all`."""
        if self.ids is None:
            return f"{self.kind}:all"
        if self.ids == (0,):
            return self.kind
        if self.ids == tuple(range(len(self.ids))):
            return f"{self.kind}:{len(self.ids)}"
        return f"{self.kind}:{','.join(map(str, self.ids))}"

    @property
    def count(self) -> int | None:
        """How many devices; None for `all` (known only once the framework is loaded)."""
        return None if self.ids is None else len(self.ids)

    @property
    def single(self) -> bool:
        return self.ids is not None and len(self.ids) == 1


def parse_devices(items: Iterable[str]) -> list[str]:
    """`["cpu", "gpu:0", "1"]` (the comma-separated parts of --devices) -> ["cpu", "gpu:2"].

    A bare integer continues the previous token's id list (`cpu,gpu:0,1` is cpu and gpus 0 and 1);
    the tokens are normalised (DeviceSpec.token) and each kept once, in order.
    """
    tokens: list[str] = []
    for raw in (p.strip() for item in items for p in item.split(",")):
        if not raw:
            continue
        if raw.isdigit():
            if not tokens or ":" not in tokens[-1] or tokens[-1].endswith(":all"):
                raise UsageError(f"bad --devices: {raw!r} follows no KIND:I id list (expected {SYNTAX})")
            tokens[-1] += f",{raw}"
        else:
            tokens.append(raw)
    out: list[str] = []
    for t in tokens:
        token = DeviceSpec.parse(t).token
        if token not in out:
            out.append(token)
    return out


def kind_of(device: str) -> str:
    """The kind of a device token: `gpu:0,1` -> `gpu` (what `device == "gpu"` meant before counts)."""
    kind = device.partition(":")[0].strip().lower()
    return ALIASES.get(kind, kind)


def device_count(device: str) -> int | None:
    """How many devices a normalised token names; None for `KIND:all`."""
    return DeviceSpec.parse(device).count
