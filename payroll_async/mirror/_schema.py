"""The mirror's tables: one per collection, ``mirror_runs``, ``mirror_changes``, the version.

Typed columns on both databases: in PostgreSQL ``uuid``, ``timestamptz``, ``text[]``; in
SQLite the closest it has (ids as the service writes them, lower-case ``8-4-4-4-12`` text;
timestamps as ISO text, lists as JSON). Timestamps always come back timezone-aware UTC, so
that a row read back compares equal to the item it was written from.

``upgrade`` migrates the tables of an earlier version in the transaction that checks the
version, so that a run interrupted during the migration leaves the old schema as it was.
"""

from __future__ import annotations

import datetime
import functools
import logging
import uuid
from typing import Any

import attrs
from sqlalchemy import (
    CHAR,
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    TypeDecorator,
    Uuid,
    func,
    insert,
    inspect,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateColumn, CreateIndex, CreateTable
from sqlalchemy.types import TypeEngine

__all__ = [
    "CHANGES",
    "METADATA",
    "RUNS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "TABLES",
    "ItemId",
    "MirrorTable",
    "differences",
    "install",
    "made_in_sqlite",
    "sqlite_as_made",
]

logger = logging.getLogger("payroll_async")

SCHEMA_VERSION = 2
"""The version of the tables below; a later release migrates from the stored one.

1: the first release (in SQLite, ids as 32 hex digits). 2: ids in SQLite as the service
writes them (``8-4-4-4-12``); ``mirror_item`` and ``mirror_digest`` on each collection's
table, ``before`` and ``after`` on ``mirror_changes``; the model's columns other than the
id nullable (a value the database cannot hold).
"""


class ItemId(TypeDecorator[uuid.UUID]):
    """``uuid`` in PostgreSQL; in SQLite the lower-case ``8-4-4-4-12`` text of the id."""

    impl = Uuid
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(Uuid())
        return dialect.type_descriptor(CHAR(36))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None or dialect.name == "postgresql":
            return value
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))

    def process_result_value(self, value: Any, dialect: Dialect) -> uuid.UUID | None:
        if value is None or isinstance(value, uuid.UUID):
            return value
        return uuid.UUID(str(value))


class UTCDateTime(TypeDecorator[datetime.datetime]):
    """``timestamptz`` in PostgreSQL; in SQLite UTC text that reads back timezone-aware."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(
        self, value: datetime.datetime | None, dialect: Dialect
    ) -> datetime.datetime | None:
        if value is None:
            return None
        value = value.astimezone(datetime.timezone.utc)
        return value if dialect.name == "postgresql" else value.replace(tzinfo=None)

    def process_result_value(
        self, value: datetime.datetime | None, dialect: Dialect
    ) -> datetime.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=datetime.timezone.utc)
        return value.astimezone(datetime.timezone.utc)


TEXT_LIST = JSON().with_variant(postgresql.ARRAY(Text), "postgresql")
ITEM_JSON = Text().with_variant(postgresql.JSON(), "postgresql")
"""An item's JSON, its text exactly as sent: ``json`` in PostgreSQL (which keeps the text,
and holds what ``jsonb`` cannot, a ``\\u0000``; cast it ``::jsonb`` to query it as such);
in SQLite text that SQLite's JSON functions read."""
BOOKKEEPING = (
    "mirror_first_seen_at",
    "mirror_last_seen_at",
    "mirror_deleted_at",
    "mirror_item",
    "mirror_digest",
)

METADATA = MetaData()


def _bookkeeping() -> list[Column[Any]]:
    return [
        Column("mirror_first_seen_at", UTCDateTime, nullable=False),
        Column("mirror_last_seen_at", UTCDateTime, nullable=False),
        Column("mirror_deleted_at", UTCDateTime, nullable=True),
        # The item as the service last sent it, and a digest of its bytes (NULL in a row
        # of schema 1 until the item is next seen).
        Column("mirror_item", ITEM_JSON, nullable=True),
        Column("mirror_digest", BigInteger, nullable=True),
    ]


@attrs.frozen
class MirrorTable:
    """One collection's table: its name, primary key and the model's columns in order."""

    table: Table
    key: str
    """The primary key: the item's id."""
    fields: tuple[str, ...]
    """The model's columns (and ``employer_identifier_id`` for update groups), key first."""
    scope: str | None = None
    """The column that one listing of several covers (update groups: the employer)."""


