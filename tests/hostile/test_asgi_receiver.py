"""``router.asgi()`` under a real uvicorn, in a process of its own, against the senders the
aiohttp receiver already withstands: forged and replayed signatures, oversized and deeply
nested bodies, header floods, and senders that trickle or hang up."""

from __future__ import annotations

import asyncio
import io
import json
import os
import pathlib
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest

from payroll_async.events import sign
from tests.hostile.test_receiver import _body, _body_trickle, _post, _trickle

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OTHER = "whsec_YW5vdGhlciBrZXkgb2YgMjQgYnl0ZXMh"

_SERVER = """
import socket, sys
import uvicorn
from payroll_async.events import EventRouter

router = EventRouter(secret=sys.argv[1], read_timeout=float(sys.argv[2]))

@router.on()
async def handler(event):
    print("handled", event.event_id, flush=True)

sock = socket.socket()
sock.bind(("127.0.0.1", 0))  # a free loopback port, bound before the port is told
sock.listen(256)
config = uvicorn.Config(
    router.asgi(path="/hooks"), log_level="info", access_log=False, lifespan="on", http="h11"
)
print(sock.getsockname()[1], flush=True)
uvicorn.Server(config).run(sockets=[sock])
"""


class Uvicorn:
    """The server process: its URL, the events its handler printed, what it logged."""

    def __init__(self, proc: asyncio.subprocess.Process, port: int, log: pathlib.Path) -> None:
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}/hooks"
        self.log = log
        self.handled: list[str] = []

    async def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL if it lingers) and collect what it printed."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = await asyncio.wait_for(self.proc.communicate(), 30)
        except asyncio.TimeoutError:
            self.proc.kill()
            out, _ = await self.proc.communicate()
        self.handled += [line.split()[1] for line in out.decode().splitlines() if line]


StartUvicorn = Callable[..., Awaitable[Uvicorn]]


@pytest.fixture
async def uvicorn_receiver(tmp_path: pathlib.Path) -> AsyncIterator[StartUvicorn]:
    started: list[Uvicorn] = []

    async def start(read_timeout: float = 10.0, payroll_log: str | None = "info") -> Uvicorn:
        log = tmp_path / f"uvicorn-{len(started)}.log"
        with log.open("wb") as stderr:  # a file, not a pipe nobody reads
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _SERVER,
                SECRET,
                str(read_timeout),
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env={
                    **{k: v for k, v in os.environ.items() if k != "PAYROLL_LOG"},
                    "PYTHONPATH": os.getcwd(),
                    **({"PAYROLL_LOG": payroll_log} if payroll_log else {}),
                },
            )
        assert proc.stdout is not None
        port = int(await asyncio.wait_for(proc.stdout.readline(), 60))
        server = Uvicorn(proc, port, log)
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()  # every process is gone when the test ends


def _signed(event_id: str, stamp: int | None = None, secret: str = SECRET) -> tuple[bytes, dict]:
    body = _body(event_id)
    return body, sign(secret, event_id, int(time.time()) if stamp is None else stamp, body)


async def test_forged_and_replayed_signatures_are_refused(uvicorn_receiver: StartUvicorn) -> None:
    server = await uvicorn_receiver()
    body, headers = _signed("genuine")
    assert await _post(server.url, body, headers) == 200
    assert await _post(server.url, body, headers) == 200  # a redelivery: acknowledged
    forged = _signed("forged", secret=OTHER)
    assert await _post(server.url, *forged) == 401
    captured = _signed("captured", stamp=int(time.time()) - 400)  # replayed after tolerance
    assert await _post(server.url, *captured) == 401
    tampered = body.replace(b"PAYROLL_PROCESSED", b"PAYROLL_PROCESSEd")
    assert await _post(server.url, tampered, headers) == 401
    other = _body("another-id")
    assert await _post(server.url, other, headers) == 401  # signature of another body
    assert await _post(server.url, other) == 401  # unsigned
    await server.stop()
    assert server.handled == ["genuine"]
    assert b"Traceback" not in server.log.read_bytes()
    assert b"failed verification" in server.log.read_bytes()  # one line each, logged


