"""The inbox's commands and their database (issue 40, items 2, 8 and 9): a database that
cannot be used at start is an exit 5 that says why; one that goes away later says why once;
`webhooks listen --inbox` says it stores and does not handle; the extra is named."""

from __future__ import annotations

import asyncio
import re
import sys
import uuid
from pathlib import Path

import asyncpg
import pytest

from payroll_async.cli._errors import ExitCode
from tests._postgres import PostgresServer
from tests.cli._run import invoke, start

from .conftest import SECRET
from .test_cli_inbox import _serve_and_post
from .test_inbox import _closed_port

PIPE = asyncio.subprocess.PIPE
COMMANDS = {
    "inbox run": ("inbox", "run", "--into"),
    "inbox list": ("inbox", "list", "--into"),
    "webhooks listen --inbox": ("webhooks", "listen", "--secret", SECRET, "--port", "0", "--inbox"),
}


async def _role(postgres_server: PostgresServer, password: str) -> str:
    role = f"inbox_{uuid.uuid4().hex[:12]}"
    await postgres_server.role(role, password)
    return role


async def _run_to_its_end(*args: str) -> tuple[int, str]:
    """The command as a process: its exit code and stderr (60 s at most: not a hang)."""
    process = await start(None, *args, stdout=PIPE, stderr=PIPE)
    try:
        _, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, err.decode()


@pytest.mark.parametrize("command", COMMANDS)
async def test_a_database_that_cannot_be_used_at_start_says_why_and_exits_5(
    command: str, postgres_server: PostgresServer
) -> None:
    role = await _role(postgres_server, "the-right-one")
    wrong = f"postgresql://{role}:WRONG-pw@127.0.0.1:{postgres_server.port}/postgres"
    refused = f"postgresql://{role}:WRONG-pw@127.0.0.1:{_closed_port()}/postgres"
    unknown = f"postgresql://{role}:WRONG-pw@no-such-host.invalid/postgres"
    for url, why in (
        (wrong, "password authentication failed"),
        (refused, "127.0.0.1"),
        (unknown, "gaierror"),
    ):
        code, err = await _run_to_its_end(*COMMANDS[command], url)
        assert code == ExitCode.SERVICE, err
        assert why in err
        assert "WRONG-pw" not in err
        assert "Traceback" not in err
        assert "Handling the events" not in err  # nothing started
        assert "Listening" not in err


async def test_a_database_lost_later_is_one_error_line_that_says_why_without_v(
    postgres_server: PostgresServer,
) -> None:
    role = await _role(postgres_server, "pw-1")
    url = f"postgresql://{role}:pw-1@127.0.0.1:{postgres_server.port}/postgres"
    admin = postgres_server.url()
    process = await start(None, "inbox", "run", "--into", url, stdout=PIPE, stderr=PIPE)
    assert process.stderr is not None

    read: list[str] = []

    async def line_with(text: str) -> str:
        assert process.stderr is not None
        while True:
            line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
            assert line, "the command ended"
            read.append(line)
            if text in line:
                return line

    try:
        await line_with("Handling the events of")
        conn = await asyncpg.connect(admin)
        try:  # the role may no longer log in, and its sessions end: an outage
            await conn.execute(f"ALTER ROLE {role} NOLOGIN")
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role
            )
            error = await line_with("ERROR")
            await conn.execute(f"ALTER ROLE {role} LOGIN")
            back = await line_with("can be used again")
        finally:
            await conn.close()
        process.send_signal(2)
        _, rest = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    # why, without -v: what failed, the driver's error and its text (the session the
    # server ended, or the role it refused, as the timing has it)
    assert re.search(r"cannot be used \([a-z ]+: \w*Error: \w", error), error
    assert "pw-1" not in error
    assert "WARNING" in back
    lines = [*read, *rest.decode().splitlines()]
    assert sum("ERROR" in line for line in lines) == 1  # once per outage


async def test_listen_with_an_inbox_says_it_stores_and_that_inbox_run_handles(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'inbox.db'}"
    out, err = await _serve_and_post(
        ("webhooks", "listen", "--secret", SECRET, "--inbox", url, "--count", "2"),
        (("e-1", "stored"), ("e-2", "stored")),
    )
    assert "is stored in the inbox" in err.decode()
    assert "payroll-async inbox run --into URL" in err.decode()
    lines = out.decode().splitlines()
    assert len(lines) == 2
    assert all("  stored  " in line for line in lines)


def test_the_inbox_commands_without_the_mirror_extra_name_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    for name in [
        m for m in sys.modules if m.startswith(("payroll_async.mirror", "payroll_async.inbox"))
    ]:
        monkeypatch.delitem(sys.modules, name)
    for args in (("inbox", "list"), ("inbox", "run"), ("inbox", "purge", "--done-before", "7d")):
        result = invoke(None, *args)
        assert result.exit_code == ExitCode.BAD_INPUT
        assert "the inbox needs the 'mirror' extra" in result.stderr
        assert "pip install 'payroll-async[mirror]'" in result.stderr
        assert "--into" not in result.stderr  # an option the user never typed
