"""The command as a Unix tool: what -o points at, pipes, signals, usage errors, output."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from payroll_async import PayrollClient
from payroll_async.cli import _app, _webhooks
from payroll_async.emulator import Emulator
from payroll_async.testing import EmulatorThread
from tests.checkpoints import forge
from tests.cli._run import invoke

N = 120


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with EmulatorThread(seed=3, payroll_connections=N, webhook_subscriptions=4) as emulator:
        yield emulator


def ids_of(text: str) -> list[str]:
    return [json.loads(line)["id"] for line in text.splitlines()]


def expected(emu: Emulator) -> list[str]:
    return [emu.data.payroll_connection(i)["id"] for i in range(N)]


def command(emu: Emulator, *args: str) -> list[str]:
    cli = [sys.executable, "-m", "payroll_async.cli"]
    return [*cli, "--base-url", emu.base_url, "--token", emu.token, *args]


# --- 1. what -o points at ---------------------------------------------------------------------


def test_dash_is_standard_output(emu: Emulator, tmp_path: Path) -> None:
    result = invoke(emu, "export", "payroll-connections", "-o", "-")
    assert result.exit_code == 0, result.stderr
    assert ids_of(result.stdout) == expected(emu)
    assert not list(Path.cwd().glob("-*"))


def test_a_symlink_is_resolved_and_stays_a_link(emu: Emulator, tmp_path: Path) -> None:
    real = tmp_path / "data" / "connections.jsonl"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)
    result = invoke(emu, "export", "payroll-connections", "-o", str(link))
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink()
    assert link.resolve() == real.resolve()
    assert ids_of(real.read_text()) == expected(emu)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "latest.jsonl"]
    assert sorted(p.name for p in real.parent.iterdir()) == ["connections.jsonl"]


def test_a_fifo_is_streamed_to_its_reader(emu: Emulator, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with fifo.open("rb") as reader:
            received.append(reader.read())

    reader = threading.Thread(target=read)
    reader.start()
    result = invoke(emu, "export", "payroll-connections", "-o", str(fifo))
    reader.join(30)
    assert result.exit_code == 0, result.stderr
    assert ids_of(received[0].decode()) == expected(emu)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no partial, no checkpoint
    assert fifo.is_fifo()


def test_resume_of_a_stream_target_is_refused(emu: Emulator, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # Refused before the FIFO is opened: no reader is needed for the command to answer.
    result = invoke(emu, "export", "payroll-connections", "-o", str(fifo), "--resume")
    assert result.exit_code == 2
    assert "cannot be resumed" in result.stderr
    result = invoke(emu, "export", "payroll-connections", "-o", "-", "--resume")
    assert result.exit_code == 2


def test_an_empty_output_name_is_one_line_exit_2(emu: Emulator) -> None:
    result = invoke(emu, "export", "payroll-connections", "-o", "")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


# --- 3. nothing left behind by a run that got nothing, and a finished run recognised -------


def test_a_run_that_got_nothing_leaves_nothing(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    result = invoke(emu, "export", "payroll-connections", "-o", str(target), token="wrong")
    assert result.exit_code == 3
    assert list(tmp_path.iterdir()) == []
    result = invoke(emu, "export", "payroll-connections", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    assert ids_of(target.read_text()) == expected(emu)


def test_a_run_killed_after_its_rename_is_finished_off(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    assert invoke(emu, "export", "payroll-connections", "-o", str(target)).exit_code == 0
    checkpoint = tmp_path / "c.jsonl.checkpoint"
    whole = target.read_bytes()
    forge(target, base_url=emu.base_url, token=emu.token, items=N, data=whole, done=True)
    result = invoke(emu, "export", "payroll-connections", "-o", str(target), "--resume")
    assert result.exit_code == 0, result.stderr
    assert f"Exported {N:,}" in result.stderr
    assert not checkpoint.exists()
    forge(target, base_url=emu.base_url, token=emu.token, items=N, data=whole, done=True)
    result = invoke(emu, "export", "payroll-connections", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]
    assert ids_of(target.read_text()) == expected(emu)


def test_error_text_keeps_the_directory_and_describes_a_mismatch(
    emu: Emulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"
    job = {"collection": "webhooks", "format": "csv", "sort": None, "employer": None}
    forge(target, base_url=emu.base_url, token=emu.token, job=job, items=1, data=b"x\n")
    result = invoke(emu, "export", "payroll-connections", "-o", str(target), "--resume")
    assert result.exit_code == 2
    assert str(tmp_path / "c.jsonl.checkpoint") in result.stderr
    assert "webhooks as csv" in result.stderr
    assert "{" not in result.stderr


# --- 4. --concurrency reaches the client --------------------------------------------------


def test_concurrency_above_8_reaches_the_client(
    emu: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []

    class Recording(PayrollClient):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            seen.append(kwargs.get("concurrency", 8))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(_app, "PayrollClient", Recording)
    result = invoke(emu, "export", "payroll-connections", "--concurrency", "32")
    assert result.exit_code == 0, result.stderr
    assert seen == [32]


# --- 6. like a Unix tool ------------------------------------------------------------------


def test_a_closed_pipe_ends_quietly(emu: Emulator) -> None:
    process = subprocess.Popen(
        command(emu, "export", "payroll-connections", "--page-size", "5"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()  # `| head -1`
    err = process.stderr.read().decode()
    process.wait(60)
    process.stderr.close()
    assert json.loads(first)["id"] == expected(emu)[0]
    assert process.returncode == 141
    assert err == ""


def test_the_emulators_banner_into_a_closed_pipe_ends_quietly() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "payroll_async.emulator", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.readline()
    process.stdout.close()  # `| head -1`: the next line it prints meets a closed pipe
    process.send_signal(signal.SIGINT)
    err = process.stderr.read().decode()
    process.wait(60)
    process.stderr.close()
    assert "Broken pipe" not in err
    assert process.returncode == 141


@pytest.mark.parametrize("argv", [["emulator", "--port", "99999"], ["emulator", "--port", "x"]])
def test_a_bad_emulator_port_is_exit_2_without_a_traceback(argv: list[str]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "payroll_async.cli", *argv], capture_output=True, timeout=60
    )
    assert run.returncode == 2
    assert b"Traceback" not in run.stderr
    assert b"65535" in run.stderr


def test_active_and_inactive_together_is_a_usage_error(emu: Emulator) -> None:
    result = invoke(emu, "webhooks", "list", "--active", "--inactive")
    assert result.exit_code == 2
    assert "exclude each other" in result.stderr


def test_an_unknown_sort_field_is_bad_input_before_any_request(emu: Emulator) -> None:
    before = emu.stats["requests"]
    result = invoke(emu, "export", "payroll-connections", "--sort", "nonexistent")
    assert result.exit_code == 2
    assert "nonexistent" in result.stderr
    assert emu.stats["requests"] == before


def test_csv_booleans_are_true_and_false(emu: Emulator) -> None:
    result = invoke(emu, "export", "webhooks", "--format", "csv")
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert rows
    assert {row["active"] for row in rows} <= {"true", "false"}


async def test_an_emulator_on_every_address_gives_a_usable_url() -> None:
    async with Emulator(host="0.0.0.0") as everywhere:
        assert everywhere.base_url.startswith("http://127.0.0.1:")
        async with PayrollClient(everywhere.base_url, everywhere.token) as client:
            assert await client.payroll_connections.list(max_items=1).collect()


# --- 2. replace of a missing subscription creates nothing --------------------------------


def test_replace_of_a_missing_subscription_creates_nothing(emu: Emulator) -> None:
    before = invoke(emu, "webhooks", "list", "--json")
    missing = str(uuid.uuid4())
    for _ in range(2):
        result = invoke(
            emu,
            "webhooks",
            "replace",
            missing,
            "--event",
            "PAYROLL_PROCESSED",
            "--path",
            "https://hooks.example.test/new",
        )
        assert result.exit_code == 5
        assert "nothing was created" in result.stderr
    assert invoke(emu, "webhooks", "list", "--json").stdout == before.stdout


# --- 7. readable output -----------------------------------------------------------------------


def test_the_table_fits_80_columns_and_never_cuts_an_id(
    emu: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.StringIO()
    monkeypatch.setattr(_webhooks, "stdout", Console(file=out, width=80, highlight=False))
    long_path = "https://hooks.example.test/" + "a-very-long-path-segment/" * 4
    result = invoke(emu, "webhooks", "create", "--event", "PAYROLL_PROCESSED", "--path", long_path)
    assert result.exit_code == 0, result.stderr
    text = out.getvalue()
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    created = json.loads(invoke(emu, "webhooks", "list", "--json").stdout)[-1]
    assert any(created["webhookSubscriptionId"] in line for line in lines)
    assert max(len(line) for line in lines) > 60  # the path is folded, not two per line


def test_help_spells_event_types_as_the_service_does(emu: Emulator) -> None:
    result = invoke(emu, "webhooks", "create", "--help")
    assert "PAYROLL_PROCESSED" in result.stdout
    assert "payroll_processed" not in result.stdout
