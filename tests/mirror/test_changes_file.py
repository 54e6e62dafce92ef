"""``mirror --changes FILE`` holds every committed change exactly once: after SIGKILLs in the
middle of runs, after a full disk, whatever ran in between. Real processes, real signals,
real databases; the file is compared with ``mirror_changes``. A run that is neither
killed, nor limited, nor waiting for another process runs the command in this process
(``in_process``): the same command, without half a second of start per run."""

from __future__ import annotations

import asyncio
import datetime
import fcntl
import json
import os
import signal
import stat
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from click.testing import Result

from payroll_async.cli._errors import ExitCode
from payroll_async.emulator import Emulator
from payroll_async.testing import EmulatorThread
from tests._postgres import query
from tests.cli._run import ROOT, invoke, start

pytestmark = pytest.mark.slow  # real mirror processes, SIGKILLed; PostgreSQL

# The command, in a process whose mirror stops itself (SIGSTOP) once it has told the
# command of STOP_AT committed changes: the test kills it there, mid-run, for certain.
STOPPING = """
import os, runpy, signal, sys
import payroll_async.mirror as public

real, stop_at = public.mirror, int(os.environ["STOP_AT"])

async def mirror(*args, on_change=None, **options):
    told = 0

    async def hook(change):
        nonlocal told
        await on_change(change)
        told += 1
        if told == stop_at:
            os.write(1, b"stopped\\n")
            os.kill(os.getpid(), signal.SIGSTOP)

    return await real(*args, on_change=hook, **options)

public.mirror = mirror
sys.argv[0] = "payroll-async"
runpy.run_module("payroll_async.cli", run_name="__main__")
"""


def _uuid(value: Any) -> str:
    return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))


def _time(value: Any) -> datetime.datetime:
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert isinstance(value, datetime.datetime)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc)


def file_changes(path: Path) -> list[tuple[str, str, str, datetime.datetime]]:
    """The changes in the file (a payroll data file: 0600)."""
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    return [
        (_uuid(line["run_id"]), _uuid(line["item_id"]), line["change"], _time(line["at"]))
        for line in lines
    ]


async def recorded(into: str, collection: str) -> list[tuple[str, str, str, datetime.datetime]]:
    rows = await query(
        into,
        "SELECT run_id, item_id, change, at FROM mirror_changes WHERE collection = :c",
        c=collection,
    )
    return [(_uuid(r), _uuid(i), str(c), _time(a)) for r, i, c, a in rows]


async def assert_every_change_once(into: str, changes: Path) -> int:
    """The file's lines are the database's changes: none missing, none twice."""
    in_file = file_changes(changes)
    in_database = await recorded(into, "payroll-connections")
    assert len(set(in_file)) == len(in_file), "a change is in the file twice"
    assert sorted(in_file) == sorted(in_database)
    return len(in_file)


def mirror_args(into: str, changes: Path) -> list[str]:
    return ["mirror", "payroll-connections", "--into", into, "--changes", str(changes)]


