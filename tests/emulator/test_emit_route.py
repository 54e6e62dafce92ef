"""The shell emulator emits signed events on demand, so that a receiver can be tested on it."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator

import aiohttp
import pytest

from payroll_async import EventType, PayrollClient
from payroll_async.events import EventRouter, WebhookEvent
from tests.conftest import Serve

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


async def _shell_emulator(
    *args: str, secret: str = SECRET
) -> tuple[asyncio.subprocess.Process, dict[str, str]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "payroll_async.emulator",
        "--port",
        "0",
        "--webhook-secret",
        secret,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert proc.stdout is not None
    banner: dict[str, str] = {}
    while "PAYROLL_WEBHOOK_SECRET" not in banner:
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
        assert line, "the emulator stopped before its banner"
        name, sep, value = line.partition("=")
        if sep:
            banner[name] = value
    return proc, banner


@pytest.fixture
async def shell() -> AsyncIterator[dict[str, str]]:
    proc, banner = await _shell_emulator()
    yield banner
    proc.send_signal(signal.SIGINT)
    await asyncio.wait_for(proc.communicate(), 30)


async def test_a_receiver_is_tested_against_the_shell_emulator(
    shell: dict[str, str], serve: Serve
) -> None:
    assert shell["PAYROLL_WEBHOOK_SECRET"] == SECRET
    router = EventRouter(secret=SECRET)
    got: list[WebhookEvent] = []

    @router.on(EventType.PAYROLL_PROCESSED)
    async def record(event: WebhookEvent) -> None:
        got.append(event)

    hook = await serve(router.app(path="/hooks")) + "/hooks"
    base, token = shell["PAYROLL_BASE_URL"], shell["PAYROLL_TOKEN"]
    async with PayrollClient(base, token) as client:
        await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
    async with aiohttp.ClientSession() as session:
        emit = f"{base}/_emulator/events"
        event = {"eventType": "PAYROLL_PROCESSED", "data": {"payrollId": "p-1"}, "eventId": "s1"}
        auth = {"Authorization": f"Bearer {token}"}
        async with session.post(emit, json=event, headers=auth) as response:
            assert response.status == 200
            assert await response.json() == {"eventId": "s1", "delivered": 1}
        async with session.post(emit, json=event) as response:
            assert response.status == 401  # the emulator's token is required
        async with session.post(emit, json={"data": {}}, headers=auth) as response:
            assert response.status == 400
    assert [(e.event_id, dict(e.data)) for e in got] == [("s1", {"payrollId": "p-1"})]


def _an_address_of_this_machine() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET: nothing is sent
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


async def test_events_are_emitted_from_loopback_only() -> None:
    address = _an_address_of_this_machine()
    if address is None:
        pytest.skip("this machine has no address besides loopback")
    proc, banner = await _shell_emulator("--host", "0.0.0.0")
    try:
        port = banner["PAYROLL_BASE_URL"].rsplit(":", 1)[1]
        auth = {"Authorization": f"Bearer {banner['PAYROLL_TOKEN']}"}
        async with aiohttp.ClientSession() as session:
            async with session.post(
                f"http://{address}:{port}/_emulator/events",
                json={"eventType": "PAYROLL_PROCESSED"},
                headers=auth,
            ) as response:
                assert response.status == 403
    finally:
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.communicate(), 30)


async def test_the_shell_signs_v1a_with_a_whsk_key_and_prints_its_whpk(serve: Serve) -> None:
    # RFC 8032's TEST 1 seed and public key
    whsk = "whsk_nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A="
    whpk = "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
    proc, banner = await _shell_emulator(secret=whsk)
    try:
        assert banner["PAYROLL_WEBHOOK_SECRET"] == whpk  # what a receiver verifies with
        router = EventRouter(secret=banner["PAYROLL_WEBHOOK_SECRET"])
        got: list[str | None] = []

        @router.on()
        async def record(event: WebhookEvent) -> None:
            got.append(event.event_id)

        hook = await serve(router.app(path="/hooks")) + "/hooks"
        base, token = banner["PAYROLL_BASE_URL"], banner["PAYROLL_TOKEN"]
        async with PayrollClient(base, token) as client:
            await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
        async with aiohttp.ClientSession() as session:
            event = {"eventType": "PAYROLL_PROCESSED", "eventId": "v1a-1"}
            auth = {"Authorization": f"Bearer {token}"}
            async with session.post(f"{base}/_emulator/events", json=event, headers=auth) as r:
                assert await r.json() == {"eventId": "v1a-1", "delivered": 1}
        assert got == ["v1a-1"]
    finally:
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.communicate(), 30)
