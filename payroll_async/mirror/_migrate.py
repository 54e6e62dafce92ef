"""The mirror's tables created, or migrated from an earlier version's in the transaction
that checks the version (an interrupted migration leaves the old schema as it was). In
SQLite a changed table is made again, its rows copied; a user's view on it keeps working
and a user's own index or trigger on it is made again on the new table. A model's field
newer than its table gets its column there, filled from each row's ``mirror_item`` (under
the schema's lock, so that processes starting at once add it once).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import Column, Table, Text, func, insert, inspect, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.schema import CreateColumn

from .._sql import SQLITE_PRAGMAS, Database, ItemId, open_database
from ._errors import MIRROR_ERRORS, MirrorError
from ._page_sql import filled
from ._schema import (
    METADATA,
    SCHEMA,
    SCHEMA_VERSION,
    TABLES,
    differences,
    made_in_sqlite,
    sqlite_as_made,
)

__all__ = ["connected", "ensure_schema", "install"]

logger = logging.getLogger("payroll_async")

_MIRRORED = {mirrored.table.name: mirrored for mirrored in TABLES.values()}
_SCHEMA_LOCK = 0x7061_7972_6F6C_6C00  # "payroll\0": the PostgreSQL lock of schema creation


@contextlib.asynccontextmanager
async def connected(
    url: str, pragmas: Sequence[str] = SQLITE_PRAGMAS
) -> AsyncIterator[tuple[Database, AsyncConnection]]:
    """The mirror's database ``url`` and a connection to it (the engine disposed at the
    end); a `MirrorError` is not chained to the driver's exception, which may hold what its
    message hides."""
    try:
        db = open_database(url, MIRROR_ERRORS, pragmas=pragmas)
        try:
            async with db.connect() as conn:
                yield db, conn
        finally:
            with db.errors("closing"):
                await db.engine.dispose()
    except MirrorError as exc:
        exc.__context__ = None
        raise


async def ensure_schema(db: Database, connection: AsyncConnection) -> None:
    """Create the mirror's tables on first use, migrate those of an earlier version (one
    transaction); refuse a schema newer than this release's."""
    if db.dialect == "sqlite":
        # Every table and index as this release makes them, at its version: one read,
        # where the full check reflects every table.
        with db.errors("reading the mirror's tables"):
            version = None
            if await connection.run_sync(sqlite_as_made):
                found = await connection.exec_driver_sql("SELECT max(version) FROM mirror_schema")
                version = found.scalar()
            await connection.commit()
        if version == SCHEMA_VERSION:
            return
    with db.errors("creating the mirror's tables"):
        async with db.schema_transaction(connection, _SCHEMA_LOCK):
            stored = await connection.run_sync(install)
            if stored is not None and stored > SCHEMA_VERSION:
                raise MirrorError(
                    f"the mirror tables in {db.shown} are schema version {stored}; this "
                    f"release of payroll-async knows versions up to {SCHEMA_VERSION}: "
                    "upgrade it"
                )
            differ = await connection.run_sync(differences)
    if differ:
        # Writing into them would go wrong (without the key, a row per item per run).
        raise MirrorError(
            f"the mirror tables in {db.shown} are not as the mirror made them: "
            f"{'; '.join(differ)}. Restore them, or mirror into a new database"
        )


def install(conn: Connection) -> int | None:
    """Create, or migrate to this release's, the mirror's tables in the caller's
    transaction; the version found (a newer one is left untouched: the caller refuses it)."""
    stored: int | None = None
    if inspect(conn).has_table(SCHEMA.name):
        stored = conn.execute(select(func.max(SCHEMA.c.version))).scalar()
    if stored is not None and stored > SCHEMA_VERSION:
        return stored
    if stored is not None:
        _upgrade(conn, stored)
    # The tables missing, by one read of the names (``differences`` checks the others).
    existing = set(inspect(conn).get_table_names())
    missing = [table for table in METADATA.sorted_tables if table.name not in existing]
    METADATA.create_all(conn, tables=missing, checkfirst=False)
    if stored is None or stored < SCHEMA_VERSION:
        installed = datetime.datetime.now(datetime.timezone.utc)
        conn.execute(insert(SCHEMA).values(version=SCHEMA_VERSION, installed_at=installed))
    return stored


