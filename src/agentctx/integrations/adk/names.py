"""ADK names as agentctx ids, and the reserved ids of the scoped-state stores.

agentctx ids are ``[A-Za-z0-9][A-Za-z0-9._:@/+=-]*`` (user ids without ``/``); ADK app
names, user ids and session ids are free text (app names are usually Python
identifiers, with ``_``). :func:`to_id` escapes every other character (and ``/`` and
``=``) as ``=XX`` per UTF-8 byte, and puts ``0==`` before an id that would not start
with a letter or digit, so the mapping is one-to-one and :func:`from_id` reverses it; names that are
already valid ids (``u1``, a UUID) stay as they are.
"""

from __future__ import annotations

import re

from agentctx.errors import InvalidInput
from agentctx.ids import check_id

_KEPT = re.compile(r"[A-Za-z0-9.:@+-]")
_ESCAPE = re.compile(r"=([0-9A-F]{2})")
_LEADING = "0=="  # before an id that would not start with a letter or digit

STATE_MARK = "=="
"""Ends a reserved id: an escaped name has ``==`` only at its start (``0==``), so no
ADK name maps onto a reserved id."""

APP_STATE_USER = "adk-app-state" + STATE_MARK
"""The agentctx user whose sessions (one per app, the app's id as session id) hold each
app's ``app:`` state."""

USER_STATE_SESSION = "adk-user-state" + STATE_MARK
"""The agentctx session (of the user, with the app as agent) holding a user's ``user:``
state."""


def to_id(name: str, what: str) -> str:
    """The agentctx id of an ADK name (``InvalidInput`` naming ``what`` when it is
    empty or longer than 128 characters once escaped)."""
    if not isinstance(name, str) or not name:
        raise InvalidInput(f"invalid {what}: an ADK {what} must be a non-empty string")
    out: list[str] = []
    for char in name:
        if _KEPT.match(char):
            out.append(char)
        else:
            out.extend(f"={byte:02X}" for byte in char.encode("utf-8"))
    escaped = "".join(out)
    if not escaped[0].isalnum():
        escaped = _LEADING + escaped
    return check_id(what, escaped)


def from_id(value: str) -> str:
    """The ADK name an id made by :func:`to_id` stands for."""
    if "=" not in value:
        return value
    value = value.removeprefix(_LEADING)
    out = bytearray()
    index = 0
    while index < len(value):
        found = _ESCAPE.match(value, index)
        if found is not None:
            out.append(int(found.group(1), 16))
            index = found.end()
        else:
            out.extend(value[index].encode("ascii"))
            index += 1
    return out.decode("utf-8")
