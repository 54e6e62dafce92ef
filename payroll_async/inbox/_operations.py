"""What an operator does with an inbox: ``stats``, ``list``, ``retry`` and ``purge``."""

from __future__ import annotations

import builtins
import contextlib
import datetime
from typing import TYPE_CHECKING

import attrs
from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from .._core._exceptions import InvalidArgumentError
from .._core._secrets import scrub
from ._records import (
    InboxEntry,
    InboxStats,
    _count,
)
from ._schema import DEAD, DONE, EVENTS, PENDING, STATUSES, database_now

if TYPE_CHECKING:
    from .._sql import Database

__all__ = ["InboxOperations"]

_OLDEST = datetime.timedelta(days=2000 * 365)  # older than any time the databases stamp


class InboxOperations:
    """The operator's calls of an [`Inbox`][payroll_async.inbox.Inbox] (its base class)."""

    if TYPE_CHECKING:
        _db: Database

        def _errors(self, doing: str) -> contextlib.AbstractContextManager[None]: ...

        def _begin(self) -> contextlib.AbstractAsyncContextManager[AsyncConnection]: ...

        async def _ensure(self) -> None: ...

    async def stats(self) -> InboxStats:
        """How many events are pending, retrying, done and dead; how old the oldest pending is."""
        await self._ensure()
        # An attempt counts when it is claimed: a first attempt in flight has failed
        # nothing yet. Failed at least once: a second attempt or later; a first one
        # settled without success (its claim let go); a first one whose worker died
        # (its lease ran out, on the database's clock, with no outcome written).
        failed = (EVENTS.c.attempts > 1) | (
            (EVENTS.c.attempts == 1)
            & (EVENTS.c.claimed_at.is_(None) | (EVENTS.c.next_attempt_at <= database_now()))
        )
        columns = (
            EVENTS.c.status,
            func.count(),
            func.count().filter(failed),
            func.min(EVENTS.c.received_at),
        )
        with self._errors("reading the inbox"):
            async with self._begin() as connection:
                rows = (await connection.execute(select(*columns).group_by(EVENTS.c.status))).all()
        counts = {status: (n, retried, oldest) for status, n, retried, oldest in rows}
        pending, retrying, oldest = counts.get(PENDING, (0, 0, None))
        return InboxStats(
            pending=pending,
            retrying=retrying,
            done=counts.get(DONE, (0,))[0],
            dead=counts.get(DEAD, (0,))[0],
            oldest_pending=oldest,
        )

    async def list(
        self, status: str | None = None, *, limit: int = 100
    ) -> builtins.list[InboxEntry]:
        """The latest ``limit`` events received (of ``status`` if given), newest first."""
        if status is not None and status not in STATUSES:
            raise InvalidArgumentError(
                f"status must be one of {', '.join(STATUSES)}, got {status!r}"
            )
        _count("limit", limit)
        await self._ensure()
        query = (
            select(*(EVENTS.c[field.name] for field in attrs.fields(InboxEntry)))
            .order_by(EVENTS.c.received_at.desc(), EVENTS.c.event_id)
            .limit(limit)
        )
        if status is not None:
            query = query.where(EVENTS.c.status == status)
        with self._errors("reading the inbox"):
            async with self._begin() as connection:
                rows = (await connection.execute(query)).all()
        # Stored by this release without a secret; an earlier one's may hold one it knew.
        entries = [InboxEntry(*row) for row in rows]
        return [
            e
            if e.last_error is None
            else attrs.evolve(e, last_error=scrub(e.last_error, self._db.secrets))
            for e in entries
        ]

    async def retry(self, event_id: str | None = None, *, dead: bool = False) -> int:
        """Put events back to pending, due now, with no attempts: how many were.

        ``retry(event_id)``: that event, if it is done (a replay) or dead.
        ``retry(dead=True)``: every dead event. A pending event is left as it is (it may
        be in a worker's hands).
        """
        if (event_id is None) == (not dead):
            raise InvalidArgumentError("retry needs an event_id or dead=True (one of them)")
        where = EVENTS.c.event_id == event_id if event_id is not None else EVENTS.c.status == DEAD
        statement = (
            update(EVENTS)
            .where(where, EVENTS.c.status != PENDING)
            .values(
                status=PENDING,
                attempts=0,
                next_attempt_at=database_now(),
                handled_at=None,
                # the fence moves: a worker still holding an older claim (its loop frozen
                # past its lease) cannot write its outcome over the replay
                claims=EVENTS.c.claims + 1,
            )
        )
        await self._ensure()
        with self._errors("retrying events"):
            async with self._begin() as connection:
                return (await connection.execute(statement)).rowcount

    async def purge(self, done_before: datetime.timedelta) -> int:
        """Delete the events handled more than ``done_before`` ago: how many were.

        Only ``done`` events go; dead ones stay until retried. The ids deleted are no
        longer remembered, so a copy arriving later is stored and handled again: keep
        ``done_before`` longer than the sender's redelivery schedule.
        """
        if not isinstance(done_before, datetime.timedelta) or done_before < datetime.timedelta():
            raise InvalidArgumentError(f"done_before must be a timedelta >= 0, got {done_before!r}")
        await self._ensure()
        if done_before > _OLDEST:
            return 0  # an age beyond the calendar (timedelta.max): every event is younger
        # The age on the database's clock, as handled_at was stamped: a purging machine
        # whose clock is ahead must not take an event handled seconds ago for an old one.
        cutoff = database_now(-done_before.total_seconds())
        statement = delete(EVENTS).where(EVENTS.c.status == DONE, EVENTS.c.handled_at <= cutoff)
        with self._errors("purging the inbox"):
            async with self._begin() as connection:
                return (await connection.execute(statement)).rowcount
