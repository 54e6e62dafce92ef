"""The database URL's password never reaches an exception, its chain, or a log record."""

from __future__ import annotations

import asyncio
import logging
import traceback
import uuid
from pathlib import Path

import pytest

from payroll_async import PayrollClient, PayrollError
from payroll_async._sql import open_database
from payroll_async.cli._errors import ExitCode
from payroll_async.mirror import MirrorError, mirror
from payroll_async.mirror._errors import MIRROR_ERRORS
from tests._postgres import PostgresServer
from tests.cli._run import start
from tests.conftest import StartEmulator

PASSWORD = "pw-Zq9!x@y"  # with characters that a URL quotes
QUOTED = PASSWORD.replace("!", "%21").replace("@", "%40")


def chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    while exc is not None and exc not in found:
        found.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return found


def assert_clean(exc: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    quoted = PASSWORD.replace("!", "%21").replace("@", "%40")
    text = "".join(traceback.format_exception(exc))
    for item in chain(exc):
        text += str(item) + repr(item) + repr(item.args)
    text += caplog.text
    assert PASSWORD not in text
    assert quoted not in text


async def test_a_refused_connection(
    start_emulator: StartEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    emu = await start_emulator(seed=1, payroll_connections=5)
    url = f"postgresql://mirror:{QUOTED}@127.0.0.1:1/db"
    async with PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(MirrorError) as info:
            await mirror(client, "webhooks", into=url)
    assert isinstance(info.value, PayrollError)
    assert "postgresql://127.0.0.1:1/db:" in str(info.value)  # host, port, database only
    assert_clean(info.value, caplog)


async def test_a_failure_after_connecting(
    start_emulator: StartEmulator,
    postgres_server: PostgresServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    emu = await start_emulator(seed=1, payroll_connections=5)
    # The session's server trusts loopback, so the password is accepted and ignored;
    # the database does not exist, so the server answers with an error of its own.
    url = postgres_server.url(
        "no_such_database", password=PASSWORD.replace("!", "%21").replace("@", "%40")
    )
    async with PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(MirrorError, match="no_such_database") as info:
            await mirror(client, "webhooks", into=url)
    assert_clean(info.value, caplog)


# --- every credential a URL can carry, the query's included (issue 28, item 5) ----------------

SECRET = "S3CRET"


def assert_nowhere(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text


async def query_url(case: str, postgres_server: PostgresServer, tmp_path: Path) -> str:
    """A URL with ``?password=S3CRET``: right, wrong, to a host that is not there, SQLite."""
    if case == "sqlite":
        return f"sqlite:///{tmp_path / 'mirror.db'}?password={SECRET}"
    if case == "unreachable":
        return f"postgresql://mirror@127.0.0.1:1/payroll?password={SECRET}&passfile=/nowhere"
    role = f"mops_{uuid.uuid4().hex[:12]}"
    await postgres_server.role(role, SECRET if case == "right" else "another-password")
    database = await postgres_server.create()
    # The query's password overrides the user-info's, as in libpq.
    return (
        f"postgresql://{role}:wrong-{SECRET}@127.0.0.1:{postgres_server.port}/{database}"
        f"?password={SECRET}"
    )


CASES = ["right", "wrong", "unreachable", "sqlite"]


@pytest.mark.parametrize("case", CASES)
async def test_a_password_in_the_query_is_in_no_message_log_chain_or_repr(
    case: str,
    start_emulator: StartEmulator,
    postgres_server: PostgresServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)  # SQLAlchemy's and asyncpg's loggers too
    url = await query_url(case, postgres_server, tmp_path)
    emu = await start_emulator(seed=1, payroll_connections=5)
    database = open_database(url, MIRROR_ERRORS)
    try:
        assert_nowhere(SECRET, repr(database), str(database.engine.sync_engine))
        assert database.shown.startswith(("postgresql://127.0.0.1:", "sqlite:///"))
        assert "?" not in database.shown
    finally:
        await database.engine.dispose()
    async with PayrollClient(emu.base_url, emu.token) as client:
        if case in ("right", "sqlite"):
            result = await mirror(client, "webhooks", into=url)
            assert result.inserted == 3
            assert_nowhere(SECRET, repr(result), caplog.text)
            return
        with pytest.raises(MirrorError) as info:
            await mirror(client, "webhooks", into=url)
    assert "postgresql://127.0.0.1:" in str(info.value)
    assert "?password" not in str(info.value)
    text = "".join(traceback.format_exception(info.value)) + caplog.text
    for item in chain(info.value):
        text += str(item) + repr(item) + repr(item.args)
    assert_nowhere(SECRET, text)


@pytest.mark.parametrize("case", CASES)
async def test_the_command_never_shows_a_password_of_the_query(
    case: str, start_emulator: StartEmulator, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = await query_url(case, postgres_server, tmp_path)
    emu = await start_emulator(seed=1, payroll_connections=5)
    # -v: debug logs of every logger, and the traceback of a failure
    process = await start(
        emu,
        "-v",
        "mirror",
        "webhooks",
        "--into",
        url,
        "--changes",
        str(tmp_path / "changes.jsonl"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    output = (out + err).decode()
    assert_nowhere(SECRET, output)
    assert "postgresql://127.0.0.1:" in output or "sqlite:///" in output
    assert "?password" not in output
    if case in ("right", "sqlite"):
        assert process.returncode == 0, output
        assert "Mirrored 3 webhooks into " in output
    else:
        assert process.returncode == ExitCode.SERVICE, output
        assert "error: cannot connect to " in output


def test_a_url_is_shown_as_its_host_port_and_database_only() -> None:
    shown = open_database(
        "postgresql://me:S3CRET@db.internal/payroll"
        "?sslpassword=S3CRET&password=S3CRET&passfile=/home/me/.pgpass&ssl=require",
        MIRROR_ERRORS,
    ).shown
    assert shown == "postgresql://db.internal/payroll"  # host, port and database only
