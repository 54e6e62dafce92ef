"""Remembering handled notifications: the Dedupe seam, its in-process default, and the
handling of one notification under a claim (copies waiting on it, leases renewed, the
claim completed or released, 409 and 503 answers). ``EventRouter`` hands each verified,
parsed notification to :class:`Handling`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import tenacity

from .._core._clock import Clock, bounded
from .._core._exceptions import CoordinationError
from ..models import WebhookEvent
from ._receive import Reply, answer

__all__ = ["Claim", "Dedupe", "Handling", "LocalDedupe"]

logger = logging.getLogger("payroll_async.events")  # the receiver's logger, and its filter
_ENTRY_OVERHEAD = 120  # bytes per remembered id besides the string: dict slot, float, links


_T = TypeVar("_T")

Claim = Literal["claimed", "done", "busy"]
"""What [`Dedupe.claim()`][payroll_async.events.Dedupe.claim] found: ``"claimed"`` (this
process handles the event now), ``"done"`` (already handled: acknowledge it) or
``"busy"`` (being handled elsewhere)."""


@runtime_checkable
class Dedupe(Protocol):
    """Where a router remembers the events it handled: ``EventRouter(dedupe=...)``.

    The default remembers them in the process;
    [`RedisDedupe`][payroll_async.fleet.RedisDedupe] remembers them for every process on one Redis.
    A store of your own implements these four calls. The router calls them at most once at
    a time per event id (copies arriving in the same process wait for the first one's
    outcome), and it calls [`renew()`][payroll_async.events.Dedupe.renew] every
    ``lease / 3`` seconds (a failed renewal again within a second) while the handlers run
    and until their completion is recorded. Any call may raise
    [`CoordinationError`][payroll_async.CoordinationError] when the store cannot be
    reached: the notification is then answered 503, never handled without the memory.
    A failed [`complete()`][payroll_async.events.Dedupe.complete] is called again, the
    claim renewed meanwhile, until it succeeds or the lease the claim had when the
    handlers finished (from the last successful claim or renewal) runs out; only then is
    the notification answered 503 although its handlers succeeded.
    """

    @property
    def lease(self) -> float:
        """Seconds a claim holds without being renewed (``math.inf``: no renewal)."""
        ...

    async def claim(self, event_id: str) -> Claim:
        """Claim ``event_id`` for this process, unless it was handled or is held elsewhere."""
        ...

    async def renew(self, event_id: str) -> None:
        """Extend this process's claim by ``lease`` seconds: the handlers still run."""
        ...

    async def complete(self, event_id: str) -> None:
        """The handlers succeeded: remember ``event_id`` as handled for the window."""
        ...

    async def release(self, event_id: str) -> None:
        """The handlers failed or were cancelled: a redelivery runs them again."""
        ...


class LocalDedupe:
    """The default: handled ids remembered in this process, bounded by count and bytes."""

    lease = math.inf  # a claim dies with the process; nothing to renew

    def __init__(
        self, *, window: float, max_ids: int, max_bytes: int, clock: Callable[[], float]
    ) -> None:
        self._window = window
        self._max = max_ids
        self._max_bytes = max_bytes
        self._clock = clock
        self._bytes = 0
        self._handled: OrderedDict[str, float] = OrderedDict()

    @property
    def memory(self) -> int:
        return self._bytes

    async def claim(self, event_id: str) -> Claim:
        return "done" if self._seen(event_id) else "claimed"

    async def renew(self, event_id: str) -> None:
        pass

    async def complete(self, event_id: str) -> None:
        self._remember(event_id)

    async def release(self, event_id: str) -> None:
        pass

    def _seen(self, key: str) -> bool:
        when = self._handled.get(key)
        if when is None:
            return False
        if self._clock() - when > self._window:
            del self._handled[key]
            self._bytes -= _bytes_held(key)
            return False
        return True

    def _remember(self, key: str) -> None:
        if key not in self._handled:
            self._bytes += _bytes_held(key)
        self._handled[key] = self._clock()
        self._handled.move_to_end(key)
        # drop expired ids from the old end, so memory follows the window, then the oldest
        # while over either bound
        cutoff = self._clock() - self._window
        while self._handled and (
            len(self._handled) > self._max
            or self._bytes > self._max_bytes
            or next(iter(self._handled.values())) < cutoff
        ):
            old, _ = self._handled.popitem(last=False)
            self._bytes -= _bytes_held(old)


