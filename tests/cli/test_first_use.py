"""The command's messages as a new user meets them (issue 40, items 6 and 10): what
--emulator makes is said to be gone, a path is said once, a database error is named."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from payroll_async.emulator import Emulator
from payroll_async.testing import EmulatorThread
from tests._postgres import PostgresServer
from tests.cli._run import invoke, start

# The --emulator's seeded data (docs/command.md names the employer and its invite).
EMPLOYER = "870cada6-0588-4e2a-a300-15b26a76dad6"
INVITE = "a43f89d1-804f-42d0-bdb6-b6955952cb30"
SUBSCRIPTION = "cd613e30-d8f1-4adf-91b7-584a2265b1f5"
HOOK = ("--event", "PAYROLL_PROCESSED", "--path", "https://hooks.example.com/new")
NOTE = "note: the --emulator service lived only for this command"


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with EmulatorThread(seed=7, payroll_connections=20, webhook_subscriptions=2) as emulator:
        yield emulator


def notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "--emulator service" in line]


@pytest.mark.parametrize(
    "write",
    [
        ("webhooks", "create", *HOOK),
        ("webhooks", "create", *HOOK, "--json"),
        ("webhooks", "replace", SUBSCRIPTION, *HOOK),
        ("webhooks", "delete", SUBSCRIPTION),
        ("invite-link", EMPLOYER, INVITE),
        ("invite-link", EMPLOYER, INVITE, "--json"),
    ],
)
def test_a_write_against_the_emulator_says_in_one_line_that_it_is_gone(
    write: tuple[str, ...],
) -> None:
    result = invoke(None, "--emulator", *write)
    assert result.exit_code == 0, result.stderr
    (line,) = notes(result.stderr)
    assert line.startswith(NOTE)
    assert "so this change does not last" in line  # a deletion too: nothing said to be "made"
    assert "run payroll-async emulator" in line
    assert NOTE not in result.stdout  # what a script reads stays the service's answer


def test_only_a_write_against_the_emulator_gets_the_note(emu: Emulator) -> None:
    created = invoke(None, "--emulator", "webhooks", "create", *HOOK)
    assert created.exit_code == 0, created.stderr
    assert len(notes(created.stderr)) == 1
    listed = invoke(None, "--emulator", "webhooks", "list")  # a read changes nothing
    assert listed.exit_code == 0, listed.stderr
    assert notes(listed.stderr) == []
    elsewhere = invoke(emu, "webhooks", "create", *HOOK)  # a service keeps what it is given
    assert elsewhere.exit_code == 0, elsewhere.stderr
    assert notes(elsewhere.stderr) == []


def test_a_base_url_ending_in_v1_is_hinted_once_and_its_path_said_once(emu: Emulator) -> None:
    result = invoke(
        None, "--base-url", f"{emu.base_url}/v1", "--token", emu.token, *("webhooks", "list")
    )
    assert result.exit_code == 5
    hint, error = result.stderr.strip().splitlines()
    assert hint.startswith("hint: --base-url ends in /v1")
    assert f"did you mean --base-url {emu.base_url}?" in hint
    assert error.startswith(f"error: GET {emu.base_url}/v1/v1/webhooks/subscriptions")
    assert error.endswith("-> 404: Not Found")
    assert result.stderr.count("/v1/v1/webhooks/subscriptions") == 1


async def test_a_database_error_names_the_drivers_error_not_a_bare_error(
    postgres_server: PostgresServer,
) -> None:
    role = f"first_{uuid.uuid4().hex[:12]}"
    await postgres_server.role(role, "the-right-one")
    database = await postgres_server.create()
    url = f"postgresql://{role}:wrong@127.0.0.1:{postgres_server.port}/{database}"
    process = await start(
        None,
        *("--emulator", "mirror", "webhooks", "--into", url),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), 120)
    text = err.decode()
    assert process.returncode == 5, text
    (line,) = text.strip().splitlines()
    assert line.startswith("error: cannot connect to postgresql://127.0.0.1:")
    assert line.endswith(
        f': InvalidPasswordError: password authentication failed for user "{role}"'
    )
    assert " Error:" not in line
