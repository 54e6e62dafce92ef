"""A database opened for an app: the engine, its connections, the run lock, and errors
without secrets (the mirror's and the inbox's storage).

SQLite: the file is created 0600 and never opened through a symbolic link; WAL journal;
every transaction is ``BEGIN IMMEDIATE``, so that two writers wait for each other
(``busy_timeout``) instead of failing half-way. The run lock is ``flock`` on a file beside
the database, which the kernel releases when the process dies, SIGKILL included.

PostgreSQL: through asyncpg; the run lock is a session-level advisory lock, released by
the server when the run's connection ends, however it ends. Commits wait for the server's
disk as the server or role is set to (see ``Database.connect``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
from sqlalchemy import event, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import PoolProxiedConnection

from .._core._lockfile import open_lock_file, try_lock
from .._core._redact import redact
from .._core._secrets import hold
from ._errors import ErrorKinds, database_errors
from ._url import URLRefused, read

__all__ = ["MIRROR_PRAGMAS", "SQLITE_PRAGMAS", "Database", "open_database", "sqlite3_connection"]

_LOCK_POLL = 0.2  # seconds between tries while another run holds the lock


def _create_private(path: Path, kinds: ErrorKinds) -> None:
    """Create the database file 0600 unless it exists; never through a symbolic link."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            message = f"{kinds.argument}: {path} is a symbolic link; give the file itself"
            raise kinds.bad_url(message) from None
        raise kinds.failed(f"cannot open {path}: {exc.strerror}") from None
    os.close(fd)


SQLITE_PRAGMAS = (
    # First: the switch to WAL below waits for another process's lock (two processes
    # opening a new database at once) as long as every other statement does.
    "busy_timeout=60000",
    "journal_mode=WAL",
    "synchronous=NORMAL",
    # Checkpoint (copy the WAL into the database, and sync) every 40 MB rather than every
    # 4: a first mirror writes hundreds of MB, and each checkpoint waits on disk.
    "wal_autocheckpoint=10000",
)
"""The pragmas of every connection to a SQLite database of the mirror or the inbox."""
MIRROR_PRAGMAS = (
    # A database the mirror makes has pages of 8 KiB rather than 4 (set before the switch
    # to WAL makes the file; an existing database keeps its own): rows of about 500 bytes
    # are read back from half as many pages (reading the live rows' digests: 24 ms against
    # 28 for 100,000 rows), where 16 KiB, faster still there, made a million
    # items' first mirror 15% slower (a commit rewrites more of the id index).
    "page_size=8192",
    *(p for p in SQLITE_PRAGMAS if not p.startswith("wal_autocheckpoint")),
    "wal_autocheckpoint=5000",  # still every 40 MB
    # A page cache of 32 MiB rather than 2: the id index's pages stay in memory between a
    # mirror run's commits, not read back and spilled again (a first mirror's system time
    # about halved). Only the run's connection gets it (not the inbox's pool, nor a feed).
    "cache_size=-32768",
)
"""The pragmas of a mirror run's connection to SQLite."""


_SQLITE3 = "payroll_async.sqlite3"  # a pooled connection's info: its sqlite3 connection


def sqlite3_connection(raw: PoolProxiedConnection) -> sqlite3.Connection | None:
    """The ``sqlite3`` connection under ``raw`` (``await conn.get_raw_connection()`` of a
    SQLite engine of `open_database`), whose statements a caller may run in a thread of its
    own while no other statement runs on it; None for another engine."""
    found: sqlite3.Connection | None = raw.info.get(_SQLITE3)
    return found


