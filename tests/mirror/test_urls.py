"""PostgreSQL URLs as users write them (issue 39, item 6): libpq's parameters taken or
refused by name when the object is built, on the mirror, the inbox and the command."""

from __future__ import annotations

import socket
import urllib.parse
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from payroll_async import InvalidArgumentError, PayrollClient
from payroll_async._sql._url import URLRefused, read, redact
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
    """``url`` with a query as libpq reads one: percent-encoding only (a space is %20)."""
    return f"{url}?{urllib.parse.urlencode(parameters, quote_via=urllib.parse.quote)}"


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


# --- URLs read as libpq reads them; only host, port and database shown (issue 53, item 3) ------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


ISSUE_URL = "postgresql://app@127.0.0.1:{port}/payroll?password=hunter@2secret"


async def test_an_at_sign_in_the_querys_password_leaves_user_and_host_as_libpq_reads_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = _closed_port()
    url = ISSUE_URL.format(port=port)
    shown = f"postgresql://127.0.0.1:{port}/payroll"
    inbox = Inbox(url)
    assert inbox.url == shown
    assert repr(inbox) == f"Inbox({shown!r})"
    with pytest.raises(InboxError) as raised:
        await inbox.stats()
    await inbox.close()
    # the host connected to is 127.0.0.1 (not "2secret"), and the message shows no more
    assert f" {shown}: ConnectionRefusedError" in str(raised.value)
    assert f"('127.0.0.1', {port})" in str(raised.value)
    async with PayrollClient("http://127.0.0.1:9", "token") as client:
        with pytest.raises(MirrorError) as mirrored:
            await mirror(client, "webhooks", into=url)
    assert str(mirrored.value).startswith(f"cannot connect to {shown}: ConnectionRefusedError")
    for text in (str(raised.value), str(mirrored.value), caplog.text):
        assert "secret" not in text
        assert "hunter" not in text


def test_the_commands_error_line_shows_host_port_and_database_only() -> None:
    port = _closed_port()
    result = invoke(None, "inbox", "list", "--into", ISSUE_URL.format(port=port))
    assert result.exit_code == 5, result.output
    assert f" postgresql://127.0.0.1:{port}/payroll: ConnectionRefused" in result.stderr
    assert result.stderr.startswith("error: ")
    assert "secret" not in result.output
    assert "hunter" not in result.output


# Every character a URL gives a meaning to: as libpq reads them, they reach the server as written.
HOSTILE_PASSWORD = "p@ss+w%rd/x:y?#&=ä "


def _password_urls(role: str, port: int, database: str) -> dict[str, str]:
    encoded = urllib.parse.quote(HOSTILE_PASSWORD, safe="")
    # In the query after the path, '@', '+', '/', ':', '?' and '#' are themselves; '%', '&',
    # '=' are percent-encoded, as libpq's grammar needs (a space too, as users paste it).
    in_query = (
        HOSTILE_PASSWORD.replace("%", "%25")
        .replace("&", "%26")
        .replace("=", "%3D")
        .replace(" ", "%20")
    )
    return {
        "user-info": f"postgresql://{role}:{encoded}@127.0.0.1:{port}/{database}",
        "query": f"postgresql://{role}@127.0.0.1:{port}/{database}?password={in_query}",
        "parameters only": (
            f"postgresql://?user={role}&password={encoded}&host=127.0.0.1&port={port}"
            f"&dbname={database}"
        ),
        "query overrides": (
            f"postgresql://nobody:wrong@elsewhere.invalid:1/nothing?user={role}"
            f"&password={in_query}&host=127.0.0.1&port={port}&dbname={database}"
        ),
    }


async def test_a_password_with_every_special_character_reaches_postgresql(
    postgres_server: PostgresServer, start_emulator: StartEmulator
) -> None:
    role = f"url_{uuid.uuid4().hex[:12]}"
    await postgres_server.role(role, HOSTILE_PASSWORD)  # scram-sha-256: a wrong one fails
    database = await postgres_server.create()
    emu = await start_emulator(seed=3, webhook_subscriptions=2)
    shown = f"postgresql://127.0.0.1:{postgres_server.port}/{database}"
    for form, url in _password_urls(role, postgres_server.port, database).items():
        async with Inbox(url) as inbox:
            assert (await inbox.stats()).pending == 0, form
            assert inbox.url == shown, form
        async with PayrollClient(emu.base_url, emu.token) as client:
            result = await mirror(client, "webhooks", into=url)
        assert result.items == 2, form
    # a plus is a plus: "a b" is not the password
    wrong = _password_urls(role, postgres_server.port, database)["user-info"]
    with pytest.raises(InboxError, match="password authentication failed"):
        async with Inbox(wrong.replace("%2B", "%20")) as inbox:
            await inbox.stats()


