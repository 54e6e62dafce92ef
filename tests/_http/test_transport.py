"""The transport: the client-wide 429 pause, timeouts, aiohttp's own resend, TLS failures."""

import asyncio
import json
import logging

import aiohttp
import pytest
from aiohttp import web
from aioresponses import aioresponses

from payroll_async import (
    APIConnectionError,
    APITimeoutError,
    PayrollClient,
    RetryPolicy,
)
from tests import factories
from tests.conftest import LIST, SID, SUBS, TOKEN, FakeClock, HeldClock, Serve

# --- one 429 pauses the whole client ---------------------------------------------------------


async def test_a_429_holds_back_a_concurrent_pagination(serve: Serve) -> None:
    # The time is the held clock's: it moves only when the test advances it, so a request
    # the pause should hold back but does not arrives stamped with the time of the 429.
    clock = HeldClock()
    sent: list[tuple[float, int]] = []
    limited_at: list[float] = []

    async def handle(request: web.Request) -> web.Response:
        offset, limit = int(request.query["offset"]), int(request.query["limit"])
        sent.append((clock.now(), offset))
        clock.poke()
        if offset == 300 and not limited_at:
            limited_at.append(clock.now())
            return web.json_response(
                factories.error_body("slow down"), status=429, headers={"Retry-After": "0.5"}
            )
        if offset == 100:
            # Held until the 429 is in force (its retry wait is the clock's first sleep):
            # the pages the window asks for as pages 100 and 200 are consumed (500 and
            # 600) are asked for during the pause.
            await clock.until(lambda: bool(clock.sleeps))
        items = [factories.connection(i) for i in range(offset, min(offset + limit, 3000))]
        return web.json_response(factories.envelope(items, offset=offset, limit=limit, total=3000))

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, concurrency=4, clock=clock) as client:
        walk = asyncio.create_task(client.payroll_connections.list().collect())
        walk.add_done_callback(lambda _: clock.poke())

        def asked_during_pause() -> list[int]:
            return [o for t, o in sent if o in (500, 600) and t < limited_at[0] + 0.5]

        async with asyncio.timeout(30):  # a bound against a hang, not a threshold
            # Until 500 and 600 are each either sent or waiting, besides the 429's retry.
            await clock.until(
                lambda: walk.done() or clock.sleeping + len(asked_during_pause()) >= 3
            )
            assert not walk.done()
            assert asked_during_pause() == [], "sent during the pause"
            while not walk.done():
                clock.advance()
                await clock.until(lambda: walk.done() or clock.sleeping > 0)
        items = await walk
    assert [str(c.id) for c in items] == [factories.uid(i, 1) for i in range(3000)]
    t0 = limited_at[0]
    later = [t for t, o in sent if o >= 500]
    assert later, "the walk went on after the pause"
    assert min(later) >= t0 + 0.5
    assert clock.time == t0 + 0.5  # the one pause was the only wait
    assert len([o for _, o in sent if o == 300]) == 2


async def test_the_pause_is_shared_by_unrelated_calls(
    mock_api: aioresponses, client: PayrollClient, clock: FakeClock
) -> None:
    mock_api.get(LIST, status=429, headers={"Retry-After": "7"})
    mock_api.get(LIST, payload=factories.envelope([]))
    mock_api.delete(f"{SUBS}/{SID}", status=204)
    await client.payroll_connections.list().collect()
    before = clock.time
    await client.gate.pause(5)
    await client.webhooks.delete(SID)
    assert clock.time - before == 5
    assert clock.sleeps == [7.0, 5]


# --- timeouts --------------------------------------------------------------------------------


async def test_timeouts_are_per_attempt_and_typed(serve: Serve, clock: FakeClock) -> None:
    hits = []
    all_arrived = asyncio.Event()

    async def stalls(request: web.Request) -> web.Response:
        hits.append(request.method)
        if len(hits) == 4:
            all_arrived.set()
        await asyncio.Event().wait()  # never answers; cancelled at teardown
        raise AssertionError("unreachable")

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", stalls)
    app.router.add_post("/v1/webhooks/subscriptions", stalls)
    base = await serve(app)
    # A read timeout starts once the request is written: every attempt reaches the server
    # however slowly the machine runs, and the server is then waited for, not slept on.
    timeout = aiohttp.ClientTimeout(total=None, sock_read=0.05)
    async with PayrollClient(
        base, TOKEN, timeout=timeout, retry=RetryPolicy(max_attempts=3), clock=clock
    ) as client:
        with pytest.raises(APITimeoutError, match=r"timed out after 0\.05s"):
            await client.payroll_connections.list().collect()
        with pytest.raises(APITimeoutError):
            await client.webhooks.create(
                event_types=["PAYROLL_PROCESSED"], path="https://h.example.test/x"
            )
        await asyncio.wait_for(all_arrived.wait(), 30)
    assert hits == ["GET", "GET", "GET", "POST"]


@pytest.mark.skipif(
    tuple(int(part) for part in aiohttp.__version__.split(".")[:2]) < (3, 10),
    reason="aiohttp 3.9 never sends a request again itself",
)
async def test_aiohttps_own_resend_on_a_stale_connection_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """aiohttp resends an idempotent request once when a pooled connection turns out closed."""
    served = 0

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        requests_on_this_connection = 0
        try:
            while True:
                try:
                    await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return  # the client closed the connection
                requests_on_this_connection += 1
                if requests_on_this_connection == 2:  # a server that dropped the idle connection
                    return
                served += 1
                body = json.dumps(factories.envelope([])).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                    + str(len(body)).encode()
                    + b"\r\n\r\n"
                    + body
                )
                await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    caplog.set_level(logging.DEBUG, logger="payroll_async")
    try:
        async with PayrollClient(f"http://127.0.0.1:{port}", TOKEN) as client:
            await client.payroll_connections.list().collect()
            await client.payroll_connections.list().collect()
    finally:
        server.close()
        await server.wait_closed()
    assert served == 2
    messages = [r.getMessage() for r in caplog.records]
    assert any("sent again by aiohttp" in m for m in messages)
    assert not any("retrying" in m for m in messages)  # not one of the policy's attempts


async def test_a_tls_failure_is_not_retried(serve: Serve, clock: FakeClock) -> None:
    base = await serve(web.Application())  # plain HTTP: a TLS handshake with it fails
    port = base.rsplit(":", 1)[1]
    async with PayrollClient(f"https://127.0.0.1:{port}", TOKEN, clock=clock) as client:
        with pytest.raises(APIConnectionError, match="TLS failed") as info:
            await client.payroll_connections.list().collect()
    assert info.value.retryable is False
    assert clock.sleeps == []
