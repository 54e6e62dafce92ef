"""The fleet's gate on a rediss:// Redis whose certificate comes from a private CA."""

from __future__ import annotations

import asyncio

from redis.asyncio import Redis

from payroll_async.emulator import Emulator
from payroll_async.fleet import default_key
from tests._network import PrivateCA, TLSTerminator
from tests.cli._run import start
from tests.conftest import StartEmulator
from tests.fleet.conftest import RedisServer


async def _webhooks_list(emu: Emulator, *options: str) -> tuple[int, str]:
    process = await start(emu, *options, "webhooks", "list", stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, err.decode()


async def test_ca_bundle_reaches_a_rediss_gate(
    ca: PrivateCA, redis_server: RedisServer, start_emulator: StartEmulator
) -> None:
    emu = await start_emulator()
    async with TLSTerminator(redis_server.port, ca.server_context()) as tls:
        url = f"rediss://localhost:{tls.port}/0"
        fleet = ["--redis-url", url, "--rate", "50"]
        # Without the CA the handshake fails: the gate goes on locally, and says so.
        await _webhooks_list(emu, *fleet)
        assert tls.forwarded == 0
        code, err = await _webhooks_list(emu, *fleet, "--ca-bundle", str(ca.bundle))
        assert code == 0, err
        assert tls.forwarded >= 1
    redis = Redis.from_url(redis_server.url)
    try:
        assert await redis.keys(f"{default_key(emu.base_url)}*")
    finally:
        await redis.aclose()
