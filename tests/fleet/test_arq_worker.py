"""examples/arq_worker.py run by real arq worker processes on a real redis-server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from arq.constants import in_progress_key_prefix
from arq.jobs import Job

from payroll_async.emulator import Emulator
from tests.conftest import StartEmulator
from tests.fleet.conftest import RedisServer

ROOT = Path(__file__).parents[2]


async def start_worker(emu: Emulator, redis_url: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PAYROLL_BASE_URL": emu.base_url,
        "PAYROLL_TOKEN": emu.token,
        "PAYROLL_REDIS_URL": redis_url,
        # A job may run this long: the rest of the export on a loaded machine. arq runs an
        # abandoned job again only 10 s after that, unless (as below) the test says when.
        "PAYROLL_JOB_TIMEOUT": "120",
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "arq",
        "examples.arq_worker.WorkerSettings",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def checkpointed_items(target: Path) -> int:
    checkpoint = target.with_name(target.name + ".checkpoint")
    for _ in range(600):
        if checkpoint.exists():
            try:
                items = int(json.loads(checkpoint.read_text())["items"])
            except (ValueError, KeyError):
                items = 0
            if items > 0:
                return items
        await asyncio.sleep(0.1)
    raise AssertionError("the export never checkpointed")


async def pool(redis_server: RedisServer) -> ArqRedis:
    return await create_pool(RedisSettings.from_dsn(redis_server.url))


async def test_an_export_killed_with_its_worker_is_finished_by_arq_exactly_once(
    redis_server: RedisServer, start_emulator: StartEmulator, tmp_path: Path
) -> None:
    emu = await start_emulator(payroll_connections=20_000, latency=0.03, seed=8)
    target = tmp_path / "connections.jsonl"
    redis = await pool(redis_server)
    first = await start_worker(emu, redis_server.url)
    second = None
    try:
        await redis.enqueue_job(
            "export_collection", "payroll-connections", str(target), _job_id="export-1"
        )
        assert await checkpointed_items(target) < 20_000
        first.send_signal(signal.SIGKILL)  # the worker dies mid-export
        await first.wait()
        assert not target.exists()
        emu.latency = 0.0  # the pause was for the kill to land mid-export: the rest runs fast
        # arq runs an abandoned job again once its in-progress key expires, job_timeout
        # plus 10 s later (hard-coded in arq): the test moves Redis's time on for that key
        # instead of waiting for it.
        assert await redis.pexpire(in_progress_key_prefix + "export-1", 1)
        second = await start_worker(emu, redis_server.url)
        result = await Job("export-1", redis).result(timeout=120, poll_delay=0.2)
    finally:
        for process in (first, second):
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGKILL)
                await process.wait()
        await redis.aclose()
    assert result == 20_000
    ids = [json.loads(line)["id"] for line in target.read_text().splitlines()]
    assert len(ids) == 20_000
    assert len(set(ids)) == 20_000  # every item exactly once
    assert ids == [emu.data.payroll_connection(i)["id"] for i in range(20_000)]


async def test_per_employer_work_fans_out_over_the_fleet(
    redis_server: RedisServer, start_emulator: StartEmulator
) -> None:
    emu = await start_emulator(employer_identifiers=12, update_groups=3, seed=2)
    redis = await pool(redis_server)
    workers = [await start_worker(emu, redis_server.url) for _ in range(2)]
    try:
        job = await redis.enqueue_job("fan_out_update_groups")
        assert job is not None
        assert await job.result(timeout=60, poll_delay=0.2) == 12
        results = [
            await Job(f"update-groups-{emu.data.employer_id(i)}", redis).result(
                timeout=60, poll_delay=0.2
            )
            for i in range(12)
        ]
    finally:
        for process in workers:
            process.send_signal(signal.SIGTERM)
            await process.wait()
        await redis.aclose()
    assert all(isinstance(count, int) and 0 <= count <= 3 for count in results)
