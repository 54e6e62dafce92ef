"""examples/fleet_receiver.py under gunicorn with three aiohttp worker processes."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import aiohttp
import pytest

from payroll_async.events._signature import sign
from tests.fleet.conftest import RedisServer, _free_port

ROOT = Path(__file__).parents[2]
SECRET = "whsec_" + "c2VjcmV0LWZvci10aGUtZmxlZXQtZXhhbXBsZQ=="
OLD_SECRET = "whsec_" + "b2xkLXNlY3JldC1iZWluZy1yb3RhdGVkLW91dA=="


def payload(event_id: str) -> bytes:
    return json.dumps(
        {
            "eventId": event_id,
            "eventType": "PAYROLL_PROCESSED",
            "occurredAt": "2026-11-22T05:00:00Z",
            "data": {"payrollId": event_id},
        }
    ).encode()


async def test_the_fleet_receiver_example_handles_each_signed_event_once(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    pytest.importorskip("gunicorn")
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PAYROLL_WEBHOOK_SECRET": f"{SECRET},{OLD_SECRET}",
        "PAYROLL_REDIS_URL": redis_server.url,
        "PAYROLL_DEDUPE_KEY": f"hooks:{uuid.uuid4().hex}",
    }
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gunicorn",
        "examples.fleet_receiver:app_factory",
        "--worker-class",
        "aiohttp.GunicornWebWorker",
        "--workers",
        "3",
        "--bind",
        f"127.0.0.1:{port}",
        cwd=tmp_path,
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    assert server.stderr is not None
    log: list[str] = []

    async def read_log() -> None:
        assert server.stderr is not None
        while line := await server.stderr.readline():
            log.append(line.decode(errors="replace"))

    reader = asyncio.create_task(read_log())
    url = f"http://127.0.0.1:{port}/hooks"
    events = [f"evt-{n}" for n in range(40)]
    try:
        async with aiohttp.ClientSession() as session:

            async def deliver(event_id: str, secret: str = SECRET) -> int:
                body = payload(event_id)
                headers = sign(secret, event_id, int(time.time()), body)
                headers["Content-Type"] = "application/json"
                deadline = time.monotonic() + 60
                while True:
                    try:
                        async with session.post(url, data=body, headers=headers) as response:
                            if response.status not in (409, 503):
                                return response.status
                            assert response.headers["Retry-After"]
                    except aiohttp.ClientConnectionError:
                        pass  # the server is still starting
                    assert time.monotonic() < deadline, f"{event_id} never acknowledged"
                    await asyncio.sleep(0.05)  # a sender comes back (sooner than Retry-After)

            # every event three times at once (one of them signed with the old secret,
            # during a key rotation), then once more later
            answers = await asyncio.gather(
                *(
                    deliver(event_id, secret)
                    for event_id in events
                    for secret in (SECRET, SECRET, OLD_SECRET)
                )
            )
            assert answers == [200] * len(answers)
            assert [await deliver(event_id) for event_id in events[:10]] == [200] * 10
            forged = payload("forged")
            headers = sign(
                "whsec_" + "YSB3cm9uZyBrZXkgb2YgMjQgYnl0ZXMh", "forged", int(time.time()), forged
            )
            async with session.post(url, data=forged, headers=headers) as response:
                assert response.status == 401
    finally:
        server.send_signal(signal.SIGTERM)
        await asyncio.wait_for(server.wait(), 60)
        await reader
    text = "".join(log)
    booted = set(re.findall(r"Booting worker with pid: (\d+)", text))
    assert len(booted) >= 3, text
    handled = re.findall(r"(\d+) fleet_receiver: handled notification (\S+) ", text)
    assert Counter(event_id for _, event_id in handled) == Counter(events), text
    assert {pid for pid, _ in handled} <= booted
    assert "forged" not in {event_id for _, event_id in handled}
