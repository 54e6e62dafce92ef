"""The database: its URL, the engine, the run lock, the schema, and errors without secrets.

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
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote, quote_plus, urlencode

import attrs
from sqlalchemy import event, select, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from .._core._lockfile import open_lock_file, try_lock
from ._errors import MirrorBusyError, MirrorError, MirrorURLError
from ._schema import SCHEMA_VERSION, differences, install, sqlite_as_made

__all__ = ["Database", "database_errors", "open_database", "redact"]

_LOCK_POLL = 0.2  # seconds between tries while another run holds the lock
_SCHEMA_LOCK = 0x7061_7972_6F6C_6C00  # "payroll\0": the PostgreSQL lock of schema creation


# A query parameter that carries a credential (libpq's and asyncpg's ``password``,
# ``sslpassword``, and the like); a path to one (``passfile``, ``sslkey``) is not secret.
_SECRET_PARAMETER = re.compile(
    r"pass(?:word|wd|phrase)?$|pwd|secret|token|credential|^key$", re.IGNORECASE
)


def _is_secret(name: str) -> bool:
    return _SECRET_PARAMETER.search(name) is not None


def _parameters(parsed: URL) -> list[tuple[str, str]]:
    """The query's (name, value) pairs, a repeated name once per value."""
    return [
        (name, str(one))
        for name, value in parsed.query.items()
        for one in (value if isinstance(value, tuple) else (value,))
    ]


def _shown(parsed: URL) -> str:
    """``parsed`` as output shows it: the password and every secret parameter ``***``."""
    bare = parsed.set(query={}).render_as_string(hide_password=True)
    pairs = [(name, "***" if _is_secret(name) else value) for name, value in _parameters(parsed)]
    return f"{bare}?{urlencode(pairs, safe='*/')}" if pairs else bare


def redact(url: str) -> str:
    """``url`` with its password and secret query parameters replaced by ``***``."""
    try:
        return _shown(make_url(url))
    except (ArgumentError, ValueError):
        return "<a database URL that cannot be parsed>"


def _secrets(parsed: URL) -> tuple[str, ...]:
    """Every credential of ``parsed`` in each form a message may quote it, longest first."""
    values = [str(parsed.password)] if parsed.password else []
    values += [value for name, value in _parameters(parsed) if _is_secret(name) and value]
    forms = {form for value in values for form in (value, quote(value, ""), quote_plus(value))}
    return tuple(sorted(forms, key=len, reverse=True))


# libpq's URL parameters that asyncpg reads from a DSN of its own (``asyncpg.connect(dsn=)``:
# the SSL files and mode, and what the server gets at the start of a session), as users
# copy them from their provider's dashboard; SQLAlchemy would pass them as keywords, which
# ``asyncpg.connect`` does not take.
_LIBPQ = frozenset(
    {
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "sslcrl",
        "sslpassword",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "application_name",
        "options",
        "target_session_attrs",
        "passfile",
        "krbsrvname",
        "gsslib",
    }
)
_FILES = ("sslrootcert", "sslcert", "sslkey", "sslcrl")  # read when connecting: they must exist
_TLS = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")
_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_CHOICES = {
    "sslmode": _SSLMODES,
    "ssl": _SSLMODES,  # asyncpg's keyword, as SQLAlchemy's documentation writes it
    "target_session_attrs": (
        "any",
        "primary",
        "standby",
        "prefer-standby",
        "read-write",
        "read-only",
    ),
    "ssl_min_protocol_version": _TLS,
    "ssl_max_protocol_version": _TLS,
}
# What SQLAlchemy's asyncpg dialect or asyncpg's own keywords take, as the URL writes them.
_KEYWORDS: dict[str, Callable[[str], Any]] = {
    "ssl": str,
    "command_timeout": float,
    "prepared_statement_cache_size": int,
    "statement_cache_size": int,
}
_CONNECT_TIMEOUT_NONE = 365 * 86400.0  # libpq's connect_timeout=0: no limit
_TAKEN = ("host", "port", "password", "connect_timeout", *sorted(_LIBPQ), *_KEYWORDS)


def _refuse(message: str) -> NoReturn:
    raise MirrorURLError(f"into: {message}")


def _port(value: object) -> None:
    if not isinstance(value, int) or not 0 < value < 65536:
        _refuse(f"the port must be a number from 1 to 65535, got {value}")


