"""Receiving webhook notifications: parse, verify, deduplicate and route them.

```pycon
>>> from payroll_async import EventType
>>> from payroll_async.events import EventRouter, WebhookEvent
>>> router = EventRouter(secret=os.environ["PAYROLL_WEBHOOK_SECRET"])   # "whsec_..."
>>> @router.on(EventType.PAYROLL_PROCESSED)
... async def on_payroll(event: WebhookEvent) -> None:
...     print(event.event_id, event.data)
>>> app = router.app(path="/hooks")          # an aiohttp.web.Application
```

Delivery semantics a receiver needs:

- with ``secret=`` every notification must carry a valid Standard Webhooks signature
  (``webhook-id``, ``webhook-timestamp`` within ``tolerance`` seconds, ``webhook-signature``)
  and a ``webhook-id`` equal to its ``eventId``; anything else is answered 401, nothing
  runs, and one line without the secret is logged. ``EventRouter()`` with none of
  ``secret``, ``verify`` or ``insecure=True`` refuses to be built;
- the answer is 2xx only after every matching handler succeeded; a handler that raises
  makes the answer 500, so that the sender delivers again;
- a delivery of an ``event_id`` already handled within ``dedupe_window`` seconds is
  acknowledged without running the handlers again (a copy that arrives while the first is
  still being handled waits for its outcome); with ``dedupe=RedisDedupe(...)`` that
  memory is shared by every receiver process on one Redis, a copy being handled by
  another process is answered 409, and while Redis cannot be reached the answer is 503
  and nothing runs;
- a body that is not JSON, is nested more than 64 levels deep, has no event type, or has
  no ``eventId`` that is a non-empty string of at most 256 characters, gets 400 and a log
  line, and runs nothing;
- a sender has ``read_timeout`` seconds (10 by default) to send the body once its headers
  arrived; past it the connection is closed. (The headers themselves are bounded by the
  server: aiohttp closes a connection whose request has not arrived within its
  ``keepalive_timeout``, 75 s under ``web.run_app``.)
- a handler that takes longer than ``handler_timeout`` seconds (30 by default) is
  cancelled and the answer is 503, so that the sender delivers again; copies waiting on it
  get 503 too;
- ``verify`` (a scheme of your own) receives the request and the raw body and must return
  ``True`` (or an awaitable of it) to accept; ``False``, anything that is not a bool, or an
  exception answers 401. An async ``verify`` is bounded by ``handler_timeout`` (503);
- text from the sender (ids, types) is written to the log with control characters escaped.

ASSUMED notification body (not shown by the interface document):
``{"eventId", "eventType", "occurredAt", "data"}``. Unknown event types stay plain ``str``;
other top-level fields are kept in ``data`` (without overwriting its own keys).
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import logging
import math
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import aiohttp
from aiohttp import web

from . import _assumed
from ._clock import SYSTEM_CLOCK, Clock
from ._converter import converter, format_datetime, from_dict, parse_datetime
from ._exceptions import CoordinationError, InvalidArgumentError
from ._json import loads
from ._signature import ID_HEADER, Signer, sign
from ._visible import visible
from .models import EVENT_TYPES, EventType, WebhookEvent, event_type

__all__ = [
    "Claim",
    "Dedupe",
    "EventHandler",
    "EventRouter",
    "Verify",
    "WebhookEvent",
    "compare_secret",
    "header_secret",
    "sign",
]

logger = logging.getLogger("payroll_async.events")


class _Escaped(logging.Filter):
    """Escapes control characters in the arguments of every record of this logger.

    The arguments are what a sender wrote (ids, types): escaped once here, so that no log
    line of the receiver can carry a terminal escape sequence, whoever adds the next one.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(visible(a) if isinstance(a, str) else a for a in record.args)
        return True


logger.addFilter(_Escaped())

EventHandler = Callable[["WebhookEvent"], Awaitable[None]]
"""``async def handler(event: WebhookEvent) -> None``."""
Verify = Callable[[web.Request, bytes], bool | Awaitable[bool]]
"""``verify(request, raw_body) -> bool`` (or awaitable); False or an exception answers 401."""

