"""The deletion guard: an empty or short answer cannot wipe a mirror (issue 39 item 11).

Another account's token, a sandbox or an emptied replica answers an honest-looking listing
(``data: []``, ``totalCount: 0``): the walk is proven, and without a bound one run would
mark every row deleted. Each test runs on SQLite and PostgreSQL (the ``into`` fixture).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from payroll_async import NOT_GIVEN, InvalidArgumentError, PayrollClient
from payroll_async.cli import _commands
from payroll_async.cli._errors import ExitCode
from payroll_async.emulator import Emulator
from payroll_async.mirror import MirrorDeletionsError, MirrorError, mirror
from payroll_async.testing import EmulatorThread
from tests._postgres import query
from tests.conftest import StartEmulator

from .test_mirror import live_ids


async def deletions_recorded(into: str) -> int:
    [(count,)] = await query(into, "SELECT count(*) FROM mirror_changes WHERE change = 'deleted'")
    return int(count)


async def test_an_empty_listing_marks_nothing_deleted_and_says_how_to_allow_it(
    start_emulator: StartEmulator, into: str
) -> None:
    ours = await start_emulator(seed=3, payroll_connections=300)
    # another account: an honest-looking listing without our items, and some of its own
    other = await start_emulator(seed=4, payroll_connections=20)
    async with PayrollClient(ours.base_url, ours.token) as client:
        await mirror(client, "payroll-connections", into=into)
    before = await live_ids(into)
    async with PayrollClient(other.base_url, other.token) as client:
        with pytest.raises(MirrorDeletionsError) as caught:
            await mirror(client, "payroll-connections", into=into)
    refused = caught.value
    assert isinstance(refused, MirrorError)
    assert (refused.deletions, refused.live) == (300, 300)
    message = str(refused)
    assert "would mark 300 of the 300 live rows deleted" in message
    assert "so it marked none" in message
    assert "max_deletions=300" in message
    assert "max_deletions=None" in message
    # nothing marked deleted; the other listing's items were written all the same
    assert before <= await live_ids(into)
    assert len(await live_ids(into)) == 320
    assert await deletions_recorded(into) == 0
    assert refused.result is not None
    assert (refused.result.inserted, refused.result.deleted) == (20, 0)
    assert refused.result.complete is False
    [(complete, deleted)] = await query(
        into,
        "SELECT complete, deleted FROM mirror_runs WHERE run_id = :r",
        r=refused.result.run_id if into.startswith("postgresql") else str(refused.result.run_id),
    )
    assert (bool(complete), deleted) == (False, 0)

    # told so, the next run marks them
    async with PayrollClient(other.base_url, other.token) as client:
        result = await mirror(client, "payroll-connections", into=into, max_deletions=300)
    assert (result.deleted, result.complete) == (300, True)
    assert len(await live_ids(into)) == 20


@pytest.mark.parametrize(
    ("rows", "deleted", "max_deletions", "refused"),
    [
        (200, 100, NOT_GIVEN, False),  # half: allowed
        (200, 101, NOT_GIVEN, True),  # more than half of at least 100
        (99, 99, NOT_GIVEN, False),  # fewer than 100 live rows: no default bound
        (100, 51, NOT_GIVEN, True),
        (200, 101, None, False),  # no bound
        (200, 5, 4, True),
        (200, 5, 5, False),
        (200, 1, 0, True),
    ],
)
async def test_the_bound(
    start_emulator: StartEmulator,
    into: str,
    rows: int,
    deleted: int,
    max_deletions: Any,
    refused: bool,
) -> None:
    emu = await start_emulator(seed=6, payroll_connections=rows)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into)
        emu.churn("payroll-connections", deleted=deleted)
        run = mirror(client, "payroll-connections", into=into, max_deletions=max_deletions)
        if refused:
            with pytest.raises(MirrorDeletionsError, match=f"would mark {deleted} of the {rows}"):
                await run
            assert len(await live_ids(into)) == rows
        else:
            result = await run
            assert result.deleted == deleted
            assert len(await live_ids(into)) == rows - deleted


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "max_deletions must be 0 or more, got -1"),
        (True, r"max_deletions must be an integer \(0 or more\), or None for no bound, not True"),
        (1.5, "max_deletions must be an integer .* not 1.5"),
        ("all", "max_deletions must be an integer .* not 'all'"),
    ],
)
async def test_a_bad_bound_is_refused_before_any_request(
    value: Any, message: str, tmp_path: Path
) -> None:
    # nothing listens on port 1: a request would fail otherwise
    async with PayrollClient("http://127.0.0.1:1", "token") as client:
        with pytest.raises(InvalidArgumentError, match=message):
            await mirror(client, "webhooks", into=f"sqlite:///{tmp_path}/m.db", max_deletions=value)
    assert await asyncio.to_thread(os.listdir, tmp_path) == []  # no database made


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"page_size": "5"}, "page_size must be an integer, not str"),
        ({"page_size": True}, "page_size must be an integer, not bool"),
        ({"page_size": 1}, "page_size must be between 2 and"),
        ({"page_size": 101}, "page_size must be between 2 and 100, got 101"),  # webhooks' most
        ({"concurrency": 0}, "concurrency must be between 1 and 1024, got 0"),
        ({"concurrency": "3"}, "concurrency must be an integer, not str"),
        ({"max_passes": 0}, "max_passes must be between 1 and"),
        ({"max_passes": 1.5}, "max_passes must be an integer, not float"),
    ],
)
async def test_bad_walk_options_are_refused_before_any_request(
    options: dict[str, Any], message: str, tmp_path: Path
) -> None:
    async with PayrollClient("http://127.0.0.1:1", "token") as client:
        with pytest.raises(InvalidArgumentError, match=message):
            await mirror(client, "webhooks", into=f"sqlite:///{tmp_path}/m.db", **options)
    assert await asyncio.to_thread(os.listdir, tmp_path) == []  # no database made


def invoke(emu: Emulator, *args: str) -> Result:
    return CliRunner().invoke(
        _commands.cli,
        ["--base-url", emu.base_url, "--token", emu.token, "mirror", *args],
        prog_name="payroll-async",
        catch_exceptions=False,
    )


DOCS = Path(__file__).parents[2] / "docs"


def test_the_command_exits_5_and_names_its_option(tmp_path: Path) -> None:
    into = f"sqlite:///{tmp_path}/payroll.db"
    changes = tmp_path / "changes.jsonl"
    (shown,) = [
        line
        for line in (DOCS / "mirror.md").read_text().splitlines()
        if line.startswith("error: payroll-connections: the run would mark")
    ]
    with EmulatorThread(seed=3, payroll_connections=300) as ours:
        assert invoke(ours, "payroll-connections", "--into", into).exit_code == 0
    with EmulatorThread(seed=4, payroll_connections=0) as emptied:
        refused = invoke(emptied, "payroll-connections", "--into", into, "--changes", str(changes))
        assert refused.exit_code == ExitCode.SERVICE, refused.output
        assert shown in refused.output.splitlines()  # one line, as docs/mirror.md shows it
        output = refused.output
        assert "Mirrored 0 payroll-connections" in output
        assert "0 inserted, 0 updated, 0 deleted" in output
        assert "run again with --max-deletions 300 (or --max-deletions all for no bound)" in output
        assert "max_deletions" not in output
        assert "changed too much" not in output
        assert changes.read_text() == ""

        allowed = invoke(
            emptied, "payroll-connections", "--into", into, "--changes", str(changes),
            "--max-deletions", "all",
        )  # fmt: skip
        assert allowed.exit_code == 0, allowed.output
        assert "0 inserted, 0 updated, 300 deleted" in allowed.output
        assert len(changes.read_text().splitlines()) == 300


@pytest.mark.parametrize("value", ["-1", "many", "1.5", ""])
def test_a_bad_max_deletions_is_exit_2_before_any_request(tmp_path: Path, value: str) -> None:
    with EmulatorThread(seed=3, payroll_connections=10) as emu:
        result = invoke(
            emu, "webhooks", "--into", f"sqlite:///{tmp_path}/m.db", "--max-deletions", value
        )
        assert emu.stats["requests"] == 0
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "--max-deletions" in result.output
    assert "is not a count of rows (0 or more) or 'all'" in result.output
    assert list(tmp_path.iterdir()) == []


def test_the_docs_say_the_bound_in_the_words_of_these_tests() -> None:
    def said(page: str) -> str:
        return " ".join((DOCS / page).read_text().split())

    mirror_md, warehouse_md = said("mirror.md"), said("warehouse.md")
    assert (
        "a run that would mark more than half of the live rows deleted, when there are at "
        "least 100 live rows, marks none." in mirror_md
    )
    assert "It still commits the rest of its work" in mirror_md
    assert "`MirrorDeletionsError` (a `MirrorError`; exit code 5 from the command)" in mirror_md
    assert "`--max-deletions N|all`" in mirror_md
    assert "`None` lifts the bound" in mirror_md
    assert "anything else is an `InvalidArgumentError`, before any request" in mirror_md
    assert (
        "a run that would delete more than half of a collection's rows, when it holds at "
        "least 100, deletes none." in warehouse_md
    )
    assert "`payroll_source(max_deletions=None)` (no bound)" in warehouse_md
    assert "`PipelineStepFailed`, whose chain of causes ends in `MirrorDeletionsError`" in (
        warehouse_md
    )
