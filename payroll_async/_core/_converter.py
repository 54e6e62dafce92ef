"""The one cattrs converter: camelCase renames, UUID and datetime hooks, strict scalars.

Every attrs model gets its hooks from one factory (keyed on ``attrs.has``, as lsprotocol
does), generated on first use; the hot path (a page of a listing) calls the generated
structure functions directly. Unknown fields are ignored and unknown event types stay
plain ``str`` so that a newer service does not break an older SDK. A webhook notification
is read by ``payroll_async.events``, which registers its hooks here.
"""

from __future__ import annotations

import datetime
import logging
import re
import sys
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ..models import EventType, WebhookEvent, event_type
from . import _assumed, _json
from ._exceptions import InvalidArgumentError
from ._visible import visible

__all__ = [
    "converter",
    "format_datetime",
    "from_dict",
    "parse_datetime",
    "parse_uuid",
    "to_camel",
    "to_dict",
    "to_json",
]

T = TypeVar("T")

_UUID = uuid.UUID
_SAFE_UNKNOWN = uuid.SafeUUID.unknown
_new = object.__new__
_setattr = object.__setattr__


_fromhex = bytes.fromhex
_from_bytes = int.from_bytes


def parse_uuid(value: object, _: object = None) -> uuid.UUID:
    """Parse the canonical 8-4-4-4-12 form only (no braces, no urn:, no bare hex)."""
    if type(value) is not str or len(value) != 36:
        raise ValueError(f"not a UUID: {value!r}")
    if value[8] != "-" or value[13] != "-" or value[18] != "-" or value[23] != "-":
        raise ValueError(f"not a UUID: {value!r}")
    hexdigits = value.replace("-", "")
    # isalnum rules out spaces, signs and underscores, which fromhex or int() would let by.
    if len(hexdigits) != 32 or not hexdigits.isalnum():
        raise ValueError(f"not a UUID: {value!r}")
    try:
        number = _from_bytes(_fromhex(hexdigits), "big")
    except ValueError:
        raise ValueError(f"not a UUID: {value!r}") from None
    # The same object uuid.UUID(value) builds, without its generic parsing: this runs for
    # every identifier of every item of a bulk export.
    result = _new(_UUID)
    _setattr(result, "int", number)
    _setattr(result, "is_safe", _SAFE_UNKNOWN)
    return result


_fromisoformat = datetime.datetime.fromisoformat
# Python 3.10's fromisoformat accepts neither "Z" nor fractions of other than 3 or 6 digits.
_ISO_310 = re.compile(
    r"(?P<base>\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d+))?"
    r"(?P<tz>Z|z|[+-]\d{2}:?\d{2})\Z"
)


def _normalise_iso(value: str) -> str:
    match = _ISO_310.match(value)
    if match is None:
        raise ValueError(f"not an ISO 8601 date-time with a time zone: {value!r}")
    frac = (match["frac"] or "")[:6].ljust(6, "0")
    tz = match["tz"]
    if tz in ("Z", "z"):
        tz = "+00:00"
    elif ":" not in tz:
        tz = f"{tz[:3]}:{tz[3:]}"
    return f"{match['base']}.{frac}{tz}"


def parse_datetime(value: object, _: object = None) -> datetime.datetime:
    """Parse an ISO 8601 date-time that carries a time zone (``Z`` or an offset)."""
    if type(value) is not str:
        raise ValueError(f"not a date-time string: {value!r}")
    try:
        result = _fromisoformat(value)
    except ValueError:
        if sys.version_info >= (3, 11):
            if "z" not in value:
                raise
            # RFC 3339 allows a lower-case "z" (and "t"), which fromisoformat does not.
            result = _fromisoformat(value.replace("z", "Z"))
        else:
            result = _fromisoformat(_normalise_iso(value))
    if result.tzinfo is None:
        raise ValueError(f"date-time without a time zone: {value!r}")
    return result


def format_datetime(value: datetime.datetime) -> str:
    """ISO 8601, with ``Z`` for UTC, as the service writes date-times."""
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _strict(kind: type[Any], name: str) -> Callable[[object, object], Any]:
    def hook(value: object, _: object) -> Any:
        if type(value) is not kind:
            raise ValueError(f"expected {name}, got {type(value).__name__}: {value!r}")
        return value

    return hook


def _structure_int(value: object, _: object) -> int:
    if type(value) is not int:
        raise ValueError(f"expected an integer, got {type(value).__name__}: {value!r}")
    return value


def _structure_event_type(value: object, _: object) -> EventType | str:
    if type(value) is not str:
        raise ValueError(f"expected an event type string, got {value!r}")
    return event_type(value)


def _structure_event_types(value: object, _: object) -> tuple[EventType | str, ...]:
    if type(value) is not list:
        raise ValueError(f"expected a list of event types, got {value!r}")
    return tuple(_structure_event_type(item, None) for item in value)


def _structure_mapping(value: object, _: object) -> Mapping[str, Any]:
    if type(value) is not dict:
        raise ValueError(f"expected an object, got {value!r}")
    return value


def columns(model: type[Any]) -> list[str]:
    """The keys of a model's items as the service writes them (a CSV's columns)."""
    return [to_camel(field.name) for field in attrs.fields(model)]