H = TypeVar("H", bound=EventHandler)
_ENTRY_OVERHEAD = 120  # bytes per remembered id besides the string: dict slot, float, links


def compare_secret(provided: str | bytes | None, expected: str | bytes) -> bool:
    """Constant-time comparison of a secret from a request with the expected one."""
    if provided is None:
        return False
    a = provided.encode() if isinstance(provided, str) else provided
    b = expected.encode() if isinstance(expected, str) else expected
    return hmac.compare_digest(a, b)


def header_secret(header: str, secret: str) -> Verify:
    """A ``verify`` hook for a shared secret sent in a header, compared in constant time.

    ```pycon
    >>> secret = os.environ["HOOK_SECRET"]
    >>> router = EventRouter(verify=header_secret("X-Webhook-Secret", secret))
    ```
    """

    def verify(request: web.Request, body: bytes) -> bool:
        return compare_secret(request.headers.get(header), secret)

    return verify


MAX_EVENT_ID_LENGTH = 256
"""The longest ``eventId`` accepted: receivers remember ids, so they are bounded."""
MAX_DEPTH = 64
"""The deepest nesting of a notification body accepted (a notification is shallow; a body
nested a thousand levels would reach handlers that cannot print or store it)."""
_EVENT_KEYS = frozenset(
    {
        _assumed.EVENT_ID_KEY,
        _assumed.EVENT_TYPE_KEY,
        _assumed.EVENT_OCCURRED_AT_KEY,
        _assumed.EVENT_DATA_KEY,
    }
)


def _structure_event(body: object, _: object = None) -> WebhookEvent:
    """A notification body as a WebhookEvent: lenient where a receiver can be, not on ids.

    Registered as the converter's hook for WebhookEvent, so ``from_dict(WebhookEvent,
    body)`` reads a body as the receiver does.
    """
    if not isinstance(body, dict):
        raise InvalidArgumentError("the body is not a JSON object")
    kind = body.get(_assumed.EVENT_TYPE_KEY)
    if not isinstance(kind, str) or not kind:
        raise InvalidArgumentError(f"the body has no {_assumed.EVENT_TYPE_KEY!r}")
    event_id = body.get(_assumed.EVENT_ID_KEY)
    # Required: without an id no redelivery can be recognised, so every one would run the
    # handlers again.
    if not isinstance(event_id, str) or not 1 <= len(event_id) <= MAX_EVENT_ID_LENGTH:
        raise InvalidArgumentError(
            f"{_assumed.EVENT_ID_KEY!r} must be a non-empty string of at most "
            f"{MAX_EVENT_ID_LENGTH} characters"
        )
    occurred_at = None
    raw_time = body.get(_assumed.EVENT_OCCURRED_AT_KEY)
    if raw_time is not None:
        try:
            occurred_at = parse_datetime(raw_time)
        except ValueError:
            logger.warning("notification %s has an unreadable occurredAt %r", event_id, raw_time)
    raw_data = body.get(_assumed.EVENT_DATA_KEY)
    data: dict[str, Any] = dict(raw_data) if isinstance(raw_data, dict) else {}
    if raw_data is not None and not isinstance(raw_data, dict):
        data[_assumed.EVENT_DATA_KEY] = raw_data
    for key, value in body.items():
        if key not in _EVENT_KEYS:
            data.setdefault(key, value)
    return WebhookEvent(
        event_type=event_type(kind), event_id=event_id, occurred_at=occurred_at, data=data
    )


def _unstructure_event(event: WebhookEvent) -> dict[str, Any]:
    """A WebhookEvent as a notification body."""
    return {
        _assumed.EVENT_ID_KEY: event.event_id,
        _assumed.EVENT_TYPE_KEY: str(event.event_type),
        _assumed.EVENT_OCCURRED_AT_KEY: None
        if event.occurred_at is None
        else format_datetime(event.occurred_at),
        _assumed.EVENT_DATA_KEY: dict(event.data),
    }


