"""payroll-async webhooks listen: a local receiver that prints each event."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from payroll_async.events import sign
from tests.cli._run import invoke, start

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


_started: list[asyncio.subprocess.Process] = []


@pytest.fixture(autouse=True)
async def _no_listener_left() -> AsyncIterator[None]:
    """A test that fails half-way leaves no ``listen`` process running."""
    yield
    while _started:
        proc = _started.pop()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def listen(
    *args: str, env: dict[str, str | None] | None = None
) -> asyncio.subprocess.Process:
    proc = await start(
        None, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _started.append(proc)
    return proc


async def test_with_the_emulator_it_subscribes_itself_and_prints_emitted_events() -> None:
    proc = await listen(
        "--emulator",
        "webhooks",
        "listen",
        "--port",
        "0",
        "--interval",
        "0.05",
        "--count",
        "5",
        "--json",
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    events = [json.loads(line) for line in out.decode().splitlines()]
    assert [e["eventType"] for e in events] == [
        "PAYROLL_PROCESSED",
        "UPDATE_GROUP_PROCESSED",
        "EMPLOYEE_CENSUS_HIRED",
        "EMPLOYEE_CENSUS_UPDATED",
        "EMPLOYEE_CENSUS_TERMINATED",
    ]
    assert len({e["eventId"] for e in events}) == 5
    assert "payrollId" in events[0]["data"]
    messages = err.decode()
    assert "Subscribed" in messages
    assert messages.rstrip().endswith("Stopped after 5 events.")


async def test_it_prints_what_arrives_and_stops_on_ctrl_c() -> None:
    proc = await listen("webhooks", "listen", "--port", "0", "--path", "/in", "--secret", SECRET)
    assert proc.stderr is not None
    assert proc.stdout is not None
    first = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
    assert first.startswith("Listening for webhook notifications on http://127.0.0.1:")
    url = first.split(" on ")[1].split()[0]
    assert url.endswith("/in")
    async with aiohttp.ClientSession() as session:
        event = {
            "eventId": "e-1",
            "eventType": "PAYROLL_PROCESSED",
            "occurredAt": "2026-11-22T05:00:00Z",
            "data": {"payrollId": "p-7"},
        }
        body = json.dumps(event).encode()
        headers = sign(SECRET, "e-1", int(time.time()), body)
        async with session.post(url, data=body, headers=headers) as response:
            assert response.status == 200
        async with session.post(url, data=b"nope") as response:
            assert response.status == 401  # unsigned: refused before it is read as JSON
        headers = sign(SECRET, "e-2", int(time.time()), b"nope")
        async with session.post(url, data=b"nope", headers=headers) as response:
            assert response.status == 400
    line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
    assert line.split() == ["05:00:00", "PAYROLL_PROCESSED", "e-1", '{"payrollId":', '"p-7"}']
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 130  # Ctrl-C, as the exit-code table of docs/command.md says
    assert err.decode().rstrip().endswith("Stopped after 1 event.")
    assert b"Traceback" not in err


async def test_with_the_emulator_and_a_secret_both_sides_use_that_secret() -> None:
    proc = await listen(
        "--emulator",
        "webhooks",
        "listen",
        "--port",
        "0",
        "--interval",
        "0.05",
        "--count",
        "2",
        "--json",
        "--secret",
        SECRET,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert len(out.decode().splitlines()) == 2  # signed with SECRET, verified with SECRET


@pytest.mark.parametrize(
    ("options", "log"), [((), None), (("-v",), "debug")], ids=["default", "verbose-and-env"]
)
async def test_a_rejected_notification_is_one_warning_line_on_the_console(
    options: tuple[str, ...], log: str | None
) -> None:
    wrong = "whsec_YW5vdGhlciBrZXkgb2YgMjQgYnl0ZXMh"  # the sender's: not the listener's
    command = ("webhooks", "listen", "--port", "0", "--secret", SECRET)
    proc = await listen(*options, *command, env={"PAYROLL_LOG": log})
    assert proc.stderr is not None
    line = b""
    while b"Listening" not in line:
        line = await asyncio.wait_for(proc.stderr.readline(), 30)
        assert line, "the command stopped before it listened"
    url = line.decode().split(" on ")[1].split()[0]
    body = json.dumps({"eventId": "e-1", "eventType": "PAYROLL_PROCESSED"}).encode()
    async with aiohttp.ClientSession() as session:
        headers = sign(wrong, "e-1", int(time.time()), body)
        for _ in range(3):  # the sender delivers it again, and again
            async with session.post(url, data=body, headers=headers) as response:
                assert response.status == 401
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    rejected = [ln for ln in err.decode().splitlines() if "rejected" in ln]
    warned = [ln for ln in rejected if "WARNING" in ln]
    assert len(warned) == 1, rejected  # once per cause and sender, in one format
    assert len(rejected) == (3 if options else 1), rejected  # -v: the repeats at DEBUG
    assert "from 127.0.0.1" in warned[0]
    assert "no signature matches" in warned[0]
    assert "check --secret (or PAYROLL_WEBHOOK_SECRET)" in warned[0]
    for secret in (SECRET, wrong):
        assert secret.removeprefix("whsec_") not in err.decode()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--secret", "whxx_c2VjcmV0"), "unknown webhook key prefix 'whxx_'"),
        (("--secret", "whpk_c2hvcnQ="), "32-byte Ed25519 public key"),
        (("--secret", "whsk_" + "A" * 43 + "="), "give the receiver its 'whpk_' public key"),
        (("--secret", "notasecret"), "--secret: a webhook secret is 'whsec_' followed by"),
        (("--secret", "whsec_hunter2"), "at least 16 random bytes"),
    ],
    ids=["unknown-prefix", "short-whpk", "whsk", "junk", "short-whsec"],
)
def test_a_bad_key_exits_2_before_anything_is_served(args: tuple[str, ...], says: str) -> None:
    result = invoke(None, "webhooks", "listen", "--port", "0", *args)
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert "Listening" not in result.output


def test_with_the_emulator_a_public_key_cannot_sign() -> None:
    result = invoke(None, "--emulator", "webhooks", "listen", "--secret", "whpk_" + "A" * 43 + "=")
    assert result.exit_code == 2, result.output
    assert "cannot sign" in result.output
