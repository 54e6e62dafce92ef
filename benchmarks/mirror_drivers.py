"""How to write a page of rows, measured before choosing (ARCHITECTURE.md, "The mirror").

    python benchmarks/mirror_drivers.py              # 100,000 rows, pages of 1,000

Upserts 100,000 payroll-connection rows, 1,000 a transaction, into an empty table, with
each way the mirror could send them:

- SQLAlchemy Core: ``insert().on_conflict_do_update()`` executed with a list of dicts
  (its typed bind processing per value; executemany / insertmanyvalues);
- driver tuples: the same construct compiled once, rows sent as plain tuples in the
  stored form (SQLite: multi-row VALUES; PostgreSQL: ``INSERT ... SELECT FROM unnest``);
- asyncpg alone: ``COPY`` into a temporary table, then ``INSERT ... SELECT ... ON
  CONFLICT`` (PostgreSQL only; COPY cannot upsert by itself).

PostgreSQL is the ``pgserver`` wheel's server, started here.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _util import machine, table

from payroll_async.mirror._driver import Statements
from payroll_async.mirror._schema import METADATA, TABLES

MT = TABLES["payroll-connections"]
UTC = datetime.timezone.utc


def rows(count: int) -> list[tuple[Any, ...]]:
    now = datetime.datetime.now(UTC)
    return [
        (uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), now, "active", "loans") for _ in range(count)
    ]


async def run(url: str, how: str, data: list[tuple[Any, ...]], page: int) -> float:
    from sqlalchemy import text
    from sqlalchemy.dialects import postgresql, sqlite
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    async with engine.connect() as conn:
        await conn.run_sync(METADATA.drop_all)
        await conn.run_sync(METADATA.create_all)
        await conn.commit()
        pg = conn.dialect.name == "postgresql"
        make: Any = postgresql.insert if pg else sqlite.insert
        upsert = make(MT.table)
        upsert = upsert.on_conflict_do_update(
            index_elements=["id"], set_={"status": upsert.excluded.status}
        )
        sql = Statements(MT.table, "id", MT.fields, conn.dialect)
        now = datetime.datetime.now(UTC)
        if how == "copy":
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            await raw.execute(
                "CREATE TEMP TABLE incoming (LIKE payroll_connections INCLUDING DEFAULTS)"
            )
        t0 = time.perf_counter()
        for start in range(0, len(data), page):
            chunk = data[start : start + page]
            async with conn.begin():
                if how == "core":
                    fields = MT.fields
                    await conn.execute(
                        upsert,
                        [
                            {
                                **dict(zip(fields, r, strict=True)),
                                "mirror_first_seen_at": now,
                                "mirror_last_seen_at": now,
                                "mirror_deleted_at": None,
                            }
                            for r in chunk
                        ],
                    )
                elif how == "tuples":
                    stamp = sql.time(now)
                    await sql.insert(
                        conn, sql.upsert, [(*sql.row(r), stamp, stamp, None) for r in chunk]
                    )
                else:
                    await raw.copy_records_to_table(
                        "incoming", records=[(*r, now, now, None) for r in chunk]
                    )
                    await conn.exec_driver_sql(
                        "INSERT INTO payroll_connections SELECT * FROM incoming "
                        "ON CONFLICT (id) DO UPDATE SET status = excluded.status"
                    )
                    await conn.exec_driver_sql("TRUNCATE incoming")
        elapsed = time.perf_counter() - t0
        count = (await conn.execute(text("SELECT count(*) FROM payroll_connections"))).scalar()
        assert count == len(data), count
    await engine.dispose()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--page", type=int, default=1000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="mirror-drivers-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    server = pgserver.get_server(folder / "pg", cleanup_mode="stop")
    server.psql("CREATE DATABASE drivers;")
    pg = server.get_uri("drivers").replace("postgresql://", "postgresql+asyncpg://")
    lite = f"sqlite+aiosqlite:///{folder / 'drivers.db'}"
    data = rows(args.rows)
    print(f"Upsert {args.rows:,} rows, {args.page:,} a transaction; {machine()}")
    results = []
    for name, url, ways in (
        ("SQLite", lite, ("core", "tuples")),
        ("PostgreSQL", pg, ("core", "tuples", "copy")),
    ):
        for how in ways:
            seconds = asyncio.run(run(url, how, data, args.page))
            results.append([name, how, f"{seconds:.2f}", f"{seconds / args.rows * 1e6:.1f}"])
    print(table(["database", "way", "seconds", "µs/row"], results))
    server.cleanup()


if __name__ == "__main__":
    main()
