"""One inbox worker process of the fleet test, with handlers that fail at random.

``python tests/inbox/_worker.py URL HANDLED_FILE CONCURRENCY HOLD [LEASE]`` prints
``{"ready": PID}`` once started, waits for a line ``go`` on stdin, then works the inbox at
URL until stdin closes (then finishes the events in hand and exits). A handler that
succeeds appends ``EVENT_ID PID`` to HANDLED_FILE. Handlers fail at random (30%), and
always for an id ending in ``00``, with ``RuntimeError("flaky handler failed for ID")``.
With HOLD ``1``, the handler of an event whose id starts with ``hold`` prints
``{"started": ID}`` and waits forever (the test kills the process). LEASE is the inbox's
lease in seconds (default ``LEASE``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import sys

LEASE = 10.0  # longer than the database's restart, so that no outcome is lost to it
MAX_ATTEMPTS = 4
FAIL_RATE = 0.3


async def main(argv: list[str]) -> None:
    from payroll_async.events import EventRouter, WebhookEvent
    from payroll_async.inbox import Inbox

    url, handled_file, concurrency, hold, *lease = argv
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    fd = os.open(handled_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    router = EventRouter(insecure=True)

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        event_id = event.event_id or ""
        if hold == "1" and event_id.startswith("hold"):
            print(json.dumps({"started": event_id}), flush=True)
            await asyncio.Event().wait()
        await asyncio.sleep(random.random() * 0.005)  # some work
        if event_id.endswith("00") or random.random() < FAIL_RATE:
            raise RuntimeError(f"flaky handler failed for {event_id}")
        os.write(fd, f"{event_id} {os.getpid()}\n".encode())

    stop = asyncio.Event()
    claim = float(lease[0]) if lease else LEASE
    async with Inbox(url, lease=claim, backoff=0.05, backoff_max=0.3, poll_interval=0.05) as inbox:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        print(json.dumps({"ready": os.getpid()}), flush=True)
        if await reader.readline() != b"go\n":
            return
        worker = asyncio.create_task(
            inbox.run(router, concurrency=int(concurrency), max_attempts=MAX_ATTEMPTS, stop=stop)
        )
        await reader.read()  # until the test closes stdin
        stop.set()
        await worker
    os.close(fd)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
