"""Identifiers: time-sortable UUIDv7 strings for events, sessions, turns and requests."""

from __future__ import annotations

import re

import uuid_utils

from agentctx.errors import InvalidInput

# User-supplied ids (session ids, call ids, idempotency keys) are free text within
# these limits; agentctx's own ids are UUIDv7 and always match.
_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}$")


def new_id() -> str:
    """A new UUIDv7 as a string: unique, and sortable by creation time."""
    return str(uuid_utils.uuid7())


def image_id_for(blob_id: str) -> str:
    """The ``img_…`` id of an image, derived from its content hash."""
    return "img_" + blob_id[:24]


def is_valid_id(value: str) -> bool:
    """Whether ``value`` is acceptable as a user-supplied identifier."""
    return bool(_ID_PATTERN.match(value))


def check_id(name: str, value: object) -> str:
    """``value`` as a user-supplied identifier; ``InvalidInput`` naming ``name`` otherwise.

    The message states the rule, not the value: user ids are often e-mail addresses.
    """
    if not isinstance(value, str) or not is_valid_id(value):
        raise InvalidInput(
            f"invalid {name}: 1-128 characters, letters, digits and ._:@/+=- "
            "(starting with a letter or digit)"
        )
    return value


def check_optional_id(name: str, value: object) -> str | None:
    """Like :func:`check_id`, with None allowed."""
    return None if value is None else check_id(name, value)
