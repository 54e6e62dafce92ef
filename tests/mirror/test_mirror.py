"""mirror() end to end: the emulator on a loopback port, real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gc
import sqlite3
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import asyncpg
import pytest
from aiohttp import web

from payroll_async import PayrollClient
from payroll_async.emulator import Emulator
from payroll_async.mirror import (
    Change,
    MirrorBusyError,
    MirrorError,
    MirrorProgress,
    MirrorResult,
    mirror,
)
from payroll_async.mirror import _store as mirror_store
from payroll_async.mirror import _walk as mirror_walk
from tests._postgres import query
from tests.conftest import StartEmulator

TABLE = {
    "payroll-connections": ("payroll_connections", "id"),
    "employer-identifiers": ("employer_identifiers", "id"),
    "webhooks": ("webhook_subscriptions", "webhook_subscription_id"),
    "update-groups": ("update_groups", "update_group_id"),
}


async def service_ids(client: PayrollClient, collection: str = "payroll-connections") -> set[str]:
    if collection == "payroll-connections":
        return {str(c.id) for c in await client.payroll_connections.list().collect()}
    if collection == "webhooks":
        return {str(s.webhook_subscription_id) for s in await client.webhooks.list().collect()}
    return {str(e.id) for e in await client.employer_identifiers.list().collect()}


async def live_ids(into: str, collection: str = "payroll-connections") -> set[str]:
    table, key = TABLE[collection]
    rows = await query(into, f"SELECT {key} FROM {table} WHERE mirror_deleted_at IS NULL")
    return {str(uuid.UUID(str(r[0]))) for r in rows}


async def changes_of(into: str, run_id: uuid.UUID) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {"inserted": set(), "updated": set(), "deleted": set()}
    for change, item in await query(
        into,
        "SELECT change, item_id FROM mirror_changes WHERE run_id = :r",
        r=run_id if into.startswith("postgresql") else str(run_id),
    ):
        found[change].add(str(uuid.UUID(str(item))))
    return found


async def test_a_first_run_copies_every_item_with_typed_columns(
    start_emulator: StartEmulator, into: str
) -> None:
    emu = await start_emulator(seed=3, payroll_connections=537)
    async with PayrollClient(emu.base_url, emu.token) as client:
        result = await mirror(client, "payroll-connections", into=into, page_size=50)
        expected = await client.payroll_connections.list().collect()
    assert result.inserted == result.items == 537
    assert (result.updated, result.deleted, result.unchanged, result.complete) == (0, 0, 0, True)
    rows = await query(
        into,
        "SELECT id, employer_identifier_id, payroll_platform_id, created_at, status, product "
        "FROM payroll_connections ORDER BY created_at",
    )
    first = expected[0]
    row = rows[0]
    assert str(uuid.UUID(str(row[0]))) == str(first.id)
    assert (row[4], row[5]) == (first.status, first.product)
    assert len(rows) == 537
    if into.startswith("postgresql"):
        types = dict(
            await query(
                into,
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_name = 'payroll_connections'",
            )
        )
        assert types["id"] == "uuid"
        assert types["created_at"] == "timestamp with time zone"
        assert row[3] == first.created_at
    runs = await query(into, "SELECT collection, complete, items, inserted FROM mirror_runs")
    assert [(r[0], bool(r[1]), r[2], r[3]) for r in runs] == [
        ("payroll-connections", True, 537, 537)
    ]
    assert await query(into, "SELECT version FROM mirror_schema") == [(2,)]


async def test_progress_counts_grow_to_the_item_count_against_the_services_total(
    start_emulator: StartEmulator, into: str
) -> None:
    emu = await start_emulator(seed=3, payroll_connections=537)
    told: list[MirrorProgress] = []
    async with PayrollClient(emu.base_url, emu.token) as client:
        result = await mirror(
            client, "payroll-connections", into=into, page_size=50, on_progress=told.append
        )
    counts = [progress.items for progress in told]
    assert len(counts) > 1
    assert counts == sorted(set(counts))  # each call later than the last, with more items
    assert counts[-1] == result.items == 537
    assert {(progress.total, progress.pass_number) for progress in told} == {(537, 1)}


async def test_progress_of_update_groups_of_every_employer_has_no_total(
    start_emulator: StartEmulator, into: str
) -> None:
    emu = await start_emulator(seed=6, employer_identifiers=3, update_groups=4)
    told: list[MirrorProgress] = []
    async with PayrollClient(emu.base_url, emu.token) as client:
        result = await mirror(client, "update-groups", into=into, on_progress=told.append)
    assert [progress.items for progress in told] == [4, 8, 12]  # after each employer's
    assert result.items == 12
    assert {progress.total for progress in told} == {None}


async def test_an_unchanged_rerun_writes_no_item_row_and_records_nothing(
    start_emulator: StartEmulator, into: str
) -> None:
    emu = await start_emulator(seed=4, payroll_connections=300)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into)
        before = await query(into, "SELECT * FROM payroll_connections ORDER BY id")
        again = await mirror(client, "payroll-connections", into=into)
    # Any write would have moved mirror_last_seen_at: the rows are byte for byte the same.
    assert await query(into, "SELECT * FROM payroll_connections ORDER BY id") == before
    assert (again.inserted, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 300)
    assert await changes_of(into, again.run_id) == {
        "inserted": set(),
        "updated": set(),
        "deleted": set(),
    }


async def test_rows_whose_digests_another_build_wrote_are_not_recorded_as_changed(
    start_emulator: StartEmulator, into: str
) -> None:
    emu = await start_emulator(seed=4, payroll_connections=120)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into, page_size=25)
        # As a digest of another kind would read (an earlier build's): none matches.
        await query(into, "UPDATE payroll_connections SET mirror_digest = mirror_digest + 1")
        churn = emu.churn("payroll-connections", inserted=0, updated=3, deleted=0)
        result = await mirror(client, "payroll-connections", into=into, page_size=25)
        rewritten = await query(into, "SELECT mirror_digest FROM payroll_connections ORDER BY id")
        again = await mirror(client, "payroll-connections", into=into, page_size=25)
    assert await changes_of(into, result.run_id) == {
        "inserted": set(),
        "updated": set(churn.updated),
        "deleted": set(),
    }
    assert (result.updated, result.unchanged) == (3, 117)
    # The digests were written again: the next run finds every item unchanged by them.
    assert (
        await query(into, "SELECT mirror_digest FROM payroll_connections ORDER BY id") == rewritten
    )
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 120)


@pytest.mark.parametrize("collection", ["payroll-connections", "webhooks", "employer-identifiers"])
async def test_after_churn_exactly_the_churned_ids_are_recorded(
    start_emulator: StartEmulator, into: str, collection: str
) -> None:
    emu = await start_emulator(
        seed=5, payroll_connections=400, employer_identifiers=40, webhook_subscriptions=30
    )
    seen: list[Change] = []

    async def on_change(change: Change) -> None:
        seen.append(change)

    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, collection, into=into, page_size=25)
        churn = emu.churn(collection, inserted=4, updated=6, deleted=5)
        result = await mirror(client, collection, into=into, page_size=25, on_change=on_change)
        assert await live_ids(into, collection) == await service_ids(client, collection)
    recorded = await changes_of(into, result.run_id)
    assert recorded == {
        "inserted": set(churn.inserted),
        "updated": set(churn.updated),
        "deleted": set(churn.deleted),
    }
    assert {(c.change, str(c.item_id)) for c in seen} == {
        (kind, item) for kind, items in recorded.items() for item in items
    }
    assert (result.inserted, result.updated, result.deleted) == (4, 6, 5)
    assert result.complete


async def test_update_groups_of_every_employer_or_one(
    start_emulator: StartEmulator, into: str
) -> None:
    emu = await start_emulator(seed=6, employer_identifiers=7, update_groups=4)
    employer = emu.data.employer_id(2)
    async with PayrollClient(emu.base_url, emu.token) as client:
        one = await mirror(client, "update-groups", into=into, employer=employer)
        every = await mirror(client, "update-groups", into=into)
        churn = emu.churn("update-groups", updated=1, deleted=1, inserted=1)
        after = await mirror(client, "update-groups", into=into)
    assert (one.inserted, every.inserted, every.unchanged) == (4, 24, 4)
    rows = await query(into, "SELECT count(*) FROM update_groups WHERE mirror_deleted_at IS NULL")
    assert rows == [(28,)]
    assert await changes_of(into, after.run_id) == {
        "inserted": set(churn.inserted),
        "updated": set(churn.updated),
        "deleted": set(churn.deleted),
    }


async def test_an_item_that_comes_back_after_its_deletion_counts_as_inserted(
    start_emulator: StartEmulator, into: str
) -> None:
    emu = await start_emulator(seed=7, payroll_connections=60)
    back = emu.data.payroll_connection(10)["id"]
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into)
        key = back if into.startswith("postgresql") else str(uuid.UUID(back))
        # As an earlier deletion in the service would have left it:
        await query(
            into,
            "UPDATE payroll_connections SET mirror_deleted_at = mirror_first_seen_at WHERE id = :k",
            k=key,
        )
        result = await mirror(client, "payroll-connections", into=into)
    assert await changes_of(into, result.run_id) == {
        "inserted": {back},
        "updated": set(),
        "deleted": set(),
    }
    assert await live_ids(into) == {emu.data.payroll_connection(i)["id"] for i in range(60)}


class ChurnMidWalk:
    """A middleware that churns the listing every ``every`` list requests, mid-walk."""

    __middleware_version__ = 1

    def __init__(self, emu: Emulator, every: int, once: bool = False, **changes: int) -> None:
        self.emu = emu
        self.every = every
        self.once = once
        self.changes = changes
        self.on = True
        self.requests = 0
        self.deleted: set[str] = set()

    async def __call__(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.on and request.path == "/v1/payroll-connections":
            self.requests += 1
            if self.requests % self.every == 0:
                churn = self.emu.churn("payroll-connections", **self.changes)
                self.deleted |= set(churn.deleted)
                self.on = not self.once
        return await handler(request)


def existing(emu: Emulator) -> set[str]:
    data = emu.data
    gone = data.payroll_connections.deleted_indices()
    count = data.payroll_connections.count
    return {data.payroll_connection(i)["id"] for i in range(count) if i not in gone}


@pytest.mark.parametrize(("seed", "every"), [(1, 3), (2, 7), (3, 20)])
async def test_no_row_is_marked_deleted_while_its_item_exists_as_the_data_changes_mid_walk(
    into: str, seed: int, every: int
) -> None:
    emu = Emulator(seed=seed, payroll_connections=1500)
    churn = ChurnMidWalk(emu, every, inserted=2, deleted=3, updated=2)
    emu.app.middlewares.append(churn)
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        for _ in range(3):
            result = await mirror(client, "payroll-connections", into=into, page_size=40)
            deleted = (await changes_of(into, result.run_id))["deleted"]
            assert deleted <= churn.deleted
            assert not deleted & existing(emu)  # never deleted while it exists
        assert churn.requests > 100
        churn.on = False  # a quiet period: one more run makes the live rows the service's
        final = await mirror(client, "payroll-connections", into=into, page_size=40)
        assert final.complete
        assert await live_ids(into) == existing(emu) == await service_ids(client)
    recorded: dict[str, set[str]] = {"inserted": set(), "deleted": set(), "updated": set()}
    for change, item in await query(into, "SELECT change, item_id FROM mirror_changes"):
        recorded[change].add(str(uuid.UUID(str(item))))
    # Every item ever mirrored that is gone now was recorded deleted, and no other.
    assert recorded["deleted"] == recorded["inserted"] - existing(emu)


async def test_a_run_whose_walk_was_disturbed_proves_its_deletions_with_more_walks(
    into: str,
) -> None:
    emu = Emulator(seed=4, payroll_connections=1000)
    churn = ChurnMidWalk(emu, 5, once=True, deleted=4)
    churn.on = False
    emu.app.middlewares.append(churn)
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into, page_size=30)
        churn.on = True  # four items go at the 5th request of the next run
        told: list[MirrorProgress] = []
        result = await mirror(
            client, "payroll-connections", into=into, page_size=30, on_progress=told.append
        )
    assert len(churn.deleted) == 4
    passes = [progress.pass_number for progress in told]
    assert passes == sorted(passes)
    assert passes[-1] >= 2  # walked again to prove the deletions, and told so
    assert told[-1].items == result.items
    assert result.complete
    assert (await changes_of(into, result.run_id))["deleted"] == churn.deleted
    assert await live_ids(into) == existing(emu)


class Stall:
    """A middleware that holds every list request of payroll connections from the
    ``at``-th on (``stalled`` is set) until ``release`` is set: a service that stops
    answering mid-walk."""

    __middleware_version__ = 1

    def __init__(self, at: int) -> None:
        self.at = at
        self.requests = 0
        self.stalled = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path == "/v1/payroll-connections":
            self.requests += 1
            if self.requests >= self.at and not self.release.is_set():
                self.stalled.set()
                await self.release.wait()
        return await handler(request)


def stalling(seed: int) -> tuple[Emulator, Stall]:
    """300 connections; every list request from the third on held until released."""
    emu = Emulator(seed=seed, payroll_connections=300)
    stall = Stall(at=3)
    emu.app.middlewares.append(stall)
    return emu, stall


def walking(
    client: PayrollClient,
    into: str,
    written: asyncio.Event,
    on_change: Callable[[Change], Awaitable[None]] | None = None,
) -> asyncio.Task[MirrorResult]:
    """A mirror whose walk asks pages of 50 (overlapping by one), one at a time; ``written``
    is set once the first two pages are written (the third is held)."""

    def on_progress(progress: MirrorProgress) -> None:
        if progress.items >= 99:
            written.set()

    return asyncio.create_task(
        mirror(
            client,
            "payroll-connections",
            into=into,
            page_size=50,
            concurrency=1,
            on_progress=on_progress,
            on_change=on_change,
        )
    )


def waiting_run(
    client: PayrollClient, into: str, told: asyncio.Event
) -> asyncio.Task[MirrorResult]:
    """A mirror that waits for the run lock (``wait=True``); ``told`` is set when it says so."""
    return asyncio.create_task(
        mirror(
            client,
            "payroll-connections",
            into=into,
            wait=True,
            on_wait=lambda message: told.set(),
        )
    )


async def written_by_others(into: str) -> int:
    """The live rows another connection sees once it holds a lock that the mirror's open
    transaction would hold it from (waiting up to 20 s): SQLite's write lock, a
    PostgreSQL table lock that row writes block."""
    if into.startswith("sqlite"):

        def count() -> int:
            db = sqlite3.connect(into.removeprefix("sqlite:///"), timeout=20, isolation_level=None)
            try:
                db.execute("BEGIN IMMEDIATE")
                ((found,),) = db.execute("SELECT count(*) FROM payroll_connections")
                db.execute("ROLLBACK")
                return int(found)
            finally:
                db.close()

        return await asyncio.to_thread(count)
    conn = await asyncpg.connect(into)
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL lock_timeout = '20s'")
            await conn.execute("LOCK TABLE payroll_connections IN SHARE MODE")
            return int(await conn.fetchval("SELECT count(*) FROM payroll_connections"))
    finally:
        await conn.close()


async def test_a_walk_that_waits_on_the_service_holds_no_lock_meanwhile(
    into: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirror_store, "COMMIT_SECONDS", 0.05)
    emu, stall = stalling(seed=11)
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        written = asyncio.Event()
        run = walking(client, into, written)
        try:
            await written.wait()
            # The two pages walked are committed while the walk waits for the third:
            # another writer gets in, and finds them (pages overlap by one item).
            assert await written_by_others(into) == 99
            assert not run.done()
        finally:
            stall.release.set()
            await asyncio.wait([run])
        result = run.result()
    assert (result.inserted, result.complete) == (300, True)
    assert await live_ids(into) == existing(emu)


async def test_a_run_cancelled_while_the_walk_waits_starts_no_commit_after(
    into: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    timers: list[asyncio.TimerHandle] = []
    arm = mirror_store.Store._arm_idle

    def armed(store: mirror_store.Store) -> None:
        arm(store)
        timers.append(store._idle)  # type: ignore[arg-type]

    monkeypatch.setattr(mirror_store.Store, "_arm_idle", armed)
    monkeypatch.setattr(mirror_store, "COMMIT_SECONDS", 3600.0)
    emu, stall = stalling(seed=13)
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        written = asyncio.Event()
        run = walking(client, into, written)
        await written.wait()
        assert timers  # the transaction left open by the two pages' writes
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        stall.release.set()
    # Nothing commits what the cancelled run left open: it was rolled back.
    assert all(timer.cancelled() for timer in timers)
    assert await written_by_others(into) == 0


class Gathered:
    """An ``on_change`` that keeps each change (its kind and id); it can stop at a call
    (``hold_at``: sets ``held`` and waits for ever) or raise at one (``fail_at``)."""

    def __init__(self, hold_at: int = 0, fail_at: int = 0) -> None:
        self.changes: list[tuple[str, uuid.UUID]] = []
        self.hold_at, self.fail_at = hold_at, fail_at
        self.held = asyncio.Event()

    async def __call__(self, change: Change) -> None:
        self.changes.append((change.change, uuid.UUID(str(change.item_id))))
        if len(self.changes) == self.fail_at:
            raise RuntimeError("on_change failed")
        if len(self.changes) == self.hold_at:
            self.held.set()
            await asyncio.Event().wait()


async def told_once_each(into: str, gathered: Gathered, errors: list[Any]) -> None:
    """Every change ``mirror_changes`` holds was told, once; every row written has its
    change; no task of the runs failed unseen."""
    gc.collect()
    rows = await query(into, "SELECT change, item_id FROM mirror_changes")
    assert sorted(gathered.changes) == sorted((c, uuid.UUID(str(i))) for c, i in rows)
    ((items,),) = await query(into, "SELECT count(*) FROM payroll_connections")
    assert items == sum(change == "inserted" for change, _ in gathered.changes)
    assert errors == []


@contextlib.contextmanager
def loop_errors() -> Iterator[list[Any]]:
    """What the event loop's exception handler is told meanwhile (a task failed unseen)."""
    errors: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        yield errors
    finally:
        loop.set_exception_handler(None)


