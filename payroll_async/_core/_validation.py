"""Checks of user input, run before any request is sent.

Each check raises ``InvalidArgumentError`` naming the argument and what was wrong, and
returns the value in the form the wire needs. Identifiers are validated against the UUID
grammar the service accepts rather than escaped, so nothing but 36 hex-and-hyphen
characters can ever reach a URL path.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from yarl import URL

from ..models import EVENT_TYPES, EventType
from . import _assumed
from ._converter import to_camel
from ._exceptions import InvalidArgumentError
from ._net import is_loopback
from ._types import IdLike, NotGiven, RetryPolicy, SortLike
from ._visible import redact_url

__all__ = [
    "check_base_url",
    "check_concurrency",
    "check_event_types",
    "check_extra_headers",
    "check_extra_query",
    "check_id",
    "check_int",
    "check_max_items",
    "check_max_response_size",
    "check_page_size",
    "check_path",
    "check_query",
    "check_sort",
    "check_start_offset",
    "check_webhook_path",
    "event_type_problem",
    "is_loopback",
]

# Versions 1-8 with the RFC 9562 variant, plus the nil and max UUIDs: what the service's
# path-parameter validation accepts.
_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}\Z"
)
_NIL = "00000000-0000-0000-0000-000000000000"
_MAX = "ffffffff-ffff-ffff-ffff-ffffffffffff"
_SORT_FIELD_RE = re.compile(r"(-?)([A-Za-z0-9_]{1,100})\Z")
_SNAKE_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+\Z")
_TOKEN_HEADER = "authorization"
# Headers the transport owns: where the request goes and how its body is framed.
_TRANSPORT_HEADERS = frozenset({"host", "content-length", "transfer-encoding"})
# Query parameters the paginator owns: set in extra_query they would corrupt a walk.
WALK_PARAMS = frozenset({"offset", "limit"})
# RFC 9110 5.1: a field name is a token; a field value has no control characters but tab,
# and nothing that str.splitlines() breaks on (U+0085, U+2028, U+2029 included).
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_HEADER_VALUE_BAD_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
# The slot itself: a subclass cannot override what it reads.
_UUID_INT: Any = vars(uuid.UUID)["int"]


def check_id(value: IdLike, name: str) -> str:
    """An identifier as the canonical lowercase string of the parsed UUID.

    The path is built from this canonical text, never from the caller's object, so a
    ``str`` or ``uuid.UUID`` subclass with its own ``__str__``/``__format__`` cannot steer
    the request elsewhere.
    """
    if isinstance(value, uuid.UUID):
        # The same rule as for text: an object is checked as the canonical text it stands for.
        text = str(uuid.UUID(int=_UUID_INT.__get__(value)))
        shown = f"UUID('{text}')"
    elif isinstance(value, str):
        text = str.lower(str.__str__(value))
        shown = str.__repr__(value)
    else:
        raise InvalidArgumentError(
            f"{name} must be a UUID or a UUID string, not {type(value).__name__}"
        )
    if text in (_NIL, _MAX) or _UUID_RE.match(text):
        return str(uuid.UUID(text))
    raise InvalidArgumentError(
        f"{name} must be a UUID such as '123e4567-e89b-42d3-a456-426614174000', got {shown}"
    )


def check_sort(sort: SortLike | None, allowed: frozenset[str] | None = None) -> str | None:
    """A sort order as the service's comma-separated camelCase string, or None."""
    if sort is None:
        return None
    if isinstance(sort, str):
        fields = sort.split(",")
    elif isinstance(sort, Iterable):
        fields = list(sort)
        if not all(isinstance(field, str) for field in fields):
            raise InvalidArgumentError(f"sort fields must be strings, got {sort!r}")
    else:
        raise InvalidArgumentError(f"sort must be a string or a sequence of strings, got {sort!r}")
    if not 1 <= len(fields) <= 3:
        raise InvalidArgumentError(f"sort takes 1 to 3 fields, got {len(fields)}: {sort!r}")
    out = []
    for field in fields:
        match = _SORT_FIELD_RE.match(field.strip())
        if match is None:
            raise InvalidArgumentError(
                f"sort field {field!r} must be 1-100 letters, digits or underscores, "
                "optionally prefixed with '-' for descending order"
            )
        name = to_camel(match[2]) if _SNAKE_RE.match(match[2]) else match[2]
        if allowed is not None and name not in allowed:
            raise InvalidArgumentError(
                f"cannot sort by {match[2]!r}; allowed: {', '.join(sorted(allowed))}"
            )
        out.append(match[1] + name)
    return ",".join(out)


