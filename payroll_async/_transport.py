"""One request, done properly: headers, send, map failures, retry, pause on 429, refresh.

Everything above this module (pagination, resources) calls ``Transport.send()`` and
gets back a ``Response`` (status, URL, headers, links, body) for a 2xx, or a typed
``PayrollError``. No aiohttp object leaves this module.
"""

from __future__ import annotations

import asyncio
import logging
import platform
import time
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import aiohttp
import tenacity
from aiohttp.client_reqrep import ClientRequest
from aiohttp.connector import Connection
from aiohttp.tracing import Trace
from yarl import URL

from . import _assumed, _otel
from ._auth import Auth
from ._clock import SYSTEM_CLOCK, Clock
from ._exceptions import (
    APIConnectionError,
    ClientClosedError,
    RateLimitError,
    ResponseDecodeError,
)
from ._failures import connection_error, display_url
from ._gate import Gate, LocalGate
from ._json import dumps
from ._response import Response
from ._retry import RetryPolicy, build_retrying
from ._status import excerpt, request_id, status_error
from ._types import RequestOptions, given
from ._version import __version__

__all__ = ["Transport"]

logger = logging.getLogger("payroll_async")

USER_AGENT = (
    f"payroll-async/{__version__} python/{platform.python_version()} aiohttp/{aiohttp.__version__}"
)


async def _on_headers_sent(
    session: aiohttp.ClientSession,
    ctx: SimpleNamespace,
    params: aiohttp.TraceRequestHeadersSentParams,
) -> None:
    # aiohttp sends an idempotent request again, once, when a pooled keep-alive connection
    # turns out to be closed (RFC 9112 9.3.1). That is not one of our attempts: log it so
    # that what went over the wire can be told from the policy's attempts.
    sends = ctx.trace_request_ctx
    if isinstance(sends, list):
        sends.append(params.method)
        if len(sends) > 1:
            logger.debug(
                "%s %s sent again by aiohttp on a new connection (stale keep-alive connection)",
                params.method,
                params.url.path,
            )


class _GateClosed(Exception):
    """A pause began while this request waited for a connection: it was not sent."""


