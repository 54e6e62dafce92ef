"""The worker's store: what an inbox's worker does to the inbox's table, each a statement
of its own (claim, renew, record an outcome), through public methods only, as
procrastinate's worker talks to its job manager. Every time is the database's
(``_sql.database_now``); every write about a claimed event is fenced by the claim's
number (``claims``, which only grows)."""

from __future__ import annotations

import builtins
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import case, select, tuple_, update

from .._core._clock import doubled
from ._batch import Batched
from ._records import DIED, InboxError, _Claim
from ._schema import DEAD, DONE, EVENTS, PENDING, database_now

if TYPE_CHECKING:
    from .._sql import Database

__all__ = ["ClaimStore", "Outages", "backoff"]

logger: logging.Logger = logging.getLogger("payroll_async.inbox")  # escaped: see _inbox


def backoff(attempt: int, first: float, longest: float) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1, 2, ...): ``first`` doubling
    with each attempt, plus up to ``first`` of random jitter, at most ``longest`` (the
    rule of tenacity's ``wait_exponential_jitter``, in a few lines of our own)."""
    return max(0.0, min(doubled(first, attempt, longest) + random.uniform(0.0, first), longest))


class Outages:
    """Whether the inbox's database is down: logged once when it goes (an ERROR with the
    reason), once when it is back; the receiver's accepts and the workers share it."""

    def __init__(self) -> None:
        self.down = False

    def failed(self, exc: InboxError) -> None:
        if not self.down:
            self.down = True
            logger.error(
                "the inbox cannot be used (%s): notifications are answered 503 and "
                "workers wait until it can",
                exc,
            )

    def reached(self) -> None:
        if self.down:
            self.down = False
            logger.warning("the inbox can be used again")


class ClaimStore:
    """A worker's statements of an [`Inbox`][payroll_async.inbox.Inbox] (its ``Claims``)."""

    def __init__(
        self,
        database: Database,
        *,
        lease: float,
        poll_interval: float,
        backoff: float,
        backoff_max: float,
        ensure: Callable[[], Awaitable[None]],
        outages: Outages,
    ) -> None:
        self.lease = lease
        """Seconds a claim holds, on the database's clock."""
        self.poll_interval = poll_interval
        """Seconds an idle worker waits before it looks for due events again."""
        self._db = database
        self._backoff = (backoff, backoff_max)
        self._ensure = ensure
        self._outages = outages
        self.done: Batched[_Claim, bool] = Batched(self._mark_done)
        """``await done(claim)``: the event handled (with the others done, batched);
        whether the claim still held."""

    @property
    def secrets(self) -> tuple[str, ...]:
        """The database's secrets (its password), kept out of what a worker stores."""
        return self._db.secrets

    def outage(self, exc: InboxError) -> None:
        """The database failed: logged once an outage."""
        self._outages.failed(exc)

    def reached(self) -> None:
        """The database answered."""
        self._outages.reached()

    async def claim(self, n: int, max_attempts: int, *, idle: bool) -> builtins.list[_Claim]:
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
                    next_attempt_at=database_now(self.lease),
                    last_error=died,
                )
                .returning(EVENTS.c.event_id, EVENTS.c.body, EVENTS.c.attempts, EVENTS.c.claims)
            )

        rows: Sequence[Any] = ()
        with self._db.errors("claiming events"):
            async with self._db.engine.begin() as connection:
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
        with self._db.errors(f"updating event {claim.event_id}"):
            async with self._db.engine.begin() as connection:
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
        with self._db.errors(f"marking {len(claims)} event{'s' if len(claims) > 1 else ''} done"):
            async with self._db.engine.begin() as connection:
                written = {event_id for (event_id,) in await connection.execute(statement)}
        return [claim.event_id in written for claim in claims]

    async def ping(self) -> None:
        """Whether the database answers (raises ``InboxError`` if it does not)."""
        with self._db.errors("reaching the inbox"):
            async with self._db.engine.begin() as connection:
                await connection.execute(select(1))

    async def renew(self, claim: _Claim) -> bool:
        """Move the claim's lease on; whether the claim still held."""
        return await self._fenced(claim, next_attempt_at=database_now(self.lease))

    async def failed(self, claim: _Claim, error: str, *, final: bool) -> bool:
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
        return await self._fenced(
            claim,
            next_attempt_at=database_now(backoff(claim.attempts, *self._backoff)),
            claimed_at=None,
            last_error=error,
        )
