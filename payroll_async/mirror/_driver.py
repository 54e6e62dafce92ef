"""The hot path at the driver's level: one page's statements, compiled once per dialect.

SQLAlchemy builds and compiles every statement (one upsert construct,
``insert().on_conflict_do_update``, for both dialects); the rows then go to the driver as
plain tuples in the form the database stores, so that a page costs no per-value type
processing. The forms are exactly what the schema's types write (``8-4-4-4-12`` text for
an id in SQLite, ``YYYY-MM-DD HH:MM:SS.ffffff`` UTC text for a timestamp, JSON text for
a list), so rows read back through SQLAlchemy are the same values. Comparing a stored row
with an item is then one tuple comparison.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Boolean, Column, Dialect, Table, bindparam
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from .._json import loads
from ._schema import CHANGES, ItemId, UTCDateTime

__all__ = ["Statements"]

Convert = Callable[[Any], Any]
_UTC = datetime.timezone.utc
_ROWS_PER_STATEMENT = 250  # SQLite: rows in one multi-row INSERT


def _sqlite_time(value: datetime.datetime | None) -> str | None:
    """As SQLAlchemy's DateTime writes it in SQLite: ``YYYY-MM-DD HH:MM:SS.ffffff``, UTC."""
    if value is None:
        return None
    if value.tzinfo is not _UTC:
        value = value.astimezone(_UTC)
    return value.replace(tzinfo=None).isoformat(" ", "microseconds")


def _same(value: Any) -> Any:
    return value


def _converter(column: Column[Any], dialect: str) -> Convert:
    kind = column.type
    if dialect == "postgresql":
        return list if column.name == "webhook_event_types" else _same
    if isinstance(kind, ItemId):
        return str  # never None: ids are required
    if isinstance(kind, UTCDateTime):
        return _sqlite_time
    if isinstance(kind, Boolean):
        return lambda value: None if value is None else int(value)
    if column.name == "webhook_event_types":
        return json.dumps
    return _same


def _row_converter(
    columns: Sequence[Column[Any]], dialect: str
) -> Callable[[Any], tuple[Any, ...]]:
    converters = [_converter(c, dialect) for c in columns]
    if all(c is _same for c in converters):
        return tuple
    # One expression per table and dialect, unrolled: this runs for every item.
    names = {f"c{i}": c for i, c in enumerate(converters) if c is not _same}
    parts = [f"c{i}(r[{i}])" if f"c{i}" in names else f"r[{i}]" for i in range(len(columns))]
    function: Callable[[Any], tuple[Any, ...]] = eval(  # built from the schema alone
        f"lambda r: ({', '.join(parts)},)", names
    )
    return function


def _compiled(statement: Any, dialect: Dialect) -> tuple[str, list[str]]:
    compiled = statement.compile(dialect=dialect)
    return compiled.string, list(compiled.positiontup or [])


