"""A receiver against senders that omit ids, fail open, trickle, hang up, nest or flood."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import resource
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from yarl import URL

from payroll_async import EventType, InvalidArgumentError
from payroll_async._core._json import loads
from payroll_async.events import EventRouter, WebhookEvent, sign
from tests.conftest import Serve, loopback

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def _body(event_id: object = "evt_1", **extra: object) -> bytes:
    payload = {"eventType": "PAYROLL_PROCESSED", "occurredAt": None, "data": {}, **extra}
    if event_id is not ...:
        payload["eventId"] = event_id
    return json.dumps(payload).encode()


async def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers) as response,
    ):
        return response.status


def _recording(router: EventRouter) -> list[WebhookEvent]:
    handled: list[WebhookEvent] = []

    @router.on()
    async def record(event: WebhookEvent) -> None:
        handled.append(event)

    return handled


@pytest.mark.parametrize("event_id", [..., None], ids=["missing", "null"])
async def test_a_notification_without_an_event_id_gets_400_and_runs_nothing(
    serve: Serve, event_id: object
) -> None:
    router = EventRouter(insecure=True)
    handled = _recording(router)
    url = await serve(router.app("/hooks")) + "/hooks"
    for _ in range(3):  # every redelivery is refused alike
        assert await _post(url, _body(event_id)) == 400
    assert handled == []


@pytest.mark.parametrize("answer", ["signature mismatch", 1, None, [True]], ids=repr)
async def test_a_verify_hook_that_returns_no_bool_refuses(
    serve: Serve, caplog: pytest.LogCaptureFixture, answer: object
) -> None:
    async def verify(request: web.Request, body: bytes) -> bool:
        return answer  # type: ignore[return-value]

    router = EventRouter(verify=verify)
    handled = _recording(router)
    url = await serve(router.app("/hooks")) + "/hooks"
    assert await _post(url, _body()) == 401
    assert handled == []
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [f"returned {type(answer).__name__}, not a bool" in r.getMessage() for r in errors] == [
        True
    ]


async def test_an_async_verify_that_hangs_is_bounded_by_the_handler_timeout(serve: Serve) -> None:
    cancelled = asyncio.Event()

    async def verify(request: web.Request, body: bytes) -> bool:
        try:
            await asyncio.Event().wait()  # never answers
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return True

    router = EventRouter(verify=verify, handler_timeout=0.2)
    handled = _recording(router)
    url = await serve(router.app("/hooks")) + "/hooks"
    assert await asyncio.wait_for(_post(url, _body()), 10) == 503
    assert cancelled.is_set()
    assert handled == []


@pytest.mark.parametrize("kind", ["payroll_processed", "Payroll_Processed", "PAYROLL_PROCESED", 5])
def test_a_misspelt_event_type_is_refused_at_registration(kind: object) -> None:
    router = EventRouter(insecure=True)
    with pytest.raises(InvalidArgumentError, match="unknown event type"):

        @router.on(kind)  # type: ignore[arg-type]
        async def handler(event: WebhookEvent) -> None: ...

    router.on(EventType.PAYROLL_PROCESSED, "EMPLOYEE_CENSUS_HIRED")  # the exact texts are fine


async def test_a_body_nested_1000_deep_is_refused_before_handlers(serve: Serve) -> None:
    router = EventRouter(secret=SECRET)
    handled = _recording(router)
    url = await serve(router.app("/hooks")) + "/hooks"
    body = (
        b'{"eventId": "deep", "eventType": "PAYROLL_PROCESSED", "data": {"x": '
        + b"[" * 998
        + b"]" * 998
        + b"}}"
    )  # 1,000 levels: the object, data, and 998 lists
    assert loads(body)["eventId"] == "deep"  # the SDK's parser reads it (orjson: 1,024)
    assert await _post(url, body, sign(SECRET, "deep", int(time.time()), body)) == 400
    shallow = _body("shallow", data={"x": [[[["fine"]]]]})
    assert await _post(url, shallow, sign(SECRET, "shallow", int(time.time()), shallow)) == 200
    assert [e.event_id for e in handled] == ["shallow"]


async def test_log_lines_escape_what_the_sender_wrote(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    router = EventRouter(insecure=True)

    @router.on()
    async def fail(event: WebhookEvent) -> None:
        raise RuntimeError("handler down")

    url = await serve(router.app("/hooks")) + "/hooks"
    hostile = "evt\x1b]8;;https://evil.example\x07click\x1b]8;;\x07\r\x9b2J"
    with caplog.at_level(logging.INFO, logger="payroll_async.events"):
        assert await _post(url, _body(hostile, eventType="X\x1b[2J", occurredAt="\x07")) == 500
    messages = [r.getMessage() for r in caplog.records]
    assert any("evt\\x1b]8;;https://evil.example\\x07" in m for m in messages)
    for message in messages:
        assert not any(ch in message for ch in "\x1b\x07\r\x9b"), message


async def _trickle(port: int, head: bytes, closed: list[bool]) -> None:
    """Send ``head`` a byte at a time, slowly, until the server closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for byte in head:
            writer.write(bytes([byte]))
            try:
                await writer.drain()
                # the server closing is what ends this; the wait only paces the bytes
                await asyncio.wait_for(reader.read(), 0.05)
            except asyncio.TimeoutError:
                continue
            except ConnectionError:
                pass
            closed.append(True)
            return
    finally:
        writer.close()


