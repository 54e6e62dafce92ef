"""Real databases for the mirror's, the inbox's and the dlt source's tests: SQLite files,
and one PostgreSQL per session (per worker), registered once by ``tests/conftest.py``.

PostgreSQL is the ``pgserver`` wheel's server (in the test extra), started once per test
session, listening on a free loopback port; each test gets a fresh database. Without
pgserver the PostgreSQL tests skip with the reason, except under
``PAYROLL_REQUIRE_POSTGRES=1`` (set by ``.ci/run``), where they fail.

The server's data directory is a temp dir of the session in memory, under ``/dev/shm``
(``PAYROLL_TEST_MEMORY`` names another folder; empty: the session's tmp dir), removed
when the server stops. A database is some 300 files, made for each test: on a disk whose
file system has seen the suite's churn, each ``CREATE DATABASE`` took up to a quarter of
a second of the kernel's time, and every run left some 14,000 files for a later pytest
to delete. Nothing of it needs to outlive the server.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._start import memory


class PostgresServer:
    """A running PostgreSQL: ``url(database)``; ``create()`` makes a fresh database."""

    def __init__(self, folder: Path) -> None:
        with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR as root
            warnings.simplefilter("ignore")
            import pgserver
        self._memory = _memory_folder()
        if self._memory is not None:
            folder = self._memory
        # cleanup_mode None: stop() ends the server (pgserver's own stop would look for the
        # postmaster it started, which the restart below replaced)
        self._server: Any = pgserver.get_server(folder / "data", cleanup_mode=None)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port: int = sock.getsockname()[1]
        # pgserver listens on a Unix socket only; the tests connect as a remote server's
        # client would, over TCP on loopback.
        self._restart("fast")

    def _restart(self, mode: str) -> None:
        from pgserver._commands import pg_ctl

        pg_ctl(
            [
                *("-w", "-m", mode, "-o", "-h 127.0.0.1", "-o", f"-p {self.port}"),
                # No fsync: what the tests end is a process (a restart, a kill), never the
                # machine, and the operating system keeps every write a process made. Commits
                # still wait for their WAL write, so a restart loses nothing committed.
                *("-o", "-c fsync=off"),
                *("-l", str(self._server.log), "restart"),
            ],
            pgdata=self._server.pgdata,
            user=self._server.system_user,
            timeout=60,
        )

    def restart(self) -> None:
        """Stop the server as a crash would (``immediate``: no checkpoint, every connection
        cut) and start it again on the same port; returns once it accepts connections."""
        self._restart("immediate")

    @property
    def socket_dir(self) -> str:
        """The folder of the server's Unix socket (the postmaster's pid file says it)."""
        lines = (Path(self._server.pgdata) / "postmaster.pid").read_text().splitlines()
        return lines[4]

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://postgres{secret}@127.0.0.1:{self.port}/{database}"

    async def create(self) -> str:
        import asyncpg

        name = f"t_{uuid.uuid4().hex[:16]}"
        conn = await asyncpg.connect(self.url())
        try:
            # FILE_COPY: the template's files copied as they are (half the server's CPU of
            # PostgreSQL 15's default, WAL_LOG, which writes every page of it to the WAL)
            await conn.execute(f'CREATE DATABASE "{name}" STRATEGY FILE_COPY')
        finally:
            await conn.close()
        return name

    async def replace(self, database: str, template: str) -> None:
        """Make ``database`` anew as a copy of ``template`` (no session on either)."""
        import asyncpg

        conn = await asyncpg.connect(self.url())
        try:
            await conn.execute(f'DROP DATABASE "{database}"')
            await conn.execute(f'CREATE DATABASE "{database}" TEMPLATE "{template}"')
        finally:
            await conn.close()

    async def role(self, name: str, password: str) -> None:
        """A role that logs in over TCP only with ``password`` (the rest stays trusted)."""
        import asyncpg

        hba = Path(self._server.pgdata) / "pg_hba.conf"
        rule = f"host all {name} 127.0.0.1/32 scram-sha-256\n"
        hba.write_text(rule + hba.read_text())  # the first matching line decides
        conn = await asyncpg.connect(self.url())
        try:
            quoted = password.replace("'", "''")
            await conn.execute(f"CREATE ROLE {name} LOGIN SUPERUSER PASSWORD '{quoted}'")
            loaded = await conn.fetchval("SELECT pg_conf_load_time()")
            await conn.execute("SELECT pg_reload_conf()")
        finally:
            await conn.close()
        for _ in range(10_000):  # until a new session has the reloaded rules (no sleep)
            conn = await asyncpg.connect(self.url())
            try:
                if await conn.fetchval("SELECT pg_conf_load_time()") > loaded:
                    return
            finally:
                await conn.close()
        raise AssertionError("the server did not reload pg_hba.conf")

    def stop(self) -> None:
        # pgserver knows only the postmaster it started itself; this one was restarted on
        # a TCP port (a new postmaster), so it is stopped here, then pgserver lets go.
        # SIGQUIT: PostgreSQL's immediate shutdown, every process of it gone at once, with
        # no checkpoint written for a data directory nobody opens again.
        import select
        import signal

        pidfile = Path(self._server.pgdata) / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = None
        try:
            if pid is not None:
                # Its end is an event (a pidfd is readable once the process has ended), not
                # a poll for its pid, which lingers until init reaps it (not its parent).
                with contextlib.suppress(ProcessLookupError):
                    ended = os.pidfd_open(pid)
                    try:
                        os.kill(pid, signal.SIGQUIT)
                        select.select([ended], [], [], 60)
                    finally:
                        os.close(ended)
        finally:
            self._server.cleanup()
            if self._memory is not None:
                shutil.rmtree(self._memory, ignore_errors=True)


def _memory_folder() -> Path | None:
    """A new temp dir in memory for the server's files (see the module's docstring), or
    None for the session's tmp dir."""
    parent = memory()
    if parent is None:
        return None
    return Path(tempfile.mkdtemp(prefix="payroll-postgres-", dir=parent))


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver  # noqa: F401
    except ImportError:
        reason = "no PostgreSQL: install the test extra (pgserver)"
        if os.environ.get("PAYROLL_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    server = PostgresServer(tmp_path_factory.mktemp("postgres"))
    yield server
    server.stop()


@pytest.fixture
async def postgres_url(postgres_server: PostgresServer) -> str:
    """A fresh, empty database on the session's server."""
    return postgres_server.url(await postgres_server.create())


@pytest.fixture(params=["sqlite", "postgresql"])
def into(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test that takes it runs on both databases."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'mirror.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


async def query(into: str, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    """The rows of one SQL statement on the database ``into`` (committed)."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    url = into.replace("sqlite://", "sqlite+aiosqlite://", 1).replace(
        "postgresql://", "postgresql+asyncpg://", 1
    )
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            result = await conn.execute(text(sql), params)
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        await engine.dispose()
