"""Identifiers: time-sortable UUIDv7 strings for events, sessions, turns and requests."""

from __future__ import annotations

import re

import uuid_utils

from agentctx.errors import InvalidInput

# User-supplied ids (session ids, call ids, idempotency keys) are free text within
# these limits; agentctx's own ids are UUIDv7 and always match.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}$"
"""What a user-supplied id looks like (the OpenAPI schema states the same pattern)."""
_ID_PATTERN = re.compile(ID_PATTERN)


# A user id, as a caller names it: what the engine accepts as an id, without "/". A
# tenant's users are stored as "<tenant>/<user>", so a "/" inside a user id would reach
# into another tenant's namespace; "*" (any user, in API keys), spaces, control
# characters and lone surrogates are refused by the same rule.
USER_ID_MAX_LENGTH = 128
USER_ID_SEPARATOR = "/"
USER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,127}$"
_USER_ID = re.compile(USER_ID_PATTERN)


def validate_user_id(user_id: object) -> str:
    """``user_id`` when it is acceptable as a user id named by a caller, else
    ``InvalidInput`` saying why."""
    if not isinstance(user_id, str):
        raise InvalidInput(f"a user id must be a string, got {type(user_id).__name__}")
    if not _USER_ID.fullmatch(user_id):
        # Not the value: user ids are often e-mail addresses, and errors reach logs.
        raise InvalidInput(
            f"invalid user id: 1-{USER_ID_MAX_LENGTH} characters, letters, "
            "digits and ._:@+=- (starting with a letter or digit; no '/')"
        )
    return user_id


def is_valid_user_id(value: object) -> bool:
    """Whether ``value`` is acceptable as a user id named by a caller."""
    return isinstance(value, str) and _USER_ID.fullmatch(value) is not None


def new_id() -> str:
    """A new UUIDv7 as a string: unique, and sortable by creation time."""
    return str(uuid_utils.uuid7())


def image_id_for(blob_id: str) -> str:
    """The ``img_…`` id of an image, derived from its content hash."""
    return "img_" + blob_id[:24]


def is_valid_id(value: str) -> bool:
    """Whether ``value`` is acceptable as a user-supplied identifier."""
    return bool(_ID_PATTERN.match(value))


def check_id(name: str, value: object, *, max_length: int = 128) -> str:
    """``value`` as a user-supplied identifier; ``InvalidInput`` naming ``name`` otherwise.

    ``max_length``: shorter than 128 where the column is (event and turn ids: 64). The
    message states the rule, not the value: user ids are often e-mail addresses.
    """
    if not isinstance(value, str) or not is_valid_id(value) or len(value) > max_length:
        raise InvalidInput(
            f"invalid {name}: 1-{max_length} characters, letters, digits and ._:@/+=- "
            "(starting with a letter or digit)"
        )
    return value


def check_optional_id(name: str, value: object, *, max_length: int = 128) -> str | None:
    """Like :func:`check_id`, with None allowed."""
    return None if value is None else check_id(name, value, max_length=max_length)