class Statements:
    """The page statements of one table in one dialect, and the driver form of its rows."""

    def __init__(self, table: Table, key: str, fields: Sequence[str], dialect: Dialect) -> None:
        self.dialect = dialect.name
        self._multi: dict[tuple[str, int], str] = {}
        pg = self.dialect == "postgresql"
        columns = [table.c[name] for name in fields]
        self.row = _row_converter(columns, self.dialect)
        """The model's values (key first) as the driver sends and returns them."""
        self.time = _converter(table.c.mirror_first_seen_at, self.dialect)
        self.uuid = _converter(table.c[key], self.dialect)
        make: Any = postgresql.insert if pg else sqlite.insert
        upsert = make(table).values({c.name: bindparam(c.name) for c in table.c})
        kept = {"mirror_first_seen_at", key}
        upsert = upsert.on_conflict_do_update(
            index_elements=[key],
            set_={c.name: upsert.excluded[c.name] for c in table.c if c.name not in kept},
        )
        self.upsert, order = _compiled(upsert, dialect)
        tail = ["mirror_first_seen_at", "mirror_last_seen_at", "mirror_deleted_at"]
        if order != [*fields, *tail]:
            raise AssertionError(f"unexpected column order of the upsert: {order}")
        names = ["run_id", "collection", "item_id", "change", "at"]
        self.change, order = _compiled(
            insert_changes := CHANGES.insert().values({n: bindparam(n) for n in names}), dialect
        )
        del insert_changes
        if order != names:
            raise AssertionError(f"unexpected column order of mirror_changes: {order}")
        self.change = self.change.partition(" RETURNING ")[0]  # change_id is never read
        self.change_row = _row_converter([CHANGES.c[n] for n in names], self.dialect)
        quoted = dialect.identifier_preparer.quote
        listed = ", ".join(quoted(name) for name in (*fields, "mirror_deleted_at"))
        self._select = f"SELECT {listed} FROM {quoted(table.name)} WHERE {quoted(key)}"
        if not pg:
            # One row back, whatever the page's size: SQLite steps once, so its thread
            # gives up the GIL once, not once a row; the ids go in as one JSON array.
            listed = ", ".join(quoted(name) for name in (*fields, "mirror_deleted_at"))
            self._select = (
                f"SELECT json_group_array(json_array({listed})) FROM {quoted(table.name)} "
                f"WHERE {quoted(key)} IN (SELECT value FROM json_each(?))"
            )

    async def insert(
        self, conn: AsyncConnection, statement: str, rows: list[tuple[Any, ...]]
    ) -> None:
        """Run a one-row INSERT for every row: in SQLite as multi-row INSERTs (each
        statement one step of the database, so its thread gives up the GIL less often);
        asyncpg sends an executemany as one pipeline already."""
        if len(rows) == 1:
            await conn.exec_driver_sql(statement, rows)
            return
        if self.dialect == "postgresql":
            arrays = self._arrays(statement)
            if arrays is None:  # a list column: rows one by one (webhooks, a few)
                await conn.exec_driver_sql(statement, rows)
            else:  # one statement: every column as an array
                await conn.exec_driver_sql(arrays, tuple(list(c) for c in zip(*rows, strict=True)))
            return
        for start in range(0, len(rows), _ROWS_PER_STATEMENT):
            chunk = rows[start : start + _ROWS_PER_STATEMENT]
            params = tuple(value for row in chunk for value in row)
            await conn.exec_driver_sql(self._many(statement, len(chunk)), params)

    def _arrays(self, statement: str) -> str | None:
        """PostgreSQL: the one-row INSERT as ``INSERT ... SELECT * FROM unnest(arrays)``."""
        key = (statement, -1)
        if key not in self._multi:
            head, sep, rest = statement.partition(" VALUES (")
            group, close, tail = rest.partition(")")
            params = group.split(", ")
            casts = [p.partition("::") for p in params]
            if not sep or not close or any(not c[1] or c[2].endswith("[]") for c in casts):
                self._multi[key] = ""
            else:
                arrays = ", ".join(f"{name}::{kind}[]" for name, _, kind in casts)
                self._multi[key] = f"{head} SELECT * FROM unnest({arrays}){tail}"
        return self._multi[key] or None

    def _many(self, statement: str, count: int) -> str:
        key = (statement, count)
        found = self._multi.get(key)
        if found is None:
            head, sep, rest = statement.partition(" VALUES (")
            group, close, tail = rest.partition(")")
            if not sep or not close or set(group.replace(", ", "")) != {"?"}:
                raise AssertionError(f"not a one-row INSERT: {statement}")
            groups = ", ".join([f"({group})"] * count)
            found = self._multi[key] = f"{head} VALUES {groups}{tail}"
        return found

    async def stored(self, conn: AsyncConnection, keys: Sequence[Any]) -> list[Sequence[Any]]:
        """The stored rows of ``keys`` (the model's columns, then ``mirror_deleted_at``)."""
        if self.dialect == "postgresql":
            result = await conn.exec_driver_sql(f"{self._select} = ANY($1::uuid[])", (list(keys),))
            return list(result)
        result = await conn.exec_driver_sql(self._select, (json.dumps(list(keys)),))
        found: list[Sequence[Any]] = loads(result.scalar_one())
        return found
