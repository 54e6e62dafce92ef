"""Bulk exports and per-employer work as arq jobs, with the fleet sharing one rate limit.

Run a worker (as many as you like, on as many machines):

    PAYROLL_BASE_URL=... PAYROLL_TOKEN=... PAYROLL_REDIS_URL=redis://localhost:6379 \\
        arq examples.arq_worker.WorkerSettings

and enqueue jobs from anywhere:

    from arq import create_pool
    redis = await create_pool(WorkerSettings.redis_settings)
    await redis.enqueue_job("export_collection", "payroll-connections", "/data/connections.jsonl",
                            _job_id="export-connections")
    await redis.enqueue_job("fan_out_update_groups")

Each worker process makes one PayrollClient when it starts, with a RedisGate on arq's own
Redis: every process shares one 429 pause and, with PAYROLL_RATE, one budget of requests
per second. An export job resumes from its checkpoint, so when a worker dies mid-export
and arq runs the job again (on this worker or another, PAYROLL_JOB_TIMEOUT plus ten
seconds after it started) the file ends with every item exactly once. The file must be on
storage every worker can reach.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from arq.connections import RedisSettings

from payroll_async import PayrollClient
from payroll_async.export import export_to_file
from payroll_async.fleet import RedisGate, default_key

REDIS_URL = os.environ.get("PAYROLL_REDIS_URL", "redis://localhost:6379")
RATE = float(os.environ["PAYROLL_RATE"]) if os.environ.get("PAYROLL_RATE") else None
# Seconds a job may run. arq runs a job whose worker died again this long plus 10 s after
# it started, so keep it near what an export takes.
JOB_TIMEOUT = float(os.environ.get("PAYROLL_JOB_TIMEOUT", "3600"))


async def startup(ctx: dict[str, Any]) -> None:
    """One client per worker process, its gate on arq's own Redis connection."""
    base_url = os.environ["PAYROLL_BASE_URL"]
    gate = RedisGate(ctx["redis"], key=default_key(base_url), rate=RATE)
    ctx["client"] = PayrollClient(base_url, os.environ["PAYROLL_TOKEN"], gate=gate)


async def shutdown(ctx: dict[str, Any]) -> None:
    await ctx["client"].close()


async def export_collection(ctx: dict[str, Any], collection: str, path: str) -> int:
    """Export a collection to ``path``, resuming an export a dead worker left behind."""
    client: PayrollClient = ctx["client"]
    listings = {
        "payroll-connections": client.payroll_connections.list,
        "employer-identifiers": client.employer_identifiers.list,
        "webhooks": client.webhooks.list,
    }
    result = await export_to_file(listings[collection](), path, resume=True)
    return result.items


async def employer_update_groups(ctx: dict[str, Any], employer_id: str) -> int:
    """The per-employer work: here, count the employer's update groups with errors."""
    client: PayrollClient = ctx["client"]
    groups = client.employer_identifiers.update_groups.list(employer_id)
    return len([group async for group in groups if group.error_count])


async def fan_out_update_groups(ctx: dict[str, Any]) -> int:
    """One job per employer identifier, spread over the fleet; how many were enqueued."""
    client: PayrollClient = ctx["client"]
    count = 0
    async for employer in client.employer_identifiers.list():
        await ctx["redis"].enqueue_job(
            "employer_update_groups", str(employer.id), _job_id=f"update-groups-{employer.id}"
        )
        count += 1
    return count


class WorkerSettings:
    """``arq examples.arq_worker.WorkerSettings``."""

    functions: ClassVar = [export_collection, employer_update_groups, fan_out_update_groups]
    job_timeout = JOB_TIMEOUT
    on_startup = startup
    on_shutdown = shutdown
    redis_settings = RedisSettings.from_dsn(REDIS_URL)
