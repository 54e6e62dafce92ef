"""The database URL's password never reaches an exception, its chain, or a log record."""

from __future__ import annotations

import logging
import traceback

import pytest

from payroll_async import PayrollClient, PayrollError
from payroll_async.mirror import MirrorError, mirror
from tests.conftest import StartEmulator

from .conftest import PostgresServer

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
    assert "postgresql://mirror:***@127.0.0.1:1/db" in str(info.value)
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
