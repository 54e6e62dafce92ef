"""RedisGate against a real redis-server, with worker processes sharing it."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from redis.asyncio import Redis

from payroll_async import (
    CoordinationError,
    InvalidArgumentError,
    PayrollClient,
    RateLimitError,
    RetryPolicy,
)
from payroll_async.fleet import RedisGate
from tests.conftest import TOKEN, FakeClock, Serve, StartEmulator
from tests.fleet.conftest import RedisServer

WORKER = Path(__file__).with_name("_worker.py")
ROOT = Path(__file__).parents[2]


async def run_workers(
    count: int,
    base: str,
    token: str,
    kind: str,
    redis_url: str,
    key: str,
    rate: str,
    seconds: float,
) -> list[int]:
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(WORKER),
            base,
            token,
            kind,
            redis_url,
            key,
            rate,
            str(seconds),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(count)
    ]
    sent = []
    for process in processes:
        out, err = await asyncio.wait_for(process.communicate(), 120)
        assert process.returncode == 0, err.decode()
        sent.append(json.loads(out.decode().strip().splitlines()[-1])["sent"])
    return sent


class PausingServer:
    """Answers the first request 429 with Retry-After, then records when requests arrive."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        self.limited_at: float | None = None
        self.arrivals: list[float] = []

    async def handle(self, request: web.Request) -> web.Response:
        now = time.monotonic()
        self.arrivals.append(now)
        if self.limited_at is None and len(self.arrivals) > 20:  # every worker is running
            self.limited_at = now
            return web.json_response(
                {"message": "Rate limit exceeded", "errors": []},
                status=429,
                headers={"Retry-After": str(self.retry_after)},
            )
        return web.json_response(
            {
                "data": [],
                "meta": {
                    "currentCount": 0,
                    "filters": {},
                    "limit": 1,
                    "offset": 0,
                    "sort": "createdAt",
                    "totalCount": 0,
                },
            }
        )

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/payroll-connections", self.handle)
        return app

    def in_pause(self, grace: float) -> int:
        """Requests that arrived during the pause, after ``grace`` seconds for those in flight."""
        assert self.limited_at is not None
        start, end = self.limited_at + grace, self.limited_at + self.retry_after
        return sum(start < t < end for t in self.arrivals)


@pytest.mark.parametrize(("kind", "shared"), [("redis", True), ("local", False)])
async def test_one_429_holds_back_every_process_for_the_retry_after(
    redis_server: RedisServer, serve: Serve, kind: str, shared: bool
) -> None:
    server = PausingServer(retry_after=1)
    base = await serve(server.app())
    key = f"test:{uuid.uuid4().hex}"
    # 2 s: the 429 comes within the first worker's first 0.1 s, so every worker still
    # runs when its 1 s pause ends
    await run_workers(4, base, TOKEN, kind, redis_server.url, key, "none", seconds=2)
    assert server.limited_at is not None
    if shared:
        # None but those already past the gate when the 429 was answered.
        assert server.in_pause(grace=0.25) == 0
    else:  # each process pauses alone: the others go on sending
        assert server.in_pause(grace=0.25) > 0


async def test_a_fleet_budget_under_the_limit_avoids_429s(
    redis_server: RedisServer, start_emulator: StartEmulator
) -> None:
    # Two services with the same limit, each with a fresh bucket: the budgeted fleet and
    # the same fleet with each process on its own (which finds the limit through 429s)
    # run side by side instead of one after the other with a wait for the bucket between.
    emu = await start_emulator(payroll_connections=10, rate_limit=20)
    other = await start_emulator(payroll_connections=10, rate_limit=20)
    key = f"test:{uuid.uuid4().hex}"
    # 1 s of each worker: the budgeted fleet's 17 requests or so may not meet one 429 (1%
    # of them), while four processes on their own each send 80 a second into a limit of 20
    await asyncio.gather(
        run_workers(4, emu.base_url, emu.token, "redis", redis_server.url, key, "16", 1),
        run_workers(4, other.base_url, other.token, "local", redis_server.url, key, "none", 1),
    )
    budgeted = dict(emu.stats)
    unbudgeted = dict(other.stats)
    assert budgeted.get("rate_limited", 0) <= 0.01 * budgeted["requests"]
    assert unbudgeted.get("rate_limited", 0) > 0.1 * unbudgeted["requests"]


async def test_keys_start_with_the_key_expire_and_hold_no_secret(
    redis_server: RedisServer,
) -> None:
    key = f"payroll:{uuid.uuid4().hex}"
    async with Redis.from_url(redis_server.url) as redis:
        gate = RedisGate(redis, key=key, rate=50)
        for _ in range(3):
            await gate.acquire()
        await gate.pause(3)
        keys = [k.decode() async for k in redis.scan_iter(match="*")]
        assert sorted(keys) == [f"{key}:pause", f"{key}:tat"]
        for k in keys:
            assert 0 < await redis.pttl(k) <= 3000 + 1000
            value = await redis.get(k)
            assert value is not None
            assert TOKEN.encode() not in value
            assert value.decode().isdigit()  # a flag or a timestamp, nothing else


