"""Run ids: made when a run starts, and derived for results files written before runs had them."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

from arraybench.results.header import RunHeader


def new_run_id() -> str:
    """Sortable by time (UTC), typeable as a prefix, and unique even for runs started in the same second."""
    return time.strftime("%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(3)


def run_id(header: RunHeader | Mapping[str, Any]) -> str:
    """The header's run id; files written before runs had ids get one derived from their header (its JSON)."""
    typed = header if isinstance(header, RunHeader) else RunHeader.from_json(header)
    if typed.run_id:
        return str(typed.run_id)
    started = "".join(ch for ch in str(typed.started or "") if ch.isdigit())[:14]
    digest = hashlib.sha1(json.dumps(typed.to_json(), sort_keys=True, default=str).encode()).hexdigest()[:6]
    return f"{started[:8]}-{started[8:]}-{digest}"
