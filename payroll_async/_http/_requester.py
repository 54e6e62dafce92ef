"""One request, done properly: the loop over attempts, and each attempt's steps.

Everything above this module (pagination, resources, the client's generic calls) calls
``Requester.loop()`` with a request (``_attempt.build_request``) and gets back a
``Response`` (status, URL, headers, body) for a 2xx, or a typed ``PayrollError``. Read it
top down: ``loop`` (the loop over attempts; ``_retry.Retries`` decides) -> ``attempt``
(admission, token, exchange, meaning, as named steps) -> ``_attempt.exchange`` -> the
transport seam (``_seam.AsyncTransport.handle_async_request``), which every transport
crosses alike: aiohttp's by default (``_aiohttp.AiohttpTransport``), or the user's
``transport=``. Nothing here knows which: what the client asks a transport about itself
is the seam's optional part (``_seam.TransportStatus``).
"""

from __future__ import annotations

import asyncio
import datetime
import enum
import logging
import platform
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import attrs
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from .._core._clock import SYSTEM_CLOCK, Clock
from .._core._exceptions import APIConnectionError, ClientClosedError, PayrollError
from .._core._redact import shown_url
from .._core._types import RetryPolicy
from .._core._version import __version__
from ._aiohttp import AiohttpTransport
from ._attempt import (
    Exchange,
    Request,
    already_gone,
    exchange,
    failure,
    response,
    succeeded,
    time_limit,
)
from ._auth import Auth
from ._failures import display_url
from ._gate import Gate, GateClosed, LocalGate
from ._network import Route
from ._retry import Recovery, Retries, pause_for
from ._seam import AsyncTransport, Response, TransportStatus

__all__ = ["DEFAULT_HEADERS", "Requester"]

logger: logging.Logger = logging.getLogger("payroll_async")

USER_AGENT = (
    f"payroll-async/{__version__} python/{platform.python_version()} aiohttp/{aiohttp.__version__}"
)
DEFAULT_HEADERS: Mapping[str, str] = {"User-Agent": USER_AGENT, "Accept": "application/json"}
_RETRY_PLANS = 64  # retry policies whose decisions a client keeps built
_NEVER = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)  # no recovery's start


class Held(enum.Enum):
    """An attempt the gate held back as a pause began: nothing was sent."""

    HELD = "held"


HELD = Held.HELD


@attrs.frozen
class Rejected:
    """An attempt answered 401 whose token a provider can replace: refresh, then again."""

    answer: Exchange
    token: str


async def _look(recovery: Recovery, began: datetime.datetime, lost: PayrollError) -> Any:
    """What the lost attempt did, by ``recovery.find``; its failure is the lost answer's."""
    try:
        found = await recovery.find(began)
    except PayrollError as exc:
        logger.warning(
            "%s got no answer, and looking for what it may have created failed (%s): "
            "not sent again",
            recovery.what,
            type(exc).__name__,
        )
        raise lost from None
    if found is not None:
        logger.info(
            "%s got no answer, but it had been done: returning what it created", recovery.what
        )
    return found


