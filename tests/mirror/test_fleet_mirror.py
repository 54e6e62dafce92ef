"""examples/mirror_worker.py run by a real arq worker on a real redis-server, mirroring
every collection into a real PostgreSQL through the fleet's RedisGate."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from arq import create_pool
from arq.connections import RedisSettings
from arq.jobs import Job

from payroll_async.fleet import default_key
from tests._postgres import query
from tests.conftest import StartEmulator
from tests.fleet.conftest import RedisServer, redis_server  # noqa: F401 (the fixture)

ROOT = Path(__file__).parents[2]


async def test_the_arq_job_mirrors_every_collection_into_postgres(
    redis_server: RedisServer,  # noqa: F811 (the fixture imported above)
    start_emulator: StartEmulator,
    postgres_url: str,
) -> None:
    from examples.mirror_worker import WorkerSettings, mirror_all

    assert [job.coroutine for job in WorkerSettings.cron_jobs] == [mirror_all]
    emu = await start_emulator(
        seed=13, payroll_connections=900, employer_identifiers=12, update_groups=3
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PAYROLL_BASE_URL": emu.base_url,
        "PAYROLL_TOKEN": emu.token,
        "PAYROLL_REDIS_URL": redis_server.url,
        "PAYROLL_MIRROR_URL": postgres_url,
        "PAYROLL_RATE": "1000",  # so that the shared gate keeps its budget in Redis
    }
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "arq",
        "examples.mirror_worker.WorkerSettings",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    redis = await create_pool(RedisSettings.from_dsn(redis_server.url))
    try:
        await redis.enqueue_job("mirror_all", _job_id="mirror-1")
        first = await Job("mirror-1", redis).result(timeout=120, poll_delay=0.1)
        churn = emu.churn("payroll-connections", inserted=3, updated=4, deleted=5)
        await redis.enqueue_job("mirror_all", _job_id="mirror-2")
        second = await Job("mirror-2", redis).result(timeout=120, poll_delay=0.1)
        gate_keys = await redis.keys(f"{default_key(emu.base_url)}:*")
    finally:
        worker.terminate()
        await worker.wait()
        await redis.aclose()
    assert {name: run["inserted"] for name, run in first.items()} == {
        "payroll-connections": 900,
        "employer-identifiers": 12,
        "webhooks": 3,
        "update-groups": 36,
    }
    assert all(run["complete"] for run in (*first.values(), *second.values()))
    assert second["payroll-connections"] == {
        "items": 898,
        "inserted": 3,
        "updated": 4,
        "deleted": 5,
        "complete": True,
    }
    assert gate_keys  # the requests went through the fleet's RedisGate
    runs = await query(postgres_url, "SELECT count(*) FROM mirror_runs WHERE complete")
    assert runs == [(8,)]
    deleted = await query(
        postgres_url,
        "SELECT item_id FROM mirror_changes WHERE change = 'deleted'",
    )
    assert {str(row[0]) for row in deleted} == set(churn.deleted)
