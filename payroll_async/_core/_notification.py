"""The notification parser: a webhook body as a ``WebhookEvent`` and back, lenient where a
receiver can be, strict on ids and bounded (the converter registers it for WebhookEvent)."""

from __future__ import annotations

import logging
from typing import Any

from ..models import WebhookEvent, event_type
from . import _assumed
from ._exceptions import InvalidArgumentError
from ._scalars import format_datetime, parse_datetime
from ._visible import visible

__all__ = ["MAX_DEPTH", "MAX_EVENT_ID_LENGTH", "structure_event", "unstructure_event"]

MAX_EVENT_ID_LENGTH = 256
"""The longest ``eventId`` accepted: receivers remember ids, so they are bounded."""
MAX_DEPTH = 64
"""The deepest nesting of a notification body accepted (a notification is shallow; a body
nested a thousand levels would reach handlers that cannot print or store it)."""
_EVENT_KEYS = frozenset(
    {
        _assumed.EVENT_ID_KEY,
        _assumed.EVENT_TYPE_KEY,
        _assumed.EVENT_OCCURRED_AT_KEY,
        _assumed.EVENT_DATA_KEY,
    }
)


def structure_event(body: object, _: object = None) -> WebhookEvent:
    """A notification body as a WebhookEvent: lenient where a receiver can be, not on ids.

    Registered as the converter's hook for WebhookEvent, so ``from_dict(WebhookEvent,
    body)`` reads a body as the receiver does.
    """
    if not isinstance(body, dict):
        raise InvalidArgumentError("the body is not a JSON object")
    kind = body.get(_assumed.EVENT_TYPE_KEY)
    if not isinstance(kind, str) or not kind:
        raise InvalidArgumentError(f"the body has no {_assumed.EVENT_TYPE_KEY!r}")
    event_id = body.get(_assumed.EVENT_ID_KEY)
    # Required: without an id no redelivery can be recognised, so every one would run the
    # handlers again.
    if not isinstance(event_id, str) or not 1 <= len(event_id) <= MAX_EVENT_ID_LENGTH:
        raise InvalidArgumentError(
            f"{_assumed.EVENT_ID_KEY!r} must be a non-empty string of at most "
            f"{MAX_EVENT_ID_LENGTH} characters"
        )
    occurred_at = None
    raw_time = body.get(_assumed.EVENT_OCCURRED_AT_KEY)
    if raw_time is not None:
        try:
            occurred_at = parse_datetime(raw_time)
        except ValueError:
            logging.getLogger("payroll_async.events").warning(
                "notification %s has an unreadable occurredAt %r", visible(event_id), raw_time
            )
    raw_data = body.get(_assumed.EVENT_DATA_KEY)
    data: dict[str, Any] = dict(raw_data) if isinstance(raw_data, dict) else {}
    if raw_data is not None and not isinstance(raw_data, dict):
        data[_assumed.EVENT_DATA_KEY] = raw_data
    for key, value in body.items():
        if key not in _EVENT_KEYS:
            data.setdefault(key, value)
    return WebhookEvent(
        event_type=event_type(kind), event_id=event_id, occurred_at=occurred_at, data=data
    )


def unstructure_event(event: WebhookEvent) -> dict[str, Any]:
    """A WebhookEvent as a notification body."""
    return {
        _assumed.EVENT_ID_KEY: event.event_id,
        _assumed.EVENT_TYPE_KEY: str(event.event_type),
        _assumed.EVENT_OCCURRED_AT_KEY: None
        if event.occurred_at is None
        else format_datetime(event.occurred_at),
        _assumed.EVENT_DATA_KEY: dict(event.data),
    }
