"""PAYROLL_LOG turns the SDK's logging on without code, as OPENAI_LOG and STRIPE_LOG do."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from payroll_async import PayrollClient
from payroll_async._core._visible import VisibleFormatter
from tests.conftest import Serve
from tests.factories import connection, envelope

pytestmark = pytest.mark.slow  # each case a fresh interpreter

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tok_secret_never_logged_1234"

PROGRAM = textwrap.dedent(
    f"""
    import asyncio

    from payroll_async import PayrollClient, RetryPolicy
    from payroll_async.emulator import Emulator


    async def main() -> None:
        async with Emulator(token={TOKEN!r}) as emu:
            retry = RetryPolicy(max_attempts=1)
            async with PayrollClient(emu.base_url, emu.token, retry=retry) as client:
                await client.payroll_connections.list(max_items=1).collect()
            async with PayrollClient(emu.base_url, "wrong-" + emu.token, retry=retry) as bad:
                try:
                    await bad.payroll_connections.list(max_items=1).collect()
                except Exception as exc:
                    print(type(exc).__name__)


    asyncio.run(main())
    """
)


def run(log: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYROLL_")}
    env["PYTHONPATH"] = str(ROOT)
    if log is not None:
        env["PAYROLL_LOG"] = log
    return subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=60
    )


def test_debug_logs_each_attempt_on_stderr_without_the_token() -> None:
    result = run("debug")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "AuthenticationError\n"
    assert "payroll_async DEBUG] GET /v1/payroll-connections" in result.stderr
    assert "-> 200" in result.stderr
    assert "-> 401" in result.stderr
    assert TOKEN not in result.stderr


@pytest.mark.parametrize("value", ["info", "INFO"])
def test_info_leaves_out_the_debug_records(value: str) -> None:
    result = run(value)
    assert result.returncode == 0, result.stderr
    assert "DEBUG" not in result.stderr


@pytest.mark.parametrize("value", [None, "", "verbose"])
def test_without_a_known_level_the_sdk_logs_nothing(value: str | None) -> None:
    result = run(value)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_log_lines_escape_control_characters() -> None:
    # A record may quote a server or a sender: the line written to stderr carries no
    # terminal control code (a screen clear, a hidden hyperlink, a line rewritten by CR).
    program = (
        "import logging, payroll_async\n"
        "logging.getLogger('payroll_async.x').warning("
        "'server said %s', '\\x1b[2J\\x1b]8;;https://evil\\x07hi\\rfake\\x9b')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYROLL_")}
    env.update(PYTHONPATH=str(ROOT), PAYROLL_LOG="info")
    result = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60
    )
    assert "server said \\x1b[2J\\x1b]8;;https://evil\\x07hi\\rfake\\x9b" in result.stderr
    assert not any(ch in result.stderr for ch in "\x1b\x07\r\x9b")


FORGED = "[2026-01-01 00:00:00,000 payroll_async WARNING] forged"

LINKED = textwrap.dedent(
    f"""
    import asyncio
    from urllib.parse import quote

    from aiohttp import web

    from payroll_async import PayrollClient
    from tests.factories import connection, envelope


    async def listing(request: web.Request) -> web.Response:
        if "cursor" in request.query:
            return web.json_response(envelope([], total=1))
        host = request.host
        forged = quote("x\\n" + {FORGED!r})  # %0A, then what looks like a record
        link = f'<http://{{host}}/v1/payroll-connections?cursor={{forged}}>; rel="next"'
        return web.json_response(envelope([connection(1)], total=1), headers={{"Link": link}})


    async def main() -> None:
        app = web.Application()
        app.router.add_get("/v1/payroll-connections", listing)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        base = "http://127.0.0.1:%d" % runner.addresses[0][1]
        try:
            async with PayrollClient(base, {TOKEN!r}) as client:
                print(len(await client.payroll_connections.list().collect()))
        finally:
            await runner.cleanup()


    asyncio.run(main())
    """
)


def test_a_line_break_in_a_next_link_never_starts_a_log_line() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYROLL_")}
    env.update(PYTHONPATH=str(ROOT), PAYROLL_LOG="debug")
    result = subprocess.run(
        [sys.executable, "-c", LINKED], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.stdout == "1\n", result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 2  # one line per request: the next link's GET is still one line
    assert all(line.startswith("[") and "payroll_async DEBUG] GET" in line for line in lines)
    assert "?cursor=x\\n" + FORGED + " -> 200" in lines[1]


def record(message: str, args: tuple[object, ...], error: str | None) -> logging.LogRecord:
    exc_info = None
    if error is not None:
        try:
            raise ValueError(error)
        except ValueError:
            exc_info = sys.exc_info()
    return logging.LogRecord("payroll_async", logging.INFO, __file__, 1, message, args, exc_info)


@given(st.text(), st.lists(st.text(), max_size=3), st.none() | st.text())
def test_every_record_starts_exactly_one_line_at_the_margin(
    text: str, values: list[str], error: str | None
) -> None:
    message = text.replace("%", "%%") + " %s" * len(values)
    formatted = VisibleFormatter("[%(levelname)s] %(message)s").format(
        record(message, tuple(values), error)
    )
    lines = formatted.split("\n")
    assert len(formatted.splitlines()) == len(lines)  # no other kind of line break left
    assert lines[0].startswith("[INFO] ")
    assert all(line.startswith("  ") for line in lines[1:])  # a traceback's, indented
    assert len(lines) == 1 or error is not None


async def test_an_applications_own_handler_gets_the_link_escaped_too(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    async def listing(request: web.Request) -> web.Response:
        if "cursor" in request.query:
            return web.json_response(envelope([], total=1))
        link = f"<http://{request.host}{request.path}?cursor={quote('x' + chr(10) + FORGED)}>"
        body = envelope([connection(1)], total=1)
        return web.json_response(body, headers={"Link": link + '; rel="next"'})

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", listing)
    base = await serve(app)
    caplog.set_level(logging.DEBUG, logger="payroll_async")
    async with PayrollClient(base, TOKEN) as client:
        assert len(await client.payroll_connections.list().collect()) == 1
    messages = [r.getMessage() for r in caplog.records if r.name == "payroll_async"]
    assert any("cursor=x\\n" + FORGED in m for m in messages)
    assert not any("\n" in m for m in messages)


def test_an_exception_quoted_in_a_record_is_escaped_too(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="payroll_async")
    quoted = ValueError("bad value\n" + FORGED)
    logging.getLogger("payroll_async").warning("refused: %s (%r), %d", quoted, quoted, 7)
    message = caplog.records[-1].getMessage()
    assert message == f"refused: bad value\\n{FORGED} ({quoted!r}), 7"  # repr escapes itself
