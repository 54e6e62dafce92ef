"""One worker process of the fleet tests: sends requests through a gate for a while.

``python tests/fleet/_worker.py BASE TOKEN GATE REDIS_URL KEY RATE SECONDS`` sends one-item
listings, four at a time, for SECONDS and prints a JSON line with
how many it sent. GATE is ``local`` (the process's own gate) or ``redis``; RATE is
requests per second for the fleet, or ``none``.

Each of the four sends at most one request every ``PACE`` seconds (80 a second for the
process): what the tests look at is when requests arrive, not how many a process can
send, and four processes sending as fast as they can kept both cores busy for their
whole run.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

PACE = 0.05


async def main(argv: list[str]) -> None:
    from redis.asyncio import Redis

    from payroll_async import PayrollClient, RetryPolicy
    from payroll_async.fleet import RedisGate

    base, token, kind, redis_url, key, rate_text, seconds = argv
    rate = None if rate_text == "none" else float(rate_text)
    redis = Redis.from_url(redis_url)
    gate = RedisGate(redis, key=key, rate=rate) if kind == "redis" else None
    sent = 0
    async with PayrollClient(
        base, token, gate=gate, retry=RetryPolicy(max_attempts=20, max_retry_after=10)
    ) as client:
        deadline = time.monotonic() + float(seconds)

        async def loop() -> None:
            nonlocal sent
            while time.monotonic() < deadline:
                paced = asyncio.create_task(asyncio.sleep(PACE))
                await client.payroll_connections.list(page_size=1, max_items=1).collect()
                sent += 1
                await paced

        await asyncio.gather(*(loop() for _ in range(4)))  # 4 requests in flight at a time
    await redis.aclose()
    print(json.dumps({"sent": sent}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
