"""The deletion guard: an empty or short answer cannot wipe a mirror (issue 39 item 11).

Another account's token, a sandbox or an emptied replica answers an honest-looking listing
(``data: []``, ``totalCount: 0``): the walk is proven, and without a bound one run would
mark every row deleted. Each test runs on SQLite and PostgreSQL (the ``into`` fixture).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from payroll_async import NOT_GIVEN, InvalidArgumentError, PayrollClient
from payroll_async.cli import _commands
from payroll_async.cli._errors import ExitCode
from payroll_async.emulator import Emulator
from payroll_async.mirror import Change, MirrorDeletionsError, MirrorError, mirror
from payroll_async.mirror._guard import Guard
from payroll_async.testing import EmulatorThread
from tests._postgres import query
from tests.conftest import TOKEN, Serve, StartEmulator

from .test_mirror import live_ids
from .test_proof import Service, spread_id, stamp


async def live_rows(into: str) -> list[tuple[Any, ...]]:
    """Every row of the connections' table, as stored."""
    return sorted(await query(into, "SELECT * FROM payroll_connections"), key=repr)


async def deletions_recorded(into: str) -> int:
    [(count,)] = await query(into, "SELECT count(*) FROM mirror_changes WHERE change = 'deleted'")
    return int(count)


async def changes_recorded(into: str) -> int:
    [(count,)] = await query(into, "SELECT count(*) FROM mirror_changes")
    return int(count)


async def test_the_wrong_account_is_refused_before_anything_is_written_or_told(
    serve: Serve, into: str
) -> None:
    """Another account's listing (some of its ids ours, with other data; most its own):
    its first page's totalCount is under the bound of the live rows, so the run writes
    nothing, tells nothing, and says how to allow it (issue 53 item 8)."""
    ours = Service(300)
    base = await serve(ours.app())
    async with PayrollClient(base, TOKEN) as client:
        await mirror(client, "payroll-connections", into=into, page_size=40)
    before = await live_rows(into)
    changes = await changes_recorded(into)
    # the wrong account: 10 of our ids with other data, and 30 items of its own
    other = Service(40, lambda i: spread_id(i + 10_000))
    for i in range(10):
        other.items[i] = {**ours.items[i], "status": "revoked", "createdAt": stamp(i - 100)}
    told: list[Change] = []

    async def on_change(change: Change) -> None:
        told.append(change)

    wrong = await serve(other.app())
    async with PayrollClient(wrong, TOKEN) as client:
        with pytest.raises(MirrorDeletionsError) as caught:
            await mirror(
                client, "payroll-connections", into=into, page_size=40, on_change=on_change
            )
    refused = caught.value
    assert isinstance(refused, MirrorError)
    assert (refused.deletions, refused.live) == (260, 300)
    message = str(refused)
    assert "would mark at least 260 of the 300 live rows deleted" in message
    assert "so it wrote nothing (nothing inserted, updated or marked deleted)" in message
    assert "max_deletions=300" in message
    assert "max_deletions=None" in message
    # nothing written, nothing told
    assert told == []
    assert await live_rows(into) == before
    assert await changes_recorded(into) == changes
    assert refused.result is not None
    result = refused.result
    assert (result.inserted, result.updated, result.deleted, result.complete) == (0, 0, 0, False)
    [(complete, deleted)] = await query(
        into,
        "SELECT complete, deleted FROM mirror_runs WHERE run_id = :r",
        r=result.run_id if into.startswith("postgresql") else str(result.run_id),
    )
    assert (bool(complete), deleted) == (False, 0)

    # told so, the next run writes and marks them
    async with PayrollClient(wrong, TOKEN) as client:
        allowed = await mirror(
            client, "payroll-connections", into=into, page_size=40, max_deletions=300
        )
    assert (allowed.inserted, allowed.updated, allowed.deleted) == (30, 10, 290)
    assert allowed.complete is True
    assert len(await live_ids(into)) == 40


async def test_an_emptied_listing_is_refused_before_anything_is_written(
    start_emulator: StartEmulator, into: str
) -> None:
    ours = await start_emulator(seed=3, payroll_connections=300)
    emptied = await start_emulator(seed=4, payroll_connections=0)
    async with PayrollClient(ours.base_url, ours.token) as client:
        await mirror(client, "payroll-connections", into=into)
    async with PayrollClient(emptied.base_url, emptied.token) as client:
        with pytest.raises(MirrorDeletionsError) as caught:
            await mirror(client, "payroll-connections", into=into)
    assert (caught.value.deletions, caught.value.live) == (300, 300)
    assert "would mark 300 of the 300 live rows deleted" in str(caught.value)
    assert len(await live_ids(into)) == 300
    assert await deletions_recorded(into) == 0


