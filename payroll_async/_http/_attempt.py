"""The steps of one attempt, each a function of its own: the exchange and its meaning.

``exchange()`` sends once through the seam (a `TransportRequest` to the transport, its
`TransportResponse` back, whatever transport it is), bounded in time above the transport,
and holds the answer to its bound (a connection failure becomes its typed error);
``succeeded``/``response`` make a 2xx a ``Response``; ``already_gone`` is the DELETE-404
rule; ``failure`` types any other answer and ``pause_for`` says how long a 429 holds the
whole client back. The order of the steps,
the gates, the token and its refresh, and the retries are the requester's
(``Requester.attempt``, ``Requester.loop``); the bytes on the wire are the transport's
(below ``_seam``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

import attrs
from multidict import MultiDict
from yarl import URL

from .._core import _assumed
from .._core._clock import abandoning
from .._core._exceptions import (
    APIConnectionError,
    PayrollError,
    ResponseDecodeError,
)
from .._core._json import dumps
from .._core._redact import shown_url
from . import _otel
from ._failures import completed, connection_error
from ._options import FinalOptions
from ._seam import (
    ERROR_BODY_MAX,
    AsyncTransport,
    Response,
    Timeout,
    TransportRequest,
    TransportResponse,
)
from ._status import request_id, status_error, too_large

__all__ = [
    "Exchange",
    "Request",
    "already_gone",
    "build_request",
    "exchange",
    "failure",
    "response",
    "send",
    "succeeded",
    "time_limit",
]

logger: logging.Logger = logging.getLogger("payroll_async")

_GATE_EVENT_MIN = 0.001  # seconds at the gate worth an event on the attempt's span

CALL_GRACE = 1.0
"""Seconds a send may run past its ``total`` before it is cancelled from above the
transport (a transport's own timeout, such as aiohttp's, rounded up to a whole second,
goes first), and again after that before it is abandoned: no transport, and no code of a
user's that swallows ``CancelledError``, holds an attempt longer than ``total`` and twice
this."""


@attrs.define(slots=True, eq=False, repr=False)
class Request:
    """What every attempt of one request sends: built once per request (one for every
    page of a walk). Read only, by convention: a frozen attrs class costs three times as
    much to make, a mutable one no more than a plain class."""

    method: str
    url: URL
    params: Mapping[str, Any] | None
    data: bytes | None
    headers: Mapping[str, str]
    options: FinalOptions


def build_request(
    method: str,
    url: URL,
    options: FinalOptions,
    params: Mapping[str, Any] | None = None,
    json: Any = None,
) -> Request:
    """What every attempt of one request sends, built once: ``options``' extra query laid
    over ``params``, and ``json`` as the body."""
    if options.extra_query:
        params = {**(params or {}), **options.extra_query}
    headers = options.headers
    data = None
    if json is not None:
        data = dumps(json)
        headers = {**headers, "Content-Type": "application/json"}
    return Request(method, url, params, data, headers, options)


@attrs.define(slots=True, eq=False, repr=False)
class Exchange:
    """What one send got back: the answer's status line, headers and body, and its time.
    Made for every request; read only, by convention (as ``Request``)."""

    status: int
    reason: str | None
    url: URL
    headers: Mapping[str, str]
    body: bytes
    started: float
    sends: int
    """How many times the transport put the request on the wire (aiohttp's DELETEs are
    counted)."""


async def exchange(
    transport: AsyncTransport,
    request: Request,
    headers: Mapping[str, str],
    token: str,
    number: int,
    *,
    waited: float,
) -> Exchange:
    """Send once through the seam (``transport.handle_async_request``) and read what came
    back; a failed send is typed.

    The transport gets a `TransportRequest`: the whole URL, ``headers`` (the token's
    ``Authorization`` among them), the body, the `Timeout` and the body bound; what it
    answers is held to the bound here too, whatever transport it is. A send that outlives
    its ``total`` is ended here (``send``). Raises ``GateClosed`` when the transport held
    the request back at the gate (nothing was sent), ``APIConnectionError``
    (``APITimeoutError``, ``ProxyError``) when no answer came.
    """
    method, url, params = request.method, request.url, request.params
    timeout = request.options.timeout
    limit = request.options.max_response_size
    target = _with_params(url, params)
    with _otel.attempt(method, url, number, token) as span:
        if waited > _GATE_EVENT_MIN:
            _otel.event("payroll_async.gate_wait", wait_s=waited)
        started = time.perf_counter()
        failure: PayrollError | None = None
        try:
            answer = await send(
                transport, TransportRequest(method, target, headers, request.data, timeout, limit)
            )
        except APIConnectionError as exc:
            failure = completed(exc, method, url, params, token)
        except (asyncio.TimeoutError, OSError) as exc:  # another transport's failed send
            failure = connection_error(exc, method, url, params, timeout, token)
        elapsed = time.perf_counter() - started
        if failure is None:
            status = answer.status
            where = answer.url or target
            try:
                body = _within(status, answer.body, where, method, limit, token)
            except ResponseDecodeError as exc:
                failure = exc
        if failure is not None:
            _otel.finish(span, method, None, elapsed, type(failure).__name__)
            # Raised here, outside the except block: a transport's exception (whose
            # request may hold the Authorization header) is not chained.
            raise failure
        _otel.finish(span, method, status, elapsed, None if status < 400 else str(status))
    result = Exchange(status, answer.reason, where, answer.headers, body, started, answer.sends)
    if logger.isEnabledFor(logging.DEBUG):
        _log(method, result, number, token)
    return result


async def send(transport: AsyncTransport, request: TransportRequest) -> TransportResponse:
    """``request`` sent through the seam, ended from above once it outlives its ``total``
    (`CALL_GRACE`): in a task of its own then (``abandoning``), so that a transport, or a
    hook in it, that swallows ``CancelledError`` cannot hold the call; raises
    ``TimeoutError`` past the bound. Without a ``total``, awaited in this task."""
    total = request.timeout.total
    if total is None:
        return await transport.handle_async_request(request)
    return await abandoning(
        transport.handle_async_request(request), total + CALL_GRACE, grace=CALL_GRACE
    )


def _with_params(url: URL, params: Mapping[str, Any] | None) -> URL:
    """``url`` with ``params`` added to its query, as aiohttp adds a request's params."""
    if not params:
        return url
    query = MultiDict(url.query)
    query.extend(url.with_query(params).query)
    return url.with_query(query)


