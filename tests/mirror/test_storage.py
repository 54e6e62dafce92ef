"""The mirror's storage: ids as the service writes them, the item and its history kept,
the schema checked and migrated, hostile values, commits (real SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from payroll_async import InvalidArgumentError, PayrollClient
from payroll_async.emulator import Emulator
from payroll_async.mirror import MirrorError, MirrorURLError, mirror
from tests.cli._run import start
from tests.conftest import StartEmulator

from .conftest import query


@pytest.mark.parametrize("into", ["mysql://x@y/z", "sqlite://", "::::"])
async def test_a_bad_url_is_bad_input_like_any_other(into: str) -> None:
    # Port 9 (discard) on loopback: any request would fail with a connection error.
    async with PayrollClient("http://127.0.0.1:9", "token") as client:
        with pytest.raises(InvalidArgumentError) as caught:
            await mirror(client, "webhooks", into=into)
    assert isinstance(caught.value, MirrorURLError)
    assert isinstance(caught.value, MirrorError)


SCHEMA_1 = Path(__file__).parent / "data" / "mirror_schema_1.sql"
CANONICAL = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ID_COLUMNS = {
    "payroll_connections": ("id", "employer_identifier_id", "payroll_platform_id"),
    "employer_identifiers": ("id",),
    "webhook_subscriptions": ("webhook_subscription_id",),
    "update_groups": ("update_group_id", "employer_identifier_id"),
    "mirror_runs": ("run_id",),
    "mirror_changes": ("run_id", "item_id"),
}


def released_database(path: Path, extra_changes: int = 0) -> None:
    """A database as the released schema (version 1) wrote it, from the committed dump."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_1.read_text())
        if extra_changes:
            rows = (
                (uuid.uuid4().hex, "webhooks", uuid.uuid4().hex, "inserted", "2026-01-01 00:00:00")
                for _ in range(extra_changes)
            )
            db.executemany(
                "INSERT INTO mirror_changes (run_id, collection, item_id, change, at) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            db.commit()


def table_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return {
            table: db.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
            for table in ID_COLUMNS
        }


def dashed(value: str) -> str:
    return str(uuid.UUID(value))


async def churned_like_the_fixture(start_emulator: StartEmulator) -> Emulator:
    emu = await start_emulator(
        seed=31,
        payroll_connections=12,
        employer_identifiers=3,
        update_groups=2,
        webhook_subscriptions=3,
    )
    emu.churn("payroll-connections", inserted=1, updated=2, deleted=1)
    return emu


async def test_a_database_of_the_released_schema_is_migrated_on_the_next_run(
    start_emulator: StartEmulator, tmp_path: Path
) -> None:
    path = tmp_path / "payroll.db"
    released_database(path)
    before = table_rows(path)
    into = f"sqlite:///{path}"
    emu = await churned_like_the_fixture(start_emulator)
    async with PayrollClient(emu.base_url, emu.token) as client:
        result = await mirror(client, "payroll-connections", into=into)
        connection = (await client.payroll_connections.list().collect())[0]
    # The same items as when the fixture was made: nothing to record, every row kept.
    assert (result.inserted, result.updated, result.deleted, result.unchanged) == (0, 0, 0, 12)
    after = table_rows(path)
    for table, columns in ID_COLUMNS.items():
        assert len(after[table]) == len(before[table]) + (table == "mirror_runs"), table
        names = [r[0] for r in await query(into, f"SELECT name FROM pragma_table_info('{table}')")]
        for old, new in zip(before[table], after[table], strict=False):
            for column in columns:
                at = names.index(column)
                assert new[at] == dashed(old[at]), (table, column)
                assert CANONICAL.match(new[at])
    assert [v for (v,) in await query(into, "SELECT version FROM mirror_schema")] == [1, 2]
    # An id as the service, the export and the command write it finds its row.
    found = await query(
        into, f"SELECT status FROM payroll_connections WHERE id = '{connection.id}'"
    )
    assert found == [(connection.status,)]
    assert await query(
        into, f"SELECT collection FROM mirror_runs WHERE run_id = '{result.run_id}'"
    ) == [("payroll-connections",)]
    joined = await query(
        into,
        "SELECT count(*) FROM mirror_changes AS c JOIN payroll_connections AS p "
        "ON p.id = c.item_id",
    )
    assert joined == [(12 + 4,)]  # every change of a payroll connection finds its row
    assert await query(into, "PRAGMA integrity_check") == [("ok",)]


async def test_a_run_killed_during_the_migration_leaves_the_released_schema_intact(
    start_emulator: StartEmulator, tmp_path: Path
) -> None:
    path = tmp_path / "payroll.db"
    released_database(path, extra_changes=300_000)  # a migration that takes a while
    before = table_rows(path)
    into = f"sqlite:///{path}"
    emu = await churned_like_the_fixture(start_emulator)
    process = await start(
        emu,
        "mirror",
        "payroll-connections",
        "--into",
        into,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    wal = path.with_name("payroll.db-wal")
    # The migration's transaction spills its pages into the WAL as it goes: 4 MB of them
    # is a migration under way (of ~40 MB). A file's size has no event to wait on.
    while process.returncode is None and (not wal.exists() or wal.stat().st_size < 4 << 20):  # noqa: ASYNC110
        await asyncio.sleep(0.002)
    process.send_signal(signal.SIGKILL)
    assert await process.wait() == -signal.SIGKILL
    assert await query(into, "PRAGMA integrity_check") == [("ok",)]
    assert await query(into, "SELECT version FROM mirror_schema") == [(1,)]
    assert table_rows(path) == before
    async with PayrollClient(emu.base_url, emu.token) as client:
        result = await mirror(client, "payroll-connections", into=into)
    assert (result.inserted, result.updated, result.deleted, result.unchanged) == (0, 0, 0, 12)
    assert [v for (v,) in await query(into, "SELECT version FROM mirror_schema")] == [1, 2]
    ids = await query(into, "SELECT item_id FROM mirror_changes ORDER BY change_id DESC LIMIT 1")
    assert CANONICAL.match(ids[0][0])
