"""Subscribe, receive, react, replace: the SDK, the emulator and an EventRouter on loopback."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from payroll_async import EventType, PayrollClient
from payroll_async.emulator import Emulator
from payroll_async.events import EventRouter, WebhookEvent, header_secret
from tests.conftest import Serve, StartEmulator


class Receiver:
    def __init__(self, router: EventRouter) -> None:
        self.router = router
        self.events: list[WebhookEvent] = []
        self.calls: Counter[str] = Counter()
        self._arrived = asyncio.Event()

        @router.on()
        async def record(event: WebhookEvent) -> None:
            assert event.event_id is not None
            self.calls[event.event_id] += 1
            self.events.append(event)
            self._arrived.set()

    async def more(self, count: int) -> None:
        """Wait until ``count`` more events than now have arrived."""
        target = len(self.events) + count
        while len(self.events) < target:
            self._arrived.clear()
            await asyncio.wait_for(self._arrived.wait(), 30)


@pytest.fixture
async def emu(start_emulator: StartEmulator) -> Emulator:
    return await start_emulator(seed=3, webhook_subscriptions=0)


async def test_only_subscribed_events_arrive_with_their_data(emu: Emulator, serve: Serve) -> None:
    receiver = Receiver(EventRouter(secret=emu.webhook_secret))
    hook = f"{await serve(receiver.router.app(path='/hooks'))}/hooks"
    async with PayrollClient(emu.base_url, emu.token) as client:
        await client.webhooks.create(
            event_types=[EventType.PAYROLL_PROCESSED, EventType.EMPLOYEE_CENSUS_HIRED], path=hook
        )
    assert (
        await emu.emit(EventType.PAYROLL_PROCESSED, data={"payrollId": "p-1"}, event_id="e1") == 1
    )
    assert await emu.emit(EventType.UPDATE_GROUP_PROCESSED, data={"x": 1}, event_id="e2") == 0
    assert await emu.emit("EMPLOYEE_CENSUS_HIRED", data={"employeeId": "m-9"}, event_id="e3") == 1
    assert [(str(e.event_type), e.event_id, dict(e.data)) for e in receiver.events] == [
        ("PAYROLL_PROCESSED", "e1", {"payrollId": "p-1"}),
        ("EMPLOYEE_CENSUS_HIRED", "e3", {"employeeId": "m-9"}),
    ]
    assert all(e.occurred_at is not None for e in receiver.events)


async def test_replace_while_events_are_emitted_loses_none(emu: Emulator, serve: Serve) -> None:
    receiver = Receiver(EventRouter(secret=emu.webhook_secret))
    base = await serve(receiver.router.app(path="/hooks"))
    sent: list[str] = []

    async def emit_continuously(stop: asyncio.Event) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            event_id = f"evt-{n}"
            sent.append(event_id)
            await emu.emit(EventType.PAYROLL_PROCESSED, data={"n": n}, event_id=event_id)
            await asyncio.sleep(0)

    async with PayrollClient(emu.base_url, emu.token) as client:
        old = await client.webhooks.create(
            event_types=[EventType.PAYROLL_PROCESSED], path=f"{base}/hooks"
        )
        stop = asyncio.Event()
        emitter = asyncio.create_task(emit_continuously(stop))
        await receiver.more(10)  # events are flowing
        new = old
        for path in (f"{base}/hooks?v=2", f"{base}/hooks?v=3"):  # two replacements mid-stream
            new = await client.webhooks.replace(
                new.webhook_subscription_id, event_types=[EventType.PAYROLL_PROCESSED], path=path
            )
            await receiver.more(10)  # events flow to the new subscription
        stop.set()
        await emitter
        live = await client.webhooks.list().collect()
    assert [s.webhook_subscription_id for s in live] == [new.webhook_subscription_id]
    assert len(sent) > 20
    assert set(receiver.calls) == set(sent)  # every event emitted arrived
    assert all(count == 1 for count in receiver.calls.values())


async def test_the_overlap_of_a_replace_is_deduplicated(emu: Emulator, serve: Serve) -> None:
    # Between replace's create and delete both subscriptions are live: an event emitted then
    # is delivered twice, and the receiver runs its handlers once.
    receiver = Receiver(EventRouter(secret=emu.webhook_secret))
    base = await serve(receiver.router.app(path="/hooks"))
    async with PayrollClient(emu.base_url, emu.token) as client:
        await client.webhooks.create(
            event_types=[EventType.PAYROLL_PROCESSED], path=f"{base}/hooks"
        )
        await client.webhooks.create(
            event_types=[EventType.PAYROLL_PROCESSED], path=f"{base}/hooks?v=2"
        )
    assert await emu.emit(EventType.PAYROLL_PROCESSED, event_id="both") == 2
    assert receiver.calls == {"both": 1}


async def test_a_failing_handler_gets_a_redelivery(emu: Emulator, serve: Serve) -> None:
    router = EventRouter(secret=emu.webhook_secret)
    attempts: list[str] = []

    @router.on(EventType.PAYROLL_PROCESSED)
    async def flaky(event: WebhookEvent) -> None:
        attempts.append(str(event.event_id))
        if len(attempts) == 1:
            raise RuntimeError("not ready yet")

    hook = f"{await serve(router.app(path='/in'))}/in"
    async with PayrollClient(emu.base_url, emu.token) as client:
        await client.webhooks.ensure(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
        await client.webhooks.ensure(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
    assert len(emu.subscriptions()) == 1  # ensure did not create a second one
    assert await emu.emit(EventType.PAYROLL_PROCESSED, event_id="r1") == 1
    assert attempts == ["r1", "r1"]
    assert emu.deliveries[-1].attempts == 2
    assert emu.deliveries[-1].delivered


async def test_delivery_gives_up_after_its_attempts(emu: Emulator, serve: Serve) -> None:
    router = EventRouter(secret=emu.webhook_secret)

    @router.on()
    async def always_fails(event: WebhookEvent) -> None:
        raise RuntimeError("broken")

    hook = f"{await serve(router.app(path='/in'))}/in"
    async with PayrollClient(emu.base_url, emu.token) as client:
        await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
    assert await emu.emit(EventType.PAYROLL_PROCESSED, attempts=3) == 0
    assert (emu.deliveries[-1].attempts, emu.deliveries[-1].outcome) == (3, "HTTP 500")


async def test_inactive_and_remote_subscriptions_get_nothing(emu: Emulator, serve: Serve) -> None:
    receiver = Receiver(EventRouter(secret=emu.webhook_secret))
    hook = f"{await serve(receiver.router.app(path='/in'))}/in"
    async with PayrollClient(emu.base_url, emu.token) as client:
        local = await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
        await client.webhooks.create(
            event_types=[EventType.PAYROLL_PROCESSED], path="https://hooks.example.com/x"
        )
    emu.set_active(str(local.webhook_subscription_id), False)
    assert await emu.emit(EventType.PAYROLL_PROCESSED) == 0
    assert receiver.events == []
    assert emu.deliveries[-1].outcome.startswith(
        "not delivered: the emulator delivers to loopback hosts only"
    )


async def test_delivery_headers_reach_the_verify_hook(serve: Serve) -> None:
    receiver = Receiver(EventRouter(verify=header_secret("X-Webhook-Secret", "shh")))
    hook = f"{await serve(receiver.router.app(path='/in'))}/in"
    async with Emulator(
        webhook_subscriptions=0, delivery_headers={"X-Webhook-Secret": "shh"}
    ) as emu:
        async with PayrollClient(emu.base_url, emu.token) as client:
            await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
        assert await emu.emit(EventType.PAYROLL_PROCESSED) == 1
        emu.delivery_headers = {"X-Webhook-Secret": "wrong"}
        assert await emu.emit(EventType.PAYROLL_PROCESSED, attempts=1) == 0
    assert len(receiver.events) == 1
