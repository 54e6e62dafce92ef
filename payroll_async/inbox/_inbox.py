"""The inbox: notifications committed before the 200, handled by workers that may die.

One table (``_schema.EVENTS``) on the storage package (``_sql``: the URL,
the engine, SQLite's ``BEGIN IMMEDIATE`` and 0600 file, errors without the password).

- ``accept``: ``INSERT ... ON CONFLICT (event_id) DO NOTHING RETURNING``, one statement for
  the notifications that arrived together (``_batch.Batched``), so an event id is stored
  once however many receivers get copies at the same moment.
- a worker claims due events with one ``UPDATE ... WHERE event_id IN (SELECT ... FOR UPDATE
  SKIP LOCKED) RETURNING``: on PostgreSQL two workers' claims skip each other's rows; on
  SQLite the claim runs under the database's single write lock (``BEGIN IMMEDIATE``).
- every later write about a claimed event is fenced by the claim's number (``claims``,
  which only grows); every time is the database's.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import bindparam
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, StatementError
from sqlalchemy.ext.asyncio import AsyncConnection

from .._core._exceptions import InvalidArgumentError
from .._core._secrets import ScrubbingFilter
from .._core._unconfigured import shown_unconfigured
from .._core._validation import check_concurrency, check_seconds
from .._core._visible import EscapingFilter
from .._sql import Database, ErrorKinds, compiled, converter, open_database, row_converter
from ..models import WebhookEvent
from ._batch import Batched, Failed
from ._claims import ClaimStore, Outages
from ._operations import InboxOperations
from ._records import (
    InboxEntry,
    InboxError,
    InboxStats,
    InboxURLError,
    _count,
)
from ._schema import EVENTS, PENDING, SCHEMA_VERSION, database_now, install
from ._worker import _Worker

if TYPE_CHECKING:
    from ..events import EventRouter

__all__ = ["Inbox", "InboxEntry", "InboxError", "InboxStats", "InboxURLError"]

logger: logging.Logger = logging.getLogger("payroll_async.inbox")
logger.addFilter(EscapingFilter())  # event ids and handlers' errors are outside text
logger.addFilter(ScrubbingFilter())  # every secret held, out of messages and tracebacks
# A failed handler's WARNING (its error scrubbed, as stored) and an outage's ERROR are
# seen without logging configured, as the receiver's refusals are.
shown_unconfigured(logger)

_SCHEMA_LOCK = 0x7061_7972_6F6C_6C01  # the PostgreSQL lock of the inbox's table creation
_LONGEST = 365 * 86400.0  # seconds of a lease or a backoff
_STAMPED = ("received_at", "next_attempt_at")  # an accept's times: the database's
_GIVEN = [column for column in EVENTS.c if column.name not in _STAMPED]
_SENDERS = ("event_type", "occurred_at")  # the typed columns of the sender's values
_ERRORS = ErrorKinds(InboxError, InboxURLError, InboxError, "inbox")  # what _sql raises


def _unnested(dialect: Any) -> str:
    """PostgreSQL's INSERT of an accept's rows, each column an array (``$n::type[]``)."""
    names = ", ".join(column.name for column in _GIVEN)
    arrays = ", ".join(
        f"${n}::{column.type.compile(dialect=dialect)}[]" for n, column in enumerate(_GIVEN, 1)
    )
    now = database_now().compile(dialect=dialect).string
    return (
        f"INSERT INTO {EVENTS.name} ({names}, {', '.join(_STAMPED)}) "
        f"SELECT {names}, {', '.join(now for _ in _STAMPED)} "
        f"FROM unnest({arrays}) AS given({names}) "
        "ON CONFLICT (event_id) DO NOTHING RETURNING event_id"
    )


class _RowRefused(InboxError):
    """The database refused a statement for its values, not for failing itself."""


# SQLSTATE classes of a refusal for the values: data exception, integrity constraint
# violation, program limit exceeded (an index row too large).
_VALUES_REFUSED = ("22", "23", "54")


def _refused_for_its_values(exc: BaseException) -> bool:
    """Whether ``exc`` refused a statement for its values (the connection is fine)."""
    if isinstance(exc, (DataError, IntegrityError)):
        return True
    if isinstance(exc, DBAPIError):
        state = getattr(exc.orig, "sqlstate", None)
        return isinstance(state, str) and state[:2] in _VALUES_REFUSED
    # a value the driver or a type could not bind
    return isinstance(exc, StatementError)


class Inbox(InboxOperations):
    """A durable inbox of verified notifications: SQLite by default, PostgreSQL for a fleet.

    ```pycon
    >>> from payroll_async.inbox import Inbox
    >>> inbox = Inbox("sqlite:///inbox.db")                  # or postgresql://USER@HOST/DB
    >>> router = EventRouter(secret="whsec_...", inbox=inbox)  # store, answer 200
    >>> await inbox.run(router, concurrency=8)                 # a worker: claim, handle, retry
    ```

    Needs the ``mirror`` extra (SQLAlchemy with aiosqlite and asyncpg). The table
    ``inbox_events`` is created on first use (or migrated, if an earlier version made it).

    ``lease``: seconds a worker's claim on an event holds, on the database's clock (no
    machine's clock decides it); renewed every ``lease / 3`` while the handlers run, so
    only a worker that died (or lost the database for a whole lease) loses it, and then
    another worker runs the event again. ``backoff`` and ``backoff_max``: the first and
    the longest wait before a failed event is tried again (exponential, with up to
    ``backoff`` seconds of random jitter). ``lease`` and ``backoff_max`` are at most a
    year. ``poll_interval``:
    seconds an idle worker waits before looking for due events again.
    """

    logs_its_failures: ClassVar[bool] = True
    """The inbox logs its own failures (an outage once, with its reason): an
    [`EventRouter`][payroll_async.events.EventRouter] adds no line of its own (see
    [`InboxLike`][payroll_async.events.InboxLike])."""

    def __init__(
        self,
        url: str,
        *,
        lease: float = 60.0,
        backoff: float = 1.0,
        backoff_max: float = 3600.0,
        poll_interval: float = 1.0,
    ) -> None:
        if not isinstance(url, str):
            raise InboxURLError(f"the inbox URL must be a str, got {type(url).__name__}")
        lease = check_seconds(lease, "lease")
        poll_interval = check_seconds(poll_interval, "poll_interval")
        backoff = check_seconds(backoff, "backoff")
        backoff_max = check_seconds(backoff_max, "backoff_max")
        if backoff_max < backoff:
            raise InvalidArgumentError("backoff_max must be at least backoff")
        for name, seconds in (("lease", lease), ("backoff_max", backoff_max)):
            if seconds > _LONGEST:  # a time the databases' dates can hold
                raise InvalidArgumentError(
                    f"{name} must be at most {_LONGEST:,.0f} seconds (a year), got {seconds:g}"
                )
        self._db: Database = open_database(url, _ERRORS)
        self._outages = Outages()  # the database down: logged once, by accepts and workers
        # what a worker asks of the table: it talks to this store, not to the Inbox
        self._store = ClaimStore(
            self._db,
            lease=lease,
            poll_interval=poll_interval,
            backoff=backoff,
            backoff_max=backoff_max,
            ensure=self._ensure,
            outages=self._outages,
        )
        postgres = self._db.dialect == "postgresql"
        insert: Any = (postgresql.insert if postgres else sqlite.insert)(EVENTS)
        # when it came, and so when it is due, on the database's clock (not the receiver's)
        self._storing = (
            insert.values({name: database_now() for name in _STAMPED})
            .on_conflict_do_nothing(index_elements=["event_id"])
            .returning(EVENTS.c.event_id)
        )
        # One notification (a receiver's usual case): the same statement compiled once,
        # its row sent to the driver as a tuple in stored form, as the mirror's hot path
        # does (_sql.compiled): no per-call compilation or type processing.
        self._storing_one, order = compiled(
            self._storing.values({c.name: bindparam(c.name) for c in _GIVEN}),
            self._db.engine.dialect,
        )
        if order != [c.name for c in _GIVEN]:
            raise AssertionError(f"unexpected column order of the inbox's INSERT: {order}")
        self._stored_form = row_converter(_GIVEN, self._db.dialect)
        # PostgreSQL: any number of rows in one statement of the same text, prepared once
        # per connection: each column one array parameter, ``unnest`` makes the rows.
        self._storing_many = _unnested(self._db.engine.dialect) if postgres else None
        self._checks = {name: converter(EVENTS.c[name], self._db.dialect) for name in _SENDERS}
        # Notifications that arrive while one commit runs are stored by the next one.
        self._accepting = Batched(self._insert_rows)
        # One INSERT is its own transaction: on PostgreSQL in autocommit (one round trip
        # instead of three); SQLite's BEGIN IMMEDIATE is kept (_sql).
        self._writer = (
            self._db.engine.execution_options(isolation_level="AUTOCOMMIT")
            if postgres
            else self._db.engine
        )
        self._held: AsyncConnection | None = None  # the connection accepts are written on
        self._ready = False

    def __repr__(self) -> str:
        return f"Inbox({self._db.shown!r})"

    @property
    def url(self) -> str:
        """The database's URL, its password hidden."""
        return self._db.shown

    async def close(self) -> None:
        """Close the database connections (the inbox opens them again when used)."""
        await self._let_go()
        await self._db.engine.dispose()

    async def _let_go(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            with contextlib.suppress(Exception):
                await held.close()

    async def __aenter__(self) -> Inbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _errors(self, doing: str) -> contextlib.AbstractContextManager[None]:
        return self._db.errors(doing)

    @contextlib.asynccontextmanager
    async def _begin(self) -> AsyncIterator[AsyncConnection]:
        async with self._db.engine.begin() as connection:
            yield connection

    async def open(self) -> None:
        """Connect to the database and make the inbox's table if it is new, now.

        Every other method does it on first use; call this at a service's start to learn
        then that the database cannot be used: an
        [`InboxError`][payroll_async.inbox.InboxError] says why (a wrong password, a
        refused connection, an unknown host, a table made by a later version), without
        the password.
        """
        await self._ensure()

    async def _ensure(self) -> None:
        if self._ready:
            return
        with self._errors(f"creating the inbox's table in {self._db.shown}"):
            async with (
                self._db.engine.connect() as connection,
                self._db.schema_transaction(connection, _SCHEMA_LOCK),
            ):
                found = await connection.run_sync(install)
        if found is not None and found > SCHEMA_VERSION:
            raise InboxError(
                f"the inbox in {self._db.shown} was made by a later version of payroll-async "
                f"(schema {found}, this one knows {SCHEMA_VERSION}): upgrade payroll-async"
            )
        self._ready = True

    async def accept(self, event: WebhookEvent, body: bytes) -> bool:
        """Commit a verified notification: True if stored now, False if its id already was.

        ``body`` is kept as sent. Raises [`InboxError`][payroll_async.inbox.InboxError]
        if the database cannot be written (the receiver answers 503: nothing is lost).
        """
        if not event.event_id:
            raise InvalidArgumentError("an event needs an event_id to be kept in the inbox")
        row = {
            "event_id": event.event_id,
            "event_type": str(event.event_type),
            "occurred_at": event.occurred_at,
            "body": bytes(body),
            "status": PENDING,
            "attempts": 0,
            "claims": 0,
        }
        self._storable(row)
        return await self._accepting(row)

    def _storable(self, row: dict[str, Any]) -> None:
        """A value of the sender's that its typed column cannot hold (an ``occurredAt``
        beyond UTC's calendar, a NUL in PostgreSQL's text) made NULL, as the mirror does:
        the body keeps it as sent. Checked alone, so that it never fails a batch (an
        eventId the database cannot hold fails its own notification: ``_insert_rows``)."""
        empty = []
        for name in _SENDERS:
            try:
                self._checks[name](row[name])
            except (OverflowError, ValueError):
                row[name] = None
                empty.append(name)
        if empty:
            logger.warning(
                "notification %s: its %s cannot be held in the inbox's typed column and is "
                "stored NULL (the body keeps it as sent)",
                row["event_id"],
                " and ".join(empty),
            )

    async def _insert_rows(
        self, rows: builtins.list[dict[str, Any]]
    ) -> builtins.list[bool | Failed]:
        """One INSERT of the notifications that arrived together; which were new.

        A copy in the same batch is not new either: the first of an id gets the answer.
        A statement that the database refuses for a row's sake (an eventId too long for
        its index, say) is made again one row at a time, so that only that row fails.
        """
        unique = {row["event_id"]: row for row in reversed(rows)}
        failed: dict[str, InboxError] = {}
        try:
            stored = await self._insert_unique(unique)
        except _RowRefused as refused:
            stored = set()
            if len(unique) == 1:
                failed = dict.fromkeys(unique, refused)
            else:
                for event_id, row in unique.items():
                    try:
                        stored |= await self._insert_unique({event_id: row})
                    except InboxError as exc:
                        failed[event_id] = exc
            for event_id, error in failed.items():
                if isinstance(error, _RowRefused):
                    logger.error("notification %s could not be stored: %s", event_id, error)
                else:
                    self._outages.failed(error)
        except InboxError as exc:
            self._outages.failed(exc)  # logged once an outage; each sender is answered 503
            raise
        answers: builtins.list[bool | Failed] = []
        for row in rows:
            event_id = row["event_id"]
            answers.append(Failed(failed[event_id]) if event_id in failed else event_id in stored)
            stored.discard(row["event_id"])
        return answers

    async def _insert_unique(self, unique: dict[str, dict[str, Any]]) -> set[str]:
        """Store the rows by event id; the ids stored now (the first row of each id).

        Raises ``_RowRefused`` if the database refused the statement for its values (a
        data or integrity error, a limit) rather than failing itself."""
        await self._ensure()
        doing = f"storing {len(unique)} notification{'s' if len(unique) > 1 else ''}"
        refused = False
        try:
            with self._errors(doing):
                try:
                    # One connection kept for this: Batched runs one flush at a time, and a
                    # checkout from the pool costs as much as the INSERT itself.
                    if self._held is None:
                        self._held = await self._writer.connect()
                    async with self._held.begin():
                        if self._storing_many is not None:
                            rows = [
                                self._stored_form(tuple(row.get(c.name) for c in _GIVEN))
                                for row in unique.values()
                            ]
                            result = await self._held.exec_driver_sql(
                                self._storing_many,
                                tuple(builtins.list(c) for c in zip(*rows, strict=True)),
                            )
                        elif len(unique) == 1:
                            (row,) = unique.values()
                            values = self._stored_form(tuple(row.get(c.name) for c in _GIVEN))
                            result = await self._held.exec_driver_sql(self._storing_one, values)
                        else:
                            result = await self._held.execute(
                                self._storing, builtins.list(unique.values())
                            )
                        stored = {event_id for (event_id,) in result}
                except (ValueError, OverflowError, TypeError) as exc:  # its stored form
                    raise _RowRefused(f"{doing}: {type(exc).__name__}: {exc}") from None
                except Exception as exc:
                    refused = _refused_for_its_values(exc)
                    if not refused:
                        await self._let_go()  # a new connection next time
                    raise
        except InboxError as exc:
            if refused:
                raise _RowRefused(str(exc)) from None
            raise
        self._outages.reached()
        return stored

    async def run(
        self,
        router: EventRouter,
        *,
        concurrency: int = 8,
        max_attempts: int = 8,
        stop: asyncio.Event | None = None,
        drain: bool = False,
    ) -> None:
        """Work the inbox until ``stop`` is set (or the task is cancelled); with
        ``drain=True``, until no event is ready (as arq's ``burst=True``).

        Claims due events, up to ``concurrency`` at once, runs ``router``'s handlers
        (``router.dispatch``, within the router's ``handler_timeout``: past it they are
        cancelled and the attempt failed) and marks each ``done``. An event whose handlers
        raise is tried again later (exponential backoff with jitter). An attempt counts
        when it is claimed: after ``max_attempts`` it is ``dead``, with the last error
        (the worker died while handling it, if it did). An event whose worker died runs
        again alone. Once ``stop`` is set, the events in hand finish first. While the
        database cannot be reached the worker logs it once and keeps trying. Any number
        of workers may run on one PostgreSQL database (or, on one machine, one SQLite
        file).

        ``drain=True``: return as soon as no event is due and none is in hand (a cron
        job, a test, a script that handles what came and ends). An event that failed and
        waits for its backoff is not due: it is left for a later run.
        """
        check_concurrency(concurrency)
        _count("max_attempts", max_attempts)
        if stop is not None and not isinstance(stop, asyncio.Event):
            raise InvalidArgumentError(f"stop must be an asyncio.Event, got {stop!r}")
        if not isinstance(drain, bool):
            raise InvalidArgumentError(f"drain must be True or False, got {drain!r}")
        stop = stop or asyncio.Event()
        await _Worker(self._store, router, concurrency, max_attempts, stop, drain).run()
