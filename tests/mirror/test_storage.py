"""The mirror's storage: ids as the service writes them, the item and its history kept,
the schema checked and migrated, hostile values, commits (real SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import re
import signal
import sqlite3
import time
import uuid
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from payroll_async import InvalidArgumentError, PayrollClient, to_json
from payroll_async.emulator import Emulator
from payroll_async.mirror import Change, MirrorError, MirrorURLError, mirror
from payroll_async.mirror._schema import made_in_sqlite
from tests._postgres import query
from tests.cli._run import start
from tests.conftest import StartEmulator


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
        if extra_changes:  # random ids as the release wrote them (32 hex digits), made by SQLite
            db.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
                "INSERT INTO mirror_changes (run_id, collection, item_id, change, at) "
                "SELECT lower(hex(randomblob(16))), 'webhooks', lower(hex(randomblob(16))), "
                "'inserted', '2026-01-01 00:00:00' FROM n",
                (extra_changes,),
            )
            db.commit()


def table_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return {
            table: db.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
            for table in ID_COLUMNS
        }


async def command(emu: Emulator, into: str, output: int) -> asyncio.subprocess.Process:
    """``payroll-async mirror payroll-connections --into INTO`` as a process of its own."""
    return await start(
        emu, "mirror", "payroll-connections", "--into", into, stdout=output, stderr=output
    )


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
    # The rows the first release wrote get the item as sent when next seen (no change).
    assert await query(
        into,
        "SELECT count(*) FROM payroll_connections "
        "WHERE mirror_deleted_at IS NULL AND (mirror_item IS NULL OR mirror_digest IS NULL)",
    ) == [(0,)]


async def test_a_users_view_index_and_trigger_on_a_released_table_survive_the_migration(
    start_emulator: StartEmulator, tmp_path: Path
) -> None:
    path = tmp_path / "payroll.db"
    released_database(path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(
            "CREATE VIEW active_connections AS "
            "SELECT id, status FROM payroll_connections WHERE mirror_deleted_at IS NULL;"
            "CREATE INDEX my_status ON payroll_connections (status);"
            "CREATE TABLE my_log (id TEXT);"
            "CREATE TRIGGER my_trigger AFTER INSERT ON payroll_connections "
            "BEGIN INSERT INTO my_log VALUES (new.id); END;"
        )
    into = f"sqlite:///{path}"
    emu = await churned_like_the_fixture(start_emulator)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into)
        emu.churn("payroll-connections", inserted=1)
        again = await mirror(client, "payroll-connections", into=into)  # every run works
        live = {str(c.id) for c in await client.payroll_connections.list().collect()}
    assert again.inserted == 1
    # The view reads the migrated table, with the ids in their new form.
    assert {i for (i,) in await query(into, "SELECT id FROM active_connections")} == live
    kept = await query(
        into,
        "SELECT type, name, tbl_name FROM sqlite_master "
        "WHERE name IN ('my_status', 'my_trigger') ORDER BY name",
    )
    assert kept == [
        ("index", "my_status", "payroll_connections"),
        ("trigger", "my_trigger", "payroll_connections"),
    ]
    assert len(await query(into, "SELECT id FROM my_log")) == 1  # the trigger still fires
    assert await query(into, "PRAGMA integrity_check") == [("ok",)]


async def test_postgresql_tables_of_the_released_schema_gain_the_new_columns(
    start_emulator: StartEmulator, postgres_url: str
) -> None:
    into = postgres_url
    emu = await start_emulator(seed=44, payroll_connections=40)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into)
        # As the released schema made them: no item, no digest, no before and after.
        await query(
            into,
            "ALTER TABLE payroll_connections DROP COLUMN mirror_item, DROP COLUMN mirror_digest",
        )
        await query(into, "ALTER TABLE mirror_changes DROP COLUMN before, DROP COLUMN after")
        await query(into, "UPDATE mirror_schema SET version = 1")
        emu.churn("payroll-connections", updated=2)
        again = await mirror(client, "payroll-connections", into=into)
    assert (again.updated, again.unchanged) == (2, 38)
    assert [v for (v,) in await query(into, "SELECT version FROM mirror_schema ORDER BY 1")] == [
        1,
        2,
    ]
    assert await query(
        into, "SELECT count(*) FROM payroll_connections WHERE mirror_item IS NULL"
    ) == [(0,)]
    kept = await query(
        into,
        "SELECT before IS NULL, after ->> 'id' = item_id::text FROM mirror_changes "
        "WHERE change = 'updated'",
    )
    assert kept == [(True, True), (True, True)]  # the released rows kept no item before


async def test_a_run_killed_during_the_migration_leaves_the_released_schema_intact(
    start_emulator: StartEmulator, tmp_path: Path
) -> None:
    path = tmp_path / "payroll.db"
    released_database(path, extra_changes=150_000)  # a migration that takes a while
    before = table_rows(path)
    into = f"sqlite:///{path}"
    emu = await churned_like_the_fixture(start_emulator)
    process = await command(emu, into, asyncio.subprocess.DEVNULL)
    wal = path.with_name("payroll.db-wal")
    # The migration's transaction spills its pages into the WAL as it goes: 4 MB of them
    # is a migration under way (of 40 MB with 150,000 changes; 300,000 made 80 MB and
    # cost 1.3 s more of CPU). A file's size has no event to wait on.
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


class Rewrite:
    """A middleware that edits the listed items of every listing: ``edit(path, items)``."""

    __middleware_version__ = 1

    def __init__(self, edit: Callable[[str, list[dict[str, Any]]], None]) -> None:
        self.edit = edit

    async def __call__(self, request: web.Request, handler: Any) -> web.StreamResponse:
        response = await handler(request)
        if isinstance(response, web.Response) and response.body:
            data = json.loads(bytes(response.body))  # type: ignore[arg-type]
            if isinstance(data, dict) and isinstance(data.get("data"), list):
                self.edit(request.path, data["data"])
                response.body = json.dumps(data).encode()
        return response


class FutureField(Rewrite):
    """Adds a field this SDK does not know to every listed item."""

    def __init__(self) -> None:
        super().__init__(self._add)
        self.value: Any = {"tier": "gold"}

    def _add(self, path: str, items: list[dict[str, Any]]) -> None:
        for item in items:
            item["futureField"] = self.value


async def test_mirror_item_keeps_the_item_as_sent_and_a_change_of_an_unknown_field_counts(
    into: str,
) -> None:
    emu = Emulator(seed=41, payroll_connections=30)
    future = FutureField()
    emu.app.middlewares.append(future)
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        first = await mirror(client, "payroll-connections", into=into, page_size=10)
        sent = {str(c.id): c for c in await client.payroll_connections.list().collect()}
        again = await mirror(client, "payroll-connections", into=into, page_size=10)
        future.value = {"tier": "platinum"}
        told: list[Change] = []

        async def on_change(change: Change) -> None:
            told.append(change)

        changed = await mirror(
            client, "payroll-connections", into=into, page_size=10, on_change=on_change
        )
    assert (first.inserted, again.unchanged, again.updated) == (30, 30, 0)
    assert (changed.updated, changed.unchanged) == (30, 0)
    rows = await query(into, "SELECT id, mirror_item FROM payroll_connections")
    for key, item in rows:
        kept = item if isinstance(item, dict) else json.loads(item)
        connection = sent[str(key)]
        assert kept["futureField"] == {"tier": "platinum"}
        assert kept["id"] == str(connection.id)
        assert kept["status"] == connection.status
    pairs = {
        (json.loads(c.before)["futureField"]["tier"], json.loads(c.after)["futureField"]["tier"])
        for c in told
    }
    assert pairs == {("gold", "platinum")}


async def test_changes_hold_the_item_before_and_after(
    start_emulator: StartEmulator, into: str
) -> None:
    emu = await start_emulator(seed=42, payroll_connections=200)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into)
        old = {str(c.id): c for c in await client.payroll_connections.list().collect()}
        churn = emu.churn("payroll-connections", inserted=3, updated=4, deleted=2)
        told: list[Change] = []

        async def on_change(change: Change) -> None:
            told.append(change)

        result = await mirror(client, "payroll-connections", into=into, on_change=on_change)
        new = {str(c.id): c for c in await client.payroll_connections.list().collect()}
    assert (result.inserted, result.updated, result.deleted) == (3, 4, 2)
    stored = await query(
        into,
        "SELECT item_id, change, before, after FROM mirror_changes WHERE run_id = :r",
        r=result.run_id if into.startswith("postgresql") else str(result.run_id),
    )

    def parsed(value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    rows = {str(i): (c, parsed(b), parsed(a)) for i, c, b, a in stored}
    by_change = {str(c.item_id): (c.change, parsed(c.before), parsed(c.after)) for c in told}
    assert rows == by_change
    for key in map(str, churn.inserted):
        assert rows[key] == ("inserted", None, json.loads(to_json(new[key])))
    for key in map(str, churn.updated):
        change, before, after = rows[key]
        assert (change, before["status"], after["status"]) == (
            "updated",
            old[key].status,
            new[key].status,
        )
        assert before["status"] != after["status"]
    for key in map(str, churn.deleted):
        change, before, after = rows[key]
        assert (change, before["id"], after) == ("deleted", key, None)
    lines = [c.to_json() for c in told]
    assert {line["change"]: line["after"] is None for line in lines}["deleted"]


DOCS = Path(__file__).parents[2] / "docs" / "mirror.md"


_SQL_BLOCK = re.compile(r"(?:<!-- sql: ([a-z,]+) ([a-z-]+) -->\n)?```sql\n(.*?)```", re.S)


def documented_sql_blocks() -> list[tuple[set[str], str, str]]:
    """Every SQL block of docs/mirror.md: its dialects, name and text (its marker's)."""
    return [
        (set(dialects.split(",")) if dialects else set(), name, sql)
        for dialects, name, sql in _SQL_BLOCK.findall(DOCS.read_text())
    ]


def documented_sql(dialect: str, name: str) -> str:
    (found,) = [sql for on, n, sql in documented_sql_blocks() if dialect in on and n == name]
    return found


def test_every_documented_query_is_named_for_the_databases_it_runs_on() -> None:
    blocks = documented_sql_blocks()
    assert len(blocks) >= 9
    assert all(on and on <= {"sqlite", "postgresql"} for on, _, _ in blocks)
    named = {(dialect, name) for on, name, _ in blocks for dialect in on}
    assert len(named) == sum(len(on) for on, _, _ in blocks)  # each name once a database
    # and each is run below, on its database
    assert {name for _, name in named} == {
        "id-lookup",
        "today",
        "most-updated",
        "status-changes",
        "changed-fields",
    }


async def test_the_documented_what_changed_and_how_queries_answer(
    start_emulator: StartEmulator, into: str
) -> None:
    dialect = "postgresql" if into.startswith("postgresql") else "sqlite"
    emu = await start_emulator(seed=43, payroll_connections=120)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into)
        old = {str(c.id): c.status for c in await client.payroll_connections.list().collect()}
        churn = emu.churn("payroll-connections", inserted=2, updated=5, deleted=1)
        await mirror(client, "payroll-connections", into=into)
        new = {str(c.id): c.status for c in await client.payroll_connections.list().collect()}
    updated = {str(i) for i in churn.updated}
    statuses = await query(into, documented_sql(dialect, "status-changes"))
    assert {(str(i), was, now) for i, was, now, _at in statuses} == {
        (key, old[key], new[key]) for key in updated
    }
    fields = await query(into, documented_sql(dialect, "changed-fields"))
    assert {(str(row[0]), row[2]) for row in fields} == {(key, "status") for key in updated}
    today = await query(into, documented_sql(dialect, "today"))
    assert len(today) == 120 + 2 + 5 + 1  # both runs' changes
    assert {str(row[2]) for row in today if row[0] == "updated"} == updated
    most = await query(into, documented_sql(dialect, "most-updated"))
    assert {(str(key), count) for key, count in most} == {(key, 1) for key in updated}
    lookup = documented_sql(dialect, "id-lookup")
    key = sorted(updated)[0]
    assert "f2e87725-4550-4e04-b4e8-471e935506ec" in lookup
    found = await query(into, lookup.replace("f2e87725-4550-4e04-b4e8-471e935506ec", key))
    assert found == [(new[key],)]


