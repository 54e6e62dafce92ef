"""The webhook receiver: parsing, routing, delivery semantics, verification."""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp import web
from fastapi import FastAPI, Request, Response
from hypothesis import given
from hypothesis import strategies as st

from payroll_async import CoordinationError, EventType, InvalidArgumentError, from_dict
from payroll_async.events import (
    Dedupe,
    EventRouter,
    InboxLike,
    WebhookEvent,
    compare_secret,
    header_secret,
    sign,
)
from tests.conftest import FakeClock, Serve, loopback


def body(
    event_type: str = "PAYROLL_PROCESSED", event_id: str | None = "evt_1", **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "eventType": event_type,
        "occurredAt": "2026-11-22T05:00:00Z",
        "data": {"payrollId": "p1"},
        **extra,
    }
    if event_id is not None:
        out["eventId"] = event_id
    return out


Post = Callable[..., Awaitable[tuple[int, Any]]]


class Arrivals:
    """A verify hook that approves every notification and lets a test wait for the nth.

    The router runs a plain (not awaitable) hook and then looks the event up without
    suspending, so once ``reached(n)`` returns, the nth delivery already waits on whatever
    it found (the handling or the claim of an earlier copy): a synchronisation point, not a
    sleep.
    """

    def __init__(self) -> None:
        self.count = 0
        self._arrived = asyncio.Event()

    def __call__(self, request: web.Request, raw: bytes) -> bool:
        self.count += 1
        self._arrived.set()
        return True

    async def reached(self, n: int) -> None:
        while self.count < n:
            self._arrived.clear()
            await self._arrived.wait()


@pytest.fixture
async def post(serve: Serve) -> AsyncIterator[Callable[[EventRouter], Awaitable[Post]]]:
    sessions: list[aiohttp.ClientSession] = []

    async def start(router: EventRouter) -> Post:
        base = await serve(router.app(path="/hooks"))
        session = aiohttp.ClientSession()
        sessions.append(session)

        async def send(
            payload: Any = None, *, raw: bytes | None = None, headers: dict[str, str] | None = None
        ) -> tuple[int, Any]:
            data = raw if raw is not None else json.dumps(payload).encode()
            async with session.post(f"{base}/hooks", data=data, headers=headers) as response:
                return response.status, await response.json()

        return send

    yield start
    for session in sessions:
        await session.close()


def test_parsing_keeps_unknown_types_and_extra_fields() -> None:
    event = from_dict(
        WebhookEvent, body("SOMETHING_NEW", tenant="t1", data={"a": 1, "tenant": "inner"})
    )
    assert event.event_type == "SOMETHING_NEW"
    assert type(event.event_type) is str
    assert event.data == {"a": 1, "tenant": "inner"}  # data's own keys win
    known = from_dict(WebhookEvent, body())
    assert known.event_type is EventType.PAYROLL_PROCESSED
    assert known.occurred_at == datetime.datetime(2026, 11, 22, 5, tzinfo=datetime.timezone.utc)
    odd = from_dict(
        WebhookEvent,
        {"eventId": "o", "eventType": "PAYROLL_PROCESSED", "occurredAt": "yesterday", "data": [1]},
    )
    assert (odd.event_id, odd.occurred_at, odd.data) == ("o", None, {"data": [1]})


@pytest.mark.parametrize("value", [[], "x", {"data": {}}, {"eventType": ""}, {"eventType": 5}])
def test_bodies_without_an_event_type_are_refused(value: Any) -> None:
    with pytest.raises(ValueError, match=r"event|object"):
        from_dict(WebhookEvent, value)


@given(
    st.dictionaries(
        st.text(max_size=12), st.none() | st.text(max_size=12) | st.integers(), max_size=6
    )
)
def test_any_json_object_either_parses_or_is_refused_cleanly(value: dict[str, Any]) -> None:
    try:
        event = from_dict(WebhookEvent, value)
    except ValueError:
        kind, key = value.get("eventType"), value.get("eventId")
        assert not (isinstance(kind, str) and kind) or not (isinstance(key, str) and key)
    else:
        assert str(event.event_type) == value["eventType"]