async def killed_run(emu: Emulator, into: str, changes: Path, stop_at: int) -> None:
    """A run of the command SIGKILLed once it has told of ``stop_at`` committed changes."""
    args = ["--base-url", emu.base_url, "--token", emu.token, *mirror_args(into, changes)]
    args += ["--page-size", "20"]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        STOPPING,
        *args,
        env={**os.environ, "PYTHONPATH": str(ROOT), "STOP_AT": str(stop_at)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    try:
        assert await asyncio.wait_for(process.stdout.readline(), 120) == b"stopped\n"
    finally:
        process.send_signal(signal.SIGKILL)
        assert await process.wait() == -signal.SIGKILL


async def in_process(emu: Emulator, *args: str) -> Result:
    """The command run in this process, on a thread of its own (the emulator serves on
    this loop)."""
    return await asyncio.to_thread(invoke, emu, *args)


async def whole_run(emu: Emulator, into: str, changes: Path) -> None:
    result = await in_process(emu, *mirror_args(into, changes))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("stop_at", [1, 150, 430])
async def test_sigkilled_runs_leave_every_committed_change_in_the_file_once(
    into: str, tmp_path: Path, stop_at: int
) -> None:
    changes = tmp_path / "changes.jsonl"
    async with Emulator(seed=21, payroll_connections=600) as emu:
        await killed_run(emu, into, changes, stop_at)
        emu.churn("payroll-connections", inserted=30, updated=40, deleted=0)
        await killed_run(emu, into, changes, stop_at=20)  # killed after its catch-up
        emu.churn("payroll-connections", inserted=3, updated=5, deleted=4)
        await whole_run(emu, into, changes)
    total = await assert_every_change_once(into, changes)
    assert total >= 600 + 30 + 3 - 4  # every item there at the end inserted, at least


async def test_changes_committed_by_runs_without_the_file_are_caught_up(
    into: str, tmp_path: Path
) -> None:
    changes = tmp_path / "changes.jsonl"
    async with Emulator(seed=22, payroll_connections=50) as emu:
        await whole_run(emu, into, changes)
        emu.churn("payroll-connections", inserted=2, updated=3, deleted=0)
        # another run into the same database, without --changes
        result = await in_process(emu, "mirror", "payroll-connections", "--into", into)
        assert result.exit_code == 0, result.output
        await whole_run(emu, into, changes)
    assert await assert_every_change_once(into, changes) == 50 + 2 + 3


# RLIMIT_FSIZE set inside the child before the command runs (no preexec_fn: the test
# process has threads); SIGXFSZ ignored, so a write past the limit fails with EFBIG.
SMALL_FILES = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv[0] = "payroll-async"
runpy.run_module("payroll_async.cli", run_name="__main__")
"""


async def test_a_full_disk_is_exit_1_and_the_next_run_completes_the_file(
    postgres_url: str, tmp_path: Path
) -> None:
    """PostgreSQL's files are the server's: only the changes file meets the limit."""
    changes = tmp_path / "changes.jsonl"
    limit = 20_000  # about 100 of the 400 changes
    async with Emulator(seed=23, payroll_connections=400) as emu:
        args = ["--base-url", emu.base_url, "--token", emu.token]
        args += mirror_args(postgres_url, changes)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
        code = f"limit = {limit}\n{SMALL_FILES}"
        for _ in range(2):  # the live lines, then the catch-up of the next run, meet it
            full = await asyncio.create_subprocess_exec(
                sys.executable, "-c", code, *args, env=env, stderr=asyncio.subprocess.PIPE
            )
            _, err = await asyncio.wait_for(full.communicate(), 120)
            text = err.decode()
            # a file that cannot be written: 1, as an export's full disk (not the service's 5)
            assert full.returncode == ExitCode.UNEXPECTED, text
            assert "Traceback" not in text
            assert "Mirrored 400 payroll-connections" in text
            assert f"error: cannot write the changes to {changes}: File too large" in text
            assert f"the next run with --changes {changes} catches up" in text
            assert whole_lines(changes)
        await whole_run(emu, postgres_url, changes)
    assert await assert_every_change_once(postgres_url, changes) == 400


def whole_lines(path: Path) -> bool:
    """Whether the file holds whole lines only (no part of a line a failed write left)."""
    data = path.read_bytes()
    return data == b"" or data.endswith(b"\n")


def mirror_webhooks(tmp_path: Path, changes: Path) -> Result:
    """The command, in this process, mirroring webhooks into SQLite with ``--changes``."""
    into = f"sqlite:///{tmp_path / 'm.db'}"
    with EmulatorThread(seed=24, webhook_subscriptions=2) as emu:
        return invoke(emu, "mirror", "webhooks", "--into", into, "--changes", str(changes))


def test_one_run_writes_to_a_changes_file_at_a_time(tmp_path: Path) -> None:
    changes = tmp_path / "changes.jsonl"
    lock = tmp_path / "changes.jsonl.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a run writing to it holds it
    try:
        result = mirror_webhooks(tmp_path, changes)
    finally:
        os.close(fd)
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    assert f"another mirror is writing to {changes}" in result.output
    assert "--wait" in result.output


async def test_a_rotated_file_gets_the_changes_after_its_cursor(tmp_path: Path) -> None:
    into = f"sqlite:///{tmp_path / 'm.db'}"
    changes = tmp_path / "changes.jsonl"
    async with Emulator(seed=25, payroll_connections=40) as emu:
        await whole_run(emu, into, changes)
        changes.rename(tmp_path / "changes.jsonl.1")  # as logrotate moves it away
        emu.churn("payroll-connections", inserted=2, updated=3, deleted=0)
        await whole_run(emu, into, changes)
    old = file_changes(tmp_path / "changes.jsonl.1")
    new = file_changes(changes)
    assert (len(old), len(new)) == (40, 5)
    assert sorted(old + new) == sorted(await recorded(into, "payroll-connections"))


@pytest.mark.parametrize(
    ("cursor", "message"),
    [
        (b"not json", "is not the cursor of changes.jsonl (it is not JSON)"),
        (b'{"version": 1, "bytes": -1, "file": [1, 2], "feeds": {}}', "bytes is -1"),
        (None, "is a symbolic link"),
    ],
)
def test_a_cursor_that_is_not_one_is_refused_with_exit_2(
    tmp_path: Path, cursor: bytes | None, message: str
) -> None:
    changes = tmp_path / "changes.jsonl"
    path = tmp_path / "changes.jsonl.cursor"
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    if cursor is None:
        path.symlink_to(victim)
    else:
        path.write_bytes(cursor)
    result = mirror_webhooks(tmp_path, changes)
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert victim.read_bytes() == b"keep"


async def test_changes_to_standard_output_are_the_runs_lines(tmp_path: Path) -> None:
    into = f"sqlite:///{tmp_path / 'm.db'}"
    async with Emulator(seed=27, webhook_subscriptions=3) as emu:
        process = await start(
            emu,
            "mirror",
            "webhooks",
            "--into",
            into,
            "--changes",
            "-",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    lines = [json.loads(text) for text in out.decode().splitlines()]
    assert [line["change"] for line in lines] == ["inserted"] * 3
    assert not [
        name
        for name in names(tmp_path)
        if "cursor" in name or (name.endswith(".lock") and not name.startswith("m.db"))
    ]


def names(folder: Path) -> list[str]:
    """The files in ``folder``: a stream leaves no cursor or lock beside anything."""
    return [path.name for path in folder.iterdir()]


async def test_one_employers_file_holds_that_employers_changes_only(
    into: str, tmp_path: Path
) -> None:
    changes = tmp_path / "changes.jsonl"
    async with Emulator(seed=28, payroll_connections=5, employer_identifiers=3) as emu:
        first, second = emu.data.employer_id(0), emu.data.employer_id(1)
        for employer, file in ((first, changes), (second, None), (first, changes)):
            args = ["mirror", "update-groups", "--employer", employer, "--into", into]
            result = await in_process(emu, *args, *(["--changes", str(file)] if file else []))
            assert result.exit_code == 0, result.output
    ids = await query(
        into,
        "SELECT update_group_id FROM update_groups WHERE employer_identifier_id = :e",
        e=first
        if into.startswith("sqlite")
        else uuid.UUID(first),  # SQLite: as the service writes it
    )
    in_file = file_changes(changes)
    assert len(ids) == 5
    assert sorted(item for _, item, _, _ in in_file) == sorted(_uuid(i) for (i,) in ids)


async def test_with_wait_a_run_waits_for_the_one_writing_to_the_file(tmp_path: Path) -> None:
    changes = tmp_path / "changes.jsonl"
    fd = os.open(tmp_path / "changes.jsonl.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a run writing to it holds it
    async with Emulator(seed=29, webhook_subscriptions=3) as emu:
        args = mirror_args(f"sqlite:///{tmp_path / 'm.db'}", changes)
        args[1] = "webhooks"
        process = await start(emu, *args, "--wait", stderr=asyncio.subprocess.PIPE)
        assert process.stderr is not None
        try:
            waiting = await asyncio.wait_for(process.stderr.readline(), 60)
        finally:
            os.close(fd)  # the other run ends
        assert b"another mirror is writing to" in waiting
        assert b"waiting for it to finish" in waiting
        rest = await asyncio.wait_for(process.stderr.read(), 60)
        assert await process.wait() == 0, rest.decode()
    assert len(file_changes(changes)) == 3


class RefuseAfter:
    """A middleware that refuses (403) every request after the first ``requests``."""

    __middleware_version__ = 1

    def __init__(self, requests: int) -> None:
        self.requests = requests

    async def __call__(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests -= 1
        if self.requests < 0:
            raise web.HTTPForbidden
        return await handler(request)


async def test_a_run_that_fails_leaves_what_it_committed_in_the_file(
    into: str, tmp_path: Path
) -> None:
    changes = tmp_path / "changes.jsonl"
    emu = Emulator(seed=30, payroll_connections=400)
    emu.app.middlewares.append(RefuseAfter(8))
    async with emu:
        result = await in_process(emu, *mirror_args(into, changes), "--page-size", "20")
    assert result.exit_code == ExitCode.AUTH, result.output
    assert 0 < await assert_every_change_once(into, changes) < 400
