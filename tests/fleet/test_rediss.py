"""The fleet's gate on a rediss:// Redis whose certificate comes from a private CA."""

from __future__ import annotations

import asyncio
from pathlib import Path

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


async def test_a_rediss_url_may_name_its_own_ca(
    ca: PrivateCA, redis_server: RedisServer, start_emulator: StartEmulator, tmp_path: Path
) -> None:
    emu = await start_emulator()
    (tmp_path / "other").mkdir()
    other = PrivateCA(tmp_path / "other")  # another CA: --ca-bundle is not the Redis's
    async with TLSTerminator(redis_server.port, ca.server_context()) as tls:
        url = f"rediss://localhost:{tls.port}/0?ssl_ca_certs={ca.bundle}"
        code, err = await _webhooks_list(
            emu, "--redis-url", url, "--rate", "50", "--ca-bundle", str(other.bundle)
        )
        assert code == 0, err
        assert tls.forwarded >= 1