class Requester:
    """The loop over a request's attempts, with its retry policy, and each attempt's steps:
    what sends every request of a client (and of its copies) through the transport below
    the seam."""

    def __init__(
        self,
        *,
        base_url: URL,
        auth: Auth,
        concurrency: int,
        session: aiohttp.ClientSession | None,
        route: Route,
        clock: Clock = SYSTEM_CLOCK,
        gate: Gate | None = None,
        wire: AsyncTransport | None = None,
    ) -> None:
        self.base_url: URL = base_url
        self.route: Route = route
        """The proxy and TLS of every request (resolved once, by the client)."""
        self.origin: URL = base_url.origin()
        self.auth: Auth = auth
        self.clock: Clock = clock
        self.concurrency: int = concurrency
        self._base = str(base_url)
        self.closed: bool = False
        self.semaphore: asyncio.Semaphore = asyncio.Semaphore(concurrency)
        """Caps this client's requests in flight (its copies' too)."""
        # The in-process pause always applies: a process that got the 429 does not wait
        # for a shared gate to tell it. A shared gate (e.g. RedisGate) comes on top.
        self.local_gate: LocalGate = gate if isinstance(gate, LocalGate) else LocalGate(clock=clock)
        self.shared_gate: Gate | None = None if gate is None or gate is self.local_gate else gate
        self._retry_plans: dict[int, tuple[RetryPolicy, Retries]] = {}
        self.wire: AsyncTransport = wire or AiohttpTransport(
            session=session, route=route, gate=self.local_gate, concurrency=concurrency
        )
        """The transport below the seam: aiohttp's, or the one given (``transport=``)."""
        self._status: TransportStatus | None = (
            self.wire if isinstance(self.wire, TransportStatus) else None
        )
        """What the transport tells about itself, if it does (the seam's optional part)."""
        self._sent: tuple[Mapping[str, str], str, CIMultiDictProxy[str]] | None = None
        """The last headers sent: a request's headers and the token, and them merged."""
        self._started = False

    @property
    def gate(self) -> Gate:
        """The gate every request passes: the fleet's when one was given, else this client's."""
        return self.shared_gate if self.shared_gate is not None else self.local_gate

    @property
    def must_close(self) -> bool:
        """Whether the transport holds what only closing the client releases (aiohttp's
        session, when it made it): the transport says so, if it says anything."""
        return self._status is not None and self._status.must_close

    @property
    def started(self) -> bool:
        """Whether a request was started (through any transport)."""
        return self._started

    def closed_error(self) -> ClientClosedError:
        """Why this client can send no more: closed, or its transport closed itself (the
        transport says why: aiohttp's, with its event loop)."""
        reason = self._status.closed_reason if self._status is not None else None
        return ClientClosedError(reason or "this PayrollClient is closed; create a new one")

    @property
    def is_closed(self) -> bool:
        """Whether the client was closed, or its transport closed itself."""
        status = self._status
        return self.closed or (status is not None and status.closed_reason is not None)

    async def close(self) -> None:
        self.closed = True
        await self.wire.aclose()

    def url(self, path: str) -> URL:
        """The URL of ``path`` under the base URL (paths are built of checked parts)."""
        return URL(self._base + path)

    async def pause(self, seconds: float) -> None:
        """Hold back every request of this client for ``seconds`` (a 429's Retry-After)."""
        await self.local_gate.pause(seconds)
        if self.shared_gate is not None:
            await self.shared_gate.pause(seconds)

    async def loop(self, request: Request, recovery: Recovery | None = None) -> Any:
        """The one loop over the attempts of ``request``: every "send again" of the SDK is
        decided here. The ``Response`` of a 2xx, else a PayrollError.

        ``options`` is the request's final record: timeout, retry policy, headers, extra
        query parameters, body bound. After a failed attempt the request's retry policy
        alone says whether to go on and how long to wait first (``Retries.wait_before``:
        its retry, stop and wait parts). What an attempt can end in besides
        an answer is named: held at the gate (nothing sent: it goes again, uncounted) and a
        401 that the token provider can answer (a fresh token, once, then again).

        A lost answer (the request may have reached the service) is never sent again
        blindly: a DELETE answered 404 on a later attempt counts as done; a request with a
        ``recovery`` (a create) returns what ``recovery.find`` finds the lost attempt did,
        or is sent again only once that attempt can no longer land and a last look found
        nothing (the found object is returned instead of a Response).
        """
        method, options = request.method, request.options
        limit = time_limit(options.timeout)
        # when the first attempt began, on the wall clock: what a recovery looks up since
        # (read only for a request that has one: no clock read on every request)
        began = datetime.datetime.now(datetime.timezone.utc) if recovery is not None else _NEVER
        landed_by = 0.0  # when the last attempt sent can no longer land (a recovery's wait)
        token: str | None = None
        refreshed = False
        unanswered = False  # an earlier attempt's request may have reached the service
        number = 1
        while True:
            if recovery is not None:
                landed_by = self.clock.now() + recovery.settle
            try:
                outcome = await self.attempt(
                    request,
                    number,
                    token,
                    may_refresh=not refreshed,
                    gone_is_done=unanswered and method == "DELETE",
                )
            except PayrollError as exc:
                lost = isinstance(exc, APIConnectionError) and exc.request_sent
                unanswered = unanswered or lost
                if lost and recovery is not None:
                    found = await _look(recovery, began, exc)
                    if found is not None:
                        return found
                # the policy's decisions, asked only after a failure (an answered request
                # runs no code of theirs)
                retries = self._retries(options.retry)
                wait = retries.wait_before(number + 1, exc, looked_up=lost and recovery is not None)
                if wait is None:
                    raise
                if lost and recovery is not None:
                    wait = max(wait, landed_by - self.clock.now())
                    logger.warning(
                        "%s got no answer and created nothing so far; looking once more and "
                        "sending it again in %.2fs",
                        recovery.what,
                        wait,
                    )
                await self.clock.sleep(wait)
                if lost and recovery is not None:  # the last look, now that it has settled
                    found = await _look(recovery, began, exc)
                    if found is not None:
                        return found
                number += 1
                token, refreshed = None, False
                continue
            if isinstance(outcome, Response):
                return outcome
            if isinstance(outcome, Rejected):  # a 401 the provider can answer: once
                token = await self._refresh(request, outcome.answer, outcome.token, limit)
                refreshed = True
            # else HELD: a pause began while the request waited at the gate; nothing was
            # sent: it goes again (the gate makes it wait for the pause), not counted.

    async def attempt(
        self,
        request: Request,
        number: int,
        token: str | None,
        *,
        may_refresh: bool,
        gone_is_done: bool,
    ) -> Response | Rejected | Held:
        """Attempt ``number`` of ``request``: its outcome, or a PayrollError.

        The steps, in order: admission (this client's concurrency, then its gate and the
        fleet's), the token, the exchange, and what the answer means: a 2xx is the
        Response; a 401 is `Rejected` when a provider can give a fresh token; a DELETE's
        404 after a lost answer is done; any other answer is its typed error, a 429
        pausing the whole client first. `HELD`: the gate held it back, nothing was sent.
        """
        if self.is_closed:
            raise self.closed_error()
        self._started = True
        semaphore = self.semaphore
        await semaphore.acquire()  # no context manager's two coroutines around it
        try:
            # Nothing to wait for at the gates (no pause, no rate, no fleet's gate): no
            # coroutine to make for them; the same holds for a static token.
            waited = (
                0.0
                if self.shared_gate is None and self.local_gate.open_now()
                else await self._admit()
            )
            if token is None:
                token = self.auth.static or await self._token(
                    request, time_limit(request.options.timeout)
                )
            headers = self._headers(request.headers, token)
            answer = await exchange(self.wire, request, headers, token, number, waited=waited)
        except GateClosed:
            return HELD
        finally:
            semaphore.release()
        if succeeded(answer):
            return response(request, answer, token)
        if answer.status == 401 and may_refresh and self.auth.can_refresh:
            return Rejected(answer, token)
        done = already_gone(request, answer, gone_is_done=gone_is_done)
        if done is not None:
            return done
        error = failure(request, answer, token)
        pause = pause_for(error, request.options.retry)
        if pause is not None:
            await self.pause(pause)
        raise error

    def _headers(self, headers: Mapping[str, str], token: str) -> CIMultiDictProxy[str]:
        """``headers`` with the token's ``Authorization``: merged once for a request's
        headers and a token, then reused while both stay (every page of a walk; a token
        that changes, or other headers, are merged anew)."""
        sent = self._sent
        if sent is not None and sent[0] is headers and sent[1] == token:
            return sent[2]
        merged = CIMultiDictProxy(CIMultiDict({**headers, "Authorization": "Bearer " + token}))
        self._sent = (headers, token, merged)
        return merged

    async def _admit(self) -> float:
        """Wait at this client's gate, then the fleet's; the seconds waited."""
        waited = time.perf_counter()
        await self.local_gate.acquire()
        if self.shared_gate is not None:
            await self.shared_gate.acquire()
        return time.perf_counter() - waited

    async def _token(self, request: Request, limit: float | None) -> str:
        """The token to send: the static one, or the provider's (within the time limit)."""
        return self.auth.static or await self.auth.token(
            limit, request.method, display_url(request.url, request.params, None)
        )

    async def _refresh(
        self, request: Request, answer: Exchange, rejected: str, limit: float | None
    ) -> str:
        """A fresh token after ``rejected`` was answered 401 (once per burst of 401s)."""
        logger.info(
            "%s %s -> 401: refreshing the token", request.method, shown_url(answer.url, rejected)
        )
        return await self.auth.refresh(
            rejected, limit, request.method, display_url(request.url, request.params, rejected)
        )

    def _retries(self, policy: RetryPolicy) -> Retries:
        """The retry decisions of ``policy`` (built once per policy, then shared)."""
        # By identity (a policy is frozen): no hash of the policy at every request.
        plan = self._retry_plans.get(id(policy))
        if plan is None or plan[0] is not policy:
            if len(self._retry_plans) >= _RETRY_PLANS:  # a policy made for every call
                self._retry_plans.clear()
            plan = self._retry_plans[id(policy)] = (policy, Retries(policy))
        return plan[1]
