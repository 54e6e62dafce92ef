"""Raw responses: a call's parsed result together with the status and headers it came with."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Mapping
from typing import Generic, TypeVar

import attrs

from .._core._redact import shown_url
from ._response import Response
from ._status import request_id

__all__ = ["RawResponse", "call_raw", "record"]

T = TypeVar("T")

_CAPTURE: contextvars.ContextVar[list[Response] | None] = contextvars.ContextVar(
    "payroll_async_raw_responses", default=None
)


def record(response: Response) -> None:
    """Keep ``response`` for the raw-response call running in this task, if any."""
    captured = _CAPTURE.get()
    if captured is not None:
        captured.append(response)


@attrs.frozen(repr=False)
class RawResponse(Generic[T]):
    """The parsed result of a call, with the HTTP response it came from.

    For a call that sends several requests (``webhooks.replace``, ``webhooks.ensure``)
    the response is the last one.
    """

    parsed: T
    """What the call returns normally (None for a delete)."""
    status: int
    """The HTTP status."""
    headers: Mapping[str, str]
    """The response headers (case-insensitive)."""
    url: str
    """The URL answered, as exceptions show it: the token's text and the values of
    credential-like query parameters (``access_token``, ``api_key``, ...) redacted."""
    method: str
    """The method sent."""
    request_id: str | None
    """The service's request id or correlation header, when it sends one."""
    _secret: str | None = attrs.field(default=None, eq=False, alias="secret")

    def __repr__(self) -> str:
        """Its fields, with the token's text and credential-like query values redacted
        wherever they appear (a header may echo the token in a URL)."""
        fields = (
            f"parsed={self.parsed!r}, status={self.status!r}, headers={self.headers!r}, "
            f"url={self.url!r}, method={self.method!r}, request_id={self.request_id!r}"
        )
        return shown_url(f"RawResponse({fields})", self._secret)

    def parse(self) -> T:
        """``parsed`` (as the Stainless SDKs spell it)."""
        return self.parsed


async def call_raw(call: Awaitable[T]) -> RawResponse[T]:
    """Await an operation's call, and its result with the last response it received."""
    captured: list[Response] = []
    token = _CAPTURE.set(captured)
    try:
        parsed = await call
    finally:
        _CAPTURE.reset(token)
    last = captured[-1]
    return RawResponse(
        parsed=parsed,
        status=last.status,
        headers=last.headers,
        url=shown_url(last.url, last.secret),
        method=last.method,
        request_id=request_id(last.headers),
        secret=last.secret,
    )