def _table(name: str, key: str, *columns: Column[Any], scope: str | None = None) -> MirrorTable:
    for column in columns:
        # A value the database cannot hold (2**63, the year 10000 in UTC) is NULL in its
        # column; mirror_item keeps the item as sent.
        column.nullable = not column.primary_key
    table = Table(name, METADATA, *columns, *_bookkeeping())
    if scope is not None:
        Index(f"{name}_{scope}", table.c[scope])
    return MirrorTable(table, key, tuple(c.name for c in columns), scope)


TABLES: dict[str, MirrorTable] = {
    "payroll-connections": _table(
        "payroll_connections",
        "id",
        Column("id", ItemId, primary_key=True),
        Column("employer_identifier_id", ItemId, nullable=False),
        Column("payroll_platform_id", ItemId, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("status", Text, nullable=False),
        Column("product", Text, nullable=False),
    ),
    "employer-identifiers": _table(
        "employer_identifiers",
        "id",
        Column("id", ItemId, primary_key=True),
        Column("display_name", Text, nullable=False),
        Column("identifier", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
    ),
    "webhooks": _table(
        "webhook_subscriptions",
        "webhook_subscription_id",
        Column("webhook_subscription_id", ItemId, primary_key=True),
        Column("webhook_event_types", TEXT_LIST, nullable=False),
        Column("path", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("active", Boolean, nullable=False),
    ),
    "update-groups": _table(
        "update_groups",
        "update_group_id",
        Column("update_group_id", ItemId, primary_key=True),
        Column("employer_identifier_id", ItemId, nullable=False),
        Column("upload_date", UTCDateTime, nullable=False),
        Column("error_count", BigInteger, nullable=False),
        scope="employer_identifier_id",
    ),
}
"""The table of each collection, by the command's name of the collection."""

RUNS = Table(
    "mirror_runs",
    METADATA,
    Column("run_id", ItemId, primary_key=True),
    Column("collection", Text, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime, nullable=True),
    Column("complete", Boolean, nullable=False),
    Column("items", BigInteger, nullable=False),
    Column("inserted", BigInteger, nullable=False),
    Column("updated", BigInteger, nullable=False),
    Column("deleted", BigInteger, nullable=False),
)

CHANGES = Table(
    "mirror_changes",
    METADATA,
    # SQLite makes only an INTEGER PRIMARY KEY autoincrement.
    Column(
        "change_id",
        BigInteger().with_variant(Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    Column("run_id", ItemId, nullable=False),
    Column("collection", Text, nullable=False),
    Column("item_id", ItemId, nullable=False),
    Column("change", Text, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Column("before", ITEM_JSON, nullable=True),
    Column("after", ITEM_JSON, nullable=True),
    Index("mirror_changes_at", "collection", "at"),
)

SCHEMA = Table(
    "mirror_schema",
    METADATA,
    Column("version", Integer, primary_key=True),
    Column("installed_at", UTCDateTime, nullable=False),
)
"""One row per schema version installed; the highest is the database's."""


def install(conn: Connection) -> int | None:
    """Create, or migrate to this release's, the mirror's tables; the version found.

    Runs in the caller's transaction: a migration interrupted at any point leaves the
    tables of the version found. A version newer than this release's is left untouched
    (the caller refuses it).
    """
    stored: int | None = None
    if inspect(conn).has_table(SCHEMA.name):
        stored = conn.execute(select(func.max(SCHEMA.c.version))).scalar()
    if stored is not None and stored > SCHEMA_VERSION:
        return stored
    if stored is not None and stored < SCHEMA_VERSION:
        _upgrade(conn, stored)
    # The tables missing, by one read of the names (not a look-up a table), each with its
    # indexes; a table that exists is left as it is (``differences`` checks it).
    existing = set(inspect(conn).get_table_names())
    missing = [table for table in METADATA.sorted_tables if table.name not in existing]
    METADATA.create_all(conn, tables=missing, checkfirst=False)
    if stored is None or stored < SCHEMA_VERSION:
        conn.execute(
            insert(SCHEMA).values(
                version=SCHEMA_VERSION,
                installed_at=datetime.datetime.now(datetime.timezone.utc),
            )
        )
    return stored


@functools.cache
def made_in_sqlite() -> dict[str, str]:
    """The ``CREATE`` statement of each of this release's tables and indexes in SQLite, by
    name, as ``sqlite_master`` keeps it (SQLite stores the text that ``create_all`` sent).
    A database whose statements are these, at this release's version, is as the mirror
    made it: nothing to install, migrate or check table by table."""
    dialect = sqlite.dialect()
    made: dict[str, str] = {}
    for table in METADATA.sorted_tables:
        made[table.name] = str(CreateTable(table).compile(dialect=dialect)).strip()
        for index in table.indexes:
            made[str(index.name)] = str(CreateIndex(index).compile(dialect=dialect)).strip()
    return made


def sqlite_as_made(conn: Connection) -> bool:
    """SQLite: whether every table and index is exactly as this release makes them (their
    ``CREATE`` statements in ``sqlite_master``, one read)."""
    found = conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL")
    stored: dict[str, str] = dict(iter(found))  # rows as pairs (a Result is no mapping)
    return all(stored.get(name) == sql for name, sql in made_in_sqlite().items())


def differences(conn: Connection) -> list[str]:
    """What the tables in the database lack of this release's: columns, primary keys and
    indexes (changed by hand, say). Empty when they are as the mirror made them."""
    if conn.dialect.name == "sqlite" and sqlite_as_made(conn):
        return []  # made by this release (just now, or by an earlier run): no reflection
    inspector = inspect(conn)
    found: list[str] = []
    for table in METADATA.sorted_tables:
        name = table.name
        columns = {c["name"] for c in inspector.get_columns(name)}
        missing = [c.name for c in table.c if c.name not in columns]
        if missing:
            found.append(f"{name} has no column {', '.join(missing)}")
        key = [c.name for c in table.primary_key.columns]
        has = inspector.get_pk_constraint(name).get("constrained_columns") or []
        if list(has) != key:
            what = f"({', '.join(has)})" if has else "none"
            found.append(f"{name}'s primary key is not ({', '.join(key)}) but {what}")
        indexes = {tuple(i["column_names"]) for i in inspector.get_indexes(name)}
        for index in table.indexes:
            wanted = tuple(c.name for c in index.columns)
            if wanted not in indexes:
                found.append(f"{name} has no index on ({', '.join(wanted)})")
    return found


def _upgrade(conn: Connection, stored: int) -> None:
    """Every existing table of version ``stored`` in this release's form, rows kept."""
    inspector = inspect(conn)
    existing = set(inspector.get_table_names())
    for table in METADATA.sorted_tables:
        if table is SCHEMA or table.name not in existing:
            continue
        found = {c["name"]: c for c in inspector.get_columns(table.name)}
        columns = {name: c["type"] for name, c in found.items()}
        if conn.dialect.name == "sqlite":
            _rebuild(conn, table, columns, [i["name"] for i in inspector.get_indexes(table.name)])
            continue
        # PostgreSQL: the ids are uuid already; columns are added, or made nullable.
        name = _quote(conn, table.name)
        for column in table.c:
            if column.name not in found:
                added = CreateColumn(column).compile(dialect=conn.dialect)
                conn.exec_driver_sql(f"ALTER TABLE {name} ADD COLUMN {added}")
            elif column.nullable and not found[column.name]["nullable"]:
                conn.exec_driver_sql(
                    f"ALTER TABLE {name} ALTER COLUMN {_quote(conn, column.name)} DROP NOT NULL"
                )
    logger.info(
        "mirror: the tables were migrated from schema version %d to %d", stored, SCHEMA_VERSION
    )


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
    # The user's own indexes and triggers on the table, as they were made (their text
    # names the table, which the new one is): made again on the new table below.
    theirs = conn.exec_driver_sql(
        "SELECT name, sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', "
        "'trigger') AND sql IS NOT NULL ORDER BY type, name",
        (table.name,),
    ).all()
    # legacy_alter_table: the rename leaves views and triggers naming the table as they
    # are (they name the new table once it is made), where SQLite's modern rename would
    # make them name the old one, which is dropped.
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
    kept = [c.name for c in table.c if c.name in columns]
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
