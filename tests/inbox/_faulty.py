"""An inbox worker process that meets a fault: it dies, its event loop freezes, or its clock
is wrong.

``python tests/inbox/_faulty.py URL LEASE MAX_ATTEMPTS THAW SKEW`` prints ``{"ready": PID}``
once started, waits for a line ``go`` on stdin, then works the inbox at URL (concurrency 2)
until stdin closes (then finishes the events in hand and exits). Its handler prints
``{"started": ID}`` and, by the event id's start:

- ``crash``: ends the process at once (``os._exit(3)``), as the OOM killer or a segfault;
- ``freeze``: blocks the event loop (no await) until the file THAW exists; ``freeze-stop``
  then stops the worker before the handler returns (its last write is that outcome);
- anything else: prints ``{"handled": ID}``.

SKEW: seconds this process's clock is off (``datetime.datetime.now`` and ``time.time``),
as a machine whose clock is wrong; with a SKEW other than 0, the process first accepts an
event ``from-skewed`` into the inbox.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any


def skew_clock(seconds: float) -> None:
    """This process's wall clock ``seconds`` off, before anything reads it."""
    shift = datetime.timedelta(seconds=seconds)
    real = datetime.datetime

    class Skewed(real):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return real.now(tz) + shift

        @classmethod
        def utcnow(cls) -> Any:
            return real.now(datetime.timezone.utc).replace(tzinfo=None) + shift

    real_time, real_time_ns = time.time, time.time_ns
    datetime.datetime = Skewed  # type: ignore[misc]
    time.time = lambda: real_time() + seconds
    time.time_ns = lambda: real_time_ns() + int(seconds * 1e9)


def say(**what: str) -> None:
    print(json.dumps(what), flush=True)


async def main(url: str, lease: float, max_attempts: int, thaw: Path, skew: float) -> None:
    from payroll_async.events import EventRouter, WebhookEvent
    from payroll_async.inbox import Inbox
    from tests.inbox.conftest import notification

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    router = EventRouter(insecure=True)
    stop = asyncio.Event()

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        event_id = event.event_id or ""
        say(started=event_id)
        if event_id.startswith("crash"):
            os._exit(3)
        if event_id.startswith("freeze"):
            # the loop frozen on purpose: no renewal, no timer runs until THAW exists
            while not thaw.exists():  # noqa: ASYNC240
                time.sleep(0.01)  # noqa: ASYNC251
            if event_id.startswith("freeze-stop"):
                stop.set()  # before the loop runs again: it claims nothing more
        say(handled=event_id)

    options = {"lease": lease, "backoff": 0.05, "backoff_max": 0.1, "poll_interval": 0.02}
    async with Inbox(url, **options) as inbox:  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        say(ready=str(os.getpid()))
        if await reader.readline() != b"go\n":
            return
        if skew:
            body, _ = notification("from-skewed")
            event = WebhookEvent("PAYROLL_PROCESSED", "from-skewed", None, json.loads(body)["data"])
            await inbox.accept(event, body)
        worker = asyncio.create_task(
            inbox.run(router, concurrency=2, max_attempts=max_attempts, stop=stop)
        )
        await reader.read()  # until the test closes stdin
        stop.set()
        await worker


if __name__ == "__main__":
    url, lease, max_attempts, thaw, skew = sys.argv[1:]
    if float(skew):
        skew_clock(float(skew))
    asyncio.run(main(url, float(lease), int(max_attempts), Path(thaw), float(skew)))
