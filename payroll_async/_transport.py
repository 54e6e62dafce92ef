"""One request, done properly: headers, send, map failures, retry, pause on 429, refresh.

Everything above this module (pagination, resources) calls :meth:`Transport.request` and
gets back the response and its body bytes for a 2xx, or a typed :class:`PayrollError`.
"""

from __future__ import annotations

import asyncio
import http
import logging
import platform
import time
from collections.abc import Awaitable, Callable, Mapping
from types import SimpleNamespace
from typing import Any

import aiohttp
import tenacity
from aiohttp.client_reqrep import ClientRequest
from aiohttp.connector import Connection
from aiohttp.tracing import Trace
from yarl import URL

from . import _assumed
from ._auth import Auth
from ._exceptions import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ClientClosedError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ResponseDecodeError,
    ServerError,
)
from ._json import dumps, loads
from ._retry import RetryPolicy, build_retrying, parse_retry_after
from ._version import __version__

__all__ = ["Transport", "decode_error", "decode_json", "status_error"]

logger = logging.getLogger("payroll_async")

USER_AGENT = (
    f"payroll-async/{__version__} python/{platform.python_version()} aiohttp/{aiohttp.__version__}"
)
_STATUS_ERRORS: Mapping[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    429: RateLimitError,
}
_EXCERPT = 200


def _excerpt(body: bytes) -> str:
    text = body[:_EXCERPT].decode("utf-8", "replace")
    return text + ("..." if len(body) > _EXCERPT else "")


def decode_error(
    message: str, *, status: int, url: str, body: bytes, method: str = "GET"
) -> ResponseDecodeError:
    """The error for a 2xx body that is not what was expected, with an excerpt of it."""
    return ResponseDecodeError(
        message, status=status, url=url, body_excerpt=_excerpt(body), method=method
    )


def decode_json(body: bytes, *, status: int, url: str, method: str = "GET") -> Any:
    """A 2xx body as JSON, or ResponseDecodeError with an excerpt of what came instead."""
    try:
        return loads(body)
    except ValueError as exc:
        raise decode_error(
            f"response is not valid JSON ({exc})", status=status, url=url, body=body, method=method
        ) from None


def _error_details(
    status: int, reason: str | None, headers: Mapping[str, str], body: bytes
) -> tuple[str, tuple[str, ...]]:
    """message and errors from the service's error body, or a sensible stand-in."""
    phrase = reason or _phrase(status)
    if not body.strip():
        return f"{phrase} (empty body)", ()
    try:
        data = loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        raw_errors = data.get("errors")
        errors = tuple(str(item) for item in raw_errors) if isinstance(raw_errors, list) else ()
        return data["message"], errors
    content_type = headers.get("Content-Type", "")
    if "html" in content_type or body.lstrip()[:1] == b"<":
        return f"{phrase} (an HTML page instead of an error body)", ()
    return f"{phrase}: {_excerpt(body)}", ()


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