async def test_routing_by_type_with_several_handlers_and_a_catch_all(post: Any) -> None:
    router = EventRouter(insecure=True)
    seen: list[tuple[str, str]] = []

    @router.on(EventType.PAYROLL_PROCESSED)
    async def first(event: WebhookEvent) -> None:
        seen.append(("first", str(event.event_type)))

    @router.on("PAYROLL_PROCESSED", EventType.EMPLOYEE_CENSUS_HIRED)
    async def second(event: WebhookEvent) -> None:
        seen.append(("second", str(event.event_type)))

    @router.on()
    async def every(event: WebhookEvent) -> None:
        seen.append(("every", str(event.event_type)))

    send = await post(router)
    assert await send(body(event_id="a")) == (200, {"status": "ok"})
    assert await send(body("EMPLOYEE_CENSUS_HIRED", event_id="b")) == (200, {"status": "ok"})
    assert await send(body("UNKNOWN_KIND", event_id="c")) == (200, {"status": "ok"})
    assert seen == [
        ("first", "PAYROLL_PROCESSED"),
        ("second", "PAYROLL_PROCESSED"),
        ("every", "PAYROLL_PROCESSED"),
        ("second", "EMPLOYEE_CENSUS_HIRED"),
        ("every", "EMPLOYEE_CENSUS_HIRED"),
        ("every", "UNKNOWN_KIND"),
    ]


async def test_bad_bodies_get_400_and_are_logged(
    post: Any, caplog: pytest.LogCaptureFixture
) -> None:
    router = EventRouter(insecure=True)
    send = await post(router)
    status, _ = await send(raw=b"not json")
    assert status == 400
    status, _ = await send({"data": {}})
    assert status == 400
    assert len([r for r in caplog.records if "rejected a notification" in r.getMessage()]) == 2


async def test_a_failing_handler_answers_500_and_a_redelivery_runs_again(post: Any) -> None:
    router = EventRouter(insecure=True)
    calls = 0

    @router.on(EventType.PAYROLL_PROCESSED)
    async def flaky(event: WebhookEvent) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("database down")

    send = await post(router)
    assert (await send(body()))[0] == 500
    assert await send(body()) == (200, {"status": "ok"})
    assert await send(body()) == (200, {"status": "duplicate"})
    assert calls == 2


async def test_duplicates_are_acknowledged_without_running_handlers(post: Any) -> None:
    arrivals = Arrivals()
    router = EventRouter(verify=arrivals)
    started = asyncio.Event()
    release = asyncio.Event()
    calls = 0

    @router.on()
    async def slow(event: WebhookEvent) -> None:
        nonlocal calls
        calls += 1
        started.set()
        await release.wait()

    send = await post(router)
    first = asyncio.create_task(send(body(event_id="dup")))
    await started.wait()
    second = asyncio.create_task(send(body(event_id="dup")))  # arrives while the first runs
    await arrivals.reached(2)  # the second waits on the first's handling
    release.set()
    assert await first == (200, {"status": "ok"})
    assert await second == (200, {"status": "duplicate"})
    assert await send(body(event_id="dup")) == (200, {"status": "duplicate"})
    assert calls == 1


async def test_the_dedupe_window_expires(post: Any, clock: FakeClock) -> None:
    router = EventRouter(insecure=True, dedupe_window=60, clock=clock)
    calls = 0

    @router.on()
    async def count(event: WebhookEvent) -> None:
        nonlocal calls
        calls += 1

    send = await post(router)
    await send(body(event_id="x"))
    clock.time += 59
    await send(body(event_id="x"))
    clock.time += 2
    await send(body(event_id="x"))
    assert calls == 2


async def test_the_remembered_ids_are_bounded_oldest_first(post: Any) -> None:
    router = EventRouter(insecure=True, dedupe_max=3)
    handled: list[str | None] = []

    @router.on()
    async def record(event: WebhookEvent) -> None:
        handled.append(event.event_id)

    send = await post(router)
    for key in "abcde":
        await send(body(event_id=key))
    for key in "edcba":  # c, d, e are remembered; a and b were forgotten, oldest first
        await send(body(event_id=key))
    assert handled == [*"abcde", "b", "a"]


