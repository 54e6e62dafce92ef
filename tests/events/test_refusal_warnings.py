"""Why a notification was refused is seen without configuring logging, once per cause per
sender; with logging configured it goes there only, never twice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

_SCRIPT = """
import asyncio, json, logging, sys, time
from payroll_async.events import EventRouter, sign

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
WRONG = "whsec_YW5vdGhlciBrZXkgb2YgMjQgYnl0ZXMh"
if sys.argv[1] == "configured":
    logging.basicConfig(format="APP %(levelname)s %(message)s")

async def main():
    router = EventRouter(secret=SECRET)
    body = json.dumps({"eventId": "e-1", "eventType": "PAYROLL_PROCESSED"}).encode()
    forged = sign(WRONG, "e-1", int(time.time()), body)
    for sender in ("203.0.113.9", "203.0.113.9", "203.0.113.9", "198.51.100.7"):
        assert (await router.receive(body, forged, remote=sender)).status == 401
    assert (await router.receive(b"{}", {}, remote="203.0.113.9")).status == 401
    assert (await router.receive(b"{}", {}, remote="203.0.113.9")).status == 401

asyncio.run(main())
"""


def _stderr(mode: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, mode],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    return done.stderr.splitlines()


@pytest.mark.parametrize(
    ("mode", "prefix"),
    [("unconfigured", "payroll_async.events WARNING: "), ("configured", "APP WARNING ")],
)
def test_each_cause_from_each_sender_is_one_warning_seen_by_default(mode: str, prefix: str) -> None:
    later = " (the same refusal from this sender again is logged at DEBUG)"
    assert _stderr(mode) == [
        f"{prefix}rejected a notification from {sender} that failed verification: {why}{later}"
        for sender, why in (
            ("203.0.113.9", "no signature matches"),
            ("198.51.100.7", "no signature matches"),
            ("203.0.113.9", "missing webhook-id, webhook-timestamp or webhook-signature"),
        )
    ]
