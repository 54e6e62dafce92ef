"""The inbox's queue under the faults every queue meets, on SQLite and PostgreSQL both.

A worker process that dies in a handler (``os._exit``), a worker whose event loop freezes
past its lease, a worker whose clock is 10 s ahead (``_faulty.py``), a handler that hangs,
a handler whose error quotes a secret, and a table made by the first release.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from payroll_async import PayrollClient
from payroll_async.events import EventRouter, WebhookEvent
from payroll_async.inbox import Inbox, InboxError
from tests._http.test_auth import auth_app
from tests._postgres import query
from tests.cli._run import invoke
from tests.conftest import Serve

from .conftest import FAST, script, until
from .test_inbox import event, fill, work_until

FAULTY = Path(__file__).with_name("_faulty.py")
DIED = "the worker died while handling it"


class Faulty:
    """A ``_faulty.py`` worker process; killed when the test ends if still running."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[dict[str, str]] = []

    @classmethod
    async def start(
        cls, url: str, tmp_path: Path, *, lease: float, max_attempts: int = 5, skew: float = 0
    ) -> Faulty:
        thaw = str(tmp_path / "thaw")
        process = await script(
            FAULTY,
            *(url, str(lease), str(max_attempts), thaw, str(skew)),
            stderr=asyncio.subprocess.PIPE,
        )
        faulty = cls(process)
        assert "ready" in await faulty.line()
        assert process.stdin is not None
        process.stdin.write(b"go\n")
        await process.stdin.drain()
        return faulty

    async def line(self) -> dict[str, str]:
        """The next line it prints (it is remembered in ``lines``)."""
        assert self.process.stdout is not None
        raw = await asyncio.wait_for(self.process.stdout.readline(), 60)
        assert raw, "the worker process ended"
        self.lines.append(json.loads(raw))
        return self.lines[-1]

    async def until_printed(self, **what: str) -> None:
        while await self.line() != what:
            pass

    async def stop(self) -> tuple[int, str]:
        """Close its stdin (it finishes the events in hand): its exit code and stderr."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        out, err = await asyncio.wait_for(self.process.communicate(), 60)
        self.lines += [json.loads(raw) for raw in out.splitlines()]
        assert self.process.returncode is not None
        return self.process.returncode, err.decode()

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
        await self.process.wait()


@pytest.fixture
async def processes() -> AsyncIterator[list[Faulty]]:
    started: list[Faulty] = []
    yield started
    for faulty in started:
        await faulty.kill()


async def rows(into: str, *columns: str) -> list[tuple[Any, ...]]:
    return await query(into, f"SELECT {', '.join(columns)} FROM inbox_events ORDER BY event_id")


async def work_through_crashes(
    into: str, tmp_path: Path, processes: list[Faulty], *, max_attempts: int
) -> list[Faulty]:
    """Worker processes one after another, each until it crashes or nothing is pending:
    the ones that crashed."""
    crashed: list[Faulty] = []
    async with Inbox(into, **FAST) as inbox:  # type: ignore[arg-type]

        async def settled() -> bool:
            # The observer's own read may meet SQLite busy with a crashed worker's
            # recovery ("database is locked", which a receiver would answer 503 to): it
            # looks again, as a sender would send again.
            try:
                return (await inbox.stats()).pending == 0
            except InboxError:
                return False

        for _ in range(max_attempts + 3):
            # a lease a loaded machine cannot outrun before the handler dies (0.3 s was, once)
            worker = await Faulty.start(into, tmp_path, lease=0.6, max_attempts=max_attempts)
            processes.append(worker)
            exited = asyncio.ensure_future(worker.process.wait())
            waiting = asyncio.ensure_future(until(settled))
            await asyncio.wait([exited, waiting], return_when=asyncio.FIRST_COMPLETED)
            if exited.done():
                waiting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiting
                assert exited.result() == 3  # os._exit in the handler
                assert worker.process.stdout is not None
                printed = await worker.process.stdout.read()
                worker.lines += [json.loads(line) for line in printed.splitlines()]
                crashed.append(worker)
                continue
            exited.cancel()
            assert (await worker.stop())[0] == 0
            return crashed
    raise AssertionError(f"still pending after {len(crashed)} crashes")


async def test_a_handler_that_kills_its_worker_is_dead_after_max_attempts_claims(
    into: str, tmp_path: Path, processes: list[Faulty], open_inbox: Any
) -> None:
    await fill(open_inbox(), "crash-1")
    crashed = await work_through_crashes(into, tmp_path, processes, max_attempts=2)
    # each claim counted: two handlers ran and died, the third claim found it spent. On a
    # starved machine a worker's lease can run out before its first handler dies, and the
    # same worker claims the event again: both claims count, in one process's crash.
    assert len(crashed) in (1, 2)
    ((status, attempts, last_error, handled_at),) = await rows(
        into, "status", "attempts", "last_error", "handled_at"
    )
    assert (status, attempts, handled_at is not None) == ("dead", 2, True)
    assert last_error.startswith(DIED)


async def test_the_events_beside_a_crash_are_run_again_alone_and_not_buried_with_it(
    into: str, tmp_path: Path, processes: list[Faulty], open_inbox: Any
) -> None:
    # the first worker claims crash-1 and ok-1 together (concurrency 2) and dies in
    # crash-1's handler: ok-1's claim died too, and each may be the one that kills
    await fill(open_inbox(), "crash-1", "ok-1", "ok-2", "ok-3")
    crashed = await work_through_crashes(into, tmp_path, processes, max_attempts=2)
    assert len(crashed) == 2
    # the second crash was crash-1's alone: whatever that worker ran before it had ended
    started = [line["started"] for line in crashed[1].lines if "started" in line]
    handled = [line["handled"] for line in crashed[1].lines if "handled" in line]
    assert (started[-1], handled) == ("crash-1", started[:-1])
    assert await rows(into, "event_id", "status", "attempts") == [
        ("crash-1", "dead", 2),
        ("ok-1", "done", 2),
        ("ok-2", "done", 1),
        ("ok-3", "done", 1),
    ]


async def test_a_worker_frozen_past_its_lease_cannot_record_over_a_later_claim(
    into: str, tmp_path: Path, processes: list[Faulty], open_inbox: Any
) -> None:
    inbox = open_inbox()
    await fill(inbox, "freeze-1")
    frozen = await Faulty.start(into, tmp_path, lease=0.5)
    processes.append(frozen)
    await frozen.until_printed(started="freeze-1")  # its loop is frozen from here on
    ok = EventRouter(insecure=True)

    @ok.on()
    async def handle(event: WebhookEvent) -> None:
        pass

    # its lease runs out: another worker takes the event over and finishes it
    await work_until(inbox, ok, lambda s: s.done == 1)
    assert await inbox.retry("freeze-1") == 1  # a replay: its attempts back to zero
    failing = EventRouter(insecure=True)

    @failing.on()
    async def fail(event: WebhookEvent) -> None:
        raise RuntimeError("the replay failed")

    replaying = open_inbox(backoff=600.0, backoff_max=600.0)  # not tried again in the test

    async def replay_failed() -> bool:
        return await rows(into, "last_error") == [("RuntimeError: the replay failed",)]

    stop = asyncio.Event()
    replay = asyncio.create_task(replaying.run(failing, stop=stop))
    await until(replay_failed)
    stop.set()
    await replay
    (tmp_path / "thaw").touch()  # the frozen worker goes on, and reports its success
    await frozen.until_printed(handled="freeze-1")
    code, err = await frozen.stop()
    assert code == 0
    # the replay's failure stands: attempt 1 of the replay, due again after its backoff
    assert await rows(into, "status", "attempts", "last_error") == [
        ("pending", 1, "RuntimeError: the replay failed")
    ]
    assert await rows(into, "claims") == [(4,)]  # two claims, the replay, its claim
    assert "the claim was lost before its outcome was written" in err


async def test_a_replay_after_a_burial_is_not_overwritten_by_the_frozen_worker(
    into: str, tmp_path: Path, processes: list[Faulty], open_inbox: Any
) -> None:
    """The frozen worker holds the event's last allowed attempt: past its lease another
    worker's claim buries it (dead), the operator replays it, and only then does the
    frozen worker wake and try to write its outcome (and claims nothing more)."""
    inbox = open_inbox()
    await fill(inbox, "freeze-stop")
    frozen = await Faulty.start(into, tmp_path, lease=0.5, max_attempts=1)
    processes.append(frozen)
    await frozen.until_printed(started="freeze-stop")  # its loop is frozen from here on
    idle = EventRouter(insecure=True)
    # another worker's claim finds the lease run out on the last attempt: dead
    await work_until(inbox, idle, lambda s: s.dead == 1, max_attempts=1)
    assert await inbox.retry("freeze-stop") == 1  # the replay: pending, attempts back to zero
    (tmp_path / "thaw").touch()  # the frozen worker goes on, and reports its success
    await frozen.until_printed(handled="freeze-stop")
    code, err = await frozen.stop()
    assert code == 0, err
    assert "the claim was lost before its outcome was written" in err
    # the stale outcome did not land on the replay: the replay is still to run
    assert await rows(into, "status", "attempts", "handled_at") == [("pending", 0, None)]
    ran: list[str] = []
    replaying = EventRouter(insecure=True)

    @replaying.on()
    async def handle(event: WebhookEvent) -> None:
        ran.append(event.event_id or "")

    await work_until(inbox, replaying, lambda s: s.done == 1)
    assert ran == ["freeze-stop"]


async def test_a_worker_whose_clock_is_ahead_never_takes_an_event_in_hand(
    into: str, tmp_path: Path, processes: list[Faulty], open_inbox: Any
) -> None:
    lease = 1.0
    inbox = open_inbox(lease=lease)
    await fill(inbox, "held")
    started, release = asyncio.Event(), asyncio.Event()
    router = EventRouter(insecure=True)
    runs: list[str] = []

    @router.on()
    async def slow(event: WebhookEvent) -> None:
        runs.append(event.event_id or "")
        started.set()
        await release.wait()

    stop = asyncio.Event()
    holder = asyncio.create_task(inbox.run(router, concurrency=1, stop=stop))
    try:
        await asyncio.wait_for(started.wait(), 30)
        # a worker whose clock is 10 s ahead (ten leases) stores an event and works the
        # inbox while "held" is in hand and renewed; it handles its own event (so it
        # claimed at least once meanwhile), and must not take "held"
        ahead = await Faulty.start(into, tmp_path, lease=lease, skew=10.0)
        processes.append(ahead)
        await ahead.until_printed(handled="from-skewed")
        release.set()
        await until(lambda: _done(inbox, 2))
    finally:
        release.set()
        stop.set()
        await holder
    code, err = await ahead.stop()
    assert code == 0, err
    assert [line["started"] for line in ahead.lines if "started" in line] == ["from-skewed"]
    assert runs == ["held"]
    assert await rows(into, "event_id", "status", "attempts", "claims") == [
        ("from-skewed", "done", 1, 1),
        ("held", "done", 1, 1),
    ]
    # and the skewed receiver's event was stamped with the database's time, not its own
    (entry,) = [e for e in await inbox.list() if e.event_id == "from-skewed"]
    assert entry.received_at.timestamp() < time.time() + 5


async def _done(inbox: Inbox, n: int) -> bool:
    return (await inbox.stats()).done == n


async def test_a_hung_handler_is_cancelled_after_handler_timeout_and_frees_its_slot(
    open_inbox: Any, into: str, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = open_inbox(backoff=0.05, backoff_max=0.05)
    router = EventRouter(insecure=True, handler_timeout=0.3)
    cancelled: list[str] = []
    handled: list[str] = []

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        if event.event_id == "hung":
            try:
                await asyncio.Event().wait()
            finally:
                cancelled.append("hung")
        handled.append(event.event_id or "")

    await fill(inbox, "hung")
    await fill(inbox, "next")
    stop = asyncio.Event()
    worker = asyncio.create_task(inbox.run(router, concurrency=1, max_attempts=2, stop=stop))

    async def settled() -> bool:
        stats = await inbox.stats()
        return stats.dead == 1 and stats.done == 1

    with caplog.at_level(logging.WARNING, "payroll_async.inbox"):
        try:
            await until(settled, timeout=20)
        finally:
            stop.set()
            with contextlib.suppress(asyncio.TimeoutError):  # a handler still hung: cancelled
                await asyncio.wait_for(worker, 5)
    stats = await inbox.stats()
    assert (stats.pending, stats.done, stats.dead) == (0, 1, 1)
    assert handled == ["next"]  # handled although the one slot had a hung handler
    assert cancelled == ["hung", "hung"]  # each attempt cancelled, and counted
    ((status, attempts, last_error),) = await query(
        into, "SELECT status, attempts, last_error FROM inbox_events WHERE event_id = 'hung'"
    )
    assert (status, attempts) == ("dead", 2)
    assert last_error == (
        "TimeoutError: the handlers took longer than handler_timeout (0.3 s) and were cancelled"
    )
    assert "handler_timeout" in caplog.text


async def test_a_handler_that_ignores_cancellation_gives_its_slot_back_after_a_grace(
    open_inbox: Any, into: str, caplog: pytest.LogCaptureFixture
) -> None:
    released, ended = asyncio.Event(), asyncio.Event()
    inbox = open_inbox(lease=0.6)  # renewed every 0.2 s while its handlers run
    router = EventRouter(insecure=True, handler_timeout=0.2)
    handled: list[str] = []

    @router.on()
    async def stubborn_handler(event: WebhookEvent) -> None:
        if event.event_id == "stubborn":
            while not released.is_set():  # it swallows its cancellation
                with contextlib.suppress(asyncio.CancelledError):
                    await released.wait()
            ended.set()
        handled.append(event.event_id or "")

    await fill(inbox, "stubborn")
    await fill(inbox, "next")
    stop = asyncio.Event()
    worker = asyncio.create_task(inbox.run(router, concurrency=1, max_attempts=1, stop=stop))
    try:
        with caplog.at_level(logging.WARNING, "payroll_async.inbox"):
            await until(lambda: _done(inbox, 1), timeout=20)
        assert handled == ["next"]  # the one slot was given back
        assert not ended.is_set()  # while the stubborn handler still runs
        ((status, last_error, next_attempt_at),) = await query(
            into,
            "SELECT status, last_error, next_attempt_at FROM inbox_events "
            "WHERE event_id = 'stubborn'",
        )
        assert (status, next_attempt_at) == ("dead", None)  # failed; no renewal moved it
        assert last_error == (
            "TimeoutError: the handlers took longer than handler_timeout (0.2 s) and did not "
            "end when cancelled: abandoned"
        )
        (error,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert error.startswith("event stubborn: handler tests.inbox.test_inbox_faults.")
        assert (
            "<locals>.stubborn_handler ignored its cancellation past handler_timeout (0.2 s) "
            "and 1 s more: abandoned"
        ) in error
    finally:
        stop.set()
        released.set()
        await worker
        await asyncio.wait_for(ended.wait(), 10)


async def test_no_secret_the_sdk_knows_is_stored_in_last_error_or_shown(
    into: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, open_inbox: Any
) -> None:
    """As written, and as a URL the handler built spells them (percent-encoded: ``/`` as
    ``%2F``, ``=`` as ``%3D``; a space as ``+``)."""
    secret = "whsec_c2VjcmV0LW9mLXRoZS1yb3V0ZXItNDI="
    token = "tok/live+9f8e 7d6c=5b4a"
    inbox = open_inbox()
    router = EventRouter(secret=secret, inbox=inbox)
    async with PayrollClient("https://payroll.example.com", token):

        @router.on()
        async def leaky(event: WebhookEvent) -> None:
            raise RuntimeError(
                f"rejected: Authorization: Bearer {token}, signed with {secret} ({secret[6:]}); "
                f"GET https://ledger.example/v1?t={quote(token, safe='')}&q={quote_plus(token)}"
                f"&s={quote(secret, safe='')}"
            )

        await fill(inbox, "evt-1")
        with caplog.at_level(logging.WARNING, "payroll_async.inbox"):
            await work_until(inbox, router, lambda s: s.dead == 1, max_attempts=1)
    ((stored,),) = await query(into, "SELECT last_error FROM inbox_events")
    for shown in (stored, caplog.text):
        assert "9f8e" not in shown
        assert "c2VjcmV0" not in shown
    assert stored == (
        "RuntimeError: rejected: Authorization: Bearer ***, signed with *** (***); "
        "GET https://ledger.example/v1?t=***&q=***&s=***"
    )
    # an error stored by an earlier version: shown without the secrets this process knows
    await query(into, f"UPDATE inbox_events SET last_error = 'old: {secret} {token}'")
    monkeypatch.setenv("PAYROLL_WEBHOOK_SECRET", secret)
    monkeypatch.setenv("PAYROLL_TOKEN", token)
    result = await asyncio.to_thread(invoke, None, "inbox", "list", "--into", into, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["lastError"] == "old: *** ***"


V1 = {  # the first release's table, as it made it
    "sqlite": """CREATE TABLE inbox_events (
        event_id TEXT NOT NULL, event_type TEXT NOT NULL, occurred_at DATETIME,
        received_at DATETIME NOT NULL, body BLOB NOT NULL, status TEXT NOT NULL,
        attempts INTEGER NOT NULL, next_attempt_at DATETIME, last_error TEXT,
        handled_at DATETIME, PRIMARY KEY (event_id))""",
    "postgresql": """CREATE TABLE inbox_events (
        event_id TEXT NOT NULL, event_type TEXT NOT NULL, occurred_at TIMESTAMP WITH TIME ZONE,
        received_at TIMESTAMP WITH TIME ZONE NOT NULL, body BYTEA NOT NULL,
        status TEXT NOT NULL, attempts INTEGER NOT NULL,
        next_attempt_at TIMESTAMP WITH TIME ZONE, last_error TEXT,
        handled_at TIMESTAMP WITH TIME ZONE, PRIMARY KEY (event_id))""",
}


async def test_a_table_made_by_the_first_release_is_migrated_with_its_events(
    into: str, open_inbox: Any
) -> None:
    dialect = into.split(":", 1)[0]
    await query(into, V1[dialect])
    await query(into, "CREATE INDEX inbox_events_due ON inbox_events (status, next_attempt_at)")
    _, body = event("old-1")
    blob = f"X'{body.hex()}'" if dialect == "sqlite" else f"'\\x{body.hex()}'::bytea"
    when = "'2026-11-01 00:00:00.000000'"
    await query(
        into,
        f"INSERT INTO inbox_events VALUES ('old-1', 'PAYROLL_PROCESSED', NULL, {when}, {blob}, "
        f"'pending', 2, {when}, 'RuntimeError: once', NULL)",
    )
    inbox = open_inbox()
    await fill(inbox, "new-1")  # the first use migrates
    assert await query(into, "SELECT version FROM inbox_schema") == [(2,)]
    assert await rows(into, "event_id", "attempts", "claims", "claimed_at") == [
        ("new-1", 0, 0, None),
        ("old-1", 2, 2, None),
    ]
    router = EventRouter(insecure=True)
    handled: list[str] = []

    @router.on()
    async def handle(event: WebhookEvent) -> None:
        handled.append(event.event_id or "")

    await work_until(inbox, router, lambda s: s.done == 2)
    assert sorted(handled) == ["new-1", "old-1"]
    assert await rows(into, "event_id", "attempts", "claims") == [
        ("new-1", 1, 1),
        ("old-1", 3, 3),
    ]
    # a second Inbox finds it made: nothing migrated twice
    async with Inbox(into) as again:
        assert (await again.stats()).done == 2
    assert await query(into, "SELECT version FROM inbox_schema") == [(2,)]


async def test_a_token_providers_tokens_are_kept_out_of_last_error(
    open_inbox: Any, into: str, serve: Serve
) -> None:
    class Vault:
        async def get_token(self, *, refresh: bool = False) -> str:
            return "vault-token-5e1f0c"

    base = await serve(auth_app({"vault-token-5e1f0c"}, []))
    inbox = open_inbox()
    router = EventRouter(insecure=True)
    async with PayrollClient(base, Vault()) as client:

        @router.on()
        async def handle(event: WebhookEvent) -> None:
            await client.payroll_connections.list().collect()  # the token is handed out
            raise PermissionError("the ledger refused token vault-token-5e1f0c")

        await fill(inbox, "evt-1")
        await work_until(inbox, router, lambda s: s.dead == 1, max_attempts=1)
    assert await rows(into, "last_error") == [("PermissionError: the ledger refused token ***",)]