async def every_change_once(into: str, gathered: Gathered) -> None:
    """Each change ``mirror_changes`` recorded (one per item: 300) was told, once."""
    ids = [key for _, key in gathered.changes]
    assert sorted(ids) == await recorded_ids(into)
    assert len(ids) == 300


async def recorded_ids(into: str) -> list[uuid.UUID]:
    rows = await query(into, "SELECT item_id FROM mirror_changes")
    return sorted(uuid.UUID(str(row[0])) for row in rows)


async def test_a_run_cancelled_after_a_commit_while_the_walk_waits_tells_what_it_committed(
    into: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirror_store, "COMMIT_SECONDS", 0.05)
    emu, stall = stalling(seed=14)
    told = Gathered()
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        written = asyncio.Event()
        run = walking(client, into, written, told)
        await written.wait()
        assert await written_by_others(into) == 99  # committed while the walk waits
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert len(told.changes) == 99  # told on the way out, not lost
        stall.release.set()
        await mirror(client, "payroll-connections", into=into, on_change=told)
    await every_change_once(into, told)


async def test_a_run_cancelled_during_a_commit_waits_for_it_and_tells_it(
    into: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirror_store, "COMMIT_SECONDS", 0.05)
    committing, go = asyncio.Event(), asyncio.Event()
    commit = mirror_store.Store._commit

    async def held(self: mirror_store.Store, *args: Any) -> None:
        committing.set()
        await go.wait()
        await commit(self, *args)

    monkeypatch.setattr(mirror_store.Store, "_commit", held)
    emu, stall = stalling(seed=15)
    told = Gathered()
    with loop_errors() as errors:
        async with emu, PayrollClient(emu.base_url, emu.token) as client:
            run = walking(client, into, asyncio.Event(), told)
            await committing.wait()  # a commit in flight, not done
            run.cancel()
            go.set()
            with pytest.raises(asyncio.CancelledError):
                await run
            # the commit went through, with nothing else on the connection, and was told
            assert 0 < len(told.changes) == len(await recorded_ids(into))
            stall.release.set()
            await mirror(client, "payroll-connections", into=into, on_change=told)  # not busy
        gc.collect()  # a task whose failure nobody read would say so now
    assert errors == []
    await every_change_once(into, told)


