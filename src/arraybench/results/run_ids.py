"""Run ids: made when a run starts, and derived for results files written before runs had them."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from typing import Any


def new_run_id() -> str:
    """Sortable by time (UTC), typeable as a prefix, and unique even for runs started in the same second."""
    return time.strftime("%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(3)


def run_id(header: dict[str, Any]) -> str:
    """The header's run id; files written before runs had ids get one derived from their header."""
    if header.get("run_id"):
        return str(header["run_id"])
    started = "".join(ch for ch in str(header.get("started", "")) if ch.isdigit())[:14]
    digest = hashlib.sha1(json.dumps(header, sort_keys=True, default=str).encode()).hexdigest()[:6]
    return f"{started[:8]}-{started[8:]}-{digest}"
