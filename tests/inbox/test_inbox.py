"""The inbox on real databases (SQLite, and PostgreSQL from pgserver): accept, work, retry.

Each test that takes ``into`` runs on both. Workers run in this process (each with an Inbox
of its own, so a connection pool of its own); the fleet of processes is in
``test_inbox_fleet.py``.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from payroll_async import InvalidArgumentError
from payroll_async.events import EventRouter, WebhookEvent, sign
from payroll_async.inbox import Inbox, InboxError, InboxStats, InboxURLError
from tests._postgres import query
from tests.conftest import Serve

from .conftest import FAST, SECRET, PostgresServer, notification, until


def event(event_id: str) -> tuple[WebhookEvent, bytes]:
    body, _ = notification(event_id)
    document = json.loads(body)
    return WebhookEvent(
        event_type=document["eventType"],
        event_id=event_id,
        occurred_at=datetime.datetime(2026, 11, 22, 5, tzinfo=datetime.timezone.utc),
        data=document["data"],
    ), body


async def fill(inbox: Inbox, *event_ids: str) -> None:
    for event_id in event_ids:
        assert await inbox.accept(*event(event_id))


async def work_until(
    inbox: Inbox, router: EventRouter, condition: Callable[[InboxStats], bool], **options: Any
) -> InboxStats:
    """Run a worker until the inbox's stats satisfy ``condition``; those stats."""
    stop = asyncio.Event()
    worker = asyncio.create_task(inbox.run(router, stop=stop, **options))
    seen: list[InboxStats] = []

    async def reached() -> bool:
        if worker.done():
            worker.result()  # a worker that failed fails the test
        seen.append(await inbox.stats())
        return condition(seen[-1])

    try:
        await until(reached)
    finally:
        stop.set()
        await worker
    return seen[-1]


async def test_an_event_id_is_stored_once_with_the_body_as_sent(open_inbox: Any, into: str) -> None:
    inbox = open_inbox()
    first, body = event("evt-1")
    assert await inbox.accept(first, body) is True
    assert await inbox.accept(first, body + b" ") is False  # a copy: not stored again
    rows = await query(
        into, "SELECT event_id, event_type, status, attempts, body, handled_at FROM inbox_events"
    )
    assert [(*row[:4], bytes(row[4]), row[5]) for row in rows] == [
        ("evt-1", "PAYROLL_PROCESSED", "pending", 0, body, None)
    ]
    stats = await inbox.stats()
    assert (stats.pending, stats.retrying, stats.done, stats.dead) == (1, 0, 0, 0)
    assert stats.oldest_pending is not None
    assert stats.oldest_pending.tzinfo is not None


async def test_copies_arriving_together_are_stored_once_and_others_all_stored(
    open_inbox: Any, into: str
) -> None:
    inbox = open_inbox()
    copies = await asyncio.gather(*(inbox.accept(*event("evt-same")) for _ in range(20)))
    assert sorted(copies) == [False] * 19 + [True]
    ids = [f"evt-{n}" for n in range(200)]
    assert all(await asyncio.gather(*(inbox.accept(*event(i)) for i in ids)))
    assert await query(into, "SELECT count(*) FROM inbox_events") == [(201,)]


async def test_postgresql_stores_a_batch_of_any_size_with_one_statement_text(
    postgres_url: str,
) -> None:
    """One INSERT text for 1, 7 or 60 notifications arriving together (each column one
    array): prepared once per connection, not once per batch size."""
    seen = set()
    async with Inbox(postgres_url, **FAST) as inbox:  # type: ignore[arg-type]
        for size in (1, 7, 60, 2):
            ids = [f"evt-{size}-{n}" for n in range(size)]
            assert all(await asyncio.gather(*(inbox.accept(*event(i)) for i in ids)))
            # the inbox's connection is idle: its last statement is the batch's INSERT
            (last,) = await query(
                postgres_url,
                "SELECT query FROM pg_stat_activity WHERE datname = current_database() "
                "AND query LIKE 'INSERT INTO inbox_events%'",
            )
            seen.add(last[0])
        assert len(seen) == 1
        assert await query(postgres_url, "SELECT count(*) FROM inbox_events") == [(70,)]


