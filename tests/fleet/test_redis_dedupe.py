"""RedisDedupe against a real redis-server: claims, leases, expiry, outages."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from payroll_async import CoordinationError, InvalidArgumentError
from payroll_async.events import Dedupe, EventRouter, WebhookEvent
from payroll_async.fleet import RedisDedupe
from tests.conftest import FakeClock, Serve
from tests.fleet.conftest import RedisServer


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[Redis]:
    async with Redis.from_url(redis_server.url) as client:
        yield client


EVT = "evt\x1b[2J"  # an id with a terminal control sequence in it


def fresh_key() -> str:
    return f"hooks:{uuid.uuid4().hex}"


async def test_one_claim_per_event_across_processes(redis: Redis) -> None:
    key = fresh_key()
    first, second = RedisDedupe(redis, key=key), RedisDedupe(redis, key=key)
    assert isinstance(first, Dedupe)
    assert await first.claim("evt") == "claimed"
    assert await second.claim("evt") == "busy"
    await second.release("evt")  # not its claim: nothing happens
    await second.complete("other")  # (another event)
    assert await second.claim("evt") == "busy"
    await first.complete("evt")
    assert await second.claim("evt") == "done"
    assert await first.claim("evt") == "done"
    assert await RedisDedupe(redis, key=fresh_key()).claim("evt") == "claimed"  # keys apart


async def test_a_released_claim_is_claimed_again(redis: Redis) -> None:
    key = fresh_key()
    first, second = RedisDedupe(redis, key=key), RedisDedupe(redis, key=key)
    assert await first.claim("evt") == "claimed"
    await first.release("evt")
    assert await second.claim("evt") == "claimed"
    await first.release("evt")  # late, and no longer its claim: the second keeps it
    assert await first.claim("evt") == "busy"


async def test_a_lease_expires_unless_renewed(
    redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    key = fresh_key()
    holder = RedisDedupe(redis, key=key, lease=60)
    other = RedisDedupe(redis, key=key, lease=60)
    assert await holder.claim(EVT) == "claimed"
    await redis.pexpire(f"{key}:{EVT}", 50_000)  # as if time passed
    await holder.renew(EVT)
    assert 50_000 < await redis.pttl(f"{key}:{EVT}") <= 60_000
    await redis.delete(f"{key}:{EVT}")  # as if the lease ran out
    assert await other.claim(EVT) == "claimed"  # another process takes over
    caplog.set_level(logging.WARNING, logger="payroll_async")
    await holder.renew(EVT)  # the stalled holder must not extend the new claim
    message = caplog.records[-1].getMessage()
    assert "expired before its handlers finished" in message
    assert "evt\\x1b[2J" in message  # what the sender wrote, never a control code
    assert "\x1b" not in message
    await holder.release(EVT)
    assert await holder.claim(EVT) == "busy"


async def test_keys_hold_only_ids_and_states_and_expire(redis: Redis) -> None:
    key = fresh_key()
    dedupe = RedisDedupe(redis, key=key, window=100, lease=7)
    await dedupe.claim("handled")
    await dedupe.complete("handled")
    await dedupe.claim("running")
    keys = sorted([k.decode() async for k in redis.scan_iter(match=f"{key}:*")])
    assert keys == [f"{key}:handled", f"{key}:running"]
    assert await redis.get(f"{key}:handled") == b"done"
    assert 99_000 < await redis.pttl(f"{key}:handled") <= 100_000
    token = await redis.get(f"{key}:running")
    assert token is not None
    assert len(token) == 16
    assert int(token, 16) >= 0
    assert 6_000 < await redis.pttl(f"{key}:running") <= 7_000


async def test_redis_down_answers_503_logs_once_and_comes_back(
    redis_server: RedisServer,
    serve: Serve,
    caplog: pytest.LogCaptureFixture,
    clock: FakeClock,
) -> None:
    caplog.set_level(logging.INFO, logger="payroll_async")
    redis_server.stop()
    handled: list[str | None] = []
    async with Redis.from_url(redis_server.url) as redis:
        router = EventRouter(
            insecure=True, dedupe=RedisDedupe(redis, key=fresh_key(), timeout=0.5, clock=clock)
        )

        @router.on()
        async def record(event: WebhookEvent) -> None:
            handled.append(event.event_id)

        base = await serve(router.app(path="/hooks"))
        async with aiohttp.ClientSession() as session:

            async def deliver(event_id: str) -> tuple[int, str | None]:
                payload = {"eventId": event_id, "eventType": "PAYROLL_PROCESSED", "data": {}}
                async with session.post(f"{base}/hooks", data=json.dumps(payload)) as response:
                    return response.status, response.headers.get("Retry-After")

            for event_id in ("a", "b", "a"):
                assert await deliver(event_id) == (503, "5")
            warnings = [r for r in caplog.records if "cannot reach Redis" in r.getMessage()]
            assert [r.levelno for r in warnings] == [logging.WARNING]
            redis_server.start()
            assert await deliver("a") == (503, "5")  # asked again a second after the failure
            clock.time += 1.5
            assert await deliver("a") == (200, None)
            assert await deliver("b") == (200, None)
            assert await deliver("a") == (200, None)
    assert handled == ["a", "b"]
    back = [r for r in caplog.records if "Redis answers again" in r.getMessage()]
    assert [r.levelno for r in back] == [logging.INFO]


async def test_the_error_never_carries_redis_text(redis_server: RedisServer) -> None:
    url = redis_server.url.replace("redis://", "redis://:hunter2@")
    redis_server.stop()
    async with Redis.from_url(url) as redis:
        dedupe = RedisDedupe(redis, key="hooks:raise", timeout=0.2)
        with pytest.raises(CoordinationError) as info:
            await dedupe.claim("evt")
    assert "hunter2" not in str(info.value)
    assert info.value.__context__ is None
    assert info.value.__cause__ is None


async def test_a_redis_that_never_answers_costs_one_timeout_a_second(clock: FakeClock) -> None:
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with Redis.from_url(f"redis://127.0.0.1:{port}/0") as redis:
            dedupe = RedisDedupe(redis, key="hooks:silent", timeout=0.1, clock=clock)
            for _ in range(5):
                with pytest.raises(CoordinationError):
                    await asyncio.wait_for(dedupe.claim("evt"), 10)
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()
    assert len(accepted) == 1  # one call timed out; the next four were not sent


class Garbled:
    def register_script(self, text: str) -> Any:
        async def run(keys: list[str], args: list[object]) -> object:
            return b"claimed?"

        return run


async def test_an_unexpected_answer_is_a_coordination_error(clock: FakeClock) -> None:
    dedupe = RedisDedupe(Garbled(), key="hooks:garbled", clock=clock)  # type: ignore[arg-type]
    with pytest.raises(CoordinationError, match="unexpected answer"):
        await dedupe.claim("evt")


def test_bad_options_are_typed_errors() -> None:
    redis = Redis.from_url("redis://127.0.0.1:1/0")
    for kwargs in (
        {"key": ""},
        {"key": "has space"},
        {"key": "k", "window": 0},
        {"key": "k", "lease": float("inf")},
        {"key": "k", "timeout": -1},
        {"key": "k", "window": True},
    ):
        with pytest.raises(InvalidArgumentError):
            RedisDedupe(redis, **kwargs)  # type: ignore[arg-type]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    batches=st.lists(
        st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=6),
        min_size=1,
        max_size=5,
    ),
    failures=st.lists(st.integers(0, 2), min_size=4, max_size=4),
)
async def test_any_mix_of_copies_failures_and_receivers_handles_each_event_once(
    redis: Redis,
    serve: Serve,
    batches: list[list[tuple[int, int]]],
    failures: list[int],
) -> None:
    # Three receivers ("processes": each its own router and RedisDedupe) on one Redis; the
    # copies of a batch arrive at once; event n's handler fails its first failures[n]
    # runs. Then every event is delivered until acknowledged, as a sender does.
    key = fresh_key()
    successes: Counter[int] = Counter()
    left = dict(enumerate(failures))
    routers = [
        EventRouter(insecure=True, dedupe=RedisDedupe(redis, key=key, lease=30)) for _ in range(3)
    ]
    for router in routers:

        @router.on()
        async def handle(event: WebhookEvent) -> None:
            n = int(event.data["n"])
            await asyncio.sleep(0)  # let other copies arrive while this one is in hand
            if left[n] > 0:
                left[n] -= 1
                raise RuntimeError("a handler failure")
            successes[n] += 1

    bases = [await serve(router.app(path="/hooks")) for router in routers]
    async with aiohttp.ClientSession() as session:

        async def deliver(n: int, receiver: int) -> int:
            payload = {"eventId": f"e{n}", "eventType": "PAYROLL_PROCESSED", "data": {"n": n}}
            url = f"{bases[receiver]}/hooks"
            async with session.post(url, data=json.dumps(payload)) as response:
                return response.status

        for batch in batches:
            answers = await asyncio.gather(*(deliver(n, r) for n, r in batch))
            assert set(answers) <= {200, 409, 500}
        for n in range(4):
            for attempt in range(20):
                if await deliver(n, attempt % 3) == 200:
                    break
            else:
                raise AssertionError(f"event {n} never acknowledged")
    assert successes == Counter(range(4))  # each exactly once, whatever happened before
