"""Receiving webhook notifications: parse, verify, deduplicate and route them.

```pycon
>>> from payroll_async import EventType
>>> from payroll_async.events import EventRouter, WebhookEvent
>>> router = EventRouter()
>>> @router.on(EventType.PAYROLL_PROCESSED)
... async def on_payroll(event: WebhookEvent) -> None:
...     print(event.event_id, event.data)
>>> app = router.app(path="/hooks")          # an aiohttp.web.Application
```

Delivery semantics a receiver needs:

- the answer is 2xx only after every matching handler succeeded; a handler that raises
  makes the answer 500, so that the sender delivers again;
- a delivery of an ``event_id`` already handled within ``dedupe_window`` seconds is
  acknowledged without running the handlers again (a copy that arrives while the first is
  still being handled waits for its outcome);
- a body that is not JSON, has no event type, or has an ``eventId`` that is not a
  non-empty string of at most 256 characters, gets 400 and a log line;
- a handler that takes longer than ``handler_timeout`` seconds (30 by default) is
  cancelled and the answer is 503, so that the sender delivers again; copies waiting on it
  get 503 too;
- ``verify`` (the service's signing scheme is not shown) receives the request and the raw
  body and can reject the delivery with 401.

ASSUMED notification body (not shown by the interface document):
``{"eventId", "eventType", "occurredAt", "data"}``. Unknown event types stay plain ``str``;
other top-level fields are kept in ``data`` (without overwriting its own keys).
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import logging
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web

from ._converter import from_dict
from ._exceptions import InvalidArgumentError
from ._json import loads
from .models import EventType, WebhookEvent

__all__ = [
    "EventHandler",
    "EventRouter",
    "Verify",
    "WebhookEvent",
    "compare_secret",
    "header_secret",
]

logger = logging.getLogger("payroll_async.events")

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


class EventRouter:
    """Routes notifications to handlers by event type; an aiohttp handler and app.

    ``dedupe_window``: seconds during which a handled ``event_id`` is not handled again
    (0 turns deduplication off). At most ``dedupe_max`` ids, and at most
    ``dedupe_max_bytes`` of memory for them, are remembered; the oldest go first. An id is
    at most 256 characters, so the defaults cost at most about 40 MB in the worst case
    (100,000 ids of 256 non-ASCII characters) and about 17 MB for UUID ids.
    ``handler_timeout``: seconds the handlers of one notification may take (None: no
    limit); past it they are cancelled and the sender is answered 503.
    """

    def __init__(
        self,
        *,
        verify: Verify | None = None,
        dedupe_window: float = 24 * 3600.0,
        dedupe_max: int = 100_000,
        dedupe_max_bytes: int = 64 * 2**20,
        handler_timeout: float | None = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
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
        self._max_bytes = dedupe_max_bytes
        self._bytes = 0
        self._handler_timeout = handler_timeout
        self._handlers: dict[str | None, list[EventHandler]] = {}
        self._verify = verify
        self._window = dedupe_window
        self._max = dedupe_max
        self._clock = clock
        self._handled: OrderedDict[str, float] = OrderedDict()
        self._in_flight: dict[str, asyncio.Future[None]] = {}

    def on(self, *event_types: EventType | str) -> Callable[[H], H]:
        """Register a handler for these event types; with none, for every event.

        Several handlers may share a type; they run in the order registered, type-specific
        ones before catch-alls.
        """
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
        """The aiohttp handler: verify, parse, deduplicate, dispatch, answer."""
        body = await request.read()
        if self._verify is not None and not await self._verified(request, body):
            logger.warning(
                "rejected a notification that failed verification from %s", request.remote
            )
            return web.json_response({"error": "verification failed"}, status=401)
        try:
            event = from_dict(WebhookEvent, loads(body))
        except ValueError as exc:
            logger.warning("rejected a notification: %s", exc)
            return web.json_response({"error": f"bad notification: {exc}"}, status=400)
        key = event.event_id
        if key is not None and self._window > 0:
            if self._seen(key):
                logger.info(
                    "notification %s (%s) already handled: acknowledged", key, event.event_type
                )
                return web.json_response({"status": "duplicate"})
            pending = self._in_flight.get(key)
            if pending is not None:  # the same event is being handled right now
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
        except Exception:
            return web.json_response({"error": "handler failed"}, status=500)
        return web.json_response({"status": "duplicate"})

    async def _run(self, event: WebhookEvent) -> web.Response:
        key = event.event_id if self._window > 0 else None
        done: asyncio.Future[None] | None = None
        if key is not None:
            done = self._in_flight[key] = asyncio.get_running_loop().create_future()
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
            if done is not None:
                done.set_exception(exc)
                done.exception()
            return web.json_response({"error": "handler timed out"}, status=503)
        except Exception as exc:
            logger.exception(
                "a handler of notification %s (%s) failed", event.event_id, event.event_type
            )
            if done is not None:
                done.set_exception(exc)
                done.exception()  # retrieved here, so an unawaited copy does not warn
            return web.json_response({"error": "handler failed"}, status=500)
        except BaseException:
            if done is not None:
                done.cancel()  # cancelled mid-way: copies waiting on it must not hang
            raise
        else:
            if done is not None:
                done.set_result(None)
                self._remember(key)  # type: ignore[arg-type]
            return web.json_response({"status": "ok"})
        finally:
            if key is not None:
                self._in_flight.pop(key, None)

    async def _verified(self, request: web.Request, body: bytes) -> bool:
        assert self._verify is not None
        try:
            result = self._verify(request, body)
            if inspect.isawaitable(result):
                result = await result
        except Exception:
            logger.exception("the verify hook raised")
            return False
        return bool(result)

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

    @property
    def dedupe_memory(self) -> int:
        """Approximate bytes held by the remembered event ids."""
        return self._bytes


def _cost(key: str) -> int:
    return sys.getsizeof(key) + _ENTRY_OVERHEAD


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
