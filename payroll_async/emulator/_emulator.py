"""The emulator: an aiohttp.web application that behaves like the service."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import math
import random
import re
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any

import aiohttp
import attrs
from aiohttp import web
from yarl import URL

from .._assumed import EMULATOR_MAX_PAGE_SIZE, EMULATOR_MAX_SORT_ITEMS
from .._json import dumps, loads
from ..models import EventType
from ._data import EPOCH, Collection, Dataset, SortSpec, uuid4_text

__all__ = ["Delivery", "Emulator"]


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

LIMIT_MAX = 4_294_967_295
OFFSET_MAX = 4_294_967_295
WEBHOOK_PAGE_DEFAULT = 20
WEBHOOK_PAGE_MAX = 100
# ASSUMED: default page size of operations 5-7 (not shown); the same as operation 1.
LIST_PAGE_DEFAULT = 20
WEBHOOK_ROLE = "api-user-webhook-subscription"
LINK_VALIDITY = datetime.timedelta(minutes=30)
_SORT_RE = re.compile(r"-?[A-Za-z0-9_]{1,100}(?:,-?[A-Za-z0-9_]{1,100}){0,2}\Z")
_UINT_RE = re.compile(r"[0-9]{1,10}\Z")  # ASCII digits only: int() would take "١٢" too
LINKS_MAX = 100_000  # onboarding links remembered at once; the oldest go first
_FILTER_RE = re.compile(r"filter\[([A-Za-z0-9_]+)\]\[([A-Za-z_]+)\]\Z")
_PATH_UUID_RE = re.compile(
    r"(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
    r"|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)\Z"
)
_EVENT_TYPES = frozenset(member.value for member in EventType)


class ApiError(Exception):
    """An error answer in the service's error shape."""

    def __init__(
        self,
        status: int,
        message: str,
        errors: list[str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors or []
        self.headers = dict(headers or {})


def _json(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(
        body=dumps(body), status=status, content_type="application/json", headers=headers
    )


def _loopback(host: str | None) -> bool:
    # The SDK's validator has the same rule; the emulator keeps its own so that it never
    # imports the SDK's internals and the two cannot agree by accident.
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _now_iso() -> str:
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.isoformat(timespec="microseconds").replace("+00:00", "Z")


@attrs.define
class Delivery:
    """One notification sent (or not) to one subscription by :meth:`Emulator.emit`."""

    subscription_id: str
    url: str
    body: bytes
    attempts: int = 0
    delivered: bool = False
    outcome: str = ""


class _TokenBucket:
    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.capacity = max(1.0, rate)
        self.tokens = self.capacity
        self.updated = time.monotonic()

    def take(self) -> float | None:
        """None if a request may go; else the seconds until one may."""
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return None
        return (1 - self.tokens) / self.rate


class Emulator:
    """A local, faithful emulator of the Payroll Onboarding and Webhook Service.

    >>> async with Emulator(seed=1, payroll_connections=1000) as emu:
    ...     async with PayrollClient(base_url=emu.base_url, token=emu.token) as client:
    ...         print(len(await client.payroll_connections.list().collect()))
    1000

    Collections are derived from ``seed`` on demand, so any size starts at once and a page
    costs the same whatever the size. Faults (``latency`` seconds per request,
    ``rate_limit`` requests per second, ``error_rate`` and ``drop_rate`` shares of
    requests) are drawn from the seed too. ``app`` is the aiohttp application, for mounting
    in a server of your own.
    """

    def __init__(
        self,
        *,
        seed: int = 1,
        payroll_connections: int = 1000,
        employer_identifiers: int = 50,
        update_groups: int = 5,
        webhook_subscriptions: int = 3,
        latency: float = 0.0,
        rate_limit: float | None = None,
        error_rate: float = 0.0,
        drop_rate: float = 0.0,
        link_headers: bool = True,
        max_page_size: int | None = EMULATOR_MAX_PAGE_SIZE,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        delivery_headers: Mapping[str, str] | None = None,
    ) -> None:
        for name, value in (
            ("payroll_connections", payroll_connections),
            ("employer_identifiers", employer_identifiers),
            ("update_groups", update_groups),
            ("webhook_subscriptions", webhook_subscriptions),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        for name, share in (("error_rate", error_rate), ("drop_rate", drop_rate)):
            if not 0 <= share <= 1:
                raise ValueError(f"{name} must be between 0 and 1, got {share!r}")
        if latency < 0:
            raise ValueError(f"latency must be >= 0 seconds, got {latency!r}")
        if rate_limit is not None and not rate_limit > 0:
            raise ValueError(f"rate_limit must be > 0 requests per second, got {rate_limit!r}")
        if max_page_size is not None and max_page_size < 1:
            raise ValueError(f"max_page_size must be >= 1, got {max_page_size!r}")
        self.seed = seed
        self.data = Dataset(
            seed=seed,
            payroll_connections=payroll_connections,
            employer_identifiers=employer_identifiers,
            update_groups=update_groups,
        )
        self.latency = latency
        self.error_rate = error_rate
        self.drop_rate = drop_rate
        self.link_headers = link_headers
        self.max_page_size = max_page_size
        self.host = host
        self.port = port
        self.token = token or f"emu_{secrets.token_urlsafe(18)}"
        self.token_without_webhook_role = f"emu_nowebhooks_{secrets.token_urlsafe(12)}"
        self.stats: Counter[str] = Counter()
        """Requests served and faults injected: requests, dropped, errors, rate_limited."""
        self._roles = {self.token: {WEBHOOK_ROLE}, self.token_without_webhook_role: set()}
        self._bucket = _TokenBucket(rate_limit) if rate_limit else None
        self._rng = random.Random(seed)
        self._subscriptions: dict[str, dict[str, Any]] = {}
        self._links: dict[str, tuple[float, str, bool]] = {}
        self._seed_subscriptions(webhook_subscriptions)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.delivery_headers = dict(delivery_headers or {})
        self.deliveries: list[Delivery] = []
        """Every notification delivery attempted by :meth:`emit`, in order."""
        self.base_url = ""
        self.app = self._build_app()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> str:
        """Listen on ``host:port`` (port 0 picks a free one); returns ``base_url``."""
        runner = web.AppRunner(self.app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        await site.start()
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self.port = port
        # Listening on every address: the URL to call it by is the loopback one.
        if host in ("0.0.0.0", ""):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        host_text = f"[{host}]" if ":" in host else host
        self.base_url = f"http://{host_text}:{port}"
        return self.base_url

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Emulator:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<Emulator {self.base_url or 'not started'} seed={self.seed}>"

    # -- helpers for demos and tests --------------------------------------------------------

    def sample_ids(self) -> dict[str, str]:
        """An existing employer identifier and its onboarding invite, for trying things."""
        if self.data.employers == 0:
            return {}
        return {
            "employer_identifier_id": self.data.employer_id(0),
            "invite_id": self.data.invite_id(0),
        }

    def subscriptions(self) -> list[dict[str, Any]]:
        """The webhook subscriptions as the service would list them, oldest first."""
        return [dict(sub) for sub in self._subscriptions.values()]

    def set_active(self, subscription_id: str, active: bool) -> None:
        """Switch a subscription on or off (the service's transitions of `active` are not shown)."""
        self._subscriptions[subscription_id]["active"] = active

    # -- notifications -------------------------------------------------------------------------

    async def emit(
        self,
        event_type: EventType | str,
        data: Mapping[str, Any] | None = None,
        *,
        event_id: str | None = None,
        occurred_at: datetime.datetime | None = None,
        attempts: int = 3,
    ) -> int:
        """Notify every active subscription that lists ``event_type``; deliveries that succeeded.

        The body is ``{"eventId", "eventType", "occurredAt", "data"}`` (ASSUMED: the
        document does not show it), POSTed as JSON with ``delivery_headers``. A delivery
        that fails (no 2xx, no connection) is tried again, up to ``attempts`` times in all.
        Only loopback destinations are delivered to: a local emulator never sends data off
        the machine; other subscriptions are recorded in ``deliveries`` as not delivered.
        """
        kind = event_type.value if isinstance(event_type, EventType) else str(event_type)
        when = occurred_at or datetime.datetime.now(datetime.timezone.utc)
        body = dumps(
            {
                "eventId": event_id or f"evt_{secrets.token_hex(12)}",
                "eventType": kind,
                "occurredAt": when.isoformat(timespec="microseconds").replace("+00:00", "Z"),
                "data": dict(data or {}),
            }
        )
        targets = [
            sub
            for sub in list(self._subscriptions.values())
            if sub["active"] and kind in sub["webhookEventTypes"]
        ]
        results = await asyncio.gather(*(self._deliver(sub, body, attempts) for sub in targets))
        return sum(results)

    async def _deliver(self, subscription: dict[str, Any], body: bytes, attempts: int) -> bool:
        url = URL(subscription["path"])
        record = Delivery(subscription["webhookSubscriptionId"], subscription["path"], body)
        self.deliveries.append(record)
        if not _loopback(url.host):
            record.outcome = "not delivered: the emulator delivers to loopback hosts only"
            return False
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "payroll-emulator",
            **self.delivery_headers,
        }
        for attempt in range(1, max(1, attempts) + 1):
            record.attempts = attempt
            try:
                async with self._session.post(
                    url, data=body, headers=headers, allow_redirects=False
                ) as response:
                    await response.read()
                    record.outcome = f"HTTP {response.status}"
                    if 300 <= response.status < 400:
                        # Never followed: a redirect could send the notification anywhere.
                        record.outcome += " (a redirect: not followed, not delivered)"
                        return False
                    if 200 <= response.status < 300:
                        record.delivered = True
                        return True
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                record.outcome = f"{type(exc).__name__}: {exc}"
            if attempt < attempts:
                await asyncio.sleep(0.05 * 2 ** (attempt - 1))
        return False

    # -- the application --------------------------------------------------------------------

    def _build_app(self) -> web.Application:
        app = web.Application(middlewares=[self._errors, self._faults, self._auth])
        app.router.add_get("/v1/webhooks/subscriptions", self._list_subscriptions)
        app.router.add_post("/v1/webhooks/subscriptions", self._create_subscription)
        app.router.add_delete("/v1/webhooks/subscriptions/{id}", self._delete_subscription)
        app.router.add_post(
            "/v1/employer-identifiers/{employer}/invites/{invite}/session", self._invite_session
        )
        app.router.add_get("/v1/employer-identifiers/{employer}/update-groups", self._update_groups)
        app.router.add_get("/v1/employer-identifiers", self._employers)
        app.router.add_get("/v1/payroll-connections", self._connections)
        app.router.add_get("/onboarding", self._onboarding)
        return app

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as exc:
            return _json({"message": exc.message, "errors": exc.errors}, exc.status, exc.headers)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return _json(
                {"message": exc.reason, "errors": [f"{request.method} {request.path}"]}, exc.status
            )

    @web.middleware
    async def _faults(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/v1/"):
            return await handler(request)
        self.stats["requests"] += 1
        if self.drop_rate and self._rng.random() < self.drop_rate:
            self.stats["dropped"] += 1
            if request.transport is not None:
                request.transport.close()
            raise asyncio.CancelledError  # ends the handler without an answer
        if self.latency:
            await asyncio.sleep(self.latency)
        if self._bucket is not None:
            wait = self._bucket.take()
            if wait is not None:
                self.stats["rate_limited"] += 1
                seconds = max(1, math.ceil(wait))
                raise ApiError(
                    429,
                    "Rate limit exceeded",
                    [f"retry after {seconds} seconds"],
                    {"Retry-After": str(seconds)},
                )
        if self.error_rate and self._rng.random() < self.error_rate:
            self.stats["errors"] += 1
            status = self._rng.choice((500, 503))
            raise ApiError(
                status,
                "Internal server error" if status == 500 else "Service unavailable",
                ["injected fault"],
            )
        return await handler(request)

    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/v1/"):
            return await handler(request)
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise ApiError(
                401,
                "Missing bearer token",
                ["Authorization: Bearer <token> is required"],
                {"WWW-Authenticate": 'Bearer realm="payroll"'},
            )
        roles = self._roles.get(token.strip())
        if roles is None:
            raise ApiError(
                401,
                "Invalid token",
                ["the access token is invalid or expired"],
                {"WWW-Authenticate": 'Bearer realm="payroll", error="invalid_token"'},
            )
        if request.path.startswith("/v1/webhooks/") and WEBHOOK_ROLE not in roles:
            raise ApiError(
                403, "Insufficient permissions", [f"the API user lacks the role {WEBHOOK_ROLE}"]
            )
        return await handler(request)

    # -- list machinery ---------------------------------------------------------------------

    def _list_params(
        self,
        request: web.Request,
        *,
        sort_fields: frozenset[str],
        default_sort: str,
        default_limit: int,
        max_limit: int | None,
        filterable: Mapping[str, frozenset[str]] = {},
    ) -> tuple[int, int, SortSpec, str, dict[str, dict[str, str]]]:
        errors: list[str] = []
        query = request.query

        def number(name: str, low: int, high: int, default: int) -> int:
            raw = query.get(name)
            if raw is None:
                return default
            if not _UINT_RE.match(raw) or not low <= int(raw) <= high:
                errors.append(f"{name}: must be an integer from {low} to {high}, got {raw!r}")
                return default
            return int(raw)

        limit = number("limit", 1, LIMIT_MAX, default_limit)
        offset = number("offset", 0, OFFSET_MAX, 0)
        if max_limit is not None:
            limit = min(limit, max_limit)
        sort_text = query.get("sort", default_sort)
        spec: list[tuple[str, bool]] = []
        if not _SORT_RE.match(sort_text):
            errors.append(
                "sort: 1 to 3 comma-separated fields of 1-100 word characters, "
                f"optionally prefixed with '-', got {sort_text!r}"
            )
        else:
            for part in sort_text.split(","):
                field = part.lstrip("-")
                if field not in sort_fields:
                    errors.append(
                        f"sort: cannot sort by {field!r}; allowed: {', '.join(sorted(sort_fields))}"
                    )
                spec.append((field, part.startswith("-")))
        filters: dict[str, dict[str, str]] = {}
        for key, value in query.items():
            if not key.startswith("filter"):
                continue
            match = _FILTER_RE.match(key)
            if match is None or match[1] not in filterable:
                errors.append(f"{key}: not a filter of this listing")
                continue
            field, op = match[1], match[2]
            if op not in filterable[field]:
                allowed = ", ".join(sorted(filterable[field]))
                errors.append(f"{key}: operator {op!r} not allowed; allowed: {allowed}")
                continue
            filters.setdefault(field, {})[op] = value
        if errors:
            raise ApiError(400, "Invalid request parameters", errors)
        return offset, limit, tuple(spec), sort_text, filters

    def _envelope(
        self,
        request: web.Request,
        items: list[dict[str, Any]],
        *,
        offset: int,
        limit: int,
        total: int,
        sort: str,
        filters: dict[str, dict[str, str]],
    ) -> web.Response:
        body = {
            "data": items,
            "meta": {
                "currentCount": len(items),
                "filters": filters,
                "limit": limit,
                "offset": offset,
                "sort": sort,
                "totalCount": total,
            },
        }
        headers = (
            {"Link": self._link_header(request.url, offset, limit, total)}
            if self.link_headers
            else None
        )
        return _json(body, headers=headers)

    @staticmethod
    def _link_header(url: URL, offset: int, limit: int, total: int) -> str:
        def at(rel: str, value: int) -> str:
            return f'<{url.update_query(limit=limit, offset=value)}>; rel="{rel}"'

        last = max(0, (total - 1) // limit * limit) if total else 0
        links = [at("self", offset), at("first", 0), at("last", last)]
        if offset > 0:
            links.append(at("prev", max(0, offset - limit)))
        if offset + limit < total:
            links.append(at("next", offset + limit))
        return ", ".join(links)

    def _collection_page(
        self, request: web.Request, collection: Collection, sort_fields: frozenset[str]
    ) -> web.Response:
        offset, limit, spec, sort, filters = self._list_params(
            request,
            sort_fields=sort_fields,
            default_sort=collection.default_sort,
            default_limit=LIST_PAGE_DEFAULT,
            max_limit=self.max_page_size,
        )
        default = collection.default_sort
        if spec not in (((default, False),), ((default, True),)) and (
            collection.size > EMULATOR_MAX_SORT_ITEMS
        ):
            raise ApiError(
                400,
                "Sort not available",
                [
                    f"sort: the emulator sorts at most {EMULATOR_MAX_SORT_ITEMS:,} items by "
                    f"{sort!r}; this collection has {collection.size:,} (sort by "
                    f"{default!r} or '-{default}' instead, or start a smaller emulator)"
                ],
            )
        items = collection.page(offset, limit, spec)
        return self._envelope(
            request,
            items,
            offset=offset,
            limit=limit,
            total=collection.size,
            sort=sort,
            filters=filters,
        )

    # -- operations 5-7 ------------------------------------------------------------------

    async def _connections(self, request: web.Request) -> web.Response:
        collection = self.data.payroll_connections
        return self._collection_page(request, collection, frozenset(collection.keys))

    async def _employers(self, request: web.Request) -> web.Response:
        collection = self.data.employer_identifiers
        return self._collection_page(request, collection, frozenset(collection.keys))

    def _employer_from_path(self, request: web.Request) -> int:
        employer_id = self._path_uuid(request, "employer", "employer_identifier")
        index = self.data.employer_index(employer_id)
        if index is None:
            raise ApiError(
                404, "Employer identifier not found", [f"no employer identifier {employer_id}"]
            )
        return index

    async def _update_groups(self, request: web.Request) -> web.Response:
        collection = self.data.update_groups(self._employer_from_path(request))
        return self._collection_page(request, collection, frozenset(collection.keys))

    # -- operation 4 and the link it makes --------------------------------------------------

    async def _invite_session(self, request: web.Request) -> web.Response:
        employer = self._employer_from_path(request)
        invite = self._path_uuid(request, "invite", "invite")
        if invite != self.data.invite_id(employer):
            raise ApiError(404, "Invite not found", [f"no invite {invite} for this employer"])
        token = secrets.token_urlsafe(24)
        self._prune_links()
        self._links[token] = (time.monotonic() + LINK_VALIDITY.total_seconds(), invite, False)
        link = request.url.with_path("/onboarding").with_query(token=token)
        return _json({"onboardingLink": str(link)})

    def _prune_links(self) -> None:
        """Forget links expired for longer than their validity (410 until then), and the
        oldest beyond LINKS_MAX; links are kept in the order they were made."""
        horizon = time.monotonic() - LINK_VALIDITY.total_seconds()
        while self._links:
            token, (expires, _, _) = next(iter(self._links.items()))
            if expires >= horizon and len(self._links) < LINKS_MAX:
                break
            del self._links[token]

    async def _onboarding(self, request: web.Request) -> web.Response:
        token = request.query.get("token", "")
        entry = self._links.get(token)
        if entry is None:
            return web.Response(status=404, text="Unknown onboarding link.\n")
        expires, invite, used = entry
        if used:
            return web.Response(status=410, text="This onboarding link was already used.\n")
        if time.monotonic() > expires:
            return web.Response(status=410, text="This onboarding link has expired.\n")
        self._links[token] = (expires, invite, True)
        return web.Response(
            content_type="text/html",
            text=(
                "<!doctype html><title>Onboarding</title>"
                f"<p>Onboarding started for invite {invite}.</p>\n"
            ),
        )

    # -- operations 1-3: webhook subscriptions ------------------------------------------------

    def _seed_subscriptions(self, count: int) -> None:
        for k in range(count):
            sid = str(_uuid_from_rng(self._rng))
            created = EPOCH + datetime.timedelta(days=k)
            self._subscriptions[sid] = {
                "webhookSubscriptionId": sid,
                "webhookEventTypes": [sorted(_EVENT_TYPES)[k % len(_EVENT_TYPES)]],
                "path": f"https://hooks.example.com/payroll/{k}",
                "createdAt": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "active": k % 3 != 2,
            }

    async def _list_subscriptions(self, request: web.Request) -> web.Response:
        offset, limit, spec, sort, filters = self._list_params(
            request,
            sort_fields=frozenset({"active", "createdAt"}),
            default_sort="createdAt",
            default_limit=WEBHOOK_PAGE_DEFAULT,
            max_limit=WEBHOOK_PAGE_MAX
            if self.max_page_size is None
            else min(WEBHOOK_PAGE_MAX, self.max_page_size),
            filterable={"active": frozenset({"eq", "ne"})},
        )
        subs = list(self._subscriptions.values())  # creation order == createdAt order
        for op, raw in filters.get("active", {}).items():
            if raw not in ("true", "false"):
                raise ApiError(
                    400,
                    "Invalid request parameters",
                    [f"filter[active][{op}]: must be true or false, got {raw!r}"],
                )
            wanted = raw == "true"
            subs = [s for s in subs if (s["active"] == wanted) == (op == "eq")]
        for field, descending in reversed(spec):
            if field == "active":
                subs.sort(key=lambda s: s["active"], reverse=descending)
            elif descending:  # createdAt: the list is in creation order already
                subs.reverse()
        return self._envelope(
            request,
            subs[offset : offset + limit],
            offset=offset,
            limit=limit,
            total=len(subs),
            sort=sort,
            filters=filters,
        )

    async def _create_subscription(self, request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            body = loads(raw)
        except ValueError:
            raise ApiError(400, "Invalid request body", ["the body is not valid JSON"]) from None
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid request body", ["the body must be a JSON object"])
        errors: list[str] = []
        event_types = body.get("event_types")
        if not isinstance(event_types, list) or not event_types:
            errors.append("event_types: a non-empty array of event types is required")
            event_types = []
        else:
            for item in event_types:
                if not isinstance(item, str) or item not in _EVENT_TYPES:
                    errors.append(
                        f"event_types: unknown event type {item!r}; "
                        f"allowed: {', '.join(sorted(_EVENT_TYPES))}"
                    )
        path = body.get("path")
        if not isinstance(path, str):
            errors.append("path: a URL string is required")
        elif not path.isascii() or any(ch.isspace() or not ch.isprintable() for ch in path):
            errors.append(f"path: must be an ASCII URI without spaces, got {path!r}")
        else:
            try:
                url: URL | None = URL(path)
            except ValueError:
                url = None
            if (
                url is None
                or not url.is_absolute()
                or not url.host
                or not (url.scheme == "https" or (url.scheme == "http" and _loopback(url.host)))
            ):
                errors.append(f"path: must be an absolute https URL, got {path!r}")
        if errors:
            raise ApiError(400, "Invalid request parameters", errors)
        sid = str(_uuid_from_rng(self._rng))
        subscription = {
            "webhookSubscriptionId": sid,
            "webhookEventTypes": list(dict.fromkeys(event_types)),
            "path": path,
            "createdAt": _now_iso(),
            "active": True,
        }
        self._subscriptions[sid] = subscription
        return _json(subscription, status=201)  # ASSUMED: the 201 body is the subscription

    async def _delete_subscription(self, request: web.Request) -> web.Response:
        sid = self._path_uuid(request, "id", "subscription_id")
        if self._subscriptions.pop(sid, None) is None:
            raise ApiError(404, "Webhook subscription not found", [f"no subscription {sid}"])
        return web.Response(status=204)

    @staticmethod
    def _path_uuid(request: web.Request, key: str, name: str) -> str:
        value = request.match_info[key]
        if not _PATH_UUID_RE.match(value):
            raise ApiError(
                400, "Invalid request parameters", [f"{name}: must be a UUID, got {value!r}"]
            )
        return value.lower()


def _uuid_from_rng(rng: random.Random) -> str:
    return uuid4_text(f"{rng.getrandbits(128):032x}")
