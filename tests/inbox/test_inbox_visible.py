"""A failing handler's event is seen without configuring logging (in a script, under
uvicorn), as the receiver's refusals are, scrubbed of secrets as the stored error is; with
logging configured it goes there only, never twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from .conftest import SECRET, script

_SCRIPT = """
import asyncio, json, logging, sys
from payroll_async.events import EventRouter, WebhookEvent
from payroll_async.inbox import Inbox

SECRET = sys.argv[3]
if sys.argv[1] == "configured":
    logging.basicConfig(format="APP %(levelname)s %(message)s")

async def main():
    async with Inbox(sys.argv[2], backoff=0.01, backoff_max=0.01, poll_interval=0.01) as inbox:
        router = EventRouter(secret=SECRET, inbox=inbox)

        @router.on()
        async def handle(event: WebhookEvent) -> None:
            raise RuntimeError(f"the partner refused {SECRET}")

        body = json.dumps({"eventId": "evt-1", "eventType": "PAYROLL_PROCESSED"}).encode()
        await inbox.accept(WebhookEvent("PAYROLL_PROCESSED", "evt-1", None, {}), body)
        stop = asyncio.Event()
        worker = asyncio.create_task(inbox.run(router, max_attempts=2, stop=stop))
        while (await inbox.stats()).dead == 0:
            await asyncio.sleep(0.01)
        stop.set()
        await worker

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("mode", "prefix"),
    [("unconfigured", "payroll_async.inbox WARNING: "), ("configured", "APP WARNING ")],
)
async def test_a_failing_handlers_event_is_seen_without_logging_configured_and_scrubbed(
    mode: str, prefix: str, tmp_path: Path
) -> None:
    program = tmp_path / "program.py"
    program.write_text(_SCRIPT)
    url = f"sqlite:///{tmp_path / 'inbox.db'}"
    process = await script(program, mode, url, SECRET, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    error = "RuntimeError: the partner refused ***"
    assert err.decode().splitlines() == [
        f"{prefix}a handler of event evt-1 failed (attempt 1 of 2): {error}",
        f"{prefix}a handler of event evt-1 failed (attempt 2 of 2, now dead): {error}",
    ]