def check_int(value: object, name: str, low: int, high: int) -> int:
    """``value`` if it is an integer (not a bool) from ``low`` to ``high``; else
    InvalidArgumentError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an integer, not {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidArgumentError(f"{name} must be between {low} and {high}, got {value}")
    return value


def check_page_size(value: int, maximum: int = _assumed.LIMIT_MAX) -> int:
    return check_int(value, "page_size", 1, maximum)


def check_start_offset(value: int) -> int:
    return check_int(value, "start_offset", 0, _assumed.OFFSET_MAX)


def check_max_items(value: int | None) -> int | None:
    return None if value is None else check_int(value, "max_items", 0, 2**63)


def check_concurrency(value: int, name: str = "concurrency") -> int:
    return check_int(value, name, 1, 1024)


def check_max_response_size(value: int | None) -> int | None:
    """Bytes of one response body after decompression, or None for no limit."""
    return None if value is None else check_int(value, "max_response_size", 1, 2**62)


def event_type_problem(item: object) -> str:
    """Why ``item`` is not an event type: the service's spelling is the only one accepted."""
    known = ", ".join(sorted(EVENT_TYPES))
    if isinstance(item, str) and str.upper(item) in EVENT_TYPES:
        return (
            f"unknown event type {str.__repr__(item)}: event types are upper case, "
            f"as the service spells them ({str.upper(item)})"
        )
    return f"unknown event type {item!r}; known: {known}"


def check_event_types(event_types: Iterable[EventType | str]) -> list[str]:
    """Event types as their string values, at least one, duplicates dropped."""
    if isinstance(event_types, str) or not isinstance(event_types, Iterable):
        raise InvalidArgumentError(
            "event_types must be a list of event types, e.g. [EventType.PAYROLL_PROCESSED]"
        )
    out: list[str] = []
    for item in event_types:
        member = EVENT_TYPES.get(item) if isinstance(item, str) else None
        if member is None:
            raise InvalidArgumentError(event_type_problem(item))
        value = member.value  # the enum's own text, not the caller's object
        if value not in out:
            out.append(value)
    if not out:
        raise InvalidArgumentError("event_types must name at least one event type")
    return out


def _parse_url(value: object, name: str) -> URL:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a string URL, not {type(value).__name__}")
    value = str.__str__(value)
    shown = repr(redact_url(value))
    if not value or any(ch.isspace() or not ch.isprintable() for ch in value):
        raise InvalidArgumentError(f"{name} must be a URL without spaces, got {shown}")
    if not value.isascii():
        raise InvalidArgumentError(
            f"{name} must be an ASCII URI (percent-encode the path, punycode the host), got {shown}"
        )
    try:
        url = URL(value)
    except ValueError:
        # yarl's message may quote the URL, credentials included: not kept as the cause.
        url = None
    if url is None:
        raise InvalidArgumentError(f"{name} is not a valid URL: {shown}")
    if not url.is_absolute() or not url.host:
        raise InvalidArgumentError(f"{name} must be an absolute URL, got {shown}")
    if url.scheme == "https" or (url.scheme == "http" and is_loopback(url.host)):
        return url
    raise InvalidArgumentError(
        f"{name} must use https:// (plain http:// only for loopback hosts), got {shown}"
    )


def check_webhook_path(path: str) -> str:
    """A notification destination: an absolute https URL (loopback http allowed)."""
    _parse_url(path, "path")
    return str.__str__(path)


def check_base_url(base_url: str) -> URL:
    """The service root, without credentials, query or fragment, and no trailing slash."""
    url = _parse_url(base_url, "base_url")
    if url.user is not None or url.password is not None:
        raise InvalidArgumentError("base_url must not carry credentials; pass token= instead")
    if url.query_string or url.fragment:
        raise InvalidArgumentError(
            f"base_url must not have a query or fragment: {redact_url(base_url)!r}"
        )
    return url.with_path(url.path.rstrip("/"))


def check_extra_query(extra_query: Mapping[str, Any] | None) -> dict[str, Any]:
    return check_query(extra_query, "extra_query", WALK_PARAMS)