async def test_redis_down_mid_export_keeps_going_with_one_warning_and_comes_back(
    redis_server: RedisServer,
    start_emulator: StartEmulator,
    caplog: pytest.LogCaptureFixture,
    clock: FakeClock,
) -> None:
    caplog.set_level(logging.INFO, logger="payroll_async")
    emu = await start_emulator(payroll_connections=600, seed=5)
    redis = Redis.from_url(redis_server.url)
    gate = RedisGate(redis, key=f"test:{uuid.uuid4().hex}", rate=2000, timeout=0.2, clock=clock)
    ids = []
    async with redis, PayrollClient(emu.base_url, emu.token, gate=gate) as client:
        async for conn in client.payroll_connections.list(page_size=10, concurrency=2):
            ids.append(conn.id)
            if len(ids) == 100:
                redis_server.stop()  # killed: every later request finds it gone
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(ids) == len(set(ids)) == 600
        assert len(warnings) == 1
        assert "cannot reach Redis" in warnings[0].getMessage()
        redis_server.start()  # back on the same port
        clock.time += 1.5  # while down, Redis is asked again once a second
        await client.payroll_connections.list(max_items=1).collect()
    back = [r for r in caplog.records if "Redis answers again" in r.getMessage()]
    assert len(back) == 1
    assert back[0].levelno == logging.INFO


