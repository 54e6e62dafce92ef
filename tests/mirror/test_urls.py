"""PostgreSQL URLs as users write them (issue 39, item 6): libpq's parameters taken or
refused by name when the object is built, on the mirror, the inbox and the command."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from payroll_async import InvalidArgumentError, PayrollClient
from payroll_async.inbox import Inbox, InboxError, InboxURLError
from payroll_async.mirror import MirrorError, MirrorURLError, mirror
from tests._postgres import PostgresServer, query
from tests.cli._run import invoke
from tests.conftest import StartEmulator

PASSWORD = "PW-s3cret"

REFUSED = {
    f"postgresql://u:{PASSWORD}@db.example:99999/payroll": "the port must be a number from 1",
    f"postgresql://u:{PASSWORD}@db.example/payroll?port=0": "the port must be a number from 1",
    f"postgresql://u:{PASSWORD}@db.example/payroll?sslmode=requre": "sslmode must be one of",
    f"postgresql://u:{PASSWORD}@db.example/payroll?connect_timeout=ten": "connect_timeout must",
    f"postgresql://u:{PASSWORD}@db.example/payroll?sslrootcert=/no/such/ca.pem": (
        "sslrootcert: there is no file /no/such/ca.pem"
    ),
    f"postgresql://u:{PASSWORD}@db.example/payroll?target_session_attrs=writable": (
        "target_session_attrs must be one of"
    ),
    f"postgresql://u:{PASSWORD}@db.example/payroll?ssl_min_protocol_version=TLSv9": (
        "ssl_min_protocol_version must be one of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3"
    ),
    f"postgresql://u:{PASSWORD}@db.example/payroll?ssl=true": "ssl must be one of disable,",
    f"postgresql://u:{PASSWORD}@db.example/payroll?sslrootcert=system": (
        "sslrootcert=system is libpq's"
    ),
    f"postgresql://u:{PASSWORD}@db.example/payroll?sslmode=verify-full": (
        "sslmode=verify-full needs the CA's certificate: give sslrootcert=PATH"
    ),
    f"postgresql://u:{PASSWORD}@db.example/payroll?sslmod=require": (
        "the URL parameter 'sslmod' is not one the PostgreSQL driver takes"
    ),
}


@pytest.mark.parametrize("url", REFUSED)
async def test_a_url_the_driver_cannot_take_is_refused_by_name_when_built(
    url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.postgresql/root.crt
    monkeypatch.delenv("PGSSLROOTCERT", raising=False)
    with pytest.raises(InboxURLError) as inbox_error:
        Inbox(url)
    # Port 9 (discard) on loopback: any request would fail with a connection error.
    async with PayrollClient("http://127.0.0.1:9", "token") as client:
        with pytest.raises(MirrorURLError) as mirror_error:
            await mirror(client, "webhooks", into=url)
    for caught in (inbox_error.value, mirror_error.value):
        assert isinstance(caught, InvalidArgumentError)
        assert REFUSED[url] in str(caught)
        assert PASSWORD not in str(caught)
        assert caught.__cause__ is None
        assert caught.__context__ is None or caught.__suppress_context__


@pytest.mark.parametrize("command", [("inbox", "list"), ("inbox", "run"), ("mirror", "webhooks")])
def test_the_command_refuses_such_a_url_with_exit_2_and_no_traceback(
    command: tuple[str, ...],
) -> None:
    url = f"postgresql://u:{PASSWORD}@db.example:99999/payroll"
    emu_options = (
        ["--base-url", "http://127.0.0.1:9", "--token", "t"] if command[0] == "mirror" else []
    )
    result = invoke(None, *emu_options, *command, "--into", url)
    assert result.exit_code == 2, result.output
    assert "the port must be a number from 1 to 65535" in result.stderr
    assert "Traceback" not in result.output
    assert PASSWORD not in result.output


def with_query(url: str, **parameters: str) -> str:
    return f"{url}?{urllib.parse.urlencode(parameters)}"


async def test_libpq_parameters_reach_the_server(
    start_emulator: StartEmulator, postgres_url: str, tmp_path: Path
) -> None:
    await query(postgres_url, "CREATE SCHEMA payroll_here")
    url = with_query(
        postgres_url,
        sslmode="prefer",  # the test server has no TLS: prefer falls back, as libpq's does
        connect_timeout="10",
        application_name="payroll-url-test",
        options="-c search_path=payroll_here",
        target_session_attrs="read-write",
    )
    emu = await start_emulator(seed=3, webhook_subscriptions=4)
    async with PayrollClient(emu.base_url, emu.token) as client:
        result = await mirror(client, "webhooks", into=url)
    assert result.inserted == 4
    # options=-c search_path: the tables were made in that schema
    tables = await query(
        postgres_url,
        "SELECT schemaname FROM pg_tables WHERE tablename = 'webhook_subscriptions'",
    )
    assert tables == [("payroll_here",)]
    async with Inbox(url) as inbox:
        await inbox.stats()
        async with inbox._db.connect() as connection:  # the inbox's engine, its settings
            name = (await connection.exec_driver_sql("SHOW application_name")).scalar()
    assert name == "payroll-url-test"


async def test_a_unix_socket_folder_as_host(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    database = postgres_url.rsplit("/", 1)[1]
    socket = f"host={postgres_server.socket_dir}&port={postgres_server.port}"
    url = f"postgresql://postgres@/{database}?{socket}"
    async with Inbox(url) as inbox:
        assert (await inbox.stats()).pending == 0
    assert await query(postgres_url, "SELECT count(*) FROM inbox_events") == [(0,)]


async def test_sslmode_require_on_a_server_without_tls_fails_saying_so(
    postgres_url: str,
) -> None:
    url = with_query(postgres_url, sslmode="require")
    async with Inbox(url) as inbox:
        with pytest.raises(InboxError) as caught:
            await inbox.stats()
    assert not isinstance(caught.value, InvalidArgumentError)
    assert "SSL" in str(caught.value)
    with pytest.raises(MirrorError, match="SSL"):
        async with PayrollClient("http://127.0.0.1:9", "token") as client:
            await mirror(client, "webhooks", into=url)


def test_the_command_says_why_sslmode_require_fails_with_exit_5(
    postgres_server: PostgresServer,
) -> None:
    url = with_query(postgres_server.url(), sslmode="require")
    result = invoke(None, "inbox", "list", "--into", url)
    assert result.exit_code == 5, result.output
    assert "SSL" in result.stderr
    assert "Traceback" not in result.output
