"""The one cattrs converter: camelCase renames, UUID and datetime hooks, strict scalars.

Every attrs model gets its hooks from one factory (keyed on ``attrs.has``, as lsprotocol
does), generated on first use; the hot path (a page of a listing) calls the generated
structure functions directly. Unknown fields are ignored and unknown event types stay
plain ``str`` so that a newer service does not break an older SDK. A webhook notification
is read by ``_notification``'s hooks, registered here.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ..models import EventType, WebhookEvent, event_type
from . import _json
from ._exceptions import InvalidArgumentError
from ._notification import structure_event, unstructure_event
from ._scalars import format_datetime, parse_datetime, parse_uuid

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
    conv.register_structure_hook(WebhookEvent, structure_event)
    conv.register_unstructure_hook(WebhookEvent, unstructure_event)
    return conv


converter = _build_converter()

# cattrs 24.1 names the hook a type structures with (get_structure_hook); 23.2, the floor,
# names none publicly: there every call goes through structure(), which finds the same hook.
_structure_hook: Callable[[Any], Callable[[Any, Any], Any]] = (
    converter.get_structure_hook
    if hasattr(converter, "get_structure_hook")
    else lambda _: converter.structure
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
