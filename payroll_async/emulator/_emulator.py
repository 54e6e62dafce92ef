"""The Emulator facade: its options, its lifecycle as a server, and its helpers for tests."""

from __future__ import annotations

import asyncio
import datetime
import random
import secrets
from collections import Counter, deque
from collections.abc import Mapping
from typing import Any

import attrs
from aiohttp import web

from .._core._assumed import EMULATOR_MAX_PAGE_SIZE
from .._core._version import __version__
from ..models import EventType
from . import (
    _middleware,
    _routes_connections,
    _routes_employers,
    _routes_platforms,
    _routes_webhooks,
)
from ._data import Dataset
from ._delivery import Deliverer, Delivery, new_secret, notification, public_key_of, signer
from ._http import ApiError, is_loopback, json_object, json_response
from ._state import STATE, WEBHOOK_ROLE, State, TokenBucket, check_options
from ._store import SubscriptionStore
from ._tls import LocalCA

__all__ = ["EMIT_PATH", "Churn", "Delivery", "Emulator"]

EMIT_PATH = "/_emulator/events"
"""POST here (from loopback, with the emulator's token) to `Emulator.emit()` an event."""


@attrs.frozen
class Churn:
    """What `Emulator.churn()` changed: the ids, as the service writes them."""

    inserted: list[str]
    """New items (the newest in the listing)."""
    updated: list[str]
    """Items whose fields changed."""
    deleted: list[str]
    """Items gone from the listing."""


