"""One receiver process of the fleet tests: an EventRouter with RedisDedupe on a port.

``python tests/fleet/_receiver.py REDIS_URL KEY LEASE HANDLED_FILE HOLD TIMEOUT`` prints
``{"port": N}``, then serves POST /hooks. LEASE and TIMEOUT are RedisDedupe's ``lease`` and
``timeout`` (the longest one Redis call may take). Every handled event is appended to HANDLED_FILE
as ``EVENT_ID PID``. With HOLD ``1``, the handler of an event whose id starts with
``hold`` prints ``{"started": ID}`` and waits for a line ``release ID`` on stdin (forever,
if none comes: the test kills the process).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys


async def main(argv: list[str]) -> None:
    from aiohttp import web
    from redis.asyncio import Redis

    from payroll_async.events import EventRouter, WebhookEvent, header_secret
    from payroll_async.fleet import RedisDedupe

    redis_url, key, lease, handled_file, hold, timeout = argv
    released: dict[str, asyncio.Event] = {}
    redis = Redis.from_url(redis_url)
    router = EventRouter(
        verify=header_secret("X-Test-Secret", "fleet"),
        dedupe=RedisDedupe(redis, key=key, lease=float(lease), timeout=float(timeout)),
    )
    fd = os.open(handled_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    @router.on()
    async def record(event: WebhookEvent) -> None:
        event_id = event.event_id or ""
        if hold == "1" and event_id.startswith("hold"):
            print(json.dumps({"started": event_id}), flush=True)
            await released.setdefault(event_id, asyncio.Event()).wait()
        os.write(fd, f"{event_id} {os.getpid()}\n".encode())

    async def read_commands() -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            command, _, event_id = line.decode().strip().partition(" ")
            if command == "release":
                released.setdefault(event_id, asyncio.Event()).set()

    runner = web.AppRunner(router.app(path="/hooks"))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(json.dumps({"port": runner.addresses[0][1]}), flush=True)
    try:
        await read_commands()  # until stdin closes: then the test is done with this process
    finally:
        await runner.cleanup()
        await redis.aclose()
        os.close(fd)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
