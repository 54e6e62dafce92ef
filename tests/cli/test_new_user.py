"""The command tried as a new user would: contradictions refused, messages in CLI terms."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from payroll_async import InvalidArgumentError, NotFoundError, PayrollClient
from payroll_async.cli import _commands
from payroll_async.emulator import Emulator
from payroll_async.emulator.__main__ import main as emulator_main
from payroll_async.testing import EmulatorThread
from tests.cli._run import invoke


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with EmulatorThread(seed=7, payroll_connections=20, webhook_subscriptions=2) as emulator:
        yield emulator


def test_emulator_with_a_base_url_on_the_command_line_is_a_usage_error() -> None:
    for given in (["--base-url", "https://api.example.com"], ["--token", "t"]):
        result = invoke(None, "--emulator", *given, "webhooks", "list")
        assert result.exit_code == 2
        assert f"leave out {given[0]}" in result.stderr


def test_emulator_overrides_a_base_url_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAYROLL_BASE_URL", "https://api.example.com")
    monkeypatch.setenv("PAYROLL_TOKEN", "t")
    result = invoke(None, "--emulator", "webhooks", "list", "--json")
    assert result.exit_code == 0, result.stderr


def test_lower_case_event_types_are_refused_alike_by_the_command_and_the_sdk(
    emu: Emulator,
) -> None:
    path = "https://hooks.example.com/case"
    result = invoke(emu, "webhooks", "create", "--event", "payroll_processed", "--path", path)
    assert result.exit_code == 2
    assert "upper case" in result.stderr
    assert "PAYROLL_PROCESSED" in result.stderr

    async def sdk() -> None:
        async with PayrollClient(emu.base_url, emu.token) as client:
            await client.webhooks.create(event_types=["payroll_processed"], path=path)

    with pytest.raises(InvalidArgumentError, match=r"upper case.*PAYROLL_PROCESSED"):
        asyncio.run(sdk())
    assert all(s["path"] != path for s in emu.subscriptions())


@pytest.mark.parametrize(
    ("args", "named", "sdk_name"),
    [
        (["export", "update-groups", "--employer", "bad", "-o", "-"], "--employer", "employer_"),
        (["webhooks", "delete", "bad"], "SUBSCRIPTION_ID", "subscription_id"),
        (
            ["webhooks", "create", "--event", "PAYROLL_PROCESSED", "--path", "http://x.example"],
            "--path must",
            "path must",
        ),
    ],
)
def test_errors_name_the_commands_options(
    emu: Emulator, args: list[str], named: str, sdk_name: str
) -> None:
    result = invoke(emu, *args)
    assert result.exit_code == 2
    assert named in result.stderr
    assert sdk_name not in result.stderr.replace(named, "")


def test_replace_of_an_unknown_id_names_no_request_that_answered_404(emu: Emulator) -> None:
    unknown = str(uuid.uuid4())
    args = ["webhooks", "replace", unknown, "--event", "PAYROLL_PROCESSED"]
    result = invoke(emu, *args, "--path", "https://hooks.example.com/r")
    assert result.exit_code == 5
    assert f"webhook subscription {unknown} does not exist" in result.stderr
    assert "404" not in result.stderr.replace(unknown, "")  # a random id may hold "404"
    assert "GET" not in result.stderr

    async def sdk() -> None:
        async with PayrollClient(emu.base_url, emu.token) as client:
            await client.webhooks.replace(
                unknown, event_types=["PAYROLL_PROCESSED"], path="https://hooks.example.com/r"
            )

    with pytest.raises(NotFoundError) as caught:
        asyncio.run(sdk())
    assert "404" not in str(caught.value).replace(unknown, "")
    assert emu.base_url not in str(caught.value)


@pytest.mark.parametrize(
    "args",
    [["--emulator", "webhooks", "listen", "--port"], ["emulator", "--port"]],
    ids=["webhooks listen", "emulator"],
)
def test_a_busy_port_is_bad_input_said_alike_by_both(args: list[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = invoke(None, *args, port)
    assert result.exit_code == 2  # the same code from both: --port is bad input
    assert result.stderr == (
        f"error: cannot listen on 127.0.0.1:{port}: the port is in use: pick another "
        "--port, or --port 0 for a free one\n"
    )  # one line, in the command's words, not aiohttp's ("error while attempting to bind")


def test_python_m_emulator_says_a_busy_port_as_the_command_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        code = emulator_main(["--port", port])
    assert code == 2
    assert capsys.readouterr().err == (
        f"error: cannot listen on 127.0.0.1:{port}: the port is in use: pick another "
        "--port, or --port 0 for a free one\n"
    )


def test_a_base_url_ending_in_v1_gets_a_hint(emu: Emulator) -> None:
    result = CliRunner().invoke(
        _commands.cli,
        ["--base-url", f"{emu.base_url}/v1/", "--token", emu.token, "webhooks", "list"],
        catch_exceptions=False,
    )
    assert result.exit_code != 0
    assert f"did you mean --base-url {emu.base_url}?" in result.stderr
    right = invoke(emu, "webhooks", "list")
    assert "hint" not in right.stderr


def test_the_link_headers_switch_describes_both_forms() -> None:
    result = invoke(None, "emulator", "--help")
    text = " ".join(result.stdout.split())
    assert "--link-headers / --no-link-headers" in text
    assert "Send Link headers" in text
    assert "omit them (--no- link-headers)" in text or "omit them (--no-link-headers)" in text
