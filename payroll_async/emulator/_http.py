"""The service's answer shapes: JSON responses, the error body, checked path UUIDs, and the
URL a request was sent to."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from yarl import URL

from .._core._json import dumps, loads
from .._core._net import is_loopback

__all__ = [
    "ApiError",
    "is_loopback",
    "json_object",
    "json_response",
    "path_uuid",
    "request_url",
]

_PATH_UUID_RE = re.compile(
    r"(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
    r"|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)\Z"
)


class ApiError(Exception):
    """An error answer in the service's error shape: ``{"message", "errors"}``."""

    def __init__(
        self,
        status: int,
        message: str,
        errors: list[str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors or []
        self.headers = dict(headers or {})


def json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A JSON answer, through the package's one JSON module."""
    return web.Response(
        body=dumps(body), status=status, content_type="application/json", headers=headers
    )


async def json_object(request: web.Request) -> dict[str, Any]:
    """The request's body, a JSON object; else 400 as the service answers."""
    try:
        body = loads(await request.read())
    except ValueError:
        raise ApiError(400, "Invalid request body", ["the body is not valid JSON"]) from None
    if not isinstance(body, dict):
        raise ApiError(400, "Invalid request body", ["the body must be a JSON object"])
    return body


def path_uuid(request: web.Request, key: str, name: str) -> str:
    """A path parameter as the service's validation accepts UUIDs, lower-cased; else 400."""
    value = request.match_info[key]
    if not _PATH_UUID_RE.match(value):
        raise ApiError(
            400, "Invalid request parameters", [f"{name}: must be a UUID, got {value!r}"]
        )
    return value.lower()


def request_url(request: web.Request) -> URL:
    """The absolute URL ``request`` was sent to, as aiohttp 3.10+ builds ``request.url``.

    aiohttp 3.9 (the floor) builds it with ``URL.build(host=...)``, which yarl 1.10 and
    later refuse for a host with a port ("cannot contain ':'"): every request to a port.
    """
    return URL.build(scheme=request.scheme, authority=request.host).join(request.rel_url)