async def test_verification(post: Any) -> None:
    router = EventRouter(verify=header_secret("X-Webhook-Secret", "s3cret"))
    handled = []

    @router.on()
    async def record(event: WebhookEvent) -> None:
        handled.append(event.event_id)

    send = await post(router)
    assert (await send(body(event_id="1")))[0] == 401
    assert (await send(body(event_id="2"), headers={"X-Webhook-Secret": "wrong"}))[0] == 401
    assert (await send(body(event_id="3"), headers={"X-Webhook-Secret": "s3cret"}))[0] == 200
    assert handled == ["3"]


async def test_async_and_raising_verify_hooks(post: Any) -> None:
    async def async_verify(request: web.Request, raw: bytes) -> bool:
        return b"ok" in raw

    def broken(request: web.Request, raw: bytes) -> bool:
        raise RuntimeError("boom")

    send = await post(EventRouter(verify=async_verify))
    assert (await send(body(event_id="ok")))[0] == 200
    assert (await send(body(event_id="no")))[0] == 401
    send = await post(EventRouter(verify=broken))
    assert (await send(body()))[0] == 401


def test_compare_secret() -> None:
    assert compare_secret("abc", "abc")
    assert compare_secret(b"abc", "abc")
    assert not compare_secret("abd", "abc")
    assert not compare_secret(None, "abc")
    assert not compare_secret("", "abc")


def test_handlers_must_be_async() -> None:
    router = EventRouter(insecure=True)
    with pytest.raises(InvalidArgumentError, match="async"):
        router.on()(lambda event: None)  # type: ignore[arg-type]


async def test_router_handle_mounts_in_an_app_of_your_own(serve: Serve) -> None:
    router = EventRouter(insecure=True)
    got: list[WebhookEvent] = []

    @router.on()
    async def record(event: WebhookEvent) -> None:
        got.append(event)

    app = web.Application()
    app.router.add_post("/payroll/events", router.handle)
    base = await serve(app)
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{base}/payroll/events", json=body()) as response:
            assert response.status == 200
    assert got[0].data == {"payrollId": "p1"}
    logging.getLogger("payroll_async.events").debug("ok")


async def test_a_copy_waiting_on_a_cancelled_handling_does_not_hang() -> None:
    # A sender that hangs up cancels its handling (aiohttp's handler_cancellation); a copy
    # of the same event waiting on that handling gets 503, and a redelivery runs again.
    arrivals = Arrivals()
    router = EventRouter(verify=arrivals)
    started = asyncio.Event()
    runs = 0

    @router.on()
    async def slow(event: WebhookEvent) -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            started.set()
            await asyncio.sleep(30)

    async with loopback(router.app(path="/hooks"), handler_cancellation=True) as base:
        url = f"{base}/hooks"
        payload = json.dumps(body(event_id="c")).encode()
        async with aiohttp.ClientSession() as first, aiohttp.ClientSession() as others:

            async def deliver(session: aiohttp.ClientSession) -> tuple[int, str | None]:
                async with session.post(url, data=payload) as response:
                    return response.status, response.headers.get("Retry-After")

            hung_up = asyncio.create_task(deliver(first))
            await started.wait()
            copy = asyncio.create_task(deliver(others))
            await arrivals.reached(2)  # the copy is waiting on the first handling
            hung_up.cancel()  # the first sender hangs up mid-handling
            await first.close()
            assert await asyncio.wait_for(copy, 10) == (503, "5")
            assert await deliver(others) == (200, None)  # not remembered as handled: runs again
    assert runs == 2