converter.register_structure_hook(WebhookEvent, _structure_event)
converter.register_unstructure_hook(WebhookEvent, _unstructure_event)


def _too_deep(value: object, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


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
    ``lease / 3`` seconds while the handlers run. Any call may raise
    [`CoordinationError`][payroll_async.CoordinationError] when the store cannot be
    reached: the notification is then answered 503, never handled without the memory.
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


class _LocalDedupe:
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
            self._bytes -= _cost(key)
            return False
        return True

    def _remember(self, key: str) -> None:
        if key not in self._handled:
            self._bytes += _cost(key)
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
            self._bytes -= _cost(old)


class _Busy(Exception):
    """Another process of the fleet holds the event's claim."""


class _Unreachable(Exception):
    """The dedupe store could not be asked: the event was not handled."""


class EventRouter:
    """Routes notifications to handlers by event type; an aiohttp handler and app.

    ``dedupe_window``: seconds during which a handled ``event_id`` is not handled again
    (0 turns deduplication off). At most ``dedupe_max`` ids, and at most
    ``dedupe_max_bytes`` of memory for them, are remembered; the oldest go first. An id is
    at most 256 characters, so the defaults cost at most about 40 MB in the worst case
    (100,000 ids of 256 non-ASCII characters) and about 17 MB for UUID ids.
    ``handler_timeout``: seconds the handlers of one notification may take (None: no
    limit); past it they are cancelled and the sender is answered 503.

    ``dedupe``: where handled ids are remembered instead (a
    [`Dedupe`][payroll_async.events.Dedupe], such as
    [`RedisDedupe`][payroll_async.fleet.RedisDedupe] for a fleet of receivers); the
    ``dedupe_*`` arguments configure only the default, in-process memory. A copy being handled by
    another process is answered 409 with Retry-After; while the store cannot be reached,
    every notification with an id is answered 503 with Retry-After and nothing runs.
    """

    def __init__(
        self,
        *,
        secret: str | Sequence[str] | None = None,
        tolerance: float = 300.0,
        verify: Verify | None = None,
        insecure: bool = False,
        dedupe_window: float = 24 * 3600.0,
        dedupe_max: int = 100_000,
        dedupe_max_bytes: int = 64 * 2**20,
        handler_timeout: float | None = 30.0,
        read_timeout: float = 10.0,
        clock: Clock = SYSTEM_CLOCK,
        dedupe: Dedupe | None = None,
    ) -> None:
        if secret is None and verify is None and insecure is not True:
            raise InvalidArgumentError(
                "EventRouter needs to know how to tell the service's notifications from "
                "anyone else's: pass secret='whsec_...' (the signing secret), verify=CHECK "
                "(a scheme of your own), or insecure=True to accept unauthenticated "
                "notifications"
            )
        if insecure and (secret is not None or verify is not None):
            raise InvalidArgumentError("insecure=True contradicts secret= or verify=: pass one")
        if not _number(tolerance) or not 0 < tolerance < float("inf"):
            raise InvalidArgumentError(f"tolerance must be finite seconds > 0, got {tolerance!r}")
        if not _number(read_timeout) or not 0 < read_timeout < float("inf"):
            raise InvalidArgumentError(
                f"read_timeout must be finite seconds > 0, got {read_timeout!r}"
            )
        if not isinstance(clock, Clock):
            raise InvalidArgumentError(f"clock must be a Clock, got {type(clock).__name__}")
        if verify is not None and not callable(verify):
            raise InvalidArgumentError(f"verify must be callable, got {type(verify).__name__}")
        self._signer = None if secret is None else Signer(secret, tolerance)
        self._read_timeout = read_timeout
        if insecure:
            logger.warning(
                "EventRouter(insecure=True): notifications are not verified; anyone who can "
                "reach this receiver can make it run handlers"
            )
        if not _number(dedupe_window) or dedupe_window < 0:
            raise InvalidArgumentError(f"dedupe_window must be seconds >= 0, got {dedupe_window!r}")
        if isinstance(dedupe_max, bool) or not isinstance(dedupe_max, int) or dedupe_max < 1:
            raise InvalidArgumentError(f"dedupe_max must be an integer >= 1, got {dedupe_max!r}")
        if (
            isinstance(dedupe_max_bytes, bool)
            or not isinstance(dedupe_max_bytes, int)
            or dedupe_max_bytes < 1
        ):
            raise InvalidArgumentError(
                f"dedupe_max_bytes must be an integer >= 1, got {dedupe_max_bytes!r}"
            )
        if handler_timeout is not None and (
            not _number(handler_timeout) or not 0 < handler_timeout < float("inf")
        ):
            raise InvalidArgumentError(
                f"handler_timeout must be finite seconds > 0 or None, got {handler_timeout!r}"
            )
        if dedupe is not None:
            if not isinstance(dedupe, Dedupe):
                raise InvalidArgumentError(
                    f"dedupe must have claim, renew, complete, release and lease, got {dedupe!r}"
                )
            if (dedupe_window, dedupe_max, dedupe_max_bytes) != (24 * 3600.0, 100_000, 64 * 2**20):
                raise InvalidArgumentError(
                    "dedupe_window, dedupe_max and dedupe_max_bytes configure the in-process "
                    "memory; with dedupe= configure the window on the dedupe store"
                )
        self._handler_timeout = handler_timeout
        self._handlers: dict[str | None, list[EventHandler]] = {}
        self._verify = verify
        self._local: _LocalDedupe | None = None
        if dedupe is None and dedupe_window > 0:
            dedupe = self._local = _LocalDedupe(
                window=dedupe_window,
                max_ids=dedupe_max,
                max_bytes=dedupe_max_bytes,
                clock=clock.now,
            )
        self._dedupe = dedupe
        self._clock = clock
        self._in_flight: dict[str, asyncio.Future[None]] = {}
        self._background: set[asyncio.Task[None]] = set()

    def on(self, *event_types: EventType | str) -> Callable[[H], H]:
        """Register a handler for these event types; with none, for every event.

        Several handlers may share a type; they run in the order registered, type-specific
        ones before catch-alls. A type must be an [`EventType`][payroll_async.EventType] or
        its exact text: a misspelt one (``"payroll_processed"``) raises here, rather than
        leaving its events acknowledged and never handled. (Types newer than this SDK reach
        a catch-all.)
        """
        for kind in event_types:
            if not isinstance(kind, str) or kind not in EVENT_TYPES:
                raise InvalidArgumentError(
                    f"unknown event type {kind!r}; known: {', '.join(sorted(EVENT_TYPES))} "
                    "(for every type, register with on() and no type)"
                )
        keys: list[str | None] = [str(t) for t in event_types] or [None]

        def register(handler: H) -> H:
            is_async = inspect.iscoroutinefunction(handler)  # no narrowing of H
            if not is_async:
                raise InvalidArgumentError(f"{handler!r} must be an async function")
            for key in keys:
                self._handlers.setdefault(key, []).append(handler)
            return handler

        return register

    def handlers_for(self, event_type: EventType | str) -> list[EventHandler]:
        """The handlers an event of this type runs: its own, then the catch-alls."""
        return [*self._handlers.get(str(event_type), []), *self._handlers.get(None, [])]

    async def dispatch(self, event: WebhookEvent) -> None:
        """Run the handlers of ``event`` (no deduplication: ``handle`` does that)."""
        for handler in self.handlers_for(event.event_type):
            await handler(event)

    def app(self, path: str = "/") -> web.Application:
        """An aiohttp application that answers POST ``path`` with
        [`handle()`][payroll_async.events.EventRouter.handle]."""
        application = web.Application()
        application.router.add_post(path, self.handle)
        return application

    async def handle(self, request: web.Request) -> web.Response:
        """The aiohttp handler: read, verify, parse, deduplicate, dispatch, answer.

        Verification comes first: a request that fails it never reaches the parser, the
        dedupe memory or a handler.
        """
        body = await self._read(request)
        if body is None:
            return web.json_response({"error": "the body did not arrive in time"}, status=408)
        if self._signer is not None:
            problem = self._signer.check(request.headers, body, time.time())
            if problem is not None:
                return _unverified(request, problem)
        if self._verify is not None:
            verdict = await self._verified(request, body)
            if verdict is None:
                return web.json_response({"error": "verification timed out"}, status=503)
            if not verdict:
                return _unverified(request, "the verify hook refused it")
        try:
            document = loads(body)
            if _too_deep(document, MAX_DEPTH):
                raise InvalidArgumentError(f"the body is nested more than {MAX_DEPTH} levels")
            event = from_dict(WebhookEvent, document)
        except ValueError as exc:
            logger.warning("rejected a notification: %s", exc)
            return web.json_response({"error": f"bad notification: {exc}"}, status=400)
        if self._signer is not None and request.headers.get(ID_HEADER) != event.event_id:
            return _unverified(request, "webhook-id differs from the body's eventId")
        key = event.event_id
        if key is not None and self._dedupe is not None:
            pending = self._in_flight.get(key)
            if pending is not None:  # the same event is being handled here right now
                return await self._outcome_of(pending)
        return await self._run(event)

    @staticmethod
    async def _outcome_of(pending: asyncio.Future[None]) -> web.Response:
        """The answer for a copy of an event whose first delivery is still being handled."""
        try:
            await asyncio.shield(pending)
        except asyncio.CancelledError:
            if not pending.cancelled():
                raise  # this request itself was cancelled
            # the first delivery's handling was cancelled: the event was not handled
            return web.json_response({"error": "handling was interrupted"}, status=503)
        except asyncio.TimeoutError:
            return web.json_response({"error": "handler timed out"}, status=503)
        except _Busy:
            return _busy()
        except _Unreachable:
            return _unreachable()
        except Exception:
            return web.json_response({"error": "handler failed"}, status=500)
        return web.json_response({"status": "duplicate"})

    async def _run(self, event: WebhookEvent) -> web.Response:
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
    ) -> web.Response:
        try:
            claim = await dedupe.claim(key)
        except Exception as exc:
            # CoordinationError: the store logs its outage once; anything else is a defect
            # of a store of the user's, logged with its traceback
            if not isinstance(exc, CoordinationError):
                logger.exception("the dedupe store failed to claim notification %s", key)
            _fail(done, _Unreachable())
            return _unreachable()
        if claim == "done":
            logger.info("notification %s (%s) already handled: acknowledged", key, event.event_type)
            done.set_result(None)
            return web.json_response({"status": "duplicate"})
        if claim != "claimed":
            logger.info(
                "notification %s (%s) is being handled by another receiver: answered 409",
                key,
                event.event_type,
            )
            _fail(done, _Busy())
            return _busy()
        renewal = None
        if math.isfinite(dedupe.lease):
            renewal = self._spawn(self._renew_while_running(dedupe, key))
        try:
            response, error = await self._answered(event)
        except BaseException:
            self._spawn(self._release(dedupe, key))  # not awaited: this task is cancelled
            raise
        finally:
            if renewal is not None:
                renewal.cancel()
        if error is not None:
            await self._release(dedupe, key)  # before answering, so a redelivery runs again
            _fail(done, error)
            return response
        try:
            # shielded: the handlers succeeded, so a sender hanging up now must not leave the
            # event claimed but not remembered (it would run again once the lease expired)
            await asyncio.shield(self._spawn(dedupe.complete(key)))
        except Exception as exc:
            logger.error(
                "notification %s (%s) was handled but the dedupe store could not remember "
                "it (%s): a copy arriving after its claim expires would run again",
                key,
                event.event_type,
                type(exc).__name__,
            )
        done.set_result(None)
        return response

    async def _answered(self, event: WebhookEvent) -> tuple[web.Response, Exception | None]:
        """Run the handlers; the answer, and the failure (None after success)."""
        try:
            if self._handler_timeout is None:
                await self.dispatch(event)
            else:
                await asyncio.wait_for(self.dispatch(event), self._handler_timeout)
        except asyncio.TimeoutError as exc:
            logger.error(
                "the handlers of notification %s (%s) took longer than %gs: cancelled, "
                "answered 503 so that it is delivered again",
                event.event_id,
                event.event_type,
                self._handler_timeout,
            )
            return web.json_response({"error": "handler timed out"}, status=503), exc
        except Exception as exc:
            logger.exception(
                "a handler of notification %s (%s) failed", event.event_id, event.event_type
            )
            return web.json_response({"error": "handler failed"}, status=500), exc
        return web.json_response({"status": "ok"}), None

    async def _renew_while_running(self, dedupe: Dedupe, key: str) -> None:
        while True:
            await self._clock.sleep(dedupe.lease / 3)
            try:
                await dedupe.renew(key)
            except CoordinationError:
                pass  # logged once per outage by the store; the next renewal tries again
            except Exception:
                logger.exception("the dedupe store failed to renew notification %s", key)

    async def _release(self, dedupe: Dedupe, key: str) -> None:
        try:
            await dedupe.release(key)
        except CoordinationError:
            pass  # the claim expires after the store's lease instead
        except Exception:
            logger.exception("the dedupe store failed to release notification %s", key)

    def _spawn(self, work: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _read(self, request: web.Request) -> bytes | None:
        """The body, or None if it did not arrive within ``read_timeout`` (then closed)."""
        try:
            return await asyncio.wait_for(request.read(), self._read_timeout)
        except asyncio.TimeoutError:
            logger.warning(
                "a sender at %s took more than %gs to send a notification: connection closed",
                request.remote,
                self._read_timeout,
            )
        except (aiohttp.ClientPayloadError, ConnectionError) as exc:
            # the sender hung up mid-body: one line, no traceback (it is not our failure)
            logger.info(
                "a sender at %s hung up before its notification arrived (%s)",
                request.remote,
                type(exc).__name__,
            )
        if request.transport is not None:
            request.transport.close()
        return None

    async def _verified(self, request: web.Request, body: bytes) -> bool | None:
        """The verify hook's answer: True or False, or None if it timed out."""
        assert self._verify is not None
        try:
            result: object = self._verify(request, body)
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, self._handler_timeout)
        except asyncio.TimeoutError:
            logger.error(
                "the verify hook took longer than %gs: answered 503", self._handler_timeout
            )
            return None
        except Exception:
            logger.exception("the verify hook raised")
            return False
        if type(result) is not bool:
            # fail closed: a truthy string such as "signature mismatch" is not an approval
            logger.error(
                "the verify hook returned %s, not a bool: the notification was refused",
                type(result).__name__,
            )
            return False
        return result

    @property
    def dedupe_memory(self) -> int:
        """Approximate bytes held by the event ids remembered in this process."""
        return 0 if self._local is None else self._local.memory


_RETRY_AFTER = "5"  # seconds: a busy claim or an unreachable store is asked again then


def _unverified(request: web.Request, why: str) -> web.Response:
    logger.warning(
        "rejected a notification from %s that failed verification: %s", request.remote, why
    )
    return web.json_response({"error": "verification failed"}, status=401)


def _busy() -> web.Response:
    return web.json_response(
        {"error": "being handled by another receiver"},
        status=409,
        headers={"Retry-After": _RETRY_AFTER},
    )


def _unreachable() -> web.Response:
    return web.json_response(
        {"error": "the receivers' shared memory cannot be reached"},
        status=503,
        headers={"Retry-After": _RETRY_AFTER},
    )


def _fail(done: asyncio.Future[None], error: BaseException) -> None:
    done.set_exception(error)
    done.exception()  # retrieved here, so that a future no copy awaits does not warn


def _cost(key: str) -> int:
    return sys.getsizeof(key) + _ENTRY_OVERHEAD


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
