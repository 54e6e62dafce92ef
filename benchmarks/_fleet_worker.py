"""One worker of benchmarks/fleet.py: COUNT one-item listings, four in flight at a time.

``python benchmarks/_fleet_worker.py BASE TOKEN MODE REDIS_URL KEY RATE COUNT`` prints a
JSON line with when it started and ended sending (wall clock). MODE: ``local`` (its own
gate), ``redis`` (a shared RedisGate); RATE: requests per second for the fleet, or ``none``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time


async def main(argv: list[str]) -> None:
    from redis.asyncio import Redis

    from payroll_async import PayrollClient, RetryPolicy
    from payroll_async.fleet import RedisGate

    base, token, mode, redis_url, key, rate_text, count_text = argv
    rate = None if rate_text == "none" else float(rate_text)
    left = int(count_text)
    async with Redis.from_url(redis_url) as redis:
        gate = RedisGate(redis, key=key, rate=rate) if mode == "redis" else None
        retry = RetryPolicy(max_attempts=50, backoff_max=2.0, max_retry_after=10)
        async with PayrollClient(base, token, gate=gate, retry=retry) as client:
            started = time.time()  # wall clock: the fleet's span is taken across processes

            async def loop() -> None:
                nonlocal left
                while left > 0:
                    left -= 1
                    await client.payroll_connections.list(page_size=1, max_items=1).collect()

            await asyncio.gather(*(loop() for _ in range(4)))
            ended = time.time()
    print(json.dumps({"started": started, "ended": ended}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
