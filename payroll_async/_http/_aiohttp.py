"""The client's own transport: aiohttp, below the seam. The only module that sends.

`AiohttpTransport` owns (or borrows) the ``ClientSession`` and its connector (with the
gate's hook: a request held at the connector while a pause begins is not sent), applies
the route (the proxy and TLS), reads the body within its bound (``read_body``) and
types a failed send (no answer) as ``APIConnectionError``. No aiohttp object leaves it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import aiohttp
from aiohttp.client_reqrep import ClientRequest
from aiohttp.connector import Connection
from aiohttp.tracing import Trace

from .._core import _assumed
from .._core._exceptions import ClientClosedError
from ._failures import connection_error
from ._gate import GateClosed, LocalGate
from ._network import Route, tunnel_failure
from ._seam import ERROR_BODY_MAX, Timeout, TransportRequest, TransportResponse
from ._status import too_large

__all__ = ["AiohttpTransport"]

logger: logging.Logger = logging.getLogger("payroll_async")


class GatedConnector(aiohttp.TCPConnector):
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
        try:
            conn = await super().connect(req, traces, timeout)
        except aiohttp.ClientError as exc:
            # Here, and only here, a failure of the proxy's CONNECT is known as such.
            failure = tunnel_failure(exc, req.proxy)
            if failure is exc:
                raise
            raise failure from None
        if not self._gate.is_open():
            conn.release()
            raise GateClosed
        return conn


_ENDED_WITH_LOOP = (
    "this PayrollClient belonged to an event loop that has ended (an earlier "
    "asyncio.run()), and was closed with it; create a client in each event loop"
)


class AiohttpTransport:
    """aiohttp's session as the seam's transport (the `AsyncTransport` the client makes).

    It crosses the seam as any transport does (``handle_async_request``), and tells the
    client what the seam's optional part asks (`TransportStatus`): ``closed_reason`` once
    its event loop ended, ``must_close`` when it made its session.
    """

    def __init__(
        self,
        *,
        session: aiohttp.ClientSession | None,
        route: Route,
        gate: LocalGate,
        concurrency: int,
    ) -> None:
        self.route: Route = route
        """The proxy and TLS of every request (resolved once, by the client)."""
        self._session = session
        self.owns_session: bool = session is None
        self.must_close: bool = self.owns_session
        """Whether the client must close it (its session is its own): `TransportStatus`."""
        self._gate = gate
        self._concurrency = concurrency
        self.closed: bool = False
        self.loop_ended: bool = False
        """Whether it was closed because its event loop ended."""
        self.closed_reason: str | None = None
        """Why it can send no more of itself (its event loop ended): `TransportStatus`."""
        self._timeout: tuple[Timeout, aiohttp.ClientTimeout] = (
            _NO_TIMEOUT,
            aiohttp.ClientTimeout(total=None),
        )
        """The last `Timeout` sent with and aiohttp's of it (one per client, mostly)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watch: asyncio.Task[None] | None = None
        self._keywords: dict[str, Any] = {
            "allow_redirects": False,
            "raise_for_status": False,
            **route.request,
        }
        """What every request adds to aiohttp's keywords (read only): made once."""
        self.tracing: bool = False
        """Whether sends are traced (debug logging was on as the session started, or aiohttp
        counts a request's sends no other way: before 3.12)."""

    def session(self) -> aiohttp.ClientSession:
        """The session, made on first use in the running loop (the loop it belongs to).

        Closed with its loop, it says so itself (to a client that wraps it in a transport
        of its own too)."""
        if self.closed_reason is not None:
            raise ClientClosedError(self.closed_reason)
        loop = asyncio.get_running_loop()
        if self._loop is not loop and self._loop is not None and not self.loop_ended:
            raise ClientClosedError(
                "this PayrollClient belongs to another event loop (the one it was first "
                "used in); create a client in each event loop"
            )
        if self._session is None:
            self._loop = loop
            if self.owns_session:
                self._watch = loop.create_task(self._close_with_loop(), name="payroll_async")
                # A loop closed without asyncio.run() (which cancels it) drops the watch
                # pending: asyncio has no public way to say that is expected.
                self._watch._log_destroy_pending = False  # type: ignore[attr-defined]  # noqa: SLF001
            traces = session_traces()
            self.tracing = bool(traces)
            if self.route.proxy is not None:
                logger.debug("through the proxy %s (%s)", self.route.shown, self.route.source)
            self._session = aiohttp.ClientSession(
                connector=GatedConnector(self._gate, limit=self._concurrency, ssl=self.route.ssl),
                trace_configs=traces,
            )
        return self._session

    async def _close_with_loop(self) -> None:
        """Close the session when its event loop ends (``asyncio.run`` cancels this task).

        A client used in one ``asyncio.run()`` and then in another would otherwise hold a
        session of a closed loop: the second run fails inside aiohttp, and the session is
        reported unclosed when it is collected.
        """
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            if not self.closed:
                self.closed = self.loop_ended = True
                self.closed_reason = _ENDED_WITH_LOOP
                if self._session is not None:
                    await self._session.close()
            raise

    async def aclose(self) -> None:
        self.closed = True
        watch, self._watch = self._watch, None
        if watch is not None and watch.get_loop() is asyncio.get_running_loop():
            watch.cancel()
        if self.owns_session and self._session is not None:
            await self._session.close()
            await asyncio.sleep(0)  # a TLS transport's close runs its callback (aiohttp 3.9)

    def client_timeout(self, timeout: Timeout) -> aiohttp.ClientTimeout:
        """aiohttp's ``ClientTimeout`` of the seam's `Timeout` (the last one kept)."""
        last = self._timeout
        if last[0] is timeout or last[0] == timeout:
            return last[1]
        made = aiohttp.ClientTimeout(
            total=timeout.total,
            connect=timeout.connect,
            sock_read=timeout.sock_read,
            sock_connect=timeout.sock_connect,
        )
        self._timeout = (timeout, made)
        return made

    async def handle_async_request(self, request: TransportRequest) -> TransportResponse:
        """Send once through the session; read the body within its bound: the answer,
        read whole.

        Raises ``GateClosed`` when the gated connector holds the request back (nothing
        was sent), ``APIConnectionError`` (``APITimeoutError``, ``ProxyError``) when no
        answer came, ``ResponseDecodeError`` when a 2xx body passes its bound.
        """
        method, url, headers = request.method, request.url, request.headers
        timeout = request.timeout
        session = self.session()
        # aiohttp sends an idempotent request again by itself when the connection drops
        # before an answer. For a DELETE that matters (a 404 then means "deleted by the send
        # that got no answer"), so its sends are counted; other methods pay nothing.
        sends: list[object] = []
        keywords = self._keywords
        if method == "DELETE":
            keywords = {**keywords, **count_sends(sends)}
        if self.tracing and "trace_request_ctx" not in keywords:
            keywords = {**keywords, "trace_request_ctx": []}
        failure = None
        try:
            async with session.request(
                method,
                url,
                data=request.content,
                headers=headers,
                timeout=self.client_timeout(timeout),
                **keywords,
            ) as response:
                body = await read_body(response, method, request.max_response_size, headers)
        except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
            failure = connection_error(exc, method, url, None, timeout, _token_of(headers))
        if failure is not None:
            # Raised here, outside the except block, so that aiohttp's exception (whose
            # request info holds the Authorization header) is not chained.
            raise failure
        return TransportResponse(
            response.status,
            response.headers,
            body,
            response.url,
            response.reason,
            max(len(sends), 1),
        )


