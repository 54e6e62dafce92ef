"""A fleet of webhook receivers: several worker processes, one memory of handled events.

Run it with as many worker processes as you like (here gunicorn's aiohttp worker; any
process manager that runs several copies behind one port or load balancer works):

    PAYROLL_WEBHOOK_SECRET=whsec_... PAYROLL_REDIS_URL=redis://localhost:6379 \\
        gunicorn examples.fleet_receiver:app_factory \\
        --worker-class aiohttp.GunicornWebWorker --workers 3 --bind 0.0.0.0:8080

and subscribe ``https://your-host/hooks``. Every worker checks the Standard Webhooks
signature with ``PAYROLL_WEBHOOK_SECRET`` (a comma-separated list during a key rotation)
and shares one memory of handled events on ``PAYROLL_REDIS_URL`` under
``PAYROLL_DEDUPE_KEY``, so a notification is handled once by the fleet however often it
is delivered and whichever worker gets it. What the sender is answered:

- 200: handled now, or handled before by any worker (the handlers did not run again);
- 401: the signature or its timestamp is wrong; nothing ran;
- 409 with Retry-After: another worker is handling this event right now;
- 503 with Retry-After: Redis cannot be reached, or the handlers took too long;
- 500: a handler failed; a redelivery runs it again.
"""

from __future__ import annotations

import logging
import os

from aiohttp import web
from redis.asyncio import Redis

from payroll_async import EventType
from payroll_async.events import EventRouter, WebhookEvent
from payroll_async.fleet import RedisDedupe

logger = logging.getLogger("fleet_receiver")


async def on_payroll(event: WebhookEvent) -> None:
    # Your work goes here: it runs once per event for the whole fleet. Log ids, not the
    # payroll data itself.
    logger.info("handled notification %s (%s)", event.event_id, event.event_type)


async def app_factory() -> web.Application:
    """One worker's application (gunicorn's aiohttp worker awaits this in each process)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(process)d %(name)s: %(message)s")
    secrets = [s.strip() for s in os.environ["PAYROLL_WEBHOOK_SECRET"].split(",") if s.strip()]
    redis = Redis.from_url(os.environ.get("PAYROLL_REDIS_URL", "redis://localhost:6379"))
    router = EventRouter(
        secret=secrets,
        dedupe=RedisDedupe(
            redis, key=os.environ.get("PAYROLL_DEDUPE_KEY", "payroll:hooks"), window=86400
        ),
    )
    router.on(EventType.PAYROLL_PROCESSED, EventType.EMPLOYEE_CENSUS_HIRED)(on_payroll)
    app = router.app(path="/hooks")

    async def close_redis(app: web.Application) -> None:
        await redis.aclose()

    app.on_cleanup.append(close_redis)
    return app
