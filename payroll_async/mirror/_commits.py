"""The run's transaction: pages grouped into commits, each commit running while the next
write is planned, and a commit when the walk waits on the service.

`Store` writes into the open transaction; it commits once it holds ``COMMIT_ROWS`` items
or is ``COMMIT_SECONDS`` old (``_due``, at the end of a write; a timer does it when no
write comes), and ``commit()`` commits the rest. A commit waits for the last write's
statements, writes the run's counts into ``mirror_runs`` and commits; its changes are
handed out once it is done.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
import uuid

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncTransaction

from ._change import Change
from ._driver import Statements

__all__ = ["COMMIT_ROWS", "COMMIT_SECONDS", "Commits"]

COMMIT_ROWS = {"postgresql": 5000, "sqlite": 5000}
"""Items a transaction gathers before it commits. PostgreSQL: a commit waits for the
server's disk (``synchronous_commit`` as the server says), so pages are grouped; SQLite: a
commit writes every page the transaction changed into the WAL, and random ids change pages
all over the id index, so fewer commits write far less (its lock is the whole database's:
another collection's run waits, at most ``COMMIT_SECONDS`` at a time)."""
COMMIT_SECONDS = 1.0
"""Or once the transaction is this old: at the next write, or while no write comes (the
walk waits on the service), so that no lock is held longer than this for nothing."""


class Commits:
    """The transaction state of one run's writes on one connection (`Store`'s base)."""

    def __init__(self, connection: AsyncConnection, sql: Statements, run_id: uuid.UUID) -> None:
        self._conn = connection
        self._sql = sql
        self.run_id = run_id
        self._open: AsyncTransaction | None = None  # the transaction not committed yet
        self._inflight: asyncio.Future[None] | None = None  # the last write's statements
        self._opened = 0.0
        self._pending: list[Change] = []  # its changes
        self._committing: list[Change] = []  # the changes of a commit in flight
        self.untold: collections.deque[Change] = collections.deque()
        """The changes committed and not told yet, in order (the run tells them)."""
        self.refused = False
        """Whether ``on_change`` raised: the run tells no more (it ends with that error)."""
        self._commit_in_flight = False
        self._pending_rows = 0
        self._writing = False  # inside write_pages (it commits for itself at its end)
        self._idle: asyncio.TimerHandle | None = None  # commits while the walk waits
        self._commit_rows = COMMIT_ROWS.get(connection.dialect.name, 1)

    def _counted(self) -> tuple[int, int, int, int]:
        """The run's counts now (items, inserted, updated, deleted), for ``mirror_runs``."""
        raise NotImplementedError

    def _due(self) -> bool:
        """Whether the open transaction is to be committed now (at the end of a write)."""
        return (
            self._pending_rows >= self._commit_rows
            or time.monotonic() - self._opened >= COMMIT_SECONDS
        )

    def _start_commit(self) -> None:
        """Commit the open transaction after the last write's statements: the commit (which
        waits for the disk) runs while the next write is planned; its changes are handed
        out once it is done (by a later ``write_pages``, or ``commit``)."""
        transaction, self._open = self._open, None
        assert transaction is not None
        self._cancel_idle()
        self._committing, self._pending, self._pending_rows = self._pending, [], 0
        self._inflight = asyncio.ensure_future(self._commit(self._inflight, transaction))
        self._commit_in_flight = True

    def _arm_idle(self) -> None:
        delay = max(0.0, self._opened + COMMIT_SECONDS - time.monotonic())
        self._idle = asyncio.get_running_loop().call_later(delay, self._idle_commit)

    def _idle_commit(self) -> None:
        """The timer: commit the open transaction if no write is under way (a write
        commits for itself when it ends) and it is old enough."""
        self._idle = None
        if self._open is None or self._writing:  # (open: no commit in flight, _begin settled)
            return
        if time.monotonic() - self._opened < COMMIT_SECONDS:
            self._arm_idle()
            return
        self._start_commit()

    async def stop(self) -> None:
        """The run ends before its last commit (cancelled, a callback raised): no commit
        starts from now on, a commit in flight is waited for (its changes join
        ``untold``), a write's statements are stopped and the open transaction is rolled
        back (the next run writes it again), so that nothing else uses the connection."""
        await self._rollback()

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
        # The counts once the write's statements are done (SQLite's tell them), before
        # the next write is counted (it waits for this commit).
        await self._sql.progress(self._conn, self.run_id, self._counted())
        await transaction.commit()

    async def _begin(self) -> None:
        await self._settle()  # a commit in flight
        self._open = await self._conn.begin()
        self._opened = time.monotonic()

    async def _settle(self) -> None:
        """Wait for the last write's statements or commit (their failure is raised here).
        They are not cancelled with this task: ``_rollback`` waits for them then."""
        inflight = self._inflight
        if inflight is None:
            return
        await asyncio.wait([inflight])
        self._done_inflight(inflight)
        inflight.result()

    def _done_inflight(self, inflight: asyncio.Future[None]) -> None:
        """The statements or the commit in flight are done: a commit that went through
        has its changes join ``untold``."""
        self._inflight = None
        committing, self._committing = self._committing, []
        if self._commit_in_flight and not inflight.cancelled() and inflight.exception() is None:
            self.untold.extend(committing)
        self._commit_in_flight = False

    async def commit(self) -> None:
        """Commit the pages written since the last commit; their changes join ``untold``."""
        self._cancel_idle()
        try:
            await self._settle()
        except BaseException:
            await self._rollback()
            raise
        if self._open is not None:
            try:
                await self._sql.progress(self._conn, self.run_id, self._counted())
            except BaseException:
                await self._rollback()
                raise
            transaction, self._open = self._open, None
            await transaction.commit()
        self.untold.extend(self._pending)
        self._pending, self._pending_rows = [], 0

    async def _rollback(self) -> None:
        self._cancel_idle()
        inflight = self._inflight
        if inflight is not None:
            # Statements are stopped; a commit is waited for (nothing else may use the
            # connection meanwhile, and it is not cancelled with this task), and if it
            # went through its changes are still told.
            if not self._commit_in_flight:
                inflight.cancel()
            await asyncio.wait([inflight])
            self._done_inflight(inflight)
        transaction, self._open = self._open, None
        self._pending, self._pending_rows = [], 0
        if transaction is not None and transaction.is_active:
            with contextlib.suppress(Exception):
                await transaction.rollback()