HOSTILE = {
    0: {"errorCount": 2**63},
    1: {"uploadDate": "9999-12-31T23:59:59-05:00"},
    2: {"uploadDate": "0001-01-01T00:00:00+05:00"},
}


def hostile_groups(path: str, items: list[dict[str, Any]]) -> None:
    if path.endswith("/update-groups"):
        for at, values in HOSTILE.items():
            if at < len(items):
                items[at].update(values)


async def test_values_the_database_cannot_hold_never_block_the_collection(into: str) -> None:
    emu = Emulator(seed=45, employer_identifiers=2, update_groups=6)
    emu.app.middlewares.append(Rewrite(hostile_groups))
    employer = emu.data.employer_id(0)
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        sent = await client.employer_identifiers.update_groups.list(employer).collect()
        first = await mirror(client, "update-groups", into=into, employer=employer)
        again = await mirror(client, "update-groups", into=into, employer=employer)
    # Every item is kept (the rewritten dates also break the listing's order, so the walks
    # prove no deletion: complete stays False, and nothing is marked deleted).
    assert (first.inserted, first.deleted) == (6, 0)
    assert (again.inserted, again.updated, again.unchanged, again.deleted) == (0, 0, 6, 0)
    rows = await query(
        into,
        "SELECT update_group_id, error_count, upload_date, mirror_item FROM update_groups",
    )
    stored = {str(uuid.UUID(str(r[0]))): r[1:] for r in rows}
    for at, group in enumerate(sent):
        error_count, upload_date, item = stored[str(group.update_group_id)]
        kept = item if isinstance(item, dict) else json.loads(item)
        if at in HOSTILE:  # NULL in its column, as sent in mirror_item
            column = "error_count" if "errorCount" in HOSTILE[at] else "upload_date"
            assert (error_count if column == "error_count" else upload_date) is None
            for name, value in HOSTILE[at].items():
                assert kept[name] == value
        else:
            assert error_count == group.error_count
            assert kept["errorCount"] == group.error_count
            assert upload_date is not None


