"""Create exactly once: a create whose answer was lost is looked for before it is sent again."""

from __future__ import annotations

import asyncio
import collections
import datetime
import email.utils
import logging
import uuid
from typing import Any

import pytest
from aiohttp import web

from payroll_async import (
    APIConnectionError,
    EventType,
    PayrollClient,
    RetryPolicy,
    WebhookSubscription,
)
from tests.conftest import SUBS_PATH, TOKEN, FakeClock, Serve, StartEmulator

HOOK = "https://hooks.example.test/in"
TYPES = [EventType.PAYROLL_PROCESSED]


def _iso(when: datetime.datetime) -> str:
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")


class Service:
    """Subscriptions on loopback; each POST follows ``plan``: answer, or drop before or after
    creating (the connection closed once the body is read, no answer either way)."""

    def __init__(
        self, *plan: str, ignore_sort: bool = False, behind: datetime.timedelta | None = None
    ) -> None:
        self.plan = list(plan)
        self.ignore_sort = ignore_sort
        self.behind = behind or datetime.timedelta(0)  # how far the service's clock lags
        self.background: set[asyncio.Task[None]] = set()
        self.subs: list[dict[str, Any]] = []
        self.posts = 0
        self.lists = 0

    def add(self, path: str, created: datetime.datetime) -> dict[str, Any]:
        sub = {
            "webhookSubscriptionId": str(uuid.uuid4()),
            "webhookEventTypes": ["PAYROLL_PROCESSED"],
            "path": path,
            "createdAt": _iso(created),
            "active": True,
        }
        self.subs.append(sub)
        return sub

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()  # the whole body is read before anything is decided
        self.posts += 1
        mode = self.plan.pop(0) if self.plan else "answer"
        if mode == "take 0.75s":  # carried out even after the client stopped waiting for it
            task = asyncio.ensure_future(self.create_later(body["path"], 0.75))
            self.background.add(task)
            await asyncio.shield(task)
            return web.json_response(self.subs[-1], status=201)
        sub = None
        if mode != "drop before creating":
            sub = self.add(body["path"], self.now())
        if mode.startswith("drop"):
            assert request.transport is not None
            request.transport.close()
            raise asyncio.CancelledError  # no answer
        return web.json_response(sub, status=201)

    def now(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.timezone.utc) - self.behind

    async def create_later(self, path: str, seconds: float) -> None:
        await asyncio.sleep(seconds)
        self.add(path, self.now())

    async def list(self, request: web.Request) -> web.Response:
        self.lists += 1
        newest_first = request.query.get("sort") == "-createdAt" and not self.ignore_sort
        items = sorted(self.subs, key=lambda s: s["createdAt"], reverse=newest_first)
        offset, limit = int(request.query["offset"]), int(request.query["limit"])
        page = items[offset : offset + limit]
        meta = {
            "currentCount": len(page),
            "filters": {},
            "limit": limit,
            "offset": offset,
            "sort": request.query.get("sort", "createdAt"),
            "totalCount": len(items),
        }
        date = email.utils.format_datetime(self.now(), usegmt=True)
        return web.json_response({"data": page, "meta": meta}, headers={"Date": date})

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(SUBS_PATH, self.create)
        app.router.add_get(SUBS_PATH, self.list)
        return app


async def create_beside_an_older_twin(
    service: Service, serve: Serve, clock: FakeClock
) -> tuple[WebhookSubscription, dict[str, Any]]:
    """A create on ``service``, which holds an older subscription with the same values."""
    long_ago = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    old = service.add(HOOK, long_ago)  # the same values, but not the lost attempt's
    base = await serve(service.app())
    async with PayrollClient(base, TOKEN, clock=clock) as client:
        sub = await client.webhooks.create(event_types=TYPES, path=HOOK)
    return sub, old


async def test_a_create_whose_answer_was_lost_returns_what_it_created(
    serve: Serve, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="payroll_async")
    service = Service("drop after creating")
    base = await serve(service.app())
    async with PayrollClient(base, TOKEN, clock=clock) as client:
        sub = await client.webhooks.create(event_types=TYPES, path=HOOK)
    assert service.posts == 1  # not sent again
    assert len(service.subs) == 1
    assert str(sub.webhook_subscription_id) == service.subs[0]["webhookSubscriptionId"]
    assert any("it had been done" in r.getMessage() for r in caplog.records)