async def test_on_error_raise_gives_a_typed_error_without_the_redis_url(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url.replace("redis://", "redis://:hunter2@")
    redis_server.stop()
    async with Redis.from_url(url) as redis:
        gate = RedisGate(redis, key="payroll:raise", on_error="raise", timeout=0.2)
        with pytest.raises(CoordinationError) as info:
            await gate.acquire()
    assert "hunter2" not in str(info.value)
    assert info.value.__context__ is None
    assert info.value.__cause__ is None


def test_bad_options_are_typed_errors_before_anything_runs() -> None:
    redis = Redis.from_url("redis://127.0.0.1:1/0")
    for kwargs in (
        {"key": ""},
        {"key": "has space"},
        {"key": "k", "rate": 0},
        {"key": "k", "rate": float("nan")},
        {"key": "k", "on_error": "ignore"},
        {"key": "k", "timeout": -1},
        {"key": "k", "max_wait": float("inf")},
        {"key": "k", "max_wait": -1},
    ):
        with pytest.raises(InvalidArgumentError):
            RedisGate(redis, **kwargs)  # type: ignore[arg-type]


async def test_a_redis_that_never_answers_cannot_hold_a_request(
    start_emulator: StartEmulator, caplog: pytest.LogCaptureFixture, clock: FakeClock
) -> None:
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # reads nothing, answers nothing

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    emu = await start_emulator(payroll_connections=30)
    caplog.set_level(logging.WARNING, logger="payroll_async")
    try:
        async with Redis.from_url(f"redis://127.0.0.1:{port}/0") as redis:
            gate = RedisGate(redis, key="payroll:silent", timeout=0.1, clock=clock)
            async with PayrollClient(emu.base_url, emu.token, gate=gate) as client:
                # Bounded by the gate's timeout, not by the test's: the walk completes.
                conns = await asyncio.wait_for(
                    client.payroll_connections.list(page_size=10).collect(), 60
                )
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()
    assert len(conns) == 30
    assert len(accepted) == 1  # asked once: not again within the second that follows
    warnings = [r for r in caplog.records if "cannot reach Redis" in r.getMessage()]
    assert len(warnings) == 1
    assert "TimeoutError" in warnings[0].getMessage()


class Garbled:
    """A Redis client whose scripts answer with something no script of ours returns."""

    def register_script(self, text: str) -> Any:
        async def run(keys: list[str], args: list[int]) -> object:
            return b"not a number"

        return run


async def test_an_unexpected_redis_answer_falls_back_to_the_local_gate(
    caplog: pytest.LogCaptureFixture, clock: FakeClock
) -> None:
    caplog.set_level(logging.WARNING, logger="payroll_async")
    gate = RedisGate(Garbled(), key="payroll:garbled", clock=clock)  # type: ignore[arg-type]
    await gate.acquire()  # no ValueError: the local gate decides
    assert "unexpected answer" in caplog.records[-1].getMessage()
    raising = RedisGate(Garbled(), key="k", on_error="raise", clock=clock)  # type: ignore[arg-type]
    with pytest.raises(CoordinationError, match="unexpected answer"):
        await raising.acquire()


# --- stray data at the gate's keys (issue 20 item 21) -----------------------------------------


async def _stray(redis: Redis, key: str, kind: str) -> None:
    """Plant what no gate of ours writes at ``key``'s Redis keys."""
    far = 10**12  # milliseconds: about 31 years
    if kind == "far-future pause":
        await redis.set(f"{key}:pause", "1", px=far)
    elif kind == "foreign pause":
        await redis.hset(f"{key}:pause", "owner", "someone else")
        await redis.pexpire(f"{key}:pause", far)
    elif kind == "far-future budget":
        await redis.set(f"{key}:tat", str(10**30))
    elif kind == "foreign budget":
        await redis.set(f"{key}:tat", "not a timestamp")
    elif kind == "budget of another type":
        await redis.rpush(f"{key}:tat", "x")
    else:  # a pause shorter than max_wait, but renewed for ever: asked again, still there
        await redis.set(f"{key}:pause", "1", px=50_000)


@pytest.mark.parametrize(
    "kind",
    [
        "far-future pause",
        "foreign pause",
        "far-future budget",
        "foreign budget",
        "budget of another type",
        "a pause that never ends",
    ],
)
async def test_stray_data_at_the_keys_never_holds_a_request_past_max_wait(
    kind: str,
    redis_server: RedisServer,
    caplog: pytest.LogCaptureFixture,
    clock: FakeClock,
) -> None:
    caplog.set_level(logging.INFO, logger="payroll_async")
    key = f"test:{uuid.uuid4().hex}"
    async with Redis.from_url(redis_server.url) as redis:
        await _stray(redis, key, kind)
        gate = RedisGate(redis, key=key, rate=100, max_wait=60, clock=clock)
        for _ in range(3):
            await asyncio.wait_for(gate.acquire(), 30)
    # The fake clock moves only when the gate sleeps: all its sleeps together.
    assert sum(clock.sleeps) <= 60
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # once, not once per request
    assert key in warnings[0].getMessage()


async def test_max_wait_follows_the_retry_policy_by_default(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="payroll_async")
    key = f"test:{uuid.uuid4().hex}"
    async with Redis.from_url(redis_server.url) as redis:

        class Expiring(FakeClock):
            """Time passes for Redis too: the pause is over once the gate has slept."""

            async def sleep(self, seconds: float) -> None:
                await super().sleep(seconds)
                await redis.delete(f"{key}:pause")

        clock = Expiring()
        await redis.set(f"{key}:pause", "1", px=30_000)  # a pause a 429 could have set
        gate = RedisGate(redis, key=key, clock=clock)
        assert gate.max_wait == RetryPolicy().max_retry_after == 60.0
        await gate.acquire()
    assert 29 < sum(clock.sleeps) <= 30  # honoured: within max_wait
    assert caplog.records == []


@pytest.mark.parametrize(
    ("reply", "failure"),
    [
        (b":not-a-number\r\n", "ValueError"),
        # The pure-Python parser recurses once a level: where the RecursionError surfaces
        # depends on how deep the stack already is, and if it surfaces inside asyncio's own
        # machinery the call never completes and the gate's timeout ends it. Either way
        # nothing escapes the gate, which is what is tested.
        (b"*1\r\n" * 5000 + b":1\r\n", "RecursionError|TimeoutError"),
        (b"*x\r\n", "ValueError"),
    ],
    ids=["bad integer", "nested 5000 deep", "bad array length"],
)
async def test_a_malformed_reply_under_the_pure_python_parser_falls_back(
    reply: bytes,
    failure: str,
    caplog: pytest.LogCaptureFixture,
    clock: FakeClock,
) -> None:
    from redis._parsers import _AsyncRESP2Parser

    async def malformed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):  # whatever was asked, the same malformed reply
            writer.write(reply)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(malformed, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    caplog.set_level(logging.WARNING, logger="payroll_async")
    try:
        async with Redis.from_url(
            f"redis://127.0.0.1:{port}/0", parser_class=_AsyncRESP2Parser
        ) as redis:
            gate = RedisGate(redis, key="payroll:malformed", timeout=5, clock=clock)
            await gate.acquire()  # nothing escapes: the local gate decides
            await gate.pause(1.0)
            raising = RedisGate(redis, key="k", on_error="raise", timeout=5, clock=clock)
            with pytest.raises(CoordinationError, match=failure):
                await raising.acquire()
    finally:
        server.close()
        await server.wait_closed()
    warnings = [r for r in caplog.records if "cannot reach Redis" in r.getMessage()]
    assert len(warnings) == 1
    assert re.search(failure, warnings[0].getMessage())


async def test_a_generic_call_passes_the_fleets_gate_and_pauses_it(
    redis_server: RedisServer, serve: Serve
) -> None:
    async def handle(request: web.Request) -> web.Response:
        return web.json_response(
            {"message": "slow down", "errors": []}, status=429, headers={"Retry-After": "3"}
        )

    app = web.Application()
    app.router.add_get("/v1/users", handle)
    base = await serve(app)
    key = f"test:{uuid.uuid4().hex}"
    async with Redis.from_url(redis_server.url) as redis:
        gate = RedisGate(redis, key=key, rate=50)
        async with PayrollClient(base, TOKEN, gate=gate, retry=RetryPolicy(max_attempts=1)) as c:
            with pytest.raises(RateLimitError, match="slow down"):
                await c.get("/v1/users", cast_to=dict)
        assert await redis.exists(f"{key}:tat")  # the rate budget was drawn from
        assert 2000 < await redis.pttl(f"{key}:pause") <= 4000  # every process holds back
