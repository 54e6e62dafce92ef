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


def decode_error(message: str, *, status: int, url: str, body: bytes) -> ResponseDecodeError:
    """The error for a 2xx body that is not what was expected, with an excerpt of it."""
    return ResponseDecodeError(message, status=status, url=url, body_excerpt=_excerpt(body))


def decode_json(body: bytes, *, status: int, url: str) -> Any:
    """A 2xx body as JSON, or ResponseDecodeError with an excerpt of what came instead."""
    try:
        return loads(body)
    except ValueError as exc:
        raise decode_error(
            f"response is not valid JSON ({exc})", status=status, url=url, body=body
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
    if status == 429:
        return RateLimitError(
            message,
            errors=errors,
            headers=headers,
            method=method,
            url=url,
            retry_after=parse_retry_after(headers.get("Retry-After")),
        )
    cls = _STATUS_ERRORS.get(status) or (ServerError if status >= 500 else APIStatusError)
    return cls(message, status=status, errors=errors, headers=headers, method=method, url=url)


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
    ) -> None:
        self.base_url = base_url
        self.origin = base_url.origin()
        self.auth = auth
        self.timeout = timeout
        self.policy = policy
        self.concurrency = concurrency
        self._base = str(base_url)
        self._session = session
        self.owns_session = session is None
        self.closed = False
        self._semaphore = asyncio.Semaphore(concurrency)
        self._resume_at = 0.0
        self._headers = {"User-Agent": USER_AGENT, "Accept": "application/json", **headers}
        self._retrying: dict[RetryPolicy, tenacity.AsyncRetrying] = {}
        self._tracing = False
        # Tests replace these two to run retry waits on a fake clock.
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        self.clock: Callable[[], float] = time.monotonic

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
                connector=aiohttp.TCPConnector(limit=self.concurrency),
                trace_configs=traces,
            )
        return self._session

    async def close(self) -> None:
        self.closed = True
        if self.owns_session and self._session is not None:
            await self._session.close()

    def url(self, path: str) -> str:
        return self._base + path

    def pause(self, seconds: float) -> None:
        """Hold back every request of this client for ``seconds`` (a 429's Retry-After)."""
        resume_at = self.clock() + seconds
        if resume_at > self._resume_at:
            self._resume_at = resume_at
            logger.info("rate limited: pausing all requests for %.2fs", seconds)

    async def _wait_for_gate(self) -> None:
        while True:
            target = self._resume_at
            delay = target - self.clock()
            if delay <= 0:
                return
            await self.sleep(delay)
            if self._resume_at == target:  # not extended by another 429 meanwhile
                return

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
        """Send with retries; the response and its body for a 2xx, else a PayrollError."""
        policy = policy or self.policy
        retrying = self._retrying.get(policy)
        if retrying is None:
            retrying = self._retrying[policy] = build_retrying(policy, self._sleep)
        data = None
        send_headers = self._headers if not headers else {**self._headers, **headers}
        if json is not None:
            data = dumps(json)
            send_headers = {**send_headers, "Content-Type": "application/json"}
        async for attempt in retrying.copy():
            with attempt:
                return await self._attempt(
                    method,
                    url,
                    params,
                    data,
                    send_headers,
                    timeout or self.timeout,
                    policy,
                    attempt.retry_state.attempt_number,
                )
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
    ) -> tuple[aiohttp.ClientResponse, bytes]:
        session = self._get_session()
        refreshed = False
        while True:
            async with self._semaphore:
                await self._wait_for_gate()
                token = await self.auth.token()
                started = time.perf_counter()
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
                    ) as response:
                        body = await response.read()
                except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
                    raise _connection_error(exc, method, url, params, timeout) from exc
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
                await self.auth.refresh(token)
                continue
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
                self.pause(error.retry_after)
            raise error


def _connection_error(
    exc: BaseException,
    method: str,
    url: str | URL,
    params: Mapping[str, Any] | None,
    timeout: aiohttp.ClientTimeout,
) -> APIConnectionError:
    """The typed error for a request that got no response, with what a retry needs to know."""
    where = _display(url, params)
    if isinstance(exc, asyncio.TimeoutError):  # aiohttp's timeouts are TimeoutErrors too
        return APITimeoutError(
            f"{method} {where} timed out after {timeout.total}s",
            method=method,
            url=where,
            request_sent=not isinstance(exc, aiohttp.ConnectionTimeoutError),
        )
    if isinstance(exc, aiohttp.ClientSSLError):
        # A failed TLS handshake or certificate will fail the same way again.
        return APIConnectionError(
            f"{method} {where}: TLS failed ({exc})",
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
        f"{method} {where}: {type(exc).__name__}: {exc}", method=method, url=where
    )


def _display(url: str | URL, params: Mapping[str, Any] | None) -> str:
    target = URL(url) if isinstance(url, str) else url
    return str(target.update_query(params) if params else target)
