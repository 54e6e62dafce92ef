"""Writing pages in transactions of several writes; the database reads each page
(``_page_sql``).

A write holds the pages that arrived while the previous one ran (at most ``MAX_PAGES``).
A transaction holds several writes and the run's progress in ``mirror_runs``, and commits
every ``COMMIT_ROWS`` items, or ``COMMIT_SECONDS`` (also while the walk waits on the
service), and when a walk ends or fails: a run killed at any point leaves each page wholly
written or not at all, and the next run, finding those rows equal, records nothing twice.
A change is told (``on_change``) only once its transaction has committed. ``seen`` holds
the ids each pass saw (`SeenIds`): which live rows the first did not see.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import logging
import time
import uuid
from bisect import bisect_right
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from itertools import accumulate
from typing import Any

import attrs
import msgspec
from sqlalchemy import ColumnElement, Text, cast, func, insert, literal, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncTransaction

from .._sql import ItemId, UTCDateTime, database_now
from ._change import Change
from ._page_sql import PageSQL, PostgresPageSQL, Statements
from ._schema import CHANGES, RUNS, MirrorTable
from ._seen import KnownDigests, SeenIds
from ._sent import SentPage

__all__ = ["COMMIT_ROWS", "COMMIT_SECONDS", "MAX_PAGES", "Change", "Counts", "Store"]

logger = logging.getLogger("payroll_async")

MAX_PAGES = 10
"""Most pages written in one statement group (what arrived while the last was written)."""
_BATCH = 500  # ids per statement where a set of ids is marked deleted
COMMIT_ROWS = 5000
"""Items a transaction gathers before it commits. PostgreSQL: a commit waits for the
server's disk; SQLite: a commit writes every page of the database it changed into the WAL,
and random ids change pages all over the id index (its lock is the whole database's:
another collection's run waits, at most ``COMMIT_SECONDS`` at a time)."""
COMMIT_SECONDS = 1.0
"""Or once the transaction is this old: at the next write, or while no write comes (the
walk waits on the service), so that no lock is held longer than this for nothing."""


_uuids = msgspec.convert  # ids' text to UUIDs, in C
_encode = msgspec.json.encode
_rows = msgspec.json.Decoder(list[list[Any]]).decode  # PostgreSQL's rows as JSON text


def _drops(sizes: list[int], keys: list[str], last: dict[str, int]) -> list[str]:
    """For each page of a write (of ``sizes`` items; ``keys``, their ids in order), the
    items whose id comes again later in the write (the overlap: a page's last item, which
    the next page starts with), as a JSON array of their places in the page."""
    drops: list[list[int]] = [[] for _ in sizes]
    if len(last) != len(keys):
        starts = list(accumulate(sizes, initial=0))
        for at in sorted(set(range(len(keys))).difference(last.values())):
            page = bisect_right(starts, at) - 1
            drops[page].append(at - starts[page])
    return [_encode(places).decode() for places in drops]


@attrs.define
class Counts:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0


class Store:
    """The run's writes into one collection's table, on one connection, and their
    transactions."""

    def __init__(
        self,
        connection: AsyncConnection,
        mirrored: MirrorTable,
        collection: str,
        run_id: uuid.UUID,
        scope: uuid.UUID | None,
    ) -> None:
        self._collection = collection
        self.counts = Counts()
        self.keep_changes = True
        """Whether the changes of the writes are kept for ``untold`` (someone is told of them)."""
        self.items = 0
        """Items seen by this pass of the run (the ids its walks gave ``seen``; once it is
        narrowed, the distinct ones)."""
        table = mirrored.table
        self._key = table.c[mirrored.key]
        self._live: ColumnElement[bool] = table.c.mirror_deleted_at.is_(None)
        if scope is not None and mirrored.scope is not None:
            self._live = self._live & (table.c[mirrored.scope] == scope)
        self._conn = connection
        self._sql = Statements(table, mirrored.key, connection.dialect)
        self.run_id = run_id
        self._open: AsyncTransaction | None = None  # the transaction not committed yet
        self._inflight: asyncio.Future[None] | None = None  # the last write's statements
        self._opened = 0.0
        self._anchor = (datetime.datetime.now(datetime.timezone.utc), time.monotonic())
        self._pending: list[Change] = []  # its changes
        self._committing: list[Change] | None = None  # a commit in flight: its changes
        self.untold: collections.deque[Change] = collections.deque()
        """The changes committed and not told yet, in order (the run tells them)."""
        self.refused = False
        """Whether ``on_change`` raised: the run tells no more (it ends with that error)."""
        self._pending_rows = 0
        self._writing = False  # inside write_pages (it commits for itself at its end)
        self._idle: asyncio.TimerHandle | None = None  # commits while the walk waits
        self.seen = SeenIds()
        """The ids this pass's walks saw (they add them)."""
        self.repeated = False
        """Whether this pass's walks were given one id twice (other than overlaps)."""
        self._suspects: set[uuid.UUID] | None = None  # None: the first pass is running
        self.known = KnownDigests()
        """The digests of the live rows when the run began (read by ``start``): the
        pages' decoder takes an item among them for unchanged."""
        self.live_at_start = 0
        """Live rows (every scope) when the run began."""
        self.live = 0
        """Live rows of the run's scope before it (its inserts left out), counted once the
        first pass is written (``narrow_suspects``): the deletion guard's measure."""
        self._whole = scope is None or mirrored.scope is None  # the table's every live row
        self.scope = scope
        """The employer of the update groups being walked (the scope column's value)."""
        # PostgreSQL: the statements' write lock, taken at BEGIN (as SQLite's BEGIN
        # IMMEDIATE does): whoever waits for this run's writes (LOCK TABLE ... SHARE) waits
        # for the commit, not for a write told to on_progress but not yet begun.
        self._lock_first: str | None = None
        self._page: PageSQL | PostgresPageSQL = PageSQL(mirrored, mirrored.scope)
        if connection.dialect.name == "postgresql":
            name = connection.dialect.identifier_preparer.format_table(table)
            self._lock_first = f"LOCK TABLE {name} IN ROW EXCLUSIVE MODE"
            self._page = PostgresPageSQL(mirrored, mirrored.scope)

    async def start(self, started_at: datetime.datetime) -> None:
        await self._sql.attach(self._conn)
        # The changes' times are the database's, as the inbox's are: read once, then
        # moved on by this process's monotonic clock (no machine's wall clock in them).
        at = await self._conn.scalar(select(database_now()))
        self._anchor = (at or datetime.datetime.now(datetime.timezone.utc), time.monotonic())
        self.known, self.live_at_start = await self._sql.live_digests(self._conn)
        row = {"run_id": self.run_id, "collection": self._collection, "started_at": started_at}
        counts = dict.fromkeys(("items", "inserted", "updated", "deleted"), 0)
        await self._conn.execute(insert(RUNS).values(**row, complete=False, **counts))
        await self._conn.commit()

    async def write_pages(self, pages: Sequence[SentPage]) -> None:
        """Upsert some pages into the open transaction; the changes of the commits done
        by then join ``untold``. A page whose every item a live row held when the run
        began (by its digest) is not written."""
        changed = any(page.changed() for page in pages)
        self.items = self.seen.added  # (the walks gave ``seen`` these pages' ids)
        if not (changed or self._open is not None or self._suspects is not None):
            return  # nothing to write
        # The pages' statements, run while the walk goes on (after the last write's).
        sql, page_sql = self._sql, self._page
        now = self._database_now()
        scope = None if self.scope is None else str(self.scope)
        keys = [key for page in pages for key in page.ids]
        if self._suspects is not None:  # a later pass: the suspects it saw are not
            self._suspects.difference_update(_uuids(keys, list[uuid.UUID]))
        last = dict(zip(keys, range(len(keys)), strict=True))  # each id's last place
        bodies = [bytes(page.body).decode() for page in pages if len(page)]
        digests = [page.digests.tolist() for page in pages if len(page)]
        self._writing = True
        try:
            if isinstance(page_sql, PageSQL):
                drops = _drops([len(page) for page in pages if len(page)], keys, last)
                statements: list[tuple[str, Any]] = [
                    (page_sql.clear, ()),
                    *(
                        (page_sql.stage, {"page": body, "digests": _encode(d).decode(), "drop": x})
                        for body, d, x in zip(bodies, digests, drops, strict=True)
                    ),
                    (page_sql.legacy, {"scope": scope}),
                ]
                if self._open is None:
                    # This run alone writes the table (the run lock): its rows are compared
                    # before the write lock is taken, and a write with nothing to write
                    # takes none.
                    await self._settle()
                    found = await sql.run_all([*statements, (page_sql.count, ())])
                    if not found[-1][0][2]:
                        return
                    statements = []
                params = {
                    "now": sql.time(now),
                    "scope": scope,
                    "run": sql.uuid(self.run_id),
                    "collection": self._collection,
                }
                nul = any("\\u0000" in body for body in bodies)
                statements += [
                    (page_sql.upsert_nul if nul else page_sql.upsert, params),
                    (page_sql.changes, params),
                    (page_sql.nulls, ()),
                    (page_sql.count, ()),
                    *([(page_sql.told, ())] if self.keep_changes else []),
                ]
                run = partial(self._apply_sqlite, statements)
            else:  # the pages' items in one JSON array (see ``_READ``)
                items_sent = b",".join([raw for page in pages for raw in page.raws])
                flat = [digest for some in digests for digest in some]
                args = [f"[{items_sent.decode()}]", _encode(flat).decode(), now, self.run_id]
                args += [self._collection, *([self.scope] if page_sql.scoped else [])]
                statement = page_sql.write_told if self.keep_changes else page_sql.write
                run = partial(self._apply_postgres, statement, tuple(args))
            if self._open is None:
                await self._begin()
            self._inflight = asyncio.ensure_future(
                self._apply(self._inflight, run, now, self._pending)
            )
        except BaseException:
            await self.stop()
            raise
        finally:
            self._writing = False
            if self._open is not None and self._idle is None:
                # The walk may now wait on the service: no lock is held for nothing.
                self._arm_idle()
        self._pending_rows += len(last)
        if self._due():
            self._start_commit()

    def _database_now(self) -> datetime.datetime:
        """The database's time now (``start`` read it), for the changes' stamps."""
        at, then = self._anchor
        return at + datetime.timedelta(seconds=time.monotonic() - then)

    async def _begin(self) -> None:
        await self._settle()  # a commit in flight
        self._open = await self._conn.begin()
        self._opened = time.monotonic()
        if self._lock_first is not None:
            await self._conn.exec_driver_sql(self._lock_first)

    async def _apply(
        self,
        previous: asyncio.Future[None] | None,
        run: Callable[[], Awaitable[tuple[int, int, list[Any]]]],
        now: datetime.datetime,
        pending: list[Change],
    ) -> None:
        """Run a write's statements after the last write's; its counts, warnings and
        changes (into ``pending``, its transaction's) from what ``run`` gives back:
        (inserted, updated, rows of key, kind, before, after, and a flag per checked
        column left NULL)."""
        if previous is not None:
            await previous
        inserted, updated, rows = await run()
        self.counts.inserted += inserted
        self.counts.updated += updated
        checked = self._page.checked
        for key, kind, before, after, *empty in rows:
            names = [name for name, null in zip(checked, empty, strict=True) if null]
            if names:
                logger.warning(
                    "mirror %s: item %s stored with %s NULL (a value the database cannot "
                    "hold; mirror_item keeps it as sent)",
                    self._collection,
                    key,
                    ", ".join(names),
                )
            if kind != "kept" and self.keep_changes:
                change = Change(
                    self.run_id, self._collection, uuid.UUID(key), kind, now, before, after
                )
                pending.append(change)

    async def _apply_sqlite(self, statements: list[tuple[str, Any]]) -> tuple[int, int, list[Any]]:
        found = await self._sql.run_all(statements)
        told = found.pop() if self.keep_changes else []
        nulls, ((inserted, updated, _),) = found[-2], found[-1]
        blank = [False] * len(self._page.checked)
        rows = [(k, kind, before, after, *blank) for k, kind, before, after in told]
        rows += [(k, "kept", None, None, *flags) for k, *flags in nulls]
        return inserted, updated, rows

    async def _apply_postgres(
        self, statement: str, args: tuple[Any, ...]
    ) -> tuple[int, int, list[Any]]:
        row: Any = (await self._conn.exec_driver_sql(statement, args)).one()
        return int(row[0]), int(row[1]), _rows(row[2]) if row[2] else []

    async def _progress(
        self, finished: datetime.datetime | None = None, complete: bool = False
    ) -> None:
        """The run's counts into ``mirror_runs`` (before each commit, and at the end)."""
        done = {"finished_at": finished, "complete": complete, "items": self.items}
        numbers = update(RUNS).values(**done, **attrs.asdict(self.counts))
        await self._conn.execute(numbers.where(RUNS.c.run_id == self.run_id))

    def begin_pass(self) -> None:
        self.items = 0
        self.seen = SeenIds()

    async def narrow_suspects(self) -> int:
        """After a pass: the live rows the first pass did not see, less those seen since."""
        self.seen.freeze()
        self.items = len(self.seen)
        self.repeated = self.items != self.seen.added
        if self._suspects is not None:
            return len(self._suspects)
        suspects: set[uuid.UUID] = set()
        conn = self._conn
        await self.commit()  # nothing new: the run committed (and told) after the pass
        async with conn.begin():
            live = self.live_at_start + self.counts.inserted  # (the run lock: its inserts)
            if not self._whole:
                live = (await conn.execute(select(func.count()).where(self._live))).scalar() or 0
            self.live = live - self.counts.inserted
            # Every item seen was written live, so equal counts mean every live row was seen.
            if live != self.items:
                result = await conn.stream(select(self._key).where(self._live))
                async for (key,) in result:
                    if key not in self.seen:
                        suspects.add(key)
        self._suspects = suspects
        return len(suspects)

    async def delete_suspects(self) -> None:
        """Mark the rows every pass missed as deleted, in batches, each batch's changes
        joining ``untold`` once it is committed."""
        pending = sorted(self._suspects or ())
        for start in range(0, len(pending), _BATCH):
            self.untold.extend(await self._delete(pending[start : start + _BATCH]))
        self._suspects = set()

    async def _delete(self, ids: list[uuid.UUID]) -> list[Change]:
        """One batch: each row's change (its ``mirror_item`` as ``before``), then the rows
        marked deleted, committed with the run's progress."""
        key, conn = self._key, self._conn
        now = self._database_now()
        live = key.in_(ids) & self._live
        sent = (literal(self.run_id, ItemId()), literal(self._collection), key)
        recorded = select(*sent, literal("deleted"), literal(now, UTCDateTime()))
        changed = insert(CHANGES).from_select(
            ["run_id", "collection", "item_id", "change", "at", "before"],
            recorded.add_columns(key.table.c.mirror_item).where(live),
        )
        async with conn.begin():
            found = await conn.execute(
                changed.returning(CHANGES.c.item_id, cast(CHANGES.c.before, Text))
            )
            before: dict[uuid.UUID, str | None] = dict(iter(found))
            await conn.execute(update(key.table).where(live).values(mirror_deleted_at=now))
            self.counts.deleted += len(ids)
            await self._progress()
        return [
            Change(self.run_id, self._collection, i, "deleted", now, before.get(i)) for i in ids
        ]

    async def finish(self, complete: bool) -> None:
        await self.commit()  # nothing new: the run committed (and told) after the pass
        async with self._conn.begin():
            await self._progress(datetime.datetime.now(datetime.timezone.utc), complete)

    def _due(self) -> bool:
        return (
            self._pending_rows >= COMMIT_ROWS or time.monotonic() - self._opened >= COMMIT_SECONDS
        )

    def _start_commit(self) -> None:
        """Commit the open transaction after the last write's statements, while the next
        write is planned; its changes are handed out once it is done."""
        transaction, self._open = self._open, None
        assert transaction is not None
        self._cancel_idle()
        self._committing, self._pending, self._pending_rows = self._pending, [], 0
        self._inflight = asyncio.ensure_future(self._commit(self._inflight, transaction))

    def _arm_idle(self) -> None:
        delay = max(0.0, self._opened + COMMIT_SECONDS - time.monotonic())
        self._idle = asyncio.get_running_loop().call_later(delay, self._idle_commit)

    def _idle_commit(self) -> None:
        """The timer: commit the open transaction if it is old enough and no write is
        under way (a write commits for itself when it ends)."""
        self._idle = None
        if self._open is None or self._writing:
            return
        if time.monotonic() - self._opened < COMMIT_SECONDS:
            self._arm_idle()
            return
        self._start_commit()

    def _cancel_idle(self) -> None:
        idle, self._idle = self._idle, None
        if idle is not None:
            idle.cancel()

    async def _commit(
        self,
        statements: asyncio.Future[None] | None,
        transaction: AsyncTransaction,
    ) -> None:
        if statements is not None:
            await statements
        await self._progress()  # once the statements told the counts
        await transaction.commit()

    async def _settle(self) -> None:
        """Wait for the last write's statements or commit (raising their failure), not
        cancelling them with this task."""
        inflight = self._inflight
        if inflight is None:
            return
        await asyncio.wait([inflight])
        self._done_inflight(inflight)
        inflight.result()

    def _done_inflight(self, inflight: asyncio.Future[None]) -> None:
        """A commit's changes join ``untold`` once it is done."""
        self._inflight = None
        committing, self._committing = self._committing, None
        if committing is not None and not inflight.cancelled() and inflight.exception() is None:
            self.untold.extend(committing)

    async def commit(self) -> None:
        """Commit the pages written since the last commit; their changes join ``untold``."""
        self._cancel_idle()
        try:
            await self._settle()
            if self._open is not None:
                await self._progress()
        except BaseException:
            await self.stop()
            raise
        if self._open is not None:
            transaction, self._open = self._open, None
            await transaction.commit()
        self.untold.extend(self._pending)
        self._pending, self._pending_rows = [], 0

    async def stop(self) -> None:
        """Roll back: a write or a commit failed, or the run ends before its last commit
        (cancelled, a callback raised). A commit in flight is waited for (its changes join
        ``untold``), a write's statements are stopped and the open transaction is rolled
        back (the next run writes it again)."""
        self._cancel_idle()
        inflight = self._inflight
        if inflight is not None:
            if self._committing is None:
                inflight.cancel()
            await asyncio.wait([inflight])
            self._done_inflight(inflight)
        await self._sql.idle()  # a write's statements still running in their thread
        transaction, self._open = self._open, None
        self._pending, self._pending_rows = [], 0
        if transaction is not None and transaction.is_active:
            with contextlib.suppress(Exception):
                await transaction.rollback()