async def test_the_router_commits_and_answers_then_a_worker_handles_it(
    open_inbox: Any, serve: Serve
) -> None:
    inbox = open_inbox()
    router = EventRouter(secret=SECRET, inbox=inbox)
    handled: list[str] = []

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        handled.append(event.event_id or "")

    url = await serve(router.app(path="/hooks")) + "/hooks"
    body, headers = notification("evt-1")
    async with aiohttp.ClientSession() as session:
        for expected in ("stored", "duplicate", "duplicate"):
            async with session.post(url, data=body, headers=headers) as response:
                assert (response.status, await response.json()) == (200, {"status": expected})
        forged = {**headers, "webhook-signature": "v1,AAAA"}
        async with session.post(url, data=body.replace(b"evt-1", b"evt-2"), headers=forged) as r:
            assert r.status == 401
    assert handled == []  # no handler runs inside the request
    stats = await work_until(inbox, router, lambda s: s.done == 1)
    assert (stats.pending, stats.done, stats.dead) == (0, 1, 0)
    assert handled == ["evt-1"]


def signed(document: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(document).encode()
    return body, {
        **sign(SECRET, document["eventId"], int(time.time()), body),
        "Content-Type": "application/json",
    }


async def test_every_verified_event_is_stored_even_one_its_columns_cannot_hold(
    open_inbox: Any, into: str, serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    postgres = into.startswith("postgresql")
    if postgres:  # a table of the first release: event_type NOT NULL, no version table
        await open_inbox().stats()
        await query(into, "ALTER TABLE inbox_events ALTER COLUMN event_type SET NOT NULL")
        await query(into, "DROP TABLE inbox_schema")
    inbox = open_inbox()
    router = EventRouter(secret=SECRET, inbox=inbox)
    handled: dict[str, tuple[str, datetime.datetime | None]] = {}

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        handled[event.event_id or ""] = (event.event_type, event.occurred_at)

    def document(event_id: str, occurred_at: str, event_type: str = "PAYROLL_PROCESSED") -> Any:
        return {"eventId": event_id, "eventType": event_type, "occurredAt": occurred_at, "data": {}}

    sent = {
        "evt-ok-1": document("evt-ok-1", "2026-11-22T05:00:00Z"),
        "evt-year-1": document("evt-year-1", "0001-01-01T00:00:00+05:00"),
        "evt-nul": document("evt-nul", "2026-11-22T05:00:00Z", "PAYROLL\u0000PROCESSED"),
        "evt-year-9999": document("evt-year-9999", "9999-12-31T23:59:59-05:00"),
        "evt-ok-2": document("evt-ok-2", "2026-11-22T05:00:00Z"),
    }
    bodies = {event_id: signed(doc) for event_id, doc in sent.items()}
    url = await serve(router.app(path="/hooks")) + "/hooks"

    async def post(session: aiohttp.ClientSession, event_id: str) -> int:
        body, headers = bodies[event_id]
        async with session.post(url, data=body, headers=headers) as response:
            return response.status

    with caplog.at_level(logging.WARNING, logger="payroll_async"):
        async with aiohttp.ClientSession() as session:
            # all at once: one batch, as a busy receiver's
            statuses = await asyncio.gather(*(post(session, i) for i in sent))
    assert statuses == [200] * len(sent)
    rows = await query(into, "SELECT event_id, event_type, occurred_at, body FROM inbox_events")
    stored = {event_id: (kind, when, bytes(body)) for event_id, kind, when, body in rows}
    assert {i: body for i, (_, _, body) in stored.items()} == {i: b for i, (b, _) in bodies.items()}
    assert stored["evt-year-1"][1] is None
    assert stored["evt-year-9999"][1] is None
    assert stored["evt-ok-1"][1] is not None
    assert stored["evt-nul"][0] == (None if postgres else "PAYROLL\x00PROCESSED")
    assert "evt-year-1: its occurred_at cannot be held" in caplog.text
    assert "cannot be used" not in caplog.text  # no outage
    await work_until(inbox, router, lambda s: s.done == len(sent))
    # the handlers get each event as sent, from the body
    assert handled["evt-nul"][0] == "PAYROLL\x00PROCESSED"
    assert handled["evt-year-1"][1] == datetime.datetime(
        1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=5))
    )
    entries = {entry.event_id: entry for entry in await inbox.list()}
    assert entries["evt-nul"].event_type == (None if postgres else "PAYROLL\x00PROCESSED")


