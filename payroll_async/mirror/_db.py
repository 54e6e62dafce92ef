"""The database: the engine, the run lock, the schema, and errors without secrets.

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
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import attrs
from sqlalchemy import event, select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from .._core._lockfile import open_lock_file, try_lock
from ._errors import MirrorBusyError, MirrorError, MirrorURLError
from ._migrate import install
from ._schema import SCHEMA_VERSION, differences, sqlite_as_made
from ._url import for_the_driver, parse, secrets_of, shown_url

__all__ = ["Database", "database_errors", "open_database"]

_LOCK_POLL = 0.2  # seconds between tries while another run holds the lock
_SCHEMA_LOCK = 0x7061_7972_6F6C_6C00  # "payroll\0": the PostgreSQL lock of schema creation


def _scrub(text_: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if secret:
            text_ = text_.replace(secret, "***")
    return text_


@contextlib.contextmanager
def database_errors(secrets: tuple[str, ...], doing: str) -> Iterator[None]:
    """Database failures as MirrorError, their text without ``secrets``, not chained."""
    try:
        yield
    except MirrorError:
        raise
    except (SQLAlchemyError, OSError, ConnectionError) as exc:
        # asyncpg's own errors are OSErrors or come wrapped in SQLAlchemy's, whose adapter
        # of the driver's error is a bare "Error": the driver's own is named instead.
        detail = getattr(exc, "orig", None) or exc
        if type(detail).__module__.startswith("sqlalchemy.") and detail.__cause__ is not None:
            detail = detail.__cause__
        message = _scrub(f"{doing}: {type(detail).__name__}: {detail}", secrets)
        first = message.splitlines()[0][:500] if message else doing
        # The server's text is outside input: no control codes reach a terminal.
        raise MirrorError("".join(ch if ch.isprintable() else "?" for ch in first)) from None


def _create_private(path: Path) -> None:
    """Create the database file 0600 unless it exists; never through a symbolic link."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MirrorURLError(f"into: {path} is a symbolic link; give the file itself") from None
        raise MirrorError(f"cannot open {path}: {exc.strerror}") from None
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
    *SQLITE_PRAGMAS,
    # A page cache of 32 MiB rather than 2: the id index's pages stay in memory between a
    # mirror run's commits, not read back and spilled again (a first mirror's system time
    # about halved). Only the run's connection gets it (not the inbox's pool, nor a feed).
    "cache_size=-32768",
)
"""The pragmas of a mirror run's connection to SQLite."""


