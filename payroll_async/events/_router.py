"""EventRouter: notifications routed to handlers by type, behind receive(), app() and asgi()."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from .._core._clock import SYSTEM_CLOCK, Clock, bounded
from .._core._exceptions import InvalidArgumentError
from .._core._secrets import ScrubbingFilter
from .._core._visible import EscapingFilter
from ..models import EVENT_TYPES, EventType, WebhookEvent
from ._dedupe import Dedupe, Handling, LocalDedupe
from ._receive import (
    MAX_BODY,
    MAX_HEADERS,
    ASGIReceiver,
    Delivered,
    Reply,
    answer,
    header_count,
    read_aiohttp,
    to_aiohttp,
)
from ._refusals import Refusals
from ._signature import (
    ID_HEADER,
    Signer,
    Verify,
    header,
    run_verify,
)
from ._unwrap import _ID_MISMATCH, _parse, _raw

logger: logging.Logger = logging.getLogger("payroll_async.events")
# What a sender wrote (ids, types) is escaped in every record of this logger, so no log
# line of the receiver carries a terminal escape sequence, whoever adds the next one.
logger.addFilter(EscapingFilter())
# Every secret held (the routers', the clients' tokens...) out of its records, tracebacks
# included: a handler's failure is logged here when there is no inbox to store it.
logger.addFilter(ScrubbingFilter())


EventHandler = Callable[["WebhookEvent"], Awaitable[None]]
"""``async def handler(event: WebhookEvent) -> None``."""
H = TypeVar("H", bound=EventHandler)


@runtime_checkable
class InboxLike(Protocol):
    """Where ``EventRouter(inbox=...)`` stores verified notifications, to be handled later.

    ``payroll_async.inbox.Inbox`` is one. ``accept`` commits the notification
    durably before it returns: True if it was stored now, False if its ``event_id`` was
    stored before (the sender is answered 200 either way). Raising answers the sender 503
    with Retry-After, so that it delivers again: nothing is lost.

    An inbox that logs its own failures says so with a class attribute
    ``logs_its_failures = True`` (``Inbox`` does): the router then adds no line of its
    own; without it, the router logs an ERROR once per outage, naming only the
    exception's type (its text may hold a URL with a password).
    """

    async def accept(self, event: WebhookEvent, body: bytes) -> bool:
        """Store ``event`` (and ``body``, the bytes as sent) unless its id is stored."""
        ...


class EventRouter:
    """Routes notifications to handlers by event type; served by aiohttp, ASGI or any
    framework through [`receive()`][payroll_async.events.EventRouter.receive].

    How notifications are authenticated, one of these being required:

    - ``secret``: a ``whsec_...`` Standard Webhooks secret (``v1``), a ``whpk_...``
      Ed25519 public key (``v1a``, extra ``webhooks``), or a list mixing them during a key
      rotation. A notification must be signed with one of them, its ``webhook-timestamp``
      within ``tolerance`` seconds (300) of this machine's clock, and its ``webhook-id``
      its ``eventId``; anything else gets 401 and runs nothing. A malformed key or an
      unknown prefix raises ``InvalidArgumentError`` here, before anything is served.
    - ``verify``: a check of your own, ``verify(request, raw_body) -> bool`` (or an
      awaitable, bounded by ``handler_timeout``); anything but ``True`` gets 401. Under
      aiohttp ``request`` is its ``web.Request``; under ``asgi()`` or ``receive()`` it is
      an object with ``headers`` (case-insensitive) and ``remote``.
    - ``insecure=True``: no check at all (logged as a WARNING).

    ``inbox``: where verified notifications are stored (an
    [`InboxLike`][payroll_async.events.InboxLike], such as
    ``payroll_async.inbox.Inbox``); then no handler runs inside the request, the
    inbox's workers run them through [`dispatch()`][payroll_async.events.EventRouter.dispatch],
    and the inbox is the deduplication (``dedupe=`` is refused with it).

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
        inbox: InboxLike | None = None,
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
        if inbox is not None:
            if not isinstance(inbox, InboxLike):
                raise InvalidArgumentError(
                    f"inbox must have async accept(event, body), got {inbox!r}"
                )
            if dedupe is not None:
                raise InvalidArgumentError(
                    "inbox= is the deduplication (an event id stored once is handled once): "
                    "leave out dedupe="
                )
        self._inbox = inbox
        self._inbox_logs = getattr(inbox, "logs_its_failures", False) is True
        self._inbox_failing = False
        self._refusals = Refusals()
        self._handler_timeout = handler_timeout
        self._handlers: dict[str | None, list[EventHandler]] = {}
        self._verify = verify
        self._local: LocalDedupe | None = None
        if dedupe is None and dedupe_window > 0 and inbox is None:
            dedupe = self._local = LocalDedupe(
                window=dedupe_window,
                max_ids=dedupe_max,
                max_bytes=dedupe_max_bytes,
                clock=clock.now,
            )
        self._handling = Handling(self.dispatch, handler_timeout, dedupe, clock)

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
        """Run the handlers of one already-verified ``event``, in order; raise what they raise.

        No verification, deduplication or timeout:
        [`receive()`][payroll_async.events.EventRouter.receive] does those. An inbox's
        workers call this for each stored notification.
        """
        for handler in self.handlers_for(event.event_type):
            await handler(event)

    async def receive(
        self, body: bytes, headers: Mapping[str, str], *, remote: str | None = None
    ) -> Reply:
        """The router's whole answer to one delivery, in any framework.

        ``body``: the raw bytes as received; ``headers``: any mapping, looked up
        case-insensitively; ``remote``: the sender's address, for the log. Verification,
        parsing, deduplication or the inbox, the handlers, and the answers table of the
        webhooks guide, with its bounds (body size, header count, JSON nesting); the read
        time is the server's to bound (``app()`` and ``asgi()`` do).

        ```pycon
        >>> reply = await router.receive(await request.body(), request.headers)
        >>> Response(reply.body, status_code=reply.status, headers=reply.headers)
        ```
        """
        return await self._receive(_raw(body), headers, remote, None)

    async def _receive(
        self, body: bytes, headers: Mapping[str, str], remote: str | None, request: Any
    ) -> Reply:
        """``receive()``; ``request`` is what the verify hook gets (aiohttp's, or None)."""
        refused = self._refusals.tell
        if header_count(headers) > MAX_HEADERS:
            refused(remote, f"more than {MAX_HEADERS} headers")
            return answer({"error": "too many headers"}, 431)
        if len(body) > MAX_BODY:
            refused(remote, f"over {MAX_BODY} bytes")
            return answer({"error": f"the body is over {MAX_BODY:,} bytes"}, 413)
        if self._signer is not None:
            problem = self._signer.check(headers, body, time.time())
            if problem is not None:
                return self._unverified(remote, problem)
        if self._verify is not None:
            if request is None:
                request = Delivered(CIMultiDictProxy(CIMultiDict(headers)), remote)
            verdict = await run_verify(self._verify, request, body, self._handler_timeout)
            if verdict is None:
                return answer({"error": "verification timed out"}, 503)
            if not verdict:
                return self._unverified(remote, "the verify hook refused it")
        try:
            event = _parse(body)
        except InvalidArgumentError as exc:
            refused(remote, str(exc))
            return answer({"error": f"bad notification: {exc}"}, 400)
        if self._signer is not None and header(headers, ID_HEADER) != event.event_id:
            return self._unverified(remote, _ID_MISMATCH)
        if self._inbox is not None:
            return await self._store(self._inbox, event, body)
        return await self._handling.answer(event)

    async def _store(self, inbox: InboxLike, event: WebhookEvent, body: bytes) -> Reply:
        """Store a verified notification in the inbox; 200, or 503 if it cannot be stored."""
        try:
            stored = await bounded(inbox.accept(event, body), self._handler_timeout)
        except Exception as exc:
            # The SDK's Inbox logs its own failures with their reason (an outage once);
            # another InboxLike's once per outage here, by type: its text may hold a URL.
            if not self._inbox_logs and not self._inbox_failing:
                self._inbox_failing = True
                logger.error(
                    "the inbox could not store notification %s (%s): answering 503 with "
                    "Retry-After until it can",
                    event.event_id,
                    type(exc).__name__,
                )
            return answer({"error": "the inbox cannot store notifications"}, 503)
        if self._inbox_failing:
            self._inbox_failing = False
            logger.info("the inbox stores notifications again")
        if not stored:
            logger.info(
                "notification %s (%s) already stored: acknowledged",
                event.event_id,
                event.event_type,
            )
            return answer({"status": "duplicate"})
        return answer({"status": "stored"})

    def app(self, path: str = "/") -> web.Application:
        """An aiohttp application that answers POST ``path`` with
        [`handle()`][payroll_async.events.EventRouter.handle].

        Whatever server runs it, a request's headers must arrive within ``read_timeout``
        (aiohttp's ``keepalive_timeout``, set here; aiohttp bounds headers with it from
        3.14.4 on), as its body must after them; a body over 1 MiB gets 413.
        """
        application = web.Application(
            client_max_size=MAX_BODY, handler_args={"keepalive_timeout": self._read_timeout}
        )
        application.router.add_post(path, self.handle)
        return application

    def asgi(self, path: str = "/") -> ASGIReceiver:
        """An ASGI 3 application that answers POST ``path`` with
        [`receive()`][payroll_async.events.EventRouter.receive]: for uvicorn, or mounted in
        FastAPI or Starlette (``app.mount("/payroll", router.asgi(path="/hooks"))``).

        The body must arrive within ``read_timeout`` (else 408 and the connection is
        closed) and be at most 1 MiB (413); more than 100 headers get 431. The time a
        request's headers take is the server's to bound (uvicorn does not: see the
        webhooks guide).
        """
        if not isinstance(path, str) or not path.startswith("/"):
            raise InvalidArgumentError(f"path must start with '/', got {path!r}")
        return ASGIReceiver(self._receive, path, self._read_timeout)

    async def handle(self, request: web.Request) -> web.Response:
        """The aiohttp handler: read the body within ``read_timeout``, then
        [`receive()`][payroll_async.events.EventRouter.receive] it.

        Verification comes first: a request that fails it never reaches the parser, the
        dedupe memory, the inbox or a handler.
        """
        body = await read_aiohttp(request, self._read_timeout)
        if body is None:
            return web.json_response({"error": "the body did not arrive in time"}, status=408)
        return to_aiohttp(await self._receive(body, request.headers, request.remote, request))

    def _unverified(self, remote: str | None, why: str) -> Reply:
        """The 401 of a notification that failed verification, and its log line."""
        self._refusals.tell(remote, why, unverified=True)
        return answer({"error": "verification failed"}, 401)

    @property
    def handler_timeout(self) -> float | None:
        """Seconds the handlers of one notification may take (None: no limit), in a
        request and in an inbox's workers alike."""
        return self._handler_timeout

    @property
    def dedupe_memory(self) -> int:
        """Approximate bytes held by the event ids remembered in this process."""
        return 0 if self._local is None else self._local.memory


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
