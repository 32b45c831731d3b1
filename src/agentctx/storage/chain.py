"""The tamper-evident hash chain over a session's events.

``hash(n) = sha256(hash(n-1) ‖ canonical_json(row(n) without hash))`` where the
row is the event exactly as stored (so ``verify`` checks what the database
holds, independent of how the Python model would normalize it) and the first
event chains to the empty string. The session row keeps the last seq and hash,
so removing events at the end is caught as well as changing, removing or
reordering any event in the middle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from agentctx.events import Event
from agentctx.jsonvalue import canonical_json

GENESIS_HASH = ""

# Every stored field of an event but its hash. The material is hashed as a JSON object
# with sorted keys, so the order here does not matter.
HASHED_COLUMNS = tuple(name for name in Event.model_fields if name != "hash")


def format_ts(ts: datetime) -> str:
    """The canonical text of a timestamp: UTC, microseconds, ``Z``."""
    return ts.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def chain_hash(prev_hash: str, row: Mapping[str, Any]) -> str:
    """The hash of an event row chained to the hash of the event before it."""
    material = {name: row[name] for name in HASHED_COLUMNS}
    material["ts"] = format_ts(row["ts"])
    digest = hashlib.sha256(prev_hash.encode("ascii"))
    digest.update(b"\n")
    digest.update(canonical_json(material))
    return digest.hexdigest()
