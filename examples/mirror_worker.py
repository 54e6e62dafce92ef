"""Every collection mirrored into PostgreSQL on a schedule, by a fleet of arq workers.

Run a worker (as many as you like; the database's run lock makes them take turns):

    PAYROLL_BASE_URL=... PAYROLL_TOKEN=... PAYROLL_REDIS_URL=redis://localhost:6379 \\
    PAYROLL_MIRROR_URL=postgresql://mirror:PASSWORD@db/payroll \\
        arq examples.mirror_worker.WorkerSettings

Every ``PAYROLL_MIRROR_EVERY`` minutes (default 15) one worker runs ``mirror_all``: each
collection in turn, into the database, with every change in ``mirror_changes``. Each
worker process makes one PayrollClient when it starts, with a RedisGate on arq's own
Redis, so that the mirror shares the fleet's 429 pause and (``PAYROLL_RATE``) its budget
of requests per second with every other job. A mirror killed with its worker leaves the
database consistent; the next run finishes the work. Enqueue a run now with:

    await redis.enqueue_job("mirror_all")
"""

from __future__ import annotations

import logging
import os
from typing import Any, ClassVar

from arq import cron
from arq.connections import RedisSettings

from payroll_async import PayrollClient
from payroll_async.fleet import RedisGate, default_key
from payroll_async.mirror import COLLECTIONS, mirror

REDIS_URL = os.environ.get("PAYROLL_REDIS_URL", "redis://localhost:6379")
RATE = float(os.environ["PAYROLL_RATE"]) if os.environ.get("PAYROLL_RATE") else None
EVERY = int(os.environ.get("PAYROLL_MIRROR_EVERY", "15"))  # minutes, a divisor of 60

logger = logging.getLogger(__name__)


async def startup(ctx: dict[str, Any]) -> None:
    """One client per worker process, its gate on arq's own Redis connection."""
    base_url = os.environ["PAYROLL_BASE_URL"]
    gate = RedisGate(ctx["redis"], key=default_key(base_url), rate=RATE)
    ctx["client"] = PayrollClient(base_url, os.environ["PAYROLL_TOKEN"], gate=gate)


async def shutdown(ctx: dict[str, Any]) -> None:
    await ctx["client"].close()


async def mirror_all(ctx: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Mirror every collection (update groups: every employer's); what each run did."""
    done: dict[str, dict[str, Any]] = {}
    for collection in COLLECTIONS:
        # wait=True: a run of the same collection elsewhere in the fleet is waited for,
        # never interleaved with. PAYROLL_MIRROR_URL is the database.
        result = await mirror(ctx["client"], collection, wait=True)
        logger.info("mirrored %s: %s", collection, result)
        done[collection] = {
            "items": result.items,
            "inserted": result.inserted,
            "updated": result.updated,
            "deleted": result.deleted,
            "complete": result.complete,
        }
    return done


class WorkerSettings:
    """``arq examples.mirror_worker.WorkerSettings``."""

    functions: ClassVar = [mirror_all]
    cron_jobs: ClassVar = [
        cron(mirror_all, minute=set(range(0, 60, EVERY)), unique=True, timeout=3600)
    ]
    on_startup = startup
    on_shutdown = shutdown
    redis_settings = RedisSettings.from_dsn(REDIS_URL)