class _Held:
    """Until when this process surely holds its claim: its clock's time when the last
    successful claim or renewal was asked, plus the lease."""

    __slots__ = ("until",)

    def __init__(self, until: float) -> None:
        self.until = until


class _Busy(Exception):
    """Another process of the fleet holds the event's claim."""


class _Unreachable(Exception):
    """The dedupe store could not be asked: the event was not handled."""


class Handling:
    """Runs the handlers of notifications, each event id at most once at a time here and,
    through ``dedupe``, in the fleet."""

    def __init__(
        self,
        dispatch: Callable[[WebhookEvent], Awaitable[None]],
        handler_timeout: float | None,
        dedupe: Dedupe | None,
        clock: Clock,
    ) -> None:
        self.dispatch = dispatch
        self._handler_timeout = handler_timeout
        self._dedupe = dedupe
        self._clock = clock
        self._in_flight: dict[str, asyncio.Future[None]] = {}
        self._background: set[asyncio.Task[Any]] = set()

    async def answer(self, event: WebhookEvent) -> Reply:
        """Handle ``event`` (or wait for the copy being handled) and answer the sender."""
        key = event.event_id
        if key is not None and self._dedupe is not None:
            pending = self._in_flight.get(key)
            if pending is not None:  # the same event is being handled here right now
                return await self._outcome_of(pending)
        return await self._run(event)

    @staticmethod
    async def _outcome_of(pending: asyncio.Future[None]) -> Reply:
        """The answer for a copy of an event whose first delivery is still being handled."""
        try:
            await asyncio.shield(pending)
        except asyncio.CancelledError:
            if not pending.cancelled():
                raise  # this request itself was cancelled
            # the first delivery's handling was cancelled: the event was not handled
            return answer({"error": "handling was interrupted"}, 503)
        except asyncio.TimeoutError:
            return answer({"error": "handler timed out"}, 503)
        except _Busy:
            return _busy()
        except _Unreachable:
            return _unreachable()
        except Exception:
            return answer({"error": "handler failed"}, 500)
        return answer({"status": "duplicate"})

    async def _run(self, event: WebhookEvent) -> Reply:
        key = event.event_id
        if key is None or self._dedupe is None:
            response, _ = await self._answered(event)
            return response
        done = self._in_flight[key] = asyncio.get_running_loop().create_future()
        try:
            return await self._claimed_run(event, key, self._dedupe, done)
        except BaseException:
            if not done.done():
                done.cancel()  # cancelled mid-way: copies waiting on it must not hang
            raise
        finally:
            self._in_flight.pop(key, None)

    async def _claimed_run(
        self, event: WebhookEvent, key: str, dedupe: Dedupe, done: asyncio.Future[None]
    ) -> Reply:
        claimed_at = self._clock.now()  # the claim's lease runs from before it was asked
        try:
            claim = await dedupe.claim(key)
        except Exception as exc:
            # CoordinationError: the store logs its outage once; anything else is a defect
            # of a store of the user's, logged with its traceback
            if not isinstance(exc, CoordinationError):
                logger.exception("the dedupe store failed to claim notification %s", key)
            _fail_waiters(done, _Unreachable())
            return _unreachable()
        if claim == "done":
            logger.info("notification %s (%s) already handled: acknowledged", key, event.event_type)
            done.set_result(None)
            return answer({"status": "duplicate"})
        if claim != "claimed":
            logger.info(
                "notification %s (%s) is being handled by another receiver: answered 409",
                key,
                event.event_type,
            )
            _fail_waiters(done, _Busy())
            return _busy()
        held = _Held(claimed_at + dedupe.lease)
        renewal = None
        if math.isfinite(dedupe.lease):
            renewal = self._spawn(self._renew_while_held(dedupe, key, held))
        try:
            response, error = await self._answered(event)
        except BaseException:
            if renewal is not None:
                renewal.cancel()
            self._spawn(self._release(dedupe, key))  # not awaited: this task is cancelled
            raise
        if error is not None:
            if renewal is not None:
                renewal.cancel()
            await self._release(dedupe, key)  # before answering, so a redelivery runs again
            _fail_waiters(done, error)
            return response
        # shielded: the handlers succeeded, so a sender hanging up now must not leave the
        # event claimed but not remembered (it would run again once the lease expired)
        recording = self._spawn(self._record(dedupe, key, held, renewal))
        if not await asyncio.shield(recording):
            logger.error(
                "notification %s (%s) was handled, but the dedupe store could not record it "
                "while its claim lasted: answered 503, and a redelivery runs it again",
                key,
                event.event_type,
            )
            _fail_waiters(done, _Unreachable())
            return _unrecorded()
        done.set_result(None)
        return response

    async def _record(
        self, dedupe: Dedupe, key: str, held: _Held, renewal: asyncio.Task[None] | None
    ) -> bool:
        """Record the event as handled, tried again within the lease the claim had when the
        handlers finished (renewed all along, so that a late success is still this
        process's); False if it could not be recorded by then."""
        deadline = held.until  # not moved by later renewals: a store that renews but
        # never records must not hold the sender forever
        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(Exception),
            wait=tenacity.wait_exponential(multiplier=0.05, max=_RETRY_WITHIN),
            # a store without a lease (math.inf) is asked once: nothing bounds the retries
            stop=lambda state: not math.isfinite(deadline) or self._clock.now() >= deadline,
            sleep=self._clock.sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    await _logging_failure(dedupe.complete(key), "record", key)
        except Exception:
            self._spawn(self._release(dedupe, key))  # the claim, given back if it can be
            return False
        finally:
            if renewal is not None:
                renewal.cancel()
        return True

    async def _answered(self, event: WebhookEvent) -> tuple[Reply, Exception | None]:
        """Run the handlers; the answer, and the failure (None after success)."""
        try:
            if self._handler_timeout is None:
                await self.dispatch(event)
            else:
                await bounded(self.dispatch(event), self._handler_timeout)
        except asyncio.TimeoutError as exc:
            logger.error(
                "the handlers of notification %s (%s) took longer than %gs: cancelled, "
                "answered 503 so that it is delivered again",
                event.event_id,
                event.event_type,
                self._handler_timeout,
            )
            return answer({"error": "handler timed out"}, 503), exc
        except Exception as exc:
            logger.exception(
                "a handler of notification %s (%s) failed", event.event_id, event.event_type
            )
            return answer({"error": "handler failed"}, 500), exc
        return answer({"status": "ok"}), None

    async def _renew_while_held(self, dedupe: Dedupe, key: str, held: _Held) -> None:
        """Renew the claim every ``lease / 3`` seconds, a failed renewal again within a
        second, until cancelled (the handlers failed, or their completion is recorded)."""
        pause = dedupe.lease / 3
        while True:
            await self._clock.sleep(pause)
            began = self._clock.now()
            pause = min(dedupe.lease / 3, _RETRY_WITHIN)
            try:
                await _logging_failure(dedupe.renew(key), "renew", key)
            except Exception:
                continue
            held.until = max(held.until, began + dedupe.lease)
            pause = dedupe.lease / 3

    async def _release(self, dedupe: Dedupe, key: str) -> None:
        try:
            await dedupe.release(key)
        except CoordinationError:
            pass  # the claim expires after the store's lease instead
        except Exception:
            logger.exception("the dedupe store failed to release notification %s", key)

    def _spawn(self, work: Awaitable[_T]) -> asyncio.Task[_T]:
        task: asyncio.Task[_T] = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task


_RETRY_WITHIN = 1.0  # seconds: a failed renewal or recording is tried again within this


def _busy() -> Reply:
    return answer({"error": "being handled by another receiver"}, 409)


def _unreachable() -> Reply:
    return answer({"error": "the receivers' shared memory cannot be reached"}, 503)


async def _logging_failure(call: Awaitable[None], doing: str, key: str) -> None:
    """A store's call; its failure raised, and logged with its traceback unless it is a
    CoordinationError (which the store logs once per outage)."""
    try:
        await call
    except CoordinationError:
        raise
    except Exception:
        logger.exception("the dedupe store failed to %s notification %s", doing, key)
        raise


def _unrecorded() -> Reply:
    return answer(
        {"error": "handled, but the receivers' shared memory could not record it"},
        503,
    )


def _fail_waiters(done: asyncio.Future[None], error: BaseException) -> None:
    """``error`` for every copy of a notification waiting on ``done``."""
    done.set_exception(error)
    done.exception()  # retrieved here, so that a future no copy awaits does not warn


def _bytes_held(key: str) -> int:
    """The memory one remembered id holds (the in-process store's bound counts it)."""
    return sys.getsizeof(key) + _ENTRY_OVERHEAD