async def test_an_event_id_the_database_refuses_fails_alone_and_is_named(
    open_inbox: Any, into: str, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = open_inbox()
    too_long = "evt-" + secrets.token_hex(4000)  # beyond PostgreSQL's index row (2704 bytes)
    ids = ["evt-a", too_long, "evt-nul\x00", "evt-b"]
    with caplog.at_level(logging.WARNING, logger="payroll_async"):
        # all at once: one batch, one statement
        results = await asyncio.gather(
            *(inbox.accept(*event(i)) for i in ids), return_exceptions=True
        )
    postgres = into.startswith("postgresql")
    assert results[0] is True
    assert results[3] is True
    for refused in results[1:3]:
        assert isinstance(refused, InboxError) if postgres else refused is True
    if postgres:
        assert "notification evt-nul\\x00 could not be stored" in caplog.text
        assert f"notification {too_long} could not be stored" in caplog.text
        assert "index row" in caplog.text  # what failed, in the database's words
    assert "cannot be used" not in caplog.text  # not an outage
    assert await inbox.accept(*event("evt-c")) is True
    stats = await inbox.stats()
    assert stats.pending == (3 if postgres else 5)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_an_inbox_that_cannot_be_written_answers_503_without_the_password(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    password = "hunter2-Secret"
    inbox = Inbox(f"postgresql://postgres:{password}@127.0.0.1:{_closed_port()}/inbox")
    router = EventRouter(secret=SECRET, inbox=inbox)
    ran: list[str] = []

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        ran.append("ran")

    url = await serve(router.app(path="/hooks")) + "/hooks"
    body, headers = notification("evt-1")
    with caplog.at_level(logging.DEBUG):
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, data=body, headers=headers) as response,
        ):
            assert response.status == 503
            assert response.headers["Retry-After"]
    assert ran == []
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.name for r in errors] == ["payroll_async.inbox"]  # one line, the reason in it
    assert "the inbox cannot be used" in errors[0].getMessage()
    assert "ConnectionRefusedError" in errors[0].getMessage()
    assert password not in caplog.text
    with pytest.raises(InboxError) as raised:
        await inbox.stats()
    assert password not in str(raised.value)
    assert password not in repr(inbox)
    await inbox.close()