async def test_a_service_that_ignores_the_sort_order_cannot_hide_the_lost_attempts_work(
    serve: Serve, clock: FakeClock
) -> None:
    service = Service("drop after creating", ignore_sort=True)
    long_ago = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    for n in range(150):  # older subscriptions, oldest first, over two pages
        service.add(HOOK if n % 2 else f"{HOOK}/{n}", long_ago + datetime.timedelta(hours=n))
    base = await serve(service.app())
    async with PayrollClient(base, TOKEN, clock=clock) as client:
        sub = await client.webhooks.create(event_types=TYPES, path=HOOK)
    assert service.posts == 1
    assert str(sub.webhook_subscription_id) == service.subs[-1]["webhookSubscriptionId"]


async def test_a_create_that_created_nothing_is_sent_again(serve: Serve, clock: FakeClock) -> None:
    service = Service("drop before creating", "drop before creating")
    sub, old = await create_beside_an_older_twin(service, serve, clock)
    assert service.posts == 3
    assert service.lists == 4  # looked for after each lost answer, and once more before resending
    assert len(service.subs) == 2
    assert str(sub.webhook_subscription_id) != old["webhookSubscriptionId"]
    assert len(clock.sleeps) == 2  # backed off before each new send


async def test_without_retries_a_lost_answer_is_looked_for_but_never_sent_again(
    serve: Serve, clock: FakeClock
) -> None:
    service = Service("drop before creating", "drop after creating")
    base = await serve(service.app())
    async with PayrollClient(base, TOKEN, clock=clock, retry=None) as client:
        with pytest.raises(APIConnectionError) as caught:
            await client.webhooks.create(event_types=TYPES, path=HOOK)
        assert caught.value.request_sent
        assert (service.posts, service.subs) == (1, [])
        sub = await client.webhooks.create(event_types=TYPES, path=HOOK)
    assert service.posts == 2
    assert [s["webhookSubscriptionId"] for s in service.subs] == [str(sub.webhook_subscription_id)]


async def test_ensure_and_replace_under_drops_leave_exactly_one_subscription_each(
    start_emulator: StartEmulator, clock: FakeClock
) -> None:
    emu = await start_emulator(webhook_subscriptions=0, seed=11)
    patient = RetryPolicy(max_attempts=20)
    async with PayrollClient(emu.base_url, emu.token, clock=clock, retry=patient) as client:
        emu.drop_rate = 0.3
        paths = [f"http://127.0.0.1:9/hook/{n}" for n in range(30)]
        ensured = [await client.webhooks.ensure(event_types=TYPES, path=p) for p in paths]
        replaced = [
            await client.webhooks.replace(
                sub.webhook_subscription_id, event_types=TYPES, path=f"{sub.path}/v2"
            )
            for sub in ensured[:10]
        ]
        emu.drop_rate = 0.0
    assert emu.stats["dropped_after"] > 5  # answers lost after the work was done
    by_path = collections.Counter(sub["path"] for sub in emu.subscriptions())
    expected = {f"{p}/v2" for p in paths[:10]} | set(paths[10:])
    assert by_path == dict.fromkeys(expected, 1)
    assert {str(s["webhookSubscriptionId"]) for s in emu.subscriptions()} == {
        str(s.webhook_subscription_id) for s in [*replaced, *ensured[10:]]
    }


async def test_a_create_still_being_carried_out_is_waited_for_not_sent_again(
    serve: Serve,
) -> None:
    # The first POST takes 0.75 s and is carried out; the client gives up on it after
    # 0.25 s, and its first look finds nothing yet. Sent again then, it would make a second
    # one; it looks again once the lost attempt can no longer land (4 timeouts: 1 s).
    service = Service("take 0.75s")
    base = await serve(service.app())
    async with PayrollClient(base, TOKEN, timeout=0.25) as client:
        sub = await client.webhooks.create(event_types=TYPES, path=HOOK)
    assert service.posts == 1
    assert [s["webhookSubscriptionId"] for s in service.subs] == [str(sub.webhook_subscription_id)]
    assert service.lists == 2  # at once (nothing), then once it could no longer land


async def test_a_service_clock_minutes_behind_cannot_hide_the_lost_attempts_work(
    serve: Serve, clock: FakeClock
) -> None:
    service = Service("drop after creating", behind=datetime.timedelta(minutes=2))
    sub, old = await create_beside_an_older_twin(service, serve, clock)
    assert service.posts == 1
    assert len(service.subs) == 2
    assert str(sub.webhook_subscription_id) == service.subs[-1]["webhookSubscriptionId"]
    assert str(sub.webhook_subscription_id) != old["webhookSubscriptionId"]