_NO_TIMEOUT = Timeout()


def _token_of(headers: Mapping[str, str]) -> str:
    authorization = headers.get("Authorization", "")
    return authorization[7:] if authorization.startswith("Bearer ") else ""


async def read_body(
    response: aiohttp.ClientResponse, method: str, limit: int | None, sent: Mapping[str, str]
) -> bytes:
    """The body, at most ``limit`` bytes after decompression (None: no limit).

    An error body is read only as far as its excerpt needs. Past the limit the connection
    is closed (never reused half-read) and ResponseDecodeError is raised; its excerpt has
    the token of the headers ``sent`` redacted.
    """
    success = _assumed.SUCCESS_MIN <= response.status <= _assumed.SUCCESS_MAX
    if not success:
        limit = ERROR_BODY_MAX if limit is None else min(limit, ERROR_BODY_MAX)
    elif limit is None:
        return await response.read()
    length = response.content_length
    chunks: list[bytes] = []
    encoded = response.headers.get("Content-Encoding")
    if success and length is not None and length <= limit and not encoded:
        return await response.read()  # a declared length within the bound: read it at once
    if length is not None and length > limit and not encoded:
        size = length
    else:
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
    raise too_large(method, response.status, response.url, limit, b"".join(chunks), _token_of(sent))


_MIDDLEWARES = hasattr(aiohttp, "ClientMiddlewareType")
"""aiohttp 3.12 and later take middlewares per request; before, the sends of a request are
counted by the trace of sent headers every session then carries (``session_traces``)."""


def count_sends(sends: list[object]) -> dict[str, Any]:
    """aiohttp's keywords that count the sends of one request into ``sends``.

    aiohttp 3.10 and later send an idempotent request again themselves when a pooled
    connection turns out to be closed (3.9 never does): a middleware of the request counts
    each send, or, on aiohttp before 3.12, the trace of sent headers.
    """
    if _MIDDLEWARES:
        return {"middlewares": (_send_counter(sends),)}
    return {"trace_request_ctx": sends}


def _send_counter(sends: list[object]) -> aiohttp.ClientMiddlewareType:
    async def count(
        request: ClientRequest, handler: aiohttp.ClientHandlerType
    ) -> aiohttp.ClientResponse:
        sends.append(None)
        return await handler(request)

    return count


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


def session_traces() -> list[aiohttp.TraceConfig]:
    """The trace of sends, when debug logging is on as a session starts, or when aiohttp
    has no middlewares to count a request's sends with (before 3.12); else none.

    Tracing costs every request ~18 us; with middlewares it only feeds a DEBUG line.
    """
    if _MIDDLEWARES and not logger.isEnabledFor(logging.DEBUG):
        return []
    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(_on_headers_sent)
    return [trace]