FORMS = [
    "2024-03-04T05:06:07Z",
    "2024-03-04T05:06:07.5Z",
    "2024-03-04T05:06:07.123Z",
    "2024-03-04T05:06:07.123456Z",
    "2024-03-04T05:06:07.1234567Z",  # cut to microseconds, as the model reads it
    "2024-03-04t05:06:07z",
    "2024-03-04 05:06:07Z",
    "2024-03-04T05:06:07+05:30",
    "2024-03-04T05:06:07.25-01:00",
    "2024-03-04T05:06:07+0530",
    "2024-01-01T00:30:00+01:00",  # the day and the year before, in UTC
]


def timestamp_forms(path: str, items: list[dict[str, Any]]) -> None:
    if path.endswith("/payroll-connections"):
        for item, form in zip(items, FORMS, strict=False):
            item["createdAt"] = form


async def test_the_database_reads_each_form_of_a_timestamp_as_the_model_does(
    into: str,
) -> None:
    # The database converts the item's text itself: each RFC 3339 form the model reads
    # (T or t or a space, Z or z or an offset with or without its colon, any fraction) is
    # the same instant in the typed column, to the microsecond.
    emu = Emulator(seed=48, payroll_connections=len(FORMS))
    emu.app.middlewares.append(Rewrite(timestamp_forms))
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        sent = await client.payroll_connections.list().collect()
        result = await mirror(client, "payroll-connections", into=into)
    assert result.inserted == len(FORMS)
    stored = dict(await query(into, "SELECT id, created_at FROM payroll_connections"))
    for connection in sent:
        value = stored[connection.id if into.startswith("postgresql") else str(connection.id)]
        expected = connection.created_at.astimezone(datetime.timezone.utc)
        if isinstance(value, str):  # SQLite: UTC text, as SQLAlchemy's DateTime writes it
            assert value == expected.isoformat(" ", "microseconds")[:26]
        else:
            assert value == expected


