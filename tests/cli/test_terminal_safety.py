"""Text from a hostile service or sender reaches the terminal as text, never as codes or markup."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from payroll_async.events import sign
from tests.cli._run import start
from tests.conftest import Serve

pytestmark = pytest.mark.slow  # the command as a real process

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
# A hidden hyperlink (OSC 8), a bell, a screen clear (CSI, and its one-byte C1 form), a
# bare CR that rewrites the line, and a right-to-left override.
HOSTILE = "x\x1b]8;;https://evil.example\x07click\x1b]8;;\x07\x1b[2J\x9b2J\rfake\u202e"
CONTROLS = ("\x1b", "\x07", "\x9b", "\r", "\u202e")
MARKUP = "[link=https://evil.example]innocent[/link] [bold]x[/] [/]"


def assert_inert(text: str) -> None:
    for ch in CONTROLS:
        assert ch not in text, (ch, text)


async def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "payroll_async.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.getcwd(), "COLUMNS": "200", **(env or {})},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
async def hostile_service(serve: Serve) -> str:
    """A service whose subscriptions and error messages carry escapes and Rich markup."""

    async def subscriptions(request: web.Request) -> web.Response:
        item = {
            "webhookSubscriptionId": str(uuid.uuid4()),
            "webhookEventTypes": ["PAYROLL_PROCESSED", f"NEW_{HOSTILE}", MARKUP],
            "path": f"https://hooks.example.com/{MARKUP}/{HOSTILE}",
            "createdAt": "2026-11-22T05:00:00Z",
            "active": True,
        }
        meta = {"currentCount": 1, "filters": {}, "limit": 100, "offset": 0, "sort": "createdAt"}
        return web.json_response({"data": [item], "meta": {**meta, "totalCount": 1}})

    async def refuse(request: web.Request) -> web.Response:
        return web.json_response(
            {"message": f"bad path {MARKUP} {HOSTILE}", "errors": [f"path: {MARKUP}"]},
            status=400,
        )

    app = web.Application()
    app.router.add_get("/v1/webhooks/subscriptions", subscriptions)
    app.router.add_post("/v1/webhooks/subscriptions", refuse)
    return await serve(app)


async def test_service_text_is_shown_literally(hostile_service: str) -> None:
    code, out, err = await run_cli(
        "--base-url", hostile_service, "--token", "t" * 20, "webhooks", "list"
    )
    assert code == 0, err
    assert_inert(out)
    flat = "".join(out.split())  # the table may fold long cells
    assert "[link=https://evil.example]innocent[/link]" in flat  # literal, not a hyperlink
    assert "\\x1b]8;;https://evil.example\\x07" in flat  # escaped, visible


async def test_markup_and_escapes_in_an_error_message_do_not_crash(hostile_service: str) -> None:
    code, _out, err = await run_cli(
        "--base-url",
        hostile_service,
        "--token",
        "t" * 20,
        "webhooks",
        "create",
        "--event",
        "PAYROLL_PROCESSED",
        "--path",
        "https://hooks.example.com/x",
    )
    assert code == 5, err  # the service's 400, reported in one line: not a crash (1)
    assert "Traceback" not in err
    assert_inert(err)
    assert "[/]" in err
    assert "[link=https://evil.example]innocent[/link]" in err


async def start_listener(
    *extra: str, secret: str = SECRET
) -> tuple[asyncio.subprocess.Process, str]:
    proc = await start(
        None,
        "webhooks",
        "listen",
        "--port",
        "0",
        *extra,
        env={"PAYROLL_WEBHOOK_SECRET": secret},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    line = ""
    try:
        while "Listening" not in line:  # --insecure's WARNING comes first
            line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
            assert line, "the command stopped before it listened"
    except BaseException:
        proc.kill()  # a listener that never said where it listens is not left running
        await proc.wait()
        raise
    return proc, line.split(" on ")[1].split()[0]


@pytest.fixture
async def started() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    procs: list[asyncio.subprocess.Process] = []
    yield procs
    for proc in procs:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
            await proc.communicate()


async def _post(url: str, body: bytes) -> int:
    async with aiohttp.ClientSession() as session, session.post(url, data=body) as response:
        return response.status


async def _signed_post(url: str, body: bytes, event_id: str) -> int:
    headers = {"Content-Type": "application/json", **sign(SECRET, event_id, int(time.time()), body)}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers) as r,
    ):
        return r.status


async def test_listen_prints_what_a_sender_wrote_escaped(
    started: list[asyncio.subprocess.Process],
) -> None:
    # --insecure: a header cannot carry control characters, so a signed notification's
    # eventId (equal to its webhook-id) cannot either; an unverified sender's can
    proc, url = await start_listener("--insecure", secret="")
    started.append(proc)
    event_id = f"evt{HOSTILE}"
    body = json.dumps(
        {
            "eventId": event_id,
            "eventType": f"PAYROLL{HOSTILE}",
            "occurredAt": "2026-11-22T05:00:00Z",
            "data": {"note": HOSTILE, HOSTILE: MARKUP},
            HOSTILE: "extra",
        },
        ensure_ascii=False,
    ).encode()
    assert await _post(url, body) == 200
    # a poison message: nested 1,000 deep, answered 400 instead of a 500 on every redelivery
    deep = b'{"eventId":"deep","eventType":"PAYROLL_PROCESSED","data":' + b"[" * 999
    deep += b"]" * 999 + b"}"
    assert await _post(url, deep) == 400
    proc.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    text = out.decode()
    assert_inert(text)
    assert_inert(err.decode())
    assert "PAYROLL" in text
    assert "\\x1b]8;;https://evil.example\\x07" in text
    assert text.count("\n") == 1  # one event, one line: the CR did not fake another


async def test_listen_needs_a_secret_or_insecure() -> None:
    proc = await start(
        None,
        "webhooks",
        "listen",
        "--port",
        "0",
        env={"PAYROLL_WEBHOOK_SECRET": None},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert "--secret" in err.decode()
    assert "--insecure" in err.decode()
    code, _, err_text = await run_cli("webhooks", "listen", "--secret", "whsec_%%%")
    assert code == 2
    assert "%%%" not in err_text  # a mistyped secret is not echoed


async def test_listen_refuses_unsigned_notifications(
    started: list[asyncio.subprocess.Process],
) -> None:
    proc, url = await start_listener()  # the secret from PAYROLL_WEBHOOK_SECRET
    started.append(proc)
    body = json.dumps({"eventId": "u1", "eventType": "PAYROLL_PROCESSED", "data": {}}).encode()
    assert await _post(url, body) == 401
    assert await _signed_post(url, body, "u1") == 200
    proc.send_signal(signal.SIGINT)
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert out.decode().count("u1") == 1