@pytest.mark.parametrize("at", [2, 3, 4])
async def test_a_run_cancelled_between_its_writes_leaves_no_row_without_its_change(
    into: str, at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A commit after every write: the cancel lands while a write waits for the last
    # commit, whose statements' task must not be left running on the connection.
    monkeypatch.setattr(mirror_store, "COMMIT_SECONDS", 0.0)
    # No hold of small writes either: on a loaded machine the first page comes late, the
    # SQLite walk then holds its pages for larger writes, and the run could end in fewer
    # writes than ``at`` without ever being cancelled. For the same reason, one page asked
    # for at a time (two ahead of the writer, not 16): while a loaded machine's first write
    # ran, the 16 fetched meanwhile made one write, and the 20 pages three in all.
    monkeypatch.setitem(mirror_walk.HOLD_ITEMS, "sqlite", 0)
    gathered = Gathered()
    with loop_errors() as errors:
        emu = Emulator(seed=70 + at, payroll_connections=1000)
        async with emu, PayrollClient(emu.base_url, emu.token) as client:
            calls = 0

            def on_progress(progress: MirrorProgress) -> None:
                nonlocal calls
                calls += 1
                if calls == at:
                    run.cancel()

            run = asyncio.create_task(
                mirror(
                    client,
                    "payroll-connections",
                    into=into,
                    on_change=gathered,
                    page_size=50,
                    concurrency=1,  # two pages ahead: writes of a few pages, many of them
                    on_progress=on_progress,
                )
            )
            with pytest.raises(asyncio.CancelledError):
                await run
            await mirror(client, "payroll-connections", into=into, on_change=gathered)
        await told_once_each(into, gathered, errors)


@pytest.mark.parametrize("at", [1, 120, 299])
async def test_a_run_cancelled_inside_on_change_tells_the_rest_of_what_it_committed(
    into: str, at: int
) -> None:
    gathered = Gathered(hold_at=at)
    with loop_errors() as errors:
        emu = Emulator(seed=22, payroll_connections=300)
        async with emu, PayrollClient(emu.base_url, emu.token) as client:
            run = asyncio.create_task(
                mirror(client, "payroll-connections", into=into, on_change=gathered, page_size=50)
            )
            await gathered.held.wait()
            gathered.hold_at = 0
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            await mirror(client, "payroll-connections", into=into, on_change=gathered)
        await told_once_each(into, gathered, errors)


async def test_a_run_cancelled_between_batches_of_deletions_tells_those_committed(
    into: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gathered = Gathered()
    with loop_errors() as errors:
        emu = Emulator(seed=41, payroll_connections=1300)
        async with emu, PayrollClient(emu.base_url, emu.token) as client:
            await mirror(client, "payroll-connections", into=into, on_change=gathered)
            # two batches of deletions (500 and 100), within the default bound (half of 1,300)
            emu.churn("payroll-connections", deleted=600)
            read = mirror_store.Store._delete
            calls = 0
            second = asyncio.Event()

            async def delete(self: mirror_store.Store, *args: Any) -> Any:
                nonlocal calls
                calls += 1
                if calls == 2:  # the second batch's: held
                    second.set()
                    await asyncio.Event().wait()
                return await read(self, *args)

            monkeypatch.setattr(mirror_store.Store, "_delete", delete)
            run = asyncio.create_task(
                mirror(client, "payroll-connections", into=into, on_change=gathered)
            )
            await second.wait()
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            assert sum(change == "deleted" for change, _ in gathered.changes) == 500
            monkeypatch.setattr(mirror_store.Store, "_delete", read)
            await mirror(client, "payroll-connections", into=into, on_change=gathered)
        await told_once_each(into, gathered, errors)
    assert sum(change == "deleted" for change, _ in gathered.changes) == 600


async def test_after_on_change_raises_it_is_told_nothing_more_and_nothing_uncommitted_stays(
    into: str,
) -> None:
    gathered = Gathered(fail_at=30)
    emu = Emulator(seed=21, payroll_connections=300)
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(RuntimeError, match="on_change failed"):
            await mirror(client, "payroll-connections", into=into, on_change=gathered, page_size=50)
        assert len(gathered.changes) == 30  # the run ended with its error: nothing more
        gathered.fail_at = 0
        again = await mirror(client, "payroll-connections", into=into, on_change=gathered)
    # What that run had committed is in mirror_changes (and --changes catches up from
    # there); what it had not is written and told by the next run.
    rows = await query(into, "SELECT item_id FROM mirror_changes")
    told = {key for _, key in gathered.changes}
    assert len(told) == len(gathered.changes)  # none twice
    assert told <= {uuid.UUID(str(key)) for (key,) in rows}
    assert again.inserted == len(rows) - (await committed_by_the_first(into, again.run_id))


async def committed_by_the_first(into: str, second: uuid.UUID) -> int:
    rows = await query(
        into,
        "SELECT count(*) FROM mirror_changes WHERE run_id <> :r",
        r=second if into.startswith("postgresql") else str(second),
    )
    return int(rows[0][0])


async def test_a_run_that_waits_for_another_says_so_while_that_one_writes(
    into: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first run's transaction stays open while the service keeps it waiting.
    monkeypatch.setattr(mirror_store, "COMMIT_SECONDS", 3600.0)
    emu, stall = stalling(seed=12)
    waiting = asyncio.Event()
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        written = asyncio.Event()
        first = walking(client, into, written)
        await written.wait()
        second = waiting_run(client, into, waiting)
        try:
            await asyncio.wait_for(waiting.wait(), 20)
            assert not first.done()
            assert not second.done()
        finally:
            stall.release.set()
            await asyncio.wait([first, second])
        done: MirrorResult = first.result()
        after: MirrorResult = second.result()
    assert done.inserted == 300
    assert (after.inserted, after.unchanged) == (0, 300)


async def test_two_runs_never_interleave(start_emulator: StartEmulator, into: str) -> None:
    emu = await start_emulator(seed=8, payroll_connections=200)
    holding = asyncio.Event()
    release = asyncio.Event()

    async def hold(change: Change) -> None:
        holding.set()
        await release.wait()

    waiting = asyncio.Event()
    async with PayrollClient(emu.base_url, emu.token) as client:
        first = asyncio.create_task(
            mirror(client, "payroll-connections", into=into, on_change=hold)
        )
        await holding.wait()
        with pytest.raises(MirrorBusyError, match="another mirror of payroll_connections"):
            await mirror(client, "payroll-connections", into=into)
        # Another collection is not held up.
        await mirror(client, "webhooks", into=into)
        second = waiting_run(client, into, waiting)
        await waiting.wait()
        assert not second.done()
        release.set()
        done: MirrorResult = await first
        after: MirrorResult = await second
    assert done.inserted == 200
    assert (after.inserted, after.unchanged) == (0, 200)


async def test_a_newer_schema_is_refused(start_emulator: StartEmulator, into: str) -> None:
    emu = await start_emulator(seed=9, payroll_connections=5)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "webhooks", into=into)
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        await query(into, f"INSERT INTO mirror_schema VALUES (3, '{now}')")
        with pytest.raises(MirrorError, match="schema version 3"):
            await mirror(client, "webhooks", into=into)


async def test_a_service_that_pages_smaller_than_asked_is_walked_at_its_page_size(
    start_emulator: StartEmulator, tmp_path: Any
) -> None:
    into = f"sqlite:///{tmp_path / 'small-pages.db'}"
    emu = await start_emulator(seed=10, payroll_connections=230, max_page_size=25)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into, page_size=100)
        churn = emu.churn("payroll-connections", deleted=3)
        result = await mirror(client, "payroll-connections", into=into, page_size=100)
    assert result.complete
    assert (await changes_of(into, result.run_id))["deleted"] == set(churn.deleted)
