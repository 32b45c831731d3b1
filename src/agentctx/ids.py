"""Identifiers: time-sortable UUIDv7 strings for events, sessions, turns and requests."""

from __future__ import annotations

import re

import uuid_utils

from agentctx.errors import InvalidInput

# User-supplied ids (session ids, call ids, idempotency keys) are free text within
# these limits; agentctx's own ids are UUIDv7 and always match.
_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}$")


# A user id is free text too, within these limits: at most 128 characters, no control
# characters, no lone surrogates, not starting with a space or "*" ("*" names "any user"
# in keys), and never "/": a tenant's users are stored as "<tenant>/<user>", so a "/"
# inside a user id would reach into another tenant's namespace.
USER_ID_MAX_LENGTH = 128
USER_ID_SEPARATOR = "/"
# The same rule as a JSON-schema pattern (what an API schema can state; the function
# below also refuses lone surrogates, which no pattern can name).
USER_ID_PATTERN = r"^[^/*\s\x00-\x1f\x7f][^/\x00-\x1f\x7f]{0,127}$"
_USER_ID_BAD = re.compile(r"[/\x00-\x1f\x7f\ud800-\udfff]")


def validate_user_id(user_id: object) -> str:
    """``user_id`` when it is acceptable as a user id, else ``InvalidInput`` saying why."""
    if not isinstance(user_id, str):
        raise InvalidInput(f"a user id must be a string, got {type(user_id).__name__}")
    if not user_id.strip():
        raise InvalidInput("a user id must not be empty")
    if len(user_id) > USER_ID_MAX_LENGTH:
        raise InvalidInput(f"a user id is at most {USER_ID_MAX_LENGTH} characters")
    if user_id[0] == "*" or user_id[0].isspace():
        raise InvalidInput('a user id must not start with "*" or a space')
    if _USER_ID_BAD.search(user_id):
        raise InvalidInput("a user id must not contain '/', control characters or lone surrogates")
    return user_id


def is_valid_user_id(value: object) -> bool:
    """Whether ``value`` is acceptable as a user id."""
    try:
        validate_user_id(value)
    except InvalidInput:
        return False
    return True


def new_id() -> str:
    """A new UUIDv7 as a string: unique, and sortable by creation time."""
    return str(uuid_utils.uuid7())


def image_id_for(blob_id: str) -> str:
    """The ``img_…`` id of an image, derived from its content hash."""
    return "img_" + blob_id[:24]


def is_valid_id(value: str) -> bool:
    """Whether ``value`` is acceptable as a user-supplied identifier."""
    return bool(_ID_PATTERN.match(value))