async def test_a_listing_whose_first_page_hides_the_lie_is_refused_at_its_end(
    start_emulator: StartEmulator, into: str
) -> None:
    """As many items as the live rows, none of them ours: the first page's totalCount says
    nothing is missing, so the run writes what it sees, and the end-of-run check refuses
    the deletions (what it wrote is kept and told)."""
    ours = await start_emulator(seed=3, payroll_connections=300)
    other = await start_emulator(seed=4, payroll_connections=300)
    async with PayrollClient(ours.base_url, ours.token) as client:
        await mirror(client, "payroll-connections", into=into)
    told: list[Change] = []

    async def on_change(change: Change) -> None:
        told.append(change)

    async with PayrollClient(other.base_url, other.token) as client:
        with pytest.raises(MirrorDeletionsError) as caught:
            await mirror(client, "payroll-connections", into=into, on_change=on_change)
    refused = caught.value
    assert (refused.deletions, refused.live) == (300, 300)
    assert "would mark 300 of the 300 live rows deleted" in str(refused)
    assert "so it marked none (its inserts and updates are kept)" in str(refused)
    assert "max_deletions=300" in str(refused)
    assert len(await live_ids(into)) == 600
    assert len(told) == 300
    assert await deletions_recorded(into) == 0


async def test_an_employers_first_page_is_weighed_before_its_update_groups_are_written(
    start_emulator: StartEmulator, into: str
) -> None:
    emu = await start_emulator(seed=5, employer_identifiers=20, update_groups=5)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "update-groups", into=into)
        churned = emu.churn("update-groups", updated=2, deleted=3)  # one employer's
        told: list[Change] = []

        async def on_change(change: Change) -> None:
            told.append(change)

        with pytest.raises(MirrorDeletionsError) as caught:
            await mirror(client, "update-groups", into=into, max_deletions=2, on_change=on_change)
    assert caught.value.deletions == 3
    assert "would mark at least 3 of the 100 live rows deleted" in str(caught.value)
    assert told == []  # the employer's two updates were not written
    rows = await query(into, "SELECT count(*) FROM mirror_changes WHERE change = 'updated'")
    assert rows == [(0,)]
    assert set(churned.deleted) <= await live_ids(into, "update-groups")


async def test_the_employers_of_another_account_are_weighed_before_any_update_group(
    start_emulator: StartEmulator, into: str
) -> None:
    ours = await start_emulator(seed=5, employer_identifiers=30, update_groups=5)
    other = await start_emulator(seed=6, employer_identifiers=3, update_groups=5)
    async with PayrollClient(ours.base_url, ours.token) as client:
        await mirror(client, "update-groups", into=into)
    before = await live_ids(into, "update-groups")
    async with PayrollClient(other.base_url, other.token) as client:
        with pytest.raises(MirrorDeletionsError) as caught:
            await mirror(client, "update-groups", into=into)
    assert (caught.value.deletions, caught.value.live) == (150, 150)
    assert "so it wrote nothing" in str(caught.value)
    assert await live_ids(into, "update-groups") == before


def _guard(live: dict[uuid.UUID | None, int], bound: Any = NOT_GIVEN) -> Guard:
    return Guard("update-groups", live, bound)


async def _never(offset: int) -> bool:
    raise AssertionError("asked past the total")


async def test_the_guard_weighs_each_first_page_against_its_scopes_live_rows() -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    guard = _guard({a: 100, b: 100})
    await guard.first_page(a, 60, 60, 100, _never)  # 40 left out of 200 live: allowed
    with pytest.raises(MirrorDeletionsError, match="at least 101 of the 200 live rows"):
        await guard.first_page(b, 39, 39, 100, _never)  # 40 + 61 > 100
    guard = _guard({a: 100, b: 100})
    for total in (None, "100", -1, 10):  # missing, not an integer, below its page's items
        await guard.first_page(a, total, 50, 100, _never)
    guard.on = False
    await guard.first_page(b, 0, 0, 100, _never)  # after the first pass: the end decides


async def test_a_full_first_page_is_looked_past_before_the_guard_refuses() -> None:
    a = uuid.uuid4()
    asked: list[int] = []

    def past(holds: bool) -> Callable[[int], Awaitable[bool]]:
        async def at(offset: int) -> bool:
            asked.append(offset)
            return holds

        return at

    guard = _guard({a: 3000})
    await guard.first_page(a, 100, 100, 100, past(True))  # capped: items past 100
    with pytest.raises(MirrorDeletionsError):
        await guard.first_page(a, 100, 100, 100, past(False))  # honest: nothing past 100
    assert asked == [100, 100]


def test_the_employers_listed_leave_out_every_row_of_the_others() -> None:
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    _guard({a: 60, b: 60, c: 60}).employers({a, b})  # 60 of 180: allowed
    with pytest.raises(MirrorDeletionsError, match="at least 120 of the 180 live rows"):
        _guard({a: 60, b: 60, c: 60}).employers({a})
    with pytest.raises(MirrorDeletionsError, match="would mark 180 of the 180 live rows"):
        _guard({a: 60, b: 60, c: 60, None: 0}).employers(set())


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
            with pytest.raises(
                MirrorDeletionsError, match=f"would mark (at least )?{deleted} of the {rows} "
            ):
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
