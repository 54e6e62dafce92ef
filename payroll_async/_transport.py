"""One request, done properly: the session, and the retry loop around its attempts.

Everything above this module (pagination, resources) calls ``Transport.send()`` and
gets back a ``Response`` (status, URL, headers, links, body) for a 2xx, or a typed
``PayrollError``. No aiohttp object leaves this module. One attempt (gate, token, send,
status) is ``_attempt``'s; the body read and the Link header are ``_wire``'s.
"""

from __future__ import annotations

import asyncio
import logging
import platform
from collections.abc import Mapping
from typing import Any

import aiohttp
import tenacity
from yarl import URL

from ._attempt import Request, attempt
from ._auth import Auth
from ._clock import SYSTEM_CLOCK, Clock
from ._exceptions import APIConnectionError, ClientClosedError, PayrollError
from ._gate import Gate, GatedConnector, LocalGate
from ._json import dumps
from ._options import FinalOptions
from ._response import Response
from ._retry import RetryPolicy, build_retrying
from ._version import __version__
from ._wire import debug_traces

__all__ = ["DEFAULT_HEADERS", "Transport"]

logger: logging.Logger = logging.getLogger("payroll_async")

USER_AGENT = (
    f"payroll-async/{__version__} python/{platform.python_version()} aiohttp/{aiohttp.__version__}"
)
DEFAULT_HEADERS: Mapping[str, str] = {"User-Agent": USER_AGENT, "Accept": "application/json"}


class Transport:
    """Owns (or borrows) the aiohttp session; sends requests with their retry policy."""

    def __init__(
        self,
        *,
        base_url: URL,
        auth: Auth,
        concurrency: int,
        session: aiohttp.ClientSession | None,
        clock: Clock = SYSTEM_CLOCK,
        gate: Gate | None = None,
    ) -> None:
        self.base_url: URL = base_url
        self.origin: URL = base_url.origin()
        self.auth: Auth = auth
        self.clock: Clock = clock
        self.concurrency: int = concurrency
        self._base = str(base_url)
        self._session = session
        self.owns_session: bool = session is None
        self.closed: bool = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_ended = False
        self._watch: asyncio.Task[None] | None = None
        self.semaphore: asyncio.Semaphore = asyncio.Semaphore(concurrency)
        """Caps this client's requests in flight (its copies' too)."""
        # The in-process pause always applies: a process that got the 429 does not wait
        # for a shared gate to tell it. A shared gate (e.g. RedisGate) comes on top.
        self.local_gate: LocalGate = gate if isinstance(gate, LocalGate) else LocalGate(clock=clock)
        self.gate: Gate = gate if gate is not None else self.local_gate
        self.shared_gate: Gate | None = None if self.gate is self.local_gate else self.gate
        self._retrying: dict[RetryPolicy, tenacity.AsyncRetrying] = {}
        self.tracing: bool = False
        """Whether sends are traced (debug logging was on as the session started)."""

    @property
    def session_started(self) -> bool:
        return self._session is not None

    def closed_error(self) -> ClientClosedError:
        """Why this client can send no more: closed, or closed with its event loop."""
        if self._loop_ended:
            return ClientClosedError(
                "this PayrollClient belonged to an event loop that has ended (an earlier "
                "asyncio.run()), and was closed with it; create a client in each event loop"
            )
        return ClientClosedError("this PayrollClient is closed; create a new one")

    def session(self) -> aiohttp.ClientSession:
        """The session, made on first use in the running loop (the loop it belongs to)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop and self._loop is not None and not self._loop_ended:
            raise ClientClosedError(
                "this PayrollClient belongs to another event loop (the one it was first "
                "used in); create a client in each event loop"
            )
        if self.closed:
            raise self.closed_error()
        if self._session is None:
            self._loop = loop
            if self.owns_session:
                self._watch = loop.create_task(self._close_with_loop(), name="payroll_async")
                self._watch._log_destroy_pending = False  # type: ignore[attr-defined]
            traces = debug_traces()
            self.tracing = bool(traces)
            self._session = aiohttp.ClientSession(
                connector=GatedConnector(self.local_gate, limit=self.concurrency),
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
                self.closed = self._loop_ended = True
                if self._session is not None:
                    await self._session.close()
            raise

    async def close(self) -> None:
        self.closed = True
        watch, self._watch = self._watch, None
        if watch is not None and watch.get_loop() is asyncio.get_running_loop():
            watch.cancel()
        if self.owns_session and self._session is not None:
            await self._session.close()

    def url(self, path: str) -> URL:
        """The URL of ``path`` under the base URL (paths are built of checked parts)."""
        return URL(self._base + path)

    async def pause(self, seconds: float) -> None:
        """Hold back every request of this client for ``seconds`` (a 429's Retry-After)."""
        await self.local_gate.pause(seconds)
        if self.shared_gate is not None:
            await self.shared_gate.pause(seconds)

    async def send(
        self,
        method: str,
        url: URL,
        *,
        options: FinalOptions,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Response:
        """Send with retries; the ``Response`` of a 2xx, else a PayrollError.

        ``options`` is the request's final record: timeout, retry policy, headers, extra
        query parameters, body bound. A DELETE answered 404 on a retry after an attempt
        that got no answer counts as done: the attempt that got no answer deleted it.
        """
        if options.extra_query:
            params = {**(params or {}), **options.extra_query}
        headers = options.headers
        data = None
        if json is not None:
            data = dumps(json)
            headers = {**headers, "Content-Type": "application/json"}
        request = Request(method, url, params, data, headers, options)
        # The first attempt goes out directly: a request that succeeds (nearly all) costs
        # no retry controller. A failure is handed to tenacity as its first attempt's
        # outcome, so that what follows (predicate, waits, logs, stop) is tenacity's.
        try:
            return await attempt(self, request, 1)
        except PayrollError as exc:
            first = exc
        return await self._retry(request, first)

    async def _retry(self, request: Request, first: PayrollError) -> Response:
        """The attempts after a failed first one, under the request's retry policy."""
        policy = request.options.retry
        retrying = self._retrying.get(policy)
        if retrying is None:
            retrying = self._retrying[policy] = build_retrying(policy, self.clock.sleep)
        unanswered = isinstance(first, APIConnectionError) and first.request_sent
        async for trial in retrying.copy():
            with trial:
                number = trial.retry_state.attempt_number
                if number == 1:
                    raise first
                try:
                    return await attempt(
                        self,
                        request,
                        number,
                        gone_is_done=unanswered and request.method == "DELETE",
                    )
                except APIConnectionError as exc:
                    unanswered = unanswered or exc.request_sent
                    raise
        raise AssertionError("unreachable: tenacity reraises the last failure")  # pragma: no cover