async def _body_trickle(port: int, head: bytes, body: bytes, closed: list[bool]) -> None:
    """Send ``head`` at once, then ``body`` a byte at a time until the server answers 408
    or closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)
    await writer.drain()
    try:
        for byte in body:
            writer.write(bytes([byte]))
            await writer.drain()
            try:
                answer = await asyncio.wait_for(reader.read(), 0.05)
            except asyncio.TimeoutError:
                continue
            closed.append(answer == b"" or b" 408 " in answer.split(b"\r\n")[0])
            return
    except ConnectionError:
        closed.append(True)
    finally:
        writer.close()


@pytest.mark.parametrize(
    "part",
    [
        pytest.param(
            "headers",
            marks=pytest.mark.skipif(
                tuple(int(n) for n in aiohttp.__version__.split(".")[:3]) < (3, 14, 4),
                reason="aiohttp before 3.14.4 bounds no request's headers (docs/webhooks.md)",
            ),
        ),
        "body",
    ],
)
async def test_200_trickling_uploads_are_closed(
    part: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Scaled down in time, not in count: a byte every 50 ms against a 0.5 s read_timeout,
    # as a byte every 5 s stands against the default of 10 s (for the headers, and again
    # for the body).
    router = EventRouter(insecure=True, read_timeout=0.5)
    handled = _recording(router)
    body = _body()
    head = (
        b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    slow = head[:-2] if part == "headers" else body  # headers: never completed
    closed: list[bool] = []
    started = time.monotonic()
    # no server option: router.app() sets the bound
    async with loopback(router.app("/hooks"), access_log=None) as url:
        port = URL(url).port
        assert port is not None
        if part == "body":
            await asyncio.gather(*(_body_trickle(port, head, slow, closed) for _ in range(200)))
        else:
            await asyncio.gather(*(_trickle(port, slow, closed) for _ in range(200)))
        assert closed == [True] * 200
        assert time.monotonic() - started < 30
        assert handled == []
        # and the receiver still serves a sender that sends in time
        assert await _post(f"{url}/hooks", body) == 200
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


async def test_aborted_uploads_log_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    router = EventRouter(insecure=True)
    handled = _recording(router)
    reading = asyncio.Event()

    async def handle(request: web.Request) -> web.StreamResponse:
        reading.set()  # the router is about to read the body
        return await router.handle(request)

    app = web.Application()
    app.router.add_post("/hooks", handle)
    async with loopback(app, access_log=None) as url:
        port = URL(url).port
        with caplog.at_level(logging.DEBUG):
            for _ in range(20):
                reading.clear()
                _reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(
                    b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"{" * 10
                )
                await writer.drain()
                await reading.wait()
                writer.transport.abort()  # a reset, mid-body
            assert await _post(f"{url}/hooks", _body()) == 200
    assert [e.event_id for e in handled] == ["evt_1"]
    tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert tracebacks == []
    hung_up = [r for r in caplog.records if "hung up" in r.getMessage()]
    assert len(hung_up) == 20  # one line each


_RECEIVER = """
import asyncio, resource, sys
from aiohttp import web
from yarl import URL
from payroll_async.events import EventRouter
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
router = EventRouter(insecure=True, read_timeout=1)
@router.on()
async def handler(event):
    pass
async def main():
    runner = web.AppRunner(router.app("/hooks"), access_log=None, keepalive_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(runner.addresses[0][1], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


class Said:
    """What a process writes to a pipe, read as it comes (the pipe never fills and stalls
    it); ``until(text)`` returns once the process has written ``text``: no polling."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.text = b""
        self._changed = asyncio.Condition()
        self._reading = asyncio.create_task(self._read(stream))

    async def _read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(1 << 16):
            async with self._changed:
                self.text += chunk
                self._changed.notify_all()
        async with self._changed:
            self._changed.notify_all()

    async def until(self, text: bytes) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: text in self.text or self._reading.done())
        assert text in self.text, self.text[-2000:]

    async def close(self) -> None:
        await self._reading


@pytest.fixture
async def limited_receiver() -> AsyncIterator[tuple[asyncio.subprocess.Process, int, Said]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _RECEIVER,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    said = Said(proc.stderr)
    port = int(await asyncio.wait_for(proc.stdout.readline(), 30))
    yield proc, port, said
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    await proc.wait()
    await said.close()


async def test_at_the_file_descriptor_limit_it_stays_up_and_serves_again(
    limited_receiver: tuple[asyncio.subprocess.Process, int, Said],
) -> None:
    proc, port, said = limited_receiver
    url = f"http://127.0.0.1:{port}/hooks"
    assert await _post(url, _body("before")) == 200
    # a flood of 200 idle connections against a limit of 64 descriptors
    flood: list[socket.socket] = []
    for _ in range(200):
        sock = socket.socket()
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            sock.connect(("127.0.0.1", port))
        flood.append(sock)
    # until it has run out of descriptors (it says so on stderr)
    await asyncio.wait_for(said.until(b"Too many open files"), 30)
    assert proc.returncode is None
    for sock in flood:
        sock.close()
    # the flood's connections close, the ones never accepted are accepted and closed: it
    # serves again (asyncio retries accept() a second after EMFILE)
    status = None
    for _ in range(20):
        try:
            status = await asyncio.wait_for(_post(url, _body("after")), 5)
            break
        except (aiohttp.ClientError, asyncio.TimeoutError):
            continue
    assert status == 200
    assert proc.returncode is None
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 64  # only the child was limited