def check_query(
    query: Mapping[str, Any] | None, name: str, reserved: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Query parameters as the wire takes them; the ``reserved`` names (the walk's) refused."""
    if query is None:
        return {}
    if not isinstance(query, Mapping):
        raise InvalidArgumentError(f"{name} must be a mapping of names to values")
    out: dict[str, Any] = {}
    for key, value in query.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"{name} names must be strings, got {key!r}")
        if key.lower() in reserved:
            raise InvalidArgumentError(
                f"{name} cannot set {key!r}: the paginator sets it "
                "(use start_offset=, page_size= or .skip())"
            )
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidArgumentError(f"{name}[{key!r}] must be finite, got {value!r}")
        elif isinstance(value, int):
            value = int(value)
        elif isinstance(value, str):
            value = str.__str__(value)
        else:
            raise InvalidArgumentError(f"{name}[{key!r}] must be a str, int, float or bool")
        out[str.__str__(key)] = value
    return out


def check_path(path: str) -> str:
    """A path of the service, for the generic calls: it can only name a place on its origin.

    Refused: anything but a string starting with one ``/`` (an absolute URL, a
    protocol-relative ``//host``), a backslash, a fragment, spaces, control or non-ASCII
    characters (percent-encoded ones included), and ``.`` or ``..`` segments, however
    they are encoded, that would climb out of the base URL once normalised.
    """
    if not isinstance(path, str):
        raise InvalidArgumentError(f"path must be a string, not {type(path).__name__}")
    path = str.__str__(path)
    shown = repr(redact_url(path[:200]))
    if not path.startswith("/") or path.startswith("//"):
        raise InvalidArgumentError(
            f"path must start with a single '/' and stay on the client's base URL "
            f"(no absolute or protocol-relative URL), got {shown}"
        )
    if not path.isascii() or any(ch.isspace() or not ch.isprintable() for ch in path):
        raise InvalidArgumentError(
            f"path must be ASCII without spaces or control characters "
            f"(percent-encode them), got {shown}"
        )
    if "\\" in path or "#" in path:
        raise InvalidArgumentError(f"path must not contain a backslash or a fragment, got {shown}")
    where, _, _ = path.partition("?")
    decoded = where
    for _ in range(4):  # %252e%252e: encoded twice is still a dot segment to somebody
        unquoted = unquote(decoded)
        if unquoted == decoded:
            break
        decoded = unquoted
    if any(not ch.isprintable() for ch in decoded) or "\\" in decoded:
        raise InvalidArgumentError(
            f"path must not encode control characters or backslashes, got {shown}"
        )
    if any(segment in (".", "..") for segment in decoded.split("/")):
        raise InvalidArgumentError(f"path must not contain '.' or '..' segments, got {shown}")
    return path


def check_extra_headers(extra_headers: Mapping[str, str] | None) -> dict[str, str]:
    if extra_headers is None:
        return {}
    if not isinstance(extra_headers, Mapping):
        raise InvalidArgumentError("extra_headers must be a mapping of names to strings")
    out: dict[str, str] = {}
    for key, value in extra_headers.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidArgumentError("extra_headers names and values must be strings")
        key, value = str.__str__(key), str.__str__(value)
        if not _HEADER_NAME_RE.match(key):
            raise InvalidArgumentError(
                f"extra_headers name {key!r} is not a valid header name (RFC 9110 token)"
            )
        if _HEADER_VALUE_BAD_RE.search(value):
            raise InvalidArgumentError(
                f"extra_headers[{key!r}] must not contain line breaks "
                "or other control characters (CR, LF, NUL)"
            )
        if key.lower() == _TOKEN_HEADER:
            raise InvalidArgumentError("set the token with token=, not extra_headers")
        if key.lower() in _TRANSPORT_HEADERS:
            raise InvalidArgumentError(
                f"extra_headers cannot set {key}: the transport sets it from the request"
            )
        out[key] = value
    return out


def check_seconds(value: object, name: str, *, zero: bool = False) -> float:
    """Finite seconds > 0 (or >= 0 with ``zero``), as a float; else InvalidArgumentError."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
        or (value == 0 and not zero)
    ):
        bound = ">= 0" if zero else "> 0"
        raise InvalidArgumentError(f"{name} must be finite seconds {bound}, got {value!r}")
    return float(value)


_REDIS_KEY = re.compile(r"[\x21-\x7e]{1,200}\Z")  # printable ASCII, no spaces


def check_redis_key(value: object) -> str:
    """A prefix of Redis keys: 1-200 printable ASCII characters without spaces."""
    if not isinstance(value, str) or not _REDIS_KEY.match(value):
        raise InvalidArgumentError(
            f"key must be 1-200 printable ASCII characters without spaces, got {value!r}"
        )
    return value


def check_retry(value: object) -> Any:
    """A RetryPolicy, None (a single attempt) or NOT_GIVEN (the default), as given."""
    if value is None or isinstance(value, (RetryPolicy, NotGiven)):
        return value
    raise InvalidArgumentError(f"retry must be a RetryPolicy or None, got {type(value).__name__}")