def nul_in_a_status(path: str, items: list[dict[str, Any]]) -> None:
    if path.endswith("/payroll-connections"):
        for item in items:
            if item["id"][0] in "01":  # about one in eight, the same in every listing
                item["status"] = "act\x00ive"


async def test_a_nul_character_in_postgresql_is_kept_as_sent_and_the_rest_mirrored(
    postgres_url: str,
) -> None:
    emu = Emulator(seed=46, payroll_connections=50)
    emu.app.middlewares.append(Rewrite(nul_in_a_status))
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        first = await client.payroll_connections.list(page_size=10).collect()
        result = await mirror(client, "payroll-connections", into=postgres_url, page_size=10)
        again = await mirror(client, "payroll-connections", into=postgres_url, page_size=10)
        process = await command(emu, postgres_url, asyncio.subprocess.PIPE)
        _, said = await process.communicate()
    assert process.returncode == 0, said
    assert b"Traceback" not in said
    hostile = {c.id for c in first if "\x00" in c.status}
    assert 0 < len(hostile) < 50
    assert (result.inserted, result.complete) == (50, True)
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 50)
    rows = await query(
        postgres_url, "SELECT id, status, mirror_item::text FROM payroll_connections"
    )
    assert {r[0] for r in rows} == {c.id for c in first}
    for key, status, item in rows:
        if key in hostile:  # NULL in its column, as sent in mirror_item
            assert (status, json.loads(item)["status"]) == (None, "act\x00ive")
        else:
            assert status == json.loads(item)["status"]


