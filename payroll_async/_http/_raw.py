"""Raw responses: a call's parsed result together with the status and headers it came with."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Mapping
from typing import Generic, TypeVar

import attrs

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


@attrs.frozen
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
    """The URL answered."""
    method: str
    """The method sent."""
    request_id: str | None
    """The service's request id or correlation header, when it sends one."""

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
        url=str(last.url),
        method=last.method,
        request_id=request_id(last.headers),
    )