def _sqlite_setup(engine: AsyncEngine, pragmas: Sequence[str]) -> None:
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

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def errors(self, doing: str) -> contextlib.AbstractContextManager[None]:
        return database_errors(self.secrets, doing)

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        with self.errors(f"cannot connect to {self.shown}"):
            try:
                connection = await self.engine.connect()
            except TypeError as exc:  # asyncpg.connect() takes no such argument
                raise MirrorURLError(
                    _scrub(
                        f"into: {self.shown}: the driver refuses a parameter ({exc})", self.secrets
                    )
                ) from None
            if self.dialect == "postgresql":
                # synchronous_commit is left as the server or role sets it (on by
                # default): a committed change is never lost, so it is never told twice.
                # Pages are grouped into few commits (_commits.COMMIT_ROWS), so that commits
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
        self, connection: AsyncConnection, name: str, wait: bool, on_wait: Callable[[str], None]
    ) -> AsyncIterator[None]:
        """Hold the lock of collection ``name`` in this database for the ``with`` block."""
        busy = f"another mirror of {name} into {self.shown} is running"
        if self.path is not None:
            async with self._file_lock(name, busy, wait, on_wait):
                yield
            return
        key = int.from_bytes(
            hashlib.blake2b(f"payroll_async.mirror:{name}".encode(), digest_size=8).digest(),
            "big",
            signed=True,
        )
        waited = False
        while True:
            with self.errors("taking the run lock"):
                got = (await connection.execute(select(_try_lock(key)))).scalar()
                await connection.commit()
            if got:
                break
            if not wait:
                _busy(busy)
            if not waited:
                on_wait(f"{busy}; waiting for it to finish")
                waited = True
            await asyncio.sleep(_LOCK_POLL)
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
        lock_path = self.path.with_name(f"{self.path.name}.mirror-{name}.lock")
        fd = open_lock_file(lock_path, MirrorError)
        try:
            waited = False
            while True:
                try:
                    if try_lock(fd):
                        break
                except OSError as exc:
                    raise MirrorError(f"cannot lock {lock_path}: {exc.strerror}") from None
                if not wait:
                    _busy(busy)
                if not waited:
                    on_wait(f"{busy}; waiting for it to finish")
                    waited = True
                await asyncio.sleep(_LOCK_POLL)
            yield
        finally:
            os.close(fd)  # releases the flock

    async def ensure_schema(self, connection: AsyncConnection) -> None:
        """Create the tables on first use, migrate those of an earlier version (one
        transaction); refuse a schema newer than this release's."""
        if self.dialect == "sqlite" and await self._as_made(connection):
            return
        with self.errors("creating the mirror's tables"):
            async with connection.begin():
                if self.dialect == "postgresql":
                    await connection.execute(
                        text("SELECT pg_advisory_xact_lock(:k)").bindparams(k=_SCHEMA_LOCK)
                    )
                stored = await connection.run_sync(install)
                if stored is not None and stored > SCHEMA_VERSION:
                    raise MirrorError(
                        f"the mirror tables in {self.shown} are schema version {stored}; this "
                        f"release of payroll-async knows versions up to {SCHEMA_VERSION}: "
                        "upgrade it"
                    )
                differ = await connection.run_sync(differences)
        if differ:
            # Writing into them would go wrong (without the key, a row per item per run).
            raise MirrorError(
                f"the mirror tables in {self.shown} are not as the mirror made them: "
                f"{'; '.join(differ)}. Restore them, or mirror into a new database"
            )

    async def _as_made(self, connection: AsyncConnection) -> bool:
        """SQLite: whether every table and index is exactly as this release makes them (its
        ``CREATE`` statement in ``sqlite_master``) at this release's version: one read,
        where the full check reflects every table. Anything else (a first run, an earlier
        or later version, a table changed by hand) takes the full check."""
        with self.errors("reading the mirror's tables"):
            version = None
            if await connection.run_sync(sqlite_as_made):
                found = await connection.exec_driver_sql("SELECT max(version) FROM mirror_schema")
                version = found.scalar()
            await connection.commit()
        return version == SCHEMA_VERSION


def _try_lock(key: int) -> Any:
    return text("pg_try_advisory_lock(:k)").bindparams(k=key)


def _busy(message: str) -> NoReturn:
    raise MirrorBusyError(f"{message}; try again later, or wait for it (wait=True)")


def open_database(url: str, *, pragmas: Sequence[str] = SQLITE_PRAGMAS) -> Database:
    """The Database of ``into`` (the engine connects lazily); ``pragmas``: SQLite's, set
    on each connection."""
    parsed = parse(url)
    secrets = secrets_of(parsed)
    shown = shown_url(parsed.set(drivername=parsed.get_backend_name()))
    parsed, arguments = for_the_driver(parsed)
    path: Path | None = None
    if parsed.get_backend_name() == "sqlite":
        path = Path(str(parsed.database)).expanduser().absolute()
        _create_private(path)
        parsed = parsed.set(database=str(path))
    with database_errors(secrets, f"cannot use {shown}"):
        engine = create_async_engine(parsed, pool_pre_ping=False, connect_args=arguments)
    if path is not None:
        _sqlite_setup(engine, pragmas)
    return Database(engine=engine, shown=shown, secrets=secrets, path=path)