LIBPQ_EXAMPLES = {  # PostgreSQL's manual, "Connection URIs"; what is shown of each
    "postgresql://": "postgresql:///",
    "postgresql://localhost": "postgresql://localhost/",
    "postgresql://localhost:5433": "postgresql://localhost:5433/",
    "postgresql://localhost/mydb": "postgresql://localhost/mydb",
    "postgresql://user@localhost": "postgresql://localhost/",
    "postgresql://user:secret@localhost": "postgresql://localhost/",
    "postgresql://other@localhost/otherdb?connect_timeout=10&application_name=myapp": (
        "postgresql://localhost/otherdb"
    ),
    "postgresql://host1:123,host2:456/somedb?target_session_attrs=any&application_name=myapp": (
        "postgresql://host1:123,host2:456/somedb"
    ),
    "postgresql:///mydb?host=localhost&port=5433": "postgresql://localhost:5433/mydb",
    "postgresql://[2001:db8::1234]/database": "postgresql://[2001:db8::1234]/database",
    "postgresql:///dbname?host=/var/lib/postgresql": (
        "postgresql://%2Fvar%2Flib%2Fpostgresql/dbname"
    ),
    "postgresql://%2Fvar%2Flib%2Fpostgresql/dbname": (
        "postgresql://%2Fvar%2Flib%2Fpostgresql/dbname"
    ),
    "postgres://u:p@h/d?dbname=other&host=h2&port=7": "postgresql://h2:7/other",
}


@pytest.mark.parametrize("url", LIBPQ_EXAMPLES)
def test_the_manuals_examples_show_their_host_port_and_database(url: str) -> None:
    assert Inbox(url).url == LIBPQ_EXAMPLES[url]


LIBPQ_REFUSED = {
    "postgresql://h/db?password=a=b": "a second '=' (write = as %3D)",
    "postgresql://h/db?password": "a URL query parameter has no '='",
    "postgresql://h/db?password=50%": "'%' without two hex digits after it",
    "postgresql://u:a%zzb@h/db": "password has a '%' without two hex digits",
    "postgresql://u:a%00b@h/db": "password has %00",
    "postgresql://h?password=a@b": "an '@' in its query but no '/' before the query",
    "postgresql://[::1/db": "IPv6 host has no closing ']'",
    "postgresql://h:5,h2:6,h3:7/db?port=1,2": "2 ports for 3 hosts",
    "postgresql://u:not-a-port/db": "the port must be a number from 1 to 65535",
}


@pytest.mark.parametrize("url", LIBPQ_REFUSED)
def test_what_libpq_refuses_is_refused_without_quoting_a_value(url: str) -> None:
    with pytest.raises(InboxURLError) as refused:
        Inbox(url)
    assert LIBPQ_REFUSED[url] in str(refused.value)
    for secret in ("a=b", "50%", "a%zzb", "a%00b", "a@b", "not-a-port"):
        assert secret not in str(refused.value)


# Text a password may be: anything but NUL (which PostgreSQL cannot take) and lone surrogates.
passwords = st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=1)
REFERENCE = "reference-password"
FAULTS = {
    "none": "",
    "unknown parameter": "&nope=1",
    "bad sslmode": "&sslmode=sometimes",
    "bad port": "&port=99999",
    "bad percent": "&application_name=50%",
    "second =": "&options=a=b",
}


def _with_password(form: str, password: str, fault: str) -> str:
    where = "db.example:5432/payroll"
    if form == "user-info, encoded":
        encoded = urllib.parse.quote(password, safe="")
        return f"postgresql://app:{encoded}@{where}?sslmode=prefer{fault}"
    if form == "user-info, as little encoded as libpq needs":
        little = "".join(urllib.parse.quote(c, safe="") if c in "%@/?" else c for c in password)
        return f"postgresql://app:{little}@{where}?sslmode=prefer{fault}"
    if form == "query, encoded":
        return f"postgresql://app@{where}?password={urllib.parse.quote(password, safe='')}{fault}"
    little = "".join(urllib.parse.quote(c, safe="") if c in "%&=" else c for c in password)
    return f"postgresql://app@{where}?password={little}{fault}"


def _outcome(url: str) -> str:
    """What is shown of ``url``: its reprs and what it is shown as, or why it is refused."""
    try:
        target = read(url)
    except URLRefused as refused:
        return f"refused: {refused}"
    return f"{target.shown} {target!r} {redact(url)}"


FORMS = [
    "user-info, encoded",
    "user-info, as little encoded as libpq needs",
    "query, encoded",
    "query, as little encoded as libpq needs",
]


@given(password=passwords, form=st.sampled_from(FORMS), fault=st.sampled_from(sorted(FAULTS)))
def test_no_password_reaches_what_is_shown(password: str, form: str, fault: str) -> None:
    url = _with_password(form, password, FAULTS[fault])
    # What is shown does not depend on the password: none of it can be there.
    assert _outcome(url) == _outcome(_with_password(form, REFERENCE, FAULTS[fault]))
    if fault == "none":
        target = read(url)
        assert target.arguments["password"] == password  # as written, percent-decoded only
        assert target.arguments["user"] == "app"
        assert target.arguments["host"] == ["db.example"]
        assert target.secrets == (password,)
        assert target.shown == "postgresql://db.example:5432/payroll"


parts = st.text(st.characters(codec="utf-8", exclude_characters="\0,"), min_size=1)


@given(user=parts, password=parts, host=parts, database=parts, port=st.integers(1, 65535))
def test_every_part_percent_encoded_is_read_back_as_written(
    user: str, password: str, host: str, database: str, port: int
) -> None:
    def q(text: str) -> str:
        return urllib.parse.quote(text, safe="")

    target = read(f"postgresql://{q(user)}:{q(password)}@{q(host)}:{port}/{q(database)}")
    assert target.arguments == {
        "user": user,
        "password": password,
        "host": [host],
        "port": [port],
        "database": database,
    }
