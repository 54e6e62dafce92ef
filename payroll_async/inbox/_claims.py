"""What a worker does to the inbox's table, each a statement of its own: claim, renew,
record an outcome. Every time is the database's (``_schema.database_now``); every write
about a claimed event is fenced by the claim's number (``claims``, which only grows)."""

from __future__ import annotations

import builtins
import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import tenacity
from sqlalchemy import case, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ._records import DIED, _Claim
from ._schema import DEAD, DONE, EVENTS, PENDING, database_now

if TYPE_CHECKING:
    from .._sql import Database

__all__ = ["ClaimStatements"]

logger: logging.Logger = logging.getLogger("payroll_async.inbox")  # escaped: see _inbox


class ClaimStatements:
    """A worker's statements of an [`Inbox`][payroll_async.inbox.Inbox] (its base class)."""

    if TYPE_CHECKING:
        _db: Database
        _lease: float
        _wait: tenacity.wait.wait_base

        def _errors(self, doing: str) -> contextlib.AbstractContextManager[None]: ...

        def _begin(self) -> contextlib.AbstractAsyncContextManager[AsyncConnection]: ...

        async def _ensure(self) -> None: ...

    async def _claim(self, n: int, max_attempts: int, *, idle: bool) -> builtins.list[_Claim]:
        """Claim up to ``n`` due events; first, the due events already claimed
        ``max_attempts`` times (their last worker died) become dead.

        An event whose last worker died (``claimed_at`` still set) may have killed it: it
        is claimed only by an ``idle`` worker, alone (``_Claim.alone``), so that a crash
        it causes again takes no other event with it.
        """
        await self._ensure()
        now = database_now()
        due = (EVENTS.c.status == PENDING, EVENTS.c.next_attempt_at <= now)
        died = case((EVENTS.c.claimed_at.is_not(None), DIED), else_=EVENTS.c.last_error)
        spent = (
            select(EVENTS.c.event_id)
            .where(*due, EVENTS.c.attempts >= max_attempts)
            .with_for_update(skip_locked=True)
        )
        burying = (
            update(EVENTS)
            .where(EVENTS.c.event_id.in_(spent.scalar_subquery()))
            .values(
                status=DEAD,
                handled_at=now,
                next_attempt_at=None,
                claimed_at=None,
                last_error=died,
                claims=EVENTS.c.claims + 1,  # the fence moves: the dead claim's writes fail
            )
            .returning(EVENTS.c.event_id, EVENTS.c.attempts, EVENTS.c.last_error)
        )

        def claiming(left: bool, limit: int) -> Any:
            """The claim of due events whose last worker left them (``left``) or not."""
            pick = (
                select(EVENTS.c.event_id)
                .where(
                    *due,
                    EVENTS.c.attempts < max_attempts,
                    EVENTS.c.claimed_at.is_not(None) if left else EVENTS.c.claimed_at.is_(None),
                )
                .order_by(EVENTS.c.next_attempt_at)
                .limit(limit)
                .with_for_update(skip_locked=True)  # PostgreSQL; SQLite's is its write lock
            )
            return (
                update(EVENTS)
                .where(EVENTS.c.event_id.in_(pick.scalar_subquery()))
                .values(
                    attempts=EVENTS.c.attempts + 1,
                    claims=EVENTS.c.claims + 1,
                    claimed_at=now,
                    next_attempt_at=database_now(self._lease),
                    last_error=died,
                )
                .returning(EVENTS.c.event_id, EVENTS.c.body, EVENTS.c.attempts, EVENTS.c.claims)
            )

        rows: Sequence[Any] = ()
        with self._errors("claiming events"):
            async with self._begin() as connection:
                buried = (await connection.execute(burying)).all()
                if idle:
                    rows = (await connection.execute(claiming(True, 1))).all()
                alone = bool(rows)
                if not rows:
                    rows = (await connection.execute(claiming(False, n))).all()
        for event_id, attempts, last_error in buried:
            logger.warning("event %s is dead after %d attempts: %s", event_id, attempts, last_error)
        return [_Claim(event_id, bytes(body), a, c, alone) for event_id, body, a, c in rows]

    async def _fenced(self, claim: _Claim, **values: Any) -> bool:
        """Write ``values`` to the claimed row if the claim still holds; whether it did."""
        statement = (
            update(EVENTS)
            .where(
                EVENTS.c.event_id == claim.event_id,
                EVENTS.c.claims == claim.claims,
                EVENTS.c.status == PENDING,
            )
            .values(**values)
        )
        with self._errors(f"updating event {claim.event_id}"):
            async with self._begin() as connection:
                return (await connection.execute(statement)).rowcount == 1

    async def _mark_done(self, claims: builtins.list[_Claim]) -> builtins.list[bool]:
        """Mark the events of ``claims`` done, in one statement; which claims still held."""
        statement = (
            update(EVENTS)
            .where(
                EVENTS.c.status == PENDING,
                tuple_(EVENTS.c.event_id, EVENTS.c.claims).in_(
                    [(claim.event_id, claim.claims) for claim in claims]
                ),
            )
            .values(
                status=DONE,
                handled_at=database_now(),
                next_attempt_at=None,
                claimed_at=None,
                last_error=None,
            )
            .returning(EVENTS.c.event_id)
        )
        with self._errors(f"marking {len(claims)} event{'s' if len(claims) > 1 else ''} done"):
            async with self._begin() as connection:
                written = {event_id for (event_id,) in await connection.execute(statement)}
        return [claim.event_id in written for claim in claims]

    async def _ping(self) -> None:
        with self._errors("reaching the inbox"):
            async with self._begin() as connection:
                await connection.execute(select(1))

    async def _renew(self, claim: _Claim) -> bool:
        return await self._fenced(claim, next_attempt_at=database_now(self._lease))

    async def _failed(self, claim: _Claim, error: str, *, final: bool) -> bool:
        """The claim's attempt failed with ``error``: dead if ``final``, else due again
        after the backoff of its attempt. Whether the claim still held."""
        if final:
            return await self._fenced(
                claim,
                status=DEAD,
                handled_at=database_now(),
                next_attempt_at=None,
                claimed_at=None,
                last_error=error,
            )
        state = tenacity.RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
        state.attempt_number = claim.attempts
        return await self._fenced(
            claim,
            next_attempt_at=database_now(self._wait(state)),
            claimed_at=None,
            last_error=error,
        )
