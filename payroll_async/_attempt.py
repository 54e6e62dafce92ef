"""One attempt of a request: the gate, the token, the send, and what its answer means.

A 2xx becomes a ``Response``; a 401 is retried once with a refreshed token (when a
provider can refresh); a DELETE answered 404 after a send that got no answer counts as
done; anything else becomes its typed error, a 429 pausing the client's gate first. The
retries around attempts are the transport's (``_transport``); the bytes on the wire are
``_wire``'s.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import aiohttp
import attrs
from yarl import URL

from . import _assumed, _otel
from ._exceptions import APIConnectionError, RateLimitError
from ._failures import connection_error, display_url
from ._gate import GateClosed
from ._options import FinalOptions
from ._response import Response
from ._status import request_id, status_error
from ._wire import read_body, read_links, send_counter

if TYPE_CHECKING:
    from ._transport import Transport

__all__ = ["Request", "attempt"]

logger: logging.Logger = logging.getLogger("payroll_async")

_GATE_EVENT_MIN = 0.001  # seconds at the gate worth an event on the attempt's span


@attrs.frozen(slots=True)
class Request:
    """What every attempt of one request sends: built once per request."""

    method: str
    url: URL
    params: Mapping[str, Any] | None
    data: bytes | None
    headers: Mapping[str, str]
    options: FinalOptions


async def attempt(
    transport: Transport, request: Request, number: int, *, gone_is_done: bool = False
) -> Response:
    """Attempt ``number`` of ``request``: the Response of a 2xx, else a PayrollError."""
    session = transport.session()
    method, url, params = request.method, request.url, request.params
    timeout = request.options.timeout
    auth = transport.auth
    token: str | None = None
    refreshed = False
    # aiohttp sends an idempotent request again by itself when the connection drops
    # before an answer. For a DELETE that matters (a 404 then means "deleted by the send
    # that got no answer"), so its sends are counted; other methods pay nothing.
    sends: list[None] = []
    extra: dict[str, Any] = {}
    if method == "DELETE":
        extra["middlewares"] = (send_counter(sends),)
    while True:
        sends.clear()
        async with transport.semaphore:
            waited = time.perf_counter()
            await transport.local_gate.acquire()
            if transport.shared_gate is not None:
                await transport.shared_gate.acquire()
            waited = time.perf_counter() - waited
            if token is None:
                token = auth.static or await auth.token(
                    _limit(timeout), method, display_url(url, params)
                )
            with _otel.attempt(method, url, number) as span:
                if waited > _GATE_EVENT_MIN:
                    _otel.event("payroll_async.gate_wait", wait_s=waited)
                started = time.perf_counter()
                failure: APIConnectionError | None = None
                try:
                    async with session.request(
                        method,
                        url,
                        params=params,
                        data=request.data,
                        headers={**request.headers, "Authorization": "Bearer " + token},
                        timeout=timeout,
                        allow_redirects=False,
                        raise_for_status=False,
                        trace_request_ctx=[] if transport.tracing else None,
                        **extra,
                    ) as response:
                        body = await read_body(
                            response, method, request.options.max_response_size, token
                        )
                        links, link_error = read_links(response)
                except GateClosed:
                    continue  # not sent: wait for the pause to end, then try again
                except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
                    failure = connection_error(exc, method, url, params, timeout, token)
                elapsed = time.perf_counter() - started
                if failure is not None:
                    _otel.finish(span, method, None, elapsed, type(failure).__name__)
                    # Raised here, outside the except block, so that aiohttp's exception
                    # (whose request info holds the Authorization header) is not chained.
                    raise failure
                status = response.status
                _otel.finish(span, method, status, elapsed, None if status < 400 else str(status))
        if logger.isEnabledFor(logging.DEBUG):
            _log(method, response, number, started)
        if _assumed.SUCCESS_MIN <= status <= _assumed.SUCCESS_MAX:
            return Response(
                method=method,
                status=status,
                url=response.url,
                headers=response.headers,
                body=body,
                links=links,
                link_error=link_error,
                secret=token,
            )
        if status == 401 and auth.can_refresh and not refreshed:
            refreshed = True
            logger.info("%s %s -> 401: refreshing the token", method, response.url.path)
            token = await auth.refresh(token, _limit(timeout), method, display_url(url, params))
            continue
        if status == 404 and (gone_is_done or len(sends) > 1):
            logger.info(
                "%s %s -> 404 after an attempt that got no answer: that attempt deleted it",
                method,
                response.url.path,
            )
            return Response(
                method=method, status=status, url=response.url, headers=response.headers, body=b""
            )
        error = status_error(
            method=method,
            url=str(response.url),
            status=status,
            reason=response.reason,
            headers=response.headers,
            body=body,
            secret=token,
        )
        if isinstance(error, RateLimitError):
            retry_after = error.retry_after
            if retry_after is not None and retry_after <= request.options.retry.max_retry_after:
                await transport.pause(retry_after)
            _otel.rate_limited(method, retry_after)
        raise error


def _log(method: str, response: aiohttp.ClientResponse, number: int, started: float) -> None:
    rid = request_id(response.headers)
    status = response.status
    logger.debug(
        "%s %s -> %d (attempt %d, %.1f ms%s)",
        method,
        response.url.path_qs,
        status,
        number,
        (time.perf_counter() - started) * 1000,
        f", request id {rid}" if rid else "",
        extra={"method": method, "status": status, "attempt": number, "request_id": rid},
    )


def _limit(timeout: aiohttp.ClientTimeout) -> float | None:
    """The longest an attempt may take under ``timeout``, for a token provider's answer."""
    return timeout.total if timeout.total is not None else timeout.sock_read
