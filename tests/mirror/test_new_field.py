"""A field the models gain is written once, in ``models.py``: the converter structures it,
the msgspec path decodes it, the mirror gives it a column in both databases, and a
database made before it gains the column, filled from each row's ``mirror_item``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from sqlalchemy import JSON, BigInteger, Text

from payroll_async import PayrollClient
from payroll_async.emulator import Emulator
from payroll_async.mirror import mirror
from payroll_async.mirror._schema import column_type
from tests._postgres import PostgresServer, query
from tests.mirror.test_storage import Rewrite

ROOT = Path(__file__).parents[2]


def cost_centre(item_id: str) -> str:
    return f"cc-{item_id[:8]}"


def with_cost_centres(path: str, items: list[dict[str, Any]]) -> None:
    """The service sends the new field (before the SDK knows it, and after)."""
    if path.endswith("/payroll-connections"):
        for item in items:
            item["costCentre"] = cost_centre(item["id"])


async def columns(into: str) -> set[str]:
    if into.startswith("sqlite"):
        found = await query(into, "SELECT name FROM pragma_table_info('payroll_connections')")
    else:
        found = await query(
            into,
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'payroll_connections'",
        )
    return {name for (name,) in found}


async def with_the_new_field(emu: Emulator, *urls: str) -> dict[str, Any]:
    """What the process whose model has the new field saw (``_new_field.py``)."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "tests.mirror._new_field", emu.base_url, emu.token, *urls),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    seen: dict[str, Any] = json.loads(out)
    return seen


@pytest.mark.slow  # a process of its own, whose model has the new field
async def test_a_new_field_is_structured_decoded_mirrored_and_migrated(
    into: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if into.startswith("sqlite"):
        fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    else:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        fresh = server.url(await server.create())
    emu = Emulator(seed=52, payroll_connections=30)
    emu.app.middlewares.append(Rewrite(with_cost_centres))
    async with emu, PayrollClient(emu.base_url, emu.token) as client:
        # This release's model, without the field: the table has no column of it.
        await mirror(client, "payroll-connections", into=into)
        assert "cost_centre" not in await columns(into)
        # A column of the user's own, kept by the migration.
        await query(into, "ALTER TABLE payroll_connections ADD COLUMN my_note TEXT")
        await query(into, "UPDATE payroll_connections SET my_note = 'mine'")
        (gone,) = emu.churn("payroll-connections", deleted=1).deleted
        live = [str(c.id) for c in await client.payroll_connections.list().collect()]
        seen = await with_the_new_field(emu, into, fresh)
    expected = [cost_centre(i) for i in live]
    assert seen["structured"] == seen["decoded"] == seen["listed"] == expected
    # Opened twice at once: the column added once, then found there.
    assert [len(lines) for lines in seen["migrated"]] == [1, 0]
    assert seen["results"] == [[0, 1], [29, 0]]
    for url in (into, fresh):
        assert "cost_centre" in await columns(url)
        rows = await query(
            url, "SELECT id, cost_centre, mirror_deleted_at IS NOT NULL FROM payroll_connections"
        )
        assert {str(i): c for i, c, _ in rows} == {str(i): cost_centre(str(i)) for i, _, _ in rows}
        deleted = {str(i) for i, _, gone_now in rows if gone_now}
        assert deleted == ({gone} if url == into else set())
    assert await query(into, "SELECT DISTINCT my_note FROM payroll_connections") == [("mine",)]


@attrs.frozen
class Variant:
    count: int | None
    labels: tuple[str, ...]
    extra: Mapping[str, Any] = attrs.field(metadata={"column": "text"})
    unmapped: Mapping[str, Any] = attrs.field(factory=dict)


def test_a_fields_column_comes_from_its_type_or_its_metadata() -> None:
    count, labels, extra, unmapped = attrs.fields(Variant)
    assert isinstance(column_type(Variant, count), BigInteger)  # X | None as X
    assert isinstance(column_type(Variant, labels), JSON)  # a list (text[] in PostgreSQL)
    assert isinstance(column_type(Variant, extra), Text)  # as its metadata says
    with pytest.raises(TypeError, match=r"Variant\.unmapped: no mirror column"):
        column_type(Variant, unmapped)


async def test_a_fields_values_of_any_form_fill_its_new_column_or_leave_it_null(
    into: str,
) -> None:
    # The rows' items were decoded by a model without the field: its value may be of any
    # form. Filling the column never fails: a value the column cannot hold is NULL.
    from sqlalchemy import Boolean, Column, MetaData, Table

    from payroll_async._sql import ItemId
    from payroll_async.mirror._page_sql import filled
    from payroll_async.mirror._schema import ITEM_JSON, MirrorTable

    table = Table(
        "things",
        MetaData(),
        Column("id", ItemId, primary_key=True),
        Column("other_id", ItemId),
        Column("flag", Boolean),
        Column("count", BigInteger),
        Column("mirror_item", ITEM_JSON),
    )
    mirrored = MirrorTable(table, "id", ("id", "other_id", "flag", "count"))
    sent = {
        "00000000-0000-0000-0000-000000000001": {
            "otherId": "not an id",
            "flag": "yes",
            "count": 1.5,
        },
        "00000000-0000-0000-0000-000000000002": {"otherId": None, "count": 2**70},
        "00000000-0000-0000-0000-000000000003": {
            "otherId": "0000000A-0000-0000-0000-00000000000B",
            "flag": True,
            "count": 7,
        },
    }
    dialect = "sqlite" if into.startswith("sqlite") else "postgresql"
    from sqlalchemy.ext.asyncio import create_async_engine

    url = into.replace("sqlite://", "sqlite+aiosqlite://", 1).replace(
        "postgresql://", "postgresql+asyncpg://", 1
    )
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(table.metadata.create_all)
            for key, fields in sent.items():
                item = {"id": key, **fields}  # (SQLAlchemy's JSON type in PostgreSQL dumps it)
                stored = json.dumps(item) if dialect == "sqlite" else item
                await conn.execute(table.insert().values(id=key, mirror_item=stored))
            await conn.exec_driver_sql(filled(mirrored, ["other_id", "flag", "count"], dialect))
            rows = (await conn.execute(table.select().order_by(table.c.id))).all()
    finally:
        await engine.dispose()
    found = [(str(r.other_id) if r.other_id else None, r.flag, r[3]) for r in rows]
    assert found == [
        (None, None, None),
        (None, None, None),
        ("0000000a-0000-0000-0000-00000000000b", True, 7),
    ]
