"""A real export process, interrupted mid-way and resumed: every id exactly once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from payroll_async.cli._demo import DEMO_DATA
from payroll_async.emulator import Emulator
from tests.cli._run import ROOT

pytestmark = pytest.mark.slow  # real export processes, interrupted and resumed

TOTAL = 3000


# The command, in a process that says on standard output each checkpoint it has written:
# the test interrupts it once the checkpoint on disk holds some items, and knows it does.
TELLING = """
import os, runpy, sys
from payroll_async.export import _exporter

real = _exporter.write_checkpoint

def write_checkpoint(path, checkpoint):
    real(path, checkpoint)
    os.write(1, b"checkpoint %d\\n" % checkpoint.items)

_exporter.write_checkpoint = write_checkpoint
sys.argv[0] = "payroll-async"
runpy.run_module("payroll_async.cli", run_name="__main__")
"""


async def export(emu: Emulator, target: Path, *extra: str) -> asyncio.subprocess.Process:
    return await telling("--base-url", emu.base_url, "--token", emu.token, target, *extra)


async def telling(*args: str | Path) -> asyncio.subprocess.Process:
    """``payroll-async ARGS... export payroll-connections -o TARGET --page-size 50 EXTRA...``
    (the first Path in ``args`` is the target), telling each checkpoint on standard output."""
    at = next(i for i, arg in enumerate(args) if isinstance(arg, Path))
    command = [
        *map(str, args[:at]),
        *("export", "payroll-connections", "-o", str(args[at]), "--page-size", "50"),
        *map(str, args[at + 1 :]),
    ]
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        TELLING,
        *command,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def wait_for_checkpoint(process: asyncio.subprocess.Process, at_least: int) -> int:
    """Once the process has written a checkpoint of ``at_least`` items: their count."""
    assert process.stdout is not None
    while line := await process.stdout.readline():
        items = int(line.split()[1])
        if items >= at_least:
            return items
    _, err = await process.communicate()
    raise AssertionError(f"the export ended early ({process.returncode}): {err.decode()}")


def exported_ids(target: Path, fmt: str) -> list[str]:
    text = target.read_text()
    if fmt == "jsonl":
        return [json.loads(line)["id"] for line in text.splitlines()]
    if fmt == "json":
        return [item["id"] for item in json.loads(text)]
    lines = text.splitlines()
    assert lines[0].startswith("id,")
    return [line.split(",")[0] for line in lines[1:]]


@pytest.mark.parametrize(
    ("how", "link_headers", "fmt"),
    [
        (signal.SIGINT, True, "jsonl"),
        (signal.SIGTERM, True, "jsonl"),
        (signal.SIGINT, False, "csv"),
        (signal.SIGKILL, False, "json"),
    ],
)
async def test_interrupt_then_resume_gives_every_item_once(
    tmp_path: Path, how: signal.Signals, link_headers: bool, fmt: str
) -> None:
    target = tmp_path / f"connections.{fmt}"
    # Slow enough that the interruption lands mid-way: 60 pages, 50 ms each, 2 at a time.
    async with Emulator(
        seed=8, payroll_connections=TOTAL, latency=0.05, link_headers=link_headers
    ) as emu:
        first = await export(emu, target, "--format", fmt, "--concurrency", "2")
        await wait_for_checkpoint(first, at_least=200)
        first.send_signal(how)
        _, err = await asyncio.wait_for(first.communicate(), 60)
        if how in (signal.SIGINT, signal.SIGTERM):
            assert first.returncode == (130 if how == signal.SIGINT else 143)
            lines = err.decode().strip().splitlines()
            assert len(lines) == 1
            word = "Interrupted" if how == signal.SIGINT else "Terminated"
            assert lines[0].startswith(f"{word} after ")
            assert "--resume" in lines[0]
        else:
            assert first.returncode == -signal.SIGKILL
        assert not target.exists()  # a finished file is always whole: there is none yet
        done = json.loads(target.with_name(target.name + ".checkpoint").read_text())["items"]
        assert 0 < done < TOTAL

        # the rest needs no pause to land in: 10 ms a page, two still in flight at a time
        emu.latency = 0.01
        second = await export(emu, target, "--format", fmt, "--concurrency", "2", "--resume")
        _, err = await asyncio.wait_for(second.communicate(), 120)
        assert second.returncode == 0, err.decode()
        expected = [emu.data.payroll_connection(i)["id"] for i in range(TOTAL)]

    ids = exported_ids(target, fmt)
    assert ids == expected  # every id, once, in order
    assert sorted(os.listdir(tmp_path)) == [target.name]  # no partial file, no checkpoint


async def test_an_emulator_export_stopped_by_ctrl_c_resumes_from_the_emulator(
    tmp_path: Path,
) -> None:
    """Issue 40.1: each --emulator run starts an emulator on another port with another
    token, and its data is the same: the first resume a new user tries continues, and the
    refusal without --resume names the two files it means and the option that works."""
    target = tmp_path / "big.jsonl"
    first = await telling("--emulator", target, "--concurrency", "2")
    await wait_for_checkpoint(first, at_least=200)
    first.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(first.communicate(), 60)
    assert first.returncode == 130
    assert err.decode().strip().endswith("run the same command with --resume to continue.")
    checkpoint = target.with_name("big.jsonl.checkpoint")
    saved = json.loads(checkpoint.read_text())
    partial = tmp_path / saved["writer"]["partial"]
    assert partial.is_file()

    again = await telling("--emulator", target, "--concurrency", "2")
    _, err = await asyncio.wait_for(again.communicate(), 60)
    assert again.returncode == 2
    refusal = err.decode().strip()
    assert len(refusal.splitlines()) == 1
    assert "pass --resume to continue it" in refusal
    assert f"delete {checkpoint} and {partial} to start over" in refusal

    async with Emulator(payroll_connections=TOTAL) as other:  # a service with an address
        elsewhere = await export(other, target, "--resume")
        _, err = await asyncio.wait_for(elsewhere.communicate(), 60)
    assert elsewhere.returncode == 2
    refusal = err.decode().strip()
    assert len(refusal.splitlines()) == 1
    assert "to continue it, run it with --emulator and --resume, or delete" in refusal

    second = await telling("--emulator", target, "--concurrency", "2", "--resume")
    _, err = await asyncio.wait_for(second.communicate(), 120)
    assert second.returncode == 0, err.decode()
    assert f"Resumed at {saved['items']:,} of 25,000 payroll-connections" in err.decode()
    demo = Emulator(**DEMO_DATA).data
    expected = [demo.payroll_connection(i)["id"] for i in range(25_000)]
    assert exported_ids(target, "jsonl") == expected
    assert sorted(os.listdir(tmp_path)) == [target.name]