def status_error(
    *,
    method: str,
    url: str,
    status: int,
    reason: str | None,
    headers: Mapping[str, str],
    body: bytes,
) -> APIStatusError:
    """The typed error for a non-2xx response."""
    message, errors = _error_details(status, reason, headers, body)
    cls = _STATUS_ERRORS.get(status) or (ServerError if status >= 500 else APIStatusError)
    return cls(
        message,
        status=status,
        errors=errors,
        headers=headers,
        method=method,
        url=url,
        # Retry-After means "wait this long" on a 429 and on a 503 (RFC 9110 10.2.3).
        retry_after=parse_retry_after(headers.get("Retry-After")) if status in (429, 503) else None,
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


class _Gate:
    """What every request of a client passes before it is sent: the client-wide 429 pause.

    ``acquire()`` waits until no pause is in force; ``pause(seconds)`` holds every request
    back until then (a later pause can only extend it).
    """

    def __init__(self) -> None:
        self.clock: Callable[[], float] = time.monotonic
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        self._resume_at = 0.0

    def is_open(self) -> bool:
        return self._resume_at <= self.clock()

    async def acquire(self) -> None:
        while True:
            target = self._resume_at
            delay = target - self.clock()
            if delay <= 0:
                return
            await self.sleep(delay)
            if self._resume_at == target:  # not extended by another 429 meanwhile
                return

    async def pause(self, seconds: float) -> None:
        resume_at = self.clock() + seconds
        if resume_at > self._resume_at:
            self._resume_at = resume_at
            logger.info("rate limited: pausing all requests for %.2fs", seconds)


class _GateClosed(Exception):
    """A pause began while this request waited for a connection: it was not sent."""


class _GatedConnector(aiohttp.TCPConnector):
    """A connector that looks at the gate again once it has a connection.

    Between passing the gate and getting a connection a request can wait; a 429 answered
    meanwhile must still hold it back. Checking here, the last await before the request is
    written, closes that window without a per-request trace hook.
    """

    def __init__(self, gate: _Gate, **kwargs: Any) -> None:
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
    ) -> None:
        self.base_url = base_url
        self.origin = base_url.origin()
        self.auth = auth
        self.timeout = timeout
        self.policy = policy
        self.concurrency = concurrency
        self.max_response_size = max_response_size
        self._base = str(base_url)
        self._session = session
        self.owns_session = session is None
        self.closed = False
        self._semaphore = asyncio.Semaphore(concurrency)
        self._gate = _Gate()
        self._headers = {"User-Agent": USER_AGENT, "Accept": "application/json", **headers}
        self._retrying: dict[RetryPolicy, tenacity.AsyncRetrying] = {}
        self._tracing = False

    # Tests set these two to run retry waits and the pause on a fake clock.
    @property
    def sleep(self) -> Callable[[float], Awaitable[None]]:
        return self._gate.sleep

    @sleep.setter
    def sleep(self, value: Callable[[float], Awaitable[None]]) -> None:
        self._gate.sleep = value

    @property
    def clock(self) -> Callable[[], float]:
        return self._gate.clock

    @clock.setter
    def clock(self, value: Callable[[], float]) -> None:
        self._gate.clock = value

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
                connector=_GatedConnector(self._gate, limit=self.concurrency),
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
        await self._gate.pause(seconds)

    async def request(
        self,
        method: str,
        url: str | URL,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        policy: RetryPolicy | None = None,
        timeout: aiohttp.ClientTimeout | None = None,
    ) -> tuple[aiohttp.ClientResponse, bytes]:
        """Send with retries; the response and its body for a 2xx, else a PayrollError.

        A DELETE answered 404 on a retry after an attempt that got no answer counts as
        done: the attempt that got no answer deleted it.
        """
        policy = policy or self.policy
        retrying = self._retrying.get(policy)
        if retrying is None:
            retrying = self._retrying[policy] = build_retrying(policy, self._sleep)
        data = None
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
                        timeout or self.timeout,
                        policy,
                        attempt.retry_state.attempt_number,
                        gone_is_done=unanswered and method == "DELETE",
                    )
                except APIConnectionError as exc:
                    unanswered = unanswered or exc.request_sent
                    raise
        raise AssertionError("unreachable: tenacity reraises the last failure")  # pragma: no cover

    async def _sleep(self, seconds: float) -> None:
        await self.sleep(seconds)

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
    ) -> tuple[aiohttp.ClientResponse, bytes]:
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
                await self._gate.acquire()
                if token is None:
                    token = await self.auth.token(_limit(timeout), method, _display(url, params))
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
                except _GateClosed:
                    continue  # not sent: wait for the pause to end, then try again
                except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
                    failure = _connection_error(exc, method, url, params, timeout)
                if failure is not None:
                    # Raised here, outside the except block, so that aiohttp's exception
                    # (whose request info holds the Authorization header) is not chained.
                    raise failure
            status = response.status
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "%s %s -> %d (attempt %d, %.1f ms)",
                    method,
                    response.url.path_qs,
                    status,
                    attempt,
                    (time.perf_counter() - started) * 1000,
                    extra={"method": method, "status": status, "attempt": attempt},
                )
            if _assumed.SUCCESS_MIN <= status <= _assumed.SUCCESS_MAX:
                return response, body
            if status == 401 and self.auth.can_refresh and not refreshed:
                refreshed = True
                logger.info("%s %s -> 401: refreshing the token", method, response.url.path)
                token = await self.auth.refresh(
                    token, _limit(timeout), method, _display(url, params)
                )
                continue
            if status == 404 and (gone_is_done or len(sends) > 1):
                logger.info(
                    "%s %s -> 404 after an attempt that got no answer: that attempt deleted it",
                    method,
                    response.url.path,
                )
                return response, b""
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
                await self._gate.pause(error.retry_after)
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
            body_excerpt=_excerpt(b"".join(chunks)),
            method=method,
        )


_ERROR_BODY_MAX = 64 * 1024


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


def _connection_error(
    exc: BaseException,
    method: str,
    url: str | URL,
    params: Mapping[str, Any] | None,
    timeout: aiohttp.ClientTimeout,
) -> APIConnectionError:
    """The typed error for a request that got no response, with what a retry needs to know.

    Its text keeps what aiohttp said, but none of aiohttp's request info: that holds the
    request's headers, the token among them.
    """
    where = _display(url, params)
    if isinstance(exc, asyncio.TimeoutError):  # aiohttp's timeouts are TimeoutErrors too
        return APITimeoutError(
            f"{method} {where} timed out {_describe_timeout(exc, timeout)}",
            method=method,
            url=where,
            request_sent=not isinstance(exc, aiohttp.ConnectionTimeoutError),
        )
    if isinstance(exc, aiohttp.ClientSSLError):
        # A failed TLS handshake or certificate will fail the same way again.
        return APIConnectionError(
            f"{method} {where}: TLS failed ({_describe(exc)})",
            method=method,
            url=where,
            request_sent=False,
            retryable=False,
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        return APIConnectionError(
            f"{method} {where}: cannot connect ({exc.os_error})",
            method=method,
            url=where,
            request_sent=False,
        )
    return APIConnectionError(
        f"{method} {where}: {type(exc).__name__}: {_describe(exc)}", method=method, url=where
    )


def _describe(exc: BaseException) -> str:
    """What an aiohttp exception says, without its request info (headers, token)."""
    if isinstance(exc, aiohttp.ClientResponseError):
        text = exc.message if isinstance(exc.message, str) else ""
        return f"status {exc.status}, {text}" if exc.status else text or "malformed response"
    return str(exc)


def _describe_timeout(exc: BaseException, timeout: aiohttp.ClientTimeout) -> str:
    """Which of the timeout's limits ran out, as far as aiohttp tells."""
    names: tuple[str, ...]
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        names = ("sock_connect", "connect", "total")
    elif isinstance(exc, aiohttp.SocketTimeoutError):
        names = ("sock_read", "total")
    else:
        names = ("total", "sock_read", "connect", "sock_connect")
    for name in names:
        value = getattr(timeout, name)
        if value is not None:
            suffix = "" if name == "total" else f" ({name})"
            return f"after {value:g}s{suffix}"
    return "(no limit set)"


def _display(url: str | URL, params: Mapping[str, Any] | None) -> str:
    target = URL(url) if isinstance(url, str) else url
    return str(target.update_query(params) if params else target)