def _sqlite_setup(engine: AsyncEngine, pragmas: Sequence[str]) -> None:
    @event.listens_for(engine.sync_engine, "do_connect")
    def made_here(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> None:
        # aiosqlite passes sqlite3.connect's arguments on: its factory= (a subclass of
        # sqlite3.Connection) tells this record which connection aiosqlite opened.
        class Recorded(sqlite3.Connection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                record.info[_SQLITE3] = self

        cparams["factory"] = Recorded

    @event.listens_for(engine.sync_engine, "connect")
    def connect(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN, below
        cursor = dbapi_connection.cursor()
        for pragma in pragmas:
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


@attrs.define(eq=False)
class Database:
    """One open database: the engine, the URL for messages, what to keep out of them."""

    engine: AsyncEngine
    shown: str
    """The URL with the password and secret query parameters hidden."""
    secrets: tuple[str, ...] = attrs.field(repr=False)
    path: Path | None
    """The SQLite file (None for PostgreSQL)."""
    kinds: ErrorKinds = attrs.field(repr=False)
    """The owner's errors, which every failure here is raised as."""

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def errors(self, doing: str) -> contextlib.AbstractContextManager[None]:
        return database_errors(self.kinds, self.secrets, doing)

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        with self.errors(f"cannot connect to {self.shown}"):
            try:
                connection = await self.engine.connect()
            except TypeError as exc:  # asyncpg.connect() takes no such argument
                message = f"{self.kinds.argument}: {self.shown}: the driver refuses a parameter"
                raise self.kinds.bad_url(redact(f"{message} ({exc})", *self.secrets)) from None
            if self.dialect == "postgresql":
                # synchronous_commit is left as the server or role sets it (on by
                # default): a committed change is never lost, so it is never told twice.
                # Pages are grouped into few commits (mirror._store.COMMIT_ROWS), so that commits
                # that wait for the disk cost little.
                # A table that grows from empty during the run has statistics that say
                # it is empty: without this, the look-up of a page's rows by id can be
                # planned as a scan of the whole table, at every page.
                await connection.exec_driver_sql("SET enable_seqscan TO off")
                await connection.commit()
        try:
            yield connection
        finally:
            with contextlib.suppress(Exception), self.errors("closing"):
                await connection.close()

    @contextlib.asynccontextmanager
    async def run_lock(
        self,
        connection: AsyncConnection,
        name: str,
        busy: str,
        wait: bool,
        on_wait: Callable[[str], None],
    ) -> AsyncIterator[None]:
        """Hold the lock ``name`` (such as ``mirror:payroll-connections``) of this database
        for the ``with`` block; ``busy`` says who holds it when another run does.

        SQLite: ``flock`` on a file beside the database; PostgreSQL: a session-level
        advisory lock on ``connection``. Either is released when the holder dies."""
        if self.path is not None:
            async with self._file_lock(name.replace(":", "-"), busy, wait, on_wait):
                yield
            return
        key = int.from_bytes(
            hashlib.blake2b(f"payroll_async.{name}".encode(), digest_size=8).digest(),
            "big",
            signed=True,
        )

        async def take() -> bool:
            with self.errors("taking the run lock"):
                got = (await connection.execute(select(_try_lock(key)))).scalar()
                await connection.commit()
            return bool(got)

        await self._take(take, busy, wait, on_wait)
        try:
            yield
        finally:
            if connection.in_transaction():
                # What the run left uncommitted (it was cancelled) is rolled back, as
                # SQLite's close does: never committed without its changes told.
                with contextlib.suppress(Exception), self.errors("rolling back"):
                    await connection.rollback()
            with contextlib.suppress(Exception), self.errors("releasing the run lock"):
                await connection.execute(select(text("pg_advisory_unlock(:k)").bindparams(k=key)))
                await connection.commit()

    @contextlib.asynccontextmanager
    async def _file_lock(
        self, name: str, busy: str, wait: bool, on_wait: Callable[[str], None]
    ) -> AsyncIterator[None]:
        assert self.path is not None
        lock_path = self.path.with_name(f"{self.path.name}.{name}.lock")
        fd = open_lock_file(lock_path, self.kinds.failed)

        async def take() -> bool:
            try:
                return try_lock(fd)
            except OSError as exc:
                raise self.kinds.failed(f"cannot lock {lock_path}: {exc.strerror}") from None

        try:
            await self._take(take, busy, wait, on_wait)
            yield
        finally:
            os.close(fd)  # releases the flock

    async def _take(
        self,
        take: Callable[[], Awaitable[bool]],
        busy: str,
        wait: bool,
        on_wait: Callable[[str], None],
    ) -> None:
        """Try ``take`` until it gets the lock (``wait``), saying once that it waits; or
        raise ``kinds.busy``."""
        waited = False
        while not await take():
            if not wait:
                raise self.kinds.busy(f"{busy}; try again later, or wait for it (wait=True)")
            if not waited:
                on_wait(f"{busy}; waiting for it to finish")
                waited = True
            await asyncio.sleep(_LOCK_POLL)

    @contextlib.asynccontextmanager
    async def schema_transaction(
        self, connection: AsyncConnection, lock: int
    ) -> AsyncIterator[AsyncConnection]:
        """A transaction on ``connection`` that creates or migrates an app's tables: in
        PostgreSQL under the advisory lock ``lock`` (two processes starting at once make
        them once); SQLite's ``BEGIN IMMEDIATE`` already serialises writers."""
        async with connection.begin():
            if self.dialect == "postgresql":
                await connection.execute(
                    text("SELECT pg_advisory_xact_lock(:k)").bindparams(k=lock)
                )
            yield connection


def _try_lock(key: int) -> Any:
    return text("pg_try_advisory_lock(:k)").bindparams(k=key)


def open_database(
    url: str, kinds: ErrorKinds, *, pragmas: Sequence[str] = SQLITE_PRAGMAS
) -> Database:
    """The Database of ``url`` (the engine connects lazily), failing as ``kinds`` says
    (a URL it cannot use: ``kinds.bad_url``, before any connection); ``pragmas``:
    SQLite's, set on each connection."""
    try:
        target = read(url)
    except URLRefused as exc:
        raise kinds.bad_url(f"{kinds.argument}: {exc}") from None
    engine_url, shown, secrets = target.engine_url, target.shown, target.secrets
    path: Path | None = None
    if engine_url.get_backend_name() == "sqlite":
        path = Path(str(engine_url.database)).expanduser().absolute()
        _create_private(path, kinds)
        engine_url = engine_url.set(database=str(path))
    with database_errors(kinds, secrets, f"cannot use {shown}"):
        engine = create_async_engine(
            engine_url, pool_pre_ping=False, connect_args=dict(target.arguments)
        )
    if path is not None:
        _sqlite_setup(engine, pragmas)
    database = Database(engine=engine, shown=shown, secrets=secrets, path=path, kinds=kinds)
    hold(database, *secrets)  # out of every text the SDK stores or shows, while it lives
    return database