class _GatedConnector(aiohttp.TCPConnector):
    """A connector that looks at the gate again once it has a connection.

    Between passing the gate and getting a connection a request can wait; a 429 answered
    meanwhile must still hold it back. Checking here, the last await before the request is
    written, closes that window without a per-request trace hook.
    """

    def __init__(self, gate: LocalGate, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._gate = gate

    async def connect(
        self, req: ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout
    ) -> Connection:
        conn = await super().connect(req, traces, timeout)
        if not self._gate.is_open():
            conn.release()
            raise _GateClosed
        return conn


class Transport:
    """Owns (or borrows) the aiohttp session; sends requests with the retry policy."""

    def __init__(
        self,
        *,
        base_url: URL,
        auth: Auth,
        timeout: aiohttp.ClientTimeout,
        policy: RetryPolicy,
        concurrency: int,
        session: aiohttp.ClientSession | None,
        headers: Mapping[str, str],
        max_response_size: int | None = None,
        clock: Clock = SYSTEM_CLOCK,
        gate: Gate | None = None,
    ) -> None:
        self.base_url = base_url
        self.origin = base_url.origin()
        self.auth = auth
        self.timeout = timeout
        self.policy = policy
        self.clock = clock
        self.concurrency = concurrency
        self.max_response_size = max_response_size
        self._base = str(base_url)
        self._session = session
        self.owns_session = session is None
        self.closed = False
        self._semaphore = asyncio.Semaphore(concurrency)
        # The in-process pause always applies: a process that got the 429 does not wait
        # for a shared gate to tell it. A shared gate (e.g. RedisGate) comes on top.
        self._local = gate if isinstance(gate, LocalGate) else LocalGate(clock=clock)
        self.gate: Gate = gate if gate is not None else self._local
        self._shared: Gate | None = None if self.gate is self._local else self.gate
        self._headers = {"User-Agent": USER_AGENT, "Accept": "application/json", **headers}
        self._retrying: dict[RetryPolicy, tenacity.AsyncRetrying] = {}
        self._tracing = False

    @property
    def session_started(self) -> bool:
        return self._session is not None

    def _get_session(self) -> aiohttp.ClientSession:
        if self.closed:
            raise ClientClosedError("this PayrollClient is closed; create a new one")
        if self._session is None:
            asyncio.get_running_loop()  # the session belongs to the loop it is made in
            traces = []
            # Tracing costs every request ~18 us; it only feeds a DEBUG line, so it is set
            # up only when debug logging is on as the session starts.
            if logger.isEnabledFor(logging.DEBUG):
                trace = aiohttp.TraceConfig()
                trace.on_request_headers_sent.append(_on_headers_sent)
                traces.append(trace)
            self._tracing = bool(traces)
            self._session = aiohttp.ClientSession(
                connector=_GatedConnector(self._local, limit=self.concurrency),
                trace_configs=traces,
            )
        return self._session

    async def close(self) -> None:
        self.closed = True
        if self.owns_session and self._session is not None:
            await self._session.close()

    def url(self, path: str) -> str:
        return self._base + path

    async def pause(self, seconds: float) -> None:
        """Hold back every request of this client for ``seconds`` (a 429's Retry-After)."""
        await self._local.pause(seconds)
        if self._shared is not None:
            await self._shared.pause(seconds)

    async def send(
        self,
        method: str,
        url: str | URL,
        *,
        options: RequestOptions,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Response:
        """Send with retries; the ``Response`` of a 2xx, else a PayrollError.

        ``options`` override the transport's timeout and retry policy and add query
        parameters and headers. A DELETE answered 404 on a retry after an attempt that got
        no answer counts as done: the attempt that got no answer deleted it.
        """
        policy = given(options.retry, self.policy) or _SINGLE_ATTEMPT
        timeout = given(options.timeout, self.timeout) or _NO_TIMEOUT
        if options.extra_query:
            params = {**(params or {}), **options.extra_query}
        retrying = self._retrying.get(policy)
        if retrying is None:
            retrying = self._retrying[policy] = build_retrying(policy, self.clock.sleep)
        data = None
        headers = options.extra_headers
        send_headers = self._headers if not headers else {**self._headers, **headers}
        if json is not None:
            data = dumps(json)
            send_headers = {**send_headers, "Content-Type": "application/json"}
        unanswered = False
        async for attempt in retrying.copy():
            with attempt:
                try:
                    return await self._attempt(
                        method,
                        url,
                        params,
                        data,
                        send_headers,
                        timeout,
                        policy,
                        attempt.retry_state.attempt_number,
                        gone_is_done=unanswered and method == "DELETE",
                    )
                except APIConnectionError as exc:
                    unanswered = unanswered or exc.request_sent
                    raise
        raise AssertionError("unreachable: tenacity reraises the last failure")  # pragma: no cover

    async def _attempt(
        self,
        method: str,
        url: str | URL,
        params: Mapping[str, Any] | None,
        data: bytes | None,
        headers: Mapping[str, str],
        timeout: aiohttp.ClientTimeout,
        policy: RetryPolicy,
        attempt: int,
        *,
        gone_is_done: bool = False,
    ) -> Response:
        session = self._get_session()
        token: str | None = None
        refreshed = False
        # aiohttp sends an idempotent request again by itself when the connection drops
        # before an answer. For a DELETE that matters (a 404 then means "deleted by the
        # send that got no answer"), so its sends are counted; other methods pay nothing.
        sends: list[None] = []
        extra: dict[str, Any] = {}
        if method == "DELETE":
            extra["middlewares"] = (_counter(sends),)
        while True:
            sends.clear()
            async with self._semaphore:
                waited = time.perf_counter()
                await self._local.acquire()
                if self._shared is not None:
                    await self._shared.acquire()
                waited = time.perf_counter() - waited
                if token is None:
                    token = self.auth.static or await self.auth.token(
                        _limit(timeout), method, display_url(url, params)
                    )
                with _otel.attempt(method, str(url), attempt) as span:
                    if waited > _GATE_EVENT_MIN:
                        _otel.event("payroll_async.gate_wait", wait_s=waited)
                    started = time.perf_counter()
                    failure: APIConnectionError | None = None
                    try:
                        async with session.request(
                            method,
                            url,
                            params=params,
                            data=data,
                            headers={**headers, "Authorization": "Bearer " + token},
                            timeout=timeout,
                            allow_redirects=False,
                            raise_for_status=False,
                            trace_request_ctx=[] if self._tracing else None,
                            **extra,
                        ) as response:
                            body = await self._read(response, method)
                            links, link_error = _links(response)
                    except _GateClosed:
                        continue  # not sent: wait for the pause to end, then try again
                    except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
                        failure = connection_error(exc, method, url, params, timeout)
                    elapsed = time.perf_counter() - started
                    if failure is not None:
                        _otel.finish(span, method, None, elapsed, type(failure).__name__)
                        # Raised here, outside the except block, so that aiohttp's exception
                        # (whose request info holds the Authorization header) is not chained.
                        raise failure
                    _otel.finish(
                        span,
                        method,
                        response.status,
                        elapsed,
                        None if response.status < 400 else str(response.status),
                    )
            status = response.status
            if logger.isEnabledFor(logging.DEBUG):
                rid = request_id(response.headers)
                logger.debug(
                    "%s %s -> %d (attempt %d, %.1f ms%s)",
                    method,
                    response.url.path_qs,
                    status,
                    attempt,
                    (time.perf_counter() - started) * 1000,
                    f", request id {rid}" if rid else "",
                    extra={
                        "method": method,
                        "status": status,
                        "attempt": attempt,
                        "request_id": rid,
                    },
                )
            if _assumed.SUCCESS_MIN <= status <= _assumed.SUCCESS_MAX:
                return Response(
                    method=method,
                    status=status,
                    url=str(response.url),
                    headers=response.headers,
                    body=body,
                    links=links,
                    link_error=link_error,
                )
            if status == 401 and self.auth.can_refresh and not refreshed:
                refreshed = True
                logger.info("%s %s -> 401: refreshing the token", method, response.url.path)
                token = await self.auth.refresh(
                    token, _limit(timeout), method, display_url(url, params)
                )
                continue
            if status == 404 and (gone_is_done or len(sends) > 1):
                logger.info(
                    "%s %s -> 404 after an attempt that got no answer: that attempt deleted it",
                    method,
                    response.url.path,
                )
                return Response(
                    method=method,
                    status=status,
                    url=str(response.url),
                    headers=response.headers,
                    body=b"",
                )
            error = status_error(
                method=method,
                url=str(response.url),
                status=status,
                reason=response.reason,
                headers=response.headers,
                body=body,
            )
            if (
                isinstance(error, RateLimitError)
                and error.retry_after is not None
                and error.retry_after <= policy.max_retry_after
            ):
                await self.pause(error.retry_after)
            if isinstance(error, RateLimitError):
                _otel.rate_limited(method, error.retry_after)
            raise error

    async def _read(self, response: aiohttp.ClientResponse, method: str) -> bytes:
        """The body, at most ``max_response_size`` bytes after decompression.

        An error body is read only as far as its excerpt needs. Past the limit the
        connection is closed (never reused half-read) and ResponseDecodeError is raised.
        """
        success = _assumed.SUCCESS_MIN <= response.status <= _assumed.SUCCESS_MAX
        limit = self.max_response_size
        if not success:
            limit = _ERROR_BODY_MAX if limit is None else min(limit, _ERROR_BODY_MAX)
        elif limit is None:
            return await response.read()
        length = response.content_length
        if length is not None and length > limit and not response.headers.get("Content-Encoding"):
            chunks: list[bytes] = []
            size = length
        else:
            chunks = []
            size = 0
            async for chunk in response.content.iter_any():
                size += len(chunk)
                if size > limit:
                    break
                chunks.append(chunk)
        if size <= limit:
            return b"".join(chunks)
        response.close()
        if not success:  # the status error keeps what was read: its excerpt needs no more
            return b"".join(chunks)
        raise ResponseDecodeError(
            f"the response body is larger than max_response_size ({limit:,} bytes); "
            "reading stopped. Raise it with PayrollClient(max_response_size=...) "
            "(None for no limit)",
            status=response.status,
            url=str(response.url),
            body_excerpt=excerpt(b"".join(chunks)),
            method=method,
        )


_ERROR_BODY_MAX = 64 * 1024
_GATE_EVENT_MIN = 0.001  # seconds at the gate worth an event on the attempt's span
_SINGLE_ATTEMPT = RetryPolicy(max_attempts=1)
_NO_TIMEOUT = aiohttp.ClientTimeout(total=None)


def _links(response: aiohttp.ClientResponse) -> tuple[dict[str, str], str | None]:
    """rel -> URL from the Link header (the first of each rel), or why it cannot be read."""
    links: dict[str, str] = {}
    if "Link" not in response.headers:
        return links, None
    try:
        for rel, link in response.links.items():
            links.setdefault(str(rel), str(link["url"]))
    except (ValueError, TypeError, KeyError):
        return {}, f"cannot be parsed: {response.headers['Link'][:200]!r}"
    return links, None


def _counter(sends: list[None]) -> aiohttp.ClientMiddlewareType:
    async def count(
        request: ClientRequest, handler: aiohttp.ClientHandlerType
    ) -> aiohttp.ClientResponse:
        sends.append(None)
        return await handler(request)

    return count


def _limit(timeout: aiohttp.ClientTimeout) -> float | None:
    """The longest an attempt may take under ``timeout``, for a token provider's answer."""
    return timeout.total if timeout.total is not None else timeout.sock_read
