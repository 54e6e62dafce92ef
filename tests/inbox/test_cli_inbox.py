"""payroll-async inbox run|list|retry|purge, and webhooks listen --inbox, on SQLite."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest

from payroll_async.events import EventRouter, WebhookEvent
from payroll_async.inbox import Inbox
from tests._postgres import query
from tests.cli._run import invoke, start

from .conftest import SECRET, notification
from .test_inbox import FAST, event, fill, work_until

pytestmark = pytest.mark.slow  # the command's receivers served, one as a process


async def _prepare(url: str) -> None:
    """evt-1 and evt-2 done, evt-bad dead, evt-new pending."""
    async with Inbox(url, **FAST) as inbox:  # type: ignore[arg-type]
        await fill(inbox, "evt-1", "evt-2", "evt-bad")
        router = EventRouter(insecure=True)

        @router.on()
        async def handle(event: WebhookEvent) -> None:
            if event.event_id == "evt-bad":
                raise RuntimeError("the ledger is down \x1b[2J")

        await work_until(inbox, router, lambda s: s.pending == 0, max_attempts=1)
        await fill(inbox, "evt-new")


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'inbox.db'}"
    asyncio.run(_prepare(url))
    return url


def test_list_shows_each_status_and_the_counts(url: str) -> None:
    result = invoke(None, "inbox", "list", "--into", url, "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert {line["eventId"]: line["status"] for line in lines} == {
        "evt-1": "done",
        "evt-2": "done",
        "evt-bad": "dead",
        "evt-new": "pending",
    }
    assert "1 pending (0 retrying), 2 done, 1 dead" in result.stderr
    table = invoke(None, "inbox", "list", "--into", url, "--status", "dead")
    assert table.exit_code == 0
    assert "evt-bad" in table.stdout
    assert "evt-1" not in table.stdout
    assert "RuntimeError: the ledger is down" in table.stdout
    assert "\x1b" not in table.stdout  # a handler's error is outside text


def test_retry_puts_dead_events_back_and_replays_a_done_one(url: str) -> None:
    result = invoke(None, "inbox", "retry", "--into", url, "--dead")
    assert result.exit_code == 0, result.output
    assert "1 event back to pending" in result.stderr
    assert invoke(None, "inbox", "retry", "--into", url, "evt-1").exit_code == 0
    missing = invoke(None, "inbox", "retry", "--into", url, "evt-unknown")
    assert missing.exit_code == 2  # bad input, as an unknown --employer or option is
    assert missing.stderr == f"error: no done or dead event evt-unknown in {url}\n"
    assert invoke(None, "inbox", "retry", "--into", url).exit_code == 2
    rows = asyncio.run(query(url, "SELECT event_id FROM inbox_events WHERE status = 'pending'"))
    assert sorted(rows) == [("evt-1",), ("evt-bad",), ("evt-new",)]


def test_purge_deletes_only_done_events_older_than_given(url: str) -> None:
    kept = invoke(None, "inbox", "purge", "--into", url, "--done-before", "7d")
    assert kept.exit_code == 0, kept.output
    assert "Purged 0 done events" in kept.stderr
    for longest in ("999999d", "999999w"):  # the longest the grammar takes: nothing that old
        beyond = invoke(None, "inbox", "purge", "--into", url, "--done-before", longest)
        assert (beyond.exit_code, beyond.stderr.count("Purged 0 done events")) == (0, 1)
    result = invoke(None, "inbox", "purge", "--into", url, "--done-before", "0s")
    assert result.exit_code == 0, result.output
    assert "Purged 2 done events" in result.stderr
    rows = asyncio.run(query(url, "SELECT event_id FROM inbox_events ORDER BY event_id"))
    assert rows == [("evt-bad",), ("evt-new",)]
    assert invoke(None, "inbox", "purge", "--into", url, "--done-before", "7x").exit_code == 2


def test_run_handles_pending_events_and_prints_them(url: str) -> None:
    assert invoke(None, "inbox", "retry", "--into", url, "evt-2").exit_code == 0
    result = invoke(None, "inbox", "run", "--into", url, "--json", "--count", "2")
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(line)["eventId"] for line in result.stdout.splitlines()) == [
        "evt-2",
        "evt-new",
    ]
    assert result.stderr.rstrip().endswith("Stopped after 2 events.")
    rows = asyncio.run(query(url, "SELECT count(*) FROM inbox_events WHERE status = 'pending'"))
    assert rows == [(0,)]


def test_run_drain_handles_what_is_ready_and_stops(url: str) -> None:
    assert invoke(None, "inbox", "retry", "--into", url, "evt-2").exit_code == 0
    result = invoke(None, "inbox", "run", "--into", url, "--json", "--drain")
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(line)["eventId"] for line in result.stdout.splitlines()) == [
        "evt-2",
        "evt-new",
    ]
    assert result.stderr.rstrip().endswith("Stopped after 2 events.")
    again = invoke(None, "inbox", "run", "--into", url, "--drain")
    assert again.exit_code == 0, again.output
    assert again.stderr.rstrip().endswith("Stopped after 0 events.")
    both = invoke(None, "inbox", "run", "--into", url, "--drain", "--insecure")
    assert both.exit_code == 2
    assert "--drain stops once no event is ready" in both.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("inbox", "list", "--into", "mysql://me:pw-42@db/x"),
        ("inbox", "run", "--into", "ftp://db/x"),
        ("inbox", "run", "--into", "sqlite:///:memory:"),
        ("webhooks", "listen", "--secret", SECRET, "--inbox", "mysql://me:pw-42@db/x"),
    ],
)
def test_an_inbox_url_of_an_unknown_scheme_is_bad_input(args: tuple[str, ...]) -> None:
    result = invoke(None, *args)
    assert result.exit_code == 2
    assert "error: --" in result.stderr
    assert "pw-42" not in result.output
    assert "Listening" not in result.output  # refused before anything is served


async def _serve_and_post(
    args: tuple[str, ...], deliveries: tuple[tuple[str, str], ...]
) -> tuple[bytes, bytes]:
    """Start the command, post each (event id, expected status) to it, and wait for its
    end (it stops by --count): its stdout and stderr."""
    process = await start(
        None, *args, "--port", "0", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    try:
        line = ""
        while not line.startswith("Listening for webhook notifications on "):
            line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
        hooks = line.split(" on ")[1].split()[0]
        async with aiohttp.ClientSession() as session:
            for event_id, expected in deliveries:
                body, headers = notification(event_id)
                async with session.post(hooks, data=body, headers=headers) as response:
                    assert (response.status, await response.json()) == (200, {"status": expected})
        out, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()
    return out, err


async def test_listen_with_an_inbox_stores_each_event_once_and_prints_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'inbox.db'}"
    out, _ = await _serve_and_post(
        ("webhooks", "listen", "--secret", SECRET, "--inbox", url, "--count", "2", "--json"),
        (("e-1", "stored"), ("e-1", "duplicate"), ("e-2", "stored")),
    )
    assert [json.loads(line)["eventId"] for line in out.decode().splitlines()] == ["e-1", "e-2"]
    rows = await query(url, "SELECT event_id, status FROM inbox_events ORDER BY event_id")
    assert rows == [("e-1", "pending"), ("e-2", "pending")]  # stored; handled by inbox run


async def test_run_with_a_secret_receives_and_handles_in_one_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'inbox.db'}"
    out, _ = await _serve_and_post(
        ("inbox", "run", "--into", url, "--secret", SECRET, "--count", "1", "--json"),
        (("e-1", "stored"),),
    )
    assert json.loads(out)["eventId"] == "e-1"
    assert await query(url, "SELECT status FROM inbox_events") == [("done",)]


def test_accept_needs_an_event_id(tmp_path: Path) -> None:
    async def go() -> None:
        async with Inbox(f"sqlite:///{tmp_path / 'inbox.db'}") as inbox:
            nameless, body = event("evt-1")
            with pytest.raises(ValueError, match="event_id"):
                await inbox.accept(WebhookEvent(nameless.event_type, None, None, {}), body)

    asyncio.run(go())