def to_camel(name: str) -> str:
    """``created_at`` -> ``createdAt``; a name with no underscore is returned as it is."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


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


def _structure_event(body: object, _: object = None) -> WebhookEvent:
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


def _unstructure_event(event: WebhookEvent) -> dict[str, Any]:
    """A WebhookEvent as a notification body."""
    return {
        _assumed.EVENT_ID_KEY: event.event_id,
        _assumed.EVENT_TYPE_KEY: str(event.event_type),
        _assumed.EVENT_OCCURRED_AT_KEY: None
        if event.occurred_at is None
        else format_datetime(event.occurred_at),
        _assumed.EVENT_DATA_KEY: dict(event.data),
    }


def _build_converter() -> cattrs.Converter:
    """The converter: scalar hooks, then one hook factory for every attrs model."""
    conv = cattrs.Converter(forbid_extra_keys=False)
    conv.register_structure_hook(uuid.UUID, parse_uuid)
    conv.register_structure_hook(datetime.datetime, parse_datetime)
    conv.register_structure_hook(str, _strict(str, "a string"))
    conv.register_structure_hook(bool, _strict(bool, "a boolean"))
    conv.register_structure_hook(int, _structure_int)
    conv.register_structure_hook_func(
        lambda t: t == tuple[EventType | str, ...], _structure_event_types
    )
    conv.register_structure_hook_func(lambda t: t == Mapping[str, Any], _structure_mapping)
    conv.register_unstructure_hook(uuid.UUID, str)
    conv.register_unstructure_hook(datetime.datetime, format_datetime)
    conv.register_unstructure_hook(EventType, lambda member: member.value)
    conv.register_unstructure_hook_func(lambda t: t == Mapping[str, Any], dict)

    def structure_model(cls: type[Any]) -> Callable[[Any, type[Any]], Any]:
        overrides: dict[str, Any] = {
            f.name: override(rename=to_camel(f.name)) for f in attrs.fields(cls)
        }
        return make_dict_structure_fn(cls, conv, _cattrs_detailed_validation=False, **overrides)

    def unstructure_model(cls: type[Any]) -> Callable[[Any], Any]:
        renames: dict[str, Any] = {
            f.name: override(rename=to_camel(f.name)) for f in attrs.fields(cls)
        }
        return make_dict_unstructure_fn(cls, conv, **renames)

    conv.register_structure_hook_factory(attrs.has, structure_model)
    conv.register_unstructure_hook_factory(attrs.has, unstructure_model)
    # A notification is read as the receiver reads it, wherever it is structured.
    conv.register_structure_hook(WebhookEvent, _structure_event)
    conv.register_unstructure_hook(WebhookEvent, _unstructure_event)
    return conv


converter = _build_converter()

# cattrs 24.1 names the hook a type structures with (get_structure_hook); 23.2, the floor,
# keeps it as the dispatch that structure() itself calls. The same function either way.
_structure_hook: Callable[[Any], Callable[[Any, Any], Any]] = (
    converter.get_structure_hook
    if hasattr(converter, "get_structure_hook")
    else converter._structure_func.dispatch  # type: ignore[assignment]
)


def structure_hook(model: type[Any]) -> Callable[[Any, Any], Any]:
    """The function the converter structures ``model`` with (found once, called per item)."""
    return _structure_hook(model)


def to_dict(model: Any) -> dict[str, Any]:
    """A model as the service sends it: camelCase names, ISO 8601 timestamps, UUID strings.

    ```pycon
    >>> to_dict(conn)
    {'id': 'f2e87725-...', 'employerIdentifierId': '870cada6-...', ...}
    ```

    ``json.dumps(to_dict(model))`` is the model's JSON; the SDK's models structure it back.
    """
    if not attrs.has(type(model)):
        raise TypeError(f"to_dict takes a payroll_async model, not {type(model).__name__}")
    result: dict[str, Any] = converter.unstructure(model)
    return result


def to_json(model: Any) -> str:
    """A model as compact JSON, as the service sends it (a line of a JSONL export).

    ```pycon
    >>> to_json(conn)
    '{"id":"f2e87725-...","employerIdentifierId":"870cada6-...",...}'
    >>> from_dict(PayrollConnection, json.loads(to_json(conn))) == conn
    True
    ```
    """
    return _json.dumps(to_dict(model)).decode()


def from_dict(model: type[T], data: Any) -> T:
    """A model from its dict as the service sends it (the inverse of
    [`to_dict()`][payroll_async.to_dict]).

    ```pycon
    >>> from_dict(PayrollConnection, json.loads(line))  # a JSONL line
    PayrollConnection(id=UUID('f2e87725-...'), ...)
    ```

    InvalidArgumentError (a ValueError) if ``data`` is not of the model's shape.
    """
    if not (isinstance(model, type) and attrs.has(model)):
        raise InvalidArgumentError(f"from_dict takes a payroll_async model class, not {model!r}")
    try:
        result: T = structure_hook(model)(data, model)
        return result
    except InvalidArgumentError:
        raise
    except Exception as exc:
        raise InvalidArgumentError(
            f"not a {model.__name__} ({type(exc).__name__}: {exc})"
        ) from None
