"""The mirror's tables: one per collection, ``mirror_runs``, ``mirror_changes``, the version.

A collection's columns are its model's fields (``models.py``, the one place a field is
written), each typed from the field's type (`column_type`). Typed columns: in PostgreSQL
``uuid``, ``timestamptz``, ``text[]``; in SQLite ids as the service writes them
(lower-case ``8-4-4-4-12`` text), timestamps as ISO text, lists as JSON. Timestamps come
back timezone-aware UTC. ``_migrate`` creates or migrates them.
"""

from __future__ import annotations

import datetime
import functools
import uuid
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

import attrs
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    inspect,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlalchemy.types import TypeEngine

from .._collections import COLLECTIONS as REGISTRY
from .._sql import ItemId, UTCDateTime, version_table

__all__ = [
    "CHANGES",
    "COLUMN_TYPES",
    "METADATA",
    "RUNS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "TABLES",
    "MirrorTable",
    "column_type",
    "differences",
    "made_in_sqlite",
    "sqlite_as_made",
]

SCHEMA_VERSION = 2
"""The version of the tables below; a later release migrates from the stored one.

1: the first release (in SQLite, ids as 32 hex digits). 2: ids in SQLite as the service
writes them (``8-4-4-4-12``); ``mirror_item`` and ``mirror_digest`` on each collection's
table, ``before`` and ``after`` on ``mirror_changes``; the model's columns other than the
id nullable (a value the database cannot hold).
"""


TEXT_LIST = JSON().with_variant(postgresql.ARRAY(Text), "postgresql")
ITEM_JSON = Text().with_variant(postgresql.JSON(), "postgresql")
"""An item's JSON, its text exactly as sent: ``json`` in PostgreSQL (which keeps the text,
and holds what ``jsonb`` cannot, a ``\\u0000``; cast it ``::jsonb`` to query it as such);
in SQLite text that SQLite's JSON functions read."""
METADATA = MetaData()
COLUMN_TYPES: dict[str, TypeEngine[Any]] = {
    "id": ItemId(),
    "timestamp": UTCDateTime(),
    "text": Text(),
    "boolean": Boolean(),
    "integer": BigInteger(),
    "list": TEXT_LIST,
}
"""A model field's column, by the name a field's ``metadata={"column": ...}`` gives it."""
_BY_TYPE: dict[Any, str] = {
    uuid.UUID: "id",
    datetime.datetime: "timestamp",
    str: "text",
    bool: "boolean",
    int: "integer",
}


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


BOOKKEEPING = tuple(column.name for column in _bookkeeping())
"""The columns every collection's table has after the model's."""


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


def column_type(model: type[Any], field: attrs.Attribute[Any]) -> TypeEngine[Any]:
    """The column of a model's field, from its type (``X | None`` as ``X``: every column
    but the key is nullable); a field's ``metadata={"column": ...}`` (a type of
    ``COLUMN_TYPES``) says it where the type does not."""
    hint = get_type_hints(model)[field.name]
    named = field.metadata.get("column")
    if named is None:
        kinds = [kind for kind in get_args(hint) if kind is not type(None)]
        if get_origin(hint) in (Union, UnionType) and len(kinds) == 1:
            hint = kinds[0]
        named = "list" if get_origin(hint) is tuple else _BY_TYPE.get(hint)
    if named not in COLUMN_TYPES:
        raise TypeError(
            f"{model.__name__}.{field.name}: no mirror column for {hint!r}; give the field "
            f"metadata={{'column': ...}}, one of {', '.join(COLUMN_TYPES)}"
        )
    return COLUMN_TYPES[named]


def _table(collection: str, name: str, scope: str | None = None) -> MirrorTable:
    """The table of ``collection``: the columns of its model's fields (the registry's), in
    the model's order, the id first, then the scope's column, then the bookkeeping."""
    model, key = REGISTRY[collection].model, REGISTRY[collection].key
    fields = sorted(attrs.fields(model), key=lambda f: f.name != key)  # (a stable sort)
    columns = [Column(f.name, column_type(model, f), nullable=f.name != key) for f in fields]
    columns[0].primary_key = True
    if scope is not None:  # a value a column cannot hold is NULL (mirror_item keeps it)
        columns.insert(1, Column(scope, ItemId, nullable=True))
    table = Table(name, METADATA, *columns, *_bookkeeping())
    if scope is not None:
        Index(f"{name}_{scope}", table.c[scope])
    return MirrorTable(table, key, tuple(c.name for c in columns), scope)


TABLES: dict[str, MirrorTable] = {
    "payroll-connections": _table("payroll-connections", "payroll_connections"),
    "employer-identifiers": _table("employer-identifiers", "employer_identifiers"),
    "webhooks": _table("webhooks", "webhook_subscriptions"),
    "update-groups": _table("update-groups", "update_groups", scope="employer_identifier_id"),
}
"""The table of each collection, by the command's name of the collection: its columns are
its model's fields (``models.py`` is the one place a field is written)."""

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

SCHEMA = version_table("mirror_schema", METADATA)
"""One row per schema version installed; the highest is the database's."""


@functools.cache
def made_in_sqlite() -> dict[str, str]:
    """The ``CREATE`` statement of each of this release's tables and indexes in SQLite, by
    name, as ``sqlite_master`` keeps it (the text that ``create_all`` sent)."""
    dialect = sqlite.dialect()
    made: dict[str, str] = {}
    for table in METADATA.sorted_tables:
        made[table.name] = str(CreateTable(table).compile(dialect=dialect)).strip()
        for index in table.indexes:
            made[str(index.name)] = str(CreateIndex(index).compile(dialect=dialect)).strip()
    return made


def sqlite_as_made(conn: Connection) -> bool:
    """SQLite: whether every table and index is as this release makes them (one read)."""
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
