"""One process of benchmarks/receiver.py: a receiver, or an inbox worker.

``python benchmarks/_inbox_process.py receiver SECRET URL`` serves POST /hooks on a free
loopback port and prints ``PORT N``; URL ``bare`` is a router that only verifies and
answers (no dedupe memory, a handler that does nothing), else notifications go into the
inbox at URL. ``python benchmarks/_inbox_process.py worker URL CONCURRENCY`` prints
``READY``, waits for a line ``go``, then works the inbox with a handler that does
nothing. Both run until stdin closes.
"""

from __future__ import annotations

import asyncio
import sys


async def main(argv: list[str]) -> None:
    from aiohttp import web

    from payroll_async.events import EventRouter, WebhookEvent
    from payroll_async.inbox import Inbox

    async def nothing(event: WebhookEvent) -> None:
        pass

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    if argv[0] == "receiver":
        secret, url = argv[1:]
        inbox = None if url == "bare" else Inbox(url)
        router = EventRouter(secret=secret, dedupe_window=0, inbox=inbox)
        router.on()(nothing)
        runner = web.AppRunner(router.app(path="/hooks"), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        print(f"PORT {runner.addresses[0][1]}", flush=True)
        await reader.read()
        await runner.cleanup()
        if inbox is not None:
            await inbox.close()
        return
    url, concurrency = argv[1:]
    router = EventRouter(insecure=True)
    router.on()(nothing)
    stop = asyncio.Event()
    async with Inbox(url, poll_interval=0.05) as inbox:
        print("READY", flush=True)
        if await reader.readline() != b"go\n":
            return
        worker = asyncio.create_task(inbox.run(router, concurrency=int(concurrency), stop=stop))
        await reader.read()
        stop.set()
        await worker


if __name__ == "__main__":
    import logging

    logging.disable(logging.WARNING)  # EventRouter(insecure=True) of a worker says so
    asyncio.run(main(sys.argv[1:]))
