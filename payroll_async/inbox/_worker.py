"""An inbox's worker: claims what it has room for, runs each event's handlers in a task,
renews the claim while they run, and settles the outcome (done, retried later, dead)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import attrs

from .._core._clock import abandoning
from .._core._converter import from_dict
from .._core._json import loads
from ..models import WebhookEvent

if TYPE_CHECKING:
    from ..events import EventHandler, EventRouter

from ._records import Claims, InboxError, _Claim, _describe

__all__ = ["_Worker"]

logger: logging.Logger = logging.getLogger("payroll_async.inbox")

_RETRY = 0.05  # seconds between tries of a write about a claimed event, database down
_GRACE = 1.0  # seconds a worker waits after an outage before it claims again
_HANDLER_GRACE = 1.0  # seconds cancelled handlers have to end before they are abandoned


async def _outcome(handlers: Awaitable[None]) -> BaseException | None:
    """What the handlers raised (a cancellation of their own included), or None."""
    try:
        await handlers
    except (Exception, asyncio.CancelledError) as exc:
        return exc
    return None


def _running_handler(task: asyncio.Task[Any], handlers: list[EventHandler]) -> str:
    """The handler ``task`` is in (followed down the coroutines each awaits), by name; all
    of ``handlers`` if none of them is found there."""
    codes = {getattr(h, "__code__", None): h for h in handlers}
    found = None
    awaited: object = task.get_coro()
    while awaited is not None:
        code = getattr(awaited, "cr_code", None)
        if code is not None and code in codes:
            found = codes[code]
        awaited = getattr(awaited, "cr_await", None)
    named = [found] if found is not None else handlers
    return ", ".join(f"{h.__module__}.{h.__qualname__}" for h in named) or "(none)"


@attrs.define(eq=False)
class _Worker:
    """One ``Inbox.run``: a loop that claims what it has room for, and a task per event."""

    _store: Claims
    """The inbox's store, through its public members only."""
    _router: EventRouter
    _concurrency: int
    _max_attempts: int
    _stop: asyncio.Event
    _drain: bool = False
    """Return once no event is ready (nothing claimed, nothing in hand)."""
    _running: set[asyncio.Task[None]] = attrs.field(init=False, factory=set)
    _alone: asyncio.Task[None] | None = attrs.field(init=False, default=None)
    """An event whose last worker died."""
    _wake: asyncio.Event = attrs.field(init=False, factory=asyncio.Event)

    async def run(self) -> None:
        watcher = asyncio.ensure_future(self._watch_stop())
        unreachable = False
        try:
            while not self._stop.is_set():
                room = 0 if self._alone else self._concurrency - len(self._running)
                claimed: list[_Claim] = []
                if room > 0 and unreachable:
                    unreachable = not await self._back_after_outage()
                if room > 0 and not unreachable:
                    try:
                        claimed = await self._store.claim(
                            room, self._max_attempts, idle=not self._running
                        )
                    except InboxError as exc:
                        self._store.outage(exc)
                        unreachable = True
                    else:
                        self._store.reached()
                if self._drain and room > 0 and not (unreachable or claimed or self._running):
                    break  # drained: nothing ready, nothing in hand
                for claim in claimed:
                    task = asyncio.ensure_future(self._handle(claim))
                    self._running.add(task)
                    task.add_done_callback(self._finished)
                    if claim.alone:
                        self._alone = task  # nothing else is claimed until it ends
                if room > 0 and len(claimed) == room:
                    continue  # a backlog: claim again as soon as there is room
                self._wake.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._store.poll_interval)
            if self._running:
                await asyncio.wait(self._running)
        finally:
            watcher.cancel()
            for task in self._running:
                task.cancel()  # cancelled: their claims come due again after the lease
            if self._running:
                await asyncio.wait(self._running)

    async def _back_after_outage(self) -> bool:
        """After an outage, whether the database answers again; if it does, a pause first.

        Leases ran out while nobody could write: the outcomes of events handled during
        the outage (this process's and other workers') are written first, during the
        pause (their writes are retried every ``_RETRY`` seconds), rather than their
        events claimed again and run twice.
        """
        try:
            await self._store.ping()
        except InboxError:
            return False
        await asyncio.sleep(_GRACE)
        return True

    async def _watch_stop(self) -> None:
        await self._stop.wait()
        self._wake.set()

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        if task is self._alone:
            self._alone = None
        self._wake.set()
        if not task.cancelled() and task.exception() is not None:
            logger.error("an inbox worker task failed", exc_info=task.exception())

    async def _handle(self, claim: _Claim) -> None:
        renewal = asyncio.ensure_future(self._renew_while_running(claim))
        error: str | None = None
        final = claim.attempts >= self._max_attempts
        try:
            try:
                event = from_dict(WebhookEvent, loads(claim.body))
            except ValueError as exc:
                # stored after it was verified and parsed: only a body from another version
                error = f"the stored body cannot be read: {exc}"
                final = True
            else:
                error = await self._run_handlers(claim, event)
                if error is not None:
                    logger.warning(
                        "a handler of event %s failed (attempt %d of %d%s): %s",
                        claim.event_id,
                        claim.attempts,
                        self._max_attempts,
                        ", now dead" if final else "",
                        error,
                    )
        finally:
            # stopped before the outcome is written, so no renewal lands after it
            renewal.cancel()
            await asyncio.wait([renewal])
        await self._settle(claim, error, final=final)

    async def _run_handlers(self, claim: _Claim, event: WebhookEvent) -> str | None:
        """Run the router's handlers within its ``handler_timeout``: their error, or None.

        In a task of their own, so that a handler's own ``TimeoutError`` is its error and
        not taken for the timeout's. Past the timeout they are cancelled; a handler that
        does not end within ``_HANDLER_GRACE`` of it (one that swallows its cancellation)
        is abandoned (``_core._clock.abandoning``): the attempt failed all the same, and
        the slot takes the next event.
        """
        timeout = self._router.handler_timeout
        handlers = asyncio.ensure_future(_outcome(self._router.dispatch(event)))
        try:
            raised = await abandoning(handlers, timeout, grace=_HANDLER_GRACE)
        except TimeoutError:
            if handlers.done():
                return (
                    f"TimeoutError: the handlers took longer than handler_timeout ({timeout:g} s) "
                    "and were cancelled"
                )
            logger.error(
                "event %s: handler %s ignored its cancellation past handler_timeout (%g s) "
                "and %g s more: abandoned, still running; the attempt counts as failed and "
                "its slot takes the next event",
                claim.event_id,
                _running_handler(handlers, self._router.handlers_for(event.event_type)),
                timeout,
                _HANDLER_GRACE,
            )
            return (
                f"TimeoutError: the handlers took longer than handler_timeout ({timeout:g} s) "
                "and did not end when cancelled: abandoned"
            )
        if isinstance(raised, asyncio.CancelledError):
            return "CancelledError: a handler was cancelled"
        if raised is not None:
            return _describe(raised, self._store.secrets)
        return None

    async def _renew_while_running(self, claim: _Claim) -> None:
        pause = self._store.lease / 3
        while True:
            await asyncio.sleep(pause)
            pause = self._store.lease / 3
            try:
                if not await self._store.renew(claim):
                    logger.error(
                        "event %s: the claim was lost (its lease ran out); another worker "
                        "may run it too",
                        claim.event_id,
                    )
                    return
            except InboxError as exc:
                self._store.outage(exc)
                pause = _RETRY  # renewed as soon as the database is back

    async def _settle(self, claim: _Claim, error: str | None, *, final: bool) -> None:
        """Write the outcome; while the database is down, try again every ``_RETRY``."""
        # Written as soon as the database answers (the write is fenced, so it is safe even
        # after the lease ended); given up only after ten leases without a database.
        deadline = asyncio.get_running_loop().time() + 10 * self._store.lease
        while True:
            try:
                written = await (
                    self._store.done(claim)  # with the others done (batched)
                    if error is None
                    else self._store.failed(claim, error, final=final)
                )
            except InboxError as exc:
                self._store.outage(exc)
                if asyncio.get_running_loop().time() > deadline:
                    logger.error(
                        "event %s: its outcome could not be written (no database for ten "
                        "leases); it will run again",
                        claim.event_id,
                    )
                    return
                await asyncio.sleep(_RETRY)
                continue
            self._store.reached()
            if not written:
                logger.error(
                    "event %s: the claim was lost before its outcome was written (its lease "
                    "ran out); another worker runs it",
                    claim.event_id,
                )
            return
