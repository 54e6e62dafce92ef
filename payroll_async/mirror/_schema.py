"""The mirror's tables: one per collection, ``mirror_runs``, ``mirror_changes``, the version.

Typed columns on both databases: in PostgreSQL ``uuid``, ``timestamptz``, ``text[]``; in
SQLite the closest it has (SQLAlchemy's ``Uuid`` as 32 hex characters, timestamps as ISO
text, lists as JSON). Timestamps always come back timezone-aware UTC, so that a row read
back compares equal to the item it was written from.
"""

from __future__ import annotations

import datetime
from typing import Any

import attrs
from sqlalchemy import (
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
)
from sqlalchemy.dialects import postgresql

__all__ = [
    "CHANGES",
    "METADATA",
    "RUNS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "TABLES",
    "MirrorTable",
]

SCHEMA_VERSION = 1
"""The version of the tables below; a later release migrates from the stored one."""


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
BOOKKEEPING = ("mirror_first_seen_at", "mirror_last_seen_at", "mirror_deleted_at")

METADATA = MetaData()


def _bookkeeping() -> list[Column[Any]]:
    return [
        Column("mirror_first_seen_at", UTCDateTime, nullable=False),
        Column("mirror_last_seen_at", UTCDateTime, nullable=False),
        Column("mirror_deleted_at", UTCDateTime, nullable=True),
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
    table = Table(name, METADATA, *columns, *_bookkeeping())
    if scope is not None:
        Index(f"{name}_{scope}", table.c[scope])
    return MirrorTable(table, key, tuple(c.name for c in columns), scope)


TABLES: dict[str, MirrorTable] = {
    "payroll-connections": _table(
        "payroll_connections",
        "id",
        Column("id", Uuid, primary_key=True),
        Column("employer_identifier_id", Uuid, nullable=False),
        Column("payroll_platform_id", Uuid, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("status", Text, nullable=False),
        Column("product", Text, nullable=False),
    ),
    "employer-identifiers": _table(
        "employer_identifiers",
        "id",
        Column("id", Uuid, primary_key=True),
        Column("display_name", Text, nullable=False),
        Column("identifier", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
    ),
    "webhooks": _table(
        "webhook_subscriptions",
        "webhook_subscription_id",
        Column("webhook_subscription_id", Uuid, primary_key=True),
        Column("webhook_event_types", TEXT_LIST, nullable=False),
        Column("path", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("active", Boolean, nullable=False),
    ),
    "update-groups": _table(
        "update_groups",
        "update_group_id",
        Column("update_group_id", Uuid, primary_key=True),
        Column("employer_identifier_id", Uuid, nullable=False),
        Column("upload_date", UTCDateTime, nullable=False),
        Column("error_count", BigInteger, nullable=False),
        scope="employer_identifier_id",
    ),
}
"""The table of each collection, by the command's name of the collection."""

RUNS = Table(
    "mirror_runs",
    METADATA,
    Column("run_id", Uuid, primary_key=True),
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
    Column("run_id", Uuid, nullable=False),
    Column("collection", Text, nullable=False),
    Column("item_id", Uuid, nullable=False),
    Column("change", Text, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Index("mirror_changes_at", "collection", "at"),
)

SCHEMA = Table(
    "mirror_schema",
    METADATA,
    Column("version", Integer, primary_key=True),
    Column("installed_at", UTCDateTime, nullable=False),
)
"""One row per schema version installed; the highest is the database's."""
