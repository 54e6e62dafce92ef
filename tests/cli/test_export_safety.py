"""``payroll-async export`` as users and neighbours meet it: real processes racing for one file,
a full disk, links, foreign checkpoints, and what the command says about where it resumed."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result

from payroll_async.emulator import Emulator
from payroll_async.testing import EmulatorThread
from tests.checkpoints import forge
from tests.cli._run import invoke
from tests.conftest import Asked

pytestmark = pytest.mark.slow  # real export processes racing for one file

N = 400


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with EmulatorThread(seed=12, payroll_connections=N, webhook_subscriptions=2) as emulator:
        yield emulator


def export(emu: Emulator, target: Path | str, *args: str, token: str | None = None) -> Result:
    return invoke(emu, "export", "payroll-connections", "-o", str(target), *args, token=token)


def ids_of(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def expected(emu: Emulator, count: int = N) -> list[str]:
    return [emu.data.payroll_connection(i)["id"] for i in range(count)]


def one_line_error(result: Result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr


# --- 7. messages ------------------------------------------------------------------------------


def test_a_missing_directory_is_named(
    emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = one_line_error(export(emu, "missing/dir/x.jsonl"))
    assert "directory missing/dir does not exist" in text
    assert ".partial" not in text
    assert list(tmp_path.iterdir()) == []


def test_a_dangling_link_is_refused_like_cp_refuses_it(emu: Emulator, tmp_path: Path) -> None:
    link = tmp_path / "out.jsonl"
    link.symlink_to(tmp_path / "planted.jsonl")
    text = one_line_error(export(emu, link))
    assert "dangling symbolic link" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_resume_with_nothing_to_resume_says_so(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    result = export(emu, target, "--resume")
    assert result.exit_code == 0, result.stderr
    assert f"Nothing to resume for {target}: starting from the first item" in result.stderr
    assert ids_of(target) == expected(emu)


def test_a_resumed_run_says_where_it_resumed(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    assert export(emu, target).exit_code == 0
    whole = target.read_bytes()
    target.unlink()
    first = b"".join(whole.splitlines(keepends=True)[:150])
    forge(target, base_url=emu.base_url, token=emu.token, items=150, data=first)
    result = export(emu, target, "--resume")
    assert result.exit_code == 0, result.stderr
    assert f"Resumed at 150 of {N}" in result.stderr
    assert f"Exported {N} payroll-connections to {target} (resumed at 150)" in result.stderr
    assert target.read_bytes() == whole


def test_a_full_disk_says_resume_will_continue(tmp_path: Path) -> None:
    """A real process whose file size limit (RLIMIT_FSIZE) runs out mid-export: EFBIG."""
    target = tmp_path / "c.jsonl"
    limit = 40_000  # about 165 items: a few pages in, far from the end
    # The limit is set inside the child before the command runs (no preexec_fn: the test
    # process has threads). SIGXFSZ ignored: the write fails with EFBIG instead of killing.
    small_files = (
        "import resource, runpy, signal, sys; "
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); "
        "sys.argv[0] = 'payroll-async'; "
        "runpy.run_module('payroll_async.cli', run_name='__main__')"
    )
    with EmulatorThread(seed=12, payroll_connections=N) as emu:
        args = ["--base-url", emu.base_url, "--token", emu.token, "export"]
        args += ["payroll-connections", "-o", str(target), "--page-size", "20"]
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        full = subprocess.run(
            [sys.executable, "-c", small_files, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert full.returncode == 1, full.stderr
        assert "Traceback" not in full.stderr
        assert "File too large" in full.stderr
        assert "items are saved" in full.stderr
        assert "run the same command with --resume to continue" in full.stderr
        assert not target.exists()
        command = [sys.executable, "-m", "payroll_async.cli", *args, "--resume"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "Resumed at " in done.stderr
    assert ids_of(target) == expected(emu)


# --- 1, 2. links and modes through the command ---------------------------------------------


def test_a_planted_partial_link_is_not_written_through_and_modes_are_kept(
    emu: Emulator, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "c.jsonl"
    (tmp_path / "c.jsonl.partial").symlink_to(victim)
    (tmp_path / "c.jsonl.checkpoint.tmp").symlink_to(victim)
    assert export(emu, target).exit_code == 0
    assert victim.read_text() == "precious\n"
    assert not target.is_symlink()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    target.chmod(0o400)
    assert export(emu, target).exit_code == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o400


# --- 3. resume identity ---------------------------------------------------------------------


def test_a_resume_against_another_service_or_token_is_exit_2(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    partial = forge(target, base_url="http://127.0.0.1:1", token=emu.token, items=1, data=b"{}\n")
    text = one_line_error(export(emu, target, "--resume"))
    assert "written from http://127.0.0.1:1" in text
    assert "Nothing was written" in text
    # the library's way out through service= is no option of the command
    assert "service=" not in text
    assert text.rstrip().endswith("to start over")
    forge(target, base_url=emu.base_url, token="another-token", items=1, data=b"{}\n")
    text = one_line_error(export(emu, target, "--resume"))
    assert "another token" in text
    assert partial.read_bytes() == b"{}\n"
    assert not target.exists()


# --- 5. tampered checkpoints ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"items": 100_000_000}, "holds 0 items, not the 100,000,000"),
        ({"items": -5}, "not a count"),
        ({"items": "5"}, "not a count"),
        ({"writer": {"partial": "c.jsonl.test01.partial", "bytes": 10**9}}, "shorter"),
        ({"writer": {"partial": "c.jsonl.test01.partial"}}, "not a count"),
        ({"job": None}, "not an object"),
        ({"service": {}}, "not a text"),
    ],
)
def test_a_tampered_checkpoint_is_one_line_exit_2(
    emu: Emulator, tmp_path: Path, change: dict[str, object], message: str
) -> None:
    target = tmp_path / "c.jsonl"
    forge(target, base_url=emu.base_url, token=emu.token)
    checkpoint = tmp_path / "c.jsonl.checkpoint"
    checkpoint.write_text(json.dumps({**json.loads(checkpoint.read_text()), **change}))
    result = export(emu, target, "--resume")
    text = one_line_error(result)
    assert message in text
    assert "Exported" not in result.stderr
    assert not target.exists()


# --- 4. one writer per output: two real processes ------------------------------------------


async def test_a_second_export_process_is_refused_while_the_first_runs(tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    total = 2000
    emu = Emulator(seed=5, payroll_connections=total, latency=0.05)
    asked = Asked()  # the export locks its output before its first request
    emu.app.middlewares.append(asked)
    async with emu:
        base = [sys.executable, "-m", "payroll_async.cli", "--base-url", emu.base_url]
        base += ["--token", emu.token, "export"]

        async def start(*args: str) -> asyncio.subprocess.Process:
            return await asyncio.create_subprocess_exec(
                *base,
                *args,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )

        first = await start(
            "payroll-connections", "-o", str(target), "--page-size", "50", "--concurrency", "1"
        )
        await asked.reached.wait()  # the first holds the lock
        assert first.returncode is None, "the first export ended before the second started"
        first.send_signal(signal.SIGSTOP)  # holds its lock, mid-export, for as long as needed
        try:
            second = await start("employer-identifiers", "-o", str(target))
            _, err = await asyncio.wait_for(second.communicate(), 60)
        finally:
            emu.latency = 0.0  # the rest of the first export: no need to be slow any more
            first.send_signal(signal.SIGCONT)
        assert second.returncode == 2
        text = err.decode()
        assert f"another export (process {first.pid}) is writing to {target}" in text
        assert "Traceback" not in text
        _, err = await asyncio.wait_for(first.communicate(), 120)
        assert first.returncode == 0, err.decode()
        expected_ids = [emu.data.payroll_connection(i)["id"] for i in range(total)]
    assert ids_of(target) == expected_ids
    assert sorted(os.listdir(tmp_path)) == ["c.jsonl"]


# --- 6. CSV through the command -------------------------------------------------------------


def test_csv_raw_needs_csv_and_writes_values_as_sent(emu: Emulator, tmp_path: Path) -> None:
    result = invoke(emu, "export", "webhooks", "--csv-raw")
    assert result.exit_code == 2
    assert "--csv-raw applies to --format csv only" in result.stderr
    path = "https://hooks.example.test/=1+1"
    created = invoke(
        emu, "webhooks", "create", "--event", "PAYROLL_PROCESSED", "--path", path, "--json"
    )
    assert created.exit_code == 0, created.stderr
    safe = invoke(emu, "export", "webhooks", "--format", "csv")
    raw = invoke(emu, "export", "webhooks", "--format", "csv", "--csv-raw")
    assert safe.stdout == raw.stdout  # an https:// path is not a formula: no quote needed
    rows = list(csv.DictReader(io.StringIO(raw.stdout)))
    assert path in [row["path"] for row in rows]
