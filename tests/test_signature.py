"""Standard Webhooks signatures: interoperability with the third-party package, edge cases."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import hmac
import json
import logging
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
import standardwebhooks
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st
from yarl import URL

from payroll_async import EventType, InvalidArgumentError, PayrollClient
from payroll_async._signature import Signer
from payroll_async.emulator import Emulator, _delivery
from payroll_async.events import EventRouter, WebhookEvent, sign
from tests.conftest import Serve

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OTHER = "whsec_" + base64.b64encode(b"another key of 24 bytes!").decode()


def notification(event_id: str = "evt_1") -> bytes:
    return json.dumps(
        {
            "eventId": event_id,
            "eventType": "PAYROLL_PROCESSED",
            "occurredAt": "2026-11-22T05:00:00Z",
            "data": {"payrollId": "p1"},
        }
    ).encode()


def mac(secret: str, event_id: str, stamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{event_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


Send = Callable[..., Awaitable[int]]


class Receiver:
    def __init__(self, router: EventRouter) -> None:
        self.router = router
        self.handled: list[str | None] = []

        @router.on()
        async def record(event: WebhookEvent) -> None:
            self.handled.append(event.event_id)


@pytest.fixture
async def receiver(serve: Serve) -> AsyncIterator[Callable[..., Awaitable[tuple[Receiver, Send]]]]:
    sessions: list[aiohttp.ClientSession] = []

    async def start(**options: Any) -> tuple[Receiver, Send]:
        target = Receiver(EventRouter(**options))
        url = await serve(target.router.app(path="/hooks")) + "/hooks"
        session = aiohttp.ClientSession()
        sessions.append(session)

        async def send(body: bytes, headers: dict[str, str]) -> int:
            async with session.post(url, data=body, headers=headers) as response:
                return response.status

        return target, send

    yield start
    for session in sessions:
        await session.close()


async def test_what_standardwebhooks_signs_we_accept(receiver: Any) -> None:
    target, send = await receiver(secret=SECRET)
    body = notification("evt_lib")
    now = datetime.datetime.now(tz=datetime.timezone.utc)
    signature = standardwebhooks.Webhook(SECRET).sign("evt_lib", now, body.decode())
    headers = {
        "webhook-id": "evt_lib",
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
    }
    assert await send(body, headers) == 200
    assert target.handled == ["evt_lib"]


def test_what_we_sign_standardwebhooks_verifies() -> None:
    body = notification("evt_ours")
    headers = sign(SECRET, "evt_ours", int(time.time()), body)
    assert standardwebhooks.Webhook(SECRET).verify(body, headers)["eventId"] == "evt_ours"
    tampered = body.replace(b"p1", b"p2")
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(SECRET).verify(tampered, headers)


async def test_what_the_emulator_signs_standardwebhooks_verifies(serve: Serve) -> None:
    arrived: list[tuple[bytes, dict[str, str]]] = []

    async def capture(request: web.Request) -> web.Response:
        arrived.append((await request.read(), dict(request.headers)))
        return web.Response(status=500 if len(arrived) == 1 else 200)  # one redelivery

    app = web.Application()
    app.router.add_post("/in", capture)
    hook = await serve(app) + "/in"
    async with Emulator(webhook_subscriptions=0, delivery_headers={"X-Extra": "kept"}) as emu:
        assert emu.webhook_secret.startswith("whsec_")
        async with PayrollClient(emu.base_url, emu.token) as client:
            await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
        assert await emu.emit(EventType.PAYROLL_PROCESSED, event_id="evt_e") == 1
        verifier = standardwebhooks.Webhook(emu.webhook_secret)
    assert len(arrived) == 2
    for body, headers in arrived:
        assert verifier.verify(body, headers)["eventId"] == "evt_e"
        assert headers["webhook-id"] == "evt_e"  # the same id on the redelivery
        assert headers["X-Extra"] == "kept"  # delivery_headers still added
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(OTHER).verify(*arrived[0])


async def test_a_redelivery_is_signed_afresh(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fresh timestamp (and so a fresh signature) on each attempt: a receiver's tolerance
    # never refuses a redelivery of an old event.
    arrived: list[dict[str, str]] = []

    async def capture(request: web.Request) -> web.Response:
        arrived.append(dict(request.headers))
        return web.Response(status=503 if len(arrived) == 1 else 200)

    app = web.Application()
    app.router.add_post("/in", capture)
    hook = await serve(app) + "/in"
    stamps = iter([1_800_000_000.5, 1_800_000_007.5])
    monkeypatch.setattr(_delivery, "time", types.SimpleNamespace(time=lambda: next(stamps)))
    async with Emulator(webhook_subscriptions=0, webhook_secret=SECRET) as emu:
        async with PayrollClient(emu.base_url, emu.token) as client:
            await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
        assert await emu.emit(EventType.PAYROLL_PROCESSED, event_id="same") == 1
    assert [h["webhook-id"] for h in arrived] == ["same", "same"]
    assert [h["webhook-timestamp"] for h in arrived] == ["1800000000", "1800000007"]
    assert arrived[0]["webhook-signature"] != arrived[1]["webhook-signature"]


@pytest.mark.parametrize(
    "secret", [SECRET, SECRET.removeprefix("whsec_")], ids=["prefixed", "bare"]
)
async def test_secrets_with_and_without_the_prefix(receiver: Any, secret: str) -> None:
    _, send = await receiver(secret=secret)
    body = notification()
    assert await send(body, sign(SECRET, "evt_1", int(time.time()), body)) == 200


async def test_key_rotation_accepts_either_secret(receiver: Any) -> None:
    target, send = await receiver(secret=[OTHER, SECRET])
    for n, secret in enumerate([SECRET, OTHER]):
        body = notification(f"r{n}")
        assert await send(body, sign(secret, f"r{n}", int(time.time()), body)) == 200
    third = "whsec_" + base64.b64encode(b"a third, unknown secret!").decode()
    body = notification("r2")
    assert await send(body, sign(third, "r2", int(time.time()), body)) == 401
    assert target.handled == ["r0", "r1"]


def _headers(event_id: str, stamp: int, signature: str) -> dict[str, str]:
    return {"webhook-id": event_id, "webhook-timestamp": str(stamp), "webhook-signature": signature}


async def test_the_specs_edge_cases(receiver: Any, caplog: pytest.LogCaptureFixture) -> None:
    target, send = await receiver(secret=SECRET)
    now = int(time.time())

    def case(event_id: str, signature: str, stamp: int = now, sign_as: str | None = None) -> tuple:
        body = notification(event_id)
        good = mac(SECRET, sign_as or event_id, stamp, body)
        return body, _headers(event_id, stamp, signature.format(good=good))

    accepted = [
        case("several", "v1,AAAA v1,{good} v1,bm90IGl0"),  # every listed signature is tried
        case("versions", "v1a,{good} v2,{good} v1,{good}"),  # unknown versions are skipped
        case("early", "v1,{good}", stamp=now - 290),
        case("late", "v1,{good}", stamp=now + 290),
    ]
    refused = [
        case("only-unknown-versions", "v1a,{good} v2,{good}"),
        case("malformed-base64", "v1,!!!{good}"),
        case("no-comma", "{good}"),
        case("empty", ""),
        case("too-old", "v1,{good}", stamp=now - 400),
        case("too-new", "v1,{good}", stamp=now + 400),
        case("id-mismatch", "v1,{good}", sign_as="other"),
    ]
    for body, headers in accepted:
        assert await send(body, headers) == 200, headers
    caplog.clear()
    for body, headers in refused:
        assert await send(body, headers) == 401, headers
    body = notification("tampered")
    headers = sign(SECRET, "tampered", now, body)
    assert await send(body.replace(b"p1", b"p9"), headers) == 401
    assert await send(body, {}) == 401  # no headers at all
    # a webhook-id that is signed correctly but is not the body's eventId
    other = notification("body-id")
    assert await send(other, sign(SECRET, "header-id", now, other)) == 401
    assert target.handled == ["several", "versions", "early", "late"]
    lines = [r.getMessage() for r in caplog.records if r.name == "payroll_async.events"]
    assert len(lines) == len(refused) + 3  # one line per refusal
    assert all("failed verification" in line for line in lines)
    assert not any(SECRET.removeprefix("whsec_") in line for line in caplog.text.splitlines())


async def test_an_unverified_request_never_reaches_the_dedupe_memory(receiver: Any) -> None:
    target, send = await receiver(secret=SECRET)
    body = notification("victim")
    forged = _headers("victim", int(time.time()), "v1," + mac(OTHER, "victim", 0, body))
    assert await send(body, forged) == 401
    # had the forgery been remembered as handled, the real delivery would be skipped
    assert await send(body, sign(SECRET, "victim", int(time.time()), body)) == 200
    assert target.handled == ["victim"]


def test_a_router_needs_a_choice() -> None:
    with pytest.raises(InvalidArgumentError, match=r"secret=.*verify=.*insecure=True"):
        EventRouter()
    with pytest.raises(InvalidArgumentError, match="contradicts"):
        EventRouter(secret=SECRET, insecure=True)
    with pytest.raises(InvalidArgumentError, match="at least one"):
        EventRouter(secret=[])
    with pytest.raises(InvalidArgumentError, match="tolerance"):
        EventRouter(secret=SECRET, tolerance=0)
    with pytest.raises(InvalidArgumentError) as refused:
        EventRouter(secret="whsec_not*base64")
    assert "not*base64" not in str(refused.value)  # a mistyped secret is not echoed
    assert "MfKQ" not in repr(EventRouter(secret=SECRET).__dict__)


def test_insecure_is_said_out_loud(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="payroll_async.events"):
        EventRouter(insecure=True)
    assert "not verified" in caplog.text


async def test_a_non_utf8_webhook_id_is_refused_with_one_warning(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    # What aiohttp's client will not send: a raw request whose webhook-id holds byte 0xff
    url = URL(await serve(EventRouter(secret=SECRET).app(path="/hooks")))
    body = notification("evt_1")
    stamp = int(time.time())
    head = (
        f"POST /hooks HTTP/1.1\r\nHost: {url.host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\nwebhook-timestamp: {stamp}\r\n"
        f"webhook-signature: v1,{mac(SECRET, 'evt_1', stamp, body)}\r\n"
    ).encode()
    caplog.set_level(logging.INFO)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    writer.write(head + b"webhook-id: evt_\xff1\r\n\r\n" + body)
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    await writer.wait_closed()
    assert status_line.split()[1] == b"401"
    ours = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.levelname) for r in ours] == [("payroll_async.events", "WARNING")]
    assert "webhook-id is not UTF-8" in ours[0].getMessage()
    assert ours[0].exc_info is None


@given(
    st.dictionaries(
        st.sampled_from(["webhook-id", "webhook-timestamp", "webhook-signature"]),
        # lone surrogates too: aiohttp hands a non-UTF-8 header byte on as one
        st.text(st.characters(exclude_categories=()), max_size=80),
    ),
    st.binary(max_size=64),
)
def test_any_headers_are_refused_cleanly(headers: dict[str, str], body: bytes) -> None:
    outcome = Signer(SECRET, 300).check(headers, body, time.time())
    assert isinstance(outcome, str)