def _upgrade(conn: Connection, stored: int) -> None:
    """Every existing table of version ``stored`` in this release's form, rows kept; a
    column of a model's field that the table lacks (the field is newer than the table)
    added and filled from each row's ``mirror_item``."""
    inspector = inspect(conn)
    existing = set(inspector.get_table_names())
    tables = [t for t in METADATA.sorted_tables if t is not SCHEMA and t.name in existing]
    reflected = inspector.get_multi_columns(filter_names=[t.name for t in tables])
    by_name = {name: columns for (_, name), columns in reflected.items()}
    added: list[str] = []
    for table in tables:
        found = {c["name"]: c for c in by_name[table.name]}
        if stored == SCHEMA_VERSION and set(table.c.keys()) <= set(found):
            continue  # as this release makes it
        if conn.dialect.name == "sqlite":
            columns = {name: c["type"] for name, c in found.items()}
            _rebuild(conn, table, columns, [i["name"] for i in inspector.get_indexes(table.name)])
        else:  # PostgreSQL: the ids are uuid already; columns are added, or made nullable.
            name = _quote(conn, table.name)
            for column in table.c:
                if column.name not in found:
                    made = CreateColumn(column).compile(dialect=conn.dialect)
                    conn.exec_driver_sql(f"ALTER TABLE {name} ADD COLUMN {made}")
                elif column.nullable and not found[column.name]["nullable"]:
                    conn.exec_driver_sql(
                        f"ALTER TABLE {name} ALTER COLUMN {_quote(conn, column.name)} DROP NOT NULL"
                    )
        mirrored = _MIRRORED.get(table.name)
        if mirrored is not None:
            fields = [f for f in mirrored.fields[1:] if f != mirrored.scope and f not in found]
            if fields:
                conn.exec_driver_sql(filled(mirrored, fields, conn.dialect.name))
                added += [f"{table.name}.{f}" for f in fields]
    if stored < SCHEMA_VERSION:
        logger.info(
            "mirror: the tables were migrated from schema version %d to %d",
            stored,
            SCHEMA_VERSION,
        )
    if added:
        logger.info("mirror: columns added, filled from mirror_item: %s", ", ".join(added))


def _quote(conn: Connection, name: str) -> str:
    return conn.dialect.identifier_preparer.quote(name)


def _rebuild(
    conn: Connection, table: Table, columns: dict[str, Any], indexes: list[str | None]
) -> None:
    """SQLite: ``table`` made again in this release's form, its rows copied and converted."""
    hexed = {
        name
        for name, kind in columns.items()
        if isinstance(table.c.get(name, Column(Text)).type, ItemId)
        and getattr(kind, "length", None) == 32
    }
    if not hexed and set(table.c.keys()) <= set(columns):
        return  # in this release's form already
    moved = f"{table.name}__migrating"
    # The user's own indexes and triggers on the table, made again on the new one below.
    theirs = conn.exec_driver_sql(
        "SELECT name, sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', "
        "'trigger') AND sql IS NOT NULL ORDER BY type, name",
        (table.name,),
    ).all()
    # legacy_alter_table: the rename leaves views naming the table (the new one, once
    # made), where SQLite's modern rename would make them name the old one.
    conn.exec_driver_sql("PRAGMA legacy_alter_table=ON")
    try:
        conn.exec_driver_sql(
            f"ALTER TABLE {_quote(conn, table.name)} RENAME TO {_quote(conn, moved)}"
        )
    finally:
        conn.exec_driver_sql("PRAGMA legacy_alter_table=OFF")
    for index in indexes:  # they moved with the table; their names are the new table's
        if index is not None:
            conn.exec_driver_sql(f"DROP INDEX {_quote(conn, index)}")
    table.create(conn)
    # A user's own columns on the table, added again (with the type they declared).
    declared = conn.exec_driver_sql("SELECT name, type FROM pragma_table_info(?)", (moved,))
    theirs_columns = [(n, kind) for n, kind in declared if n not in table.c]
    for column, kind in theirs_columns:
        conn.exec_driver_sql(
            f"ALTER TABLE {_quote(conn, table.name)} ADD COLUMN {_quote(conn, column)} {kind}"
        )
    kept = [c.name for c in table.c if c.name in columns] + [n for n, _ in theirs_columns]
    values = [_dashed(_quote(conn, n)) if n in hexed else _quote(conn, n) for n in kept]
    conn.exec_driver_sql(
        f"INSERT INTO {_quote(conn, table.name)} ({', '.join(_quote(conn, n) for n in kept)}) "
        f"SELECT {', '.join(values)} FROM {_quote(conn, moved)}"
    )
    conn.exec_driver_sql(f"DROP TABLE {_quote(conn, moved)}")  # and its triggers
    made = made_in_sqlite()
    for name, sql in theirs:
        if name in made:
            continue
        try:
            conn.exec_driver_sql(sql)
        except DBAPIError as exc:  # a column it named is gone: the run goes on without it
            logger.warning(
                "mirror: %s on %s could not be made again after the migration (%s); make "
                "it again by hand",
                name,
                table.name,
                exc.orig,
            )


def _dashed(column: str) -> str:
    """SQL: 32 hex digits as lower-case ``8-4-4-4-12`` (anything else only lower-cased)."""
    parts = " || '-' || ".join(
        f"substr({column}, {start}, {length})"
        for start, length in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))
    )
    return f"lower(CASE WHEN length({column}) = 32 THEN {parts} ELSE {column} END)"
