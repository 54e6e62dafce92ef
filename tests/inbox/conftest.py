"""The inbox's databases: SQLite files, and the mirror tests' PostgreSQL (pgserver).

The databases are the suite's (``tests/_postgres.py``), shared rather than copied: ``into``
runs a test on both databases, ``postgres_server`` can be restarted.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from payroll_async.events import sign
from payroll_async.inbox import Inbox
from tests._postgres import PostgresServer
from tests.cli._run import ROOT

__all__ = ["FAST", "SECRET", "PostgresServer", "notification", "open_inbox", "script"]

FAST = {"lease": 2.0, "backoff": 0.05, "backoff_max": 0.2, "poll_interval": 0.02}
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def notification(event_id: str, **data: object) -> tuple[bytes, dict[str, str]]:
    """A signed notification's body and headers."""
    body = json.dumps(
        {
            "eventId": event_id,
            "eventType": "PAYROLL_PROCESSED",
            "occurredAt": "2026-11-22T05:00:00Z",
            "data": {"payrollId": event_id, **data},
        }
    ).encode()
    return body, {
        **sign(SECRET, event_id, int(time.time()), body),
        "Content-Type": "application/json",
    }


async def script(path: Path, *args: str, stderr: Any) -> asyncio.subprocess.Process:
    """``python PATH ARGS...`` of this checkout, its stdin and stdout piped."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(path),
        *args,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
    )


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    """Return once the database state ``condition()`` reads holds (looked at every 20 ms)."""
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError("the inbox did not reach the state waited for")
        await asyncio.sleep(0.02)


@pytest.fixture
async def open_inbox(into: str) -> AsyncIterator[Callable[..., Inbox]]:
    """Inboxes on ``into`` (each its own engine, as another process's); closed after."""
    opened: list[Inbox] = []

    def make(**options: Any) -> Inbox:
        inbox = Inbox(into, **{**FAST, **options})
        opened.append(inbox)
        return inbox

    yield make
    for inbox in opened:
        await inbox.close()
