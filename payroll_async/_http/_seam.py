"""The transport seam, and the answers that come back up through it.

The seam: what carries one request to the service and brings its answer back.

Everything that makes a request a good one sits above it and works the same over any
transport: the retry loop, the token and its refresh, the gates, the call's time limit,
the response bound, typed errors, redaction, tracing and ``PAYROLL_LOG``. Below it, one
method: a `TransportRequest` in, a `TransportResponse` with its whole body out. Every
transport crosses it the same way, the client's own too: aiohttp's
(``_http/_aiohttp.py``), ``payroll_async.testing.MockTransport`` (answers from a function
of yours, as httpx's ``MockTransport`` does) or a user's. The seam's types are the SDK's
own: no aiohttp type crosses it (a time limit is a `Timeout`).

Above it: a 2xx becomes a `Response` (plain data: nothing needs the connection any more),
and a call ``with_raw_response`` a `RawResponse` (its parsed result with that Response).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Mapping
from typing import Generic, Protocol, TypeVar, runtime_checkable

import attrs
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from .._core._redact import shown_url
from ._status import request_id

__all__ = [
    "ERROR_BODY_MAX",
    "AsyncTransport",
    "RawResponse",
    "Response",
    "Timeout",
    "TransportRequest",
    "TransportResponse",
    "TransportStatus",
    "call_raw",
    "record",
]


@attrs.frozen
class Timeout:
    """How long one send may take, in seconds (None: no limit of that kind).

    What ``timeout=`` becomes: seconds are ``Timeout(total=seconds)``; an
    ``aiohttp.ClientTimeout`` is read into one (its four limits, by the same names). A
    transport reads it from `TransportRequest.timeout`; above the seam the client ends a
    send that outlives ``total`` by itself.

    ```pycon
    >>> PayrollClient(base_url, token, timeout=Timeout(total=30, connect=5))
    ```
    """

    total: float | None = None
    """The whole send, from the connection to the last byte of the body."""
    connect: float | None = None
    """Getting a connection: from the pool, or a new one (with the proxy's and TLS's)."""
    sock_read: float | None = None
    """Between two reads of the answer."""
    sock_connect: float | None = None
    """Opening a new connection to the host (or the proxy)."""


@attrs.frozen
class TransportRequest:
    """One send of one request, as the seam hands it to a transport."""

    method: str
    """``GET``, ``POST``, ``PUT``, ``PATCH`` or ``DELETE``."""
    url: URL
    """The whole URL, query included (always on the client's origin)."""
    headers: Mapping[str, str]
    """Every header to send, ``Authorization`` included: send it to ``url`` only. Read
    only and case-insensitive (the sends of one request share it)."""
    content: bytes | None
    """The body (JSON), or None."""
    timeout: Timeout
    """How long this send may take (``timeout`` of the call or the client)."""
    max_response_size: int | None
    """The largest body to read, in bytes (None: no limit). A transport may stop reading
    past it; the seam refuses a larger 2xx body either way."""


def _headers(value: Mapping[str, str]) -> CIMultiDictProxy[str]:
    if isinstance(value, CIMultiDictProxy):
        return value
    return CIMultiDictProxy(CIMultiDict(value))


@attrs.frozen
class TransportResponse:
    """What a transport brings back: the answer, read whole and closed."""

    status: int
    """The HTTP status, whatever it is (the seam decides what it means)."""
    headers: CIMultiDictProxy[str] = attrs.field(converter=_headers, factory=dict)
    """The response headers (any mapping; kept case-insensitive)."""
    body: bytes = b""
    """The whole body (for an error, as much of it as its message needs)."""
    url: URL | None = None
    """The URL that answered, when it differs from the request's (None: the request's)."""
    reason: str | None = None
    """The status line's reason phrase, if any."""
    sends: int = 1
    """How many times the request went on the wire for this answer (a transport that
    sends again on a dropped connection says so: a DELETE's 404 then means done)."""


@runtime_checkable
class AsyncTransport(Protocol):
    """What ``PayrollClient(transport=...)`` takes: one request in, its answer out.

    Raise [`APIConnectionError`][payroll_async.APIConnectionError] (or
    [`APITimeoutError`][payroll_async.APITimeoutError]) when no answer came; an
    ``OSError`` or ``TimeoutError`` is typed as one too. Every answer, whatever its
    status, is a `TransportResponse`: the retry loop above decides what to do with it.

    Honour ``request.timeout``: a send still running a second past its ``total`` is
    cancelled from above, and one that ignores the cancellation is abandoned a second
    later (the call fails with ``APITimeoutError`` all the same).

    Optionally, a transport also has the attributes ``closed_reason`` (None while it can
    send; why it cannot, once it closed itself) and ``must_close`` (whether dropping the
    client unclosed leaks what it holds): the client asks them when both are there.
    """

    async def handle_async_request(self, request: TransportRequest) -> TransportResponse:
        """Send ``request`` once and return its answer."""
        ...

    async def aclose(self) -> None:
        """Release what the transport holds: the client calls it when it closes."""
        ...


@runtime_checkable
class TransportStatus(Protocol):
    """What a transport may also tell the client about itself: the optional part of the
    seam. A transport that has both attributes is asked; one that has neither is taken
    to be open until the client closes it, and to hold nothing the client must warn of
    (the client's own aiohttp transport has them; ``MockTransport`` has neither).
    """

    closed_reason: str | None
    """None while it can send; once it can send no more of itself (aiohttp's transport
    closes with its event loop), why, in words: the client is then closed, and its
    ``ClientClosedError`` says so."""
    must_close: bool
    """Whether it holds what only ``aclose()`` releases (a session it made): a client
    dropped unclosed after it sent warns (``ResourceWarning``)."""


@attrs.define(slots=True, eq=False, repr=False)
class Response:
    """What ``Requester.loop()`` returns: nothing in it needs the connection any more.
    Made for every request; read only, by convention (a frozen attrs class costs three
    times as much to make, a mutable one no more than a plain class)."""

    method: str
    """The method sent."""
    status: int
    """The HTTP status (a 2xx)."""
    url: URL
    """The URL answered, query included."""
    headers: CIMultiDictProxy[str] | Mapping[str, str]
    """The response headers (case-insensitive), the Link header as it came (a listing's
    pages read it: ``_paging``)."""
    body: bytes
    """The whole body, at most the client's ``max_response_size``."""
    secret: str | None = None
    """The token the request was sent with, to redact if the body echoes it."""

    def __repr__(self) -> str:
        shown = shown_url(self.url, self.secret)
        return f"<Response {self.method} {shown} {self.status} {len(self.body)} bytes>"


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


ERROR_BODY_MAX = 64 * 1024
"""The most of an error body read: its excerpt and message need no more."""
