"""payroll-async mirror: the command's output, files, exit codes and secrets."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from payroll_async.cli import _commands
from payroll_async.cli._errors import ExitCode
from payroll_async.emulator import Emulator
from payroll_async.testing import EmulatorThread
from tests.cli._run import start


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with EmulatorThread(seed=11, payroll_connections=420, employer_identifiers=6) as emulator:
        yield emulator


def invoke(emu: Emulator, *args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(
        _commands.cli,
        ["--base-url", emu.base_url, "--token", emu.token, "mirror", *args],
        prog_name="payroll-async",
        catch_exceptions=False,
        env=env,
    )


def test_mirror_then_again_with_the_changes_as_json_lines(emu: Emulator, tmp_path: Path) -> None:
    db = tmp_path / "payroll.db"
    changes = tmp_path / "changes.jsonl"
    first = invoke(
        emu, "payroll-connections", "--into", f"sqlite:///{db}", "--changes", str(changes)
    )
    assert first.exit_code == 0, first.output
    assert "Mirrored 420 payroll-connections into sqlite:///" in first.output
    assert "420 inserted, 0 updated, 0 deleted, 0 unchanged" in first.output
    lines = [json.loads(line) for line in changes.read_text().splitlines()]
    assert len(lines) == 420
    assert {line["change"] for line in lines} == {"inserted"}
    assert set(lines[0]) == {"run_id", "collection", "item_id", "change", "at", "before", "after"}
    assert stat.S_IMODE(changes.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    again = invoke(
        emu, "payroll-connections", "--into", f"sqlite:///{db}", "--changes", str(changes)
    )
    assert again.exit_code == 0
    assert "0 inserted, 0 updated, 0 deleted, 420 unchanged" in again.output
    assert len(changes.read_text().splitlines()) == 420  # nothing changed: nothing appended


# rich decides whether stderr is a terminal from these first (https://force-color.org/).
NOT_FORCED: dict[str, str | None] = {"TTY_COMPATIBLE": None, "FORCE_COLOR": None}


def test_no_progress_bar_when_stderr_is_not_a_terminal(emu: Emulator, tmp_path: Path) -> None:
    result = invoke(
        emu, "payroll-connections", "--into", f"sqlite:///{tmp_path / 'p.db'}", env=NOT_FORCED
    )
    assert result.exit_code == 0, result.output
    assert "Mirroring" not in result.stderr
    assert result.stderr.startswith("Mirrored 420 payroll-connections")


def test_on_a_terminal_a_progress_bar_counts_the_items(emu: Emulator, tmp_path: Path) -> None:
    result = invoke(
        emu,
        "payroll-connections",
        "--into",
        f"sqlite:///{tmp_path / 'p.db'}",
        env={**NOT_FORCED, "TTY_COMPATIBLE": "1"},
    )
    assert result.exit_code == 0, result.output
    bar = result.stderr[: result.stderr.index("Mirrored 420")]
    assert "Mirroring payroll-connections" in bar
    assert "420/420" in bar  # of the service's totalCount


@pytest.mark.parametrize("total", [25_000, 1_000_000])
def test_the_progress_bars_numbers_fit_an_80_column_terminal(total: int) -> None:
    from rich.console import Console

    from payroll_async.cli._progress import progress_bar, show_progress

    bar = progress_bar()
    task = bar.add_task("Exporting payroll-connections", total=None, rate="")
    show_progress(bar, task, total // 2, total)
    bar.update(task, rate="18,284 items/s")
    narrow = Console(width=80, color_system=None)
    with narrow.capture() as seen:
        narrow.print(bar.make_tasks_table(bar.tasks))
    line = seen.get()
    assert f"{total // 2}/{total}" in line
    assert "18,284 items/s" in line
    assert "…" not in line


def test_the_database_url_comes_from_the_environment(emu: Emulator, tmp_path: Path) -> None:
    db = tmp_path / "env.db"
    result = invoke(emu, "webhooks", env={"PAYROLL_MIRROR_URL": f"sqlite:///{db}"})
    assert result.exit_code == 0, result.output
    assert db.exists()


def test_the_default_database_is_payroll_db_here(
    emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PAYROLL_MIRROR_URL", raising=False)
    result = invoke(emu, "employer-identifiers")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "payroll.db").exists()


@pytest.mark.parametrize("target", ["db", "changes"])
def test_files_are_never_written_through_a_link(emu: Emulator, tmp_path: Path, target: str) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(victim)
    args = (
        ["--into", f"sqlite:///{link}"]
        if target == "db"
        else ["--into", f"sqlite:///{tmp_path / 'm.db'}", "--changes", str(link)]
    )
    result = invoke(emu, "webhooks", *args)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "symbolic link" in result.output
    assert victim.read_text() == "keep"


def test_a_second_run_is_refused_with_exit_2_or_waits(emu: Emulator, tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    lock = tmp_path / "busy.db.mirror-payroll_connections.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a running mirror holds it
    try:
        result = invoke(emu, "payroll-connections", "--into", f"sqlite:///{db}")
    finally:
        os.close(fd)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "another mirror of payroll_connections" in result.output
    assert "--wait" in result.output
    assert invoke(emu, "payroll-connections", "--into", f"sqlite:///{db}").exit_code == 0


def test_the_password_never_appears_in_output(emu: Emulator) -> None:
    result = invoke(emu, "webhooks", "--into", "postgresql://mirror:s3cret-pw@127.0.0.1:1/payroll")
    assert result.exit_code == ExitCode.SERVICE
    assert "s3cret-pw" not in result.output
    assert "postgresql://127.0.0.1:1/payroll:" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["webhooks", "--into", "mysql://x@y/z"], "'mysql' databases are not supported"),
        (["webhooks", "--into", "sqlite://"], "needs the path of a database file"),
        (["webhooks", "--into", "::::"], "not a database URL"),
    ],
)
def test_bad_urls_are_bad_input(emu: Emulator, args: list[str], message: str) -> None:
    result = invoke(emu, *args)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert message in result.output


def test_employer_is_for_update_groups_only(emu: Emulator, tmp_path: Path) -> None:
    result = invoke(
        emu, "webhooks", "--employer", emu.data.employer_id(0), "--into", f"sqlite:///{tmp_path}/x"
    )
    assert result.exit_code == ExitCode.BAD_INPUT
    db = tmp_path / "g.db"
    ok = invoke(
        emu, "update-groups", "--employer", emu.data.employer_id(0), "--into", f"sqlite:///{db}"
    )
    assert ok.exit_code == 0, ok.output
    assert "Mirrored 5 update-groups" in ok.output


def test_without_the_mirror_extra_it_says_which_extra(
    emu: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    for name in [m for m in sys.modules if m.startswith("payroll_async.mirror")]:
        monkeypatch.delitem(sys.modules, name)
    result = invoke(emu, "webhooks")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "pip install 'payroll-async[mirror]'" in result.output


async def test_with_wait_a_second_run_says_so_and_runs_once_the_first_is_done(
    emu: Emulator, tmp_path: Path
) -> None:
    import asyncio

    db = tmp_path / "wait.db"
    lock = tmp_path / "wait.db.mirror-webhook_subscriptions.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a running mirror holds it
    process = await start(
        emu,
        "mirror",
        "webhooks",
        "--into",
        f"sqlite:///{db}",
        "--wait",
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        waiting = await asyncio.wait_for(process.stderr.readline(), 60)
    finally:
        os.close(fd)  # the first run ends
    assert b"another mirror of webhook_subscriptions" in waiting
    assert b"waiting for it to finish" in waiting
    rest = await asyncio.wait_for(process.stderr.read(), 60)
    assert await process.wait() == 0
    assert b"Mirrored 3 webhooks" in rest