class RecordingStore:
    """A Dedupe of the test's own: answers what the test says and records every call."""

    def __init__(self, lease: float = 60.0) -> None:
        self.lease = lease
        self.answer: str | BaseException = "claimed"
        self.calls: list[tuple[str, str]] = []
        self.renewed = asyncio.Event()
        self.released = asyncio.Event()
        self.complete_fails = False

    async def claim(self, event_id: str) -> Any:
        self.calls.append(("claim", event_id))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    async def renew(self, event_id: str) -> None:
        self.calls.append(("renew", event_id))
        self.renewed.set()

    async def complete(self, event_id: str) -> None:
        self.calls.append(("complete", event_id))
        if self.complete_fails:
            raise CoordinationError("down")

    async def release(self, event_id: str) -> None:
        self.calls.append(("release", event_id))
        self.released.set()


def test_a_store_of_your_own_is_a_dedupe() -> None:
    assert isinstance(RecordingStore(), Dedupe)
    with pytest.raises(InvalidArgumentError, match="claim, renew"):
        EventRouter(insecure=True, dedupe=object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="in-process memory"):
        EventRouter(insecure=True, dedupe=RecordingStore(), dedupe_window=60)
    assert EventRouter(insecure=True, dedupe=RecordingStore()).dedupe_memory == 0


async def test_the_store_decides_and_learns_the_outcome(post: Any) -> None:
    store = RecordingStore()
    router = EventRouter(insecure=True, dedupe=store)
    runs: list[str | None] = []

    @router.on()
    async def handler(event: WebhookEvent) -> None:
        runs.append(event.event_id)
        if event.event_id == "bad":
            raise RuntimeError("boom")

    send = await post(router)
    assert await send(body(event_id="a")) == (200, {"status": "ok"})
    assert (await send(body(event_id="bad")))[0] == 500
    store.answer = "done"
    assert await send(body(event_id="a")) == (200, {"status": "duplicate"})
    assert (await send(body(event_id=None)))[0] == 400  # no id: refused before the store
    assert runs == ["a", "bad"]
    assert store.calls == [
        ("claim", "a"),
        ("complete", "a"),
        ("claim", "bad"),
        ("release", "bad"),
        ("claim", "a"),
    ]


async def serve_counting(serve: Serve, store: RecordingStore) -> tuple[str, list[str | None]]:
    """A receiver on ``store``, served on loopback: its URL, and the ids its handler ran."""
    router = EventRouter(insecure=True, dedupe=store)
    runs: list[str | None] = []

    @router.on()
    async def handler(event: WebhookEvent) -> None:
        runs.append(event.event_id)

    return await serve(router.app(path="/hooks")) + "/hooks", runs


async def deliver(
    session: aiohttp.ClientSession, url: str, event_id: str = "evt_1"
) -> tuple[int, str | None]:
    """The status and Retry-After of one delivery."""
    async with session.post(url, json=body(event_id=event_id)) as response:
        return response.status, response.headers.get("Retry-After")


async def test_busy_and_unreachable_stores_answer_with_retry_after(serve: Serve) -> None:
    store = RecordingStore()
    url, runs = await serve_counting(serve, store)
    async with aiohttp.ClientSession() as session:
        store.answer = "busy"
        assert await deliver(session, url) == (409, "5")
        store.answer = CoordinationError("no Redis")
        assert await deliver(session, url) == (503, "5")
        store.answer = RuntimeError("a defect of the store")
        assert await deliver(session, url) == (503, "5")
    assert runs == []


