"""Several payroll-async processes sharing one gate on Redis: --redis-url, --gate-key, --rate."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from click.testing import CliRunner
from redis.asyncio import Redis

from payroll_async.cli import _commands
from payroll_async.fleet import default_key
from tests.conftest import StartEmulator
from tests.fleet.conftest import RedisServer


async def test_commands_on_one_redis_share_the_budget(
    redis_server: RedisServer, start_emulator: StartEmulator, tmp_path: Path
) -> None:
    emu = await start_emulator(payroll_connections=300, rate_limit=20)
    # The keys the commands set, as Redis tells of them (keyspace events): read after the
    # run, when a key that expires a second after the last request may be gone already.
    watcher = Redis.from_url(redis_server.url)
    await watcher.config_set("notify-keyspace-events", "K$")
    events = watcher.pubsub()
    await events.psubscribe("__keyspace@0__:*")
    common = ["--base-url", emu.base_url, "--token", emu.token]
    fleet = ["--redis-url", redis_server.url, "--rate", "16"]
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "payroll_async.cli",
            *common,
            *fleet,
            "export",
            "payroll-connections",
            "--page-size",
            "10",
            "-o",
            str(tmp_path / f"out{n}.jsonl"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        for n in range(2)
    ]
    for process in processes:
        _, err = await asyncio.wait_for(process.communicate(), 120)
        assert process.returncode == 0, err.decode()
    for n in range(2):
        assert len((tmp_path / f"out{n}.jsonl").read_text().splitlines()) == 300
    assert emu.stats["requests"] >= 60
    assert emu.stats.get("rate_limited", 0) <= 0.01 * emu.stats["requests"]
    keys = set()
    while message := await events.get_message(timeout=0):  # what has come, then None
        if message["type"] == "pmessage":
            keys.add(message["channel"].decode().removeprefix("__keyspace@0__:"))
    await events.aclose()
    await watcher.aclose()
    assert keys == {f"{default_key(emu.base_url)}:tat"}  # the default key: from the URL


def test_gate_key_without_redis_url_is_a_usage_error() -> None:
    result = CliRunner().invoke(
        _commands.cli, ["--gate-key", "k", "--emulator", "webhooks", "list"]
    )
    assert result.exit_code == 2
    assert "--gate-key needs --redis-url" in result.output