async def test_under_uvicorn_a_wrong_secret_is_one_warning_without_any_logging_set_up(
    uvicorn_receiver: StartUvicorn,
) -> None:
    """Nothing configures logging (no PAYROLL_LOG, uvicorn's own loggers only): the reason
    still reaches stderr, once per cause from this sender, however often it is sent."""
    server = await uvicorn_receiver(payroll_log=None)
    for n in range(3):
        assert await _post(server.url, *_signed(f"forged-{n}", secret=OTHER)) == 401
    for n in range(2):
        assert await _post(server.url, *_signed(f"old-{n}", stamp=int(time.time()) - 400)) == 401
    await server.stop()
    lines = [ln for ln in server.log.read_text().splitlines() if "rejected" in ln]
    assert lines == [
        "payroll_async.events WARNING: rejected a notification from 127.0.0.1 that failed "
        f"verification: {why} (the same refusal from this sender again is logged at DEBUG)"
        for why in (
            "no signature matches",
            "webhook-timestamp is more than 300s from this machine's clock",
        )
    ]


async def test_oversized_nested_and_header_flooded_requests(
    uvicorn_receiver: StartUvicorn,
) -> None:
    server = await uvicorn_receiver()
    big = b'{"eventId": "big", "pad": "' + b"x" * 2**20 + b'"}'
    signed_big = sign(SECRET, "big", int(time.time()), big)

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(20):
            yield b"x" * 65536

    async with aiohttp.ClientSession() as session:
        for data, headers in [(io.BytesIO(big), signed_big), (chunks(), {})]:
            async with session.post(server.url, data=data, headers=headers) as response:
                assert response.status == 413
    deep = (
        b'{"eventId": "deep", "eventType": "PAYROLL_PROCESSED", "data": {"x": '
        + b"[" * 998
        + b"]" * 998
        + b"}}"
    )
    assert await _post(server.url, deep, sign(SECRET, "deep", int(time.time()), deep)) == 400
    body, headers = _signed("crowded")
    flood = headers | {f"x-filler-{n}": "1" for n in range(120)}
    assert await _post(server.url, body, flood) == 431
    assert await _post(server.url, *_signed("fine")) == 200
    await server.stop()
    assert server.handled == ["fine"]
    assert b"Traceback" not in server.log.read_bytes()


@pytest.mark.parametrize("part", ["headers", "body"])
async def test_200_trickling_senders(uvicorn_receiver: StartUvicorn, part: str) -> None:
    # As in test_receiver: a byte every 50 ms against a 0.5 s read_timeout.
    server = await uvicorn_receiver(read_timeout=0.5)
    body, headers = _signed("in-time")
    head = b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
    closed: list[bool] = []
    started = time.monotonic()
    if part == "body":
        # the router's bound: 408 and the connection closed, for every one of them
        await asyncio.gather(*(_body_trickle(server.port, head, body, closed) for _ in range(200)))
        assert closed == [True] * 200
        assert time.monotonic() - started < 30
    else:
        # uvicorn does not bound the time headers take (see docs/webhooks.md): the
        # connections stay open, yet a sender in time is served meanwhile
        stop = asyncio.Event()

        async def trickle() -> None:
            task = asyncio.ensure_future(_trickle(server.port, head[:-2], closed))
            await stop.wait()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        tricklers = [asyncio.ensure_future(trickle()) for _ in range(200)]
        try:
            assert await asyncio.wait_for(_post(server.url, body, headers), 10) == 200
        finally:
            stop.set()
            await asyncio.gather(*tricklers)
    assert await _post(server.url, *_signed("after")) == 200
    await server.stop()
    expected = ["after"] if part == "body" else ["in-time", "after"]
    assert server.handled == expected
    assert b"Traceback" not in server.log.read_bytes()


async def test_senders_hanging_up_mid_body_cost_a_line_not_a_traceback(
    uvicorn_receiver: StartUvicorn,
) -> None:
    server = await uvicorn_receiver()
    for _ in range(20):
        _reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{{{")
        await writer.drain()
        writer.transport.abort()
    assert await _post(server.url, *_signed("after")) == 200
    await server.stop()
    assert server.handled == ["after"]
    assert b"Traceback" not in server.log.read_bytes()
    assert json.dumps(SECRET)[1:-1].encode() not in server.log.read_bytes()