async def test_a_completion_is_recorded_while_the_claim_lasts_or_answered_503(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    store = RecordingStore(lease=0.3)
    url, runs = await serve_counting(serve, store)
    failures = 2
    complete = store.complete

    async def complete_after_failures(event_id: str) -> None:
        nonlocal failures
        store.complete_fails, failures = failures > 0, failures - 1
        await complete(event_id)

    store.complete = complete_after_failures  # type: ignore[method-assign]
    async with aiohttp.ClientSession() as session:
        # recorded on the third try, the claim held meanwhile: acknowledged
        assert await deliver(session, url, "stalled") == (200, None)
        assert [c for c in store.calls if c[0] == "complete"] == [("complete", "stalled")] * 3
        assert ("release", "stalled") not in store.calls
        # never recorded while the claim lasted: 503, the claim given back, one ERROR line
        failures = 1_000_000
        caplog.set_level(logging.ERROR, logger="payroll_async.events")
        assert await deliver(session, url, "lost") == (503, "5")
        await asyncio.wait_for(store.released.wait(), 10)
    assert ("release", "lost") in store.calls
    assert runs == ["stalled", "lost"]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert "could not record it while its claim lasted" in errors[0]


async def test_the_claim_is_renewed_while_handlers_run(post: Any) -> None:
    store = RecordingStore(lease=0.03)
    router = EventRouter(insecure=True, dedupe=store)

    @router.on()
    async def slow(event: WebhookEvent) -> None:
        await store.renewed.wait()

    send = await post(router)
    assert await send(body()) == (200, {"status": "ok"})
    assert store.calls[:2] == [("claim", "evt_1"), ("renew", "evt_1")]
    assert store.calls[-1] == ("complete", "evt_1")


async def test_copies_in_one_process_share_the_first_ones_busy_answer(post: Any) -> None:
    store = RecordingStore()
    gate = asyncio.Event()
    claimed = asyncio.Event()

    async def slow_claim(event_id: str) -> Any:
        store.calls.append(("claim", event_id))
        claimed.set()
        await gate.wait()
        return "busy"

    store.claim = slow_claim  # type: ignore[method-assign]
    arrivals = Arrivals()
    router = EventRouter(verify=arrivals, dedupe=store)
    send = await post(router)
    first = asyncio.create_task(send(body()))
    await claimed.wait()
    copy = asyncio.create_task(send(body()))
    await arrivals.reached(2)  # the copy is waiting on the first one's claim
    gate.set()
    assert (await first)[0] == 409
    assert (await copy)[0] == 409
    assert store.calls == [("claim", "evt_1")]  # one claim for both copies


async def test_a_sender_hanging_up_releases_the_claim() -> None:
    store = RecordingStore()
    router = EventRouter(insecure=True, dedupe=store)
    started = asyncio.Event()

    @router.on()
    async def slow(event: WebhookEvent) -> None:
        started.set()
        await asyncio.Event().wait()

    async with loopback(router.app(path="/hooks"), handler_cancellation=True) as base:
        session = aiohttp.ClientSession()
        delivery = asyncio.create_task(session.post(f"{base}/hooks", json=body()))
        await started.wait()
        delivery.cancel()
        await session.close()
        await asyncio.wait_for(store.released.wait(), 10)
    assert store.calls == [("claim", "evt_1"), ("release", "evt_1")]


async def test_a_sender_hanging_up_after_the_handlers_succeeded_still_completes() -> None:
    store = RecordingStore()
    completing = asyncio.Event()
    finish = asyncio.Event()
    completed = asyncio.Event()

    async def slow_complete(event_id: str) -> None:
        completing.set()
        await finish.wait()
        store.calls.append(("complete", event_id))
        completed.set()

    store.complete = slow_complete  # type: ignore[method-assign]
    router = EventRouter(insecure=True, dedupe=store)
    runs = 0

    @router.on()
    async def handler(event: WebhookEvent) -> None:
        nonlocal runs
        runs += 1

    async with loopback(router.app(path="/hooks"), handler_cancellation=True) as base:
        session = aiohttp.ClientSession()
        delivery = asyncio.create_task(session.post(f"{base}/hooks", json=body()))
        await completing.wait()  # the handlers succeeded; the store is remembering it
        delivery.cancel()
        await session.close()
        finish.set()
        await asyncio.wait_for(completed.wait(), 10)
    assert runs == 1
    assert store.calls == [("claim", "evt_1"), ("complete", "evt_1")]  # never released


# The framework-neutral core: router.receive(body, headers) -> Reply, and the inbox seam

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def signed(event_id: str = "evt_1", **extra: Any) -> tuple[bytes, dict[str, str]]:
    raw = json.dumps(body(event_id=event_id, **extra)).encode()
    return raw, sign(SECRET, event_id, int(time.time()), raw)


async def test_receive_is_the_whole_answer_in_any_framework() -> None:
    router = EventRouter(secret=SECRET)
    runs: list[str | None] = []

    @router.on()
    async def record(event: WebhookEvent) -> None:
        runs.append(event.event_id)

    raw, headers = signed()
    reply = await router.receive(raw, {k.upper(): v for k, v in headers.items()})
    assert (reply.status, json.loads(reply.body)) == (200, {"status": "ok"})
    assert reply.headers["Content-Type"] == "application/json"
    again = await router.receive(raw, headers)
    assert json.loads(again.body) == {"status": "duplicate"}
    assert (await router.receive(raw, {})).status == 401
    many = {f"x-{n}": "1" for n in range(101)} | headers
    assert (await router.receive(raw, many)).status == 431
    huge = b" " * (2**20 + 1)
    assert (await router.receive(huge, headers)).status == 413
    deep, deep_headers = signed("deep", data={"x": json.loads("[" * 70 + "]" * 70)})
    assert (await router.receive(deep, deep_headers)).status == 400
    with pytest.raises(InvalidArgumentError, match="raw bytes"):
        await router.receive(raw.decode(), headers)  # type: ignore[arg-type]
    assert runs == ["evt_1"]


async def test_a_verify_hook_under_receive_gets_the_headers_and_the_address() -> None:
    seen: list[tuple[str | None, str | None]] = []

    def check(request: Any, raw: bytes) -> bool:
        seen.append((request.headers.get("x-hook-secret"), request.remote))
        return compare_secret(request.headers.get("X-Hook-Secret"), "s3cret")

    router = EventRouter(verify=check)
    raw = json.dumps(body()).encode()
    reply = await router.receive(raw, {"X-HOOK-SECRET": "s3cret"}, remote="192.0.2.7")
    assert reply.status == 200
    assert (await router.receive(raw, {"x-hook-secret": "no"})).status == 401
    assert seen == [("s3cret", "192.0.2.7"), ("no", None)]


async def test_dispatch_runs_the_handlers_of_a_verified_event_and_raises_what_they_raise() -> None:
    router = EventRouter(insecure=True)
    calls: list[str] = []

    @router.on(EventType.PAYROLL_PROCESSED)
    async def first(event: WebhookEvent) -> None:
        calls.append("first")

    @router.on()
    async def failing(event: WebhookEvent) -> None:
        calls.append("failing")
        raise LookupError("a dependency is down")

    event = from_dict(WebhookEvent, body())
    with pytest.raises(LookupError, match="dependency"):
        await router.dispatch(event)
    with pytest.raises(LookupError):
        await router.dispatch(event)  # no deduplication: the caller decides
    assert calls == ["first", "failing"] * 2


class Inbox:
    """An InboxLike of the test's own: stores bodies by event id, or fails when told."""

    def __init__(self) -> None:
        self.stored: dict[str, bytes] = {}
        self.failure: BaseException | None = None

    async def accept(self, event: WebhookEvent, body: bytes) -> bool:
        if self.failure is not None:
            raise self.failure
        assert event.event_id is not None
        if event.event_id in self.stored:
            return False
        self.stored[event.event_id] = body
        return True


async def test_with_an_inbox_a_notification_is_stored_and_no_handler_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="payroll_async.events")
    inbox = Inbox()
    assert isinstance(inbox, InboxLike)
    router = EventRouter(secret=SECRET, inbox=inbox)
    runs: list[str | None] = []

    @router.on()
    async def record(event: WebhookEvent) -> None:
        runs.append(event.event_id)

    raw, headers = signed("kept")
    reply = await router.receive(raw, headers)
    assert (reply.status, json.loads(reply.body)) == (200, {"status": "stored"})
    assert inbox.stored == {"kept": raw}  # the bytes as sent
    reply = await router.receive(raw, headers)
    assert (reply.status, json.loads(reply.body)) == (200, {"status": "duplicate"})
    assert (await router.receive(raw, {})).status == 401  # verified before it is stored
    assert runs == []  # the inbox's workers run them, through router.dispatch
    # the inbox down: 503 with Retry-After, one line per outage that names no secret
    inbox.failure = ConnectionRefusedError("postgresql://app:hunter2@db/inbox refused")
    for n in range(3):
        raw, headers = signed(f"down-{n}")
        reply = await router.receive(raw, headers)
        assert (reply.status, reply.headers.get("Retry-After")) == (503, "5")
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert "hunter2" not in caplog.text
    assert "ConnectionRefusedError" in errors[0].getMessage()
    inbox.failure = None
    raw, headers = signed("down-0")
    assert json.loads((await router.receive(raw, headers)).body) == {"status": "stored"}
    assert "stores notifications again" in caplog.text
    await router.dispatch(from_dict(WebhookEvent, json.loads(inbox.stored["kept"])))
    assert runs == ["kept"]


