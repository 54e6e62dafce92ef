"""Every command and error path of payroll-async, through click's CliRunner."""

from __future__ import annotations

import csv
import gc
import io
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from payroll_async import __version__
from payroll_async.cli import _app, _commands, main
from payroll_async.emulator import Emulator
from payroll_async.testing import EmulatorThread
from tests._fresh import modules_after
from tests.checkpoints import forge
from tests.cli._run import invoke

COLUMNS = ["id", "employerIdentifierId", "payrollPlatformId", "createdAt", "status", "product"]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with EmulatorThread(
        seed=5,
        payroll_connections=730,
        employer_identifiers=9,
        update_groups=3,
        webhook_subscriptions=4,
    ) as emulator:
        yield emulator


def connection_ids(emu: Emulator, count: int) -> list[str]:
    return [emu.data.payroll_connection(i)["id"] for i in range(count)]


def test_without_the_cli_extra_it_says_which_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "click", None)
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 1
    assert "pip install 'payroll-async[cli]'" in capsys.readouterr().err


def test_a_command_imports_only_what_it_runs() -> None:
    """Each command's module loads when it is named: the mirror starts without the
    receiver, the emulator or the export, ``webhooks list`` without ``listen``."""
    loaded = modules_after(
        "import click; from payroll_async.cli._commands import cli; "
        "ctx = click.Context(cli); cli.get_command(ctx, 'mirror'); "
        "cli.get_command(ctx, 'webhooks').get_command(ctx, 'list')"
    )
    for other in ("emulator", "events", "cli._listen", "cli._inbox", "cli._export_cmd"):
        assert f"'payroll_async.{other}'" not in loaded
    assert "'payroll_async.cli._mirror'" in loaded  # the check can fail
    assert "'payroll_async.cli._webhooks'" in loaded
    assert sorted(
        _commands.cli.list_commands(click.Context(_commands.cli))
    ) == [  # help lists them all
        "emulator",
        "export",
        "inbox",
        "invite-link",
        "mirror",
        "webhooks",
    ]


def test_a_command_runs_with_the_garbage_collector_on(emu: Emulator) -> None:
    gc.disable()  # as main() starts the command
    try:
        result = invoke(emu, "webhooks", "list")
        assert gc.isenabled()  # the root command turned it back on before the work
    finally:
        gc.enable()
    assert result.exit_code == 0, result.output


def test_main_leaves_the_garbage_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["payroll-async", "--version"])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 0
    assert gc.isenabled()