async def test_a_nul_character_in_sqlite_is_kept_as_sent_and_its_column_null(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # SQLite's JSON functions cut a text at its NUL: the column is NULL (with the
    # warning), never a text cut short; mirror_item keeps the item as sent.
    into = f"sqlite:///{tmp_path / 'nul.db'}"
    emu = Emulator(seed=46, payroll_connections=50)
    emu.app.middlewares.append(Rewrite(nul_in_a_status))
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        first = await client.payroll_connections.list(page_size=10).collect()
        result = await mirror(client, "payroll-connections", into=into, page_size=10)
    hostile = {str(c.id) for c in first if "\x00" in c.status}
    assert 0 < len(hostile) < 50
    assert result.inserted == 50
    rows = await query(into, "SELECT id, status, mirror_item FROM payroll_connections")
    for key, status, item in rows:
        if key in hostile:
            assert (status, json.loads(item)["status"]) == (None, "act\x00ive")
        else:
            assert status == json.loads(item)["status"]
    warned = [r.getMessage() for r in caplog.records if "stored with status NULL" in r.getMessage()]
    assert len(warned) == len(hostile)


DROP_KEY = {
    "postgresql": ["ALTER TABLE payroll_connections DROP CONSTRAINT payroll_connections_pkey"],
    "sqlite": [  # SQLite drops a key only with its table: made again without it, by hand
        "CREATE TABLE copy AS SELECT * FROM payroll_connections",
        "DROP TABLE payroll_connections",
        "ALTER TABLE copy RENAME TO payroll_connections",
    ],
}


@pytest.mark.parametrize("change", ["primary key", "index"])
async def test_a_key_or_index_dropped_by_hand_is_refused_before_anything_is_written(
    start_emulator: StartEmulator, into: str, change: str
) -> None:
    dialect = "postgresql" if into.startswith("postgresql") else "sqlite"
    emu = await start_emulator(seed=47, payroll_connections=50)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into)
        statements = (
            DROP_KEY[dialect] if change == "primary key" else ["DROP INDEX mirror_changes_at"]
        )
        for statement in statements:
            await query(into, statement)
        with pytest.raises(MirrorError) as caught:
            await mirror(client, "payroll-connections", into=into)
    message = str(caught.value)
    if change == "primary key":
        assert "payroll_connections's primary key is not (id) but none" in message
    else:
        assert "mirror_changes has no index on (collection, at)" in message
    assert await query(into, "SELECT count(*) FROM payroll_connections") == [(50,)]
    assert await query(into, "SELECT count(*) FROM mirror_runs") == [(1,)]


async def test_sqlite_tables_are_known_as_made_by_their_statements_or_checked_whole(
    start_emulator: StartEmulator, tmp_path: Path
) -> None:
    # A run checks SQLite's tables by one read of sqlite_master when they hold exactly the
    # statements this release writes; anything else is checked table by table, as before.
    path = tmp_path / "made.db"
    into = f"sqlite:///{path}"
    emu = await start_emulator(seed=49, payroll_connections=30)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into)
        with contextlib.closing(sqlite3.connect(path)) as db:
            stored = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"))
        assert {name: stored.get(name) for name in made_in_sqlite()} == made_in_sqlite()
        # A column of the user's own (which the whole check allows): not as made, still used.
        await query(into, "ALTER TABLE payroll_connections ADD COLUMN note TEXT")
        emu.churn("payroll-connections", updated=2)
        again = await mirror(client, "payroll-connections", into=into)
        # No version row (deleted by hand): the tables are checked whole and it is written.
        await query(into, "DELETE FROM mirror_schema")
        third = await mirror(client, "payroll-connections", into=into)
    assert (again.updated, again.unchanged, again.complete) == (2, 28, True)
    assert (third.inserted, third.updated, third.unchanged) == (0, 0, 30)
    assert await query(into, "SELECT version FROM mirror_schema") == [(2,)]
    assert await query(into, "SELECT count(*) FROM payroll_connections WHERE note IS NULL") == [
        (30,)
    ]


