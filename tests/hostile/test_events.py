"""A webhook receiver against senders that send huge ids, hang handlers or bad bodies."""

from __future__ import annotations

import asyncio
import io
import json

import aiohttp
import pytest

from payroll_async import InvalidArgumentError
from payroll_async.events import EventRouter, WebhookEvent
from tests.conftest import Serve


def _body(event_id: object, event_type: str = "PAYROLL_PROCESSED", **extra: object) -> bytes:
    return json.dumps(
        {"eventId": event_id, "eventType": event_type, "occurredAt": None, "data": {}, **extra}
    ).encode()


async def _post(url: str, body: bytes, **headers: str) -> tuple[int, str]:
    data = io.BytesIO(body) if len(body) > 2**20 else body
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=data, headers={"Content-Type": "application/json", **headers}) as r,
    ):
        return r.status, await r.text()


@pytest.mark.parametrize("event_id", ["", "x" * 257, 7, 7.5, True, ["a"], {"a": 1}], ids=repr)
async def test_event_ids_that_are_not_short_strings_get_400(serve: Serve, event_id: object) -> None:
    handled: list[WebhookEvent] = []
    router = EventRouter(insecure=True)

    @router.on()
    async def handler(event: WebhookEvent) -> None:
        handled.append(event)

    base = await serve(router.app("/hooks"))
    status, _ = await _post(base + "/hooks", _body(event_id))
    assert status == 400
    assert handled == []


async def test_7_and_the_string_7_do_not_collide(serve: Serve) -> None:
    handled: list[str | None] = []
    router = EventRouter(insecure=True)

    @router.on()
    async def handler(event: WebhookEvent) -> None:
        handled.append(event.event_id)

    base = await serve(router.app("/hooks"))
    assert (await _post(base + "/hooks", _body(7)))[0] == 400
    assert (await _post(base + "/hooks", _body("7")))[0] == 200
    assert (await _post(base + "/hooks", _body("7", "EMPLOYEE_CENSUS_HIRED")))[0] == 200
    assert handled == ["7"]  # the second "7" is a duplicate, whatever its type


async def test_dedupe_memory_is_bounded_in_bytes(serve: Serve) -> None:
    router = EventRouter(insecure=True, dedupe_max_bytes=200_000)

    @router.on()
    async def handler(event: WebhookEvent) -> None:
        return None

    base = await serve(router.app("/hooks"))
    async with aiohttp.ClientSession() as session:
        for i in range(2000):
            async with session.post(base + "/hooks", data=_body(f"{i:0256d}")) as response:
                assert response.status == 200
    assert router.dedupe_memory <= 200_000
    # the newest ids are still remembered
    assert (await _post(base + "/hooks", _body(f"{1999:0256d}")))[1].find("duplicate") >= 0


async def test_a_hung_handler_is_timed_out_and_its_copies_are_released(serve: Serve) -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []
    calls = 0
    router = EventRouter(insecure=True, handler_timeout=0.2)

    @router.on()
    async def hang(event: WebhookEvent) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

    base = await serve(router.app("/hooks"))
    first = asyncio.create_task(_post(base + "/hooks", _body("evt-1")))
    await started.wait()
    copy = asyncio.create_task(_post(base + "/hooks", _body("evt-1")))
    assert (await first)[0] == 503
    assert (await copy)[0] == 503
    assert cancelled == [True]
    # the in-flight entry is released: the sender's redelivery is handled afresh
    assert (await _post(base + "/hooks", _body("evt-1")))[0] == 200
    assert calls == 2


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b"not json",
        b"[1, 2]",
        b'"just a string"',
        json.dumps({"eventType": 5, "eventId": "a"}).encode(),
        json.dumps({"eventType": "PAYROLL_PROCESSED", "eventId": "a", "data": "x" * 10}).encode(),
    ],
    ids=["deep", "not json", "array", "string", "non-string type", "odd data"],
)
async def test_bad_bodies_never_reach_a_500(serve: Serve, body: bytes) -> None:
    router = EventRouter(insecure=True)

    @router.on()
    async def handler(event: WebhookEvent) -> None:
        return None

    base = await serve(router.app("/hooks"))
    status, text = await _post(base + "/hooks", body)
    assert status in (200, 400)
    assert "Traceback" not in text


async def test_an_oversized_body_is_refused_with_413(serve: Serve) -> None:
    router = EventRouter(insecure=True)
    base = await serve(router.app("/hooks"))
    status, _ = await _post(base + "/hooks", b'{"x":"' + b"a" * (2 * 2**20) + b'"}')
    assert status == 413


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dedupe_window": -1},
        {"dedupe_window": float("nan")},
        {"dedupe_max": 0},
        {"dedupe_max_bytes": 0},
        {"handler_timeout": 0},
        {"handler_timeout": float("inf")},
    ],
)
def test_router_options_are_checked_with_typed_errors(kwargs: dict[str, float]) -> None:
    with pytest.raises(InvalidArgumentError):
        EventRouter(insecure=True, **kwargs)  # type: ignore[arg-type]