def _postgres_arguments(parsed: URL, pairs: dict[str, str]) -> dict[str, Any]:
    """asyncpg's keywords for the URL's parameters (``pairs``, each name's last value);
    MirrorURLError naming one that PostgreSQL's driver cannot take, or a bad value."""
    unknown = sorted(set(pairs) - set(_TAKEN))
    if unknown:
        _refuse(
            f"the URL parameter {unknown[0]!r} is not one the PostgreSQL driver takes; "
            f"those it takes: {', '.join(_TAKEN)}"
        )
    if parsed.port is not None:
        _port(parsed.port)
    for port in pairs.get("port", "").split(",") if "port" in pairs else ():
        _port(int(port) if port.strip().isdigit() else port)
    for name, allowed in _CHOICES.items():
        if name in pairs and pairs[name] not in allowed:
            _refuse(f"{name} must be one of {', '.join(allowed)}, got {pairs[name]!r}")
    if pairs.get("sslrootcert") == "system":
        _refuse(
            "sslrootcert=system is libpq's, which the PostgreSQL driver (asyncpg) does not "
            "take: give the path of the CA file"
        )
    verified = {pairs.get(name, "") for name in ("sslmode", "ssl")} & {"verify-ca", "verify-full"}
    given = "sslrootcert" in pairs or os.environ.get("PGSSLROOTCERT")
    default_root = Path(os.path.expanduser("~/.postgresql/root.crt"))
    if verified and not given and not default_root.is_file():
        _refuse(
            f"sslmode={' or '.join(sorted(verified))} needs the CA's certificate: give "
            f"sslrootcert=PATH (there is no {default_root})"
        )
    for name in _FILES:
        if name in pairs and not Path(pairs[name]).expanduser().is_file():
            _refuse(f"{name}: there is no file {pairs[name]}")
    arguments: dict[str, Any] = {}
    libpq = [(name, value) for name, value in pairs.items() if name in _LIBPQ]
    if libpq:
        arguments["dsn"] = f"postgresql://?{urlencode(libpq)}"
    if "connect_timeout" in pairs:
        seconds = pairs["connect_timeout"].strip()
        if not seconds.isdigit():
            _refuse(f"connect_timeout must be whole seconds (0: no limit), got {seconds!r}")
        arguments["timeout"] = float(seconds) or _CONNECT_TIMEOUT_NONE
    for name, make in _KEYWORDS.items():
        if name in pairs:
            try:
                arguments[name] = make(pairs[name])
            except ValueError:
                raise MirrorURLError(
                    f"into: {name} must be a number, got {pairs[name]!r}"
                ) from None
    return arguments


def _for_the_driver(parsed: URL) -> tuple[URL, dict[str, Any]]:
    """The engine's URL without the parameters it cannot pass, and the driver's arguments.

    PostgreSQL: ``?password=`` becomes the URL's password (which SQLAlchemy's reprs hide;
    as a query parameter it overrides the user-info's, as in libpq); ``host`` and ``port``
    stay (SQLAlchemy reads them: ``host=/socket/dir``); libpq's other parameters go to
    asyncpg as a DSN of their own, ``connect_timeout`` as its ``timeout``; anything else is
    refused by name. SQLite has no credentials: they are ignored, as SQLAlchemy ignores
    them.
    """
    if parsed.get_backend_name() == "sqlite":
        secret = {name for name, _ in _parameters(parsed) if _is_secret(name)}
        return (parsed.difference_update_query(secret) if secret else parsed), {}
    pairs = dict(_parameters(parsed))  # a repeated name: its last value, as libpq takes it
    arguments = _postgres_arguments(parsed, pairs)
    clean = parsed.difference_update_query(set(pairs) - {"host", "port"})
    if "password" in pairs:
        clean = clean.set(password=pairs["password"])
    return clean, arguments


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


def _parse(url: str) -> URL:
    """``into`` as SQLAlchemy's URL with the async driver, or MirrorURLError."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise MirrorURLError(
            "into: not a database URL (sqlite:///PATH or postgresql://USER@HOST/DB)"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise MirrorURLError("into: sqlite:///PATH needs the path of a database file")
        return parsed.set(drivername="sqlite+aiosqlite")
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+asyncpg")
    raise MirrorURLError(
        f"into: {parsed.drivername!r} databases are not supported; "
        "use sqlite:///PATH or postgresql://USER@HOST/DB"
    )


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
    "journal_mode=WAL",
    "synchronous=NORMAL",
    "busy_timeout=60000",
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
    parsed = _parse(url)
    secrets = _secrets(parsed)
    shown = _shown(parsed.set(drivername=parsed.get_backend_name()))
    parsed, arguments = _for_the_driver(parsed)
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
