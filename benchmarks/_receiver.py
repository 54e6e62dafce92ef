"""One receiver process of benchmarks/fleet_receivers.py.

``python benchmarks/_receiver.py SECRET MODE REDIS_URL KEY HANDLED_FILE`` serves POST
/hooks on a free loopback port, prints ``PORT N``, and appends every handled event's id
to HANDLED_FILE. MODE: ``redis`` (RedisDedupe on REDIS_URL and KEY) or ``local`` (the
router's in-process memory). Runs until stdin closes.
"""

from __future__ import annotations

import asyncio
import os
import sys


async def main(argv: list[str]) -> None:
    from aiohttp import web
    from redis.asyncio import Redis

    from payroll_async.events import EventRouter, WebhookEvent
    from payroll_async.fleet import RedisDedupe

    secret, mode, redis_url, key, handled_file = argv
    redis = Redis.from_url(redis_url)
    dedupe = RedisDedupe(redis, key=key) if mode == "redis" else None
    router = EventRouter(secret=secret, dedupe=dedupe)
    fd = os.open(handled_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    @router.on()
    async def record(event: WebhookEvent) -> None:
        os.write(fd, f"{event.event_id}\n".encode())

    runner = web.AppRunner(router.app(path="/hooks"), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    print(f"PORT {runner.addresses[0][1]}", flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    await reader.read()
    await runner.cleanup()
    await redis.aclose()
    os.close(fd)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