async def test_an_inbox_that_hangs_is_bounded_by_the_handler_timeout() -> None:
    class Hanging:
        async def accept(self, event: WebhookEvent, body: bytes) -> bool:
            await asyncio.Event().wait()
            return True

    router = EventRouter(secret=SECRET, inbox=Hanging(), handler_timeout=0.05)
    raw, headers = signed()
    assert (await router.receive(raw, headers)).status == 503


async def test_every_503_says_when_to_deliver_again() -> None:
    # a handler, an inbox or a verify hook past the handler timeout: each 503 carries
    # Retry-After, as the answers for an unreachable store or a busy claim do
    async def hang() -> bool:
        await asyncio.Event().wait()
        return True

    class Hanging:
        async def accept(self, event: WebhookEvent, body: bytes) -> bool:
            return await hang()

    async def verify(request: Any, body: bytes) -> bool:
        return await hang()

    timed_out = EventRouter(secret=SECRET, handler_timeout=0.05)

    @timed_out.on()
    async def handler(event: WebhookEvent) -> None:
        await hang()

    stores = EventRouter(secret=SECRET, inbox=Hanging(), handler_timeout=0.05)
    verifies = EventRouter(verify=verify, handler_timeout=0.05)
    raw, headers = signed()
    for router in (timed_out, stores, verifies):
        reply = await router.receive(raw, headers)
        assert (reply.status, reply.headers.get("Retry-After")) == (503, "5")