async def test_postgresql_commits_group_pages_and_tell_each_change_once_committed(
    start_emulator: StartEmulator, postgres_url: str
) -> None:
    emu = await start_emulator(seed=48, payroll_connections=15_000)
    told: list[Change] = []
    invisible: list[uuid.UUID] = []

    async def on_change(change: Change) -> None:
        if len(told) % 2500 == 0:  # committed before it is told: another session sees it
            rows = await query(
                postgres_url,
                "SELECT count(*) FROM mirror_changes WHERE item_id = :i",
                i=change.item_id,
            )
            if rows != [(1,)]:
                invisible.append(change.item_id)
        told.append(change)

    started = time.monotonic()
    async with PayrollClient(emu.base_url, emu.token) as client:
        result = await mirror(client, "payroll-connections", into=postgres_url, on_change=on_change)
    seconds = time.monotonic() - started
    assert (result.inserted, len(told), invisible) == (15_000, 15_000, [])
    # Rows written by one transaction share its xmin: 5,000 items a commit, or one a
    # second (pages of 100 items committed one by one would make 150).
    commits = await query(
        postgres_url, "SELECT count(DISTINCT xmin::text) FROM payroll_connections"
    )
    assert commits[0][0] <= 15_000 // 5_000 + int(seconds) + 1
    assert await query(postgres_url, "SHOW synchronous_commit") == [("on",)]


