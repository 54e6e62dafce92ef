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
- a sender has ``read_timeout`` seconds (10) for a request's headers, and as long again
  for its body;
- a handler that takes longer than ``handler_timeout`` seconds (30) is cancelled and the
  answer is 503, so that the sender delivers again; copies waiting on it get 503 too;
- text from the sender (ids, types) is written to the log with control characters escaped.

ASSUMED notification body (not shown by the interface document):
``{"eventId", "eventType", "occurredAt", "data"}``. Unknown event types stay plain ``str``;
other top-level fields are kept in ``data`` (without overwriting its own keys).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import aiohttp
from aiohttp import web

from . import _assumed
from ._clock import SYSTEM_CLOCK, Clock
from ._converter import converter, format_datetime, from_dict, parse_datetime
from ._dedupe import Claim, Dedupe, Handling, LocalDedupe
from ._exceptions import InvalidArgumentError
from ._json import loads
from ._signature import (
    ID_HEADER,
    Signer,
    Verify,
    compare_secret,
    header_secret,
    run_verify,
    sign,
    unverified,
)
from ._visible import EscapingFilter
from .models import EVENT_TYPES, EventType, WebhookEvent, event_type

if TYPE_CHECKING:
    from .inbox import Inbox

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

logger: logging.Logger = logging.getLogger("payroll_async.events")
# What a sender wrote (ids, types) is escaped in every record of this logger, so no log
# line of the receiver carries a terminal escape sequence, whoever adds the next one.
logger.addFilter(EscapingFilter())


EventHandler = Callable[["WebhookEvent"], Awaitable[None]]
"""``async def handler(event: WebhookEvent) -> None``."""
H = TypeVar("H", bound=EventHandler)


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


class EventRouter:
    """Routes notifications to handlers by event type; an aiohttp handler and app.

    How notifications are authenticated, one of these being required:

    - ``secret``: a ``whsec_...`` Standard Webhooks secret, or a list of them during a key
      rotation. A notification must be signed with one of them, its ``webhook-timestamp``
      within ``tolerance`` seconds (300) of this machine's clock, and its ``webhook-id``
      its ``eventId``; anything else gets 401 and runs nothing.
    - ``verify``: a check of your own, ``verify(request, raw_body) -> bool`` (or an
      awaitable, bounded by ``handler_timeout``); anything but ``True`` gets 401.
    - ``insecure=True``: no check at all (logged as a WARNING).

    ``read_timeout``: seconds a sender has to send the body once its headers arrived (10);
    past it the connection is closed. ``clock``: the monotonic time of the dedupe window
    (a [`Clock`][payroll_async.Clock]; tests pass a fake one).

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

    ``inbox``: an [`Inbox`][payroll_async.inbox.Inbox]. A verified notification is then
    committed to it and answered 200 (200 ``duplicate`` if its id was already stored, 503
    if the inbox cannot be written); no handler runs in the request: ``Inbox.run``
    workers run them.
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
        inbox: Inbox | None = None,
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
        self._local: LocalDedupe | None = None
        if dedupe is None and dedupe_window > 0:
            dedupe = self._local = LocalDedupe(
                window=dedupe_window,
                max_ids=dedupe_max,
                max_bytes=dedupe_max_bytes,
                clock=clock.now,
            )
        self._handling = Handling(self.dispatch, handler_timeout, dedupe, clock)
        # --- inbox seam (branch inbox; the hooks branch's router.receive() replaces it) ---
        if inbox is not None and not callable(getattr(inbox, "accept", None)):
            raise InvalidArgumentError(f"inbox must be an Inbox, got {inbox!r}")
        self._inbox = inbox

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
        [`handle()`][payroll_async.events.EventRouter.handle].

        Whatever server runs it, a request's headers must arrive within ``read_timeout``
        (aiohttp's ``keepalive_timeout``, set here), as its body must after them.
        """
        application = web.Application(handler_args={"keepalive_timeout": self._read_timeout})
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
                return unverified(request, problem)
        if self._verify is not None:
            verdict = await run_verify(self._verify, request, body, self._handler_timeout)
            if verdict is None:
                return web.json_response({"error": "verification timed out"}, status=503)
            if not verdict:
                return unverified(request, "the verify hook refused it")
        try:
            document = loads(body)
            if _too_deep(document, MAX_DEPTH):
                raise InvalidArgumentError(f"the body is nested more than {MAX_DEPTH} levels")
            event = from_dict(WebhookEvent, document)
        except ValueError as exc:
            logger.warning("rejected a notification: %s", exc)
            return web.json_response({"error": f"bad notification: {exc}"}, status=400)
        if self._signer is not None and request.headers.get(ID_HEADER) != event.event_id:
            return unverified(request, "webhook-id differs from the body's eventId")
        if self._inbox is not None:
            return await self._accept(event, body)
        return await self._handling.answer(event)

    async def _accept(self, event: WebhookEvent, body: bytes) -> web.Response:
        """--- inbox seam --- Commit to the inbox, then answer: 200, 200 duplicate, or 503."""
        assert self._inbox is not None
        try:
            stored = await self._inbox.accept(event, body)
        except Exception as exc:  # InboxError: the inbox logs its outage once, as an ERROR
            logger.info("notification %s could not be stored in the inbox: %s", event.event_id, exc)
            return web.json_response(
                {"error": "the inbox cannot be written"}, status=503, headers={"Retry-After": "5"}
            )
        return web.json_response({"status": "ok" if stored else "duplicate"})

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

    @property
    def dedupe_memory(self) -> int:
        """Approximate bytes held by the event ids remembered in this process."""
        return 0 if self._local is None else self._local.memory


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