def test_an_inbox_is_checked_when_the_router_is_built() -> None:
    with pytest.raises(InvalidArgumentError, match="accept"):
        EventRouter(secret=SECRET, inbox=object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="leave out dedupe="):
        EventRouter(secret=SECRET, inbox=Inbox(), dedupe=RecordingStore())


# FastAPI, as docs/webhooks.md shows it: the router mounted, or receive() in a route


async def test_a_fastapi_receiver() -> None:
    router = EventRouter(secret=SECRET)
    runs: list[str | None] = []

    @router.on()
    async def record(event: WebhookEvent) -> None:
        runs.append(event.event_id)

    app = FastAPI()
    app.mount("/payroll", router.asgi(path="/hooks"))

    @app.post("/own")
    async def own(request: Request) -> Response:
        client = request.client.host if request.client else None
        reply = await router.receive(await request.body(), request.headers, remote=client)
        return Response(reply.body, status_code=reply.status, headers=reply.headers)

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as http:
        for path, event_id in [("/payroll/hooks", "m1"), ("/own", "o1")]:
            raw, headers = signed(event_id)
            response = await http.post(path, content=raw, headers=headers)
            assert (response.status_code, response.json()) == (200, {"status": "ok"})
            forged = {**headers, "webhook-signature": "v1,AAAA"}
            assert (await http.post(path, content=raw, headers=forged)).status_code == 401
            again = await http.post(path, content=raw, headers=headers)
            assert again.json() == {"status": "duplicate"}
        assert (await http.get("/payroll/hooks")).status_code == 405
        assert (await http.post("/payroll/elsewhere", content=b"{}")).status_code == 404
    assert runs == ["m1", "o1"]
