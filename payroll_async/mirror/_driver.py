"""The hot path at the driver's level: one page's statements, compiled once per dialect.

SQLAlchemy builds and compiles every statement (one upsert construct,
``insert().on_conflict_do_update``, for both dialects); the rows then go to the driver as
plain values in the form the database stores (``_sql``'s ``_values``), so that a page costs no
per-value type processing: in SQLite as multi-row INSERTs, in PostgreSQL as one statement
whose rows are one JSON parameter. Rows read back through SQLAlchemy are the same values.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec
from sqlalchemy import (
    Dialect,
    Table,
    bindparam,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from .._core._json import loads
from .._sql import column_converter, compiled, converter, id_text, row_converter
from ._page_sql import CREATE_STAGE
from ._schema import BOOKKEEPING, CHANGES, RUNS
from ._seen import KnownDigests

if TYPE_CHECKING:
    import sqlite3

__all__ = ["Statements", "id_text"]

_ROWS_PER_STATEMENT = 250  # SQLite: rows in one multi-row INSERT
_first = operator.itemgetter(0)
_encode = msgspec.json.encode


_DIGESTS_PART = 100_000  # SQLite: live rows' digests read at once
# SQLite's page cache while the live rows' digests are read (its default, 2,000 KiB): the
# read passes every page of the table once, and a run's larger cache would take a new page
# of memory for each (134 ms against 62 for 100,000 rows, the first read on a connection).
_SCAN_CACHE = -2000
_integers = msgspec.json.Decoder(list[int]).decode


def _thread_job(
    driver: Any,
) -> Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]] | None:
    """aiosqlite: the coroutine that runs a function in the connection's thread (after the
    statements queued before it), or None (another driver, or an aiosqlite without it: its
    ``_execute`` and ``_conn`` are private, so they are looked up, never assumed)."""
    run = getattr(driver, "_execute", None)
    if run is None or not isinstance(getattr(type(driver), "_conn", None), property):
        return None

    async def job(function: Callable[[sqlite3.Connection], Any]) -> Any:
        return await run(partial(function, driver._conn))

    return job


def _execute_all(
    statements: list[tuple[str, Any]], connection: sqlite3.Connection
) -> list[list[Any]]:
    return [connection.execute(statement, params).fetchall() for statement, params in statements]


class Statements:
    """The page statements of one table in one dialect, and the driver form of its rows."""

    def __init__(self, table: Table, key: str, fields: Sequence[str], dialect: Dialect) -> None:
        self.dialect = dialect.name
        self._driver: Any = None
        self._job: Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]] | None = None
        self.direct = False
        """Whether statements go to the driver's connection (SQLite, once attached)."""
        self._multi: dict[tuple[str, int], str] = {}
        pg = self.dialect == "postgresql"
        columns = [table.c[name] for name in fields]
        self.row = row_converter(columns, self.dialect)
        """The model's values (key first) as the driver sends and returns them; raises
        OverflowError for a value the database cannot hold (see ``careful_row``)."""
        self._names = tuple(fields)
        self._converters = [converter(c, self.dialect) for c in columns]
        self._columns = [column_converter(c) for c in self._converters]
        self.time = converter(table.c.mirror_first_seen_at, self.dialect)
        self.uuid = converter(table.c[key], self.dialect)
        make: Any = postgresql.insert if pg else sqlite.insert
        upsert = make(table).values({c.name: bindparam(c.name) for c in table.c})
        kept = {"mirror_first_seen_at", key}
        upsert = upsert.on_conflict_do_update(
            index_elements=[key],
            set_={c.name: upsert.excluded[c.name] for c in table.c if c.name not in kept},
        )
        self.upsert, order = compiled(upsert, dialect)
        if order != [*fields, *BOOKKEEPING]:
            raise AssertionError(f"unexpected column order of the upsert: {order}")
        names = ["run_id", "collection", "item_id", "change", "at", "before", "after"]
        self.change, order = compiled(
            insert_changes := CHANGES.insert().values({n: bindparam(n) for n in names}), dialect
        )
        del insert_changes
        if order != names:
            raise AssertionError(f"unexpected column order of mirror_changes: {order}")
        self.change = self.change.partition(" RETURNING ")[0]  # change_id is never read
        self.change_row = row_converter([CHANGES.c[n] for n in names], self.dialect)
        counted = ("items", "inserted", "updated", "deleted")
        self._progress, order = compiled(
            update(RUNS)
            .where(RUNS.c.run_id == bindparam("run"))
            .values({name: bindparam(name) for name in counted}),
            dialect,
        )
        if order != [*counted, "run"]:
            raise AssertionError(f"unexpected parameters of the progress: {order}")
        quoted = dialect.identifier_preparer.quote
        self._name, self._key = quoted(table.name), quoted(key)
        self._digests = self._select(key, "mirror_digest", "mirror_deleted_at")
        self._digests_in = (
            f'SELECT {self._key}, "mirror_digest", "mirror_deleted_at" FROM {self._name} '
            f"WHERE {self._key} IN"
        )
        self._typed = self._select(*fields, "mirror_deleted_at")
        # jsonb as its text (SQLAlchemy's codec of asyncpg would parse it)
        self._items = self._select(key, "mirror_item").replace(
            '"mirror_item" FROM', '"mirror_item"::text FROM'
        )

    def columns(self, columns: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """The model's columns of some items (the key's first) as the driver sends them
        (see ``row``; raises as it does)."""
        return [convert(column) for convert, column in zip(self._columns, columns, strict=True)]

    def careful_row(self, values: Sequence[Any]) -> tuple[tuple[Any, ...], list[str]]:
        """As ``row``, a value the database cannot hold made NULL: the row, and the names
        of the columns left NULL (the item as sent, in ``mirror_item``, keeps them)."""
        row: list[Any] = []
        empty: list[str] = []
        for name, convert, value in zip(self._names, self._converters, values, strict=True):
            try:
                row.append(convert(value))
            except (OverflowError, ValueError, TypeError):
                if not row:  # the key: never NULL (the page's check made it an id)
                    raise
                row.append(None)
                empty.append(name)
        return tuple(row), empty

    def _select(self, *columns: str) -> str:
        """The statement that reads ``columns`` of the rows of some ids."""
        quoted = ", ".join(f'"{name}"' for name in columns)
        if self.dialect == "postgresql":
            return f"SELECT {quoted} FROM {self._name} WHERE {self._key} = ANY($1::uuid[])"
        # One row back, whatever the page's size: SQLite steps once, so its thread gives
        # up the GIL once, not once a row; the ids go in as one JSON array.
        return (
            f"SELECT json_group_array(json_array({quoted})) FROM {self._name} "
            f"WHERE {self._key} IN (SELECT value FROM json_each(?))"
        )

    async def attach(self, conn: AsyncConnection) -> None:
        """SQLite: run this table's statements on the driver's connection itself (aiosqlite:
        one hop to its thread each, none of SQLAlchemy's work per statement). Transactions
        stay SQLAlchemy's: its ``begin`` sends ``BEGIN IMMEDIATE`` on that connection."""
        if self.dialect == "sqlite":
            raw = await conn.get_raw_connection()
            self._driver = raw.driver_connection
            self._job = _thread_job(self._driver)
            self.direct = self._driver is not None
            if self.direct:
                # The write's items, in memory (this connection's own; see ``_page_sql``).
                await self._driver.execute("PRAGMA temp_store = MEMORY")
                await self._driver.execute(CREATE_STAGE)

    async def _run(self, conn: AsyncConnection, statement: str, params: Any) -> list[Any]:
        if self._driver is not None:
            found: list[Any] = list(await self._driver.execute_fetchall(statement, params))
            return found
        return list(await conn.exec_driver_sql(statement, params))

    async def insert(
        self, conn: AsyncConnection, statement: str, rows: list[tuple[Any, ...]]
    ) -> None:
        """Run a one-row INSERT for every row (see ``insert_columns``)."""
        if rows:
            await self.insert_columns(conn, statement, [list(c) for c in zip(*rows, strict=True)])

    async def insert_columns(
        self, conn: AsyncConnection, statement: str, columns: list[list[Any]]
    ) -> None:
        """Run a one-row INSERT for every row of ``columns`` (each a list of one column's
        values): in PostgreSQL one statement with the rows as one JSON parameter; in SQLite as
        multi-row INSERTs (each statement one step of the database, so its thread gives
        up the GIL less often)."""
        count = len(columns[0])
        if not count:
            return
        if self.dialect == "postgresql":
            rows_of_json = self._rows_of_json(statement)
            if rows_of_json is not None and count > 1:
                # One statement, its rows one parameter: JSON text that msgspec writes in C
                # (arrays would cost asyncpg's encoder several type checks a value).
                document = _encode(list(zip(*columns, strict=True))).decode()
                await conn.exec_driver_sql(rows_of_json, (document,))
            else:  # a list column: rows one by one (webhooks, a few)
                await conn.exec_driver_sql(statement, list(zip(*columns, strict=True)))
            return
        if count == 1 and self._driver is None:
            await conn.exec_driver_sql(statement, list(zip(*columns, strict=True)))
            return
        await self.run_all(conn, self.multi_row(statement, columns))

    def multi_row(self, statement: str, columns: list[list[Any]]) -> list[tuple[str, list[Any]]]:
        """SQLite: the multi-row INSERTs (and their parameters) that insert ``columns``' rows
        with ``statement``, a one-row INSERT."""
        count = len(columns[0])
        # The rows' values one after another: each column laid into its place at once.
        width = len(columns)
        values: list[Any] = [None] * (count * width)
        for at, column in enumerate(columns):
            values[at::width] = column
        statements: list[tuple[str, list[Any]]] = []
        start = 0
        while start < count:
            # Statements of a few sizes only (250 rows, then halves: 128, 64, ... 1), so that
            # sqlite3 prepares each once and finds it in its cache after (a statement of
            # every size a write happens to have costs a prepare of hundreds of rows each).
            left = count - start
            rows = (
                _ROWS_PER_STATEMENT if left >= _ROWS_PER_STATEMENT else 1 << (left.bit_length() - 1)
            )
            params = values[start * width : (start + rows) * width]
            statements.append((self._many(statement, rows), params))
            start += rows
        return statements

    async def run_all(
        self, conn: AsyncConnection, statements: list[tuple[str, Any]]
    ) -> list[list[Any]]:
        """SQLite: run ``statements`` (with their parameters) one after another, and give
        each one's rows; on the driver's connection as one job of its thread (no round
        trip to the event loop between two: the thread goes on while the loop walks, and
        the loop is woken once)."""
        if self._job is not None:
            found: list[list[Any]] = await self._job(partial(_execute_all, statements))
            return found
        return [await self._run(conn, statement, params) for statement, params in statements]

    def _rows_of_json(self, statement: str) -> str | None:
        """PostgreSQL: the one-row INSERT as ``INSERT ... SELECT ... FROM
        jsonb_array_elements($1)``, the rows in one JSON text (each row an array), each
        value cast to its column's type; None for a statement with a list column."""
        key = (statement, -1)
        if key not in self._multi:
            head, sep, rest = statement.partition(" VALUES (")
            group, close, tail = rest.partition(")")
            casts = [p.partition("::") for p in group.split(", ")]
            if not sep or not close or any(not c[1] or c[2].endswith("[]") for c in casts):
                self._multi[key] = ""
            else:
                values = ", ".join(f"(r->>{at})::{c[2]}" for at, c in enumerate(casts))
                self._multi[key] = (
                    f"{head} SELECT {values} FROM jsonb_array_elements($1::text::jsonb) AS r{tail}"
                )
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

    async def _read(
        self, conn: AsyncConnection, statement: str, keys: Sequence[Any]
    ) -> list[Sequence[Any]]:
        found: list[Sequence[Any]] = []
        for start in range(0, len(keys), 1000):
            chunk = list(keys[start : start + 1000])
            if self.dialect == "postgresql":
                found.extend(await conn.exec_driver_sql(statement, (chunk,)))
            else:
                ((rows,),) = await self._run(conn, statement, (json.dumps(chunk),))
                found.extend(loads(rows))
        return found

    async def stored(self, conn: AsyncConnection, keys: Sequence[Any]) -> list[Sequence[Any]]:
        """(key, ``mirror_digest``, ``mirror_deleted_at``) of the stored rows of ``keys``."""
        if self._driver is None:
            return await self._read(conn, self._digests, keys)
        # SQLite: the ids as parameters, the rows as sqlite3 returns them (few: an item of
        # an unchanged row is never looked up, see Store).
        found: list[Sequence[Any]] = []
        for start in range(0, len(keys), 1000):
            chunk = list(keys[start : start + 1000])
            marks = ", ".join("?" * len(chunk))
            found.extend(await self._run(conn, f"{self._digests_in} ({marks})", chunk))
        return found

    async def progress(self, conn: AsyncConnection, run: Any, counts: Sequence[int]) -> None:
        """Set a run's counts (items, inserted, updated, deleted) in ``mirror_runs``."""
        params = (*counts, self.uuid(run))
        if self._driver is not None:
            await self._driver.execute(self._progress, params)
        else:
            await conn.exec_driver_sql(self._progress, params)

    async def any_rows(self, conn: AsyncConnection) -> bool:
        """Whether the table holds any row (deleted or not)."""
        statement = f"SELECT 1 FROM {self._name} LIMIT 1"
        if self._driver is not None:
            return bool(await self._driver.execute_fetchall(statement))
        found = bool((await conn.exec_driver_sql(statement)).first())
        await conn.commit()
        return found

    async def live_digests(self, conn: AsyncConnection) -> tuple[KnownDigests, int]:
        """``mirror_digest`` of the live rows (every scope; a row of schema 1 has none), and
        how many live rows there are, read in parts (the digests kept: 8 bytes a row), in
        the rows' order in SQLite."""
        known = KnownDigests()
        rows = 0
        if self._driver is not None:
            # SQLite: a part's digests come back as one text, parsed by msgspec in C (a
            # part with a value other than an integer, written by hand, is read row by
            # row); the parts follow the rowid, where the last one ended.
            part = (
                f'FROM (SELECT rowid, "mirror_digest" AS d FROM {self._name} '
                'WHERE rowid > ? AND "mirror_deleted_at" IS NULL '
                f"ORDER BY rowid LIMIT {_DIGESTS_PART})"
            )
            after = -(2**63)
            ((cache,),) = await self._driver.execute_fetchall("PRAGMA cache_size")
            await self._driver.execute_fetchall(f"PRAGMA cache_size={_SCAN_CACHE}")
            try:
                while True:
                    ((values, count, last),) = await self._driver.execute_fetchall(
                        f"SELECT group_concat(d), count(*), max(rowid) {part}", (after,)
                    )
                    if values:
                        try:
                            known.add(_integers(f"[{values}]"))
                        except msgspec.DecodeError:
                            each = await self._driver.execute_fetchall(f"SELECT d {part}", (after,))
                            known.add([d for (d,) in each if type(d) is int])
                    rows += count
                    if count < _DIGESTS_PART:
                        break
                    after = last
            finally:
                await self._driver.execute_fetchall(f"PRAGMA cache_size={int(cache)}")
            return known, rows
        statement = f'SELECT "mirror_digest" FROM {self._name} WHERE "mirror_deleted_at" IS NULL'
        result = await conn.stream(text(statement))
        async for chunk in result.partitions(10_000):
            digests = list(map(_first, chunk))
            rows += len(digests)
            known.add([value for value in digests if type(value) is int])
        await result.close()
        await conn.commit()
        return known, rows

    async def typed(self, conn: AsyncConnection, keys: Sequence[Any]) -> list[Sequence[Any]]:
        """The model's columns (key first), then ``mirror_deleted_at``, of ``keys``' rows."""
        return await self._read(conn, self._typed, keys)

    async def items(self, conn: AsyncConnection, keys: Sequence[Any]) -> dict[str, Any]:
        """``mirror_item`` of ``keys``' rows, by the key's text."""
        return {str(key): item for key, item in await self._read(conn, self._items, keys)}