async def test_another_inbox_that_cannot_store_is_logged_by_the_router_once_by_type(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    class Down:
        async def accept(self, event: WebhookEvent, body: bytes) -> bool:
            raise RuntimeError("postgresql://u:hunter2-Secret@db/x is down")

    url = await serve(EventRouter(secret=SECRET, inbox=Down()).app(path="/hooks")) + "/hooks"
    async with aiohttp.ClientSession() as session:
        for event_id in ("evt-1", "evt-2"):
            body, headers = notification(event_id)
            async with session.post(url, data=body, headers=headers) as response:
                assert response.status == 503
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [
        "the inbox could not store notification evt-1 (RuntimeError): answering 503 with "
        "Retry-After until it can"
    ]


async def test_an_inbox_that_logs_its_own_failures_says_so_publicly(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    class Down:
        logs_its_failures = True  # the InboxLike's public word: no line of the router's

        async def accept(self, event: WebhookEvent, body: bytes) -> bool:
            raise RuntimeError("down")

    assert Inbox.logs_its_failures is True
    url = await serve(EventRouter(secret=SECRET, inbox=Down()).app(path="/hooks")) + "/hooks"
    async with aiohttp.ClientSession() as session:
        body, headers = notification("evt-1")
        async with session.post(url, data=body, headers=headers) as response:
            assert response.status == 503
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_failing_handler_is_retried_with_backoff_until_it_succeeds(
    open_inbox: Any, into: str
) -> None:
    inbox = open_inbox(backoff=0.1, backoff_max=1.0)
    router = EventRouter(insecure=True)
    calls: list[float] = []

    @router.on()
    async def flaky(event: WebhookEvent) -> None:
        calls.append(time.monotonic())
        if len(calls) < 3:
            raise ConnectionError(f"downstream unavailable (call {len(calls)})")

    await fill(inbox, "evt-1")
    await work_until(inbox, router, lambda s: s.done == 1)
    rows = await query(into, "SELECT status, attempts, last_error FROM inbox_events")
    assert rows == [("done", 3, None)]
    # exponential: at least 0.1 s, then 0.2 s (and up to 0.1 s of jitter each)
    assert calls[1] - calls[0] >= 0.1
    assert calls[2] - calls[1] >= 0.2


async def test_after_max_attempts_an_event_is_dead_with_its_last_error(
    open_inbox: Any, into: str
) -> None:
    inbox = open_inbox(backoff=0.01, backoff_max=0.02)
    router = EventRouter(insecure=True)
    calls = 0

    @router.on()
    async def broken(event: WebhookEvent) -> None:
        nonlocal calls
        calls += 1
        raise ValueError(f"cannot handle attempt {calls}\nsecond line\x1b[31m")

    await fill(inbox, "evt-1", "evt-2")
    stats = await work_until(inbox, router, lambda s: s.dead == 2, max_attempts=3)
    assert (stats.pending, stats.done, stats.dead) == (0, 0, 2)
    assert calls == 6
    rows = await query(into, "SELECT status, attempts, last_error FROM inbox_events")
    for status, attempts, last_error in rows:
        assert (status, attempts) == ("dead", 3)
        assert last_error.startswith("ValueError: cannot handle attempt ")
        assert "\n" not in last_error
        assert "second line" not in last_error
    dead = await inbox.list("dead")
    assert {entry.event_id for entry in dead} == {"evt-1", "evt-2"}
    assert all(entry.handled_at is not None for entry in dead)


async def test_retrying_counts_failed_events_not_first_attempts_in_flight(
    open_inbox: Any, into: str
) -> None:
    # the failed one waits; a lease no loaded machine outruns between renewals
    inbox = open_inbox(backoff=600.0, backoff_max=600.0, lease=30.0)
    router = EventRouter(insecure=True)
    started: list[str] = []
    release = asyncio.Event()

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        if event.event_id == "fails":
            raise ConnectionError("downstream unavailable")
        started.append(event.event_id or "")
        await release.wait()

    await fill(inbox, "fails")
    stop = asyncio.Event()
    worker = asyncio.create_task(inbox.run(router, concurrency=6, stop=stop))
    try:

        async def failed_once() -> bool:
            return [e.last_error for e in await inbox.list()] == [
                "ConnectionError: downstream unavailable"
            ]

        await until(failed_once)
        await fill(inbox, *(f"busy-{n}" for n in range(5)))

        async def in_flight() -> bool:
            return len(started) == 5

        await until(in_flight)
        stats = await inbox.stats()
        assert (stats.pending, stats.retrying) == (6, 1)  # five first attempts in flight
        release.set()
        await until(lambda: _stats_are(inbox, done=5, pending=1))
        assert (await inbox.stats()).retrying == 1
    finally:
        release.set()
        stop.set()
        await worker


async def _stats_are(inbox: Inbox, **expected: int) -> bool:
    stats = await inbox.stats()
    return all(getattr(stats, name) == n for name, n in expected.items())


async def test_a_draining_worker_returns_once_no_event_is_ready(open_inbox: Any) -> None:
    inbox = open_inbox(backoff=600.0, backoff_max=600.0)
    router = EventRouter(insecure=True)
    handled: list[str] = []

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        handled.append(event.event_id or "")
        if event.event_id == "evt-bad":
            raise RuntimeError("fails")

    await fill(inbox, *(f"evt-{n}" for n in range(30)), "evt-bad")
    await asyncio.wait_for(inbox.run(router, concurrency=4, drain=True), 60)
    assert sorted(handled) == sorted([*(f"evt-{n}" for n in range(30)), "evt-bad"])
    stats = await inbox.stats()
    assert (stats.pending, stats.retrying, stats.done) == (1, 1, 30)  # the failed one waits
    await asyncio.wait_for(inbox.run(router, drain=True), 60)  # nothing ready: at once
    assert len(handled) == 31


async def test_a_worker_that_dies_mid_handler_loses_its_claim_when_the_lease_ends(
    open_inbox: Any, into: str
) -> None:
    lease = 0.6
    first, second = open_inbox(lease=lease), open_inbox(lease=lease)
    started = asyncio.Event()
    stuck_router = EventRouter(insecure=True)

    @stuck_router.on()
    async def stuck(event: WebhookEvent) -> None:
        started.set()
        await asyncio.Event().wait()  # until its worker dies

    await fill(first, "evt-1")
    dying = asyncio.create_task(first.run(stuck_router))
    await asyncio.wait_for(started.wait(), 30)
    claimed_at = time.monotonic()
    dying.cancel()  # the worker is gone; its claim is not given back
    with pytest.raises(asyncio.CancelledError):
        await dying
    # once its lease has run out with no outcome, the event counts as retrying
    await until(lambda: _stats_are(second, pending=1, retrying=1))
    router = EventRouter(insecure=True)
    handled: list[float] = []

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        handled.append(time.monotonic())

    await work_until(second, router, lambda s: s.done == 1)
    assert handled[0] - claimed_at >= lease * 0.9  # not before the lease ended
    assert await query(into, "SELECT status, attempts FROM inbox_events") == [("done", 2)]


async def test_a_slow_handler_keeps_its_claim_by_renewing_the_lease(
    open_inbox: Any, into: str
) -> None:
    # renewed every 0.2 s: a renewal may come up to 0.4 s late (a loaded machine) and
    # still keep the claim
    lease = 0.6
    first, second = open_inbox(lease=lease), open_inbox(lease=lease)
    runs: list[str] = []
    router = EventRouter(insecure=True)

    @router.on()
    async def slow(event: WebhookEvent) -> None:
        runs.append(event.event_id or "")
        await asyncio.sleep(lease * 3)  # three leases: renewed, so nobody else takes it

    await fill(first, "evt-1")
    stop = asyncio.Event()
    other = asyncio.create_task(second.run(router, stop=stop))
    try:
        await work_until(first, router, lambda s: s.done == 1)
    finally:
        stop.set()
        await other
    assert runs == ["evt-1"]
    assert await query(into, "SELECT status, attempts FROM inbox_events") == [("done", 1)]


async def test_several_workers_never_run_one_event_at_once(open_inbox: Any, into: str) -> None:
    inboxes = [open_inbox() for _ in range(3)]
    ids = [f"evt-{n}" for n in range(150)]
    await fill(inboxes[0], *ids)
    router = EventRouter(insecure=True)
    running: set[str] = set()
    handled: list[str] = []

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        key = event.event_id or ""
        assert key not in running
        running.add(key)
        await asyncio.sleep(0)
        running.discard(key)
        handled.append(key)

    stop = asyncio.Event()
    workers = [asyncio.create_task(i.run(router, concurrency=4, stop=stop)) for i in inboxes[1:]]
    try:
        await work_until(inboxes[0], router, lambda s: s.done == len(ids), concurrency=4)
    finally:
        stop.set()
        await asyncio.gather(*workers)
    assert sorted(handled) == sorted(ids)
    assert await query(into, "SELECT max(attempts) FROM inbox_events") == [(1,)]


async def test_retry_replays_done_and_dead_events_and_purge_deletes_only_old_done_ones(
    open_inbox: Any,
) -> None:
    inbox = open_inbox()
    router = EventRouter(insecure=True)
    handled: list[str] = []

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        if event.event_id == "evt-bad":
            raise RuntimeError("always")
        handled.append(event.event_id or "")

    await fill(inbox, "evt-1", "evt-2", "evt-bad")
    await work_until(inbox, router, lambda s: s.done == 2 and s.dead == 1, max_attempts=1)
    assert sorted(handled) == ["evt-1", "evt-2"]
    assert await inbox.retry("evt-1") == 1  # a replay of a done event
    assert await inbox.retry("evt-unknown") == 0
    assert await inbox.retry(dead=True) == 1
    stats = await inbox.stats()
    assert (stats.pending, stats.done, stats.dead) == (2, 1, 0)
    await work_until(inbox, router, lambda s: s.pending == 0, max_attempts=1)
    assert sorted(handled) == ["evt-1", "evt-1", "evt-2"]
    assert await inbox.purge(datetime.timedelta(days=7)) == 0
    for beyond_the_calendar in (datetime.timedelta(days=999999), datetime.timedelta.max):
        assert await inbox.purge(beyond_the_calendar) == 0
    assert await inbox.purge(datetime.timedelta(0)) == 2
    stats = await inbox.stats()
    assert (stats.pending, stats.done, stats.dead) == (0, 0, 1)  # dead ones are kept
    assert await inbox.accept(*event("evt-1")) is True  # a purged id is forgotten


def skewed(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """This process's wall clock ``seconds`` ahead (``datetime.datetime.now``, ``time.time``),
    as a machine whose clock is wrong."""
    shift = datetime.timedelta(seconds=seconds)
    real, real_time = datetime.datetime, time.time

    class Skewed(real):  # type: ignore[misc,valid-type]
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return real.now(tz) + shift

    monkeypatch.setattr(datetime, "datetime", Skewed)
    monkeypatch.setattr(time, "time", lambda: real_time() + seconds)


async def test_purge_compares_ages_on_the_databases_clock_not_the_callers(
    open_inbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = open_inbox()
    await fill(inbox, "evt-1")
    await work_until(inbox, EventRouter(insecure=True), lambda s: s.done == 1)
    with monkeypatch.context() as patched:
        skewed(patched, 2 * 3600.0)  # the purging machine is two hours ahead
        assert await inbox.purge(datetime.timedelta(hours=1)) == 0  # handled seconds ago
    assert (await inbox.stats()).done == 1
    with monkeypatch.context() as patched:
        skewed(patched, -2 * 3600.0)  # and one two hours behind still purges
        assert await inbox.purge(datetime.timedelta(0)) == 1


async def test_the_database_password_never_reaches_last_error(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    password = "pw-Very-Secret-42"
    url = postgres_server.url(postgres_url.rsplit("/", 1)[1], password=password)
    async with Inbox(url, **FAST) as inbox:  # type: ignore[arg-type]
        router = EventRouter(insecure=True)

        @router.on()
        async def leaky(event: WebhookEvent) -> None:
            raise RuntimeError(f"could not reach {url}: " + "x" * 5000)

        await fill(inbox, "evt-1")
        await work_until(inbox, router, lambda s: s.dead == 1, max_attempts=1)
        (entry,) = await inbox.list()
    assert entry.last_error is not None
    assert password not in entry.last_error
    assert "***" in entry.last_error
    assert len(entry.last_error) <= 2000


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Inbox("mysql://user:pw-123@db/x"), "not supported"),
        (lambda: Inbox("sqlite:///:memory:"), "path of a database file"),
        (lambda: Inbox("not a url"), "not a database URL"),
        (lambda: Inbox("sqlite:///x.db", lease=0), "lease must be"),
        (lambda: Inbox("sqlite:///x.db", backoff=1, backoff_max=0.5), "backoff_max"),
        (lambda: Inbox("sqlite:///x.db", lease=1e12), "lease must be at most"),
        (lambda: Inbox("sqlite:///x.db", backoff_max=1e12), "backoff_max must be at most"),
        (lambda: EventRouter(insecure=True, inbox=object()), "inbox must have async accept"),  # type: ignore[arg-type]
    ],
)
def test_bad_input_is_refused_before_anything_runs(
    build: Callable[[], object], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgumentError, match=message) as raised:
        build()
    assert "pw-123" not in str(raised.value)
    if "inbox must" not in message and "lease" not in message and "backoff" not in message:
        assert isinstance(raised.value, InboxURLError)


async def test_bad_arguments_of_the_calls(tmp_path: Path) -> None:
    async with Inbox(f"sqlite:///{tmp_path / 'inbox.db'}") as inbox:
        router = EventRouter(insecure=True)
        calls: list[Awaitable[object]] = [
            inbox.run(router, concurrency=0),
            inbox.run(router, max_attempts=0),
            inbox.retry(),
            inbox.retry("evt-1", dead=True),
            inbox.purge(datetime.timedelta(days=-1)),
            inbox.list("finished"),
        ]
        for call in calls:
            with pytest.raises(InvalidArgumentError):
                await call


async def test_open_makes_the_table_now_and_says_why_a_database_cannot_be_used(
    into: str, tmp_path: Path
) -> None:
    inbox = Inbox(into, **FAST)
    try:
        await inbox.open()  # the table exists before anything is accepted or claimed
        assert await query(into, "SELECT count(*) FROM inbox_events") == [(0,)]
        await inbox.open()  # again: nothing to do
    finally:
        await inbox.close()
    with socket.socket() as listener:  # a port nothing answers on once closed
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
    password = "pw-" + secrets.token_hex(8)
    down = Inbox(f"postgresql://payroll:{password}@127.0.0.1:{port}/payroll", **FAST)
    try:
        with pytest.raises(InboxError, match="ConnectionRefusedError") as raised:
            await down.open()
        assert password not in str(raised.value)
    finally:
        await down.close()