def _within(
    status: int, body: bytes, url: URL, method: str, limit: int | None, token: str
) -> bytes:
    """An answer's body held to the bound: a 2xx body past ``limit`` is refused, an error
    body is kept only as far as its message needs."""
    if not _assumed.SUCCESS_MIN <= status <= _assumed.SUCCESS_MAX:
        return body[:ERROR_BODY_MAX]
    if limit is not None and len(body) > limit:
        raise too_large(method, status, url, limit, body[:limit], token)
    return body


def succeeded(answer: Exchange) -> bool:
    """Whether the answer is a success (a 2xx, as the interface document counts it)."""
    return _assumed.SUCCESS_MIN <= answer.status <= _assumed.SUCCESS_MAX


def response(request: Request, answer: Exchange, token: str) -> Response:
    """The Response of a successful answer (the token kept to redact its echoes)."""
    return Response(request.method, answer.status, answer.url, answer.headers, answer.body, token)


def already_gone(request: Request, answer: Exchange, *, gone_is_done: bool) -> Response | None:
    """A DELETE answered 404 after a send that got no answer: that send deleted it."""
    if answer.status != 404 or request.method != "DELETE":
        return None
    if not (gone_is_done or answer.sends > 1):
        return None
    logger.info(
        "%s %s -> 404 after an attempt that got no answer: that attempt deleted it",
        request.method,
        shown_url(answer.url.path),
    )
    return Response(
        method=request.method, status=404, url=answer.url, headers=answer.headers, body=b""
    )


def failure(request: Request, answer: Exchange, token: str) -> PayrollError:
    """The typed error of an answer that is not a success."""
    return status_error(
        method=request.method,
        url=str(answer.url),
        status=answer.status,
        reason=answer.reason,
        headers=answer.headers,
        body=answer.body,
        secret=token,
    )


def _log(method: str, answer: Exchange, number: int, token: str) -> None:
    rid = request_id(answer.headers)
    status = answer.status
    logger.debug(
        "%s %s -> %d (attempt %d, %.1f ms%s)",
        method,
        shown_url(answer.url.path_qs, token),
        status,
        number,
        (time.perf_counter() - answer.started) * 1000,
        f", request id {rid}" if rid else "",
        extra={"method": method, "status": status, "attempt": number, "request_id": rid},
    )


def time_limit(timeout: Timeout) -> float | None:
    """The longest an attempt may take under ``timeout``, for a token provider's answer."""
    return timeout.total if timeout.total is not None else timeout.sock_read