def test_version() -> None:
    result = invoke(None, "--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"payroll-async, version {__version__}"


def test_export_jsonl_to_a_file(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "connections.jsonl"
    result = invoke(emu, "export", "payroll-connections", "-o", str(target), "--page-size", "50")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["id"] for r in rows] == connection_ids(emu, 730)
    assert rows[0] == emu.data.payroll_connection(0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["connections.jsonl"]  # no leftovers
    assert "Exported 730 payroll-connections" in result.stderr
    assert "Exporting" not in result.stderr  # no progress bar: stderr is not a terminal


def test_export_csv_parses_back(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "c.csv"
    assert (
        invoke(emu, "export", "payroll-connections", "--format", "csv", "-o", str(target)).exit_code
        == 0
    )
    reader = csv.DictReader(io.StringIO(target.read_text()))
    assert reader.fieldnames == COLUMNS
    rows = list(reader)
    assert [r["id"] for r in rows] == connection_ids(emu, 730)
    assert rows[5] == {k: str(v) for k, v in emu.data.payroll_connection(5).items()}


def test_export_webhooks_csv_joins_event_types(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "w.csv"
    assert invoke(emu, "export", "webhooks", "--format", "csv", "-o", str(target)).exit_code == 0
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert [r["webhookSubscriptionId"] for r in rows] == [
        s["webhookSubscriptionId"] for s in emu.subscriptions()
    ]
    assert rows[0]["webhookEventTypes"] == " ".join(emu.subscriptions()[0]["webhookEventTypes"])


def test_export_json_parses_back(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "e.json"
    result = invoke(
        emu,
        "export",
        "employer-identifiers",
        "--format",
        "json",
        "-o",
        str(target),
        "--sort",
        "-createdAt",
    )
    assert result.exit_code == 0, result.output
    employers = json.loads(target.read_text())
    assert [e["id"] for e in employers] == [emu.data.employer_id(j) for j in reversed(range(9))]


def test_export_of_nothing_is_still_valid_json(tmp_path: Path) -> None:
    with EmulatorThread(payroll_connections=0) as empty:
        target = tmp_path / "none.json"
        assert (
            invoke(
                empty, "export", "payroll-connections", "--format", "json", "-o", str(target)
            ).exit_code
            == 0
        )
    assert json.loads(target.read_text()) == []


def test_export_to_standard_output(emu: Emulator) -> None:
    result = invoke(emu, "export", "update-groups", "--employer", emu.data.employer_id(2))
    assert result.exit_code == 0, result.output
    groups = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(groups) == 3
    assert set(groups[0]) == {"updateGroupId", "uploadDate", "errorCount"}


def test_update_groups_need_an_employer(emu: Emulator) -> None:
    result = invoke(emu, "export", "update-groups")
    assert result.exit_code == 2
    assert "--employer" in result.stderr


def test_an_interrupted_export_is_not_overwritten_without_resume(
    emu: Emulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"
    forge(target, base_url=emu.base_url, token=emu.token)
    result = invoke(emu, "export", "payroll-connections", "-o", str(target))
    assert result.exit_code == 2
    assert "pass --resume" in result.stderr
    assert "\n" not in result.stderr.strip()  # one line
    result = invoke(
        emu, "export", "payroll-connections", "-o", str(target), "--format", "csv", "--resume"
    )
    assert result.exit_code == 2
    assert "belongs to another export (payroll-connections as jsonl)" in result.stderr
    result = invoke(emu, "export", "payroll-connections", "-o", str(target), "--resume")
    assert result.exit_code == 0
    assert len(target.read_text().splitlines()) == 730


def test_resume_needs_a_file(emu: Emulator) -> None:
    result = invoke(emu, "export", "payroll-connections", "--resume")
    assert result.exit_code == 2
    assert "--resume needs a regular file" in result.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["webhooks", "delete", "not-a-uuid"], 2, "SUBSCRIPTION_ID must be a UUID"),
        (["export", "payroll-connections", "--sort", "nope"], 2, "cannot sort by 'nope'"),
        (["webhooks", "delete", str(uuid.uuid4())], 5, "404"),
        (["export", "payroll-connections", "--page-size", "0"], 2, "page-size"),
        (
            ["webhooks", "create", "--event", "PAYROLL_PROCESSED", "--path", "http://x.example/in"],
            2,
            "https",
        ),
    ],
)
def test_failures_are_one_line_with_their_exit_code(
    emu: Emulator, args: list[str], code: int, message: str
) -> None:
    result = invoke(emu, *args)
    assert result.exit_code == code, result.output
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert emu.token not in result.stderr
    if not result.stderr.startswith("Usage:"):  # click usage errors show the usage too
        assert result.stderr.count("\n") == 1  # one line


def test_authentication_and_permission_failures_exit_3(emu: Emulator) -> None:
    result = invoke(emu, "export", "payroll-connections", token="wrong-token")
    assert result.exit_code == 3
    assert "Invalid token" in result.stderr
    result = invoke(emu, "webhooks", "list", token=emu.token_without_webhook_role)
    assert result.exit_code == 3
    assert "api-user-webhook-subscription" in result.stderr


def test_rate_limited_exits_4(tmp_path: Path) -> None:
    with EmulatorThread(rate_limit=0.01) as slow:  # Retry-After 100 s: above the client's ceiling
        invoke(
            slow, "export", "payroll-connections", "-o", str(tmp_path / "first.jsonl")
        )  # uses the one token of the bucket
        result = invoke(slow, "export", "payroll-connections")
    assert result.exit_code == 4
    assert "Rate limit exceeded" in result.stderr


def test_verbose_shows_the_traceback(emu: Emulator) -> None:
    result = invoke(emu, "-v", "webhooks", "delete", "not-a-uuid")
    assert result.exit_code == 2
    assert "Traceback" in result.stderr


def test_no_service_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAYROLL_BASE_URL", raising=False)
    result = invoke(None, "webhooks", "list")
    assert result.exit_code == 2
    assert "--base-url" in result.stderr


def test_settings_come_from_the_environment(emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYROLL_BASE_URL", emu.base_url)
    monkeypatch.setenv("PAYROLL_TOKEN", emu.token)
    result = invoke(None, "webhooks", "list", "--json")
    assert result.exit_code == 0
    assert len(json.loads(result.stdout)) == len(emu.subscriptions())


def test_webhook_commands(emu: Emulator) -> None:
    created = invoke(
        emu,
        "webhooks",
        "create",
        "--event",
        "PAYROLL_PROCESSED",
        "--path",
        "https://hooks.example.com/cli",
        "--json",
    )
    assert created.exit_code == 0, created.output
    sub = json.loads(created.stdout)
    assert sub["webhookEventTypes"] == ["PAYROLL_PROCESSED"]
    table = invoke(emu, "webhooks", "list", "--active")
    assert table.exit_code == 0
    assert sub["webhookSubscriptionId"] in table.stdout
    assert "https://hooks.example.com/cli" in table.stdout
    replaced = invoke(
        emu,
        "webhooks",
        "replace",
        sub["webhookSubscriptionId"],
        "--event",
        "PAYROLL_PROCESSED",
        "--event",
        "EMPLOYEE_CENSUS_HIRED",
        "--path",
        "https://hooks.example.com/cli",
        "--json",
    )
    assert replaced.exit_code == 0, replaced.output
    new = json.loads(replaced.stdout)
    ids = {s["webhookSubscriptionId"] for s in emu.subscriptions()}
    assert new["webhookSubscriptionId"] in ids
    assert sub["webhookSubscriptionId"] not in ids
    deleted = invoke(emu, "webhooks", "delete", new["webhookSubscriptionId"])
    assert deleted.exit_code == 0
    assert "Deleted webhook subscription" in deleted.stderr


def test_invite_link(emu: Emulator) -> None:
    ids = emu.sample_ids()
    result = invoke(emu, "invite-link", ids["employer_identifier_id"], ids["invite_id"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{emu.base_url}/onboarding?token=")
    assert "Valid for 30 minutes" in result.stderr
    as_json = json.loads(
        invoke(emu, "invite-link", ids["employer_identifier_id"], ids["invite_id"], "--json").stdout
    )
    assert set(as_json) == {"onboardingLink", "expiresAt"}


def test_the_emulator_option_needs_no_account(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_app, "demo_emulator", lambda: Emulator(seed=1, payroll_connections=120))
    target = tmp_path / "demo.jsonl"
    result = invoke(None, "--emulator", "export", "payroll-connections", "-o", str(target))
    assert result.exit_code == 0, result.output
    assert len(target.read_text().splitlines()) == 120


def test_the_demo_emulator_shows_the_bar_at_work() -> None:
    demo = _commands.demo_emulator()
    assert demo.data.payroll_connections.size == 25_000
    assert demo.latency > 0


def test_emulator_command_takes_the_emulators_options() -> None:
    result = invoke(None, "emulator", "--help")
    assert result.exit_code == 0
    assert "--payroll-connections" in result.stdout
    assert "--drop-rate" in result.stdout