async def test_sqlite_without_the_drivers_thread_job_writes_the_same(
    start_emulator: StartEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writes go to a thread of ours as one job each, on the sqlite3 connection that
    # aiosqlite opened with our factory; a connection made otherwise gets the statements
    # one by one through aiosqlite, with the same result.
    from payroll_async.mirror import _page_sql

    emu = await start_emulator(seed=52, payroll_connections=1_234)
    kept: dict[str, list[tuple[Any, ...]]] = {}
    for way in ("one job", "one by one"):
        if way == "one by one":
            monkeypatch.setattr(_page_sql, "sqlite3_connection", lambda raw: None)
        path = tmp_path / f"{way}.db"
        async with PayrollClient(emu.base_url, emu.token) as client:
            result = await mirror(client, "payroll-connections", into=f"sqlite:///{path}")
        assert result.inserted == 1_234
        with contextlib.closing(sqlite3.connect(path)) as db:
            kept[way] = db.execute(
                "SELECT p.id, p.status, p.mirror_item, p.mirror_digest, c.change, c.after "
                "FROM payroll_connections p JOIN mirror_changes c ON c.item_id = p.id "
                "ORDER BY p.id"
            ).fetchall()
    assert len(kept["one job"]) == 1_234
    assert kept["one job"] == kept["one by one"]


async def test_a_mirror_run_has_a_large_page_cache_and_the_inbox_sqlites_default(
    tmp_path: Path,
) -> None:
    # 32 MiB for a run's connection (its id index stays cached between commits); an
    # inbox keeps SQLite's default on each connection of its pool.
    from payroll_async._sql import MIRROR_PRAGMAS, open_database
    from payroll_async.mirror._errors import MIRROR_ERRORS

    found = {}
    for name, pragmas in (("run", MIRROR_PRAGMAS), ("inbox", None)):
        url = f"sqlite:///{tmp_path / name}.db"
        db = (
            open_database(url, MIRROR_ERRORS)
            if pragmas is None
            else open_database(url, MIRROR_ERRORS, pragmas=pragmas)
        )
        try:
            async with db.connect() as conn:
                found[name] = (await conn.exec_driver_sql("PRAGMA cache_size")).scalar()
                mode = (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar()
                assert mode == "wal"
        finally:
            await db.engine.dispose()
    assert found == {"run": -32768, "inbox": -2000}


async def test_a_database_the_mirror_makes_has_pages_of_8_kib_and_one_made_before_keeps_its_own(
    start_emulator: StartEmulator, tmp_path: Path
) -> None:
    emulator = await start_emulator(seed=1, payroll_connections=30)
    made_before = tmp_path / "before.db"
    with contextlib.closing(sqlite3.connect(made_before)) as conn:
        conn.execute("CREATE TABLE mine (x)")
        conn.commit()
    sizes = {}
    for path in (tmp_path / "new.db", made_before):
        async with PayrollClient(emulator.base_url, emulator.token) as client:
            result = await mirror(client, "payroll-connections", into=f"sqlite:///{path}")
        assert result.inserted == 30
        with contextlib.closing(sqlite3.connect(path)) as conn:
            sizes[path.name] = conn.execute("PRAGMA page_size").fetchone()[0]
            assert conn.execute("SELECT count(*) FROM payroll_connections").fetchone() == (30,)
    assert sizes == {"new.db": 8192, "before.db": 4096}


async def test_the_live_digests_are_read_with_sqlites_default_cache_and_the_runs_kept(
    start_emulator: StartEmulator, tmp_path: Path
) -> None:
    # The read passes every page of the table once: with the run's 32 MiB each page would
    # take new memory. The run's cache is back for its writes, even when the read fails.
    from payroll_async._sql import MIRROR_PRAGMAS, open_database
    from payroll_async.mirror._errors import MIRROR_ERRORS
    from payroll_async.mirror._page_sql import Statements
    from payroll_async.mirror._schema import TABLES

    emu = await start_emulator(seed=53, payroll_connections=321)
    url = f"sqlite:///{tmp_path / 'm.db'}"
    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=url)
    with contextlib.closing(sqlite3.connect(tmp_path / "m.db")) as plain:
        stored = sorted(
            d for (d,) in plain.execute("SELECT mirror_digest FROM payroll_connections")
        )
    table = TABLES["payroll-connections"]
    db = open_database(url, MIRROR_ERRORS, pragmas=MIRROR_PRAGMAS)
    try:
        async with db.connect() as conn:
            sql = Statements(table.table, table.key, conn.dialect)
            await sql.attach(conn)
            during: list[int] = []
            original = sql._driver.execute_fetchall
            assert await original("PRAGMA cache_size") == [(-32768,)]

            async def spy(statement: str, *args: Any) -> Any:
                if "group_concat" in statement:  # the read: the cache it runs with
                    during.extend(v for (v,) in await original("PRAGMA cache_size"))
                return await original(statement, *args)

            sql._driver.execute_fetchall = spy
            known, rows = await sql.live_digests(conn)
            assert rows == 321
            assert all(known.found(array("q", stored)))
            assert not any(
                known.found(
                    array("q", [d + 1 for d in stored if d < 2**62 and d + 1 not in stored])
                )
            )
            assert during == [-2000]
            assert await original("PRAGMA cache_size") == [(-32768,)]

            async def failing(statement: str, *args: Any) -> Any:
                if "group_concat" in statement:
                    raise sqlite3.OperationalError("disk I/O error")
                return await original(statement, *args)

            sql._driver.execute_fetchall = failing
            with pytest.raises(sqlite3.OperationalError):
                await sql.live_digests(conn)
            sql._driver.execute_fetchall = original
            assert await original("PRAGMA cache_size") == [(-32768,)]
    finally:
        await db.engine.dispose()


async def test_a_cancelled_write_runs_to_its_end_before_anything_else_on_the_connection(
    tmp_path: Path,
) -> None:
    # A write's statements run in a thread of ours: a caller cancelled meanwhile does not
    # stop them, and ``idle`` (before a rollback) returns only once they are done.
    import threading

    from payroll_async._sql import open_database, sqlite3_connection
    from payroll_async.mirror._errors import MIRROR_ERRORS
    from payroll_async.mirror._page_sql import Statements
    from payroll_async.mirror._schema import TABLES

    started, release = threading.Event(), threading.Event()

    def held() -> int:
        started.set()
        release.wait()
        return 1

    db = open_database(f"sqlite:///{tmp_path / 'held.db'}", MIRROR_ERRORS)
    try:
        async with db.connect() as conn:
            mirrored = TABLES["webhooks"]
            statements = Statements(mirrored.table, mirrored.key, conn.dialect)
            await statements.attach(conn)
            raw = sqlite3_connection(await conn.get_raw_connection())
            assert raw is not None
            raw.create_function("held", 0, held)
            write = asyncio.ensure_future(statements.run_all([("SELECT held()", ())]))
            await asyncio.to_thread(started.wait)
            write.cancel()
            with pytest.raises(asyncio.CancelledError):
                await write
            idle = asyncio.ensure_future(statements.idle())
            for _ in range(3):  # the loop's turns, not time: idle waits on its thread
                await asyncio.sleep(0)
            assert not idle.done()  # the statement still runs in its thread
            release.set()
            await idle
    finally:
        release.set()
        await db.engine.dispose()