class Emulator:
    """A local, faithful emulator of the Payroll Onboarding and Webhook Service.

    ```pycon
    >>> async with Emulator(seed=1, payroll_connections=1000) as emu:
    ...     async with PayrollClient(emu.base_url, emu.token) as client:
    ...         print(len(await client.payroll_connections.list().collect()))
    1000
    ```

    Collections are derived from ``seed`` on demand, so any size starts at once and a page
    costs the same whatever the size. Faults (``latency`` seconds per request,
    ``rate_limit`` requests per second, ``error_rate`` and ``drop_rate`` shares of
    requests; half the drops lose the answer after the request was carried out) are drawn
    from the seed too. ``app`` is the aiohttp application, for mounting
    in a server of your own.

    Deliveries are signed as Standard Webhooks says with ``webhook_secret`` (a fresh
    ``whsec_`` secret when None: read it as ``emu.webhook_secret``), so a receiver built
    with ``EventRouter(secret=emu.webhook_secret)`` accepts them. A ``whsk_`` Ed25519
    private key signs ``v1a`` instead (extra ``webhooks``): the receiver is then given
    ``emu.webhook_public_key``, its ``whpk_``. ``delivery_headers`` are
    added to every delivery. ``POST /_emulator/events`` emits from outside the process.

    ``tls=True`` (extra ``emulator-tls``) serves ``https://`` with a certificate from a
    certificate authority it makes for itself, whose PEM file is ``emu.ca_file`` once
    started: a client trusts it with ``ssl=emu.ca_file``, as it would a company's private
    CA, and can reach it through a ``proxy=`` (which carries ``https://`` only), so that
    both can be rehearsed on one machine.
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
        webhook_secret: str | None = None,
        tls: bool = False,
    ) -> None:
        counts = {
            "payroll_connections": payroll_connections,
            "employer_identifiers": employer_identifiers,
            "update_groups": update_groups,
            "webhook_subscriptions": webhook_subscriptions,
        }
        check_options(counts, error_rate, drop_rate, latency, rate_limit, max_page_size)
        if not isinstance(tls, bool):
            raise ValueError(f"tls must be True or False, got {tls!r}")
        self._ca: LocalCA | None = LocalCA(host) if tls else None
        self.ca_file: str = ""
        """With ``tls=True``, once started: the PEM file of the certificate authority it
        made for itself, to trust it by (``ssl=emu.ca_file``, ``--ca-bundle``,
        ``SSL_CERT_FILE``); deleted when it closes (empty before, and without TLS, as
        ``base_url`` is before it starts)."""
        self.seed: int = seed
        """The seed of the data: the same seed, the same data."""
        self.host: str = host
        """The address it listens on."""
        self.port: int = port
        """The port it listens on (the one picked, once started with port 0)."""
        self.token: str = token or f"emu_{secrets.token_urlsafe(18)}"
        """A bearer token with every role."""
        self.token_without_webhook_role: str = f"emu_nowebhooks_{secrets.token_urlsafe(12)}"
        """A bearer token without the webhook role: webhook operations answer 403."""
        self.service: str = (
            f"payroll-async emulator {__version__} (seed {seed}, {payroll_connections:,} "
            f"payroll connections, {employer_identifiers:,} employer identifiers, "
            f"{update_groups:,} update groups each, {webhook_subscriptions:,} subscriptions)"
        )
        """What an export's checkpoint can know it by, ``export_to_file(...,
        service=emu.service)``: its data, the same in every emulator of this version made
        with the same seed and sizes, whatever its port and token, so that an export
        interrupted on one resumes on the next. (What ``churn()`` or a create changed
        since it started is not in it.)"""
        rng = random.Random(seed)
        self._state = State(
            data=Dataset(
                seed=seed,
                payroll_connections=payroll_connections,
                employer_identifiers=employer_identifiers,
                update_groups=update_groups,
            ),
            rng=rng,
            roles={
                self.token: frozenset({WEBHOOK_ROLE}),
                self.token_without_webhook_role: frozenset(),
            },
            subscriptions=SubscriptionStore(rng, webhook_subscriptions),
            latency=latency,
            error_rate=error_rate,
            drop_rate=drop_rate,
            bucket=TokenBucket(rate_limit) if rate_limit else None,
            link_headers=link_headers,
            max_page_size=max_page_size,
        )
        self.webhook_secret: str = webhook_secret or new_secret()
        """The ``whsec_`` secret (or ``whsk_`` private key) every delivery is signed with."""
        self._deliverer = Deliverer(delivery_headers or {}, signer(self.webhook_secret))
        self.webhook_public_key: str | None = public_key_of(self.webhook_secret)
        """With a ``whsk_`` secret, the ``whpk_`` public key a receiver verifies with."""
        self._runner: web.AppRunner | None = None
        self._bound: list[tuple[str, int]] = []
        self.base_url: str = ""
        """The root URL to give a client, once started (empty before)."""
        self.app: web.Application = web.Application(
            middlewares=[_middleware.errors, _middleware.faults, _middleware.auth]
        )
        """The ``aiohttp.web.Application``, to mount in a server of your own."""
        self.app[STATE] = self._state
        for module in (_routes_webhooks, _routes_employers, _routes_connections, _routes_platforms):
            self.app.router.add_routes(module.routes)
        self.app.router.add_post(EMIT_PATH, self._emit_route)

    # -- settings, read by every request ----------------------------------------------------

    @property
    def data(self) -> Dataset:
        """The seeded collections."""
        return self._state.data

    @property
    def stats(self) -> Counter[str]:
        """Requests served and faults injected: requests, dropped (dropped_after: after the
        request was carried out), errors, rate_limited."""
        return self._state.stats

    @property
    def latency(self) -> float:
        """Seconds added to every request (settable while it runs)."""
        return self._state.latency

    @latency.setter
    def latency(self, value: float) -> None:
        self._state.latency = value

    @property
    def error_rate(self) -> float:
        """The share of requests answered 500 or 503 (settable while it runs)."""
        return self._state.error_rate

    @error_rate.setter
    def error_rate(self, value: float) -> None:
        self._state.error_rate = value

    @property
    def drop_rate(self) -> float:
        """The share of connections closed without an answer (settable while it runs)."""
        return self._state.drop_rate

    @drop_rate.setter
    def drop_rate(self, value: float) -> None:
        self._state.drop_rate = value

    @property
    def link_headers(self) -> bool:
        """Whether list responses carry a Link header (as the service's do)."""
        return self._state.link_headers

    @link_headers.setter
    def link_headers(self, value: bool) -> None:
        self._state.link_headers = value

    @property
    def max_page_size(self) -> int | None:
        """The most items a page holds; a larger ``limit`` is capped (None: no cap)."""
        return self._state.max_page_size

    @property
    def delivery_headers(self) -> dict[str, str]:
        """Headers sent with every notification (e.g. a shared secret)."""
        return self._deliverer.headers

    @delivery_headers.setter
    def delivery_headers(self, value: Mapping[str, str]) -> None:
        self._deliverer.headers = dict(value)

    @property
    def deliveries(self) -> deque[Delivery]:
        """The latest notification deliveries attempted by
        [`emit()`][payroll_async.emulator.Emulator.emit], oldest first.

        A bounded record: the latest 1,000 are kept (older ones are dropped), so that an
        emulator emitting for hours keeps a flat memory. ``emu.deliveries[-1]`` is the latest.
        """
        return self._deliverer.deliveries

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> str:
        """Listen on ``host:port`` (port 0 picks a free one); returns ``base_url``."""
        runner = web.AppRunner(self.app, access_log=None)
        await runner.setup()
        context = None if self._ca is None else self._ca.server_context()
        site = web.TCPSite(runner, self.host, self.port, ssl_context=context)
        try:
            await site.start()
            if self._ca is not None:
                self.ca_file = await asyncio.to_thread(self._ca.write)
        except BaseException:
            await runner.cleanup()  # a port in use leaves nothing set up behind
            raise
        self._runner = runner
        self._bound = [(str(a[0]), int(a[1])) for a in runner.addresses]
        host, port = runner.addresses[0][:2]
        self.port = int(port)
        # Listening on every address: the URL to call it by is the loopback one.
        if host in ("0.0.0.0", ""):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        host_text = f"[{host}]" if ":" in host else host
        scheme = "http" if self._ca is None else "https"
        self.base_url = f"{scheme}://{host_text}:{port}"
        return self.base_url

    def exposed(self) -> list[str]:
        """The addresses it listens on beyond loopback (``0.0.0.0:8080``, with what they
        mean), once started: empty when only this machine can reach it."""
        every = {"0.0.0.0": " (every IPv4 address of this machine)", "::": " (every IPv6 address)"}
        return [
            (f"[{host}]:{port}" if ":" in host else f"{host}:{port}") + every.get(host, "")
            for host, port in self._bound
            if not is_loopback(host)
        ]

    async def close(self) -> None:
        """Stop serving and close the delivery session; ``async with`` calls it."""
        await self._deliverer.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._ca is not None and self.ca_file:
            await asyncio.to_thread(self._ca.remove)
            self.ca_file = ""

    async def __aenter__(self) -> Emulator:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
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
        return [sub.to_json() for sub in self._state.subscriptions.all()]

    def set_active(self, subscription_id: str, active: bool) -> None:
        """Switch a subscription on or off (the service's transitions of `active` are not shown)."""
        self._state.subscriptions.set_active(subscription_id, active)

    def churn(
        self, collection: str, *, inserted: int = 0, updated: int = 0, deleted: int = 0
    ) -> Churn:
        """Change a collection as users of the service would; the ids changed.

        ``collection`` is ``payroll-connections``, ``employer-identifiers``, ``webhooks``
        or ``update-groups`` (one employer's, drawn from the seed). Which items change is
        deterministic from the seed. New items are the newest; items keep their ids; an
        updated payroll connection changes ``status``, an employer its ``displayName``, an
        update group its ``errorCount``, a webhook subscription ``active``. Pages listed
        afterwards see the change, as a database's would (later items move up when one is
        deleted).

        ```pycon
        >>> changed = emu.churn("payroll-connections", inserted=5, updated=5, deleted=5)
        ```
        """
        for name, value in (("inserted", inserted), ("updated", updated), ("deleted", deleted)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        if collection == "webhooks":
            return Churn(*self._state.subscriptions.churn(inserted, updated, deleted))
        return Churn(*self._state.data.churn(collection, inserted, updated, deleted))

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
        kind = str(event_type)
        key = event_id or f"evt_{secrets.token_hex(12)}"
        body = notification(kind, data, key, occurred_at)
        targets = self._state.subscriptions.listening(kind)
        return await self._deliverer.send(targets, key, body, attempts)

    async def _emit_route(self, request: web.Request) -> web.Response:
        """``POST /_emulator/events``: emit from outside the process (a shell, a test).

        Body ``{"eventType", "data", "eventId"}`` (``data`` and ``eventId`` optional);
        answers ``{"eventId", "delivered"}``. Only from a loopback peer and with the
        emulator's token, since it makes the emulator send requests.
        """
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if not peer or not is_loopback(str(peer[0])):
            raise ApiError(403, "Forbidden", ["events are emitted from loopback only"])
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(
            token.strip().encode(), self.token.encode()
        ):
            raise ApiError(401, "Invalid token", ["the emulator's own token is required"])
        body = await json_object(request)
        kind, data, event_id = body.get("eventType"), body.get("data"), body.get("eventId")
        errors = []
        if not isinstance(kind, str) or not kind:
            errors.append("eventType: a string is required")
        if data is not None and not isinstance(data, dict):
            errors.append("data: must be an object")
        if event_id is not None and (not isinstance(event_id, str) or not event_id):
            errors.append("eventId: must be a non-empty string")
        if errors:
            raise ApiError(400, "Invalid request parameters", errors)
        assert isinstance(kind, str)
        key = event_id or f"evt_{secrets.token_hex(12)}"
        delivered = await self.emit(kind, data, event_id=key)
        return json_response({"eventId": key, "delivered": delivered})
